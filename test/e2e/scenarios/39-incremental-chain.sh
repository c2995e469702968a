#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Incremental GPU images: one kfd_workload task (2 x MI210, 16 MiB of VRAM per GPU in 1 MiB BOs,
# a tenth of it zeros) pre-dumped by criu, then checkpointed five times, each dump with
# --prev-images-dir the one before (criu links `parent`) and --track-mem, the first four with -R;
# between dumps the task rewrites a tenth of its GPU memory (a new generation of its pattern in
# the next BOs in turn).
#  - the pre-dump leaves no GPU image (criu calls no plugin hook after it froze the tasks), and the
#    first dump, onto it, writes all of the GPU memory; each later one says it is incremental and
#    writes at most 30 % of what the first wrote (a tenth changed, plus what the queues wrote);
#  - amdgpu-topology --verify finds the last checkpoint intact, reading from earlier ones;
#  - restored from the last dump, the task verifies every byte (the last generation of each BO)
#    and runs;
#  - a dump whose parent lost its sums image is whole again, and says why.
# The bytes each dump wrote are printed.
# timeout: 300
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

TOPOLOGY_TOOL=$VM_REPO/build/bin/amdgpu-topology
base=/tmp/img-39

# written_mib <criu log>: the GPU memory the plugin wrote in that dump, in MiB.
written_mib() {
	grep -oE 'amdgpu_plugin: pid [0-9]+: saved GPU 0x[0-9a-f]+: [0-9.]+ MiB in [^,]+, [0-9.]+ MiB written' "$1" |
		awk '{ sum += $(NF - 2) } END { printf "%.1f\n", sum }'
}

wl_fresh kfd preset=2xmi210 -- --vram-mb 16 --bo-mb 1 --zeros 10 --rewrite-pct 10 || e2e_done
rm -rf "$base"
mkdir -p "$base/0"
# criu's pre-dump copies no GPU memory (no plugin hook runs after it froze the tasks): the first
# dump, its child, finds no GPU images in it and writes all of the GPU memory
if criu_run pre-dump -t "$pid" -D "$base/0" --track-mem; then
	tap_ok "criu pre-dump of the GPU task"
else
	tap_not_ok "criu pre-dump of the GPU task" "$(criu_log_names "$CRIU_LAST_LOG")"
fi
tap_check "after the pre-dump no GPU image is in its directory" test -z "$(cd "$base/0" && compgen -G 'amdgpu-*')"
first=
for i in 1 2 3 4 5; do
	args=(--track-mem --prev-images-dir "../$((i - 1))")
	[ "$i" = 5 ] || args+=(-R)
	if [ "$i" != 1 ]; then
		if wl_rewrite "$pid" "$state"; then
			log "before dump $i: $WL_REWRITE"
		else
			tap_not_ok "the task rewrites a tenth of its GPU memory before dump $i" "${WL_REWRITE:-no answer}"
		fi
	fi
	[ "$i" != 5 ] || task_snapshot "$pid" "$RESULTS_DIR/39.dumped"
	tap_dump "dump $i${args[*]:+ (${args[*]})}" "$pid" "$base/$i" "${args[@]}" || break
	mib=$(written_mib "$CRIU_LAST_LOG")
	log "dump $i: $mib MiB of GPU memory written"
	if [ "$i" = 1 ]; then
		first=$mib
		tap_check "dump 1, onto the pre-dump, writes all of the GPU memory" \
			test -z "$(grep -E 'amdgpu_plugin: incremental dump' "$CRIU_LAST_LOG")"
		continue
	fi
	tap_log_has "dump $i says it is incremental" "$CRIU_LAST_LOG" \
		"amdgpu_plugin: incremental dump: $((i - 1)) earlier checkpoints? hold [0-9]+ blocks of GPU memory"
	tap_check "dump $i wrote $mib MiB, at most 30 % of the first dump's $first MiB" \
		awk -v a="$mib" -v b="$first" 'BEGIN { exit !(b > 0 && a <= 0.3 * b) }'
done
wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"

"$TOPOLOGY_TOOL" --verify "$base/5" >"$RESULTS_DIR/verify-chain.out" 2>&1
tap_check "amdgpu-topology --verify: the last checkpoint is intact, read through its chain" \
	grep -Eq '^amdgpu-kfd-[0-9]+\.img: intact .* MiB of it read from earlier checkpoints' "$RESULTS_DIR/verify-chain.out"

tap_restore "restore from the last of five dumps" "$base/5"
tap_log_has "the restore read GPU memory from the earlier checkpoints" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: pid [0-9]+: restored GPU 0x[0-9a-f]+: .* MiB read from earlier checkpoints"
tap_same_task "restored from the last of five dumps (no image directory of the chain left open in it)" \
	"$RESULTS_DIR/39.dumped" "$pid"
tap_alive_verified "restored from the last of five dumps" "$pid" "$state"

# a parent that lost its sums: the next dump writes the whole of the GPU memory again
rm -f "$base"/5/amdgpu-sums-*.img
tap_dump "a dump whose parent lost its checksums" "$pid" "$base/6" --track-mem --prev-images-dir ../5 -R
tap_log_has "it says the parent cannot be used and dumps the GPU memory whole" "$CRIU_LAST_LOG" \
	"amdgpu_plugin: .*GPU memory is dumped whole|amdgpu_plugin: incremental dump: .*cannot be used"
mib=$(written_mib "$CRIU_LAST_LOG")
log "dump 6: $mib MiB of GPU memory written"
tap_alive_verified "after the dump onto a parent without checksums" "$pid" "$state"
wl_kill "$pid"
e2e_done
