#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The two end-to-end workloads (test/e2e/README.md) run on the emulator without criu: each starts
# detached, reaches READY with a complete state file, passes its own verification twice (memory,
# mappings, handles, events, queues) and the heartbeat check, notices a corrupted byte, and exits
# cleanly on SIGTERM; on the 2xmi210 and mi100 presets, and with --gpus 1 on 2xmi210.
# timeout: 900
. test/vm/lib.sh

[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
# Built on the host normally; this only catches up (or builds) when the sources are newer.
make -s -C test/e2e >"$RESULTS_DIR/e2e-build.log" 2>&1 ||
	{ cat "$RESULTS_DIR/e2e-build.log"; echo "the workloads do not build"; exit 1; }

declare -A preset_gpus=([mi100]=1 [2xmi210]=2)
# The BO kinds each workload's state file lists (README.md).
declare -A bo_kinds=([kfd]="mmio vram vram-nohost gtt userptr events ring qctl eop cwsr doorbell"
	[hsakmt]="vram vram-nohost gtt userptr ring qctl")

echo "10-workloads-run: begin" >/dev/kmsg

# signal_and_wait <pid> <signal> <result file> <seconds>: sends the signal once the old result is
# gone and waits for the new one.
signal_and_wait() {
	local pid=$1 sig=$2 file=$3 limit=$4
	rm -f "$file"
	kill "-$sig" "$pid" 2>/dev/null || return 1
	wait_for "[ -s '$file' ] || ! kill -0 $pid 2>/dev/null" "$limit" && [ -s "$file" ]
}

# check_result <name> <file> <expected first-line prefix>
check_result() {
	local name=$1 file=$2 want=$3 line
	line=$(head -n1 "$file" 2>/dev/null)
	if [ "${line#"$want"}" != "$line" ]; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "${line:-no result in $file}"
		[ ! -s "$file" ] || sed 's/^/#   /' "$file" | head -n 20
	fi
}

# run_workload <workload> <preset> <GPUs expected> <log name> [workload options...]
run_workload() {
	local w=$1 preset=$2 want=$3 log=$4 what pid state va n kind missing
	shift 4
	what="$w $preset${*:+ $*}"
	state=$RESULTS_DIR/$log.state
	rm -f "$state" "$state".*

	spawn pid "$log" "test/e2e/bin/${w}_workload" --state "$state" "$@"
	if ! wait_for "[ -s '$state' ] || ! kill -0 $pid 2>/dev/null" 180 || [ ! -s "$state" ]; then
		tap_not_ok "$what: READY with a state file" "no state file; log:"
		sed 's/^/#   /' "$RESULTS_DIR/$log.out"
		kill -KILL "$pid" 2>/dev/null
		return
	fi
	wait_for "grep -q '^READY $pid\$' '$RESULTS_DIR/$log.out'" 10
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

	signal_and_wait "$pid" USR1 "$state.verify" 120
	check_result "$what: SIGUSR1 verifies OK" "$state.verify" "VERIFY OK"
	signal_and_wait "$pid" USR2 "$state.heartbeat" 60
	check_result "$what: SIGUSR2 heartbeat OK" "$state.heartbeat" "HEARTBEAT OK"
	# verification exercises the events and handles: it must leave them as it found them
	signal_and_wait "$pid" USR1 "$state.verify" 120
	check_result "$what: a second verification is OK too" "$state.verify" "VERIFY OK"

	# The check is not vacuous: one changed word of userptr memory is reported.
	va=$(awk '$1 == "bo" && $6 == "userptr" { print $8; exit }' "$state")
	if [ -n "$va" ] && printf '\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a' |
		dd of="/proc/$pid/mem" bs=1 seek=$((va + 0x1000)) oflag=seek_bytes conv=notrunc status=none; then
		signal_and_wait "$pid" USR1 "$state.verify" 120
		check_result "$what: a corrupted userptr word fails verification" "$state.verify" "VERIFY FAIL: bo"
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
	fi
	if wait_for '! grep -q "^process" /sys/kernel/debug/amdgpu_emu/processes 2>/dev/null' 10; then
		tap_ok "$preset: no KFD process is left in the emulator"
	else
		tap_not_ok "$preset: no KFD process is left in the emulator"
		sed 's/^/#   /' /sys/kernel/debug/amdgpu_emu/processes | head -n 20
	fi
	tap_check "$preset: unload the emulator" emu_unload
done

warnings=$(dmesg | sed -n '/10-workloads-run: begin/,$p' | grep -E 'WARNING:|BUG:|Oops|general protection' || true)
if [ -z "$warnings" ]; then
	tap_ok "the kernel log has no warnings"
else
	tap_not_ok "the kernel log has no warnings"
	echo "$warnings" | head -n 20 | sed 's/^/#   /'
fi
tap_done
