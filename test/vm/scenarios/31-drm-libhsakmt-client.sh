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
emu_require "$client" "libhsakmt-dev missing at build time?"

dmesg_mark "31-drm-libhsakmt-client: begin"
for p in mi100 2xmi210 mi250x cpx8; do
	emu_tap_relay "$p" "the client" timeout 240 "$client"
done
tap_dmesg_clean "31-drm-libhsakmt-client: begin"
tap_done
