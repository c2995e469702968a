#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# criu dump -R (--leave-running), for both workloads: the task keeps running, its queues run
# again (the heartbeat advances) and it verifies; then the original is killed and the image is
# restored "elsewhere" (the emulator reloaded with other gpu_ids and render minors), where it
# verifies and runs too.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# dump_leave_running <w>: the scenario for one workload, started (pid, state, img)
dump_leave_running() {
	local w=$1
	task_snapshot "$pid" "$RESULTS_DIR/$w.dumped"
	tap_dump "$w: criu dump -R" "$pid" "$img" -R
	# criu restores the task's stdout file at the size it had at the dump: keep that version
	cp "$RESULTS_DIR/$w.out" "/tmp/img-26-$w.out"
	tap_log_has "$w: the plugin resumed the queues after the dump" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: pid $pid: queues resumed"
	tap_beats_advance "$w: the emulator's heartbeat of its queues advances" "$pid"
	tap_alive_verified "$w: left running" "$pid" "$state"
	tap_same_task "$w: left running" "$RESULTS_DIR/$w.dumped" "$pid"

	wl_kill "$pid"
	mv "$RESULTS_DIR/$w.out" "$RESULTS_DIR/$w-left-running.out"
	cp "/tmp/img-26-$w.out" "$RESULTS_DIR/$w.out"
	emu_reload_or_say "$w: reload the emulator with other gpu_ids" preset=2xmi210 gpu_ids=0x0a0b,0x0c0d render_minor_base=150 || return
	tap_restore "$w: criu restore of the -R image on other gpu_ids" "$img"
	tap_same_bos "$w: every BO at its VA with its handle (emulator view)" "$pid" "$state"
	tap_alive_verified "$w: restored from the -R image" "$pid" "$state"
	tap_same_task "$w: restored from the -R image" "$RESULTS_DIR/$w.dumped" "$pid"
	wl_kill "$pid"
}
for_each_workload dump_leave_running
e2e_done
