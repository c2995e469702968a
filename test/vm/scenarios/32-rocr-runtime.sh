#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# ROCm's runtime (the guest's Debian libhsa-runtime64 and rocminfo, unmodified: 5.2.3 in bookworm,
# 6.1 in trixie) on every preset:
# rocminfo enumerates one agent per emulated GPU, and test/emu/clients/rocr_client moves data
# host->VRAM->host through hsa_amd_memory_async_copy on every GPU: its user-mode SDMA queues run on
# the emulated engines (whose byte counters must grow by the copies), completion signals wake
# blocked waiters through KFD events, and a copy waits on its dependency signal; VRAM->VRAM on one
# GPU and between GPUs. Its AQL queues run barrier-AND/OR packets on the emulated packet processor,
# a hand-assembled kernel on the shader core (every work-item's store checked), and two dispatches
# that must end in the queue's error callback: a kernel starting with an MFMA (illegal instruction)
# and a kernel object at an unmapped address (memory violation). The kernel log must name exactly
# those two, once per GPU, and nothing else. Its TAP results become ours, prefixed with the preset.
# rocminfo reports each preset's real compute unit count. HIP's host API (Debian's libamdhip64
# 5.2.3, test/emu/clients/hip_client) on every preset ROCm 5.2 knows: devices with the model's
# compute units, hipMalloc; and a hipMemcpy, which HIP starts with a blit kernel: every byte must
# come back, or that kernel stops at an instruction the shader core does not execute (a skip that
# names it), never a hang. ROCm 5.2.3 predates gfx942 (MI300, preset cpx8): there
# it must say, for every GPU, that it does not know the node, as it would on the real part; a
# runtime from 5.7 on knows it, and cpx8 gets every check the others get.
# timeout: 900
. test/vm/lib.sh

client=test/emu/clients/rocr_client
hip=test/emu/clients/hip_client
emu_require "$client" "libhsa-runtime-dev missing at build time?"
command -v rocminfo >/dev/null || { echo "rocminfo is not installed"; exit 77; }

engines=/sys/kernel/debug/amdgpu_emu/engines
mib=4

# tap_rocminfo_lines <name> <count> <ERE> [ERE of what to show otherwise]: one result: rocminfo
# prints <count> lines that match
tap_rocminfo_lines() {
	local name=$1 want=$2 re=$3 show=${4:-.} got
	got=$(timeout 120 rocminfo 2>&1 | grep -cE -- "$re")
	if [ "$got" = "$want" ]; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "it prints $got such lines: $(timeout 60 rocminfo 2>&1 | grep -E -- "$show" | tail -n3 | tr '\n' ';')"
	fi
}

dmesg_mark "32-rocr-runtime: begin"
declare -A cus=([mi100]=120 [2xmi210]=104 [mi250x]=110 [cpx8]=38)
rocr_version=$(dpkg-query -W -f '${Version}' libhsa-runtime64-1 2>/dev/null)
knows_gfx942=0
dpkg --compare-versions "$rocr_version" ge 5.7 && knows_gfx942=1
for p in mi100 2xmi210 mi250x cpx8; do
	if ! emu_reload preset="$p"; then
		tap_not_ok "$p: load"
		continue
	fi
	n=$(grep -c . "$engines")
	if [ "$p" = cpx8 ] && [ "$knows_gfx942" = 0 ]; then
		tap_rocminfo_lines "$p: ROCm $rocr_version predates gfx942 and says so for each of the $n GPUs" "$n" \
			'The GPU node has an unrecognized id'
		emu_unload || tap_not_ok "$p: unload after the runtime"
		continue
	fi
	tap_rocminfo_lines "$p: rocminfo lists the $n GPU agents" "$n" '^  Name: +gfx[0-9a-f]+ *$'
	tap_rocminfo_lines "$p: rocminfo reports the model's ${cus[$p]} compute units for each GPU" "$n" \
		"^  Compute Unit: +${cus[$p]} *$" 'Compute Unit'
	before=$(sdma_engine_bytes)
	dmesg_mark "32-rocr-runtime: $p"
	tap_relay "$p" timeout 300 "$client" --mib "$mib"
	# emu_aql_log_stop's lines: "<what> at 0x<address> (packet <n>); queue error 0x<code>, ..."
	since=$(dmesg | sed -n "/32-rocr-runtime: $p\$/,\$p")
	aql=$(grep '\[aql\]' <<<"$since")
	# The MFMA kernel stops as an illegal instruction at its first wave.
	illegal=$(grep -cE "wave: illegal instruction at 0x[0-9a-f]* \(packet [0-9]*\); queue error 0x40000000," <<<"$aql")
	unmapped=$(grep -c 'kernel descriptor not readable at 0x1000 (packet [0-9]*); queue error 0x20000000,' <<<"$aql")
	name="$p: the kernel log names, for each of the $n GPUs, the MFMA kernel's illegal instruction and the unmapped kernel descriptor, and no other AQL error"
	want_illegal=$n
	if [ "$illegal" = "$want_illegal" ] && [ "$unmapped" = "$n" ] && [ "$(grep -c . <<<"$aql")" = $((want_illegal + n)) ]; then
		tap_ok "$name"
	else
		# the lines are rate-limited: a burst over the limit is dropped, and the log says so
		tap_not_ok "$name" "illegal $illegal, unmapped $unmapped; $(grep 'callbacks suppressed' <<<"$since" | head -n1) $(
			head -n4 <<<"$aql")"
	fi
	tap_sdma_moved "$p: every GPU's SDMA engine moved the copies" "$before" $((2 * mib * 1048576))
	if [ -x "$hip" ]; then
		tap_relay "$p: HIP" timeout 300 "$hip" --cus "${cus[$p]}"
	else
		tap_skip "$p: HIP's host API" "no $hip (libamdhip64-dev missing at build time)"
	fi
	emu_unload || tap_not_ok "$p: unload after the runtime"
done

tap_dmesg_clean "32-rocr-runtime: begin"
if dmesg | sed -n '/32-rocr-runtime: begin$/,$p' | grep -q '\[sdma\]'; then
	tap_not_ok "no SDMA queue faulted" "$(dmesg | grep '\[sdma\]' | head -n3)"
else
	tap_ok "no SDMA queue faulted"
fi
tap_done
