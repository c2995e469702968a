#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Containers of today's ROCm under Podman (see 80): each workload of each ROCm userland
# (test/e2e/lib/userlands.sh) as a container image of its own made from that userland's root (the
# workload and the libraries it loads, podman_rocm_image), run the way ROCm's container images are
# run (/dev/kfd and the render nodes passed in), checkpointed with --export, the container
# removed, the emulator reloaded as another node (other gpu_ids, the same render nodes), and
# restored with --import under a new name (the first, ROCm 6.4.3's runtime workload, by the
# commands of Documentation/containers.md, as written): the workload carries on, every byte verified, its
# queues running, and ROCm's runtime workload hears of a memory fault and of an illegal
# instruction on its GPU (the runtime's registration with KFD came back with it: e2e/66). Each container's runtime sees the node's first GPU (ROCR_VISIBLE_DEVICES=0, as a
# job of one process per GPU sets it): a ROCm 6.x process holds about 60 MiB of context save area
# per queue, and the export carries it, so one GPU's queues halve what the import unpacks under
# emulation. trixie guest (its crun is built with CRIU), 4 GiB like the other Podman scenarios;
# make check takes ROCm 6.4.3 (ROCM_USERLANDS).
# timeout: 1200
. test/vm/lib.sh
. test/e2e/lib.sh
. test/e2e/podman-lib.sh
podman_begin "$@"
userland_require

setup_done=0
by_guide=1 # the first container is moved by the guide's commands
GPU_RUN_OPTS="--env ROCR_VISIBLE_DEVICES=0"
for version in $(userland_versions); do
	for w in $(userland_workloads "$version"); do
		tag="ROCm $version $w"
		name=rocm-$w
		PODMAN_IMAGE=localhost/rocm-$version-$w:test
		if [ "$setup_done" = 0 ]; then
			podman_setup "podman_rocm_image $version $w"
			setup_done=1
		else
			emu_reload preset=2xmi210 || { tap_not_ok "$tag: load the emulator"; continue; }
			tap_check "$tag: its image" podman_rocm_image "$version" "$w"
		fi
		if [ "$by_guide" = 1 ]; then
			# the guide's commands, as written (Documentation/containers.md); the runtime sees
			# the first GPU through the environment busybox gives the workload
			IMAGE=$PODMAN_IMAGE DATA=$RESULTS_DIR
			state=$RESULTS_DIR/job.state
			JOB="/bin/busybox env ROCR_VISIBLE_DEVICES=0 /wl/${w}_workload --state $state --gpus 1 --vram-mb 2"
			rm -f "$state" "$state".*
			if ! tap_guide podman-run "$tag: the container starts" || ! wait_for "[ -s '$state' ]" 120; then
				tap_not_ok "$tag: the workload gets ready"
				continue
			fi
			pid=$(gpu_container_pid job)
			tap_verify "$tag: in its container, before the checkpoint" "$pid" "$state"
			tap_guide podman-checkpoint "$tag: podman container checkpoint --export, the container removed"
			wait_for "task_gone $pid '$state'" 10
			emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 ||
				{ tap_not_ok "$tag: reload as another node"; continue; }
			tap_guide podman-restore "$tag: podman container restore --import on other gpu_ids"
			# the archive lives in the guest's memory, which the scenarios after this one need
			rm -f /var/lib/gpu-checkpoints/job.tar.zst
			pid=$(gpu_container_pid job)
			by_guide=0
		else
			gpu_run "$name" "$w" "$(render_nodes)" --gpus 1 --vram-mb 2 || { tap_not_ok "$tag: the container starts"; continue; }
			tap_verify "$tag: in its container, before the checkpoint" "$pid" "$state"

			tap_podman "$tag: podman container checkpoint --export" \
				container checkpoint --export "$PODMAN_DIR/$name.tar.gz" "$name"
			pm rm -f "$name" >/dev/null 2>&1
			wait_for "task_gone $pid '$state'" 10
			emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 ||
				{ tap_not_ok "$tag: reload as another node"; continue; }
			tap_podman "$tag: podman container restore --import on other gpu_ids, as $name-2" \
				container restore --import "$PODMAN_DIR/$name.tar.gz" --name "$name-2"
			rm -f "$PODMAN_DIR/$name.tar.gz"
			pid=$(gpu_container_pid "$name-2")
		fi
		tap_alive_verified "$tag: migrated to other gpu_ids" "$pid" "$state"
		# a migrated job still hears of its GPU's errors (e2e/66 says why it might not)
		if [ "$w" = rocr ]; then
			tap_fault "$tag: migrated, a memory fault reaches the runtime" "$pid" "$state" memory
			tap_fault "$tag: migrated, an illegal instruction reaches the runtime" "$pid" "$state" illegal
		fi
		podman_teardown
		pm rmi -f "$PODMAN_IMAGE" >/dev/null 2>&1
	done
done
e2e_done
