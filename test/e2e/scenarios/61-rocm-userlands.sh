#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Processes of today's ROCm under criu, run as bare processes are on a node where that ROCm is
# installed: each ROCm userland test/vm/rocm-root.sh built from Debian's archive, its workloads
# built in it (rocr_workload: ROCr's own queues, SDMA copies and AQL barriers; hip_workload: HIP's
# host API, its copies on the SDMA engines), chrooted into its root (test/e2e/lib/userlands.sh).
# For each workload, on 2xmi210: dumped, and restored on a larger node with other gpu_ids and
# render minors (4xmi210): the image's two GPUs map onto two of the four; the task is the one that
# was dumped, every byte verifies, its queues run.
# A ROCm 6.x process holds about 60 MiB of host memory per
# queue on this GPU (its context save area, which the GPU's driver keeps resident), so images run
# to hundreds of MiB: each goes once restored. The trixie guest builds the roots; under whichever
# criu the suite runs (make check: ROCm 6.4.3 alone, ROCM_USERLANDS). A root whose glibc is 2.42 or
# newer (sid's) gives every thread stack a guard region (MADV_GUARD_INSTALL, Linux 6.13), which
# criu before 4.2 cannot dump: there the dump must fail, and the task run on, verified, with its
# queues running (what a failed dump owes it). Scenario 62 takes the other
# ways through criu (a stream, -R, criu killed, a process tree); 83, containers.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
userland_private_mounts "$@"
e2e_begin
userland_require

# one_workload <tag> <w>: the scenario for one workload of the userland entered
one_workload() {
	local tag=$1 w=$2 img=/tmp/img-61
	wl_fresh "$w" preset=2xmi210 -- --vram-mb 2 || return
	tap_verify "$tag: before the dump" "$pid" "$state"
	task_snapshot "$pid" "$RESULTS_DIR/$w.dumped"
	if ! userland_criu_dumps "$version"; then
		if wl_dump "$pid" "$img"; then
			tap_not_ok "$tag: criu $(criu_version) cannot dump thread stacks with guard regions" "the dump succeeded"
		else
			tap_log_has "$tag: criu $(criu_version) fails to dump a thread stack's guard region (glibc >= 2.42; criu 4.2 can)" \
				"$CRIU_LAST_LOG" "Can't splice all pages to pipe|Can't dump page with parasite"
		fi
		rm -rf "$img"
		tap_alive_verified "$tag: after the failed dump" "$pid" "$state"
		tap_same_task "$tag: after the failed dump" "$RESULTS_DIR/$w.dumped" "$pid"
		wl_kill "$pid"
		return
	fi

	tap_dump_gone "$tag: criu dump" "$pid" "$state" "$img" || { wl_kill "$pid"; return; }
	emu_reload_or_say "$tag: reload as 4xmi210 with other gpu_ids" preset=4xmi210 \
		gpu_ids=0x0e01,0x0e02,0x0e03,0x0e04 render_minor_base=140 || return
	tap_restore "$tag: criu restore on a larger node with other gpu_ids" "$img"
	rm -rf "$img"
	tap_log_has "$tag: the image's two GPUs map onto two of the four" "$CRIU_LAST_LOG" \
		'GPU map \(image -> local\) 0x[0-9a-f]+->0x[0-9a-f]+, 0x[0-9a-f]+->0x[0-9a-f]+$'
	tap_same_task "$tag: restored on other gpu_ids" "$RESULTS_DIR/$w.dumped" "$pid" --larger-node
	tap_alive_verified "$tag: restored on other gpu_ids" "$pid" "$state"
	wl_kill "$pid"
}

for version in $(userland_versions); do
	label=$(userland_label "$version")
	log "$label, under criu $(criu_version)"
	userland_enter "$version" || { tap_not_ok "$label: its root's binds"; continue; }
	for w in $(userland_workloads "$version"); do
		one_workload "ROCm $version $w" "$w"
	done
	userland_leave
done
e2e_done
