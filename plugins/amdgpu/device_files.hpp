// SPDX-License-Identifier: GPL-2.0-only
//
// Which files and mappings belong to this plugin: /dev/kfd and the DRM render nodes. Everything
// else is answered with -ENOTSUP so that criu asks the next plugin (or handles it itself).
#pragma once

#include <sys/stat.h>

namespace amdgpu {

enum class GpuFileKind {
	none,
	kfd,
	render_node,
};

inline constexpr unsigned int kDrmMajor = 226;
inline constexpr unsigned int kFirstRenderMinor = 128;
inline constexpr unsigned int kLastRenderMinor = 255;
inline constexpr const char *kKfdPath = "/dev/kfd";

// Classifies a file by its stat. The kfd major is dynamic: it is read from `kfd_path` (absent
// /dev/kfd means no file can be a kfd file, not an error).
GpuFileKind classify_device(const struct stat &st, const char *kfd_path = kKfdPath);

const char *to_string(GpuFileKind kind);

} // namespace amdgpu
