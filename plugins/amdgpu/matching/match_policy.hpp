// SPDX-License-Identifier: GPL-2.0-only
//
// Which of the matcher's acceptance checks are on: what the user decides (sessions/options.hpp reads
// it from the environment and criu's plugin options) and every step of the matching obeys. A
// header of its own, below both, so that the matcher's parts never depend on its front
// (gpu_matcher.hpp).
#pragma once

namespace amdgpu {

// The switchable acceptance checks, one per KFD_*_CHECK environment variable (all on by default).
struct MatchPolicy {
	bool fw_version = true;	     // KFD_FW_VER_CHECK: local fw_version >= image
	bool sdma_fw_version = true; // KFD_SDMA_FW_VER_CHECK
	bool caches_count = true;    // KFD_CACHES_COUNT_CHECK
	bool num_gws = true;	     // KFD_NUM_GWS_CHECK
	bool vram_size = true;	     // KFD_VRAM_SIZE_CHECK
	bool numa = true;	     // KFD_NUMA_CHECK: keep the GPUs of a NUMA node together
	bool capability = true;	     // KFD_CAPABILITY_CHECK: capability bits equal
};

} // namespace amdgpu
