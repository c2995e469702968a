#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The soak: one task of each workload goes through E2E_CYCLES checkpoint cycles (10 run alone, 4
# in `make check`, 50 in `make check-full`), dumped and restored alternately on two nodes whose
# GPUs have other ids and render minors. Every third dump is taken with -R, and the next cycle dumps
# the task that ran on.
# After every cycle the task verifies every byte, its queues beat, and it is the task first seen
# (tap_same_task: fd table, memory map, GPU state, host). Per cycle it reports the dump and
# restore times, the task's fd count, criu's peak RSS and the task's VRAM as the emulator counts
# it; the fd count and the VRAM must not move, criu's peak RSS must not grow.
# timeout: 2400
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

cycles=${E2E_CYCLES:-10}
nodes=("gpu_ids=0x1a01,0x1a02 render_minor_base=140" "gpu_ids=0x2b01,0x2b02 render_minor_base=160")

fd_count() { local f n=0; for f in /proc/"$1"/fd/*; do n=$((n + 1)); done; echo "$n"; }
task_vram() { # bytes of VRAM the emulator charges to the task's KFD process
	awk -v pid="$1" '$1 == "process" { cur = ($3 == pid) } cur && $1 == "gpu" { s += $10 } END { print s + 0 }' \
		"$EMU_DEBUGFS/processes"
}
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }

for w in kfd hsakmt; do
	# shellcheck disable=SC2086 # the node's parameters are words
	wl_fresh "$w" preset=2xmi210 ${nodes[0]} -- --vram-mb 2 --bo-mb 1 || continue
	task_snapshot "$pid" "$RESULTS_DIR/$w.first"
	fds0=$(fd_count "$pid") vram0=$(task_vram "$pid")
	node=0 dump_rss=() restore_rss=() fds=() vrams=() ok=1
	log "$w: first seen: $fds0 fds, $vram0 bytes of VRAM"
	for c in $(seq "$cycles"); do
		img=/tmp/img-32-$w
		rm -rf "$img"
		leave=()
		[ $((c % 3)) -ne 0 ] || leave=(-R)
		t0=$EPOCHREALTIME
		if ! CRIU_RSS_FILE=$RESULTS_DIR/rss wl_dump "$pid" "$img" "${leave[@]}"; then
			tap_not_ok "$w: cycle $c: criu dump ${leave[*]}" "$(criu_log_names "$CRIU_LAST_LOG")"
			ok=0
			break
		fi
		t_dump=$(seconds_since "$t0") rss=$(<"$RESULTS_DIR/rss")
		dump_rss+=("$rss")
		if [ ${#leave[@]} -gt 0 ]; then
			how="dump -R ${t_dump} s (criu ${rss} KiB), ran on"
		else
			wait_for "task_gone $pid '$state'" 10 || wl_kill "$pid"
			node=$((1 - node))
			# shellcheck disable=SC2086
			if ! emu_reload preset=2xmi210 ${nodes[$node]}; then
				tap_not_ok "$w: cycle $c: reload the emulator as node $node"
				ok=0
				break
			fi
			t0=$EPOCHREALTIME
			if ! CRIU_RSS_FILE=$RESULTS_DIR/rss wl_restore "$img"; then
				tap_not_ok "$w: cycle $c: criu restore on node $node" "$(criu_log_names "$CRIU_LAST_LOG")"
				ok=0
				break
			fi
			t_restore=$(seconds_since "$t0")
			restore_rss+=("$(<"$RESULTS_DIR/rss")")
			how="dump ${t_dump} s (criu ${rss} KiB), restore on node $node ${t_restore} s (criu $(<"$RESULTS_DIR/rss") KiB)"
		fi
		fds+=("$(fd_count "$pid")")
		vrams+=("$(task_vram "$pid")")
		tap_ok "$w: cycle $c: $how; ${fds[-1]} fds, VRAM $((vrams[-1] / 1024)) KiB"
		tap_alive_verified "$w: cycle $c" "$pid" "$state" || { ok=0; break; }
		tap_same_task "$w: cycle $c" "$RESULTS_DIR/$w.first" "$pid"
	done
	if [ "$ok" -eq 1 ]; then
		if [ "$(printf '%s\n' "${fds[@]}" | sort -u)" = "$fds0" ]; then
			tap_ok "$w: the task holds $fds0 fds after each of $cycles cycles"
		else
			tap_not_ok "$w: the task holds $fds0 fds after each of $cycles cycles" "fds per cycle: ${fds[*]}"
		fi
		if [ "$(printf '%s\n' "${vrams[@]}" | sort -u)" = "$vram0" ]; then
			tap_ok "$w: the emulator charges the task the same VRAM after each cycle ($vram0 bytes)"
		else
			tap_not_ok "$w: the emulator charges the task the same VRAM after each cycle" "per cycle: ${vrams[*]}"
		fi
		# criu's peak RSS is a leak check, not a target: the last cycle may not need more than the
		# first plus 2 MiB of allocator noise.
		for kind in dump restore; do
			declare -n rs=${kind}_rss
			if [ ${#rs[@]} -lt 2 ] || [ "${rs[-1]}" -le $((rs[0] + 2048)) ]; then
				tap_ok "$w: criu's peak RSS at $kind stays flat (first $(mib "${rs[0]}") MiB, last $(mib "${rs[-1]}") MiB)"
			else
				tap_not_ok "$w: criu's peak RSS at $kind stays flat" "per cycle (KiB): ${rs[*]}"
			fi
			unset -n rs
		done
	fi
	wl_kill "$pid"
done
e2e_done
