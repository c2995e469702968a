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
echo "=== The plugin's host path at a node's speed: 1 to 8 GPUs, dense and sparse, a chain of five (host, images on tmpfs)"
build/bench/host_path_bench || status=1

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
	# 8 GiB guests: the sink-bound shape holds the images on the guest's tmpfs (2 GB), the
	# workload (1.5 GB) and the page cache of both reads; in 6 GiB the guest ran out of free
	# memory there and criu's restore read its pages at a fifth of the sink's rate.
	# Two host threads for the two vCPUs (QEMU's multi-threaded TCG), not the trixie guest's
	# default of one: beside each other, criu and the copy each need a CPU of their own, and on one
	# host thread the figures would measure QEMU, not the overlap. The price is the int3 oops that
	# made single the default (test/vm/boot.sh): a guest that dies of it (status 125) is booted
	# once more.
	overlap_trixie() {
		# shellcheck disable=SC2016 # the guest expands $PATH
		VM_GUEST=trixie VM_TCG_THREAD=multi test/vm/run.sh --mem 8192 --timeout 1200 -- 'PATH=/opt/criu-4.3:$PATH test/bench/overlap.sh'
	}
	overlap_trixie
	rc=$?
	if [ "$rc" = 125 ]; then
		echo "the trixie guest died (see the console log of the run above): once more"
		overlap_trixie
		rc=$?
	fi
	[ "$rc" = 0 ] || status=1
else
	echo "the trixie root's build failed: see build/vm/bench-trixie-build.log"
	status=1
fi
test/vm/run.sh --mem 8192 --timeout 1200 -- test/bench/overlap.sh || status=1
exit $status
