#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A GPU container given one of its node's two GPUs (criu#2248, #2723): podman run --device
# /dev/kfd --device /dev/dri/renderD129 on a 2xMI210 node. The emulator asks the device cgroup, as
# KFD does, so runc's device filter hides the other GPU from the container.
#  - the container's KFD process has that one GPU; checkpoint / restore in place: it verifies
#    every byte, still with that one GPU;
#  - checkpoint --export, restore --import on a one-GPU node whose GPU has another gpu_id (its
#    render node is the one the container was given): verified;
#  - the same export imported on a two-GPU node whose GPUs have other render minors: runc applies
#    the container's device filter only after criu's restore, so KFD gives the restoring task both
#    GPUs, and the container holds neither's render node (podman keeps the checkpointed device
#    list). The restore fails; criu's log (named in podman's error) has the plugin's refusal naming
#    each GPU, its render node and device number, and what the container's /dev/dri holds; no
#    workload process and no KFD process are left.
# It needs a 4 GiB guest (make check-containers); the main guest skips it.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
. test/e2e/podman-lib.sh
podman_begin "$@"

# kfd_gpus <pid>: "user_gpu_id actual_gpu_id" of each GPU of the task's KFD process
kfd_gpus() {
	awk -v p="$1" '/^process pid/ { on = ($3 == p) } on && /^  gpu / { print $4 "/" $6 }' "$EMU_DEBUGFS/processes" |
		tr '\n' ' ' | sed 's/ $//'
}
tap_kfd_gpus() {
	local name=$1 pid=$2 want=$3 got
	got=$(kfd_gpus "$pid")
	if [ "$got" = "$want" ]; then
		tap_ok "$name: the KFD process has GPU (user/actual) $got"
	else
		tap_not_ok "$name: the KFD process has GPU (user/actual) $want" "it has: ${got:-none}"
	fi
}

podman_setup
read -r -a nodes <<<"$(render_nodes)"
if ! gpu_run sub hsakmt "${nodes[1]}" --vram-mb 8; then
	tap_not_ok "a container given ${nodes[1]} only starts"
	e2e_done
fi
tap_ok "a container given ${nodes[1]} only starts (workload pid $pid)"
tap_kfd_gpus "given one GPU" "$pid" "0x2b8c/0x2b8c"
tap_verify "given one GPU: before the checkpoint" "$pid" "$state"

tap_podman "podman container checkpoint" container checkpoint sub &&
	tap_podman "podman container restore" container restore sub
pid=$(gpu_container_pid sub)
tap_alive_verified "restored in place" "$pid" "$state" && tap_kfd_gpus "restored in place" "$pid" "0x2b8c/0x2b8c"

tap_podman "podman container checkpoint --export" container checkpoint --export "$PODMAN_DIR/sub.tar.gz" sub
pm rm -f sub >/dev/null 2>&1
wait_for "task_gone $pid '$state'" 10

emu_reload preset=mi210 gpu_ids=0x0e02 render_minor_base=129 || { tap_not_ok "reload as a one-GPU node"; e2e_done; }
tap_podman "podman container restore --import on a one-GPU node (gpu_id 0x0e02, ${nodes[1]})" \
	container restore --import "$PODMAN_DIR/sub.tar.gz" --name sub2
pid=$(gpu_container_pid sub2)
tap_alive_verified "imported on the one-GPU node" "$pid" "$state" &&
	tap_kfd_gpus "imported on the one-GPU node" "$pid" "0x2b8c/0xe02"
pm rm -f sub2 >/dev/null 2>&1
wait_for "task_gone $pid '$state'" 10

emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 render_minor_base=160 ||
	{ tap_not_ok "reload as a two-GPU node with other render minors"; e2e_done; }
tap_import_refused "onto GPUs the container has no render node of" "$PODMAN_DIR/sub.tar.gz" sub3 \
	'0x0e01 \(/dev/dri/renderD160, device 226:160.*0x0e02 \(/dev/dri/renderD161, device 226:161, the image.s GPU 0x2b8c\).*renderD129 \(226:129\)'
podman_teardown

e2e_done
