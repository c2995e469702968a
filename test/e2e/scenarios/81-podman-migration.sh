#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# GPU containers under Podman (see 80) that leave their node or fail:
#  - a checkpoint that fails (KFD CHECKPOINT fault injected): podman reports the failure and the
#    container runs on, its queues unpaused, every byte verified;
#  - migration: checkpoint --export, the emulator reloaded as another node (other gpu_ids, same
#    render nodes), restore --import under a new name: the workload carries on, every byte verified;
#  - an export restored on a node whose GPUs cannot take it (MI250X GCDs for MI210s):
#    amdgpu-topology --images on the unpacked archive says so first (exit 1, both device ids),
#    as the README's flow does; then podman restore fails, its error naming criu's restore log,
#    where the plugin's refusal names the GPU, the property and the values; no workload process,
#    running container or KFD process is left behind.
# It needs a 4 GiB guest (make check-containers); the main guest skips it.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
. test/e2e/podman-lib.sh
podman_begin "$@"

podman_setup
gpu_run mig hsakmt "$(render_nodes)" --vram-mb 8 || { tap_not_ok "a GPU container starts"; e2e_done; }
tap_verify "container: before the checkpoints" "$pid" "$state"

echo "criu 1 1 5" >"$EMU_DEBUGFS/fault"
before=$pid
if pm container checkpoint mig >"$RESULTS_DIR/failed-checkpoint.out" 2>&1; then
	tap_not_ok "podman container checkpoint fails when KFD CHECKPOINT fails" "it succeeded"
else
	tap_ok "podman container checkpoint fails when KFD CHECKPOINT fails"
fi
echo clear >"$EMU_DEBUGFS/fault"
pid=$(gpu_container_pid mig)
tap_check "the container runs on in the same process ($before -> $pid)" test "$pid" = "$before"
tap_alive_verified "after the failed checkpoint" "$pid" "$state"

tap_podman "podman container checkpoint --export" container checkpoint --export "$PODMAN_DIR/mig.tar.gz" mig
pm rm -f mig >/dev/null 2>&1
wait_for "task_gone $pid '$state'" 10
emu_reload preset=2xmi210 gpu_ids=0x0e01,0x0e02 || { tap_not_ok "reload as another node"; e2e_done; }
tap_podman "podman container restore --import on other gpu_ids, as mig2" \
	container restore --import "$PODMAN_DIR/mig.tar.gz" --name mig2
pid=$(gpu_container_pid mig2)
tap_alive_verified "migrated to other gpu_ids" "$pid" "$state"
pm rm -f mig2 >/dev/null 2>&1
wait_for "task_gone $pid '$state'" 10

emu_reload preset=mi250x || { tap_not_ok "reload as an MI250X node"; e2e_done; }
unpacked=$PODMAN_DIR/mig-unpacked
# (podman compresses the archive with zstd whatever its name: tar finds out)
mkdir -p "$unpacked" && tar -C "$unpacked" -xf "$PODMAN_DIR/mig.tar.gz"
images=$(find "$unpacked" -name 'amdgpu-kfd-*.img' | head -n 1)
images=${images%/*}
/usr/bin/amdgpu-topology --images "${images:-$unpacked}" >"$RESULTS_DIR/topology-images.out" 2>&1
rc=$?
tap_check "amdgpu-topology --images on the export's ${images#"$unpacked"/}: no mapping (exit $rc), naming 0x740f and 0x740c" \
	eval '[ "$rc" = 1 ] && grep -q 0x740f "$RESULTS_DIR/topology-images.out" && grep -q 0x740c "$RESULTS_DIR/topology-images.out"'
grep -m2 -i 'refus\|no mapping\|0x740c' "$RESULTS_DIR/topology-images.out" | sed 's/^/#   /'
tap_import_refused "onto MI250X GCDs" "$PODMAN_DIR/mig.tar.gz" mig3 '0x740c.*0x740f|0x740f.*0x740c'
podman_teardown
e2e_done
