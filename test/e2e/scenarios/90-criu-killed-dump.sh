#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# criu killed (SIGKILL, as the OOM killer or a runtime's timeout would) in the middle of a dump:
# the plugin's dump guard resumes the GPU queues criu had paused. Moments, on 2 x MI210 with the
# copy engine slowed down so that the copy takes seconds:
#   after-process-info  KFD CHECKPOINT stalls (the emulator's criu-stall): the queues are paused
#                       and nothing is written yet
#   kfd-image           as soon as the kfd image is there (the copy is about to start)
#   pages-gpu0/1        while each GPU's pages file is being written
#   post-dump           from criu's post-dump action script: the plugin's part is over, criu is not
# Each time the task runs on, its queues beat again (the time from criu's death to the first new
# heartbeat is printed; the goal is under 2 s), it verifies every byte; the guard says what it did
# in the kernel log and in the image directory, and is gone; the task is not left traced. The same
# for the libhsakmt and ROCm-runtime workloads at two moments. Then the guard does nothing when
# the dump completes: with -R (the task runs on, no guard line anywhere, no guard left) and
# without (criu kills the task; it is not resumed behind criu's back), and the restore of that
# image leaves no guard, no guard socket and no guard log either. And the other way round: the
# dumped task killed while its GPU pages are written (beside criu, under 4.3; criu learns of it from
# its parasite, or its SIGCHLD handler calls exit(1) from wherever criu is): criu fails with status
# 1 and a clean log, neither crashing nor logging garbage from a plugin torn down under its own copy
# threads, and no guard is left.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

SDMA_MBPS=16
killed_at=/tmp/e2e-90-killed-at
killer=$(criu_killer_script post-dump "$killed_at")

file_size() { stat -c %s "$1" 2>/dev/null || echo 0; }

# wait_moment <moment> <pid> <img>: true once the dump reached the moment
wait_moment() {
	local moment=$1 p=$2 img=$3 gpu f
	case "$moment" in
	after-process-info) wait_for "emu_queues_paused $p" 60 ;;
	kfd-image) wait_for "compgen -G '$img/amdgpu-kfd-*.img' >/dev/null" 60 ;;
	pages-gpu0 | pages-gpu1)
		gpu=$(emu_gpu_nodes | sed -n "$((${moment#pages-gpu} + 1))p")
		f=$(printf '%s/amdgpu-pages-*-%04x.img' "$img" "$(cat "$KFD_TOPOLOGY/$gpu/gpu_id")")
		wait_for "[ \$(file_size $f) -gt $((4 << 20)) ]" 60
		;;
	post-dump) wait_for "[ -s '$killed_at' ]" 120 ;;
	esac
}

declare -A beat_ms

# kill_criu_at <name> <moment> <pid> <img> [criu args...]
kill_criu_at() {
	local name=$1 moment=$2 p=$3 img=$4 before t0 waited after mark
	shift 4
	rm -rf "$img"
	mkdir -p "$img"
	mark="e2e-90: $name $moment"
	echo "$mark" >/dev/kmsg
	echo "$SDMA_MBPS" >/sys/module/amdgpu/parameters/sdma_mbps
	[ "$moment" != after-process-info ] || echo "criu-stall 1 1 30000" >"$EMU_DEBUGFS/fault"
	rm -f "$killed_at"
	criu_start dump -t "$p" -D "$img" --link-remap "$@"
	if ! wait_moment "$moment" "$p" "$img"; then
		tap_not_ok "$name: criu dump reaches the moment $moment" "$(criu_log_names "$CRIU_LAST_LOG")"
		criu_kill_now "$killed_at"
		return 1
	fi
	criu_kill_now "$killed_at"
	t0=$CRIU_KILLED_US
	tap_ok "$name: criu killed at $moment"

	# The emulator counts heartbeats for queues whose packets carry one (kfd and hsakmt
	# workloads); ROCm's runtime's have none, and the workload's own HEARTBEAT check follows.
	before=$(emu_queue_beats "$p")
	waited=0
	until after=$(emu_queue_beats "$p"); { [ "$after" != "$before" ] || [ -z "${before//[0 ]/}" ]; } &&
		! emu_queues_paused "$p"; do
		[ $(($(now_us) - t0)) -lt 20000000 ] || { waited=; break; }
		sleep 0.01
	done
	if [ -n "$waited" ]; then
		beat_ms[$name $moment]=$((($(now_us) - t0) / 1000))
		log "$name, criu killed at $moment: queues beating again ${beat_ms[$name $moment]} ms after criu's death"
		tap_ok "$name: the queues beat again after criu's death"
	else
		tap_not_ok "$name: the queues beat again after criu's death" "heartbeats '$before' -> '$after' in 20 s"
	fi
	tap_alive_verified "$name after criu's death at $moment" "$p" "$state"
	if grep -q '^TracerPid:[[:space:]]*0$' "/proc/$p/status" 2>/dev/null; then
		tap_ok "$name: the task is traced by nobody"
	else
		tap_not_ok "$name: the task is traced by nobody" "$(grep TracerPid "/proc/$p/status" 2>/dev/null)"
	fi
	local said="amdgpu_plugin: guard \\(criu pid $CRIU_PID\\): criu died while pid $p's GPU queues were paused: resumed them"
	if grep -q "amdgpu_plugin: pid $p: queues resumed" "$CRIU_LAST_LOG"; then
		# criu before 4.0 runs the plugins' exit hook before its post-dump script: the plugin
		# had resumed the queues and released its guard, which had nothing to do.
		tap_ok "$name: the plugin had resumed the queues itself before criu died ($(criu_version))"
		if dmesg | sed -n "\\|$mark\$|,\$p" | grep -q 'amdgpu_plugin: guard'; then
			tap_not_ok "$name: and the guard did nothing" "$(dmesg | grep 'amdgpu_plugin: guard' | tail -n 1)"
		else
			tap_ok "$name: and the guard did nothing"
		fi
	elif dmesg | sed -n "\\|$mark\$|,\$p" | grep -Eq "$said"; then
		tap_ok "$name: the kernel log says the guard resumed the queues"
		tap_log_has "$name: so does amdgpu-plugin-guard.log in the image directory" \
			"$img/amdgpu-plugin-guard.log" "$said"
	else
		tap_not_ok "$name: the kernel log says the guard resumed the queues"
		dmesg | sed -n "\\|$mark\$|,\$p" | tail -n 5 | sed 's/^/#   /'
	fi
	if wait_for guard_gone 5; then
		tap_ok "$name: the guard is gone"
	else
		tap_not_ok "$name: the guard is gone" "$(pgrep -ax amdgpu-guard)"
	fi
}

# --- criu killed at each moment --------------------------------------------------------------

if wl_fresh kfd preset=2xmi210 -- --vram-mb 32 --bo-mb 8; then
	for moment in after-process-info kfd-image pages-gpu0 pages-gpu1; do
		kill_criu_at kfd "$moment" "$pid" "/tmp/img-90-$moment"
	done
	kill_criu_at kfd post-dump "$pid" /tmp/img-90-post-dump --action-script "$killer"
	wl_kill "$pid"
fi

for w in hsakmt rocr; do
	if [ "$w" = rocr ] && [ ! -x "$E2E_BIN/rocr_workload" ]; then
		tap_skip "$w: criu killed during the dump" "no rocr_workload"
		continue
	fi
	wl_fresh "$w" preset=2xmi210 -- --vram-mb 16 || continue
	kill_criu_at "$w" after-process-info "$pid" "/tmp/img-90-$w-a"
	kill_criu_at "$w" pages-gpu0 "$pid" "/tmp/img-90-$w-b"
	wl_kill "$pid"
done

log "time from criu's death to the queues beating again (goal: under 2 s):"
for k in "${!beat_ms[@]}"; do
	log "  $k: ${beat_ms[$k]} ms"
done | sort

# --- the task killed during the dump: criu exits, the plugin does not crash it -----------------

# task_killed_at <moment>: the kfd workload's task SIGKILLed at the moment of its dump; criu must
# fail with status 1, not crash
task_killed_at() {
	local moment=$1 img=/tmp/img-90-task-killed mark rc bad
	wl_fresh kfd preset=2xmi210 -- --vram-mb 32 --bo-mb 8 || return
	rm -rf "$img"
	mkdir -p "$img"
	echo "$SDMA_MBPS" >/sys/module/amdgpu/parameters/sdma_mbps
	mark="e2e-90: task killed $moment"
	echo "$mark" >/dev/kmsg
	criu_start dump -t "$pid" -D "$img" --link-remap
	if ! wait_moment "$moment" "$pid" "$img"; then
		tap_not_ok "kfd: criu dump reaches $moment" "$(criu_log_names "$CRIU_LAST_LOG")"
		criu_kill_now "$killed_at"
		echo 0 >/sys/module/amdgpu/parameters/sdma_mbps
		wl_kill "$pid"
		return
	fi
	kill -KILL "$pid"
	wait "$CRIU_PID"
	rc=$?
	echo 0 >/sys/module/amdgpu/parameters/sdma_mbps
	tap_check "kfd: task killed at $moment: criu fails with status 1 (got $rc), not a crash" [ "$rc" = 1 ]
	# every line the plugin wrote is text: nothing printed from a freed session
	bad=$(grep -a 'amdgpu_plugin: ' "$CRIU_LAST_LOG" | LC_ALL=C grep -c '[^[:print:][:space:]]')
	tap_check "kfd: ... and the plugin's lines in criu's log are all text ($bad are not)" [ "$bad" = 0 ]
	if dmesg | sed -n "\\|$mark\$|,\$p" | grep -Eq 'criu\[[0-9]+\]: segfault|traps: criu\['; then
		tap_not_ok "kfd: ... and criu did not fault" "$(dmesg | grep -E 'traps: criu|criu\[[0-9]+\]: segfault' | tail -n1)"
	else
		tap_ok "kfd: ... and criu did not fault"
	fi
	if wait_for guard_gone 5; then
		tap_ok "kfd: ... no guard is left"
	else
		tap_not_ok "kfd: ... no guard is left" "$(pgrep -ax amdgpu-guard)"
	fi
	tap_no_kfd_process "kfd: ... no KFD process is left of it"
	rm -rf "$img"
}
task_killed_at pages-gpu0

# --- a dump that completes: the guard does nothing -------------------------------------------

if wl_fresh kfd preset=2xmi210 -- --vram-mb 4 --bo-mb 2; then
	img=/tmp/img-90-normal
	for how in "-R" ""; do
		label="dump${how:+ $how}"
		mark="e2e-90: $label"
		echo "$mark" >/dev/kmsg
		# shellcheck disable=SC2086 # the empty option is no word
		tap_dump "kfd: $label completes" "$pid" "$img" $how
		tap_log_has "kfd: $label: the plugin started its guard" "$CRIU_LAST_LOG" "amdgpu_plugin: dump guard started"
		if wait_for guard_gone 5; then
			tap_ok "kfd: $label: no guard is left once criu is done"
		else
			tap_not_ok "kfd: $label: no guard is left once criu is done" "$(pgrep -ax amdgpu-guard)"
		fi
		if dmesg | sed -n "\\|$mark\$|,\$p" | grep -q 'amdgpu_plugin: guard'; then
			tap_not_ok "kfd: $label: the guard did nothing" "$(dmesg | grep 'amdgpu_plugin: guard' | tail -n 3)"
		elif [ -e "$img/amdgpu-plugin-guard.log" ]; then
			tap_not_ok "kfd: $label: the guard did nothing" "$(cat "$img/amdgpu-plugin-guard.log")"
		else
			tap_ok "kfd: $label: the guard did nothing (no kernel log line, no guard log)"
		fi
	done
	tap_no_task "kfd: without -R criu killed the task, and nobody resumed it" "$pid" "$state"
	tap_no_kfd_process "kfd: no KFD process is left of it"

	mark="e2e-90: restore"
	echo "$mark" >/dev/kmsg
	if wl_restore "$img"; then
		tap_ok "kfd: the image restores"
		tap_alive_verified "kfd: restored" "$pid" "$state"
	else
		tap_not_ok "kfd: the image restores" "$(criu_log_names "$CRIU_LAST_LOG")"
	fi
	tap_log_has "kfd: the restore started its guard" "$CRIU_LAST_LOG" "amdgpu_plugin: restore guard started"
	if wait_for guard_gone 5 && ! compgen -G "$img/amdgpu-guard-*.sock" >/dev/null &&
		[ ! -e "$img/amdgpu-plugin-guard.log" ] && ! dmesg | sed -n "\\|$mark\$|,\$p" | grep -q 'amdgpu_plugin: guard'; then
		tap_ok "kfd: restore: no guard, guard socket or guard log is left"
	else
		tap_not_ok "kfd: restore: no guard, guard socket or guard log is left" \
			"$(pgrep -ax amdgpu-guard; ls "$img" | grep guard)"
	fi
	wl_kill "$pid"
fi

tap_no_kernel_warnings
e2e_done
