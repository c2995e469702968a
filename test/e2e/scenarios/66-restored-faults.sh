#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A restored job never hangs: a GPU fault after a restore reaches the application as it did
# before the checkpoint. rocr_workload (ROCm's runtime) makes its first GPU fault on request
# (SIGRTMIN+1, +2: test/e2e/README.md): a dispatch whose kernel descriptor the GPU VM does not map (a
# memory violation) or whose first instruction the emulated GPU does not execute (an illegal
# instruction), each on an AQL queue of its own, and the runtime must call the queue's error
# callback with HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION or HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
# within 5 s.
#
# How the error reaches the runtime depends on the kernel. On 6.1 (KFD 1.11, the bookworm guest
# with ROCm 5.2.3) the runtime's trap handler signals the queue's inactive signal. From 6.5 (KFD
# 1.13, the trixie guest with ROCm 6.4.3) ROCm's runtime registers itself with KFD
# (RUNTIME_ENABLE), and KFD then reports queue exceptions to it through the queue's context save
# area, and no other way. KFD's CRIU does not carry that registration: unless the plugin saves it
# at the dump (it reads it through a debug session opened on the task and closed at once) and
# makes it again in the restored task before KFD's RESTORE, a restored ROCm 6.x process never
# hears of a GPU error again and waits forever.
#
# On 2xmi210: both faults before any checkpoint, then a dump -R, which is refused, naming it, when
# the process has a GPU debug session open (ROCm 6.2 to 6.4's runtime opens one on its own process
# to write a GPU core dump when a queue fails, and leaves it open when it cannot write the dump:
# KFD does not checkpoint debug sessions), the task running on. Another job: dumped (the plugin
# saying how the runtime was registered), restored after a reload with other gpu_ids and render
# minors (registered again), the task the one dumped, verified; dumped again from there, restored
# on the same node; both faults reported. At its dump the job's streams wait for their signals in
# KFD (WAIT_EVENTS); the verification after the restore needs those waits to end. In the trixie guest also a HIP job whose GPUs
# run kernels all the time (hip_kernel_workload): HIP aborts it, naming the HSA status, when a
# kernel of it faults, before any checkpoint and in a job restored on other gpu_ids
# (the same images restored twice: once for each kind of fault).
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
userland_private_mounts "$@"
e2e_begin
if [ "${VM_GUEST:-bookworm}" = bookworm ]; then
	[ -x "$E2E_BIN/rocr_workload" ] || { echo "no rocr_workload (libhsa-runtime-dev missing at build time?)"; exit 77; }
else
	userland_require
fi
img=/tmp/img-66

# tap_registration <name> <log> <ERE>: the plugin's line about the runtime's registration, as the
# dump or the restore logged it; the bookworm guest's 6.1 (KFD 1.11) has no RUNTIME_ENABLE
tap_registration() {
	if [ "${VM_GUEST:-bookworm}" = bookworm ]; then
		tap_ok "$1 # SKIP Linux 6.1 (KFD 1.11) has no RUNTIME_ENABLE"
	else
		tap_log_has "$@"
	fi
}

# debug_session_open <pid> <mark>: since the mark, the emulator logged a debug session opened on
# the task and none closed (ROCm 6.2 to 6.4's runtime leaves the one it opens on its own process
# for a GPU core dump open when it cannot write the dump)
debug_session_open() {
	local opened closed
	opened=$(dmesg | sed -n "\\|$2\$|,\$p" | grep -c "opened a debug session on pid $1 ")
	closed=$(dmesg | sed -n "\\|$2\$|,\$p" | grep -c "closed the debug session on pid $1\$")
	[ "$opened" -gt "$closed" ]
}

one_job() {
	local tag=$1 mark waiting
	wl_fresh rocr preset=2xmi210 -- --vram-mb 2 || return
	mark="e2e 66: $tag faults $(date +%s%N)"
	dmesg_mark "$mark"
	tap_fault "$tag: before any checkpoint, a memory fault reaches the runtime" "$pid" "$state" memory
	tap_fault "$tag: before any checkpoint, an illegal instruction reaches the runtime" "$pid" "$state" illegal
	# a process with a debug session open cannot be checkpointed: the dump says so, the task runs on
	if debug_session_open "$pid" "$mark"; then
		if wl_dump "$pid" "$img" -R; then
			tap_not_ok "$tag: a dump of a process with a GPU debug session open is refused" "it succeeded"
		else
			tap_log_has "$tag: a dump of a process with a GPU debug session open (its runtime's, for a GPU core dump) is refused, naming it" \
				"$CRIU_LAST_LOG" "pid [0-9]+ has a GPU debug session open"
		fi
		tap_alive_verified "$tag: after the refused dump" "$pid" "$state"
	else
		tap_dump "$tag: no GPU debug session is open: the dump -R succeeds" "$pid" "$img" -R
		tap_alive_verified "$tag: after the dump -R" "$pid" "$state"
	fi
	rm -rf "$img"
	wl_kill "$pid"

	# a job that faults only once restored, twice; at the dump its streams wait for their
	# signals in KFD (WAIT_EVENTS), and restored, those waits must end (its rounds go on)
	wl_fresh rocr preset=2xmi210 -- --vram-mb 2 || return
	task_snapshot "$pid" "$RESULTS_DIR/rocr-66.dumped"
	waiting=$(cat /proc/"$pid"/task/*/wchan 2>/dev/null | grep -c wait_events)
	tap_check "$tag: threads of the job wait for KFD events as the dump begins ($waiting)" [ "$waiting" -ge 1 ]
	tap_dump_gone "$tag: criu dump" "$pid" "$state" "$img" || { wl_kill "$pid"; return; }
	tap_registration "$tag: the dump read how the runtime was registered with KFD" "$CRIU_LAST_LOG" \
		"ROCm's runtime is registered with KFD \(r_debug 0x[0-9a-f]+"
	emu_reload_or_say "$tag: reload with other gpu_ids and render minors" preset=2xmi210 \
		gpu_ids=0x0e11,0x0e12 render_minor_base=150 || return
	tap_restore "$tag: criu restore on other gpu_ids" "$img" || { rm -rf "$img"; return; }
	rm -rf "$img"
	tap_registration "$tag: the restore registered the runtime with KFD again" "$CRIU_LAST_LOG" \
		"ROCm's runtime registered with KFD again \(r_debug 0x[0-9a-f]+"
	tap_same_task "$tag: restored on other gpu_ids" "$RESULTS_DIR/rocr-66.dumped" "$pid"
	tap_alive_verified "$tag: restored on other gpu_ids" "$pid" "$state"
	tap_dump_gone "$tag: criu dump of the restored task" "$pid" "$state" "$img" || { wl_kill "$pid"; return; }
	tap_restore "$tag: criu restore on the same node" "$img" || { rm -rf "$img"; return; }
	rm -rf "$img"
	tap_fault "$tag: restored twice, a memory fault reaches the runtime" "$pid" "$state" memory
	tap_fault "$tag: restored twice, an illegal instruction reaches the runtime" "$pid" "$state" illegal
	wl_kill "$pid"
}

# hip_job <tag>: the HIP job of the userland entered (kernels always running)
hip_job() {
	local tag=$1 kind out_size
	local args=(--vram-mb 1 --kernel-kib 16 --kernel-iters 16)
	wl_fresh hip_kernel preset=2xmi210 -- "${args[@]}" || return
	tap_hip_aborts "$tag: before any checkpoint, a memory fault ends the job" memory
	wl_fresh hip_kernel preset=2xmi210 -- "${args[@]}" || return
	task_snapshot "$pid" "$RESULTS_DIR/hip-66.dumped"
	tap_dump_gone "$tag: criu dump" "$pid" "$state" "$img" || { wl_kill "$pid"; return; }
	out_size=$(stat -c %s "$RESULTS_DIR/hip_kernel.out")
	emu_reload_or_say "$tag: reload with other gpu_ids and render minors" preset=2xmi210 \
		gpu_ids=0x0e21,0x0e22 render_minor_base=170 || return
	# the same images twice: one restored job per kind of fault (criu wants the job's output
	# file as long as it was at the dump: what the first restored job wrote goes to a copy)
	for kind in memory illegal; do
		[ "$kind" = memory ] || { cat "$RESULTS_DIR/hip_kernel.out" >>"$RESULTS_DIR/hip_kernel.out.restored" &&
			truncate -s "$out_size" "$RESULTS_DIR/hip_kernel.out"; }
		tap_restore "$tag: criu restore on other gpu_ids" "$img" || break
		tap_same_task "$tag: restored on other gpu_ids" "$RESULTS_DIR/hip-66.dumped" "$pid"
		tap_hip_aborts "$tag: restored, a $kind fault ends the job" "$kind"
	done
	rm -rf "$img"
}

if [ "${VM_GUEST:-bookworm}" = bookworm ]; then
	one_job "ROCm 5.2.3 rocr"
	# HIP kernels of ROCm 5.2.3 need bookworm's hipcc (make check-full installs it)
	if [ -x "$E2E_BIN/hip_kernel_workload" ]; then
		hip_job "ROCm 5.2.3 HIP"
	else
		log "no hip_kernel_workload built (bookworm's hipcc: make check-full): the HIP job is left out"
	fi
else
	# the guest's own ROCm 6.1, then the userland roots (criu before 4.2 cannot dump theirs)
	[ ! -x "$E2E_BIN/rocr_workload" ] || one_job "ROCm 6.1 rocr"
	for version in $(userland_versions); do
		userland_criu_dumps "$version" || { log "criu $(criu_version) cannot dump ROCm $version's processes (61 shows it)"; continue; }
		userland_enter "$version" || { tap_not_ok "ROCm $version: its root's binds"; continue; }
		one_job "ROCm $version rocr"
		[[ " $(userland_workloads "$version" --kernels) " != *" hip_kernel "* ]] || hip_job "ROCm $version HIP"
		userland_leave
	done
fi
e2e_done
