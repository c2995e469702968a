#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# One GPU holding more than 2^31 bytes of VRAM (two BOs of 1028 MiB: 2056 MiB), so that the
# GPU's pages image and every offset into it pass 2 GiB — where upstream's 32-bit file offsets
# broke restore (criu#2812) — round-trips like scenario 40 and verifies every byte. The largest
# single BO the default suite guest (VM_MEM=3072) can hold is about 1 GiB, because the workloads
# split a GPU's VRAM into at least two equal BOs; a BO over 4 GiB is scenario 42 (opt-in).
# timeout: 600
. test/vm/lib.sh
. test/e2e/resource-lib.sh

vram_roundtrip 1 2056 1028
tap_done
