// SPDX-License-Identifier: GPL-2.0-only
//
// GPU matching on restore: which local GPU takes the place of each checkpointed one.
#pragma once

namespace amdgpu {

// The switchable acceptance checks, one per KFD_*_CHECK environment variable (all on by default).
struct MatchPolicy {
	bool fw_version = true;
	bool sdma_fw_version = true;
	bool caches_count = true;
	bool num_gws = true;
	bool vram_size = true;
	bool numa = true;
	bool capability = true;
};

} // namespace amdgpu
