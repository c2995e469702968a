// SPDX-License-Identifier: GPL-2.0-only
//
// A checkpoint's GPU images checked against their sums without a GPU, as a restore would read them
// (amdgpu-topology --verify): a process's kfd image (or a render-node file's image), then each of
// its pages images front to back,
// holes counting as zeros, blocks left to earlier checkpoints read from criu's `parent` chain, every
// block summed and compared with amdgpu-sums-<id>.img.
#pragma once

#include "images/image_store.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace amdgpu {

struct ImagesVerdict {
	bool has_sums = false;	  // false: nothing could be checked (images without sums)
	size_t blocks = 0;	  // blocks of GPU memory checked
	uint64_t bytes = 0;	  // their size
	uint64_t chain_bytes = 0; // of them, read from earlier checkpoints (criu's `parent` chain)
	std::vector<std::string> pages_images;
};

// Throws Error naming the image, GPU, BO and offset of the first damage found (-EBADMSG), or the
// image that cannot be read.
ImagesVerdict verify_process_images(const ImageDir &dir, uint32_t id);
// The same for render-node image `id` (amdgpu-renderD-<id>.img) and the memory of its GEM objects.
ImagesVerdict verify_render_images(const ImageDir &dir, uint32_t id);

} // namespace amdgpu
