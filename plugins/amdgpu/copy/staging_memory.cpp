// SPDX-License-Identifier: GPL-2.0-only
#include "copy/staging_memory.hpp"

#include "support/error.hpp"

#include <numa.h>

#include <cstdlib>

namespace amdgpu {

StagingMemory::StagingMemory(size_t size, int numa_node) : size_(size)
{
	if (numa_node >= 0 && numa_available() >= 0 && numa_node <= numa_max_node()) {
		data_ = static_cast<unsigned char *>(numa_alloc_onnode(size, numa_node));
		numa_ = data_ != nullptr;
	}
	if (!data_) {
		void *p = nullptr;
		if (const int err = posix_memalign(&p, 4096, size))
			fail_errno(err, "cannot allocate %zu bytes of staging memory", size);
		data_ = static_cast<unsigned char *>(p);
	}
}

StagingMemory::~StagingMemory()
{
	if (numa_)
		numa_free(data_, size_);
	else
		free(data_);
}

} // namespace amdgpu
