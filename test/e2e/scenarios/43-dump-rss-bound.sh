#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# criu's memory while dumping is bounded by KFD_MAX_BUFFER_SIZE, not by the size of the BOs
# (upstream criu#2248 (a): criu OOM-killed writing a 33 GB pages image, staging sized to the
# largest BO). With KFD_MAX_BUFFER_SIZE=8M, criu's peak RSS (GNU time, ru_maxrss) dumping a
# workload with two 256 MiB VRAM BOs may exceed that of dumping the same workload with 1 MiB BOs
# by at most the bound plus a slack for what grows with the number of BOs (8 MiB). To show the
# measurement sees staging memory at all, the big workload is dumped once more with the default
# bound (64 MiB), which must grow criu's RSS by more than 32 MiB. The capped big dump is then
# restored and verified, so the bounded path also produced a correct image.
# timeout: 400
. test/vm/lib.sh
. test/e2e/resource-lib.sh

bound_mib=8
slack_mib=8
resource_require kfd
[ -x /usr/bin/time ] || { echo "GNU time is not installed (Debian package time; scripts/install-deps.sh)"; exit 77; }
avail=$(mem_mib MemAvailable)
[ "$avail" -ge 900 ] || { echo "guest has $avail MiB available, this needs 900"; exit 77; }

emu_load preset=2xmi210 || exit 1

# dump_rss <name> <KFD_MAX_BUFFER_SIZE MiB> <workload options...>: starts the workload on one GPU,
# dumps it with that bound under GNU time; sets rss_<name> (KiB), pid_<name>, log_<name>, and
# leaves the images in $RESULTS_DIR/<name>.
dump_rss() {
	local name=$1 cap=$2 pid dir=$RESULTS_DIR/$1 log rc
	shift 2
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! wl_start kfd "$name" --gpus 1 "$@"; then
		tap_not_ok "$name: kfd_workload $* comes up"
		return 1
	fi
	pid=$WL_PID
	log=$(criu_log_path "dump-$name")
	task_snapshot "$pid" "$RESULTS_DIR/$name.dumped"
	KFD_MAX_BUFFER_SIZE=${cap}M peak_rss_kib "$RESULTS_DIR/$name.rss" \
		criu dump --libdir "$CRIU_LIBDIR" -v4 -o "$log" -t "$pid" -D "$dir"
	rc=$?
	printf -v "pid_$name" %s "$pid"
	printf -v "rss_$name" %s "$(<"$RESULTS_DIR/$name.rss")"
	printf -v "log_$name" %s "$log"
	if [ "$rc" -eq 0 ] && grep -q "param: KFD_MAX_BUFFER_SIZE:0x$(printf %x $((cap << 20)))" "$log"; then
		tap_ok "$name: dumped with KFD_MAX_BUFFER_SIZE=${cap}M, criu peak RSS $(($(<"$RESULTS_DIR/$name.rss") / 1024)) MiB"
	else
		tap_not_ok "$name: dumped with KFD_MAX_BUFFER_SIZE=${cap}M" "criu status $rc: $(grep -m3 Error "$log")"
		wl_kill "$pid"
		return 1
	fi
	wait_for "! kill -0 $pid 2>/dev/null" 10 || wl_kill "$pid"
}

dump_rss tiny "$bound_mib" --vram-mb 2 --bo-mb 1 || tap_done
dump_rss big64 64 --vram-mb 512 --bo-mb 256 || tap_done
dump_rss big "$bound_mib" --vram-mb 512 --bo-mb 256 || tap_done

# The largest staging figure of the plugin's per-GPU lines (the unused GPU reports 0).
staging=$(copy_figures "$log_big" saved | awk '$5 > s { s = $5 } END { if (NR) print s }')
log "figures: criu peak RSS $((rss_tiny / 1024)) MiB with two 1 MiB BOs, $((rss_big / 1024)) MiB with two 256 MiB BOs" \
	"(growth $(((rss_big - rss_tiny) / 1024)) MiB, plugin staging ${staging:-?} MiB);" \
	"$((rss_big64 / 1024)) MiB with the default 64 MiB bound"
if [ $((rss_big64 - rss_tiny)) -gt $((32 * 1024)) ]; then
	tap_ok "the measurement sees staging: the default 64 MiB bound grows criu's RSS by $(((rss_big64 - rss_tiny) / 1024)) MiB"
else
	tap_not_ok "the measurement sees staging memory" \
		"with a 64 MiB bound criu's RSS grew by only $(((rss_big64 - rss_tiny) / 1024)) MiB"
fi
if [ $((rss_big - rss_tiny)) -le $(((bound_mib + slack_mib) * 1024)) ]; then
	tap_ok "RSS growth $(((rss_big - rss_tiny) / 1024)) MiB <= bound $bound_mib MiB + slack $slack_mib MiB (BOs: 512 MiB)"
else
	tap_not_ok "RSS growth <= bound $bound_mib MiB + slack $slack_mib MiB" \
		"grew by $(((rss_big - rss_tiny) / 1024)) MiB: $((rss_tiny / 1024)) -> $((rss_big / 1024)) MiB"
fi
if [ -n "$staging" ] && awk -v s="$staging" -v b="$bound_mib" 'BEGIN { exit !(s <= b) }'; then
	tap_ok "the plugin's staging ring ($staging MiB) stays within the bound"
else
	tap_not_ok "the plugin's staging ring stays within the bound" "staging '${staging:-no figure}' MiB"
fi

KFD_MAX_BUFFER_SIZE=${bound_mib}M criu_restore "$RESULTS_DIR/big"
rc=$?
if [ "$rc" -eq 0 ] && kill -0 "$pid_big" 2>/dev/null; then
	tap_ok "the bounded dump restores (also bounded)"
	tap_verify "restored workload verifies every byte" "$pid_big" "$RESULTS_DIR/big.state" 300
	tap_same_task "restored" "$RESULTS_DIR/big.dumped" "$pid_big"
	kill -TERM "$pid_big"
	wait_for "! kill -0 $pid_big 2>/dev/null" 30 || wl_kill "$pid_big"
else
	tap_not_ok "the bounded dump restores" "criu status $rc: $(grep -m3 Error "$CRIU_LAST_LOG")"
fi
[ "$TAP_FAILED" -ne 0 ] || rm -rf "$RESULTS_DIR/tiny" "$RESULTS_DIR/big" "$RESULTS_DIR/big64"
emu_unload
tap_done
