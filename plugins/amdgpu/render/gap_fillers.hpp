// SPDX-License-Identifier: GPL-2.0-only
//
// Ids a restore takes for the moment (GEM handles, context ids) so that the kernel's lowest-free
// allocation gives the next object the id it had: each is given back when the restore is done
// with them, or fails.
#pragma once

#include "support/log.hpp"

#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

namespace amdgpu {

class GapFillers {
public:
	// `release` gives an id back (0 or a negative errno); `what` names the ids in a warning.
	GapFillers(std::function<int(uint32_t)> release, const char *what) : release_(std::move(release)), what_(what)
	{
	}
	~GapFillers()
	{
		for (const uint32_t id : ids_)
			if (const int ret = release_(id))
				pr_warn("cannot give back %s %u, taken to fill a gap for the moment: %s", what_, id,
					strerror(-ret));
	}
	GapFillers(const GapFillers &) = delete;
	GapFillers &operator=(const GapFillers &) = delete;

	void add(uint32_t id) { ids_.push_back(id); }
	size_t size() const { return ids_.size(); }

private:
	std::function<int(uint32_t)> release_;
	const char *what_;
	std::vector<uint32_t> ids_;
};

} // namespace amdgpu
