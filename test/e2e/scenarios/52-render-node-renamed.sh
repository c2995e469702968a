#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Upstream criu#2723: in the restoring environment the render node the KFD topology names
# (drm_render_minor) does not exist under that name (a container exposed it as another
# renderD*). The restore must fail with an error that names the missing path and the GPU —
# not report success after handing KFD an fd of -77 — and leave no task running. With the node
# back under its name, the same images restore and verify.
# timeout: 300
. test/vm/lib.sh
. test/e2e/resource-lib.sh

[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
[ -n "$CRIU_LIBDIR" ] || { echo "plugin not built (plugins/amdgpu/amdgpu_plugin.so)"; exit 77; }
[ -x test/e2e/bin/kfd_workload ] || { echo "workloads not built (make -C test/e2e)"; exit 77; }

emu_load preset=2xmi210 || exit 1
state=$RESULTS_DIR/w52.state
imgs=$RESULTS_DIR/images
rm -rf "$imgs"
if ! wl_start pid w52 "$state" kfd_workload; then
	tap_not_ok "kfd_workload starts"
	tap_done
fi
task_snapshot "$pid" "$RESULTS_DIR/w52.dumped"
criu_dump "$pid" "$imgs"
rc=$?
if [ "$rc" -eq 0 ] && wait_for "! kill -0 $pid 2>/dev/null" 10; then
	tap_ok "dumped"
else
	tap_not_ok "dumped" "criu status $rc: $(grep -m3 Error "$CRIU_LAST_LOG")"
	wl_stop "$pid"
	tap_done
fi

emu_reload preset=2xmi210 gpu_ids=0x4d01,0x4d02 render_minor_base=150 || { tap_not_ok "emulator reload"; tap_done; }
mapfile -t nodes < <(emu_gpu_nodes)
mapfile -t ids < <(gpu_ids_hex)
minor=$(emu_node_prop "${nodes[1]}" drm_render_minor)
node=/dev/dri/renderD$minor
moved=/dev/dri/renderD$((minor + 20))
mv "$node" "$moved" || { tap_not_ok "rename $node"; tap_done; }
trap '[ ! -e "$moved" ] || mv "$moved" "$node"' EXIT

criu_restore "$imgs"
rc=$?
fail_log=$CRIU_LAST_LOG
if [ "$rc" -ne 0 ]; then
	tap_ok "restore fails while $node is missing"
else
	tap_not_ok "restore fails while $node is missing" "criu restore succeeded"
fi
tap_check "the plugin's error names $node and GPU ${ids[1]}" \
	grep -q "amdgpu_plugin: .*$node.*${ids[1]}" "$fail_log"
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
	wl_stop "$pid"
fi
tap_check "the emulator holds no KFD process" \
	wait_for "! grep -q '^pid\\|^process' /sys/kernel/debug/amdgpu_emu/processes" 10

mv "$moved" "$node"
criu_restore "$imgs"
rc=$?
if [ "$rc" -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
	tap_ok "with $node back, the same images restore"
else
	tap_not_ok "with $node back, the same images restore" "criu status $rc: $(grep -m3 Error "$CRIU_LAST_LOG")"
	tap_done
fi
tap_wl_check "restored workload verifies" "$pid" USR1 "$state" 120
tap_wl_check "restored queues beat" "$pid" USR2 "$state" 60
tap_same_task "restored" "$RESULTS_DIR/w52.dumped" "$pid"

kill -TERM "$pid"
wait_for "! kill -0 $pid 2>/dev/null" 30 || wl_stop "$pid"
[ "$TAP_FAILED" -ne 0 ] || rm -rf "$imgs"
emu_unload
tap_done
