#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Where a checkpoint's time goes: criu's own work (its dump or restore of the task's host memory),
# the plugin's GPU copy, and how much of the copy criu's own work hid. Run inside the test-bed
# guest; `make bench` runs it in the trixie guest under criu 4.3 (whose DUMP_DEVICES_LATE hook is
# what lets the dump's copy run beside criu's own work), with a host thread for each vCPU
# (test/bench/run.sh says why), and, for comparison, in the bookworm guest under criu 3.17.1:
#   VM_GUEST=trixie VM_TCG_THREAD=multi test/vm/run.sh --mem 8192 --timeout 1200 -- 'PATH=/opt/criu-4.3:$PATH test/bench/overlap.sh'
#   test/vm/run.sh --mem 8192 --timeout 1200 -- test/bench/overlap.sh
# Under another criu, its directory first in PATH: trixie's own 4.1.1 is /usr/sbin/criu there, and
# test/criu/build.sh 4.2.1 builds build/criu/4.2.1/criu for the bookworm guest.
# rocr_workload (ROCm's runtime, its copies always in flight) on two GPUs with OVERLAP_HOST_MB MiB
# of host memory no page of which is zeros or like another (--host-mb) and OVERLAP_VRAM_MB MiB of
# VRAM per GPU (its system-memory buffers, as many bytes, are GPU memory the plugin copies too), on
# the two shapes of node of node-shapes.sh:
#   engine-bound  each copy engine capped at ENGINE_MBPS (sdma_mbps); images on the guest's tmpfs
#   sink-bound    images on ext4 on a loop device that the cgroup of criu and the workload may use
#                 at SINK_MBPS (cgroup v2 io.max, reads and writes; the page cache kept small so
#                 that writes meet the limit, dropped before each restore), the engines 4x faster
#                 than each GPU's share of the sink
# On each shape one workload is dumped and restored with KFD_OVERLAP_COPY=0 (the copy in series
# with criu's own work) twice, then with KFD_OVERLAP_COPY=1 (the default: the copy beside criu's
# own work where the criu in use allows it); each restored task must verify (every byte of its host
# memory and of its copies' rounds). The first cycle's task is "fresh", the others "restored": criu
# dumps and restores a task it restored itself 10 to 40 % faster than the freshly started one (its
# memory is laid out anew), so the cycle beside criu is held to the second cycle in series, a
# restored task too.
#
# Per dump and restore it prints:
#   whole     criu's wall time, from its invocation to its exit
#   GPU copy  from the plugin's line "dump: GPU copy X s beside criu's own work ..." (or "... in
#             series ...", and per restored task "pid N: restore: ..."); without such a line, from
#             its per-GPU copy lines: the slowest GPU of each task (a task's GPUs copy in
#             parallel), summed over the tasks
#   hidden    the part of the copy criu did not wait for (0 in series)
#   criu's own  whole minus what criu waited for the copy: the copy itself in series
#   target    engine-bound: whole / max(criu's own in the series run, GPU copy), the copy fully
#             hidden and criu no slower beside it at 1.0;
#             sink-bound: whole / (the bytes of every image on the sink, criu's and the plugin's,
#             / SINK_MBPS), the sink busy all along at 1.0; "target met" at <= 1.1
# Figures only: a slow result fails nothing; a failed dump or restore, or a restored workload that
# does not verify, does.
#
#   OVERLAP_HOST_MB=512  host memory    OVERLAP_VRAM_MB=256  VRAM per GPU
#   ENGINE_MBPS=40       engine-bound cap per GPU
#   SINK_MBPS=40         sink-bound limit (both GPUs and criu together)
#   OVERLAP_SHAPES="engine-bound sink-bound"   the shapes to run
. test/vm/lib.sh
. test/e2e/resource-lib.sh
. test/bench/sink-lib.sh

host_mb=${OVERLAP_HOST_MB:-512}
vram_mb=${OVERLAP_VRAM_MB:-256}
engine_mbps=${ENGINE_MBPS:-40}
sink_mbps=${SINK_MBPS:-40}
shapes=" ${OVERLAP_SHAPES:-engine-bound sink-bound} "
resource_require rocr

pid=
cleanup() {
	[ -z "$pid" ] || wl_kill "$pid"
	sink_cleanup
}
trap cleanup EXIT

# since <EPOCHREALTIME at start>: seconds since, three decimals.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }

# copy_times <criu log> dump|restore: "<source> <GPU copy s> <s criu waited for it> <GPU MiB>",
# source "beside" or "series" (the plugin's overlap lines, summed over the restored tasks) or
# "per-GPU" (its per-GPU copy lines: the slowest GPU of each task, summed over the tasks, all of
# it waited for).
copy_times() {
	local head verb
	[ "$2" = dump ] && head='dump' verb=saved || head='pid [0-9]+: restore' verb=restored
	sed -En \
		-e "s/.*amdgpu_plugin: $head: GPU copy ([0-9.]+) s beside criu's own work of [0-9.]+ s: [0-9.]+ s of it hidden, criu waited ([0-9.]+) s for the rest.*/beside \\1 \\2/p" \
		-e "s/.*amdgpu_plugin: $head: GPU copy ([0-9.]+) s in series with criu's own work .*/series \\1 \\1/p" \
		-e "s/.*amdgpu_plugin: pid ([0-9]+): $verb GPU 0x[0-9a-f]+: ([0-9.]+) MiB in ([0-9.]+) s .*/gpu \\1 \\3 \\2/p" \
		"$1" | awk '
		$1 == "gpu" { if ($3 > slowest[$2]) slowest[$2] = $3; mib += $4; next }
		{ copy += $2; waited += $3; n++; if (src == "" || $1 == "beside") src = $1 }
		END {
			if (!n) { for (p in slowest) copy += slowest[p]; waited = copy; src = "per-GPU" }
			printf "%s %.3f %.3f %.1f\n", src, copy, waited, mib
		}'
}

# why_in_series <criu log> dump|restore: the plugin's reason for a copy in series, if it gave one.
why_in_series() {
	local head
	[ "$2" = dump ] && head='dump' || head='pid [0-9]+: restore'
	sed -En "s/.*amdgpu_plugin: $head: GPU copy [0-9.]+ s in series with criu's own work \\((.*)\\)\$/\\1/p" "$1" | head -n1
}

# criu's own time in series, by "<shape> <dump|restore>", of the last such cycle (a restored task,
# like the one beside): what the copy beside criu is held to. (Beside the copy, criu's own work takes
# longer where both need the same CPU, as in the test bed's guest, whose two emulated CPUs hash the
# copy's checksums at a few hundred MB/s: measured there, "criu's own" would hide that.)
declare -A series_own
# The task the cycle dumps: fresh (the workload as started) or restored (by the cycle before).
task=fresh

# report <shape> <dump|restore> <overlap 0|1> <whole s> <criu log> <image dir>: the line of figures.
report() {
	local shape=$1 what=$2 overlap=$3 whole=$4 log=$5 src copy waited mib why criu_mb plugin_mb own
	read -r src copy waited mib < <(copy_times "$log" "$what")
	read -r criu_mb plugin_mb < <(image_mb "$6")
	why=$(why_in_series "$log" "$what")
	own=$(awk -v w="$whole" -v x="$waited" 'BEGIN { printf "%.3f", w - x }')
	[ "$overlap" != 0 ] || series_own["$shape $what"]=$own
	awk -v shape="$shape" -v what="$what" -v o="$overlap" -v whole="$whole" -v own="$own" -v src="$src" -v copy="$copy" \
		-v waited="$waited" -v mib="$mib" -v criu_mb="$criu_mb" -v plugin_mb="$plugin_mb" -v sink="$sink_mbps" \
		-v why="$why" -v task="$task" -v series="${series_own["$shape $what"]:-}" 'BEGIN {
		hidden = copy - waited
		if (shape == "engine-bound") {
			# criu own work as measured in series: beside the copy it may have slowed down
			base = (series != "" ? series : own)
			best = (base > copy ? base : copy)
			r = (best > 0 ? whole / best : 0)
			target = sprintf("whole / max(criu in series %.2f s, copy) %.2f", base, r)
		} else {
			best = (criu_mb + plugin_mb) / sink
			r = (best > 0 ? whole / best : 0)
			target = sprintf("%.0f MB on the sink (criu %.0f, plugin %.0f) / %d MB/s = %.2f s, whole / that %.2f",
				criu_mb + plugin_mb, criu_mb, plugin_mb, sink, best, r)
		}
		r = sprintf("%.2f", r) + 0
		printf "%-12s %-7s %-8s KFD_OVERLAP_COPY=%d: whole %6.2f s | criu'"'"'s own %6.2f s | GPU copy %6.2f s (%.0f MiB, %s) | hidden %5.2f s | %s: target %s\n",
			shape, what, task, o, whole, own, copy, mib, src, hidden, target, (r > 0 && r <= 1.1 ? "met" : "missed")
		if (why != "")
			printf "%-12s %-7s %-8s   the plugin copied in series because: %s\n", "", "", "", why
	}'
}

# image_mb <dir>: "<criu's images> <the plugin's images>" there, in MB (10^6 bytes) of the file
# system's blocks.
image_mb() {
	local criu plugin
	criu=$(find "$1" -type f ! -name 'amdgpu-*' -printf '%k\n' | awk '{ k += $1 } END { print k + 0 }')
	plugin=$(find "$1" -type f -name 'amdgpu-*' -printf '%k\n' | awk '{ k += $1 } END { print k + 0 }')
	awk -v c="$criu" -v p="$plugin" 'BEGIN { printf "%.1f %.1f\n", c * 1024 / 1e6, p * 1024 / 1e6 }'
}

# cycle <shape> <overlap 0|1> <image dir>: $pid dumped and restored with KFD_OVERLAP_COPY=<overlap>,
# each timed and reported; the restored task verified (it is $pid again).
cycle() {
	local shape=$1 overlap=$2 imgs=$3 t0 whole verdict
	local -a CRIU_ENV=("KFD_OVERLAP_COPY=$overlap")
	rm -rf "$imgs"
	sink_trim
	sync
	t0=$EPOCHREALTIME
	wl_dump "$pid" "$imgs" || { echo "$shape: criu dump (KFD_OVERLAP_COPY=$overlap) failed: see $CRIU_LAST_LOG"; return 1; }
	whole=$(since "$t0")
	wait_for "! kill -0 $pid 2>/dev/null" 10 || { echo "$shape: the dumped task $pid is still there"; return 1; }
	report "$shape" dump "$overlap" "$whole" "$CRIU_LAST_LOG" "$imgs"
	sink_drop_caches
	t0=$EPOCHREALTIME
	wl_restore "$imgs" || { echo "$shape: criu restore (KFD_OVERLAP_COPY=$overlap) failed: see $CRIU_LAST_LOG"; return 1; }
	whole=$(since "$t0")
	report "$shape" restore "$overlap" "$whole" "$CRIU_LAST_LOG" "$imgs"
	verdict=$(wl_ask "$pid" "$state" verify 300)
	echo "$shape: the restored workload: $verdict"
	[ "$verdict" = "VERIFY OK" ]
}

# shape <shape> <image dir>: a workload, the cycle in series, then beside; the workload ended.
shape() {
	local shape=$1 imgs=$2 t0 rc=0
	t0=$EPOCHREALTIME
	# rocr_workload's --vram-mb is each GPU's bytes in flight: twice that in VRAM, and as much
	# again in system memory
	wl_start rocr "overlap-$shape" --gpus 2 --vram-mb $((vram_mb / 2)) --host-mb "$host_mb" \
		--hb-timeout-ms 60000 || { echo "$shape: the workload did not start"; return 1; }
	pid=$WL_PID state=$WL_STATE
	echo "$shape: rocr_workload --gpus 2 --vram-mb $((vram_mb / 2)) --host-mb $host_mb set up in $(since "$t0") s"
	task=fresh
	cycle "$shape" 0 "$imgs" || rc=1
	task=restored
	[ "$rc" != 0 ] || { cycle "$shape" 0 "$imgs" && cycle "$shape" 1 "$imgs"; } || rc=1
	kill -TERM "$pid" 2>/dev/null
	wait_for "! kill -0 $pid 2>/dev/null" 30 || wl_kill "$pid"
	pid=
	rm -rf "$imgs"
	sink_trim
	return $rc
}

status=0
t_all=$EPOCHREALTIME
echo "criu $(criu --version | sed -n 's/^Version: //p'), kernel $(uname -r); host memory $host_mb MiB, VRAM $vram_mb MiB per GPU"

# engine-bound: the engine at ENGINE_MBPS per GPU, the sink the guest's RAM
if [[ $shapes == *" engine-bound "* ]]; then
	emu_load preset=2xmi210 sdma_mbps="$engine_mbps" || exit 1
	echo "engine-bound: engines $engine_mbps MB/s per GPU, images on tmpfs"
	shape engine-bound /tmp/overlap-images || status=1
	emu_unload
fi

# sink-bound: SINK_MBPS for criu and both GPUs, the engines 4x each GPU's share
if [[ $shapes == *" sink-bound "* ]]; then
	sink_setup $((host_mb + 4 * vram_mb + 1024)) "$sink_mbps" || { echo "cannot set up the rate-limited sink"; exit 1; }
	share=$((sink_mbps / 2))
	echo "sink-bound: engines $((4 * share)) MB/s per GPU, images on the sink at $sink_mbps MB/s"
	sink_dirty_small
	emu_load preset=2xmi210 sdma_mbps=$((4 * share)) || exit 1
	# from here on this script, the workload and criu do their I/O in the limited cgroup
	sink_enter || { echo "cannot enter $SINK_CG"; exit 1; }
	shape sink-bound "$SINK_MNT/images" || status=1
	sink_leave
	emu_unload
	sink_dirty_restore
fi
echo "overlap bench: $(since "$t_all") s"
exit $status
