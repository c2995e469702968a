#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make demo`: the product on the emulated test bed. Today it boots the guest, loads the emulator
# as a node with two MI210 GPUs, and shows that node's topology as the plugin sees it. It says
# what it did and what it did not; checkpoint/restore of a GPU workload joins it when it lands.
#
#   test/vm/demo.sh [-v]     (-v: also the boot overhead)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

if [ ! -e test/emu/Makefile ]; then
	echo "demo: the emulator (test/emu) is not there; nothing to show" >&2
	exit 1
fi
echo "demo: building the emulator (make -C test/emu)"
mkdir -p build/vm
make -s -C test/emu >build/vm/demo-emu-build.log 2>&1 ||
	{ tail -n 20 build/vm/demo-emu-build.log >&2; echo "demo: the emulator does not build" >&2; exit 1; }

echo "demo: booting the test-bed guest (Debian's 6.1 kernel under QEMU/TCG, real criu 3.17.1)"
exec test/vm/run.sh "$@" --timeout 300 -- test/vm/demo-guest.sh
