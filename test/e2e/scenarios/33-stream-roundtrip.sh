#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Checkpoint and restore through criu's image streamer (criu --stream; the stand-in of
# test/streamer/ in place of criu-image-streamer), for both workloads:
#  - the dump leaves no plugin image in -D: kfd, render-node and pages images all went into the
#    stream, and the restore asks for each once (the stand-in fails a second request), the
#    plugin's in the order they were captured;
#  - restored on other gpu_ids and render minors (kfd_workload) or the same GPUs (hsakmt), the
#    task is the one that was dumped, verifies every byte (half of them zeros, which a stream
#    carries as bytes: it has no holes) and runs.
# Then a render-node fd that criu restores before its process's /dev/kfd fd (kfd_workload
# --render-first): from a stream its GPU cannot be looked up in the kfd image yet. criu 4.3
# (RESTORE_EXT_FILE's retry flag) comes back for it after the kfd file: the restore onto other
# gpu_ids succeeds. Older criu cannot defer it: onto the same gpu_ids it succeeds, onto others it
# fails saying why, and leaves no task behind.
# timeout: 300
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# criu 4.3 (and criu-dev) are the ones that retry plugin files. (Asked by version: the criu in PATH
# may be a wrapper, as the trixie guest's /opt/criu-4.3/criu is.)
criu_retries_plugin_files() {
	dpkg --compare-versions "$(criu_version)" ge 4.3
}

for w in kfd hsakmt; do
	# half the contents zeros: a stream carries them as bytes (no holes), and back
	wl_fresh "$w" preset=2xmi210 -- --vram-mb 4 --bo-mb 1 --zeros 50 || continue
	img=/tmp/img-33-$w stream=/tmp/stream-33-$w
	task_snapshot "$pid" "$RESULTS_DIR/33-$w.dumped"
	stream_dump "$w" "$pid" "$img" "$stream"
	tap_log_has "$w: the plugin streams its images" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: images go through criu's image streamer \(.*streamer-capture.sock\)"
	wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"

	where="the same GPUs"
	if [ "$w" = kfd ]; then
		where="other gpu_ids"
		emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 render_minor_base=160 ||
			{ tap_not_ok "$w: reload the emulator with other gpu_ids"; continue; }
	fi
	if stream_restore "$img" "$stream"; then
		tap_ok "$w: criu restore --stream onto $where"
	else
		tap_not_ok "$w: criu restore --stream onto $where" "$(criu_log_names "$CRIU_LAST_LOG")"
	fi
	tap_same_order "$w"
	tap_same_task "$w: restored from a stream" "$RESULTS_DIR/33-$w.dumped" "$pid"
	tap_alive_verified "$w: restored from a stream" "$pid" "$state"
	wl_kill "$pid"
done

# A render-node file before the kfd file, through a stream.
render_first_round() {
	local name=$1 ids=$2 expect=$3
	wl_fresh kfd preset=2xmi210 -- --render-first --vram-mb 2 --bo-mb 1 || return
	local img=/tmp/img-33-rf stream=/tmp/stream-33-rf
	task_snapshot "$pid" "$RESULTS_DIR/33-rf.dumped"
	stream_dump "$name" "$pid" "$img" "$stream"
	wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
	if [ -n "$ids" ]; then
		emu_reload preset=2xmi210 gpu_ids="$ids" render_minor_base=160 ||
			{ tap_not_ok "$name: reload the emulator with gpu_ids $ids"; return; }
	fi
	if [ "$expect" = restored ]; then
		if stream_restore "$img" "$stream"; then
			tap_ok "$name: criu restore --stream"
		else
			tap_not_ok "$name: criu restore --stream" "$(criu_log_names "$CRIU_LAST_LOG")"
		fi
		tap_same_order "$name"
		tap_same_task "$name" "$RESULTS_DIR/33-rf.dumped" "$pid"
		tap_alive_verified "$name" "$pid" "$state"
		wl_kill "$pid"
	else
		if stream_restore "$img" "$stream"; then
			tap_not_ok "$name: criu restore --stream fails" "it succeeded"
			wl_kill "$pid"
		else
			tap_ok "$name: criu restore --stream fails"
		fi
		tap_log_has "$name: the plugin says why" "$CRIU_LAST_LOG" \
			"amdgpu_plugin: amdgpu-renderD-[0-9]+\\.img names GPU 0x[0-9a-f]+, and no local GPU has that id: through the image streamer"
		tap_no_task "$name: no half-restored task is left" "$pid" "$state"
	fi
}

if criu_retries_plugin_files; then
	render_first_round "render node first, criu retries it, other gpu_ids" 0x0e01,0x0e02 restored
	tap_log_has "render node first: the plugin asked criu to come back" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: amdgpu-renderD-[0-9]+\\.img comes before this task's kfd image; criu asks for it again later"
else
	render_first_round "render node first, same gpu_ids" "" restored
	render_first_round "render node first, other gpu_ids, criu without retry" 0x0e01,0x0e02 refused
fi
e2e_done
