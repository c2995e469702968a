#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# criu killed (SIGKILL) in the middle of a restore. Without the plugin's restore guard the task
# criu was restoring waits for criu's next stage forever, holding its KFD process; with it:
#   before-restore  the task stalls in KFD RESTORE (the emulator's criu-stall): it exists, none of
#                   its GPU state yet
#   during-copy     the engine copies the BO contents back (slowed down)
#   post-restore    from criu's post-restore action script: every task restored, not yet resumed
# each time no task and no KFD process remain within seconds (the time from criu's death to the
# task's end is printed), the guard's log (kernel log and image directory) names the task it
# killed, and neither the guard nor its socket is left. And
#   after-resume    from criu's pre-resume script: KFD RESUME is done and the task is whole; criu's
#                   death lets it go as criu would have: it runs, verifies, and is the one dumped.
# The libhsakmt and ROCm-runtime workloads at two of the moments.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

SDMA_MBPS=16
killed_at=/tmp/e2e-91-killed-at

engine_bytes() {
	awk '{ n += $6 } END { print n + 0 }' "$EMU_DEBUGFS/engines"
}

declare -A gone_ms

# wait_moment <moment> <dmesg mark> <engine bytes at the start>
wait_moment() {
	case "$1" in
	before-restore) wait_for "dmesg | sed -n '\\|$2\$|,\$p' | grep -q 'injected stall of criu op 3'" 120 ;;
	during-copy) wait_for "[ \$((\$(engine_bytes) - $3)) -gt $((4 << 20)) ]" 120 ;;
	post-restore | after-resume) wait_for "[ -s '$killed_at' ]" 120 ;;
	esac
}

# kill_criu_at <name> <moment> <image dir> <state>: criu restore killed at the moment
kill_criu_at() {
	local name=$1 moment=$2 img=$3 st=$4 mark t0 args=()
	mark="e2e-91: $name $moment"
	echo "$mark" >/dev/kmsg
	rm -f "$killed_at" "$img"/amdgpu-plugin-guard.log
	case "$moment" in
	before-restore) echo "criu-stall 3 1 30000" >"$EMU_DEBUGFS/fault" ;;
	during-copy) echo "$SDMA_MBPS" >/sys/module/amdgpu/parameters/sdma_mbps ;;
	post-restore) args=(--action-script "$(criu_killer_script post-restore "$killed_at")") ;;
	after-resume) args=(--action-script "$(criu_killer_script pre-resume "$killed_at")") ;;
	esac
	local base
	base=$(engine_bytes)
	criu_start restore -D "$img" -d "${args[@]}"
	local reached=yes
	wait_moment "$moment" "$mark" "$base" || reached=
	criu_kill_now "$killed_at"
	t0=$CRIU_KILLED_US
	if [ -n "$reached" ]; then
		tap_ok "$name: criu restore killed at $moment"
	else
		tap_not_ok "$name: criu restore killed at $moment" "it never got there: see ${CRIU_LAST_LOG#"$RESULTS_DIR"/}"
	fi

	if [ "$moment" = after-resume ]; then
		tap_alive_verified "$name: whole after RESUME, criu's death let it go" "$pid" "$st"
		tap_same_task "$name: after RESUME" "$RESULTS_DIR/$name.dumped" "$pid"
		if dmesg | sed -n "\\|$mark\$|,\$p" | grep -q 'amdgpu_plugin: guard' || [ -e "$img/amdgpu-plugin-guard.log" ]; then
			tap_not_ok "$name: the guard left the resumed task alone" \
				"$(dmesg | grep 'amdgpu_plugin: guard' | tail -n 2)"
		else
			tap_ok "$name: the guard left the resumed task alone"
		fi
	else
		if wait_for "task_gone $pid '$st'" 10; then
			gone_ms[$name $moment]=$((($(now_us) - t0) / 1000))
			log "$name, criu killed at $moment: the task was gone ${gone_ms[$name $moment]} ms after criu's death"
		fi
		tap_no_task "$name: no half-restored task is left" "$pid" "$st"
		tap_no_kfd_process "$name: no KFD process is left"
		if dmesg | sed -n "\\|$mark\$|,\$p" |
			grep -Eq "amdgpu_plugin: guard \\(criu pid $CRIU_PID\\): criu died while it restored pid $pid: killed the half-restored task"; then
			tap_ok "$name: the kernel log says the guard killed the half-restored task"
		else
			tap_not_ok "$name: the kernel log says the guard killed the half-restored task"
			dmesg | sed -n "\\|$mark\$|,\$p" | tail -n 5 | sed 's/^/#   /'
		fi
		tap_log_has "$name: so does amdgpu-plugin-guard.log in the image directory" "$img/amdgpu-plugin-guard.log" \
			"criu died while it restored pid $pid: killed the half-restored task"
	fi
	if wait_for guard_gone 5 && ! compgen -G "$img/amdgpu-guard-*.sock" >/dev/null; then
		tap_ok "$name: neither the guard nor its socket is left"
	else
		tap_not_ok "$name: neither the guard nor its socket is left" "$(pgrep -ax amdgpu-guard; ls "$img" | grep guard)"
	fi
}

# dumped <w> <image dir> [workload args...]: a fresh workload dumped (and so killed) into the dir
dumped() {
	local w=$1 img=$2
	shift 2
	wl_fresh "$w" preset=2xmi210 -- "$@" || return 1
	task_snapshot "$pid" "$RESULTS_DIR/$w.dumped"
	if ! wl_dump "$pid" "$img"; then
		tap_not_ok "$w: criu dump" "$(criu_log_names "$CRIU_LAST_LOG")"
		return 1
	fi
	wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
}

if dumped kfd /tmp/img-91-kfd --vram-mb 32 --bo-mb 8; then
	for moment in before-restore during-copy post-restore after-resume; do
		kill_criu_at kfd "$moment" /tmp/img-91-kfd "$state"
	done
	wl_kill "$pid"
fi

for w in hsakmt rocr; do
	if [ "$w" = rocr ] && [ ! -x "$E2E_BIN/rocr_workload" ]; then
		tap_skip "$w: criu killed during the restore" "no rocr_workload"
		continue
	fi
	dumped "$w" "/tmp/img-91-$w" --vram-mb 16 || continue
	kill_criu_at "$w" before-restore "/tmp/img-91-$w" "$state"
	kill_criu_at "$w" post-restore "/tmp/img-91-$w" "$state"
done

log "time from criu's death to the half-restored task's end:"
for k in "${!gone_ms[@]}"; do
	log "  $k: ${gone_ms[$k]} ms"
done | sort

tap_no_kernel_warnings
e2e_done
