#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# GPU containers under Docker (test/e2e/lib/docker.sh: Debian's docker.io 28.5, containerd 2.1,
# runc 1.3; the plugin from the package for Debian 13, installed with dpkg -i). ROCm 6.4.3's HIP
# job with kernels always in flight (hip_kernel_workload, e2e/65) in a container run as ROCm's
# documentation runs one (--device /dev/kfd, --device for each render node, the video group,
# seccomp unconfined), on a 2xMI210 node:
#   - Documentation/containers.md's commands, as written (tap_guide): the node set up, the job
#     run; `docker checkpoint create --checkpoint-dir` catches the long kernel in flight on both
#     GPUs (the emulator saves the waves); the container stops;
#   - the checkpoint is carried to another node (the emulator reloaded with other gpu_ids and
#     render minors 150 and 151) and restored into a new container given that node's render
#     nodes (Docker 28 refuses --checkpoint-dir on start: the checkpoint is copied where `docker
#     start --checkpoint` finds it). runc has criu restore the container's /dev as the checkpoint
#     saw it, with the old node's renderD128 and renderD129, after putting criu in the new
#     container's cgroup: the plugin finds the new GPUs granted there and makes their render
#     nodes (criu#2723's failure, where the restore handed KFD an fd of -77). The job carries on:
#     the saved waves resume, every kernel in flight finished right, new ones run, heartbeats;
# make check-full (CHECK_FULL) adds:
#   - a container given one GPU of the two (ROCR_VISIBLE_DEVICES is not needed: the device cgroup
#     hides the other) is checkpointed and restored on a one-GPU node with another gpu_id and
#     render minor, verified;
#   - the two-GPU job's checkpoint started in a container given one GPU: `docker start` fails,
#     criu's log (kept through /etc/criu/runc.conf: Docker prints only criu's errno) holds the
#     plugin's refusal naming both GPUs; no container, workload process or KFD process is left,
#     and the node's GPUs take a new job.
# trixie guest of 6 GiB: the 833 MiB checkpoint passes through containerd's content store on its
# way to the checkpoint directory, and vfs copies the 260 MiB image for every container.
# timeout: 1500
. test/vm/lib.sh
. test/e2e/lib.sh
. test/e2e/lib/docker.sh
docker_begin "$@"
userland_require

version=6.4
KERNELS_TAG="e2e 84"
read -ra KERNEL_ARGS <<<"$(kernel_args)"
cps=$DOCKER_DIR/checkpoints

docker_setup 2xmi210 docker_rocm_image "$version" hip_kernel
read -ra nodes <<<"$(render_nodes)"

# tap_docker_restore <what> <container>: starts <container> from checkpoint cp (already in place),
# then the job must run on, verified, its saved waves resumed
tap_docker_restore() {
	local what=$1 name=$2 mark
	mark="$KERNELS_TAG: $what $(date +%s%N)"
	dmesg_mark "$mark"
	tap_docker "$what: docker start --checkpoint cp $name" start --checkpoint cp "$name"
	docker_restored
	pid=$(docker_pid "$name")
	[ "${pid:-0}" != 0 ] || return 1
	tap_alive_verified "$what: the job carries on (every kernel in flight finished right, new ones run)" "$pid" "$state"
	tap_resumed "$what" "$mark"
}

# 1. Two GPUs, kernels in flight, to another node with other gpu_ids and render minors: the
# guide's commands, as written.
guide_job "$DOCKER_IMAGE"
if tap_guide docker-run "a ROCm $version HIP job in a container given ${nodes[*]}" &&
	pid=$(docker_pid job) && wait_for "[ -s '$state' ]" 120; then
	wait_long_kernels_early "two GPUs"
	mark="$KERNELS_TAG: checkpoint $(date +%s%N)"
	dmesg_mark "$mark"
	tap_guide docker-checkpoint "docker checkpoint create --checkpoint-dir with kernels in flight" &&
		tap_preempted "docker checkpoint create" "$mark" 2
	tap_check "the container stopped, its job gone" eval "! kill -0 $pid 2>/dev/null"
	log "the checkpoint: $(du -sm /var/lib/gpu-checkpoints/cp | cut -f1) MiB; largest: $(cd /var/lib/gpu-checkpoints/cp && du -sm -- * | sort -rn | head -n 4 | tr '\t\n' ' ,')"

	emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 render_minor_base=150 ||
		{ tap_not_ok "reload as another node"; e2e_done; }
	mark="$KERNELS_TAG: restore $(date +%s%N)"
	dmesg_mark "$mark"
	what="on other gpu_ids and render minors ($(render_nodes))"
	tap_guide docker-restore "$what: the same container given them, docker start --checkpoint"
	docker_restored
	pid=$(docker_pid job)
	tap_alive_verified "$what: the job carries on (every kernel in flight finished right, new ones run)" "$pid" "$state"
	tap_resumed "$what" "$mark"
	tap_render_nodes_made 2 '15[01]'
	tap_check "the container's /dev/dri holds renderD150 and renderD151" \
		eval "docker exec job /bin/busybox ls /dev/dri | tr '\n' ' ' | grep -q 'renderD150 renderD151'"
	docker rm -f job >/dev/null 2>&1
	wait_kfd_released "after the two-GPU job"
else
	tap_not_ok "the job got ready"
fi

if [ -z "${CHECK_FULL:-}" ]; then
	docker_teardown
	e2e_done
fi

# 2. One GPU of two, to a one-GPU node.
emu_reload preset=2xmi210 || { tap_not_ok "reload as the first node"; e2e_done; }
read -ra nodes <<<"$(render_nodes)"
KERNELS_GPUS=1
if docker_gpu_run sub hip_kernel "${nodes[1]}" "${KERNEL_ARGS[@]}"; then
	tap_ok "a ROCm $version HIP job in a container given ${nodes[1]} only (pid $pid)"
	wait_long_kernels_early "one GPU"
	tap_docker "one GPU: docker checkpoint create --checkpoint-dir" \
		checkpoint create --checkpoint-dir "$cps/sub" sub cp
	docker rm -f sub >/dev/null 2>&1
	emu_reload preset=mi210 gpu_ids=0x0e07 render_minor_base=170 ||
		{ tap_not_ok "reload as a one-GPU node"; e2e_done; }
	if docker_gpu_create sub hip_kernel /dev/dri/renderD170 "${KERNEL_ARGS[@]}" &&
		docker_checkpoint_into "$cps/sub/cp" sub; then
		tap_docker_restore "one GPU, on a one-GPU node (gpu_id 0x0e07, renderD170)" sub
	else
		tap_not_ok "a new container given /dev/dri/renderD170, the checkpoint in place"
	fi
	docker rm -f sub >/dev/null 2>&1
	wait_kfd_released "after the one-GPU job"
else
	tap_not_ok "a ROCm $version HIP job in a container given ${nodes[1]} only"
fi
KERNELS_GPUS=2

# 3. The two-GPU checkpoint in a container given one GPU: refused, nothing left.
emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 render_minor_base=150 ||
	{ tap_not_ok "reload as the other node"; e2e_done; }
if docker_gpu_create job hip_kernel /dev/dri/renderD150 "${KERNEL_ARGS[@]}" &&
	docker_checkpoint_into /var/lib/gpu-checkpoints/cp job; then
	tap_refused_two_gpus "docker start --checkpoint of the two-GPU job in a container given one GPU" \
		"$CONTAINERS_CRIU_LOG" "[ \"\$(docker inspect -f '{{.State.Running}}' job 2>/dev/null)\" = true ]" \
		docker start --checkpoint cp job
	docker_restored
	docker rm -f job >/dev/null 2>&1
	if docker_gpu_run after hip_kernel "$(render_nodes)" "${KERNEL_ARGS[@]}"; then
		tap_alive_verified "the node's GPUs take a new job" "$pid" "$state"
	else
		tap_not_ok "the node's GPUs take a new job"
	fi
else
	tap_not_ok "a container given one GPU, the two-GPU checkpoint in place"
fi
docker_teardown
e2e_done
