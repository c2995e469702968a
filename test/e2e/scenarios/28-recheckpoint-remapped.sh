#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Re-checkpoint of a restored process whose gpu_ids were remapped (Documentation/upstream-compatibility.md §2.3:
# upstream's dump threads select BOs by the actual gpu_id while KFD reports the user one), for
# both workloads: dump on gpu_ids A, restore on B, dump again, restore on C, verify. The second
# image must carry the gpu_ids the process knows (A) and every BO's contents.
# timeout: 240
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

# pages_ids <dir>: the gpu_ids of the amdgpu-pages files in an image directory, sorted, one line.
pages_ids() {
	ls "$1" | sed -n 's/^amdgpu-pages-[0-9]*-\([0-9a-f]*\)\.img$/0x\1/p' | sed 's/^0x0*/0x/' | sort | tr '\n' ' '
}

for w in kfd hsakmt; do
	if ! emu_reload preset=2xmi210; then
		tap_not_ok "$w: load the emulator (2xmi210)"
		continue
	fi
	wl_start "$w" "$w" --vram-mb 3,2 --bo-mb 2 || { tap_not_ok "$w: the workload gets ready"; continue; }
	pid=$WL_PID state=$WL_STATE img1=/tmp/img-28a-$w img2=/tmp/img-28b-$w
	user_ids=$(state_gpu_ids "$state" | sort | tr '\n' ' ')
	task_snapshot "$pid" "$RESULTS_DIR/$w.dumped"
	tap_dump_gone "$w: first dump on gpu_ids $user_ids" "$pid" "$state" "$img1"

	emu_reload preset=2xmi210 gpu_ids=0x1111,0x2222 render_minor_base=140 ||
		{ tap_not_ok "$w: reload with gpu_ids 0x1111,0x2222"; continue; }
	tap_restore "$w: restore on gpu_ids 0x1111,0x2222" "$img1"
	tap_verify "$w: VERIFY OK after the first restore" "$pid" "$state"
	tap_same_task "$w: restored once" "$RESULTS_DIR/$w.dumped" "$pid"

	tap_dump "$w: second dump of the remapped process" "$pid" "$img2"
	got=$(pages_ids "$img2")
	if [ "$got" = "$user_ids" ]; then
		tap_ok "$w: upstream defect §2.3: the second image's pages files carry the user gpu_ids ($got)"
	else
		tap_not_ok "$w: upstream defect §2.3: the second image's pages files carry the user gpu_ids ($user_ids)" \
			"pages files for: ${got:-none}"
	fi
	for f in "$img1"/amdgpu-pages-*.img; do
		g=$(ls "$img2"/amdgpu-pages-*-"${f##*-}" 2>/dev/null)
		if [ -n "$g" ] && [ "$(stat -c %s "$f")" = "$(stat -c %s "$g")" ]; then
			tap_ok "$w: upstream defect §2.3: ${f##*-} holds as many bytes in both images"
		else
			tap_not_ok "$w: upstream defect §2.3: ${f##*-} holds as many bytes in both images" \
				"$(stat -c %s "$f") vs ${g:+$(stat -c %s "$g")}"
		fi
	done
	wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"

	emu_reload preset=2xmi210 gpu_ids=0x3333,0x4444 render_minor_base=150 ||
		{ tap_not_ok "$w: reload with gpu_ids 0x3333,0x4444"; continue; }
	tap_restore "$w: restore of the second image on gpu_ids 0x3333,0x4444" "$img2"
	tap_same_bos "$w: every BO at its VA with its handle (emulator view)" "$pid" "$state"
	tap_alive_verified "$w: restored twice" "$pid" "$state"
	tap_same_task "$w: restored twice" "$RESULTS_DIR/$w.dumped" "$pid"
	wl_kill "$pid"
done
e2e_done
