# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# Helpers for the checkpoint/restore scenarios in test/e2e/scenarios/, sourced inside the guest
# from the repo root after test/vm/lib.sh: `. test/e2e/lib.sh`. The workloads' contract is
# test/e2e/README.md.
#
# Each concern is a library of its own, all sourced here:
#   test/e2e/lib/workloads.sh   starting the workloads and asking them (wl_start, wl_ask,
#                               tap_verify, tap_alive_verified, wl_kill, tap_no_task, ...)
#   test/e2e/lib/criu.sh        criu on a workload, reported in TAP (tap_dump, tap_restore, ...)
#   test/e2e/lib/stream.sh      the same through criu's image streamer (stream_dump, ...)
#   test/e2e/lib/userlands.sh   workloads of newer ROCm userlands, chrooted (userland_enter, ...)
#   test/e2e/lib/kernels.sh     GPU kernels in flight at a dump (dump_in_flight, tap_preempted, ...)
#   test/e2e/task-snapshot.sh   the restored task is the dumped one (task_snapshot, tap_same_task)
#   TAP itself (tap_ok, tap_not_ok, tap_check, tap_done) is test/vm/lib.sh's.
# This file: the scenario's frame and the emulator's view of a process.
#
#   e2e_require                      skip (77) unless emulator, plugin, workloads and criu exist
#   e2e_begin                        e2e_require, then scenario_warnings_begin
#   wl_fresh <w> <emu params...> -- [workload args...]   (re)load the emulator, start the
#                                    workload; sets pid and state
#   for_each_workload <function>     <function> <w> for kfd and hsakmt, each started on a freshly
#                                    loaded 2xmi210 (2 MiB of VRAM per GPU, 1 MiB BOs); sets pid,
#                                    state and img (/tmp/img-<scenario number>-<w>)
#   emu_reload_or_say <what> <emu params...>   emu_reload; false, with "not ok <what>", if it fails
#   tap_same_bos <name> <pid> <state>        the emulator's view of the process has every BO of
#                                            the state file at its VA (kfd: same handle and size)
#   tap_no_kfd_process <name> [seconds]      one TAP result: the emulator has no KFD process
#   emu_queues_paused <pid>                  true while KFD holds the process's queues paused
#   tap_log_has <name> <log> <ERE>           one TAP result: the log has a line matching ERE
#   scenario_warnings_begin / tap_no_kernel_warnings   WARNING/BUG/Oops in dmesg since begin
#   e2e_done                         unload the emulator, check the kernel log, end the TAP plan
#   guard_gone                       no amdgpu-guard process is left
#   guest_overlays <base dir>        the guest's own writable /usr, /var and /etc (overlays on
#                                    tmpfs under <base dir>) for this mount namespace; the
#                                    checkout stays the host's

# shellcheck source=test/e2e/lib/workloads.sh
. "$VM_REPO/test/e2e/lib/workloads.sh"
# shellcheck source=test/e2e/lib/criu.sh
. "$VM_REPO/test/e2e/lib/criu.sh"
# shellcheck source=test/e2e/lib/stream.sh
. "$VM_REPO/test/e2e/lib/stream.sh"
# shellcheck source=test/e2e/lib/userlands.sh
. "$VM_REPO/test/e2e/lib/userlands.sh"
# shellcheck source=test/e2e/lib/kernels.sh
. "$VM_REPO/test/e2e/lib/kernels.sh"
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

e2e_begin() {
	e2e_require
	scenario_warnings_begin
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

for_each_workload() {
	local w scenario=${0##*/}
	for w in kfd hsakmt; do
		wl_fresh "$w" preset=2xmi210 -- --vram-mb 2 --bo-mb 1 || continue
		img=/tmp/img-${scenario%%-*}-$w
		"$1" "$w"
	done
}

emu_reload_or_say() {
	local what=$1
	shift
	emu_reload "$@" || { tap_not_ok "$what"; return 1; }
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
	if wait_for '! grep -q "^process" "$EMU_DEBUGFS/processes"' "${2:-5}"; then
		tap_ok "$1"
	else
		tap_not_ok "$1"
		sed 's/^/#   /' "$EMU_DEBUGFS/processes" | head -n 10
	fi
}

emu_queues_paused() {
	grep -q "^process pid $1 .* paused 1 " "$EMU_DEBUGFS/processes"
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

guard_gone() { ! pgrep -x amdgpu-guard >/dev/null; }

# guest_overlays <base dir>: overlays over /usr, /var and /etc (the host's root, seen over 9p, is
# not touched; they go with the caller's mount namespace). A checkout under one of them (a clone in
# /var/tmp, say) would otherwise be seen through the overlay: another device, without the run
# directory mounted inside it, and criu refuses a task whose files resolve to other inodes than
# the ones it opened. So the checkout, with the mounts inside it, is kept aside and put back on top.
guest_overlays() {
	local base=$1 dir aside=$1/checkout
	case "$VM_REPO/" in
	/usr/* | /var/* | /etc/*) mkdir -p "$aside" && mount --rbind "$VM_REPO" "$aside" || return 1 ;;
	esac
	modprobe overlay || return 1
	for dir in /usr /var /etc; do
		mkdir -p "$base$dir/upper" "$base$dir/work" &&
			mount -t overlay overlay -o "lowerdir=$dir,upperdir=$base$dir/upper,workdir=$base$dir/work" "$dir" ||
			return 1
	done
	! mountpoint -q "$aside" || mount --rbind "$aside" "$VM_REPO"
}
