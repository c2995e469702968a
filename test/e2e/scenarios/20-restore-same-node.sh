#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Dump, kill and restore on the same emulated node (2xmi210), for both workloads: the restored
# task has every BO at the same VA with the same handle, every byte, its mappings and events, and
# its queues run again (SIGUSR1 VERIFY OK, SIGUSR2 HEARTBEAT OK). The GPU copy runs in the restore
# guard beside criu's own restore, and the log says so; with KFD_OVERLAP_COPY=0 it runs in the task,
# in series, and the log says that.
# timeout: 300
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# restore_same_node <w>: the scenario for one workload, started (pid, state, img)
restore_same_node() {
	local w=$1
	tap_verify "$w: VERIFY OK before the dump" "$pid" "$state"
	task_snapshot "$pid" "$RESULTS_DIR/$w.dumped"
	tap_dump "$w: criu dump" "$pid" "$img"
	missing=""
	for id in $(state_gpu_ids "$state"); do
		ls "$img"/amdgpu-pages-*-"$(printf %04x "$id")".img >/dev/null 2>&1 || missing+=" pages of $id"
	done
	ls "$img"/amdgpu-kfd-*.img >/dev/null 2>&1 || missing+=" amdgpu-kfd"
	if [ -z "$missing" ]; then
		tap_ok "$w: the image has amdgpu-kfd and one pages file per GPU"
	else
		tap_not_ok "$w: the image has amdgpu-kfd and one pages file per GPU" "missing:$missing"
	fi
	wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
	tap_check "$w: the dumped task is gone" task_gone "$pid" "$state"

	# criu 4.1+ lists the plugins a restore needs in the inventory: a plugin directory without ours
	# must make it say so. (With no --libdir and no /usr/lib/criu, as in a trixie root without the
	# package, criu loads no plugin and checks nothing: the directory is given, empty.)
	if criu_has_inventory_plugins; then
		if CRIU_LIBDIR=$(mktemp -d) wl_restore "$img" >/dev/null 2>&1; then
			tap_not_ok "$w: a restore without the plugin fails naming it" "it succeeded"
			wl_kill "$pid"
		else
			tap_log_has "$w: a restore without the plugin fails naming it" "$CRIU_LAST_LOG" \
				'Missing required plugin: amdgpu_plugin'
		fi
	else
		tap_skip "$w: a restore without the plugin fails naming it" "criu $(criu_version) has no inventory plugin list"
	fi
	tap_restore "$w: criu restore" "$img"
	tap_log_has "$w: the plugin resumed the queues" "$CRIU_LAST_LOG" "amdgpu_plugin: pid $pid: GPU queues resumed"
	tap_same_bos "$w: every BO at its VA with its handle (emulator view)" "$pid" "$state"
	tap_alive_verified "$w: restored" "$pid" "$state"
	tap_same_task "$w: restored" "$RESULTS_DIR/$w.dumped" "$pid"
	tap_log_has "$w: the GPU copy ran in the restore guard, beside criu's own restore of the task" \
		"$CRIU_LAST_LOG" "amdgpu_plugin: pid $pid: restore: GPU copy [0-9.]+ s beside criu's own work of [0-9.]+ s"

	# KFD_OVERLAP_COPY=0: the task copies, in series with criu's own work, and says so
	tap_dump_gone "$w: criu dump again" "$pid" "$state" "$img-series"
	CRIU_ENV=(KFD_OVERLAP_COPY=0)
	tap_restore "$w: criu restore with KFD_OVERLAP_COPY=0" "$img-series"
	CRIU_ENV=()
	tap_log_has "$w: with KFD_OVERLAP_COPY=0 the copy ran in the task, in series" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: pid [0-9]+: restore: GPU copy [0-9.]+ s in series with criu's own work \(KFD_OVERLAP_COPY=0\)"
	tap_alive_verified "$w: restored with the copy in series" "$pid" "$state"
	wl_kill "$pid"
}
for_each_workload restore_same_node
e2e_done
