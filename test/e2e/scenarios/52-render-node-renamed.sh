#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Upstream criu#2723/#2888: in the restoring environment a GPU's render node is not where the
# KFD topology's drm_render_minor says (a container given the GPU under another device path).
#  - The node is not in /dev/dri at all: the restore fails with an error that names the path,
#    the GPU and the device number it looked for — not success after handing KFD an fd of -77 —
#    and leaves no task and no KFD process.
#  - The two GPUs' nodes swapped names: the plugin finds each GPU's node by its device number,
#    not by the name (which now opens the other GPU), and the same images restore and verify.
# timeout: 300
. test/vm/lib.sh
. test/e2e/resource-lib.sh

resource_require kfd

emu_load preset=2xmi210 || exit 1
state=$RESULTS_DIR/w52.state
imgs=$RESULTS_DIR/images
rm -rf "$imgs"
if ! wl_start kfd w52; then
	tap_not_ok "kfd_workload starts"
	tap_done
fi
pid=$WL_PID
task_snapshot "$pid" "$RESULTS_DIR/w52.dumped"
tap_dumped_or_end "dumped" "$pid" "$imgs"

emu_reload preset=2xmi210 gpu_ids=0x4d01,0x4d02 render_minor_base=150 || { tap_not_ok "emulator reload"; tap_done; }
mapfile -t nodes < <(emu_gpu_nodes)
mapfile -t ids < <(gpu_ids_hex)
minor=$(emu_node_prop "${nodes[1]}" drm_render_minor)
other=/dev/dri/renderD$(emu_node_prop "${nodes[0]}" drm_render_minor)
node=/dev/dri/renderD$minor
away=/run/renderD$minor.away
mv "$node" "$away" || { tap_not_ok "move $node out of /dev/dri"; tap_done; }
trap '[ ! -e "$away" ] || mv "$away" "$node"' EXIT

criu_restore "$imgs"
rc=$?
fail_log=$CRIU_LAST_LOG
if [ "$rc" -ne 0 ]; then
	tap_ok "restore fails while $node is missing"
else
	tap_not_ok "restore fails while $node is missing" "criu restore succeeded"
fi
tap_check "the plugin's error names GPU ${ids[1]}, $node and device 226:$minor" \
	grep -q "amdgpu_plugin: .*${ids[1]}.*$node.*226:$minor" "$fail_log"
grep -m1 "amdgpu_plugin: .*$node" "$fail_log" | sed 's/^/#   /'
if grep -q 'amdgpu_plugin: .*restored amdgpu-kfd' "$fail_log"; then
	tap_not_ok "the plugin does not report the KFD restore as done" "$(grep -m1 'restored amdgpu-kfd' "$fail_log")"
else
	tap_ok "the plugin does not report the KFD restore as done"
fi
if wait_for "! kill -0 $pid 2>/dev/null" 10; then
	tap_ok "no task left running"
else
	tap_not_ok "no task left running" "pid $pid: $(tr '\0' ' ' </proc/"$pid"/cmdline)"
	wl_kill "$pid"
fi
tap_check "the emulator holds no KFD process" \
	wait_for "! grep -q '^pid\\|^process' /sys/kernel/debug/amdgpu_emu/processes" 10

# the two nodes' names swapped: by name, each would open the other GPU
mv "$other" "$node" && mv "$away" "$other" || { tap_not_ok "swap the render nodes' names"; tap_done; }
unswap() { mv "$node" "$away" && mv "$other" "$node" && mv "$away" "$other" && trap - EXIT; }
trap unswap EXIT
tap_restored_or_end "with the nodes' names swapped, the same images restore" "$pid" "$imgs"
tap_check "the plugin says where it found GPU ${ids[1]}'s node" \
	grep -q "amdgpu_plugin: GPU ${ids[1]}: its render node renderD$minor is $other" "$CRIU_LAST_LOG"
tap_verify "restored workload verifies" "$pid" "$state"
tap_heartbeat "restored queues beat" "$pid" "$state"
tap_same_task "restored" "$RESULTS_DIR/w52.dumped" "$pid"

wl_end "$pid" "$imgs"
unswap
emu_unload
tap_done
