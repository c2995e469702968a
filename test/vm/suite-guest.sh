#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The guest half of the VM suite (test/vm/run-suite.sh is the host half): runs each scenario in
# order, from the repo root, each in a cgroup of its own under its time limit, and leaves per
# scenario in <results>/<name>/:
#   output   its stdout and stderr
#   dmesg    the kernel log lines written while it ran
#   seconds  how long it ran
#   *        whatever it wrote to $RESULTS_DIR (criu logs...)
#   rc       its exit status, written last (124: timed out)
#
# Usage (inside the guest): suite-guest.sh <results> <name>=<scenario-path>...
# (names may hold a "/": e2e/10-workloads-run)
set -u
results=$1
shift

# A scenario's "# timeout: N" line, or 300 s.
scenario_timeout() {
	local t
	t=$(sed -n 's/^# timeout: *\([0-9][0-9]*\) *$/\1/p' "$1" | head -n1)
	echo "${t:-300}"
}

for arg in "$@"; do
	name=${arg%%=*}
	scenario=${arg#*=}
	dir=$results/$name
	mkdir -p "$dir"
	limit=$(scenario_timeout "$scenario")
	echo "suite: $name (limit ${limit}s)"
	echo "suite: begin $name" >/dev/kmsg

	# The cgroup catches everything the scenario leaves behind, setsid'd and restored
	# processes included (criu restores a task into the cgroup it was dumped from).
	begin=$EPOCHREALTIME
	cg=/sys/fs/cgroup/scenario-${name//\//-}
	mkdir -p "$cg"
	(
		echo "$BASHPID" >"$cg/cgroup.procs"
		export RESULTS_DIR=$dir
		exec timeout -k 10 "$limit" "$scenario"
	) </dev/null >"$dir/output" 2>&1
	rc=$?
	awk -v a="$begin" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", b - a }' >"$dir/seconds"
	[ "$rc" -ne 124 ] || echo "suite: $name timed out after ${limit}s" >>"$dir/output"

	# (cgroup files have no size: read them.)
	left=$(<"$cg/cgroup.procs")
	if [ -n "$left" ]; then
		echo "suite: killing what $name left running: ${left//$'\n'/ }" >>"$dir/output"
		echo 1 >"$cg/cgroup.kill"
		for _ in $(seq 50); do
			[ -n "$(<"$cg/cgroup.procs")" ] || break
			sleep 0.1
		done
	fi
	rmdir "$cg" 2>/dev/null || echo "suite: cannot remove $cg, processes are still in it" >>"$dir/output"

	# Leave the next scenario a clean slate: no emulator loaded, and the guest's RAM back from
	# what the scenario left in /tmp (a tmpfs): checkpoint images, streams.
	rm -rf /tmp/img-* /tmp/stream-*
	if [ -d /sys/module/amdgpu ]; then
		echo "suite: $name left the emulator (module amdgpu) loaded; unloading it" >>"$dir/output"
		# Files of killed processes may take a moment to be released.
		for _ in $(seq 20); do
			rmmod amdgpu 2>/dev/null && break
			sleep 0.25
		done
		[ ! -d /sys/module/amdgpu ] || rmmod amdgpu >>"$dir/output" 2>&1
	fi

	echo "suite: end $name" >/dev/kmsg
	dmesg | sed -n "\\|suite: begin $name\$|,\$p" >"$dir/dmesg"
	echo "$rc" >"$dir/rc.tmp"
	mv "$dir/rc.tmp" "$dir/rc"
	echo "suite: $name exited $rc"
done
