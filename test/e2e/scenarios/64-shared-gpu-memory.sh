#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A job of several processes that share GPU memory (trixie guest): ipc_workload of each ROCm
# userland, chrooted into its root (test/e2e/lib/userlands.sh): a launcher forks two ranks, one per
# GPU of 2xmi210; each exports its shared buffer through ROCm's IPC (KFD's EXPORT_DMABUF, the fd
# handed over the runtime's Unix socket), attaches the other's (IMPORT_DMABUF), and rank 0 keeps a
# dma-buf fd of a buffer of its own open. Its verification has every rank write a fresh generation
# into every buffer through the GPU and read every buffer back: each rank must see the others'
# writes in its own buffer, and theirs in its peers'.
#  1. The job runs: every rank sees every other rank's writes; the emulator shows each attachment as
#     a BO of the rank's KFD process on the exporter's GPU.
#  2. Rank 1 dumped alone (--tree, --leave-running): it holds rank 0's buffer, which no process of
#     the dump allocated, so the dump fails before any GPU image is written, naming it as imported
#     from outside the dump; the job runs on: every rank alive with its queues running, the task
#     the one it was, the cross writes still seen.
#  3. The job dumped as a tree (criu kills it): its pages images hold the shared buffers once (no
#     more on disk than the same job without sharing, --no-ipc, + the held buffer + half a shared
#     one), the dump's log names one rank that saves each shared buffer and the rank that takes
#     it; restored on the same node, then dumped again and restored on a larger node with other
#     gpu_ids: every rank sees the others' writes, rank 0's dma-buf fd is one of its buffer's
#     dma-buf again (the same file a fresh export gives), heartbeats run, each rank is the task it
#     was.
# criu 4.1.1 cannot dump these userlands' processes at all (sid's glibc puts guard regions in thread
# stacks): there the job runs, and the checkpoints are skipped.
# timeout: 900
. test/vm/lib.sh
. test/e2e/lib.sh
userland_private_mounts "$@"
e2e_begin
userland_require

IPC_SIZE_MB=4 # each rank's shared buffer: above ROCr's 2 MiB fragment blocks, so one KFD BO
HELD_MB=2     # rank 0's buffer held as a dma-buf fd: another size than the shared ones
IPC_ARGS=(--gpus 2 --vram-mb "$IPC_SIZE_MB" --bo-mb "$HELD_MB" --hb-timeout-ms 5000)

# state_ranks <state>: "rank pid gpu_id bo_size" per rank
state_ranks() { awk '$1 == "rank" { print $2, $4, $8, $14 }' "$1"; }

# job_start <tag> <name> [args...]: the emulator freshly loaded as 2xmi210, the job started; sets
# pid, state and job_out
job_start() {
	local tag=$1 name=$2
	shift 2
	emu_reload_or_say "$tag: load the emulator (2xmi210)" preset=2xmi210 || return 1
	if ! wl_start ipc "$name" "$@"; then
		tap_not_ok "$tag: the job gets ready ($*)"
		return 1
	fi
	pid=$WL_PID state=$WL_STATE job_out=$RESULTS_DIR/$name.out
	log "$tag: launcher $pid; $(grep -E '^(rank|attach|dmabuf) ' "$state" | tr '\n' ';')"
}

# job_kill: the launcher killed; its ranks die with it
job_kill() {
	local r p
	kill -KILL "$pid" 2>/dev/null
	while read -r r p _; do
		wait_for "! kill -0 $p 2>/dev/null" 30 || kill -KILL "$p" 2>/dev/null
	done < <(state_ranks "$state")
	wait_for "! kill -0 $pid 2>/dev/null" 30
}

# last_generation: the generation of the job's last verification
last_generation() { sed -n 's/^# verify \([0-9][0-9]*\): .*/\1/p' "$job_out" | tail -n1; }

# tap_cross_writes <name> [--show]: the job's last verification saw, in every rank's own buffer,
# the write of every other rank, and in every buffer a rank attached, the writes of the others
tap_cross_writes() {
	local name=$1 n gen own peer want_own want_peer
	n=$(awk '$1 == "ranks" { print $2 }' "$state")
	gen=$(last_generation)
	own=$(grep -cE "^# verify $gen: rank [0-9]+ .* in its own buffer: rank [0-9]+'s write of generation $gen is there" "$job_out")
	peer=$(grep -cE "^# verify $gen: rank [0-9]+ .* in rank [0-9]+'s buffer \(attached at [^)]*\): rank [0-9]+'s write of generation $gen is there" "$job_out")
	want_own=$((n * (n - 1))) want_peer=$((n * (n - 1) * (n - 1)))
	[ "${2:-}" != --show ] || grep -E "^# verify $gen: " "$job_out" | sed 's/^# /#   /'
	if [ -n "$gen" ] && [ "$own" -eq "$want_own" ] && [ "$peer" -eq "$want_peer" ]; then
		tap_ok "$name: every rank sees the others' writes of generation $gen ($own in its own buffer, $peer in its peers')"
	else
		tap_not_ok "$name: every rank sees the others' writes" \
			"generation ${gen:-none}: $own of $want_own peers' writes seen in a rank's own buffer, $peer of $want_peer in a peer's"
		grep -E "^# verify $gen: .*NOT there" "$job_out" | head -n 6 | sed 's/^# /#   /'
	fi
}

# tap_attachments <name>: each attachment of the state file is, in the emulator's view of the
# rank, a BO of the peer's buffer on the peer's GPU (IMPORT_DMABUF), covering the attached range
tap_attachments() {
	local name=$1 r p va size count missing="" found bo_va bo_size gpu
	local -A rank_pid=() rank_gpu=()
	while read -r r p gpu _; do
		rank_pid[$r]=$p rank_gpu[$r]=$gpu
	done < <(state_ranks "$state")
	while read -r r p va size; do
		found=0
		while read -r gpu bo_va bo_size; do
			[ "$gpu" = "${rank_gpu[$p]}" ] || continue
			((16#${bo_va#0x} <= 16#${va#0x} && 16#${va#0x} + 16#${size#0x} <= 16#${bo_va#0x} + 16#${bo_size#0x})) &&
				found=1
		done < <(awk -v pid="${rank_pid[$r]}" '
			$1 == "process" { cur = ($3 == pid) }
			cur && $1 == "gpu" { gpu = $4 }
			cur && $1 == "bo" { print gpu, $5, $7 }
		' "$EMU_DEBUGFS/processes")
		[ "$found" -eq 1 ] ||
			missing+="rank $r (pid ${rank_pid[$r]}) has no BO on gpu ${rank_gpu[$p]} at $va (0x${size#0x} bytes); "
	done < <(awk '$1 == "attach" { print $3, $5, $7, $9 }' "$state")
	count=$(grep -c '^attach ' "$state")
	if [ -z "$missing" ] && [ "$count" -gt 0 ]; then
		tap_ok "$name: each of the $count attachments is a BO of the rank on its peer's GPU"
	else
		tap_not_ok "$name: each attachment is a BO of the rank on its peer's GPU" "${missing:-no attachment in the state file}"
	fi
}

# tap_ranks_run <name>: every rank runs, the launcher's child, its queues not paused
tap_ranks_run() {
	local name=$1 r p bad="" ppid
	while read -r r p _; do
		ppid=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null)
		if [ -z "$ppid" ]; then
			bad+="rank $r (pid $p) is gone; "
		elif [ "$ppid" != "$pid" ]; then
			bad+="rank $r (pid $p) is a child of $ppid, not of the launcher $pid; "
		elif ! wait_for "! emu_queues_paused $p" 5; then
			bad+="rank $r (pid $p) has its queues paused; "
		fi
	done < <(state_ranks "$state")
	if [ -z "$bad" ]; then
		tap_ok "$name: every rank runs, its queues not paused"
	else
		tap_not_ok "$name: every rank runs, its queues not paused" "$bad"
	fi
}

# size_ere <bytes>: an ERE for a size as a log line may write it: in bytes, in hex, in MiB or KiB
size_ere() {
	local b=$1 alts
	alts="$b|$(printf '0x%x' "$b")"
	((b % 1048576)) || alts+="|$((b / 1048576))(\\.0+)? ?Mi?B"
	((b % 1024)) || alts+="|$((b / 1024)) ?Ki?B"
	echo "(^|[^0-9A-Za-z.])($alts)([^0-9A-Za-z]|\$)"
}

# snapshot_ranks <tag>, tap_same_ranks <name> [--larger-node]: task_snapshot of every rank, compared
snapshot_ranks() {
	local r p
	while read -r r p _; do
		task_snapshot "$p" "$RESULTS_DIR/$1-rank$r.dumped"
	done < <(state_ranks "$state")
	snapshot_tag=$1
}
tap_same_ranks() {
	local name=$1 r p
	shift
	while read -r r p _; do
		tap_same_task "$name, rank $r" "$RESULTS_DIR/$snapshot_tag-rank$r.dumped" "$p" "$@"
	done < <(state_ranks "$state")
}

# pages_kib <dir>: "<on disk> <apparent>" KiB of the plugin's GPU pages images (holes: not written)
pages_kib() {
	echo "$(du -k -c "$1"/amdgpu-pages-*.img 2>/dev/null | awk 'END { print $1 }')" \
		"$(du -k -c --apparent-size "$1"/amdgpu-pages-*.img 2>/dev/null | awk 'END { print $1 }')"
}

# tap_share_roles <tag> <img> <ranks>: the dump's log says, for each shared buffer, that one rank
# saves its contents and every other takes it from that rank
tap_share_roles() {
	local tag=$1 img=$2 n=$3 saved taken
	saved=$(grep -ac 'amdgpu_plugin: .* is shared buffer [0-9]* of the dump: its contents are saved here' "$CRIU_LAST_LOG")
	taken=$(grep -ac 'amdgpu_plugin: .* is shared buffer [0-9]* of the dump: another holder saves its contents' "$CRIU_LAST_LOG")
	# the held buffer is shared with rank 0's own fd: saved, and taken by nobody
	tap_check "$tag: each of the $n IPC buffers is saved by one rank and taken by the other $((n - 1)), the held one saved ($saved saved, $taken taken)" \
		test "$saved" -eq $((n + 1)) -a "$taken" -eq $((n * (n - 1)))
}

# outside_dump <tag>: step 2
outside_dump() {
	local tag=$1 img=/tmp/img-64 r p rank1="" line
	while read -r r p _; do
		[ "$r" = 1 ] && rank1=$p
	done < <(state_ranks "$state")
	snapshot_ranks "$tag-outside"
	if wl_dump "$rank1" "$img" --leave-running; then
		tap_not_ok "$tag: criu dump of rank 1 alone fails (it holds rank 0's buffer)" \
			"the dump succeeded: $(criu_log_names "$CRIU_LAST_LOG")"
	else
		tap_ok "$tag: criu dump of rank 1 alone fails (it holds rank 0's buffer)"
	fi
	line=$(grep -a 'amdgpu_plugin' "$CRIU_LAST_LOG" | grep -aE 'none of them allocated|outside the dump' | head -n1)
	if [ -n "$line" ] && grep -Eq -- "$(size_ere $((IPC_SIZE_MB * 1048576)))" <<<"$line"; then
		tap_ok "$tag: the refusal names $IPC_SIZE_MB MiB imported from outside the dump"
		log "  $line"
	else
		tap_not_ok "$tag: the refusal names $IPC_SIZE_MB MiB imported from outside the dump" \
			"${line:-no such line}; its errors: $(criu_errors "$CRIU_LAST_LOG")"
	fi
	tap_image_files "$tag: no GPU image was written for rank 1 alone" 0 "$img"/amdgpu-*.img
	rm -rf "$img"
	tap_ranks_run "$tag: after the failed dump of rank 1"
	tap_alive_verified "$tag: after the failed dump of rank 1" "$pid" "$state"
	tap_cross_writes "$tag: after the failed dump of rank 1"
	tap_same_ranks "$tag: after the failed dump of rank 1"
}

# shared_restore <tag>: step 3
shared_restore() {
	local tag=$1 img=/tmp/img-64 base disk apparent base_disk n args=()
	# the same job without sharing: what its GPU pages images hold on disk
	job_start "$tag, no IPC" "ipc-base" "${IPC_ARGS[@]}" --no-ipc "${args[@]}" || return
	tap_dump_gone "$tag, no IPC: criu dump of the tree" "$pid" "$state" "$img" || { job_kill; return; }
	job_kill
	read -r base_disk base <<<"$(pages_kib "$img")"
	rm -rf "$img"

	job_start "$tag" "ipc-restore" "${IPC_ARGS[@]}" "${args[@]}" || return
	tap_verify "$tag: before the dump" "$pid" "$state"
	snapshot_ranks "$tag-restore"
	tap_dump_gone "$tag: criu dump of the tree" "$pid" "$state" "$img" || { job_kill; return; }
	job_kill
	read -r disk apparent <<<"$(pages_kib "$img")"
	n=$(awk '$1 == "ranks" { print $2 }' "$state")
	log "$tag: GPU pages images: $disk KiB on disk ($apparent KiB apparent); without sharing $base_disk KiB ($base KiB)"
	tap_check "$tag: the images hold the shared buffers once: $disk KiB on disk, no more than the $base_disk KiB of the job without sharing + the held $((HELD_MB * 1024)) KiB + $((IPC_SIZE_MB * 512)) KiB, and at least the buffers' $((n * IPC_SIZE_MB * 1024 + HELD_MB * 1024)) KiB" \
		test "$disk" -le $((base_disk + HELD_MB * 1024 + IPC_SIZE_MB * 512)) -a "$disk" -ge $((n * IPC_SIZE_MB * 1024 + HELD_MB * 1024))
	tap_check "$tag: rank 0's dma-buf fd is saved as the buffer it is of" \
		grep -aq 'amdgpu_plugin: saved amdgpu-dmabuf_[0-9]*.img: a dma-buf fd of shared buffer' "$CRIU_LAST_LOG"
	tap_share_roles "$tag" "$img" "$n"
	if tap_restore "$tag: criu restore of the tree on the same node" "$img"; then
		tap_ranks_run "$tag: restored on the same node"
		tap_alive_verified "$tag: restored on the same node" "$pid" "$state"
		tap_cross_writes "$tag: restored on the same node" --show
		tap_same_ranks "$tag: restored on the same node"
		rm -rf "$img"
		snapshot_ranks "$tag-restore-2"
		tap_dump_gone "$tag: criu dump of the restored tree" "$pid" "$state" "$img" || { job_kill; return; }
		job_kill
		emu_reload_or_say "$tag: reload as 4xmi210 with other gpu_ids" preset=4xmi210 \
			gpu_ids=0x0e01,0x0e02,0x0e03,0x0e04 render_minor_base=140 || return
		if tap_restore "$tag: criu restore of the tree on a larger node with other gpu_ids" "$img"; then
			tap_ranks_run "$tag: restored on other gpu_ids"
			tap_alive_verified "$tag: restored on other gpu_ids" "$pid" "$state"
			tap_cross_writes "$tag: restored on other gpu_ids" --show
			tap_same_ranks "$tag: restored on other gpu_ids" --larger-node
		fi
	fi
	rm -rf "$img"
	job_kill
}

for version in $(userland_versions); do
	label=$(userland_label "$version")
	tag="ROCm $version"
	log "$label, under criu $(criu_version)"
	userland_enter "$version" || { tap_not_ok "$label: its root's binds"; continue; }
	if [ ! -x "$WL_BIN/ipc_workload" ]; then
		tap_skip "$tag: the job of ranks" "no ipc_workload built in its root"
		userland_leave
		continue
	fi
	if job_start "$tag" ipc "${IPC_ARGS[@]}"; then
		tap_verify "$tag: the job verifies" "$pid" "$state"
		tap_cross_writes "$tag" --show
		tap_attachments "$tag"
		tap_heartbeat "$tag: heartbeats" "$pid" "$state"
		if ! userland_criu_dumps "$version"; then
			tap_skip "$tag: checkpoint of the job" "criu $(criu_version) cannot dump ROCm $version's thread stacks"
		else
			outside_dump "$tag"
		fi
		job_kill
		if userland_criu_dumps "$version"; then
			shared_restore "$tag"
		fi
	fi
	userland_leave
done
e2e_done
