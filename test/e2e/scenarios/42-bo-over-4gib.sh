#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A single VRAM BO larger than 4 GiB (two BOs of 4104 MiB on one GPU, 8208 MiB in all)
# round-trips like scenario 40 and verifies every byte: sizes, SDMA packet counts and image
# offsets must all be 64-bit. It needs a guest of about 9 GiB and about four minutes under TCG
# (measured: 53 s to set up, dump 40 s, restore 54 s, two full verifications), so the main suite
# (3 GiB guest) skips it and `make check-full` (test/run-all.sh) runs it in a guest of its own:
#   VM_MEM=10240 VM_SCENARIOS='e2e/42-*' test/vm/run-suite.sh
# E2E_LARGE=1 forces it in a smaller guest (where it will run out of memory).
# timeout: 1500
. test/vm/lib.sh
. test/e2e/resource-lib.sh

mem_kib=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)
if [ "${E2E_LARGE:-0}" != 1 ] && [ "$mem_kib" -lt $((9 * 1024 * 1024)) ]; then
	echo "a BO over 4 GiB needs a guest of 9 GiB or more (this one has $((mem_kib / 1024)) MiB); see the script"
	exit 77
fi
vram_roundtrip 1 8208 4104
tap_done
