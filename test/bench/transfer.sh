#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# BO transfer benchmark, run inside the test-bed guest (`make bench` calls
#   test/vm/run.sh --mem 4096 --timeout 1200 -- test/bench/transfer.sh).
# Dumps and restores a kfd_workload holding BENCH_MIB MiB of VRAM on each of two GPUs, with each
# emulated copy engine capped at BENCH_SDMA_MBPS MB/s so that the engine, not the image file, is
# the bottleneck, and reports the plugin's per-GPU throughput against the cap and against the
# speed of the image sink alone. If the plugin overlapped nothing, a GPU would move data at
# 1 / (1/engine + 1/sink); with the staging ring it should approach the slower of the two.
# Figures only: nothing here fails on a slow result.
#
#   BENCH_MIB=256         VRAM per GPU
#   BENCH_SDMA_MBPS=N     engine cap per GPU (default: half the measured per-GPU sink speed)
#   BENCH_SINK=DIR        where images go (default $RESULTS_DIR/bench-images: the host, over 9p;
#                         /tmp is guest RAM)
. test/vm/lib.sh
. test/e2e/resource-lib.sh

mib=${BENCH_MIB:-256}
sink=${BENCH_SINK:-$RESULTS_DIR/bench-images}
[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
[ -n "$CRIU_LIBDIR" ] || { echo "plugin not built"; exit 77; }
[ -x test/e2e/bin/kfd_workload ] || { echo "workloads not built (make -C test/e2e)"; exit 77; }
avail=$(mem_mib MemAvailable)
[ "$avail" -ge $((2 * mib + 384)) ] || { echo "guest has $avail MiB available, needs $((2 * mib + 384))"; exit 77; }

mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", (s > 0 ? b / 1e6 / s : 0) }'; }

# The sink alone: two writers of $mib MiB in parallel (one per GPU worker), then two readers.
rm -rf "$sink"
mkdir -p "$sink"
t0=$EPOCHREALTIME
for i in 0 1; do
	dd if=/dev/zero of="$sink/probe$i" bs=4M count=$((mib / 4)) conv=fsync status=none &
done
wait
sink_write=$(mbps $((2 * mib * 1048576)) "$(elapsed "$t0")")
t0=$EPOCHREALTIME
for i in 0 1; do
	dd if="$sink/probe$i" of=/dev/null bs=4M status=none &
done
wait
sink_read=$(mbps $((2 * mib * 1048576)) "$(elapsed "$t0")")
rm -f "$sink"/probe*
cap=${BENCH_SDMA_MBPS:-$((sink_write / 2 / 2))}
[ "$cap" -ge 10 ] || cap=10
echo "sink $sink: $sink_write MB/s writing, $sink_read MB/s reading (two streams together);" \
	"per GPU $((sink_write / 2)) / $((sink_read / 2)) MB/s"
echo "engine cap: sdma_mbps=$cap MB/s per GPU"

emu_load preset=2xmi210 sdma_mbps="$cap" || exit 1
state=$RESULTS_DIR/bench.state
wl_start pid bench "$state" kfd_workload --vram-mb "$mib" --bo-mb 64 || { emu_unload; exit 1; }
imgs=$sink/images
criu_dump "$pid" "$imgs" || { echo "criu dump failed: $CRIU_LAST_LOG"; wl_stop "$pid"; emu_unload; exit 1; }
dump_log=$CRIU_LAST_LOG
wait_for "! kill -0 $pid 2>/dev/null" 10 || wl_stop "$pid"
criu_restore "$imgs" || { echo "criu restore failed: $CRIU_LAST_LOG"; emu_unload; exit 1; }
restore_log=$CRIU_LAST_LOG
echo "restored workload: $(wl_check "$pid" USR1 "$state" 300)"

# report <saved|restored> <log> <sink MB/s per GPU>
report() {
	local what=$1 log=$2 sink_gpu=$3 gpu mib_gpu s rate staging serial best
	serial=$(awk -v c="$cap" -v k="$sink_gpu" 'BEGIN { printf "%.0f", 1 / (1 / c + 1 / k) }')
	best=$((cap < sink_gpu ? cap : sink_gpu))
	[ "$best" -gt 0 ] || best=1
	while read -r gpu mib_gpu s rate staging; do
		printf '%-8s GPU %s: %6s MiB in %6s s = %4s MB/s | cap %s (%s%%), sink %s, no-overlap %s, overlap %s%% of min(cap, sink) | staging %s MiB\n' \
			"$what" "$gpu" "$mib_gpu" "$s" "$rate" "$cap" "$((rate * 100 / cap))" "$sink_gpu" "$serial" \
			"$((rate * 100 / best))" "$staging"
	done < <(copy_figures "$log" "$what")
}
echo
report saved "$dump_log" $((sink_write / 2))
report restored "$restore_log" $((sink_read / 2))

kill -TERM "$pid"
wait_for "! kill -0 $pid 2>/dev/null" 30 || wl_stop "$pid"
rm -rf "$sink"
emu_unload
