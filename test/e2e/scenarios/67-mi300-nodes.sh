#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# MI300X nodes (gfx942). hip_kernel_workload of a ROCm userland root (6.4.3's: the one with
# hipcc), its kernels built for gfx942, runs kernels on every GPU all the time (as in e2e/65). On
# an MI300X in SPX mode one queue runs on all eight XCCs of its GPU: each XCC launches its share of
# a dispatch's workgroups, and when the queue stops each saves its waves into a save area and
# control stack of its own, which KFD's checkpoint carries as one MQD and one control stack per
# XCC.
#
# make check, on 2xmi300x (two MI300X in SPX+NPS1):
#   - dumped with the long kernel in flight on every XCC of both GPUs (the emulator logs the waves
#     saved on 8 of 8 XCCs), restored on another SPX node (other gpu_ids and render minors): the
#     waves come back on every XCC, every kernel in flight finished right, new ones run;
#   - a GPU memory fault provoked in the restored job ends it with HIP's abort, naming
#     HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, within 5 s;
#   - the same images restored on an MI300X in CPX mode (cpx8): refused before anything is
#     restored, the plugin naming the GPU, the mode found (CPX, 1 XCC) and the mode needed (SPX,
#     8 XCCs); nothing is left.
# make check-full, on cpx8 (one MI300X in CPX+NPS1; the job on two of its partitions,
# ROCR_VISIBLE_DEVICES): dumped with kernels in flight, restored on another CPX node with other
# gpu_ids, verified; then its images restored on a CPX+NPS4 node (cpx8-nps4): restored, since
# the memory partition mode decides only which HBM backs a partition and how much it has (the
# plugin's VRAM rule checks that), verified; and the 8-GPU SPX node (8xmi300x): the job on all
# eight GPUs, dumped in flight, restored with other gpu_ids.
# timeout: 1500
. test/vm/lib.sh
. test/e2e/lib.sh
userland_private_mounts "$@"
e2e_begin
[ "${VM_GUEST:-bookworm}" = trixie ] || { echo "MI300X (gfx942) needs a kernel of 6.5 or newer: the trixie guest"; exit 77; }
userland_require

KERNELS_TAG="e2e 67"
read -ra KERNEL_ARGS <<<"$(kernel_args)"
img=/tmp/img-67

# rewind_output: the job's output file as long as it was at the dump, which criu wants to find
# when it restores the same images again (what the restored job wrote goes to a copy)
rewind_output() {
	cat "$RESULTS_DIR/hip_kernel.out" >>"$RESULTS_DIR/hip_kernel.out.restored"
	truncate -s "$OUT_SIZE" "$RESULTS_DIR/hip_kernel.out"
}

# in_flight_round <tag> <preset> <other preset params...>: the job on <preset>, dumped with kernels
# in flight, restored after a reload with the other params, verified
in_flight_round() {
	local tag=$1 preset=$2 mark
	shift 2
	# shellcheck disable=SC2086 # ROUND_ARGS: more workload options, one word each
	wl_fresh hip_kernel preset="$preset" -- "${KERNEL_ARGS[@]}" ${ROUND_ARGS:-} || return 1
	log "$tag: the job's resident memory: $(awk '/^VmRSS/ { print $2, $3 }' "/proc/$pid/status"), the guest's free: $(awk '/^MemAvailable/ { print $2, $3 }' /proc/meminfo)"
	log_instruction_rate "$tag"
	dump_in_flight "$tag" "dumped with kernels in flight" || { wl_kill "$pid"; return 1; }
	OUT_SIZE=$(stat -c %s "$RESULTS_DIR/hip_kernel.out")
	emu_reload_or_say "$tag: reload as $preset with other gpu_ids" preset="$preset" "$@" || return 1
	mark="$KERNELS_TAG: $tag restore $(date +%s%N)"
	dmesg_mark "$mark"
	tap_restore "$tag: restored on other gpu_ids" "$img" || return 1
	tap_same_task "$tag: restored on other gpu_ids" "$RESULTS_DIR/hip_kernel.dumped" "$pid" --events-made-since
	tap_alive_verified "$tag: restored on other gpu_ids (every kernel in flight finished right, new ones run)" \
		"$pid" "$state" "${VERIFY_SECONDS:-}"
	tap_resumed "$tag: restored on other gpu_ids" "$mark"
}

# refused_in_other_mode <tag> <preset> <found> <needed>: the images restored on <preset>: refused,
# the plugin naming the mode found and needed, nothing left
refused_in_other_mode() {
	local tag=$1 preset=$2 found=$3 needed=$4
	emu_reload_or_say "$tag: reload as $preset" preset="$preset" || return
	rewind_output
	tap_restore_fails "$tag: restore on $preset fails" "$img"
	tap_log_has "$tag: the plugin names the GPU, the mode found and the mode needed" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: .*gpu 0x[0-9a-f]+ .*no local GPU fits.* is in compute partition mode $found, the image's GPU was in $needed"
	tap_no_task "$tag: no restored task is left" "$pid" "$state"
	tap_no_kfd_process "$tag: no KFD process is left in the emulator"
}

spx_node() {
	local tag="ROCm $version MI300X SPX"
	KERNELS_GPUS=2 KERNELS_XCCS=8
	in_flight_round "$tag" 2xmi300x gpu_ids=0x0e31,0x0e32 render_minor_base=150 || return
	tap_hip_aborts "$tag: restored, a memory fault ends the job" memory
	refused_in_other_mode "$tag" cpx8 'CPX \(1 XCC per node\)' 'SPX \(8 XCCs per node\)'
	rm -rf "$img"
}

cpx_node() {
	local tag="ROCm $version MI300X CPX" mark
	KERNELS_GPUS=2 KERNELS_XCCS=1
	WL_ENV="ROCR_VISIBLE_DEVICES=0,1" ROUND_ARGS="--gpus 2" in_flight_round "$tag" cpx8 \
		gpu_ids=0x0e41,0x0e42,0x0e43,0x0e44,0x0e45,0x0e46,0x0e47,0x0e48 render_minor_base=150 || return
	wl_kill "$pid"
	emu_reload_or_say "$tag: reload as cpx8-nps4" preset=cpx8-nps4 || return
	mark="$KERNELS_TAG: $tag restore nps4 $(date +%s%N)"
	dmesg_mark "$mark"
	rewind_output
	tap_restore "$tag: the CPX+NPS1 images restored on a CPX+NPS4 node" "$img" || return
	tap_alive_verified "$tag: restored on CPX+NPS4" "$pid" "$state"
	tap_resumed "$tag: restored on CPX+NPS4" "$mark"
	wl_kill "$pid"
	rm -rf "$img"
}

eight_gpu_node() {
	local tag="ROCm $version 8xMI300X SPX"
	KERNELS_GPUS=8 KERNELS_XCCS=8
	# the job verifies eight GPUs whose shader cores share the guest's two vCPUs: minutes
	VERIFY_SECONDS=360 in_flight_round "$tag" 8xmi300x \
		gpu_ids=0x0e51,0x0e52,0x0e53,0x0e54,0x0e55,0x0e56,0x0e57,0x0e58 render_minor_base=150 || return
	wl_kill "$pid"
	rm -rf "$img"
}

for version in $(userland_versions); do
	userland_enter "$version" || { tap_not_ok "ROCm $version: its root's binds"; continue; }
	if [[ " $(userland_workloads "$version" --kernels) " != *" hip_kernel "* ]]; then
		tap_skip "ROCm $version: no hip_kernel_workload built in its root (hipcc)"
	else
		log "$(userland_label "$version"), MI300X nodes, under criu $(criu_version)"
		spx_node
		if [ "${CHECK_FULL:-0}" = 1 ]; then
			cpx_node
			eight_gpu_node
		fi
	fi
	userland_leave
done
e2e_done
