#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make demo`, the part that runs inside the test-bed guest (test/vm/demo.sh boots the guest and
# runs this from the repo root): a ROCm process checkpointed on one node and restored on another.
#
#   1. the emulator comes up as a node with two MI210 GPUs, and ROCm's rocminfo lists them;
#   2. rocr_workload (ROCm's runtime, unmodified) keeps DEMO_VRAM_MB MiB per GPU (default 64) in
#      flight through its SDMA queues, host -> VRAM -> host, and verifies itself;
#   3. criu dump (with our plugin) checkpoints it mid-copy and kills it;
#   4. the emulator comes back as "another node": the same GPUs with other gpu_ids and render
#      minors;
#   5. criu restore brings the process back there; it verifies every byte and its queues run.
# Then a summary: GPU mapping, image sizes, dump and restore times, copy rate per GPU.
# Any failure ends the demo with a non-zero status and says where.
. test/vm/lib.sh
. test/e2e/resource-lib.sh

vram_mb=${DEMO_VRAM_MB:-64}
imgs=$(mktemp -d /tmp/demo-images.XXXXXX)
state=$RESULTS_DIR/demo.state
pid=

step() { printf '\n== %s\n' "$*"; }
die() {
	echo "demo: FAILED: $*" >&2
	[ -z "$pid" ] || wl_kill "$pid"
	emu_unload >/dev/null 2>&1
	rm -rf "$imgs"
	exit 1
}
show_gpus() {
	local n id
	for n in $(emu_gpu_nodes); do
		read -r id <"$KFD_TOPOLOGY/$n/gpu_id"
		printf '  node %s: gpu_id 0x%04x, /dev/dri/renderD%s\n' "$n" "$id" "$(emu_node_prop "$n" drm_render_minor)"
	done
}

[ -e "$EMU_KO" ] || die "the emulator is not built ($EMU_KO; make -C test/emu)"
[ -n "$CRIU_LIBDIR" ] || die "the plugin is not built (make plugin)"
[ -x test/e2e/bin/rocr_workload ] || die "the workloads are not built (make -C test/e2e; needs libhsa-runtime-dev)"

step "Node 1: the emulator with two MI210 GPUs (preset 2xmi210; no real hardware)"
emu_load preset=2xmi210 || die "cannot load the emulator"
show_gpus
echo "rocminfo (ROCm $(dpkg-query -W -f '${Version}' rocminfo 2>/dev/null)) sees:"
timeout 120 rocminfo 2>&1 | awk '/^Agent [0-9]+/ { a = $1 " " $2 } /^  Name:/ { n = $2 } /^  Device Type:/ { printf "  %s: %s (%s)\n", a, n, $3 }'

step "A ROCm process: rocr_workload (libhsa-runtime64 $(dpkg-query -W -f '${Version}' libhsa-runtime64-1 2>/dev/null)), $vram_mb MiB per GPU in flight"
wl_start rocr demo --vram-mb "$vram_mb" || die "the workload did not start"
pid=$WL_PID
echo "pid $pid: $(grep -c '^stream ' "$state") copy streams on $(sed -n 's/^gpus //p' "$state") GPUs, host -> VRAM -> host, round after round"
line=$(wl_ask "$pid" "$state" verify)
echo "self-check: $line"
[ "$line" = "VERIFY OK" ] || die "the workload does not verify before the dump"

step "criu dump (plugin: $CRIU_LIBDIR/amdgpu_plugin.so)"
echo "demo: dump" >/dev/kmsg
t0=$EPOCHREALTIME
criu_dump "$pid" "$imgs" --link-remap || die "criu dump failed; log: $CRIU_LAST_LOG"
t_dump=$(elapsed "$t0")
dump_log=$CRIU_LAST_LOG
wait_for "! kill -0 $pid 2>/dev/null" 10 || die "pid $pid still runs after the dump"
echo "checkpointed in $t_dump s; pid $pid is gone"
dmesg | sed -n '/demo: dump$/,$p' | sed -n 's/.*\[criu\] CHECKPOINT: /  mid-copy: /p'

step "Node 2: the emulator reloaded with other gpu_ids and render minors"
emu_reload preset=2xmi210 gpu_ids=0x7a01,0x7a02 render_minor_base=140 || die "cannot reload the emulator"
show_gpus

step "criu restore"
t0=$EPOCHREALTIME
criu_restore "$imgs" || die "criu restore failed; log: $CRIU_LAST_LOG"
t_restore=$(elapsed "$t0")
restore_log=$CRIU_LAST_LOG
kill -0 "$pid" 2>/dev/null || die "pid $pid is not running after the restore"
echo "restored in $t_restore s; pid $pid runs again"
verify=$(wl_ask "$pid" "$state" verify)
heartbeat=$(wl_ask "$pid" "$state" heartbeat)
echo "self-check: $verify; $heartbeat"
[ "$verify" = "VERIFY OK" ] || die "the restored process does not verify: $verify"
[ "$heartbeat" = "HEARTBEAT OK" ] || die "the restored process's queues do not run: $heartbeat"

step "Summary"
map=$(sed -n 's/.*amdgpu_plugin: pid [0-9]*: GPU map (image -> local) //p' "$restore_log" | head -n1)
echo "GPU mapping (image -> local): ${map:-?}"
total=0
echo "images in $imgs:"
for f in "$imgs"/amdgpu-*.img; do
	size=$(stat -c %s "$f")
	total=$((total + size))
	printf '  %-28s %12s bytes\n' "${f##*/}" "$size"
done
all=$(du -sb "$imgs" | cut -f1)
awk -v p="$total" -v a="$all" 'BEGIN { printf "  plugin images %.1f MiB, all criu images %.1f MiB\n", p / 1048576, a / 1048576 }'
echo "dump $t_dump s, restore $t_restore s (whole criu runs)"
while read -r gpu mib s mbps staging io zeros; do
	echo "  GPU $gpu: saved    $mib MiB in $s s ($mbps MB/s): $io MiB written, $zeros MiB of zeros as holes"
done < <(copy_figures "$dump_log" saved)
while read -r gpu mib s mbps staging io zeros; do
	echo "  GPU $gpu: restored $mib MiB in $s s ($mbps MB/s): $io MiB read, $zeros MiB of zeros filled"
done < <(copy_figures "$restore_log" restored)
echo "criu logs: $dump_log, $restore_log"

kill -TERM "$pid"
wait_for "! kill -0 $pid 2>/dev/null" 30 || wl_kill "$pid"
pid=
rm -rf "$imgs"
emu_unload || die "cannot unload the emulator"
echo
echo "demo: OK"
