#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make demo`: the product on the emulated test bed. Boots the guest and runs
# test/e2e/demo-guest.sh there: a libhsakmt workload on an emulated node with two MI210 GPUs is
# checkpointed with criu and the plugin, restored on "another node" (other gpu_ids and render
# minors), verified, and summarised (GPU mapping, image sizes, times, MB/s per GPU).
#
#   test/vm/demo.sh [-v]     (-v: also the boot overhead)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

if [ ! -e test/emu/Makefile ]; then
	echo "demo: the emulator (test/emu) is not there; nothing to show" >&2
	exit 1
fi
echo "demo: building the emulator and the GPU workloads (make -C test/emu, make -C test/e2e)"
mkdir -p build/vm
{ make -s -C test/emu && make -s -C test/e2e; } >build/vm/demo-build.log 2>&1 ||
	{ tail -n 20 build/vm/demo-build.log >&2; echo "demo: the emulator or the workloads do not build" >&2; exit 1; }

echo "demo: booting the test-bed guest (Debian's 6.1 kernel under QEMU/TCG, real criu 3.17.1)"
exec test/vm/run.sh "$@" --timeout 600 -- test/e2e/demo-guest.sh
