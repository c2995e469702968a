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

# report <saved|restored> <log> <sink MB/s per GPU> [label]
report() {
	local what=$1 log=$2 sink_gpu=$3 label=${4:-files} gpu mib_gpu s rate staging serial best
	serial=$(awk -v c="$cap" -v k="$sink_gpu" 'BEGIN { printf "%.0f", 1 / (1 / c + 1 / k) }')
	best=$((cap < sink_gpu ? cap : sink_gpu))
	[ "$best" -gt 0 ] || best=1
	while read -r gpu mib_gpu s rate staging _; do
		printf '%-7s %-8s GPU %s: %6s MiB in %6s s = %4s MB/s | cap %s (%s%%), sink %s, no-overlap %s, overlap %s%% of min(cap, sink) | staging %s MiB\n' \
			"$label" "$what" "$gpu" "$mib_gpu" "$s" "$rate" "$cap" "$((rate * 100 / cap))" "$sink_gpu" "$serial" \
			"$((rate * 100 / best))" "$staging"
	done < <(copy_figures "$log" "$what")
}

# overall <saved|restored> <log>: every GPU's bytes over the time of the slowest (they start together).
overall() {
	copy_figures "$2" "$1" | awk '{ mib += $2; if ($3 > s) s = $3 } END { printf "%.1f MiB in %.3f s = %.0f MB/s", mib, s, (s > 0 ? mib * 1048576 / 1e6 / s : 0) }'
}

# timeline <restore log>: where a restore's time goes. The plugin recreates KFD state and copies
# the BO contents inside RESTORE_EXT_FILE; everything else is criu's own (host memory, files, the
# restorer). criu 4.2's POST_FORKING hook would let the copies run in criu's main process beside
# criu's own work, so it could save at most the smaller of the two.
timeline() {
	awk '
		{ t = substr($1, 2) + 0; if (t > end) end = t }
		/amdgpu_plugin: pid [0-9]+: restored amdgpu-kfd-[0-9]+\.img/ { for (i = 1; i <= NF; i++) if ($i == "in") kfd += $(i + 1) / 1000 }
		/amdgpu_plugin: pid [0-9]+: restored GPU/ { for (i = 1; i <= NF; i++) if ($i == "in" && $(i + 1) + 0 > copy) copy = $(i + 1) + 0 }
		END {
			other = end - kfd
			printf "criu restore %.2f s: plugin %.2f s (BO copies %.2f s), criu'"'"'s own work %.2f s; POST_FORKING could hide at most %.2f s (%.0f%%)",
				end, kfd, copy, other, (other < copy ? other : copy), 100 * (other < copy ? other : copy) / (end > 0 ? end : 1)
		}' "$1"
}

# round <files|stream>: dump and restore one workload; sets SAVED and RESTORED (overall figures)
round() {
	local how=$1 state=$RESULTS_DIR/bench-$1.state imgs=$sink/images-$1 stream=$sink/stream dump_log restore_log
	local stream_args=()
	SAVED=failed RESTORED=failed
	# The streamer's socket lives in -D, which 9p cannot hold: the stream file goes to the sink.
	[ "$how" = files ] || imgs=/tmp/bench-images-stream
	wl_start kfd "bench-$how" --vram-mb "$mib" --bo-mb 64 || return 1
	pid=$WL_PID
	rm -rf "$imgs" "$stream"
	if [ "$how" = stream ]; then
		streamer_start capture "$imgs" "$stream" || { echo "stand-in did not listen"; wl_kill "$pid"; return 1; }
		stream_args=(--stream)
	fi
	criu_dump "$pid" "$imgs" "${stream_args[@]}" || { echo "criu dump failed: $CRIU_LAST_LOG"; wl_kill "$pid"; return 1; }
	dump_log=$CRIU_LAST_LOG
	[ "$how" = files ] || streamer_wait || echo "the stand-in failed capturing"
	wait_for "! kill -0 $pid 2>/dev/null" 10 || wl_kill "$pid"
	if [ "$how" = stream ]; then
		streamer_start serve "$imgs" "$stream" || { echo "stand-in did not serve"; return 1; }
	fi
	criu_restore "$imgs" "${stream_args[@]}" || { echo "criu restore failed: $CRIU_LAST_LOG"; return 1; }
	restore_log=$CRIU_LAST_LOG
	[ "$how" = files ] || streamer_wait || echo "the stand-in failed serving"
	echo "$how: restored workload: $(wl_ask "$pid" "$state" verify 300)"
	echo
	report saved "$dump_log" $((sink_write / 2)) "$how"
	report restored "$restore_log" $((sink_read / 2)) "$how"
	SAVED=$(overall saved "$dump_log")
	RESTORED=$(overall restored "$restore_log")
	echo "$how: $(timeline "$restore_log")"
	kill -TERM "$pid"
	wait_for "! kill -0 $pid 2>/dev/null" 30 || wl_kill "$pid"
	rm -rf "$imgs" "$stream"
}

status=0
round files || status=1
files_saved=$SAVED files_restored=$RESTORED
echo
# Through the image streamer stand-in: the GPUs' pages images pass one after another into one
# stream (here a file on the same sink), while the other GPU fills its staging ring.
round stream || status=1
echo
echo "all GPUs, files : saved $files_saved; restored $files_restored"
echo "all GPUs, stream: saved $SAVED; restored $RESTORED"
rm -rf "$sink"
emu_unload
exit $status
