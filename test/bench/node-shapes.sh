#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Checkpoint cost at the two shapes of node, run inside the test-bed guest (`make bench` calls
#   test/vm/run.sh --mem 4096 --timeout 1500 -- test/bench/node-shapes.sh).
# kfd_workload with SHAPES_MIB MiB of VRAM on each of two GPUs, dumped and restored with the
# contents dense, 80 % zeros in 1 MiB runs, and 10 % zeros scattered in 4 KiB runs, on:
#   engine-bound  each copy engine capped at ENGINE_MBPS (sdma_mbps); images on the guest's tmpfs
#                 (its speed measured first with dd)
#   sink-bound    images on ext4 on a loop device that the cgroup of criu and the workload may
#                 use at SINK_MBPS (cgroup v2 io.max, reads and writes; the page cache kept small
#                 so that writes meet the limit, and dropped before each restore), the engines 4x
#                 faster than each GPU's share of the sink, as
#                 on real nodes (tens of GB/s of SDMA against a few GB/s of NVMe or network)
# Per GPU and direction it prints the logical MB/s (the BOs' bytes over the copy's time), the
# bytes that went to or came from the sink, the ratio to min(engine, sink share), and the ratio
# to the serial model 1/(1/engine + 1/sink) on the logical bytes. Figures only: nothing fails on
# a slow result.
#
#   SHAPES_MIB=128   VRAM per GPU      ENGINE_MBPS=40   engine-bound cap (well under the tmpfs sink)
#   SINK_MBPS=40     sink-bound limit (both GPUs together)
. test/vm/lib.sh
. test/e2e/resource-lib.sh
. test/bench/sink-lib.sh

mib=${SHAPES_MIB:-128}
engine_mbps=${ENGINE_MBPS:-40}
sink_mbps=${SINK_MBPS:-40}
[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
[ -n "$CRIU_LIBDIR" ] || { echo "plugin not built"; exit 77; }
[ -x test/e2e/bin/kfd_workload ] || { echo "workloads not built (make -C test/e2e)"; exit 77; }

trap sink_cleanup EXIT

# sink_mbps_of <dir>: what two writers of SHAPES_MIB each achieve together there, in MB/s
sink_mbps_of() {
	local t0=$EPOCHREALTIME i
	for i in 0 1; do
		dd if=/dev/zero of="$1/probe$i" bs=4M count=$((mib / 4)) conv=fsync status=none &
	done
	wait
	awk -v b=$((2 * mib * 1048576)) -v s="$(elapsed "$t0")" 'BEGIN { printf "%.0f", (s > 0 ? b / 1e6 / s : 0) }'
	rm -f "$1"/probe*
}

# one <shape> <data label> <workload zero args> <engine MB/s per GPU> <sink MB/s per GPU> <image dir>
one() {
	local shape=$1 label=$2 zargs=$3 engine=$4 sink=$5 imgs=$6 state=$RESULTS_DIR/shapes.state
	# shellcheck disable=SC2086 # zargs is a word list
	wl_start kfd shapes --vram-mb "$mib" --bo-mb 32 $zargs || { echo "$shape $label: workload did not start"; return 1; }
	pid=$WL_PID
	rm -rf "$imgs"
	mkdir -p "$imgs"
	sync
	criu dump -t "$pid" -D "$imgs" --shell-job --link-remap --libdir "$CRIU_LIBDIR" -v4 \
		-o "$RESULTS_DIR/shapes-$shape-$label-dump.log" || { echo "$shape $label: criu dump failed"; wl_kill "$pid"; return 1; }
	wait_for "! kill -0 $pid 2>/dev/null" 10 || wl_kill "$pid"
	local on_disk
	on_disk=$(du -k -c "$imgs"/amdgpu-pages-*.img | awk 'END { printf "%.1f", $1 / 1024 }')
	sink_drop_caches
	criu restore -D "$imgs" -d --shell-job --libdir "$CRIU_LIBDIR" -v4 \
		-o "$RESULTS_DIR/shapes-$shape-$label-restore.log" || { echo "$shape $label: criu restore failed"; return 1; }
	local verdict
	verdict=$(wl_ask "$pid" "$state" verify 300)
	local what log
	for what in saved restored; do
		[ "$what" = saved ] && log=$RESULTS_DIR/shapes-$shape-$label-dump.log || log=$RESULTS_DIR/shapes-$shape-$label-restore.log
		copy_figures "$log" "$what" | awk -v shape="$shape" -v label="$label" -v what="$what" -v e="$engine" -v k="$sink" -v disk="$on_disk" '
			{
				mbps = ($3 > 0 ? $2 * 1048576 / 1e6 / $3 : 0)
				best = (e < k ? e : k); serial = 1 / (1 / e + 1 / k)
				printf "%-13s %-11s %-8s GPU %s: %6.1f MiB logical in %6.2f s = %5.0f MB/s | sink %6.1f MiB %s, zeros %6.1f MiB | %3.0f%% of min(engine %d, sink %d) | %4.2fx serial (%.0f MB/s)%s\n",
					shape, label, what, $1, $2, $3, mbps, $6, (what == "saved" ? "written" : "read"), $7,
					100 * mbps / best, e, k, mbps / serial, serial, (what == "saved" ? " | pages files on disk " disk " MiB (both GPUs)" : "")
			}'
	done
	echo "$shape $label: restored workload: $verdict"
	kill -TERM "$pid"
	wait_for "! kill -0 $pid 2>/dev/null" 30 || wl_kill "$pid"
	rm -rf "$imgs"
}

data=("dense|" "zeros80|--zeros 80,1024" "zeros10|--zeros 10,4")
status=0

# engine-bound: the engine at ENGINE_MBPS per GPU, the sink the guest's RAM (its speed measured)
mkdir -p /tmp/shapes-images
ram_sink=$(sink_mbps_of /tmp/shapes-images)
echo "engine-bound sink: tmpfs, $ram_sink MB/s for two writers ($((ram_sink / 2)) per GPU)"
emu_load preset=2xmi210 sdma_mbps="$engine_mbps" || exit 1
for d in "${data[@]}"; do
	one engine-bound "${d%%|*}" "${d#*|}" "$engine_mbps" $((ram_sink / 2)) /tmp/shapes-images || status=1
done
emu_unload

# sink-bound: SINK_MBPS for both GPUs, the engines 4x their share
sink_setup $((6 * mib + 1024)) "$sink_mbps" || { echo "cannot set up the rate-limited sink"; exit 1; }
share=$((sink_mbps / 2))
sink_dirty_small
emu_load preset=2xmi210 sdma_mbps=$((4 * share)) || exit 1
# from here on this script, the workloads and criu do their I/O in the limited cgroup
sink_enter || { echo "cannot enter $SINK_CG"; exit 1; }
for d in "${data[@]}"; do
	one sink-bound "${d%%|*}" "${d#*|}" $((4 * share)) "$share" "$SINK_MNT/images" || status=1
done
sink_leave
emu_unload
sink_dirty_restore
exit $status
