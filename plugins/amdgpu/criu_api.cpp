// SPDX-License-Identifier: GPL-2.0-only
#include "criu_api.hpp"

#include <dlfcn.h>

namespace amdgpu {

bool criu_takes_vma_fd_ownership()
{
	static const bool takes = dlsym(RTLD_DEFAULT, "cr_fchown") != nullptr;
	return takes;
}

} // namespace amdgpu
