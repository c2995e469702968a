// SPDX-License-Identifier: GPL-2.0-only
#include "copy/copy_overlap.hpp"

#include "support/error.hpp"

#include <algorithm>

namespace amdgpu {

double CopyOverlap::hidden_seconds() const
{
	return std::clamp(copy_seconds - waited_seconds, 0.0, copy_seconds);
}

std::string describe(const char *what, const CopyOverlap &o)
{
	return strprintf("%s: GPU copy %.3f s beside criu's own work of %.3f s: %.3f s of it hidden, criu waited "
			 "%.3f s for the rest",
			 what, o.copy_seconds, o.beside_seconds, o.hidden_seconds(), o.waited_seconds);
}

std::string describe_in_series(const char *what, double copy_seconds, const std::string &why)
{
	return strprintf("%s: GPU copy %.3f s in series with criu's own work (%s)", what, copy_seconds, why.c_str());
}

} // namespace amdgpu
