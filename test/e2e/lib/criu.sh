# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Running criu on a workload and reporting it in TAP. Sourced in the guest after test/vm/lib.sh
# (criu_dump, criu_restore, CRIU_LAST_LOG) by test/e2e/lib.sh.
#
#   wl_dump <pid> <dir> [criu args...]        criu dump --link-remap (any ROCm process needs it)
#   wl_restore <dir> [criu args...]           criu restore -d
#   tap_dump <name> <pid> <dir> [args...]     one TAP result: the dump succeeds (names the log)
#   tap_dump_gone <name> <pid> <state> <dir> [args...]   tap_dump, then the dumped task is let go
#                                             of (waits for it, SIGKILL if it stays)
#   tap_restore <name> <dir> [args...]        one TAP result: the restore succeeds (names the log);
#                                             then the watchdog: one more per restored workload, its
#                                             heartbeat on every GPU within seconds (restore_watchdog)
#   tap_restore_fails <name> <dir> [args...]  one TAP result: the restore fails
#   tap_dumped_or_end <name> <pid> <dir> [criu args...]   criu_dump as it is (no --link-remap) as
#                                             one TAP result: it succeeds and the task is gone; if
#                                             not, the task is killed and the scenario ends there
#   tap_restored_or_end <name> <pid> <dir> [criu args...] criu_restore as one TAP result: it
#                                             succeeds and the task <pid> runs; if not, the end
#   tap_image_files <name> <count> <files...>  one TAP result: that many of the files exist (give
#                                             a glob: "$img"/amdgpu-kfd-*.img)
#   flip_bit <file> <offset>                  inverts bit 2 of the byte at <offset> (a damaged image)
#   criu_log_names <path>                     the log's path as the results name it
#   criu_errors <log>                         its first error lines, on one line
#   criu_killer_script <action> <stamp file>  path of an action script that stamps the time (µs)
#                                             into the file and SIGKILLs criu at that action
#   criu_kill_now <stamp file>                SIGKILL the criu of criu_start (unless its script
#                                             did), reap it, clear the emulator's faults and engine
#                                             slowdown; CRIU_KILLED_US: when criu died
#   now_us                                    the time in µs (the clock of the stamps above)
#   criu_version                              the version the criu in PATH reports ("4.2.1")
#   criu_has_inventory_plugins                true for criu 4.1 and newer

wl_dump() {
	local pid=$1 dir=$2
	shift 2
	rm -rf "$dir"
	criu_dump "$pid" "$dir" --link-remap "$@"
}

wl_restore() {
	local dir=$1
	shift
	criu_restore "$dir" "$@"
}

flip_bit() {
	local file=$1 at=$2 byte
	byte=$(od -An -tu1 -j "$at" -N1 "$file" | tr -d ' ')
	[ -n "$byte" ] || return 1
	printf "$(printf '\\%03o' $((byte ^ 4)))" | dd of="$file" bs=1 seek="$at" conv=notrunc status=none
}

criu_log_names() { echo "see ${1#"$RESULTS_DIR"/}"; }

tap_dump() {
	local name=$1 p=$2 dir=$3
	shift 3
	if wl_dump "$p" "$dir" "$@"; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "$(criu_log_names "$CRIU_LAST_LOG")"
		return 1
	fi
}

tap_dump_gone() {
	local name=$1 p=$2 state=$3 rc=0
	shift 3
	tap_dump "$name" "$p" "$@" || rc=1
	wait_for "task_gone $p '$state'" 10 || wl_kill "$p"
	return "$rc"
}

tap_restore() {
	local name=$1
	shift
	if wl_restore "$@"; then
		tap_ok "$name"
		restore_watchdog "$name" "$CRIU_LAST_LOG"
	else
		tap_not_ok "$name" "$(criu_log_names "$CRIU_LAST_LOG")"
		return 1
	fi
}

# restore_watchdog <name> <restore log>: every workload criu restored (its "Forking task with <pid>"
# lines; a workload's state file names its pid) makes progress on every GPU it uses within seconds
# (its heartbeat), so that no scenario can pass with a restored task that hangs. A scenario that
# restores a task broken on purpose sets E2E_NO_WATCHDOG=1 around it.
restore_watchdog() {
	local name=$1 log=$2 p state
	[ "${E2E_NO_WATCHDOG:-0}" != 1 ] || return 0
	for p in $(sed -nE 's/.*Forking task with ([0-9]+) pid.*/\1/p' "$log" | sort -un); do
		state=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | sed -n '/^--state$/{n;p;q}')
		[ -n "$state" ] && [ -s "$state" ] && grep -qx "pid $p" "$state" || continue
		tap_heartbeat "$name: watchdog: pid $p runs on every GPU it uses" "$p" "$state" 30
	done
}

# tap_restore_fails: false when the restore succeeded (the caller may have a task to end).
tap_restore_fails() {
	local name=$1
	shift
	if wl_restore "$@"; then
		tap_not_ok "$name" "it succeeded"
		return 1
	fi
	tap_ok "$name"
}

tap_image_files() {
	local name=$1 want=$2 f n=0
	shift 2
	for f in "$@"; do
		[ ! -e "$f" ] || n=$((n + 1))
	done
	if [ "$n" -eq "$want" ]; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "$n of them"
	fi
}

criu_errors() { grep -m3 -E 'Error|amdgpu_plugin: .*(fail|cannot)' "$1" | tr '\n' ';'; }

tap_dumped_or_end() {
	local name=$1 p=$2 rc
	shift 2
	criu_dump "$p" "$@"
	rc=$?
	if [ "$rc" -eq 0 ] && wait_for "! kill -0 $p 2>/dev/null" 10; then
		tap_ok "$name"
		return 0
	fi
	tap_not_ok "$name" "criu status $rc: $(criu_errors "$CRIU_LAST_LOG")"
	wl_kill "$p"
	tap_done
}

tap_restored_or_end() {
	local name=$1 p=$2 rc
	shift 2
	criu_restore "$@"
	rc=$?
	if [ "$rc" -eq 0 ] && kill -0 "$p" 2>/dev/null; then
		tap_ok "$name"
		restore_watchdog "$name" "$CRIU_LAST_LOG"
		return 0
	fi
	tap_not_ok "$name" "criu status $rc: $(criu_errors "$CRIU_LAST_LOG")"
	tap_done
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
	# shellcheck disable=SC2034 # for the scenario
	[ ! -s "$1" ] || CRIU_KILLED_US=$(cat "$1")
	wait "$CRIU_PID" 2>/dev/null
	echo clear >"$EMU_DEBUGFS/fault"
	echo 0 >/sys/module/amdgpu/parameters/sdma_mbps
}
