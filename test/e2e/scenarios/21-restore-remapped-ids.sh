#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# "Another node": dump on 2xmi210, reload the emulator with other gpu_ids and render minors,
# restore, for both workloads (with different VRAM per GPU). The plugin maps the image's GPUs onto
# the new ones; the task keeps the gpu_ids it knows, maps its BOs through the new render nodes,
# verifies every byte and runs its queues again.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

new_ids=0x1234,0x4321 new_base=140
for w in kfd hsakmt; do
	wl_fresh "$w" preset=2xmi210 -- --vram-mb 3,2 --bo-mb 2 || continue
	img=/tmp/img-21-$w
	task_snapshot "$pid" "$RESULTS_DIR/$w.dumped"
	tap_dump_gone "$w: criu dump" "$pid" "$state" "$img"

	if ! emu_reload preset=2xmi210 gpu_ids=$new_ids render_minor_base=$new_base; then
		tap_not_ok "$w: reload the emulator with gpu_ids $new_ids, render minors from $new_base"
		continue
	fi
	tap_restore "$w: criu restore onto gpu_ids $new_ids" "$img"
	tap_log_has "$w: the plugin mapped the image's GPUs onto the new ids" "$CRIU_LAST_LOG" \
		'GPU map \(image -> local\) 0x[0-9a-f]+->0x(1234|4321), 0x[0-9a-f]+->0x(1234|4321)'
	users=$(awk -v pid="$pid" '$1 == "process" { cur = ($3 == pid) } cur && $1 == "gpu" { print $4 }' \
		/sys/kernel/debug/amdgpu_emu/processes | sort | tr '\n' ' ')
	want=$(state_gpu_ids "$state" | sort | tr '\n' ' ')
	if [ -n "$users" ] && [ "$users" = "$want" ]; then
		tap_ok "$w: the task still knows its GPUs by their old gpu_ids ($want)"
	else
		tap_not_ok "$w: the task still knows its GPUs by their old gpu_ids ($want)" "emulator: ${users:-none}"
	fi
	if grep -q 'renderD14[01]' "/proc/$pid/maps" 2>/dev/null && ! grep -q 'renderD12[89]' "/proc/$pid/maps"; then
		tap_ok "$w: its BOs are mapped through the new render nodes"
	else
		tap_not_ok "$w: its BOs are mapped through the new render nodes" \
			"$(grep -o 'renderD[0-9]*' "/proc/$pid/maps" 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
	fi
	tap_same_bos "$w: every BO at its VA with its handle (emulator view)" "$pid" "$state"
	tap_alive_verified "$w: restored on other ids" "$pid" "$state"
	tap_same_task "$w: restored on other ids" "$RESULTS_DIR/$w.dumped" "$pid"
	wl_kill "$pid"
done
e2e_done
