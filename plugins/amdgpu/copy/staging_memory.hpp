// SPDX-License-Identifier: GPL-2.0-only
#pragma once

#include <cstddef>

namespace amdgpu {

// Page-aligned host memory for SDMA staging, placed on `numa_node` when the system has NUMA and
// the node exists (the GPU's copy engine then reads and writes local memory), else anywhere.
class StagingMemory {
public:
	StagingMemory(size_t size, int numa_node);
	~StagingMemory();
	StagingMemory(const StagingMemory &) = delete;
	StagingMemory &operator=(const StagingMemory &) = delete;

	unsigned char *data() const { return data_; }
	size_t size() const { return size_; }

private:
	unsigned char *data_ = nullptr;
	size_t size_;
	bool numa_ = false;
};

} // namespace amdgpu
