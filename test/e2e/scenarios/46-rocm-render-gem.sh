#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A ROCm process that also holds GEM handles on its render node (rocr_workload --gem, ROCm 6.4's
# runtime, copies always in flight): the first stream's VRAM buffer, exported by the runtime as a
# dma-buf and imported on the render node, and a GTT buffer of the render node's own. On Linux 6.18
# and newer (trixie guest, criu 4.3): the dump saves the import with the KFD buffer it is, once,
# and the other object's memory with the render node; restored on other gpu_ids and render
# minors, the import comes back under its handle as the restored KFD buffer (the runtime's dma-buf
# of the buffer and the handle's are one buffer again), the other object under its handle with its
# bytes, and the copies go on; then once more from the restored task.
# timeout: 300
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_require
[ -x "$E2E_BIN/rocr_workload" ] || { echo "no rocr_workload (libhsa-runtime-dev missing at build time?)"; exit 77; }
uname -r | awk -F. '{ exit !($1 > 6 || ($1 == 6 && $2 >= 18)) }' ||
	{ echo "Linux $(uname -r) cannot list a render node's GEM objects (6.18 can): e2e/45 covers the refusal"; exit 77; }
scenario_warnings_begin

img=/tmp/img-46
wl_fresh rocr preset=2xmi210 -- --vram-mb 2 --gem || e2e_done
tap_verify "rocr --gem: before the dump" "$pid" "$state"
task_snapshot "$pid" "$RESULTS_DIR/rocr.dumped"
read -r kfd_handle own_handle < <(sed -n 's/^gem kfd-handle \([0-9]*\) own-handle \([0-9]*\)$/\1 \2/p' "$state")

n=0
for ids in 0x0e01,0x0e02:160 0x1002,0x2001:128; do
	n=$((n + 1))
	tap_dump_gone "rocr --gem $n: criu dump" "$pid" "$state" "$img" || break
	tap_log_has "rocr --gem $n: the import is saved as the KFD buffer it is" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: pid [0-9]+ fd [0-9]+ \\(renderD[0-9]+\\): GEM handle $kfd_handle is the memory of KFD buffer 0x[0-9a-f]+ of pid [0-9]+, saved with it"
	tap_log_has "rocr --gem $n: the other object's memory is saved with the render node" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: saved amdgpu-renderD-[0-9]+.img: renderD[0-9]+ of GPU 0x[0-9a-f]+, 2 GEM objects \\(1 with their memory here, 1048576 bytes\\)"
	if ! emu_reload preset=2xmi210 gpu_ids="${ids%:*}" render_minor_base="${ids#*:}"; then
		tap_not_ok "rocr --gem $n: reload the emulator with gpu_ids ${ids%:*}"
		break
	fi
	tap_restore "rocr --gem $n: criu restore onto gpu_ids ${ids%:*}" "$img" || break
	tap_log_has "rocr --gem $n: the import comes back as the restored KFD buffer" "$CRIU_LAST_LOG" \
		"2 GEM objects back under their handles \\([0-9]+ gaps filled for the moment, 1 KFD buffers imported, 0 KFD buffers' handles left free\\)"
	tap_same_task "rocr --gem $n: restored" "$RESULTS_DIR/rocr.dumped" "$pid"
	tap_alive_verified "rocr --gem $n: restored (the import is the runtime's buffer, the other object's bytes)" \
		"$pid" "$state"
done
wl_kill "$pid"
e2e_done
