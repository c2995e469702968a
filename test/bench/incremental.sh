#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What incremental and checksummed GPU images cost, run inside the test-bed guest (`make bench`
# calls test/vm/run.sh --mem 4096 --timeout 1800 -- test/bench/incremental.sh). kfd_workload with
# INCR_MIB MiB of VRAM on each of two GPUs, on the two shapes of node of node-shapes.sh:
#   1. sink-bound, for each P of INCR_PCTS (content in 1 MiB BOs): dump 1 (criu dump -R
#      --track-mem, whole), the workload rewrites P % of its content, dump 2 on dump 1
#      (--prev-images-dir: incremental), then a whole dump of that same state. That order matters:
#      --track-mem makes each dump write only the host pages dirtied since the previous dump, so
#      dump 2 must follow dump 1 directly. Per dump: the GPU bytes written (both GPUs), the
#      plugin's copy time (its slowest GPU) and criu's wall time; then incremental / whole.
#   2. sink-bound: a chain of five dumps, 10 % rewritten before each after the first, and a whole
#      dump of the final state; each restored with the page cache dropped first, timed, verified.
#   3. engine-bound (images on the guest's tmpfs), dense content in 32 MiB BOs: per GPU the copy's
#      rate against the engine's cap, and the time the checksums took, as a share of the copy, on
#      dump and on restore, and the rate they hashed at (under TCG far below a real CPU's). The
#      worker hashes a staging buffer while the engine fills the next, so the hashing costs
#      throughput only where it is not hidden: the rate reached against the cap bounds what the
#      checksums (and everything else) cost; the share is what they would cost were nothing hidden.
# criu's wall time holds the task's host pages too, chiefly its queues' context save areas (about
# 60 MiB of anonymous memory per GPU): whole dumps write them, --track-mem leaves them to the
# parent, and a restore from a chain reads them from there.
# Figures only, the targets beside them: nothing fails on a slow result.
#
#   INCR_MIB=128   VRAM per GPU     INCR_PCTS="0 10 50 100"   the rewritten shares of part 1
#   SINK_MBPS=40   sink-bound limit (both GPUs together), the engines 4x each GPU's share of it
#   ENGINE_MBPS=40 engine-bound cap
. test/vm/lib.sh
. test/e2e/resource-lib.sh
. test/bench/sink-lib.sh

mib=${INCR_MIB:-128}
pcts=${INCR_PCTS:-0 10 50 100}
sink_mbps=${SINK_MBPS:-40}
engine_mbps=${ENGINE_MBPS:-40}
[ -e "$EMU_KO" ] || { echo "emulator not built ($EMU_KO)"; exit 77; }
[ -n "$CRIU_LIBDIR" ] || { echo "plugin not built"; exit 77; }
[ -x test/e2e/bin/kfd_workload ] || { echo "workloads not built (make -C test/e2e)"; exit 77; }

pid=
cleanup() {
	[ -z "$pid" ] || wl_kill "$pid"
	sink_cleanup
}
trap cleanup EXIT

# since <EPOCHREALTIME at start>: seconds since, two decimals.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }

# ratio <a> <b>: a / b, two decimals ("-" when b is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

# gpu_figures <criu log> <saved|restored>: one line per GPU from the plugin's copy lines,
# "<gpu> <MiB> <copy s> <MiB written or read> <checksums s> <MiB left to or read from earlier
# checkpoints>".
gpu_figures() {
	sed -En "s/.*amdgpu_plugin: pid [0-9]+: $2 GPU (0x[0-9a-f]+): ([0-9.]+) MiB in ([0-9.]+) s \(.*, ([0-9.]+) MiB (written|read), .*, checksums ([0-9.]+) s(, ([0-9.]+) MiB .*)?\$/\1 \2 \3 \4 \6 \8/p" "$1" |
		awk '{ print $1, $2, $3, $4, $5, ($6 == "" ? 0 : $6) }'
}

# gpus_total <criu log> <saved|restored>: "<MiB written or read> <the slowest GPU's copy s> <MiB
# of earlier checkpoints> <GPUs>", over the GPUs.
gpus_total() {
	gpu_figures "$1" "$2" | awk '{ io += $4; if ($3 > s) s = $3; chain += $6; n++ }
		END { printf "%.1f %.3f %.1f %d\n", io, s, chain, n }'
}

# ckpt <name> <label> <dir> [criu args...]: criu dump -R --track-mem of $pid into <dir> (emptied
# first), its log $RESULTS_DIR/incr-<name>-dump.log; prints a line of figures under <label> and
# sets them: io (GPU MiB written), copy (the plugin's slowest GPU, s), chain (GPU MiB left to
# earlier checkpoints), wall (criu's, s).
ckpt() {
	local name=$1 label=$2 dir=$3 log=$RESULTS_DIR/incr-$1-dump.log t0 gpus
	shift 3
	rm -rf "$dir"
	mkdir -p "$dir"
	t0=$EPOCHREALTIME
	criu dump -t "$pid" -D "$dir" -R --track-mem --shell-job --link-remap --libdir "$CRIU_LIBDIR" -v4 \
		-o "$log" "$@" || { echo "$name: criu dump failed (see $log)"; return 1; }
	wall=$(since "$t0")
	read -r io copy chain gpus < <(gpus_total "$log" saved)
	[ "$gpus" -gt 0 ] || { echo "$name: no 'saved GPU' line in $log"; return 1; }
	printf '  %-22s GPU %6.1f MiB written, %6.1f MiB left to earlier dumps | copy %6.2f s | criu %6.2f s\n' \
		"$label" "$io" "$chain" "$copy" "$wall"
}

# rewrite <pct label>: the workload rewrites its share; false (said) when it did not.
rewrite() {
	wl_rewrite "$pid" "$state" 300 || { echo "$1: rewrite failed: $WL_REWRITE"; return 1; }
	echo "  rewrite: ${WL_REWRITE#REWRITE OK }"
}

# start <name> [kfd_workload args...]: the workload on both GPUs with INCR_MIB each; sets pid, state.
start() {
	local name=$1
	shift
	wl_start kfd "$name" --gpus 2 --vram-mb "$mib" "$@" || { echo "$name: workload did not start"; return 1; }
	pid=$WL_PID state=$WL_STATE
}

# stop: ends the workload.
stop() {
	kill -TERM "$pid" 2>/dev/null
	wait_for "! kill -0 $pid 2>/dev/null" 30 || wl_kill "$pid"
	pid=
}

# one_pct <P>: part 1 for one share.
one_pct() {
	local p=$1 d=$SINK_MNT/pct io_whole copy_whole wall_whole io_incr copy_incr wall_incr
	echo "sink-bound, $p % rewritten between the dumps:"
	start "incr-$p" --bo-mb 1 --rewrite-pct "$p" || return 1
	ckpt "pct$p-1" "dump 1 (whole)" "$d/1" &&
		rewrite "$p %" &&
		ckpt "pct$p-2" "dump 2 on dump 1" "$d/2" --prev-images-dir ../1 &&
		io_incr=$io copy_incr=$copy wall_incr=$wall &&
		ckpt "pct$p-whole" "dump 2's state, whole" "$d/whole" || { stop; return 1; }
	io_whole=$io copy_whole=$copy wall_whole=$wall
	stop
	printf '  incremental / whole: GPU bytes %s, copy time %s, criu time %s%s\n' \
		"$(ratio "$io_incr" "$io_whole")" "$(ratio "$copy_incr" "$copy_whole")" "$(ratio "$wall_incr" "$wall_whole")" \
		"$([ "$p" != 10 ] || echo "   (target at 10 %: bytes <= 0.15, time <= 0.35)")"
	rm -rf "$d"
	sink_trim
}

# restore <name> <label> <dir> <pid>: the page cache dropped, criu restore of <dir> (the workload
# <pid> is gone), timed, verified, ended; prints a line of figures under <label>; sets copy and wall.
# The workload's output file is back at the size the dumps saw ($out_size): criu refuses to
# restore a file of another size, and the previous restored task wrote to it.
restore() {
	local name=$1 label=$2 dir=$3 log=$RESULTS_DIR/incr-$1-restore.log t0 verdict gpus sums
	pid=$4
	truncate -s "$out_size" "$RESULTS_DIR/incr-chain.out"
	sink_drop_caches
	t0=$EPOCHREALTIME
	criu restore -D "$dir" -d --shell-job --libdir "$CRIU_LIBDIR" -v4 -o "$log" ||
		{ echo "$name: criu restore failed (see $log)"; pid=; return 1; }
	wall=$(since "$t0")
	verdict=$(wl_ask "$pid" "$state" verify 300)
	read -r io copy chain gpus < <(gpus_total "$log" restored)
	sums=$(sed -n 's/.*amdgpu_plugin: pid [0-9]*: .* and \([0-9]* blocks of GPU memory match their checksums\)/\1/p' "$log")
	printf '  %-22s GPU %6.1f MiB read, %6.1f MiB from earlier dumps | copy %6.2f s | criu %6.2f s | %s; %s\n' \
		"$label" "$io" "$chain" "$copy" "$wall" "${sums:-no checksum line}" "$verdict"
	stop
}

# chain_of_5: part 2.
chain_of_5() {
	local d=$SINK_MNT/chain i copy_chain wall_chain out_size dumped
	echo "sink-bound, restore from a chain of 5 dumps (10 % rewritten before each after the first):"
	start incr-chain --bo-mb 1 --rewrite-pct 10 || return 1
	ckpt chain-1 "dump 1 (whole)" "$d/1" || { stop; return 1; }
	for i in 2 3 4 5; do
		rewrite "chain $i" &&
			ckpt "chain-$i" "dump $i on dump $((i - 1))" "$d/$i" --prev-images-dir "../$((i - 1))" ||
			{ stop; return 1; }
	done
	ckpt chain-whole "dump 5's state, whole" "$d/whole" || { stop; return 1; }
	out_size=$(stat -c %s "$RESULTS_DIR/incr-chain.out")
	dumped=$pid
	stop
	restore chain-5 "restore of dump 5" "$d/5" "$dumped" || return 1
	copy_chain=$copy wall_chain=$wall
	restore chain-whole "restore of the whole" "$d/whole" "$dumped" || return 1
	printf '  chain of 5 / whole: copy time %s, criu time %s   (target <= 1.1)\n' \
		"$(ratio "$copy_chain" "$copy")" "$(ratio "$wall_chain" "$wall")"
	rm -rf "$d"
	sink_trim
}

# checksum_share: part 3.
checksum_share() {
	local d=/tmp/incr-images what log
	echo "engine-bound (engine $engine_mbps MB/s per GPU, images on tmpfs), dense: the rate against the engine's cap, and the checksums' share of the copy (target: checksums cost <= 5 % of throughput):"
	start incr-dense --bo-mb 32 || return 1
	rm -rf "$d"
	mkdir -p "$d"
	criu dump -t "$pid" -D "$d" --shell-job --link-remap --libdir "$CRIU_LIBDIR" -v4 \
		-o "$RESULTS_DIR/incr-dense-dump.log" || { echo "dense: criu dump failed"; wl_kill "$pid"; pid=; return 1; }
	wait_for "! kill -0 $pid 2>/dev/null" 10 || wl_kill "$pid"
	criu restore -D "$d" -d --shell-job --libdir "$CRIU_LIBDIR" -v4 \
		-o "$RESULTS_DIR/incr-dense-restore.log" || { echo "dense: criu restore failed"; pid=; return 1; }
	echo "  restored workload: $(wl_ask "$pid" "$state" verify 300)"
	stop
	for what in saved restored; do
		[ "$what" = saved ] && log=$RESULTS_DIR/incr-dense-dump.log || log=$RESULTS_DIR/incr-dense-restore.log
		gpu_figures "$log" "$what" | awk -v what="$what" -v cap="$engine_mbps" '{
			rate = ($3 > 0 ? $2 * 1048576 / 1e6 / $3 : 0)
			printf "  %-8s GPU %s: %6.1f MiB, copy %6.2f s = %4.1f MB/s, %4.1f %% of the engine cap | checksums %6.3f s (%4.0f MB/s hashed) = %4.1f %% of the copy\n",
				what, $1, $2, $3, rate, 100 * rate / cap, $5, ($5 > 0 ? $2 * 1048576 / 1e6 / $5 : 0), ($3 > 0 ? 100 * $5 / $3 : 0)
		}'
	done
	rm -rf "$d"
}

status=0
t_all=$EPOCHREALTIME

# sink-bound: SINK_MBPS for both GPUs, the engines 4x their share. The sink holds at most three
# dumps of both GPUs at once (part 1 at 100 %).
sink_setup $((6 * mib + 512)) "$sink_mbps" || { echo "cannot set up the rate-limited sink"; exit 1; }
share=$((sink_mbps / 2))
echo "sink-bound engines: $((4 * share)) MB/s per GPU; each GPU's share of the sink: $share MB/s"
sink_dirty_small
emu_load preset=2xmi210 sdma_mbps=$((4 * share)) || exit 1
sink_enter || { echo "cannot enter $SINK_CG"; exit 1; }
for p in $pcts; do
	one_pct "$p" || status=1
done
chain_of_5 || status=1
sink_leave
emu_unload
sink_dirty_restore

emu_load preset=2xmi210 sdma_mbps="$engine_mbps" || exit 1
checksum_share || status=1
emu_unload
echo "incremental bench: $(since "$t_all") s"
exit $status
