# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Starting and asking the GPU workloads (test/e2e/README.md: their state files and signals). Sourced
# in the guest after test/vm/lib.sh, by test/e2e/lib.sh.
#
#   wl_start <w> <name> [opts...]     start test/e2e/bin/<w>_workload (kfd|hsakmt|rocr) with --state
#                                     $RESULTS_DIR/<name>.state, wait until it is READY; sets WL_PID
#                                     and WL_STATE; false (its output logged) if it never got ready.
#                                     $WL_CGROUP (a cgroup directory): start it in that cgroup;
#                                     $WL_ROOT and $WL_BIN (test/e2e/lib/userlands.sh): chrooted
#                                     into that root, the workload from that directory;
#                                     $WL_ENV: environment assignments for it ("A=1 B=2")
#   wl_ask <pid> <state> verify|heartbeat|rewrite|fault-memory|fault-illegal [seconds]
#                                     SIGUSR1/SIGUSR2/SIGHUP/SIGRTMIN+1/SIGRTMIN+2, wait for
#                                     the (fresh) result file, print its first line; false
#                                     without a result
#   wl_rewrite <pid> <state> [seconds]  SIGHUP: the workload rewrites --rewrite-pct % of its
#                                     content (kfd only); the result's first line in WL_REWRITE,
#                                     true if it is REWRITE OK
#   tap_verify <name> <pid> <state> [seconds]     one TAP result: VERIFY OK
#   tap_fault <name> <pid> <state> memory|illegal   one TAP result: the GPU faults on purpose and
#                                 the runtime tells the workload within 5 s (FAULT OK)
#   tap_heartbeat <name> <pid> <state> [seconds]  one TAP result: HEARTBEAT OK
#   tap_asked <name> <pid> <state> verify|heartbeat <pattern> [seconds]   one TAP result: the
#                                     result's first line matches the glob pattern
#   tap_alive_verified <name> <pid> <state> [verify seconds]  the task runs, VERIFY OK, HEARTBEAT OK
#   tap_beats_advance <name> <pid>    one TAP result: the emulator's heartbeat of its queues advances
#   wl_kill <pid>                     SIGKILL and wait until it is gone
#   task_gone <pid> <state>           no task with that pid, none running the workload of that state
#   tap_no_task <name> <pid> <state>  one TAP result from task_gone (waits a little)
#   state_gpu_ids <state>             the gpu_ids of the state file, one per line

E2E_BIN=${E2E_BIN:-$VM_REPO/test/e2e/bin}
EMU_DEBUGFS=/sys/kernel/debug/amdgpu_emu

wl_start() {
	local w=$1 name=$2
	local -a enter=()
	shift 2
	WL_STATE=$RESULTS_DIR/$name.state
	rm -f "$WL_STATE" "$WL_STATE".*
	# shellcheck disable=SC2016 # expanded by the inner shell, which then becomes the workload
	[ -z "${WL_CGROUP:-}" ] || enter=(bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$WL_CGROUP")
	# shellcheck disable=SC2206 # one word per assignment
	[ -z "${WL_ENV:-}" ] || enter+=(env $WL_ENV)
	[ -z "${WL_ROOT:-}" ] || enter+=(chroot "$WL_ROOT")
	spawn WL_PID "$name" "${enter[@]}" "${WL_BIN:-$E2E_BIN}/${w}_workload" --state "$WL_STATE" "$@"
	# large VRAM takes minutes to fill under TCG
	if wait_for "[ -s '$WL_STATE' ] || ! kill -0 $WL_PID 2>/dev/null" 300 && [ -s "$WL_STATE" ] &&
		wait_for "grep -q '^READY $WL_PID\$' '$RESULTS_DIR/$name.out'" 10; then
		return 0
	fi
	log "$name: $w workload $* did not get ready; its output:"
	sed 's/^/#   /' "$RESULTS_DIR/$name.out" | tail -n 20
	kill -KILL "$WL_PID" 2>/dev/null
	return 1
}

wl_ask() {
	local pid=$1 file=$2.$3 sig limit=${4:-}
	case $3 in
	verify) sig=USR1 ;;
	heartbeat) sig=USR2 ;;
	rewrite) sig=HUP ;;
	fault-memory) sig=RTMIN+1 file=$2.fault ;;
	fault-illegal) sig=RTMIN+2 file=$2.fault ;;
	*) echo "wl_ask: no such request '$3'"; return 1 ;;
	esac
	[ -n "$limit" ] || { [ "$3" = heartbeat ] && limit=60 || limit=120; }
	rm -f "$file"
	kill "-$sig" "$pid" 2>/dev/null || { echo "no process $pid"; return 1; }
	if ! wait_for "[ -s '$file' ] || ! kill -0 $pid 2>/dev/null" "$limit" || [ ! -s "$file" ]; then
		kill -0 "$pid" 2>/dev/null && echo "no $3 result within ${limit}s" || echo "process $pid died"
		return 1
	fi
	head -n1 "$file"
}

tap_asked() {
	local name=$1 pid=$2 state=$3 kind=$4 want=$5 line
	line=$(wl_ask "$pid" "$state" "$kind" "${6:-}")
	# shellcheck disable=SC2053 # want is a pattern
	if [[ $line == $want ]]; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "$line"
		[ ! -s "$state.$kind" ] || sed 's/^/#   /' "$state.$kind" | head -n 10
	fi
}

wl_rewrite() {
	WL_REWRITE=$(wl_ask "$1" "$2" rewrite "${3:-}")
	[[ $WL_REWRITE == "REWRITE OK "* ]]
}

tap_verify() { tap_asked "$1" "$2" "$3" verify "VERIFY OK" "${4:-}"; }
# tap_fault <name> <pid> <state> <kind>: the workload makes its GPU fault as <kind> says (memory,
# illegal) and the runtime must tell it within 5 s (FAULT OK, with the time it took)
tap_fault() {
	local line
	line=$(wl_ask "$2" "$3" "fault-$4" 60)
	if [[ $line == "FAULT OK"* ]]; then
		tap_ok "$1 (${line#FAULT OK: })"
	else
		tap_not_ok "$1" "$line"
	fi
}
tap_heartbeat() { tap_asked "$1" "$2" "$3" heartbeat "HEARTBEAT OK" "${4:-}"; }

tap_alive_verified() {
	local name=$1 pid=$2 state=$3 verify_seconds=${4:-}
	if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--state $state"; then
		tap_ok "$name: the task runs (pid $pid)"
	else
		tap_not_ok "$name: the task runs (pid $pid)" "no process $pid running the workload of $state"
		tap_not_ok "$name: VERIFY OK" "not running"
		tap_not_ok "$name: HEARTBEAT OK" "not running"
		return 1
	fi
	tap_verify "$name: VERIFY OK (every byte, mappings, handles, events, queues)" "$pid" "$state" "$verify_seconds"
	tap_heartbeat "$name: HEARTBEAT OK (queues run)" "$pid" "$state"
}

emu_queue_beats() {
	awk -v pid="$1" '$1 == "process" { cur = ($3 == pid) } cur && $1 == "queue" { printf "%s ", $10 }' \
		"$EMU_DEBUGFS/processes"
}

tap_beats_advance() {
	local name=$1 pid=$2 before after
	before=$(emu_queue_beats "$pid")
	sleep 1
	after=$(emu_queue_beats "$pid")
	if [ -n "$before" ] && [ "$before" != "$after" ]; then
		log "$name: $before-> $after"
		tap_ok "$name"
	else
		tap_not_ok "$name" "before: '$before', after: '$after'"
	fi
}

wl_kill() {
	kill -KILL "$1" 2>/dev/null
	wait_for "! kill -0 $1 2>/dev/null" 30
}

task_gone() {
	local pid=$1 state=$2
	! kill -0 "$pid" 2>/dev/null && ! pgrep -f -- "--state $state" >/dev/null
}

tap_no_task() {
	local name=$1 pid=$2 state=$3
	# criu kills what it restored before it returns; allow the kernel a moment to reap.
	if wait_for "task_gone $pid '$state'" 5; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "left running: $(ps -o pid=,stat=,args= -p "$pid" 2>/dev/null; pgrep -af -- "--state $state")"
		kill -KILL "$pid" $(pgrep -f -- "--state $state") 2>/dev/null
	fi
}

state_gpu_ids() {
	awk '$1 == "gpu" { print $6 }' "$1"
}
