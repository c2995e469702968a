#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# criu dump -R (--leave-running), for both workloads: the task keeps running, its queues run
# again (the heartbeat advances) and it verifies; then the original is killed and the image is
# restored "elsewhere" (the emulator reloaded with other gpu_ids and render minors), where it
# verifies and runs too.
#
# One case criu itself cannot restore: a -R image of a task that maps a deleted file. criu keeps
# such a file through a "link remap" (a hard link it makes at dump), and removes every link remap
# when a dump leaves the task running (cr-dump.c, criu 3.17 to 4.3). The first libhsakmt process
# of a node is such a task with ROCm 5.2's thunk: it creates the thunk's semaphore, and glibc maps
# the semaphore's temporary name, unlinked once it is linked to its real one. Its -R image must
# then fail cleanly at restore, leaving no GPU state; a task started while another thunk process
# holds the semaphore maps its real name, and its -R image restores beside that process.
# timeout: 240
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# dump_and_leave <w> [name prefix]: dump -R of the workload started (pid, state, img); checks that it
# runs on as it was, then kills it.
dump_and_leave() {
	local w=$1 n=${2:-$1}
	task_snapshot "$pid" "$RESULTS_DIR/$w.dumped"
	tap_dump "$n: criu dump -R" "$pid" "$img" -R
	# criu restores the task's stdout file at the size it had at the dump: keep that version
	cp "$RESULTS_DIR/$w.out" "/tmp/img-26-$w.out"
	tap_log_has "$n: the plugin resumed the queues after the dump" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: pid $pid: queues resumed"
	tap_beats_advance "$n: the emulator's heartbeat of its queues advances" "$pid"
	tap_alive_verified "$n: left running" "$pid" "$state"
	tap_same_task "$n: left running" "$RESULTS_DIR/$w.dumped" "$pid"

	wl_kill "$pid"
	mv "$RESULTS_DIR/$w.out" "$RESULTS_DIR/$w-left-running.out"
	cp "/tmp/img-26-$w.out" "$RESULTS_DIR/$w.out"
}

# restore_elsewhere <w> [name prefix] [where]: restores the image on other gpu_ids and render
# minors, or where the task ran when asked for "here".
restore_elsewhere() {
	local w=$1 n=${2:-$1} where=${3:-on other gpu_ids}
	[ "$where" = here ] ||
		emu_reload_or_say "$n: reload the emulator with other gpu_ids" preset=2xmi210 gpu_ids=0x0a0b,0x0c0d render_minor_base=150 || return
	tap_restore "$n: criu restore of the -R image $where" "$img"
	tap_same_bos "$n: every BO at its VA with its handle (emulator view)" "$pid" "$state"
	tap_alive_verified "$n: restored from the -R image" "$pid" "$state"
	tap_same_task "$n: restored from the -R image" "$RESULTS_DIR/$w.dumped" "$pid"
	wl_kill "$pid"
}

# The -R image of a task mapping a deleted file: criu's own restore fails, and nothing is left.
refused_for_its_link_remap() {
	local w=$1 deleted=$2
	emu_reload_or_say "$w: reload the emulator with other gpu_ids" preset=2xmi210 gpu_ids=0x0a0b,0x0c0d render_minor_base=150 || return
	tap_restore_fails "$w: criu cannot restore the -R image of a task mapping deleted ${deleted##*/}" "$img" || wl_kill "$pid"
	tap_log_has "$w: criu names the link remap it removed after the -R dump" "$CRIU_LAST_LOG" "Can't link .*link_remap"
	tap_no_task "$w: the failed restore leaves no task" "$pid" "$state"
	tap_no_kfd_process "$w: the failed restore leaves no GPU process in the driver"
}

dump_leave_running() {
	local w=$1 deleted holder
	deleted=$(awk '/ \(deleted\)$/ && $6 ~ /^\/dev\/shm\// { print $6; exit }' "/proc/$pid/maps")
	dump_and_leave "$w"
	if [ -z "$deleted" ]; then
		restore_elsewhere "$w"
		return
	fi
	log "$w maps the deleted $deleted: criu removes its link remap after a -R dump"
	refused_for_its_link_remap "$w" "$deleted"

	# Again with another thunk process holding the semaphore, as on a node already running ROCm.
	emu_reload_or_say "$w: reload the emulator for a task beside another" preset=2xmi210 || return
	wl_start "$w" holder --vram-mb 2 --bo-mb 1 || { tap_not_ok "$w: another thunk process gets ready"; return; }
	holder=$WL_PID
	wl_start "$w" "$w" --vram-mb 2 --bo-mb 1 || { tap_not_ok "$w: the workload gets ready beside it"; wl_kill "$holder"; return; }
	pid=$WL_PID state=$WL_STATE
	if awk '/ \(deleted\)$/ && $6 ~ /^\/dev\/shm\// { bad = 1 } END { exit !bad }' "/proc/$pid/maps"; then
		tap_not_ok "$w: beside another thunk process, it maps no deleted file" "$(grep deleted "/proc/$pid/maps")"
	else
		tap_ok "$w: beside another thunk process, it maps no deleted file"
	fi
	dump_and_leave "$w" "$w beside another"
	# the node keeps the other process (and the driver with it), as a node running ROCm would
	restore_elsewhere "$w" "$w beside another" here
	wl_kill "$holder"
}
for_each_workload dump_leave_running
e2e_done
