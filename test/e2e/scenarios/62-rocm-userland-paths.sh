#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The other ways through criu for a process of today's ROCm (see 61): each ROCm userland's runtime
# workload (rocr_workload, chrooted into its root) on the first GPU of 2xmi210
# (ROCR_VISIBLE_DEVICES=0, so that its images stay within the guest's memory: a stream has no
# holes, and carries the runtime's 140 MiB of zeroed VRAM as bytes):
#  - through criu's image streamer, restored on other gpu_ids: each plugin image read once, in
#    the order it was streamed; the task is the one that was dumped, every byte verifies, its
#    queues run;
#  - dump -R: the task runs on;
#  - criu killed while KFD holds the queues paused: the guard resumes them, the task runs on.
# The same for HIP's host API workload with -R. Then a process tree: a parent forks both
# workloads, each on the node's first GPU (ROCR_VISIBLE_DEVICES, as a job of one process per GPU
# sets it); criu dumps the tree from the parent and restores it on other gpu_ids.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
userland_private_mounts "$@"
e2e_begin
userland_require

img=/tmp/img-62 stream=/tmp/stream-62
WL_ENV=ROCR_VISIBLE_DEVICES=0

# rocr_paths <tag>
rocr_paths() {
	local tag=$1
	wl_fresh rocr preset=2xmi210 -- --gpus 1 --vram-mb 2 || return
	task_snapshot "$pid" "$RESULTS_DIR/rocr.dumped"
	stream_dump "$tag" "$pid" "$img" "$stream"
	wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
	emu_reload_or_say "$tag: reload with other gpu_ids" preset=2xmi210 gpu_ids=0x0e01,0x0e02 || return
	if stream_restore "$img" "$stream"; then
		tap_ok "$tag: criu restore --stream on other gpu_ids"
	else
		tap_not_ok "$tag: criu restore --stream on other gpu_ids" "$(criu_log_names "$CRIU_LAST_LOG")"
	fi
	rm -rf "$img" "$stream"
	tap_same_order "$tag"
	tap_same_task "$tag: restored from a stream" "$RESULTS_DIR/rocr.dumped" "$pid"
	tap_alive_verified "$tag: restored from a stream" "$pid" "$state" || return

	tap_dump "$tag: criu dump -R" "$pid" "$img" -R
	rm -rf "$img"
	tap_alive_verified "$tag: left running" "$pid" "$state" || return

	# KFD's CHECKPOINT stalls with the queues paused; criu dies there.
	echo "criu-stall 1 1 30000" >"$EMU_DEBUGFS/fault"
	mkdir -p "$img"
	criu_start dump -t "$pid" -D "$img" --link-remap
	if wait_for "emu_queues_paused $pid" 60; then
		criu_kill_now /dev/null
		tap_ok "$tag: criu killed with the queues paused"
		tap_check "$tag: the guard resumes the queues" wait_for "! emu_queues_paused $pid" 20
		tap_alive_verified "$tag: after criu's death" "$pid" "$state"
		tap_check "$tag: the guard is gone" wait_for guard_gone 5
	else
		criu_kill_now /dev/null
		tap_not_ok "$tag: criu dump pauses the queues" "$(criu_log_names "$CRIU_LAST_LOG")"
	fi
	rm -rf "$img"
	wl_kill "$pid"
}

# process_tree <tag> <workloads...>: a parent forks the workloads, each on the first GPU; criu
# dumps the tree and restores it on other gpu_ids
process_tree() {
	local tag=$1 img=/tmp/img-62-tree parent w p states=() pids=() want children
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
	rocr_paths "ROCm $version rocr"
	if [[ " $(userland_workloads "$version") " == *" hip "* ]] &&
		wl_fresh hip preset=2xmi210 -- --gpus 1 --vram-mb 2; then
		tap_dump "ROCm $version hip: criu dump -R" "$pid" "$img" -R
		rm -rf "$img"
		tap_alive_verified "ROCm $version hip: left running" "$pid" "$state"
		wl_kill "$pid"
	fi
	# shellcheck disable=SC2046 # the list of workloads
	process_tree "ROCm $version" $(userland_workloads "$version")
	userland_leave
done
e2e_done
