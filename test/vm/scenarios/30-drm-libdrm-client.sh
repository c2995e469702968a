#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The real libdrm_amdgpu against the emulator's render nodes on every preset
# (test/emu/clients/drm_sdma_client): device initialisation and queries, GEM
# BOs, userptr, GPU VAs, dma-buf export/import, SDMA copies/fills/writes
# verified byte by byte, the kernel's error codes, a faulting submission making
# its context guilty, and KFD VRAM reached through CRIU CHECKPOINT dma-bufs.
# On 2xmi210 it also moves 256 MiB each way through SDMA and reports the
# emulated engine's throughput (MB/s). Its TAP results become ours, prefixed
# with the preset, and the kernel log must stay free of warnings.
# timeout: 900
. test/vm/lib.sh

client=test/emu/clients/drm_sdma_client
emu_require "$client" "libdrm-dev missing at build time?"

dmesg_mark "30-drm-libdrm-client: begin"
for p in mi100 2xmi210 mi250x cpx8; do
	args=()
	[ "$p" != 2xmi210 ] || args=(--copy-mib 256)
	emu_tap_relay "$p" "the client" timeout 400 "$client" "${args[@]}"
done
tap_dmesg_clean "30-drm-libdrm-client: begin"
tap_done
