// SPDX-License-Identifier: GPL-2.0-only
//
// The arrays KFD RESTORE takes, computed from the kfd image and the GPU map; pure functions, no
// fds and no KFD.
//
// KFD wants one device bucket per GPU the restored task can see (every GPU its device cgroup
// allows, used by the image or not), each naming the local GPU (actual_gpu_id) and the id the
// process knows it by (user_gpu_id). A GPU of the image keeps the image's id. A local GPU the
// image does not use keeps its own id when that is free; when the image already gives that id to
// another GPU, it takes the next free id below it (wrapping from 1 to the largest id), so that no
// two buckets share a user id.
#pragma once

#include "criu-amdgpu.pb-c.h"

#include <linux/kfd_ioctl.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

// One bucket per local GPU, in `local_gpu_ids` order; drm_fd is left 0 for the caller.
// `image_to_local` maps the image's gpu_ids to local ones.
std::vector<kfd_criu_device_bucket> device_buckets(std::span<const uint32_t> local_gpu_ids,
						   const std::map<uint32_t, uint32_t> &image_to_local);

// One bucket per BO of the image, under the gpu_id the process knows (the image's). Throws
// Error(-EINVAL) naming `image` for a BO of a GPU the map lacks.
std::vector<kfd_criu_bo_bucket> bo_buckets(const CriuKfd &msg, const std::map<uint32_t, uint32_t> &image_to_local,
					   const std::string &image);

} // namespace amdgpu
