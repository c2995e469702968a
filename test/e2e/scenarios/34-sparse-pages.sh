#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Zeros cost nothing (plugins/amdgpu/images/sparse_pages.hpp): the libhsakmt workload on 2xMI210 with
# 80 % of its VRAM contents zeros in 1 MiB runs (--zeros 80).
#  - the dump leaves holes: the plugin's per-GPU lines say how much was written and how much left
#    as holes, and the pages files occupy on disk no more than what was written;
#  - the restore reads only the data (never more than the files hold on disk) and has the engine
#    fill the holes; the task verifies every byte and is the one dumped;
#  - the same images made dense, as an older plugin writes them (cp --sparse=never): they restore
#    unchanged, every byte read, nothing filled.
# timeout: 600
. test/vm/lib.sh
. test/e2e/resource-lib.sh

resource_require hsakmt

emu_load preset=2xmi210 || exit 1
state=$RESULTS_DIR/w34.state
imgs=/tmp/img-34 # the guest's tmpfs: a file system with holes
rm -rf "$imgs"
# The images are restored twice, so the dump must not need --link-remap (criu removes a link-remap
# file at the first restore). libhsakmt maps its named semaphore through the unlinked temporary
# file sem_open() makes only when it creates it: let a first libhsakmt process create it, as on a
# node that ran ROCm before (run alone, this scenario would be the first).
if wl_start hsakmt w34-first --vram-mb 8 --bo-mb 8; then
	wl_kill "$WL_PID"
fi
if ! wl_start hsakmt w34 --vram-mb 48 --bo-mb 8 --zeros 80; then
	tap_not_ok "hsakmt_workload --zeros 80 starts"
	tap_done
fi
pid=$WL_PID
task_snapshot "$pid" "$RESULTS_DIR/w34.dumped"

# sum_figure <log> <saved|restored> <field>: the sum over GPUs of a copy_figures field, in MiB
sum_figure() { copy_figures "$1" "$2" | awk -v f="$3" '{ s += $f } END { printf "%.1f", s }'; }
# restore_read <log>: read_mib and filled, the MiB the restore read and the engine filled (all GPUs)
restore_read() {
	read_mib=$(sum_figure "$1" restored 6)
	filled=$(sum_figure "$1" restored 7)
}
# allocated_mib <files...>: what the files occupy on disk
allocated_mib() { du -k -c "$@" 2>/dev/null | awk 'END { printf "%.1f", $1 / 1024 }'; }

tap_dumped_or_end "dumped" "$pid" "$imgs"
dump_log=$CRIU_LAST_LOG
# the task's output file as dumped: criu restores a file only at the size it had
cp "$RESULTS_DIR/w34.out" "$RESULTS_DIR/w34.out.dumped"
copy_figures "$dump_log" saved | sed 's/^/#   saved: gpu MiB s MB\/s staging written zeros: /'
logical=$(sum_figure "$dump_log" saved 2)
written=$(sum_figure "$dump_log" saved 6)
zeros=$(sum_figure "$dump_log" saved 7)
tap_check "the dump left $zeros of $logical MiB as holes (at least 60 %)" \
	awk -v z="$zeros" -v l="$logical" 'BEGIN { exit !(l > 0 && z >= 0.6 * l) }'
on_disk=$(allocated_mib "$imgs"/amdgpu-pages-*.img)
tap_check "the pages files occupy $on_disk MiB on disk, no more than the $written MiB written (+1 MiB)" \
	awk -v d="$on_disk" -v w="$written" 'BEGIN { exit !(d <= w + 1) }'

tap_restored_or_end "restored from the sparse images" "$pid" "$imgs"
restore_log=$CRIU_LAST_LOG
copy_figures "$restore_log" restored | sed 's/^/#   restored: gpu MiB s MB\/s staging read zeros: /'
restore_read "$restore_log"
# no hole is read: at most what the files hold on disk (the blocks at a data run's ends, which
# the 8-byte header shifts off the zero test's blocks, hold data and zeros)
tap_check "the restore read $read_mib MiB (no more than the $on_disk MiB on disk) and the engine filled $filled MiB" \
	awk -v r="$read_mib" -v d="$on_disk" -v f="$filled" 'BEGIN { exit !(r <= d + 0.2 && f > 0) }'
tap_verify "restored from sparse images: verifies" "$pid" "$state"
tap_heartbeat "restored from sparse images: queues beat" "$pid" "$state"
tap_same_task "restored from sparse images" "$RESULTS_DIR/w34.dumped" "$pid"
kill -KILL "$pid"
wait_for "! kill -0 $pid 2>/dev/null" 30

# as an older plugin writes them: every byte in the file
for f in "$imgs"/amdgpu-pages-*.img; do
	cp --sparse=never "$f" "$f.dense" && mv "$f.dense" "$f"
done
dense=$(allocated_mib "$imgs"/amdgpu-pages-*.img)
cp "$RESULTS_DIR/w34.out.dumped" "$RESULTS_DIR/w34.out"
tap_restored_or_end "restored from the same images made dense ($dense MiB on disk)" "$pid" "$imgs"
restore_read "$CRIU_LAST_LOG"
tap_check "dense images: all $read_mib of $logical MiB read, nothing filled ($filled)" \
	awk -v r="$read_mib" -v l="$logical" -v f="$filled" 'BEGIN { exit !(r == l && f == 0) }'
tap_verify "restored from dense images: verifies" "$pid" "$state"
tap_same_task "restored from dense images" "$RESULTS_DIR/w34.dumped" "$pid"

wl_end "$pid" "$imgs"
emu_unload
tap_done
