# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# The sink-bound node's slow sink, for the benchmarks that checkpoint onto it (node-shapes.sh,
# incremental.sh). Sourced in the guest after test/vm/lib.sh, from the repo root. Real nodes copy
# GPU memory at tens of GB/s and write images at a few GB/s (NVMe, network): here the images go to
# ext4 on a loop device over guest RAM that one cgroup may read and write only at a set rate
# (cgroup v2 io.max). The caller sets `trap sink_cleanup EXIT`.
#
#   sink_setup <MiB> <MB/s>   the loop device (<MiB>, a sparse file in the guest's tmpfs: size it
#                             for the images kept at once), ext4 on it mounted on $SINK_MNT, and
#                             the cgroup $SINK_CG limited to <MB/s> of reads and of writes on it;
#                             prints what it set up
#   sink_dirty_small          the page cache's dirty limits at 8 and 4 MiB, so that writes meet
#                             the limit instead of waiting in memory
#   sink_dirty_restore        the dirty limits as they were (sink_cleanup does it too)
#   sink_enter                this shell, and from then on what it starts (criu, the workloads:
#                             criu restores a task into the cgroup it was dumped from, and the
#                             plugin reads the images in the restored task), into $SINK_CG
#   sink_leave                this shell back into the root cgroup
#   sink_drop_caches          sync and drop the page cache (before a restore: reads meet the limit)
#   sink_trim                 give the blocks of deleted images back to the guest's RAM
#   sink_cleanup              all of it undone

SINK_CG=/sys/fs/cgroup/bench-sink
SINK_MNT=/run/bench-sink
SINK_FILE=/tmp/bench-sink.img
sink_loopdev=
sink_dirty_saved=

sink_setup() {
	local mib=$1 mbps=$2 majmin
	modprobe loop && modprobe ext4 || return 1
	truncate -s "${mib}M" "$SINK_FILE" &&
		sink_loopdev=$(losetup -f --show "$SINK_FILE") &&
		mkfs.ext4 -q -F "$sink_loopdev" && mkdir -p "$SINK_MNT" && mount "$sink_loopdev" "$SINK_MNT" || return 1
	majmin=$(($(stat -c '0x%t' "$sink_loopdev"))):$(($(stat -c '0x%T' "$sink_loopdev")))
	mkdir -p "$SINK_CG" &&
		echo "$majmin rbps=$((mbps * 1000000)) wbps=$((mbps * 1000000))" >"$SINK_CG/io.max" || return 1
	echo "sink-bound sink: ext4 on $sink_loopdev ($majmin), io.max $(cat "$SINK_CG/io.max")"
}

sink_dirty_small() {
	local v
	if [ -z "$sink_dirty_saved" ]; then
		for v in dirty_bytes dirty_ratio dirty_background_bytes dirty_background_ratio; do
			sink_dirty_saved+="$(cat /proc/sys/vm/$v) "
		done
	fi
	echo $((8 << 20)) >/proc/sys/vm/dirty_bytes
	echo $((4 << 20)) >/proc/sys/vm/dirty_background_bytes
}

sink_dirty_restore() {
	# shellcheck disable=SC2086 # four words
	[ -z "$sink_dirty_saved" ] || sink_dirty_put_back $sink_dirty_saved
	sink_dirty_saved=
}

sink_enter() { echo "$BASHPID" >"$SINK_CG/cgroup.procs"; }
sink_leave() { echo "$BASHPID" >/sys/fs/cgroup/cgroup.procs; }

sink_drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# ext4 discards its free blocks, and the loop device punches them out of its file.
sink_trim() { fstrim "$SINK_MNT" 2>/dev/null; }

sink_cleanup() {
	grep -qx "$BASHPID" "$SINK_CG/cgroup.procs" 2>/dev/null && sink_leave
	umount "$SINK_MNT" 2>/dev/null
	[ -z "$sink_loopdev" ] || losetup -d "$sink_loopdev" 2>/dev/null
	rm -f "$SINK_FILE"
	rmdir "$SINK_CG" 2>/dev/null
	sink_dirty_restore
}

# sink_dirty_put_back <bytes> <ratio> <background bytes> <background ratio>: the kernel refuses 0
# as a limit in bytes; writing the ratio is what turns the limit in bytes off.
sink_dirty_put_back() {
	local bytes=$1 ratio=$2 bg_bytes=$3 bg_ratio=$4
	if [ "$bytes" -gt 0 ]; then
		echo "$bytes" >/proc/sys/vm/dirty_bytes
	else
		echo "$ratio" >/proc/sys/vm/dirty_ratio
	fi
	if [ "$bg_bytes" -gt 0 ]; then
		echo "$bg_bytes" >/proc/sys/vm/dirty_background_bytes
	else
		echo "$bg_ratio" >/proc/sys/vm/dirty_background_ratio
	fi
}
