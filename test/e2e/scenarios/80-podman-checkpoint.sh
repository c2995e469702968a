#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A GPU container under Podman (runc; the plugin installed from the package, no --libdir; storage
# on tmpfs; an image imported from a local directory): the libhsakmt workload in a container given
# /dev/kfd and both render nodes of a 2xMI210 node.
#  - podman container checkpoint / restore on the same node: the restored container's workload
#    verifies every byte and its queues run;
#  - checkpoint --leave-running: the container runs on, same process, queues running;
#  - checkpoint --export, the container removed, restore --import under a new name: the same.
# It needs a 4 GiB guest (make check-containers); the main guest skips it.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
. test/e2e/podman-lib.sh
podman_enter "$@"
e2e_require
podman_require
scenario_warnings_begin

emu_reload preset=2xmi210 || { tap_not_ok "load the emulator"; e2e_done; }
podman_setup

if ! gpu_run gpu hsakmt "$(render_nodes)" --vram-mb 8; then
	tap_not_ok "a GPU container starts"
	e2e_done
fi
tap_ok "a GPU container starts (workload pid $pid)"
tap_verify "container: before the checkpoint" "$pid" "$state"

tap_podman "podman container checkpoint" container checkpoint gpu &&
	tap_podman "podman container restore" container restore gpu
pid=$(gpu_container_pid gpu)
tap_alive_verified "restored container" "$pid" "$state"

before=$pid
tap_podman "podman container checkpoint --leave-running" container checkpoint --leave-running gpu
pid=$(gpu_container_pid gpu)
tap_check "the container runs on in the same process ($before -> $pid)" test "$pid" = "$before"
tap_alive_verified "left running" "$pid" "$state"

tap_podman "podman container checkpoint --export" container checkpoint --export "$PODMAN_DIR/gpu.tar.gz" gpu &&
	pm rm -f gpu >/dev/null 2>&1 &&
	tap_podman "podman container restore --import --name gpu-copy" \
		container restore --import "$PODMAN_DIR/gpu.tar.gz" --name gpu-copy
pid=$(gpu_container_pid gpu-copy)
tap_alive_verified "imported as gpu-copy" "$pid" "$state"

podman_teardown
e2e_done
