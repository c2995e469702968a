#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Upstream criu#2248 (b): a container is given one of a node's two GPUs, while criu, outside it,
# sees both. The emulator hides the other GPU from the container the way the device cgroup does
# (test/emu/README.md, gpu_access): its topology attributes read EPERM, its render node does not
# open, and KFD gives the container's processes no per-device data for it. A workload in the
# container uses the one GPU it sees; criu dumps it (the image describes only that GPU), kills it,
# and restores it into the same container, where it verifies and its queue beats.
# timeout: 300
. test/vm/lib.sh
. test/e2e/resource-lib.sh

resource_require kfd

emu_load preset=2xmi210 || exit 1
mapfile -t ids < <(gpu_ids_hex)
mapfile -t nodes < <(emu_gpu_nodes)
hidden=${ids[0]} shown=${ids[1]}
hidden_minor=$(emu_node_prop "${nodes[0]}" drm_render_minor)
cg_make cg ctr50
trap 'cg_remove "$cg"' EXIT
gpu_access "$(cg_path "$cg") $shown"

# The container's view.
if out=$(in_cg "$cg" cat "$KFD_TOPOLOGY/${nodes[0]}/gpu_id" 2>&1); then
	tap_not_ok "in the container, the hidden GPU's gpu_id does not read" "it read '$out'"
else
	tap_check "in the container, the hidden GPU $hidden's gpu_id reads EPERM" grep -q 'Operation not permitted' <<<"$out"
fi
tap_check "in the container, the visible GPU's properties read" \
	in_cg "$cg" grep -q '^drm_render_minor ' "$KFD_TOPOLOGY/${nodes[1]}/properties"
if in_cg "$cg" bash -c "exec 3<>/dev/dri/renderD$hidden_minor" 2>/dev/null; then
	tap_not_ok "in the container, the hidden GPU's render node does not open"
else
	tap_ok "in the container, the hidden GPU's render node does not open"
fi
tap_check "outside, both GPUs read" cat "$KFD_TOPOLOGY/${nodes[0]}/gpu_id" "$KFD_TOPOLOGY/${nodes[1]}/gpu_id"

imgs=$RESULTS_DIR/images
rm -rf "$imgs"
wl_start_in_cg "$cg" w50
if [ "$(grep -c '^gpu ' "$state")" -eq 1 ] && grep -q "^gpu 0 .* gpu_id $shown " "$state"; then
	tap_ok "the workload sees only GPU $shown"
else
	tap_not_ok "the workload sees only GPU $shown" "$(grep '^gpu ' "$state" | tr '\n' ';')"
fi
tap_verify "verified in the container" "$pid" "$state"

task_snapshot "$pid" "$RESULTS_DIR/w50.dumped"
tap_dumped_or_end "criu (seeing both GPUs) dumps the container's workload" "$pid" "$imgs"
tap_check "the kfd image describes one GPU" grep -q 'amdgpu_plugin: pid [0-9]*: saved amdgpu-kfd-[0-9]*.img (1 GPUs' "$CRIU_LAST_LOG"
pages=("$imgs"/amdgpu-pages-*.img)
if [ "${#pages[@]}" -eq 1 ] && [ "${pages[0]%-"${shown#0x}".img}" != "${pages[0]}" ]; then
	tap_ok "one pages image, for GPU $shown"
else
	tap_not_ok "one pages image, for GPU $shown" "${pages[*]##*/}"
fi
wait_for "! kill -0 $pid 2>/dev/null" 10 || wl_kill "$pid"

tap_restored_or_end "criu restores it into the container" "$pid" "$imgs"
tap_restored_in_cg "$cg" w50

wl_end "$pid" "$imgs"
gpu_access clear
emu_unload
tap_done
