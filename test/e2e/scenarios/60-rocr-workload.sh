#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A process of ROCm's runtime (rocr_workload: libhsa-runtime64 5.2.3, SDMA copies always in
# flight on two streams per GPU, each round's second copy queued behind a signal the host opens
# 100 ms later) under criu: the checkpoint catches SDMA queues holding packets not yet executed
# (the emulator says so at CHECKPOINT). Then:
#  - restored on the same node: the pending copies complete, new rounds run, every byte of every
#    round matches, blocked waits wake; the task is the one that was dumped;
#  - dumped again and restored after a reload with other gpu_ids and render minors: the same;
#  - dump -R: the task runs on, its copies too.
# And a restore that gets a queue's ring state wrong is caught: with the emulator's restore-rptr
# fault the restored SDMA queues start a ring past their saved read pointer; the emulator stops
# them (a write pointer behind the read pointer), and the workload's verification fails within
# 30 s, naming each stream whose copies no longer complete.
# timeout: 600
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_require
[ -x "$E2E_BIN/rocr_workload" ] || { echo "no rocr_workload (libhsa-runtime-dev missing at build time?)"; exit 77; }
scenario_warnings_begin

img=/tmp/img-60

# tap_pending_at_checkpoint <name> <dmesg mark>: the emulator saw queued packets at CHECKPOINT
tap_pending_at_checkpoint() {
	local seen
	seen=$(dmesg | sed -n "\\|$2\$|,\$p" | grep -c 'CHECKPOINT: queue .* holds [0-9]* bytes of packets not yet executed')
	if [ "$seen" -gt 0 ]; then
		tap_ok "$1: checkpointed with work in flight ($seen SDMA queue(s) holding packets)"
	else
		tap_not_ok "$1: checkpointed with work in flight" "no queue held unexecuted packets at CHECKPOINT"
	fi
}

wl_fresh rocr preset=2xmi210 -- --vram-mb 2 || e2e_done
tap_verify "rocr: before the dump" "$pid" "$state"
task_snapshot "$pid" "$RESULTS_DIR/rocr.dumped"

dmesg_mark "e2e-60: dump 1"
tap_dump "rocr: criu dump" "$pid" "$img"
tap_pending_at_checkpoint "rocr: dump 1" "e2e-60: dump 1"
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
if wl_restore "$img"; then
	tap_ok "rocr: criu restore on the same node"
else
	tap_not_ok "rocr: criu restore on the same node" "see ${CRIU_LAST_LOG#"$RESULTS_DIR"/}"
fi
tap_same_task "rocr: restored" "$RESULTS_DIR/rocr.dumped" "$pid"
tap_alive_verified "rocr: restored" "$pid" "$state"

dmesg_mark "e2e-60: dump 2"
tap_dump "rocr: criu dump of the restored task" "$pid" "$img"
tap_pending_at_checkpoint "rocr: dump 2" "e2e-60: dump 2"
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 render_minor_base=160 ||
	{ tap_not_ok "rocr: reload the emulator with other gpu_ids"; e2e_done; }
if wl_restore "$img"; then
	tap_ok "rocr: criu restore on other gpu_ids"
else
	tap_not_ok "rocr: criu restore on other gpu_ids" "see ${CRIU_LAST_LOG#"$RESULTS_DIR"/}"
fi
tap_same_task "rocr: restored on other gpu_ids" "$RESULTS_DIR/rocr.dumped" "$pid"
tap_alive_verified "rocr: restored on other gpu_ids" "$pid" "$state"

tap_dump "rocr: criu dump -R" "$pid" "$img" -R
tap_alive_verified "rocr: left running" "$pid" "$state"
tap_same_task "rocr: left running" "$RESULTS_DIR/rocr.dumped" "$pid"

tap_dump "rocr: criu dump before a faulty restore" "$pid" "$img"
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
echo "restore-rptr 1048576" >"$EMU_DEBUGFS/fault"
dmesg_mark "e2e-60: faulty restore"
if wl_restore "$img"; then
	line=$(wl_ask "$pid" "$state" verify)
	if [ "${line#VERIFY FAIL: stream }" != "$line" ] && grep -q 'its SDMA queue does not run' "$state.verify"; then
		tap_ok "rocr: a restored queue that does not run fails verification, naming the stream ($line)"
	else
		tap_not_ok "rocr: a restored queue that does not run fails verification, naming the stream" "$line"
		[ ! -s "$state.verify" ] || sed 's/^/#   /' "$state.verify" | head -n 6
	fi
	if dmesg | sed -n '\|e2e-60: faulty restore$|,$p' | grep -q '\[sdma\] pid [0-9]* queue [0-9]* (GPU [0-9]*): write pointer not within one ring of the read pointer'; then
		tap_ok "rocr: the emulator names the queue it stopped"
	else
		tap_not_ok "rocr: the emulator names the queue it stopped" "no [sdma] queue fault in the kernel log"
	fi
else
	tap_not_ok "rocr: criu restore (ring state injected wrong)" "see ${CRIU_LAST_LOG#"$RESULTS_DIR"/}"
fi
echo clear >"$EMU_DEBUGFS/fault"
wl_kill "$pid"
e2e_done
