// SPDX-License-Identifier: GPL-2.0-only
//
// The image of one render-node file, amdgpu-renderD-<id>.img (criu_render_node): its GPU, and one
// drm_bo_entry per GEM object in handle order, with the fields upstream's plugin writes (the
// alignment in the kernel's pages, as LIST_HANDLES gives it; `addr` the VA of the last mapping,
// `offset` the mmap offset) and two of ours: whether the memory is in the file's pages image or is
// a KFD buffer's (of the file's process, or of another process of the dump), and which. For a process without KFD state
// it also names the process and describes the GPU (topology_image.hpp), so that the restore can match it to a local GPU
// with another id, and the file's contexts with their rings' fence sequences (render_contexts.hpp).
#pragma once

#include "criu-amdgpu.pb-c.h"
#include "driver/gem_ioctl.hpp"
#include "render/gem_dump.hpp"
#include "render/render_contexts.hpp"
#include "topology/topology_image.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

struct RenderImageParts {
	uint32_t id = 0;
	uint32_t gpu_id = 0; // the id the process knows
	unsigned int minor = 0;
	uint32_t pid = 0;			// 0: not written
	const DeviceEntries *devices = nullptr; // null: not written
	std::span<const GemObjectState> objects;
	std::span<const ContextState> contexts;
};

std::vector<uint8_t> pack_render_image(const RenderImageParts &parts);

// One GEM object as the image describes it.
struct GemEntry {
	gem::Object object;
	std::vector<gem::Mapping> mappings;
	uint64_t mmap_offset = 0;
	std::optional<uint64_t> kfd_addr; // a KFD buffer, saved with it
	bool other_process = false;	  // of another process of the dump (then not given back here)
};

// The image's objects, checked: handles rising from 1 up to INT_MAX, sizes and mappings in whole
// pages and within their objects. Throws Error(-EINVAL) naming the image and the entry.
std::vector<GemEntry> gem_entries(const CriuRenderNode &msg, const std::string &image);

} // namespace amdgpu
