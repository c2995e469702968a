#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The fault sweep: every call the plugin makes into the kernel during a dump and a restore of a
# process on 2 x MI210 with four BOs per GPU — each KFD ioctl, each CRIU op, each render-node ioctl
# (device init, BO import, userptr registration, VA map, command submission, fence wait, ...) —
# made to fail with EIO, one occurrence at a time. The points are counted by the emulator while
# criu works (debugfs calls, only calls by tasks named criu: criu itself, and a task criu is
# restoring), so their number grows with the code, not by hand. For each point:
#   dump (-R):  criu fails, or the point is harmless and the dump succeeds (said so); either way the
#               task runs on with its queues not paused and verifies every byte; when criu fails,
#               the plugin's log names what failed and why (EIO's "Input/output error");
#   restore:    criu fails (or the point is harmless: the task is whole and verifies); no task and
#               no KFD process remain; the plugin's log names what failed;
# and a dump and a restore without the fault succeed afterwards. The sweep ends with
# "fault sweep: N points, N clean".
#
# FAULT_SWEEP=full (make check-full) tries every occurrence of every call. By default (make check)
# every occurrence of every KFD ioctl and CRIU op and the first occurrence of each render-node
# ioctl: a deterministic part of the full sweep.
# Beyond one-shot faults: a RESUME that fails on every try (the task must not live on with queues
# that never start: the plugin kills it and the restore fails).
# And a copy engine that never completes: a clear error in seconds, the task running on.
# Host calls (image files, staging memory) are not swept here.
# timeout: 3600
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_require
scenario_warnings_begin

sweep=${FAULT_SWEEP:-part}
img=/tmp/img-95
EIO_TEXT="Input/output error"
points=0 clean=0

fault() { echo "$1" >"$EMU_DEBUGFS/fault"; }
arm_for_criu() {
	fault clear
	fault "comm criu"
}

# occurrences <calls listing>: "kind nr nth" lines, every point the sweep tries
occurrences() {
	local kind nr count nth
	while read -r kind nr count; do
		if [ "$sweep" = full ] || [ "$kind" != drm ]; then
			for ((nth = 1; nth <= count; nth++)); do echo "$kind $nr $nth"; done
		else
			echo "$kind $nr 1"
		fi
	done <<<"$1"
}

# plugin_named_failure <log>: the plugin logged an error naming the failed call's errno
plugin_named_failure() {
	grep -q "amdgpu_plugin: .*$EIO_TEXT" "$1" 2>/dev/null
}

point_result() {
	local name=$1 why=$2
	points=$((points + 1))
	if [ -z "$why" ]; then
		clean=$((clean + 1))
		tap_ok "$name"
	else
		tap_not_ok "$name" "$why"
	fi
}

wl_fresh kfd preset=2xmi210 -- --vram-mb 4 --bo-mb 1 || e2e_done
arm_for_criu

# --- dump ----------------------------------------------------------------------------------------
echo reset >"$EMU_DEBUGFS/calls"
tap_dump "kfd: a dump -R to count the calls" "$pid" "$img" -R
dump_calls=$(cat "$EMU_DEBUGFS/calls")
log "calls during a dump: $(tr '\n' ';' <<<"$dump_calls")"
while read -r kind nr nth; do
	name="dump, $kind $nr #$nth fails"
	arm_for_criu
	fault "$kind $nr $nth 5"
	why=
	if wl_dump "$pid" "$img" -R; then
		outcome="harmless: the dump succeeded"
	else
		outcome="criu dump failed"
		plugin_named_failure "$CRIU_LAST_LOG" ||
			why="the plugin's log does not name the failure ($(grep -c amdgpu_plugin "$CRIU_LAST_LOG") plugin lines)"
	fi
	fault clear
	if ! kill -0 "$pid" 2>/dev/null; then
		why="${why:+$why; }the task is gone"
	else
		! emu_queues_paused "$pid" || why="${why:+$why; }its queues stay paused"
		# (the workload's verification includes its queues' heartbeat)
		v=$(wl_ask "$pid" "$state" verify)
		[ "$v" = "VERIFY OK" ] || why="${why:+$why; }$v"
	fi
	point_result "$name: $outcome; the task runs on and verifies" "$why"
done < <(occurrences "$dump_calls")

# --- the engine never completing --------------------------------------------------------------
# 1 MB/s: a chunk takes longer than the plugin's limit for it (2 s plus the chunk at 4 MB/s).
echo 1 >/sys/module/amdgpu_emu/parameters/sdma_mbps
t0=${EPOCHREALTIME/./}
if wl_dump "$pid" "$img" -R; then
	tap_not_ok "kfd: a dump whose copy engine hangs fails" "it succeeded"
else
	tap_ok "kfd: a dump whose copy engine hangs fails"
fi
log "the hung engine became an error after $(((${EPOCHREALTIME/./} - t0) / 1000)) ms (criu's whole run)"
echo 0 >/sys/module/amdgpu_emu/parameters/sdma_mbps
tap_log_has "kfd: the plugin says the engine is taken for hung, and after how long" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: GPU 0x[0-9a-f]+: SDMA submission [0-9]+ did not complete within [0-9.]+ s: the copy engine is taken for hung"
tap_alive_verified "kfd: after the hung engine" "$pid" "$state"

# --- restore -------------------------------------------------------------------------------------
arm_for_criu
tap_dump "kfd: the dump to restore from" "$pid" "$img"
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
cp "$RESULTS_DIR/kfd.out" /tmp/img-95-kfd.out
echo reset >"$EMU_DEBUGFS/calls"
if wl_restore "$img"; then
	tap_ok "kfd: a restore to count the calls"
else
	tap_not_ok "kfd: a restore to count the calls" "see ${CRIU_LAST_LOG#"$RESULTS_DIR"/}"
fi
restore_calls=$(cat "$EMU_DEBUGFS/calls")
log "calls during a restore: $(tr '\n' ';' <<<"$restore_calls")"
wl_kill "$pid"
while read -r kind nr nth; do
	name="restore, $kind $nr #$nth fails"
	cp /tmp/img-95-kfd.out "$RESULTS_DIR/kfd.out" # criu restores the file at its dumped size
	arm_for_criu
	fault "$kind $nr $nth 5"
	why=
	if wl_restore "$img"; then
		fault clear
		outcome="harmless: the restore succeeded"
		v=$(wl_ask "$pid" "$state" verify)
		[ "$v" = "VERIFY OK" ] || why="restored, but: $v"
		wl_kill "$pid"
	else
		fault clear
		outcome="criu restore failed"
		plugin_named_failure "$CRIU_LAST_LOG" ||
			why="the plugin's log does not name the failure"
		wait_for "task_gone $pid '$state'" 5 || why="${why:+$why; }a task is left: $(pgrep -af -- "--state $state")"
		wait_for '! grep -q "^process" "$EMU_DEBUGFS/processes"' 5 ||
			why="${why:+$why; }a KFD process is left: $(grep '^process' "$EMU_DEBUGFS/processes" | head -n 1)"
	fi
	kill -KILL $(pgrep -f -- "--state $state") 2>/dev/null
	point_result "$name: $outcome; nothing half-restored is left" "$why"
done < <(occurrences "$restore_calls")

# --- RESUME fails on every try ------------------------------------------------------------------
cp /tmp/img-95-kfd.out "$RESULTS_DIR/kfd.out"
arm_for_criu
fault "criu 4 1 5"
fault "criu 4 2 5"
fault "criu 4 3 5"
if wl_restore "$img"; then
	tap_not_ok "kfd: a restore whose RESUME always fails fails" "it succeeded"
else
	tap_ok "kfd: a restore whose RESUME always fails fails"
fi
fault clear
tap_log_has "kfd: the plugin says why it killed the task" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: KFD RESUME of pid $pid failed, so its GPU queues would never run again; the task is killed"
tap_no_task "kfd: no task is left" "$pid" "$state"
tap_no_kfd_process "kfd: no KFD process is left"

# --- and without a fault, both work --------------------------------------------------------------
fault clear
cp /tmp/img-95-kfd.out "$RESULTS_DIR/kfd.out"
if wl_restore "$img"; then
	tap_ok "kfd: after the sweep a restore without a fault succeeds"
	tap_alive_verified "kfd: restored after the sweep" "$pid" "$state"
	tap_dump "kfd: and a dump -R of it succeeds" "$pid" "$img-again" -R
	tap_alive_verified "kfd: dumped after the sweep" "$pid" "$state"
	wl_kill "$pid"
else
	tap_not_ok "kfd: after the sweep a restore without a fault succeeds" "see ${CRIU_LAST_LOG#"$RESULTS_DIR"/}"
fi

echo "# fault sweep ($sweep): $points points, $clean clean"
if [ "$points" -gt 0 ] && [ "$points" -eq "$clean" ]; then
	tap_ok "fault sweep: $points points, $clean clean"
else
	tap_not_ok "fault sweep: $points points, $clean clean"
fi
tap_no_kernel_warnings
e2e_done
