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
exit $status
