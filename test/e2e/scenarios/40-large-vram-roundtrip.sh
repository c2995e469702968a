#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A workload with 1 GiB of VRAM over two GPUs (512 MiB each, in BOs of 256 MiB) is dumped,
# killed, restored onto the emulator reloaded with other gpu_ids and render minors, and verified
# byte by byte; its queues beat again. Prints the dump and restore times and the plugin's per-GPU
# copy rate (figures, not checks). Images go to the host ($RESULTS_DIR, over 9p).
#
# E2E_ROUNDTRIP_MIB=N changes the VRAM per GPU (default 512).
# timeout: 600
. test/vm/lib.sh
. test/e2e/resource-lib.sh

vram_roundtrip 2 "${E2E_ROUNDTRIP_MIB:-512}" 256
tap_done
