#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Two GPU processes in one process tree: a small parent (bash) forks kfd_workload and
# hsakmt_workload as its children, and criu dumps and restores the tree from the parent's pid
# (upstream issue #2269: "fd 0 already in use" when processes held render-node fds). Both children
# come back as children of the parent, verify every byte and run their queues again.
# timeout: 180
. test/vm/lib.sh
. test/e2e/lib.sh
e2e_begin

ks=$RESULTS_DIR/kfd.state hs=$RESULTS_DIR/hsakmt.state img=/tmp/img-25
rm -f "$ks"* "$hs"*
emu_reload preset=2xmi210 || { tap_not_ok "load the emulator (2xmi210)"; tap_done; }
spawn parent tree bash -c '
	"$1/kfd_workload" --state "$2" --vram-mb 2 --bo-mb 1 >"$4/kfd.out" 2>&1 &
	"$1/hsakmt_workload" --state "$3" --vram-mb 2 --bo-mb 1 >"$4/hsakmt.out" 2>&1 &
	wait' tree "$E2E_BIN" "$ks" "$hs" "$RESULTS_DIR"
if wait_for "[ -s '$ks' ] && [ -s '$hs' ]" 180; then
	tap_ok "both children get ready"
else
	tap_not_ok "both children get ready"
	tail -n 5 "$RESULTS_DIR"/kfd.out "$RESULTS_DIR"/hsakmt.out | sed 's/^/#   /'
	kill -KILL "$parent" $(pgrep -P "$parent") 2>/dev/null
	tap_done
fi
kpid=$(awk '$1 == "pid" { print $2 }' "$ks")
hpid=$(awk '$1 == "pid" { print $2 }' "$hs")
children=$(pgrep -P "$parent" | sort | tr '\n' ' ')
want=$(printf '%s\n' "$kpid" "$hpid" | sort | tr '\n' ' ')
if [ "$children" = "$want" ]; then
	tap_ok "both workloads are children of the parent $parent"
else
	tap_not_ok "both workloads are children of the parent $parent" "children: $children, workloads: $want"
fi

task_snapshot "$kpid" "$RESULTS_DIR/kfd.dumped"
task_snapshot "$hpid" "$RESULTS_DIR/hsakmt.dumped"
tap_dump "criu dump of the tree from the parent's pid" "$parent" "$img"
tap_image_files "the image has one amdgpu-kfd image per GPU process" 2 "$img"/amdgpu-kfd-*.img
wait_for "task_gone $parent /nonexistent && task_gone $kpid '$ks' && task_gone $hpid '$hs'" 10 ||
	kill -KILL "$parent" "$kpid" "$hpid" 2>/dev/null
wait_for "task_gone $parent /nonexistent && task_gone $kpid '$ks' && task_gone $hpid '$hs'" 10

tap_restore "criu restore of the tree" "$img"
if grep -q 'already in use' "$CRIU_LAST_LOG"; then
	tap_not_ok "no fd clash while restoring render-node fds (#2269)" "$(grep 'already in use' "$CRIU_LAST_LOG" | head -n1)"
else
	tap_ok "no fd clash while restoring render-node fds (#2269)"
fi
children=$(pgrep -P "$parent" | sort | tr '\n' ' ')
if [ "$children" = "$want" ]; then
	tap_ok "both workloads are children of the parent again"
else
	tap_not_ok "both workloads are children of the parent again" "children of $parent: ${children:-none}"
fi
tap_same_bos "kfd child: every BO at its VA with its handle" "$kpid" "$ks"
tap_same_bos "hsakmt child: every BO at its VA" "$hpid" "$hs"
tap_alive_verified "kfd child" "$kpid" "$ks"
tap_alive_verified "hsakmt child" "$hpid" "$hs"
tap_same_task "kfd child" "$RESULTS_DIR/kfd.dumped" "$kpid"
tap_same_task "hsakmt child" "$RESULTS_DIR/hsakmt.dumped" "$hpid"
kill -KILL "$parent" "$kpid" "$hpid" 2>/dev/null
e2e_done
