#!/usr/bin/env bash
# `make bench`: every benchmark, each printing its figures. Benchmarks never assert timing.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1

status=0
echo "=== GPU matcher (host)"
build/bench/matcher_bench || status=1
echo "=== The dump's zero test (host)"
build/bench/zero_test_bench || status=1
echo "=== The checksums of GPU memory (host)"
build/bench/checksum_bench || status=1

echo "=== BO transfer through the emulated SDMA engine (QEMU guest)"
if [ -x test/bench/transfer.sh ]; then
	test/vm/run.sh --mem 4096 --timeout 1200 -- test/bench/transfer.sh || status=1
else
	echo "transfer benchmark not present"
fi
echo "=== Checkpoint cost at two shapes of node: engine-bound and sink-bound, dense and sparse VRAM (QEMU guest)"
test/vm/run.sh --mem 4096 --timeout 1500 -- test/bench/node-shapes.sh || status=1
echo "=== Incremental GPU dumps against whole ones, restore from a chain, the checksums' cost (QEMU guest)"
test/vm/run.sh --mem 4096 --timeout 1800 -- test/bench/incremental.sh || status=1
echo "=== The GPU copy beside criu's own work: criu's own time, the copy's, the part hidden, engine-bound and sink-bound (QEMU guests: trixie with criu 4.3, bookworm with criu 3.17.1)"
# The trixie guest runs the workloads built in its own root (test/vm/README.md).
if test/vm/trixie-build.sh build/vm/bench-trixie-build.log; then
	# shellcheck disable=SC2016 # the guest expands $PATH
	VM_GUEST=trixie test/vm/run.sh --mem 6144 --timeout 1200 -- 'PATH=/opt/criu-4.3:$PATH test/bench/overlap.sh' || status=1
else
	echo "the trixie root's build failed: see build/vm/bench-trixie-build.log"
	status=1
fi
test/vm/run.sh --mem 6144 --timeout 1200 -- test/bench/overlap.sh || status=1
exit $status
