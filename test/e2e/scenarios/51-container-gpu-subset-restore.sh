#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Restore into a container that sees a subset of the node's GPUs. A workload in a container that
# sees GPU B of two is dumped; the emulator comes back as another node (other gpu_ids and render
# minors) and the container now sees only the node's *first* GPU. criu, run inside the
# container (so that it, too, sees one GPU), restores the workload there: the image's GPU maps
# onto the one the container has, the workload verifies and its queue beats. A restore into the
# container while it sees no GPU at all must fail cleanly and leave no task behind.
# timeout: 300
. test/vm/lib.sh
. test/e2e/resource-lib.sh

resource_require kfd

emu_load preset=2xmi210 || exit 1
mapfile -t ids < <(gpu_ids_hex)
cg_make cg ctr51
trap 'cg_remove "$cg"' EXIT
gpu_access "$(cg_path "$cg") ${ids[1]}"

imgs=$RESULTS_DIR/images
rm -rf "$imgs"
wl_start_in_cg "$cg" w51
tap_verify "verified in the container on GPU ${ids[1]}" "$pid" "$state"
task_snapshot "$pid" "$RESULTS_DIR/w51.dumped"
tap_dumped_or_end "dumped from the container" "$pid" "$imgs"

emu_reload preset=2xmi210 gpu_ids=0x3c01,0x3c02 render_minor_base=160 || { tap_not_ok "emulator reload"; tap_done; }
mapfile -t new_ids < <(gpu_ids_hex)

# No GPU in the container: the image's GPU has nowhere to go.
gpu_access "$(cg_path "$cg") none"
in_cg "$cg" criu_restore "$imgs"
rc=$?
log=$(ls -t "$RESULTS_DIR"/restore*.log | head -n1)
if [ "$rc" -ne 0 ] && ! kill -0 "$pid" 2>/dev/null; then
	tap_ok "restore into a container without GPUs fails, no task left"
else
	tap_not_ok "restore into a container without GPUs fails, no task left" "criu status $rc"
	wl_kill "$pid"
fi
tap_check "the plugin says why" grep -q 'amdgpu_plugin: .*GPU' "$log"
grep -m2 'amdgpu_plugin: .*\(GPU\|fail\)' "$log" | sed 's/^/#   /'

gpu_access clear
gpu_access "$(cg_path "$cg") ${new_ids[0]}"
in_cg "$cg" criu_restore "$imgs"
rc=$?
log=$(ls -t "$RESULTS_DIR"/restore*.log | head -n1)
if [ "$rc" -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
	tap_ok "criu inside the container restores onto its one GPU ${new_ids[0]}"
else
	tap_not_ok "criu inside the container restores onto its one GPU" "criu status $rc: $(grep -m3 Error "$log")"
	tap_done
fi
tap_check "GPU map ${ids[1]} -> ${new_ids[0]}" grep -q "GPU map (image -> local) ${ids[1]}->${new_ids[0]}\$" "$log"
tap_restored_in_cg "$cg" w51

wl_end "$pid" "$imgs"
gpu_access clear
emu_unload
tap_done
