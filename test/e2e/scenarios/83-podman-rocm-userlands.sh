#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Containers of today's ROCm under Podman (see 80): the image is a ROCm userland's root as Debian's
# archive built it (test/vm/rocm-root.sh), with its workloads (test/e2e/lib/userlands.sh) added,
# the way ROCm's own container images are run (/dev/kfd and the render nodes passed in). For each
# workload of each userland:
#  - podman container checkpoint, then restore in place: the workload carries on, every byte
#    verified, its queues running;
#  - checkpoint --export, the container removed, the emulator reloaded as another node (other
#    gpu_ids, the same render nodes), restore --import under a new name: the same.
# trixie guest (its crun is built with CRIU); it needs a 4 GiB guest like the other Podman
# scenarios.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
. test/e2e/podman-lib.sh
podman_begin "$@"

userland_require

first=1
for version in $(userland_versions); do
	label=$(userland_label "$version")
	PODMAN_IMAGE=localhost/rocm-$version:test
	if [ "$first" = 1 ]; then
		podman_setup "podman_rocm_image $version"
		first=0
	else
		emu_reload preset=2xmi210 || { tap_not_ok "$label: load the emulator"; continue; }
		tap_check "$label: its image" podman_rocm_image "$version"
	fi
	log "$label as $PODMAN_IMAGE"
	for w in $(userland_workloads "$version"); do
		tag="ROCm $version $w"
		name=rocm-$w
		gpu_run "$name" "$w" "$(render_nodes)" --vram-mb 2 || { tap_not_ok "$tag: the container starts"; continue; }
		tap_verify "$tag: in its container, before the checkpoint" "$pid" "$state"

		tap_podman "$tag: podman container checkpoint" container checkpoint "$name"
		wait_for "task_gone $pid '$state'" 10
		tap_podman "$tag: podman container restore" container restore "$name"
		pid=$(gpu_container_pid "$name")
		tap_alive_verified "$tag: restored in place" "$pid" "$state"

		tap_podman "$tag: podman container checkpoint --export" \
			container checkpoint --export "$PODMAN_DIR/$name.tar.gz" "$name"
		pm rm -f "$name" >/dev/null 2>&1
		wait_for "task_gone $pid '$state'" 10
		emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 ||
			{ tap_not_ok "$tag: reload as another node"; continue; }
		tap_podman "$tag: podman container restore --import on other gpu_ids, as $name-2" \
			container restore --import "$PODMAN_DIR/$name.tar.gz" --name "$name-2"
		pid=$(gpu_container_pid "$name-2")
		tap_alive_verified "$tag: migrated to other gpu_ids" "$pid" "$state"
		podman_teardown
		rm -f "$PODMAN_DIR/$name.tar.gz"
		emu_reload preset=2xmi210 || { tap_not_ok "$tag: reload the emulator"; break; }
	done
	pm rmi -f "$PODMAN_IMAGE" >/dev/null 2>&1
done
podman_teardown
e2e_done
