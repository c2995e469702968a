#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A process of ROCm's runtime (rocr_workload: libhsa-runtime64 5.2.3, two streams per GPU, each
# round host->VRAM->VRAM->host on SDMA with a barrier-AND packet on the stream's AQL queue between
# the last two, held by a signal the host opens 100 ms later) under criu: the checkpoint catches
# SDMA queues holding packets not yet executed and AQL queues holding barriers not yet processed
# (the emulator says so at CHECKPOINT). Then:
#  - restored on the same node: the pending copies complete, new rounds run, every byte of every
#    round matches, blocked waits wake; the task is the one that was dumped;
#  - dumped again and restored after a reload with other gpu_ids and render minors: the same;
#  - dump -R: the task runs on, its copies too.
# And a restore that gets a queue's ring state wrong is caught: with the emulator's restore-rptr
# fault the restored SDMA and AQL queues start a ring past their saved read pointer; the emulator
# stops them (a write pointer behind the read pointer), and the workload's verification fails
# within 30 s, naming a stream whose copies no longer complete or whose AQL queue reported the
# error.
# timeout: 600
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_require
[ -x "$E2E_BIN/rocr_workload" ] || { echo "no rocr_workload (libhsa-runtime-dev missing at build time?)"; exit 77; }
scenario_warnings_begin

img=/tmp/img-60

# tap_pending_at_checkpoint <name> <dmesg mark>: the emulator saw queued packets at CHECKPOINT
tap_pending_at_checkpoint() {
	local seen aql
	seen=$(dmesg | sed -n "\\|$2\$|,\$p" | grep -c 'CHECKPOINT: queue .* holds [0-9]* bytes of packets not yet executed')
	aql=$(dmesg | sed -n "\\|$2\$|,\$p" | grep -c 'CHECKPOINT: queue .* holds [0-9]* AQL packets not yet processed')
	if [ "$seen" -gt 0 ] && [ "$aql" -gt 0 ]; then
		tap_ok "$1: checkpointed with work in flight ($seen SDMA queue(s) holding packets, $aql AQL queue(s))"
	else
		tap_not_ok "$1: checkpointed with work in flight" \
			"at CHECKPOINT $seen SDMA queue(s) held unexecuted packets, $aql AQL queue(s) unprocessed ones"
	fi
}

wl_fresh rocr preset=2xmi210 -- --vram-mb 2 || e2e_done
tap_verify "rocr: before the dump" "$pid" "$state"
task_snapshot "$pid" "$RESULTS_DIR/rocr.dumped"

dmesg_mark "e2e-60: dump 1"
tap_dump "rocr: criu dump" "$pid" "$img"
tap_pending_at_checkpoint "rocr: dump 1" "e2e-60: dump 1"
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
tap_restore "rocr: criu restore on the same node" "$img"
tap_same_task "rocr: restored" "$RESULTS_DIR/rocr.dumped" "$pid"
tap_alive_verified "rocr: restored" "$pid" "$state"

dmesg_mark "e2e-60: dump 2"
tap_dump "rocr: criu dump of the restored task" "$pid" "$img"
tap_pending_at_checkpoint "rocr: dump 2" "e2e-60: dump 2"
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 render_minor_base=160 ||
	{ tap_not_ok "rocr: reload the emulator with other gpu_ids"; e2e_done; }
tap_restore "rocr: criu restore on other gpu_ids" "$img"
tap_same_task "rocr: restored on other gpu_ids" "$RESULTS_DIR/rocr.dumped" "$pid"
tap_alive_verified "rocr: restored on other gpu_ids" "$pid" "$state"

tap_dump "rocr: criu dump -R" "$pid" "$img" -R
tap_alive_verified "rocr: left running" "$pid" "$state"
tap_same_task "rocr: left running" "$RESULTS_DIR/rocr.dumped" "$pid"

tap_dump_gone "rocr: criu dump before a faulty restore" "$pid" "$state" "$img"
echo "restore-rptr 1048576" >"$EMU_DEBUGFS/fault"
dmesg_mark "e2e-60: faulty restore"
if wl_restore "$img"; then
	line=$(wl_ask "$pid" "$state" verify)
	if [ "${line#VERIFY FAIL: stream }" != "$line" ] &&
		grep -qE 'a queue does not run|AQL queue [0-9]+ error' "$state.verify"; then
		tap_ok "rocr: a restored queue that does not run fails verification, naming the stream ($line)"
	else
		tap_not_ok "rocr: a restored queue that does not run fails verification, naming the stream" "$line"
		[ ! -s "$state.verify" ] || sed 's/^/#   /' "$state.verify" | head -n 6
	fi
	for kind in 'sdma\] .*write pointer' 'aql\] .*write index'; do
		if dmesg | sed -n '\|e2e-60: faulty restore$|,$p' |
			grep -q "\[$kind not within one ring of the read"; then
			tap_ok "rocr: the emulator names the ${kind%%\\*} queue it stopped"
		else
			tap_not_ok "rocr: the emulator names the ${kind%%\\*} queue it stopped" "no such queue fault in the kernel log"
		fi
	done
else
	tap_not_ok "rocr: criu restore (ring state injected wrong)" "$(criu_log_names "$CRIU_LAST_LOG")"
fi
echo clear >"$EMU_DEBUGFS/fault"
wl_kill "$pid"
e2e_done
