#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Older firmware on the target: dump on 2xmi210 (MEC firmware 78), reload the emulator with
# fw_version=70, for both workloads. The restore is refused, naming the GPU, fw_version, both
# values and KFD_FW_VER_CHECK, with no task left; with KFD_FW_VER_CHECK=0 the same image restores
# and the task verifies and runs.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# restore_older_firmware <w>: the scenario for one workload, started (pid, state, img)
restore_older_firmware() {
	local w=$1
	task_snapshot "$pid" "$RESULTS_DIR/$w.dumped"
	tap_dump_gone "$w: criu dump with firmware 78" "$pid" "$state" "$img"

	emu_reload_or_say "$w: reload the emulator with fw_version=70" preset=2xmi210 fw_version=70 gpu_ids=0x5150,0x7170 || return
	fw=$(emu_node_prop "$(emu_gpu_nodes | head -n1)" fw_version)
	[ "$fw" = 70 ] || log "the emulator shows fw_version $fw, not 70"
	if ! tap_restore_fails "$w: criu restore onto firmware 70 fails" "$img"; then
		wl_kill "$pid"
	fi
	tap_log_has "$w: the log names the GPU, fw_version, both values and KFD_FW_VER_CHECK" "$CRIU_LAST_LOG" \
		'amdgpu_plugin: .*gpu 0x(c1e6|2b8c) .*has fw_version 70 < 78 \(KFD_FW_VER_CHECK=0 disables this check\)'
	tap_no_task "$w: no restored task is left" "$pid" "$state"
	tap_no_kfd_process "$w: no KFD process is left in the emulator"

	if KFD_FW_VER_CHECK=0 wl_restore "$img"; then
		tap_ok "$w: criu restore with KFD_FW_VER_CHECK=0"
	else
		tap_not_ok "$w: criu restore with KFD_FW_VER_CHECK=0" "$(criu_log_names "$CRIU_LAST_LOG")"
	fi
	tap_log_has "$w: the plugin took KFD_FW_VER_CHECK=0" "$CRIU_LAST_LOG" 'param: KFD_FW_VER_CHECK:N'
	tap_alive_verified "$w: restored onto firmware 70" "$pid" "$state"
	tap_same_task "$w: restored onto firmware 70" "$RESULTS_DIR/$w.dumped" "$pid"
	wl_kill "$pid"
}
for_each_workload restore_older_firmware
e2e_done
