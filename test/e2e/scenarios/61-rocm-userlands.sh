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
# Then a process tree: a parent forks both workloads, each on the node's first GPU
# (ROCR_VISIBLE_DEVICES, as a job of one process per GPU sets it); criu dumps the tree from the
# parent and restores it on other gpu_ids. A ROCm 6.x process holds about 60 MiB of host memory per
# queue on this GPU (its context save area, which the GPU's driver keeps resident), so images run
# to hundreds of MiB: each goes once restored. The trixie guest builds the roots; under whichever
# criu the suite runs (make check: ROCm 6.4.3 alone, ROCM_USERLANDS). Scenario 62 takes the other
# ways through criu; 83, containers.
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

# process_tree <tag> <workloads...>: a parent forks the workloads, each on the first GPU; criu
# dumps the tree and restores it on other gpu_ids
process_tree() {
	local tag=$1 img=/tmp/img-61-tree parent w p states=() pids=() want children
	shift
	emu_reload_or_say "$tag: load the emulator (2xmi210)" preset=2xmi210 || return
	for w in "$@"; do
		states+=("$RESULTS_DIR/tree-$w.state")
		rm -f "$RESULTS_DIR/tree-$w.state"*
	done
	# shellcheck disable=SC2016 # the parent's own script
	spawn parent tree bash -c '
		root=$1 bin=$2 out=$3
		shift 3
		for w in "$@"; do
			ROCR_VISIBLE_DEVICES=0 chroot "$root" "$bin/${w}_workload" --state "$out/tree-$w.state" \
				--gpus 1 --vram-mb 2 >"$out/tree-$w.out" 2>&1 &
		done
		wait' tree "$WL_ROOT" "$WL_BIN" "$RESULTS_DIR" "$@"
	if ! wait_for "$(printf "[ -s '%s' ] && " "${states[@]}") true" 180; then
		tap_not_ok "$tag: the tree's workloads get ready"
		tail -n 5 "$RESULTS_DIR"/tree-*.out | sed 's/^/#   /'
		kill -KILL "$parent" $(pgrep -P "$parent") 2>/dev/null
		return
	fi
	for p in "${states[@]}"; do
		pids+=("$(awk '$1 == "pid" { print $2 }' "$p")")
	done
	want=$(printf '%s\n' "${pids[@]}" | sort | tr '\n' ' ')
	for p in "${!pids[@]}"; do
		task_snapshot "${pids[$p]}" "$RESULTS_DIR/tree-$p.dumped"
	done
	tap_dump "$tag: criu dump of the tree ($*) from the parent" "$parent" "$img"
	tap_image_files "$tag: one amdgpu-kfd image per GPU process" "$#" "$img"/amdgpu-kfd-*.img
	wait_for "task_gone $parent /nonexistent" 10 || kill -KILL "$parent" "${pids[@]}" 2>/dev/null
	for p in "${!pids[@]}"; do
		wait_for "task_gone ${pids[$p]} '${states[$p]}'" 10
	done
	emu_reload_or_say "$tag: reload with other gpu_ids" preset=2xmi210 gpu_ids=0x0e01,0x0e02 || return
	tap_restore "$tag: criu restore of the tree on other gpu_ids" "$img"
	rm -rf "$img"
	children=$(pgrep -P "$parent" | sort | tr '\n' ' ')
	tap_check "$tag: the workloads are the parent's children again ($children)" test "$children" = "$want"
	for p in "${!pids[@]}"; do
		tap_alive_verified "$tag: tree, ${*:p+1:1}" "${pids[$p]}" "${states[$p]}"
		tap_same_task "$tag: tree, ${*:p+1:1}" "$RESULTS_DIR/tree-$p.dumped" "${pids[$p]}"
	done
	kill -KILL "$parent" "${pids[@]}" 2>/dev/null
}

for version in $(userland_versions); do
	label=$(userland_label "$version")
	log "$label, under criu $(criu_version)"
	userland_enter "$version" || { tap_not_ok "$label: its root's binds"; continue; }
	workloads=$(userland_workloads "$version")
	for w in $workloads; do
		one_workload "ROCm $version $w" "$w"
	done
	# shellcheck disable=SC2086 # the list of workloads
	process_tree "ROCm $version" $workloads
	userland_leave
done
e2e_done
