#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The two end-to-end workloads (test/e2e/README.md) run on the emulator without criu: each starts
# detached, reaches READY with a complete state file, passes its own verification twice (memory,
# mappings, handles, events, queues) and the heartbeat check, notices a corrupted byte, and exits
# cleanly on SIGTERM; on the 2xmi210 and mi100 presets, and with --gpus 1 on 2xmi210. On 2xmi210,
# kfd_workload and rocr_workload with --host-mb: the state file lists the host memory, it verifies,
# and one changed word of it fails the verification, naming the host memory and the offset.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh

[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
# Built on the host normally; this only catches up (or builds) when the sources are newer.
make -s -C test/e2e >"$RESULTS_DIR/e2e-build.log" 2>&1 ||
	{ cat "$RESULTS_DIR/e2e-build.log"; echo "the workloads do not build"; exit 1; }

declare -A preset_gpus=([mi100]=1 [2xmi210]=2)
# The BO kinds each workload's state file lists (README.md).
declare -A bo_kinds=([kfd]="mmio vram vram-nohost gtt userptr events ring qctl eop cwsr doorbell"
	[hsakmt]="vram vram-nohost gtt userptr ring qctl")

scenario_warnings_begin

# run_workload <workload> <preset> <GPUs expected> <log name> [workload options...]
run_workload() {
	local w=$1 preset=$2 want=$3 log=$4 what pid state va n kind missing
	shift 4
	what="$w $preset${*:+ $*}"
	if ! wl_start "$w" "$log" "$@"; then
		tap_not_ok "$what: READY with a state file" "no state file or no READY line (its output above)"
		return
	fi
	pid=$WL_PID state=$WL_STATE
	n=$(grep -c '^gpu ' "$state")
	missing=""
	for kind in ${bo_kinds[$w]}; do
		grep -q "^bo .* kind $kind " "$state" || missing+=" $kind"
	done
	if [ -z "$missing" ] && grep -q "^pid $pid\$" "$state" && grep -q '^ready$' "$state" &&
		grep -q "^READY $pid\$" "$RESULTS_DIR/$log.out" && [ "$n" -eq "$want" ] &&
		[ "$(grep -c '^queue ' "$state")" -eq "$want" ] && [ "$(grep -c '^event ' "$state")" -eq 3 ]; then
		tap_ok "$what: READY, state file with $n GPU(s), $(grep -c '^bo ' "$state") BOs"
	else
		tap_not_ok "$what: READY, state file complete" "pid $pid, $n GPUs (want $want), missing BO kinds:${missing:- none}"
		sed 's/^/#   /' "$state" | head -n 20
	fi

	tap_verify "$what: SIGUSR1 verifies OK" "$pid" "$state"
	tap_heartbeat "$what: SIGUSR2 heartbeat OK" "$pid" "$state"
	# verification exercises the events and handles: it must leave them as it found them
	tap_verify "$what: a second verification is OK too" "$pid" "$state"

	# The check is not vacuous: one changed word of userptr memory is reported.
	va=$(awk '$1 == "bo" && $6 == "userptr" { print $8; exit }' "$state")
	if [ -n "$va" ] && printf '\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a' |
		dd of="/proc/$pid/mem" bs=1 seek=$((va + 0x1000)) oflag=seek_bytes conv=notrunc status=none; then
		tap_asked "$what: a corrupted userptr word fails verification" "$pid" "$state" verify "VERIFY FAIL: bo*"
		grep -q "userptr.*offset 0x1000: expected" "$state.verify" ||
			log "the failure does not name the userptr BO and offset 0x1000"
	else
		tap_not_ok "$what: a corrupted userptr word fails verification" "cannot write to /proc/$pid/mem at $va"
	fi

	kill -TERM "$pid"
	if wait_for "! kill -0 $pid 2>/dev/null" 30 && grep -q '^EXIT$' "$RESULTS_DIR/$log.out"; then
		tap_ok "$what: SIGTERM ends it cleanly"
	else
		tap_not_ok "$what: SIGTERM ends it cleanly" "still running or no EXIT line"
		kill -KILL "$pid" 2>/dev/null
	fi
}

# host_memory <workload>: --host-mb 4 on one GPU, its host memory listed, verified, a changed word
# of it caught.
host_memory() {
	local w=$1 what="$1 --host-mb 4" pid state va size
	if ! wl_start "$w" "$w-host" --gpus 1 --vram-mb 2 --host-mb 4; then
		tap_not_ok "$what: READY with a state file" "no state file or no READY line (its output above)"
		return
	fi
	pid=$WL_PID state=$WL_STATE
	read -r va size < <(awk '$1 == "host" { print $3, $5 }' "$state")
	if [ -n "$va" ] && [ "$((size))" -eq $((4 << 20)) ]; then
		tap_ok "$what: the state file lists 4 MiB of host memory at $va"
	else
		tap_not_ok "$what: the state file lists 4 MiB of host memory" "host line: '$(grep '^host ' "$state")'"
	fi
	tap_verify "$what: SIGUSR1 verifies OK, the host memory included" "$pid" "$state"
	if [ -n "$va" ] && printf '\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a' |
		dd of="/proc/$pid/mem" bs=1 seek=$((va + 0x3008)) oflag=seek_bytes conv=notrunc status=none; then
		tap_asked "$what: a changed word of host memory fails verification" "$pid" "$state" verify \
			"VERIFY FAIL: host memory*1 of 524288 words differ, first at offset 0x3008*"
	else
		tap_not_ok "$what: a changed word of host memory fails verification" "cannot write to /proc/$pid/mem at '$va'"
	fi
	kill -TERM "$pid"
	wait_for "! kill -0 $pid 2>/dev/null" 30 || wl_kill "$pid"
}

for preset in 2xmi210 mi100; do
	if ! emu_reload preset="$preset"; then
		tap_not_ok "$preset: load the emulator"
		continue
	fi
	for w in kfd hsakmt; do
		run_workload "$w" "$preset" "${preset_gpus[$preset]}" "$w-$preset"
	done
	if [ "${preset_gpus[$preset]}" -gt 1 ]; then
		for w in kfd hsakmt; do
			run_workload "$w" "$preset" 1 "$w-$preset-gpus1" --gpus 1 --vram-mb 3 --bo-mb 1
		done
		host_memory kfd
		if [ -x "$E2E_BIN/rocr_workload" ]; then
			host_memory rocr
		else
			tap_skip "rocr --host-mb 4" "no rocr_workload (libhsa-runtime-dev missing at build time?)"
		fi
	fi
	tap_no_kfd_process "$preset: no KFD process is left in the emulator" 10
	tap_check "$preset: unload the emulator" emu_unload
done

tap_no_kernel_warnings
tap_done
