#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Boots the test-bed guest (Debian's kernel under QEMU/TCG, the host's root over 9p) and runs one
# command in it, from the repo root, as root. Its output comes back on this terminal and its exit
# status becomes ours.
#
#   test/vm/run.sh [-v] [--mem MB] [--timeout S] [--keep] -- <command...>
#
# One argument after "--" is run as bash code (test/vm/run.sh -- 'criu check && uname -r');
# several are run as they are, without a shell (test/vm/run.sh -- criu check --all).
# $RESULTS_DIR in the guest is a host directory (build/vm/run-*/results) kept when not empty.
#
# Exit status: the command's; 124 if it ran out of time (guest or host side); 125 if the test bed
# failed (no status came back: guest died, panic, QEMU error).
set -euo pipefail
. "$(dirname "$0")/boot.sh"

usage() {
	sed -n 's/^#   //p' "$0" >&2
	exit 2
}

mem=2048 limit=600 verbose=0 keep=0
while [ $# -gt 0 ]; do
	case "$1" in
	--mem) mem=$2; shift 2 ;;
	--timeout) limit=$2; shift 2 ;;
	-v | --verbose) verbose=1; shift ;;
	--keep) keep=1; shift ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
[ $# -gt 0 ] || usage
case "$mem$limit" in *[!0-9]*) usage ;; esac

if [ $# -eq 1 ]; then
	script=$1
else
	script="exec$(printf ' %q' "$@")"
fi

vm_prepare
run="$VM_CACHE/run-$(date +%Y%m%d-%H%M%S)-$$"
vm_new_run "$run" "$limit" "export RESULTS_DIR=$(printf %q "$run/results")
$script"

set +e
vm_boot "$run" "$mem" stdio
qemu_rc=$?
set -e

if [ -e "$run/rc" ]; then
	rc=$(cat "$run/rc")
	if grep -q 'the command ran out of time' "$run/console.log" 2>/dev/null; then
		echo "vm: the command ran out of time (--timeout $limit) and was killed" >&2
	fi
else
	if [ "$qemu_rc" -eq 124 ]; then
		echo "vm: the guest did not finish in time; killed" >&2
		rc=124
	else
		echo "vm: the guest ended without a result (QEMU status $qemu_rc); last console lines:" >&2
		rc=125
	fi
	tail -n 30 "$run/console.log" 2>/dev/null | sed 's/^/  | /' >&2
	keep=1
fi

if [ "$verbose" -eq 1 ]; then
	echo "vm: boot overhead $(vm_elapsed "$run" qemu started) s (QEMU start to command start)," \
		"whole guest $(vm_elapsed "$run" qemu ended) s, run dir $run" >&2
fi
if [ "$keep" -eq 0 ] && [ -z "$(ls -A "$run/results")" ]; then
	rm -rf "$run"
elif [ "$verbose" -eq 0 ]; then
	echo "vm: kept $run" >&2
fi
# Keep the ten newest run directories.
ls -1dt "$VM_CACHE"/run-* 2>/dev/null | tail -n +11 | xargs -r rm -rf || true
exit "$rc"
