#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Restore on a larger compatible node: dump on 2xmi210, restore after the emulator is reloaded as
# 4xmi210 (four MI210s on PCIe, every per-GPU property identical), for both workloads. Two of the
# four GPUs take the image's; the task verifies every byte and runs its queues again.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# restore_larger_node <w>: the scenario for one workload, started (pid, state, img)
restore_larger_node() {
	local w=$1
	task_snapshot "$pid" "$RESULTS_DIR/$w.dumped"
	tap_dump_gone "$w: criu dump on 2xmi210" "$pid" "$state" "$img"

	emu_reload_or_say "$w: reload the emulator as 4xmi210" preset=4xmi210 render_minor_base=132 || return
	n=$(emu_gpu_nodes | wc -l)
	tap_check "$w: the node after the reload is larger: 4 GPUs ($n)" test "$n" -eq 4
	tap_restore "$w: criu restore on 4xmi210" "$img"
	tap_log_has "$w: the image's two GPUs map onto two of the four" "$CRIU_LAST_LOG" \
		'GPU map \(image -> local\) 0x[0-9a-f]+->0x[0-9a-f]+, 0x[0-9a-f]+->0x[0-9a-f]+$'
	tap_same_bos "$w: every BO at its VA with its handle (emulator view)" "$pid" "$state"
	tap_alive_verified "$w: restored on 4xmi210" "$pid" "$state"
	tap_same_task "$w: restored on 4xmi210" "$RESULTS_DIR/$w.dumped" "$pid" --larger-node
	wl_kill "$pid"
}
for_each_workload restore_larger_node
e2e_done
