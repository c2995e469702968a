# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Helpers for the checkpoint/restore scenarios in test/e2e/scenarios/, sourced inside the guest
# from the repo root after test/vm/lib.sh: `. test/e2e/lib.sh`. The workloads' contract is
# test/e2e/README.md.
#
#   e2e_require                      skip (77) unless emulator, plugin, workloads and criu exist
#   wl_start <w> <name> [opts...]    start <w>_workload (kfd|hsakmt) with --state
#                                    $RESULTS_DIR/<name>.state; waits for its state file; sets
#                                    WL_PID and WL_STATE; false (logged) if it never got ready
#   wl_ask <pid> <state> verify|heartbeat    SIGUSR1/SIGUSR2 and wait for the result file
#   tap_verify <name> <pid> <state>          one TAP result: VERIFY OK
#   tap_heartbeat <name> <pid> <state>       one TAP result: HEARTBEAT OK
#   tap_alive_verified <name> <pid> <state>  the three above: alive, VERIFY OK, HEARTBEAT OK
#   wl_dump <pid> <dir> [criu args...]       criu dump --link-remap (any ROCm process needs it)
#   wl_restore <dir> [criu args...]          criu restore -d
#   wl_kill <pid>                            SIGKILL and wait until it is gone
#   task_gone <pid> <state>                  no task with that pid, none running the workload of
#                                            that state file
#   tap_no_task <name> <pid> <state>         one TAP result from task_gone (waits a little)
#   tap_same_bos <name> <pid> <state>        the emulator's view of the process has every BO of
#                                            the state file at its VA (kfd: same handle and size)
#   tap_no_kfd_process <name>                one TAP result: the emulator has no KFD process
#   emu_queue_beats <pid>                    the heartbeat counts of the process's queues, one line
#   emu_queues_paused <pid>                  true while KFD holds the process's queues paused
#   tap_log_has <name> <log> <ERE>           one TAP result: the log has a line matching ERE
#   state_gpu_ids <state>                    the gpu_ids of the state file, one per line
#   scenario_warnings_begin / tap_no_kernel_warnings   WARNING/BUG/Oops in dmesg since begin
#   e2e_done                         unload the emulator, check the kernel log, end the TAP plan
#   task_snapshot, tap_same_task     the restored task is the dumped one (task-snapshot.sh)
#   criu_killer_script <action> <stamp file>   path of an action script that stamps the time
#                                    (µs) into the file and SIGKILLs criu at that action
#   criu_kill_now <stamp file>       SIGKILL the criu of criu_start (unless its script did),
#                                    reap it, clear the emulator's faults and engine slowdown;
#                                    CRIU_KILLED_US: when criu died
#   now_us                           the time in µs (the clock of the stamps above)
#   guard_gone                       no amdgpu-guard process is left
#   criu_version                     the version the criu in PATH reports ("4.2.1")
#   criu_has_inventory_plugins       true for criu 4.1 and newer (plugins listed in the inventory)

E2E_BIN=${E2E_BIN:-$VM_REPO/test/e2e/bin}
EMU_DEBUGFS=/sys/kernel/debug/amdgpu_emu
# shellcheck source=test/e2e/task-snapshot.sh
. "$VM_REPO/test/e2e/task-snapshot.sh"

e2e_require() {
	[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
	[ -n "$CRIU_LIBDIR" ] || { echo "plugin not built (plugins/amdgpu/amdgpu_plugin.so)"; exit 77; }
	command -v criu >/dev/null || { echo "no criu in the guest"; exit 77; }
	# Built on the host normally; this only catches up when the sources are newer.
	make -s -C "$VM_REPO/test/e2e" >"$RESULTS_DIR/e2e-build.log" 2>&1 ||
		{ cat "$RESULTS_DIR/e2e-build.log"; echo "the workloads do not build"; exit 1; }
}

wl_start() {
	local w=$1 name=$2
	shift 2
	WL_STATE=$RESULTS_DIR/$name.state
	rm -f "$WL_STATE" "$WL_STATE".*
	spawn WL_PID "$name" "$E2E_BIN/${w}_workload" --state "$WL_STATE" "$@"
	if wait_for "[ -s '$WL_STATE' ] || ! kill -0 $WL_PID 2>/dev/null" 180 && [ -s "$WL_STATE" ]; then
		return 0
	fi
	log "$name: $w workload did not get ready; its output:"
	sed 's/^/#   /' "$RESULTS_DIR/$name.out" | tail -n 20
	kill -KILL "$WL_PID" 2>/dev/null
	return 1
}

# wl_ask <pid> <state> verify|heartbeat: prints the result's first line; false without a result.
wl_ask() {
	local pid=$1 file=$2.$3 sig=USR1 limit=120
	[ "$3" = verify ] || { sig=USR2; limit=60; }
	rm -f "$file"
	kill "-$sig" "$pid" 2>/dev/null || { echo "no process $pid"; return 1; }
	if ! wait_for "[ -s '$file' ] || ! kill -0 $pid 2>/dev/null" "$limit" || [ ! -s "$file" ]; then
		kill -0 "$pid" 2>/dev/null && echo "no $3 result within ${limit}s" || echo "process $pid died"
		return 1
	fi
	head -n1 "$file"
}

# tap_result <name> <pid> <state> <kind> <expected first line>
tap_result() {
	local name=$1 pid=$2 state=$3 kind=$4 want=$5 line
	line=$(wl_ask "$pid" "$state" "$kind")
	if [ "$line" = "$want" ]; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "$line"
		[ ! -s "$state.$kind" ] || sed 's/^/#   /' "$state.$kind" | head -n 10
	fi
}

tap_verify() { tap_result "$1" "$2" "$3" verify "VERIFY OK"; }
tap_heartbeat() { tap_result "$1" "$2" "$3" heartbeat "HEARTBEAT OK"; }

tap_alive_verified() {
	local name=$1 pid=$2 state=$3
	if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--state $state"; then
		tap_ok "$name: the task runs (pid $pid)"
	else
		tap_not_ok "$name: the task runs (pid $pid)" "no process $pid running the workload of $state"
		tap_not_ok "$name: VERIFY OK" "not running"
		tap_not_ok "$name: HEARTBEAT OK" "not running"
		return 1
	fi
	tap_verify "$name: VERIFY OK (every byte, mappings, handles, events, queues)" "$pid" "$state"
	tap_heartbeat "$name: HEARTBEAT OK (queues run)" "$pid" "$state"
}

wl_dump() {
	local pid=$1 dir=$2
	shift 2
	rm -rf "$dir"
	criu_dump "$pid" "$dir" --link-remap "$@"
}

# wl_fresh <workload> <emulator params...> -- [workload args...]: (re)loads the emulator with
# the params, starts the workload there and sets pid and state. A failing step is reported in TAP
# and the function returns false.
wl_fresh() {
	local w=$1 params=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		params+=("$1")
		shift
	done
	[ $# -eq 0 ] || shift
	emu_reload "${params[@]}" || { tap_not_ok "$w: load the emulator (${params[*]})"; return 1; }
	wl_start "$w" "$w" "$@" || { tap_not_ok "$w: the workload gets ready"; return 1; }
	pid=$WL_PID state=$WL_STATE
}

# tap_dump <name> <pid> <image dir> [criu args...]: criu dump (wl_dump) as one TAP result.
tap_dump() {
	local name=$1 p=$2 dir=$3
	shift 3
	if wl_dump "$p" "$dir" "$@"; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "see ${CRIU_LAST_LOG#"$RESULTS_DIR"/}"
	fi
}

wl_restore() {
	local dir=$1
	shift
	criu_restore "$dir" "$@"
}

wl_kill() {
	kill -KILL "$1" 2>/dev/null
	wait_for "! kill -0 $1 2>/dev/null" 10
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

# The "bo" lines of one process in the emulator's debugfs view: "handle va size".
emu_process_bos() {
	awk -v pid="$1" '
		$1 == "process" { cur = ($3 == pid) }
		cur && $1 == "bo" { print $3, $5, $7 }
	' "$EMU_DEBUGFS/processes"
}

tap_same_bos() {
	local name=$1 pid=$2 state=$3 missing
	missing=$(awk '
		NR == FNR { va_only[$2] = 1; all[$1 " " $2 " " $3] = 1; next }
		$1 == "bo" {
			# hsakmt_workload lists no handle and the size it asked the thunk for: VA only
			va = $8; size = $10; handle = $14
			if (handle == "-" ? !va_only[va] : !all[handle " " va " " size])
				printf "bo %s (%s) handle %s va %s size %s; ", $2, $6, handle, va, size
		}
	' <(emu_process_bos "$pid") "$state")
	if [ -z "$missing" ] && [ -n "$(emu_process_bos "$pid")" ]; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "not in the emulator's view of pid $pid: ${missing:-no BOs at all}"
	fi
}

tap_no_kfd_process() {
	if wait_for '! grep -q "^process" "$EMU_DEBUGFS/processes"' 5; then
		tap_ok "$1"
	else
		tap_not_ok "$1"
		sed 's/^/#   /' "$EMU_DEBUGFS/processes" | head -n 10
	fi
}

emu_queue_beats() {
	awk -v pid="$1" '$1 == "process" { cur = ($3 == pid) } cur && $1 == "queue" { printf "%s ", $10 }' \
		"$EMU_DEBUGFS/processes"
}

emu_queues_paused() {
	grep -q "^process pid $1 .* paused 1 " "$EMU_DEBUGFS/processes"
}

criu_version() {
	criu --version 2>/dev/null | sed -n 's/^Version: *//p'
}

criu_has_inventory_plugins() {
	local v major minor
	v=$(criu_version)
	major=${v%%.*} minor=${v#*.}
	minor=${minor%%.*}
	[ "${major:-0}" -gt 4 ] || { [ "${major:-0}" -eq 4 ] && [ "${minor:-0}" -ge 1 ]; }
}

tap_log_has() {
	local name=$1 file=$2 re=$3
	if grep -Eq -- "$re" "$file" 2>/dev/null; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "no line matching /$re/ in ${file#"$RESULTS_DIR"/}"
		grep -E 'Error|amdgpu_plugin' "$file" 2>/dev/null | grep -v 'param:' | tail -n 8 | sed 's/^/#   /'
	fi
}

state_gpu_ids() {
	awk '$1 == "gpu" { print $6 }' "$1"
}

scenario_warnings_begin() {
	E2E_MARK="e2e: begin $(basename "$0") $$"
	echo "$E2E_MARK" >/dev/kmsg
}

tap_no_kernel_warnings() {
	local warnings
	warnings=$(dmesg | sed -n "\\|$E2E_MARK|,\$p" | grep -E 'WARNING:|BUG:|Oops|general protection' || true)
	if [ -z "$warnings" ]; then
		tap_ok "the kernel log has no warnings"
	else
		tap_not_ok "the kernel log has no warnings"
		echo "$warnings" | head -n 20 | sed 's/^/#   /'
	fi
}

e2e_done() {
	# what a scenario restored must let go of its GPU files: a failed unload is the suite's to report
	emu_unload >/dev/null 2>&1 || log "the emulator does not unload (files still open?)"
	tap_no_kernel_warnings
	tap_done
}

# --- criu killed on purpose (e2e/90, e2e/91) ---------------------------------------------------

now_us() { echo "${EPOCHREALTIME/./}"; }

criu_killer_script() {
	local action=$1 stamp=$2 script=/tmp/e2e-kill-criu-$1.sh
	cat >"$script" <<SH
#!/bin/sh
# criu runs its action scripts as its own children
[ "\$CRTOOLS_SCRIPT_ACTION" = $action ] || exit 0
date +%s%6N >$stamp
kill -KILL "\$PPID"
SH
	chmod +x "$script"
	echo "$script"
}

criu_kill_now() {
	kill -KILL "$CRIU_PID" 2>/dev/null
	CRIU_KILLED_US=$(now_us)
	[ ! -s "$1" ] || CRIU_KILLED_US=$(cat "$1")
	wait "$CRIU_PID" 2>/dev/null
	echo clear >"$EMU_DEBUGFS/fault"
	echo 0 >/sys/module/amdgpu_emu/parameters/sdma_mbps
}

guard_gone() { ! pgrep -x amdgpu-guard >/dev/null; }
