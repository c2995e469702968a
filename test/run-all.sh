#!/usr/bin/env bash
# The test command behind `make check`: the host unit tests, then the QEMU test bed. Every suite
# ends with its own "N passed, N failed[, N skipped]" line; this script adds them up and prints
# the grand total as its last line.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

total_passed=0 total_failed=0 total_skipped=0
# The checkpoint/restore scenarios, run once more under each newer criu users run (test/criu/):
# same node, other gpu_ids, process tree, -R, late failure, re-checkpoint, render-before-kfd,
# --stream, a ROCm runtime process and a short soak; under the newest hook ABI also criu killed
# mid-dump and mid-restore (criu 4.0 and newer run the post-dump script before the plugins' exit
# hook: there the guard has work to do).
CRIU_SCENARIOS='e2e/20-* e2e/21-* e2e/25-* e2e/26-* e2e/27-* e2e/28-* e2e/29-* e2e/32-* e2e/33-* e2e/60-*'
NEWEST_CRIU_SCENARIOS='e2e/90-* e2e/91-*'
CRIU_CYCLES=4
# `make check` gives the newer releases what differs between them. 4.1.1 (Debian trixie) and 4.2.1
# call the plugin alike (same hook arguments, criu owns UPDATE_VMA_MAP's fds) and 4.3-abi is
# 4.2.1's own code with 4.3's hook ABI: 4.1.1 restores on the same node and after -R; 4.3-abi runs
# the scenarios where its RESTORE_EXT_FILE retry flag and its hook order matter, and the basics.
# Re-checkpoint, the soak and the ROCm runtime process run under 3.17.1 there. `make check-full`
# (CHECK_CRIU_ALL=1) runs the whole list under 4.1.1, 4.2.1 and 4.3-abi.
DEFAULT_CRIU_VERSIONS='4.1.1 4.3-abi'
[ "${CHECK_CRIU_ALL:-0}" != 1 ] || DEFAULT_CRIU_VERSIONS='4.1.1 4.2.1 4.3-abi'
criu_scenarios() { # criu_scenarios <version> <newest version>
	if [ "${CHECK_CRIU_ALL:-0}" = 1 ]; then
		echo "$CRIU_SCENARIOS"
		[ "$1" != "$2" ] || echo "$NEWEST_CRIU_SCENARIOS"
	elif [ "$1" = "$2" ]; then
		echo "e2e/20-* e2e/21-* e2e/25-* e2e/26-* e2e/27-* e2e/29-* e2e/33-* $NEWEST_CRIU_SCENARIOS"
	else
		echo "e2e/20-* e2e/26-*"
	fi
}
start=$(date +%s)

run_suite() {
	local name=$1
	shift
	local out t0
	out=$(mktemp)
	t0=$(date +%s)
	echo "=== $name"
	"$@" 2>&1 | tee "$out"
	echo "=== $name: $(($(date +%s) - t0)) s"
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n1)
	if [ -z "$line" ]; then
		echo "FAIL: $name printed no result line"
		total_failed=$((total_failed + 1))
	else
		local p f s
		p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")
		f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
		s=$(sed -nE 's/.*, ([0-9]+) skipped.*/\1/p' <<<"$line")
		total_passed=$((total_passed + p))
		total_failed=$((total_failed + f))
		total_skipped=$((total_skipped + ${s:-0}))
	fi
	rm -f "$out"
}

run_suite "unit tests" test/unit/run.sh build/test/unit/unit-tests
run_suite "unit tests, the plugin as criu 4.3 calls it" test/unit/run.sh build/test/unit/criu-4.3-tests
# Every decoder of outside data under libFuzzer for a short smoke period (make fuzz runs longer).
run_suite "fuzzed decoders, ${FUZZ_SMOKE_SECONDS:=10} s each" test/fuzz/run.sh "$FUZZ_SMOKE_SECONDS" build/fuzz/fuzz_*
# Every document the tree cites is in the tree, and every section mark names a heading there.
run_suite "documentation" test/docs/run.sh
# before the VM suite: its installed-package scenario installs this .deb in the guest
run_suite "Debian package" test/package/run.sh
if [ "${SKIP_VM:-0}" = 1 ]; then
	echo "=== VM suite skipped (SKIP_VM=1)"
else
	# The soak at 5 cycles per workload (fd count, VRAM and criu's RSS are already flat by then);
	# make check-full gives it 50.
	run_suite "VM suite" env VM_CRIU=3.17.1 E2E_CYCLES="${E2E_CYCLES:-5}" test/vm/run-suite.sh
	# A BO over 4 GiB needs a guest larger than the suite's; it gets one of its own, in
	# make check-full (it copies 4 GiB each way under emulation: about 3 minutes).
	[ "${CHECK_CRIU_ALL:-0}" != 1 ] ||
		run_suite "VM suite, 10 GiB guest (BO over 4 GiB)" env VM_CRIU=3.17.1 VM_MEM=10240 VM_SCENARIOS='e2e/42-*' test/vm/run-suite.sh
	# GPU containers: Podman and its storage need a 4 GiB guest.
	run_suite "VM suite, 4 GiB guest (GPU containers under Podman)" env VM_CRIU=3.17.1 VM_MEM=4096 VM_SCENARIOS='e2e/8*' test/vm/run-suite.sh
	versions=${CHECK_CRIU_VERSIONS:-$DEFAULT_CRIU_VERSIONS}
	for criu in $versions; do
		scenarios=$(criu_scenarios "$criu" "${versions##* }" | tr '\n' ' ')
		run_suite "VM suite, criu $criu (checkpoint/restore scenarios)" \
			env VM_CRIU="$criu" VM_SCENARIOS="$scenarios" E2E_CYCLES="$CRIU_CYCLES" test/vm/run-suite.sh
	done
fi

echo "=== total time $(($(date +%s) - start)) s"
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
[ "$total_failed" -eq 0 ]
