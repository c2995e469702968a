#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A dump that fails late leaves the task running with its queues resumed, for both workloads:
#  (a) KFD CHECKPOINT fails (fault injected after PROCESS_INFO paused the queues);
#  (b) criu fails after the plugin saved everything (a post-dump action script exits 1);
#  (c) the same through criu's image streamer (--stream): the plugin streamed the GPU state, then
#      criu fails in its post-dump script.
# Each time criu dump fails, the task is alive, its heartbeat advances and it verifies.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# tap_lives_on <name> <pid> <state>: the emulator's heartbeat advances, and the task verifies.
tap_lives_on() {
	tap_beats_advance "$1: the emulator's heartbeat of its queues advances" "$2"
	tap_alive_verified "$1" "$2" "$3"
}

script=/tmp/e2e-27-fail-post-dump.sh
cat >"$script" <<'SH'
#!/bin/sh
[ "$CRTOOLS_SCRIPT_ACTION" != post-dump ] || { echo "post-dump: failing on purpose"; exit 1; }
exit 0
SH
chmod +x "$script"

for w in kfd hsakmt; do
	if ! emu_reload preset=2xmi210; then
		tap_not_ok "$w: load the emulator (2xmi210)"
		continue
	fi
	wl_start "$w" "$w" --vram-mb 2 --bo-mb 1 || { tap_not_ok "$w: the workload gets ready"; continue; }
	pid=$WL_PID state=$WL_STATE

	# (a) CHECKPOINT (CRIU op 1) fails with EIO
	echo "criu 1 1 5" >/sys/kernel/debug/amdgpu_emu/fault
	if wl_dump "$pid" "/tmp/img-27a-$w"; then
		tap_not_ok "$w: criu dump fails when KFD CHECKPOINT fails" "it succeeded"
	else
		tap_ok "$w: criu dump fails when KFD CHECKPOINT fails"
	fi
	echo clear >/sys/kernel/debug/amdgpu_emu/fault
	tap_log_has "$w: the log names the failed CHECKPOINT" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: KFD CHECKPOINT failed for pid $pid: Input/output error"
	tap_log_has "$w: the plugin resumed the paused queues" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: pid $pid: queues resumed"
	tap_lives_on "$w: after the failed CHECKPOINT" "$pid" "$state"

	# (b) criu fails after the plugin succeeded
	if wl_dump "$pid" "/tmp/img-27b-$w" --action-script "$script"; then
		tap_not_ok "$w: criu dump fails in its post-dump script" "it succeeded"
	else
		tap_ok "$w: criu dump fails in its post-dump script"
	fi
	tap_log_has "$w: the plugin had saved the process before criu failed" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: pid $pid: saved amdgpu-kfd-[0-9]+\\.img"
	tap_log_has "$w: the plugin resumed the paused queues" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: pid $pid: queues resumed"
	tap_lives_on "$w: after criu failed post-dump" "$pid" "$state"

	# (c) --stream
	if streamer_start capture "/tmp/img-27c-$w" "/tmp/stream-27c-$w"; then
		# (not wl_dump: it empties the directory, where the streamer has its socket)
		if criu_dump "$pid" "/tmp/img-27c-$w" --link-remap --stream --action-script "$script"; then
			tap_not_ok "$w: criu dump --stream fails in its post-dump script" "it succeeded"
		else
			tap_ok "$w: criu dump --stream fails in its post-dump script"
		fi
		streamer_wait >/dev/null 2>&1
		tap_log_has "$w: the plugin had streamed the process before criu failed" "$CRIU_LAST_LOG" \
			"amdgpu_plugin: pid $pid: saved amdgpu-kfd-[0-9]+\\.img"
		tap_log_has "$w: the plugin resumed the paused queues" "$CRIU_LAST_LOG" \
			"amdgpu_plugin: pid $pid: queues resumed"
		tap_lives_on "$w: after criu failed a --stream dump post-dump" "$pid" "$state"
	else
		tap_not_ok "$w: the image streamer stand-in listens" "$(tail -n2 "$RESULTS_DIR/streamer.log")"
	fi
	wl_kill "$pid"
done
e2e_done
