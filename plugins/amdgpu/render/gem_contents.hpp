// SPDX-License-Identifier: GPL-2.0-only
//
// A GEM object's memory as the copy engine (bo_transfer.hpp) sees a KFD buffer's: a bucket of
// the GPU the image names, VRAM or GTT as its domains say (system memory goes as GTT: the engine
// reaches both through the same GART), at its first GPU address (only messages show it), read
// and written through a dma-buf of it. A render-node file's objects thus share the pages images,
// checksums, sparse blocks and earlier-checkpoint chains of the kfd files.
#pragma once

#include "driver/gem_ioctl.hpp"
#include "driver/kfd_ioctl.hpp"

#include <amdgpu_drm.h>

#include <cstdint>
#include <vector>

namespace amdgpu {

inline kfd_criu_bo_bucket gem_bucket(uint32_t image_gpu_id, const gem::Object &o,
				     const std::vector<gem::Mapping> &mappings, int dmabuf_fd)
{
	kfd_criu_bo_bucket b = {};
	b.gpu_id = image_gpu_id;
	b.addr = mappings.empty() ? 0 : gem::sign_extended(mappings.front().addr);
	b.size = o.size;
	b.alloc_flags = (o.preferred_domains & AMDGPU_GEM_DOMAIN_VRAM) ? KFD_IOC_ALLOC_MEM_FLAGS_VRAM
								       : KFD_IOC_ALLOC_MEM_FLAGS_GTT;
	b.dmabuf_fd = static_cast<uint32_t>(dmabuf_fd);
	return b;
}

} // namespace amdgpu
