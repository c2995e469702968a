// SPDX-License-Identifier: GPL-2.0-only
#include "device_files.hpp"

#include <sys/sysmacros.h>

namespace amdgpu {

GpuFileKind classify_device(const struct stat &st, const char *kfd_path)
{
	if (!S_ISCHR(st.st_mode))
		return GpuFileKind::none;

	struct stat kfd;
	if (!stat(kfd_path, &kfd) && S_ISCHR(kfd.st_mode) && major(st.st_rdev) == major(kfd.st_rdev) &&
	    minor(st.st_rdev) == 0)
		return GpuFileKind::kfd;

	const unsigned int minor_nr = minor(st.st_rdev);
	if (major(st.st_rdev) == kDrmMajor && minor_nr >= kFirstRenderMinor && minor_nr <= kLastRenderMinor)
		return GpuFileKind::render_node;

	return GpuFileKind::none;
}

const char *to_string(GpuFileKind kind)
{
	switch (kind) {
	case GpuFileKind::kfd:
		return "/dev/kfd";
	case GpuFileKind::render_node:
		return "render node";
	case GpuFileKind::none:
		break;
	}
	return "not a GPU file";
}

} // namespace amdgpu
