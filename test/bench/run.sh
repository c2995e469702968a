#!/usr/bin/env bash
# `make bench`: every benchmark, each printing its figures. Benchmarks never assert timing.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1

status=0
echo "=== GPU matcher (host)"
build/bench/matcher_bench || status=1

echo "=== BO transfer through the emulated SDMA engine (QEMU guest)"
if [ -x test/bench/transfer.sh ]; then
	test/vm/run.sh --mem 4096 --timeout 1200 -- test/bench/transfer.sh || status=1
else
	echo "transfer benchmark not present"
fi
exit $status
