#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A GPU model mismatch is refused: dump on 2xmi210 (MI210, device 0x740f), restore after the
# emulator is reloaded as mi250x (device 0x740c), for both workloads. criu restore fails, its log
# names the GPU, the property and both values, and no restored task (nor KFD process) is left.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# restore_other_model <w>: the scenario for one workload, started (pid, state, img)
restore_other_model() {
	local w=$1
	tap_dump_gone "$w: criu dump on 2xmi210" "$pid" "$state" "$img"

	emu_reload_or_say "$w: reload the emulator as mi250x" preset=mi250x || return
	tap_restore_fails "$w: criu restore on mi250x fails" "$img"
	tap_log_has "$w: the log names the GPU, device_id and both values" "$CRIU_LAST_LOG" \
		'amdgpu_plugin: .*gpu 0x(c1e6|2b8c) .*no local GPU fits.*has device_id 0x740c, not 0x740f'
	tap_no_task "$w: no restored task is left" "$pid" "$state"
	tap_no_kfd_process "$w: no KFD process is left in the emulator"
}
for_each_workload restore_other_model
e2e_done
