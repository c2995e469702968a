#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# GPU kernels in flight at the checkpoint. hip_kernel_workload (HIP 6.4.3, its kernels built with
# Debian's hipcc) runs kernels on every GPU all the time: a long integer loop, an LDS reduction
# with a global atomic, hipMemset and device->device copies (HIP's own blit kernels). The emulated
# GPU executes them (test/emu/emu_dispatch.c, emu_shader.c); when criu pauses the queues, the waves
# of each dispatch in flight stop and go into the queue's context save area and control stack
# (emu_cwsr.c), as CWSR does, and the emulator logs each preemption.
#
# In the trixie guest, with ROCm 6.4.3 from its root; in the bookworm guest (make check-full, under
# criu 3.17.1 and 4.2.1), with the guest's own ROCm 5.2.3, the workload built with bookworm's hipcc.
# On 2xmi210, under the criu the suite runs (a root whose glibc puts guard regions in thread
# stacks needs criu 4.2 or newer: below that the dump fails and the task runs on, verified):
#   - dumped with -R with a kernel in flight on both GPUs (the log shows the waves saved on each):
#     the task runs on, its waves resumed, its queues run (a heartbeat);
#   - dumped with a kernel in flight on both GPUs, restored on a node of the same shape with
#     other gpu_ids and render minors: the waves come back from the save area (logged), the
#     kernels in flight at either dump finished with the right results, new kernels of every kind
#     run (verify), heartbeats complete;
#   - make check-full: dumped again from there and restored on the same node (the ids of the
#     first restore);
#   - a kernel that reaches an instruction the emulated GPU does not execute is reported to the
#     application as an illegal instruction (the workload's --illegal-instruction mode).
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
userland_private_mounts "$@"
e2e_begin
if [ "${VM_GUEST:-bookworm}" = bookworm ]; then
	# the guest's own ROCm 5.2.3: the workload is built on the host where hipcc is (make check-full
	# installs bookworm's)
	[ -x "$E2E_BIN/hip_kernel_workload" ] || { echo "no hip_kernel_workload built (bookworm's hipcc: make check-full)"; exit 77; }
else
	userland_require
fi

# the long kernel's length: test/e2e/lib/kernels.sh
KERNELS_TAG="e2e 65"
read -ra KERNEL_ARGS <<<"$(kernel_args)"
img=/tmp/img-65

one_userland() {
	local tag="ROCm $version kernels" mark
	wl_fresh hip_kernel preset=2xmi210 -- "${KERNEL_ARGS[@]}" || return
	log_instruction_rate "$tag"
	if [ -n "${WL_ROOT:-}" ] && ! userland_criu_dumps "$version"; then
		tap_dump_fails_runs_on "$tag"
		return
	fi

	# -R first: the task runs on, its preempted kernels resumed (their results are checked with
	# every other round's by the verification after the restore below)
	dump_in_flight "$tag" "dumped with -R, kernels in flight" -R || { wl_kill "$pid"; return; }
	tap_resumed "$tag: running on after the -R dump" "$LAST_MARK"
	tap_heartbeat "$tag: running on after the -R dump" "$pid" "$state"

	dump_in_flight "$tag" "dumped with kernels in flight" || { wl_kill "$pid"; return; }
	emu_reload_or_say "$tag: reload as 2xmi210 with other gpu_ids" preset=2xmi210 \
		gpu_ids=0x0e11,0x0e12 render_minor_base=150 || return
	mark="e2e 65: $tag restore $(date +%s%N)"
	dmesg_mark "$mark"
	tap_restore "$tag: restored on other gpu_ids" "$img" || return
	tap_same_task "$tag: restored on other gpu_ids" "$RESULTS_DIR/hip_kernel.dumped" "$pid" --events-made-since
	tap_alive_verified "$tag: restored on other gpu_ids (every kernel in flight at either dump finished right, new ones run)" "$pid" "$state"
	tap_resumed "$tag: restored on other gpu_ids" "$mark"

	# make check-full: once more, restored on the node it was dumped on (make check's time goes to
	# the other gpu_ids, the harder case)
	if [ "${CHECK_FULL:-0}" = 1 ]; then
		dump_in_flight "$tag" "dumped again, kernels in flight" || { wl_kill "$pid"; return; }
		mark="e2e 65: $tag restore same node $(date +%s%N)"
		dmesg_mark "$mark"
		tap_restore "$tag: restored on the same node" "$img" || return
		tap_alive_verified "$tag: restored on the same node" "$pid" "$state"
		tap_resumed "$tag: restored on the same node" "$mark"
	fi
	rm -rf "$img"
	wl_kill "$pid"
}

# What a failed dump owes the task: it runs on, its kernels finish right.
tap_dump_fails_runs_on() {
	local tag=$1 mark
	wait_long_kernels_early "$tag"
	mark="e2e 65: $tag refused dump $(date +%s%N)"
	dmesg_mark "$mark"
	if wl_dump "$pid" "$img"; then
		tap_not_ok "$tag: criu $(criu_version) cannot dump thread stacks with guard regions" "the dump succeeded"
	else
		tap_ok "$tag: criu $(criu_version) refuses the dump (thread-stack guard regions; criu 4.2 dumps them)"
	fi
	tap_preempted "$tag: the refused dump" "$mark" 2
	tap_resumed "$tag: after the refused dump" "$mark"
	rm -rf "$img"
	tap_alive_verified "$tag: after the failed dump, kernels preempted by it finish right" "$pid" "$state"
	wl_kill "$pid"
}

illegal_instruction() {
	local tag="ROCm $version kernels" out=$RESULTS_DIR/hip_kernel-illegal.out
	emu_reload_or_say "$tag: reload as 2xmi210" preset=2xmi210 || return
	if ${WL_ROOT:+chroot "$WL_ROOT"} "${WL_BIN:-$E2E_BIN}/hip_kernel_workload" --illegal-instruction --state "$RESULTS_DIR/hip_kernel-illegal.state" >"$out" 2>&1; then
		tap_ok "$tag: a kernel reaching an instruction the emulated GPU does not execute is reported to the application as an illegal instruction"
	else
		tap_not_ok "$tag: a kernel reaching an instruction the emulated GPU does not execute is reported to the application as an illegal instruction" \
			"$(tail -n 5 "$out")"
	fi
}

if [ "${VM_GUEST:-bookworm}" = bookworm ]; then
	version=5.2
	log "the guest's own ROCm ($(dpkg-query -W -f='${Package} ${Version}' libamdhip64-5 2>/dev/null)), kernels in flight, under criu $(criu_version)"
	one_userland
	illegal_instruction
	e2e_done
	exit
fi
for version in $(userland_versions); do
	userland_enter "$version" || { tap_not_ok "ROCm $version: its root's binds"; continue; }
	if [[ " $(userland_workloads "$version" --kernels) " == *" hip_kernel "* ]]; then
		log "$(userland_label "$version"), kernels in flight, under criu $(criu_version)"
		one_userland
		illegal_instruction
	else
		tap_skip "ROCm $version: no hip_kernel_workload built in its root (hipcc)"
	fi
	userland_leave
done
e2e_done
