#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A Kubernetes node's runtime (test/e2e/lib/containerd.sh: Debian's containerd 2.1 with its CRI
# plugin and runc 1.3; the plugin from the package for Debian 13, installed with dpkg -i) driven
# through the CRI as kubelet drives it (test/e2e/cri/cri_client.cpp). ROCm 6.4.3's HIP job with
# kernels always in flight (hip_kernel_workload, e2e/65) in a pod, given /dev/kfd and both render
# nodes of a 2xMI210 node as the AMD GPU device plugin gives them (device nodes and the cgroup's
# device rules):
#   - Documentation/containers.md's commands, as written (tap_guide): PullImage, a pod, the
#     container; CheckpointContainer to an archive (what kubelet's checkpoint API calls) with the
#     long kernel in flight on both GPUs (the emulator saves the waves); the pod is removed;
#   - on another node (the emulator reloaded with other gpu_ids and render minors 150 and 151), a
#     new pod, CreateContainer from the archive (containerd 2.x restores from an archive named as
#     the image; it pulls the base image again from its registry) given that node's render
#     nodes, StartContainer: the plugin makes the render nodes the restored /dev lacks, the saved
#     waves resume, every kernel in flight finished right, new ones run, heartbeats;
# make check-full (CHECK_FULL) adds:
#   - the archive restored in a pod whose container is given one GPU: StartContainer fails with
#     the CRI error containerd gives (criu's errno only), criu's log holds the plugin's refusal
#     naming the image's two GPUs; no running container, workload process or KFD process is left,
#     and the node's GPUs take a new job.
# trixie guest of 6 GiB (the archive, the image in the registry and a copy per container).
# timeout: 1500
. test/vm/lib.sh
. test/e2e/lib.sh
. test/e2e/lib/containerd.sh
containerd_begin "$@"
userland_require

version=6.4
KERNELS_TAG="e2e 85"
read -ra KERNEL_ARGS <<<"$(kernel_args)"
archive=/var/lib/gpu-checkpoints/job.tar

containerd_setup 2xmi210 containerd_rocm_image "$version" hip_kernel
read -ra nodes <<<"$(render_nodes)"

# 1. Checkpointed through the CRI, restored from the archive on another node: the guide's
# commands, as written.
guide_job "$CTR_IMAGE"
if tap_guide cri-run "a ROCm $version HIP job in a pod given ${nodes[*]}" && CTR_PODS+=" $pod" &&
	pid=$(ctr_pid "$ctr") && wait_for "[ -s '$state' ]" 120; then
	wait_long_kernels_early "two GPUs"
	mark="$KERNELS_TAG: checkpoint $(date +%s%N)"
	dmesg_mark "$mark"
	tap_guide cri-checkpoint "CheckpointContainer with kernels in flight" &&
		tap_preempted "CheckpointContainer" "$mark" 2
	log "the archive: $(du -sm "$archive" | cut -f1) MiB"
	tap_alive_verified "the checkpointed container runs on" "$pid" "$state"
	tap_guide cri-move "the job moves: its pod removed"
	wait_for "task_gone $pid '$state'" 20
	wait_kfd_released "after the first pod"

	emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 render_minor_base=150 ||
		{ tap_not_ok "reload as another node"; e2e_done; }
	what="on other gpu_ids and render minors ($(render_nodes))"
	mark="$KERNELS_TAG: restore $(date +%s%N)"
	dmesg_mark "$mark"
	if ! tap_guide cri-restore "$what: a new pod, CreateContainer from the archive, StartContainer"; then
		cp "$CONTAINERS_CRIU_LOG" "$RESULTS_DIR/restore-criu.log" 2>/dev/null
		grep amdgpu_plugin "$CONTAINERS_CRIU_LOG" | grep -v param: | tail -n 4 | sed 's/^/#   /'
	fi
	CTR_PODS+=" $pod"
	ctr_restored
	pid=$(ctr_pid "$ctr")
	tap_alive_verified "$what: the job carries on (every kernel in flight finished right, new ones run)" "$pid" "$state"
	tap_resumed "$what" "$mark"
	tap_render_nodes_made 2 '15[01]'
	cri pod-remove "$pod" >/dev/null 2>&1
	wait_kfd_released "after the restored pod"
else
	tap_not_ok "the job got ready"
fi

if [ -z "${CHECK_FULL:-}" ]; then
	containerd_teardown
	e2e_done
fi

# 2. The archive in a pod given one GPU: refused, nothing left.
if [ -e "$archive" ] && ctr_pod pod3 && ctr_gpu_create "$pod" job "$archive" /dev/dri/renderD150 "${KERNEL_ARGS[@]}"; then
	tap_refused_two_gpus "StartContainer of the two-GPU archive in a container given one GPU" \
		"$CONTAINERS_CRIU_LOG" "[ \"\$(cri status $ctr | cut -d' ' -f1)\" = running ]" cri start "$ctr"
	ctr_restored
	cri pod-remove "$pod" >/dev/null 2>&1
	CTR_WORKLOAD=hip_kernel
	if ctr_pod pod4 && ctr_gpu_create "$pod" after "$CTR_IMAGE" "$(render_nodes)" "${KERNEL_ARGS[@]}" &&
		cri start "$ctr" && pid=$(ctr_pid "$ctr") && wait_for "[ -s '$state' ]" 120; then
		tap_alive_verified "the node's GPUs take a new job" "$pid" "$state"
	else
		tap_not_ok "the node's GPUs take a new job"
	fi
else
	tap_not_ok "a pod given one GPU, the container created from the two-GPU archive"
fi
containerd_teardown
e2e_done
