#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The real ROCm thunk (libhsakmt 5.2.3, test/emu/clients/hsakmt_client) on every
# preset: open KFD with libdrm_amdgpu initialising on every render node and no
# error logged, the topology, VRAM with and without host access, GTT and paged
# memory mapped to all GPUs, an AQL queue that beats, signal events, freeing
# and closing, every call succeeding. Its TAP results become ours, prefixed with
# the preset.
# timeout: 600
. test/vm/lib.sh

client=test/emu/clients/hsakmt_client
[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
[ -x "$client" ] || { echo "no $client (libhsakmt-dev missing at build time?)"; exit 77; }

echo "31-drm-libhsakmt-client: begin" >/dev/kmsg
for p in mi100 2xmi210 mi250x cpx8; do
	if ! emu_reload preset="$p"; then
		tap_not_ok "$p: load"
		continue
	fi
	tap_relay "$p" timeout 240 "$client"
	emu_unload || tap_not_ok "$p: unload after the client"
done

bad=$(dmesg | sed -n '/31-drm-libhsakmt-client: begin$/,$p' |
	grep -E 'WARNING:|BUG:|Oops|general protection|Call Trace|refcount_t:|list_(add|del) corruption|UBSAN|KASAN')
if [ -z "$bad" ]; then
	tap_ok "the kernel log has no WARN, BUG or Oops"
else
	tap_not_ok "the kernel log has no WARN, BUG or Oops" "$(echo "$bad" | head -n5)"
fi
tap_done
