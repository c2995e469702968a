// SPDX-License-Identifier: GPL-2.0-only
//
// The GEM objects of a render-node image made again, each under its old handle, in the file the
// restored task gets.
//
// The kernel gives every new object the lowest handle free in the file, 1 and up, and no ioctl
// can choose it (DRM_IOCTL_GEM_CHANGE_HANDLE, which upstream's plugin moves handles with, fails
// with EINVAL on every kernel since June 2026). So the objects are made in handle order, and each
// gap below the next one is first filled with a one-page object; once every object is in place
// the fillers are closed, and the gaps are free again as they were. An object that is a KFD buffer
// of the process comes back as an import of the restored buffer's dma-buf, allocated the same way.
// Then each object's GPU VA mappings are made again, as they were (upper-half addresses
// sign-extended, as GEM_VA wants them), and its memory is exported for the copy engine.
#pragma once

#include "driver/gpu_driver.hpp"
#include "render/render_image.hpp"
#include "support/unique_fd.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace amdgpu {

struct RestoredGem {
	// Per object whose memory the file's pages image holds, in image order: a dma-buf of it.
	std::vector<unique_fd> dmabufs;
	// mmap offsets, dumped -> restored, of those objects.
	std::vector<std::pair<uint64_t, uint64_t>> offsets;
	size_t fillers = 0;	   // gaps filled for the moment
	size_t kfd_buffers = 0;	   // imported from restored KFD buffers
	size_t without_buffer = 0; // KFD buffers the restore does not give back: their handles stay free
};

// A dma-buf of the KFD buffer the process had at `addr`, restored, or an invalid fd when there
// is none to be had.
using RestoredKfdBufferOf = std::function<unique_fd(uint64_t addr)>;

// Throws Error naming `image` and the object when a handle cannot be had (the file holds it
// already) or the kernel refuses an object or mapping; what was made stays in the file, which the
// failed restore closes.
RestoredGem restore_gem_objects(GpuDriver &driver, int fd, std::span<const GemEntry> entries, const std::string &image,
				const RestoredKfdBufferOf &kfd_buffer);

} // namespace amdgpu
