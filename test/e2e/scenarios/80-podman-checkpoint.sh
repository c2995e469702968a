#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A GPU container under Podman (crun where it has CRIU, as trixie's does, else runc; the plugin
# installed from the package, no --libdir; storage
# on tmpfs; an image imported from a local directory): the libhsakmt workload in a container given
# /dev/kfd and both render nodes of a 2xMI210 node.
#  - podman container checkpoint / restore on the same node: the restored container's workload
#    verifies every byte and its queues run;
#  - checkpoint --leave-running: the container runs on, same process, queues running; criu's
#    dump.log shows the queues resumed once, by criu, not by the helpers criu forks;
#  - checkpoint --export, the container removed, restore --import under a new name: the same;
#  - the same (in place, then export/import) for ROCm's runtime (rocr_workload), its SDMA and AQL
#    queues holding work; after each in-place restore the task is the one dumped (task-snapshot.sh);
#  - under a crun built without CRIU (Debian bookworm's 1.8.1: it has no checkpoint command and its
#    --version lists no +CRIU): podman refuses the checkpoint before anything is paused, and the
#    container runs on.
# It needs a 4 GiB guest (make check-containers); the main guest skips it.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
. test/e2e/podman-lib.sh
podman_begin "$@"

podman_setup

if ! gpu_run gpu hsakmt "$(render_nodes)" --vram-mb 8; then
	tap_not_ok "a GPU container starts"
	e2e_done
fi
tap_ok "a GPU container starts (workload pid $pid)"
tap_verify "container: before the checkpoint" "$pid" "$state"
task_snapshot "$pid" "$RESULTS_DIR/gpu.dumped"

tap_podman "podman container checkpoint" container checkpoint gpu &&
	tap_podman "podman container restore" container restore gpu
pid=$(gpu_container_pid gpu)
tap_alive_verified "restored container" "$pid" "$state"
tap_same_task "restored container" "$RESULTS_DIR/gpu.dumped" "$pid"

before=$pid
tap_podman "podman container checkpoint --leave-running --keep" container checkpoint --leave-running --keep gpu
pid=$(gpu_container_pid gpu)
tap_check "the container runs on in the same process ($before -> $pid)" test "$pid" = "$before"
tap_alive_verified "left running" "$pid" "$state"
# criu forks helpers (one per namespace it dumps) that end through exit(), where criu calls the
# plugins' exit too (--keep keeps criu's log): only criu itself may resume the queues, once
dump_log=$(find "$PODMAN_DIR/root" -name dump.log -path '*userdata*' | head -n 1)
resumed=$(grep -c 'amdgpu_plugin: .*queues resumed' "$dump_log" 2>/dev/null)
tap_check "dump.log: the queues were resumed once ($resumed), by criu, and no helper tried to" \
	eval '[ "$resumed" = 1 ] && ! grep -q "UNPAUSE failed" "$dump_log"'
grep 'amdgpu_plugin: .*\(UNPAUSE\|resumed\)' "$dump_log" 2>/dev/null | head -n 4 | sed 's/^/#   /'

tap_export_import "" gpu gpu-copy
tap_alive_verified "imported as gpu-copy" "$pid" "$state"
podman_teardown

# ROCm's runtime in a container: its SDMA and AQL queues hold work at each checkpoint
if [ -x "$E2E_BIN/rocr_workload" ] && gpu_run rocr rocr "$(render_nodes)" --vram-mb 2; then
	tap_verify "rocr container: before the checkpoint" "$pid" "$state"
	task_snapshot "$pid" "$RESULTS_DIR/rocr.dumped"
	tap_podman "rocr: podman container checkpoint" container checkpoint rocr &&
		tap_podman "rocr: podman container restore" container restore rocr
	pid=$(gpu_container_pid rocr)
	tap_alive_verified "rocr: restored container" "$pid" "$state"
	tap_same_task "rocr: restored container" "$RESULTS_DIR/rocr.dumped" "$pid"
	tap_export_import "rocr: " rocr rocr-copy
	tap_alive_verified "rocr: imported as rocr-copy" "$pid" "$state"
else
	tap_not_ok "a container of ROCm's runtime (rocr_workload) starts"
fi
podman_teardown

if [ "$PODMAN_RUNTIME" = crun ]; then
	tap_skip "podman under a crun without CRIU" "this crun has CRIU: every container above ran under it"
elif command -v crun >/dev/null; then
	PODMAN_RUNTIME=crun
	crun_features=$(crun --version | tail -n 1)
	tap_check "crun $(crun --version | sed -n 's/^crun version //p') is built without CRIU: $crun_features" \
		eval '! grep -q CRIU <<<"$crun_features"'
	if gpu_run gpu-crun hsakmt "$(render_nodes)" --vram-mb 8; then
		id=$(pm inspect -f '{{.Id}}' gpu-crun)
		own=$(crun checkpoint "$id" 2>&1 | head -n 1)
		tap_check "crun's own answer to checkpoint: $own" test "$own" = "unknown command checkpoint"
		if pm container checkpoint gpu-crun >"$RESULTS_DIR/crun-checkpoint.out" 2>&1; then
			tap_not_ok "podman container checkpoint under crun is refused" "it succeeded"
		else
			tap_ok "podman container checkpoint under crun is refused: $(grep -v '^time=' "$RESULTS_DIR/crun-checkpoint.out" | tail -n 1)"
		fi
		before=$pid
		pid=$(gpu_container_pid gpu-crun)
		tap_check "the crun container runs on in the same process ($before -> $pid)" test "$pid" = "$before"
		tap_alive_verified "crun container after the refusal" "$pid" "$state"
	else
		tap_not_ok "a GPU container starts under crun"
	fi
	podman_teardown
	PODMAN_RUNTIME=runc
else
	tap_skip "podman under crun" "crun is not installed"
fi
e2e_done
