// SPDX-License-Identifier: GPL-2.0-only
//
// Union-find over the elements 0..n-1, with path halving: used to group GPUs into xGMI hives
// (topology.cpp) and image GPUs into placement units (gpu_units.cpp).
#pragma once

#include <cstddef>
#include <numeric>
#include <vector>

namespace amdgpu {

class DisjointSets {
public:
	explicit DisjointSets(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), size_t { 0 }); }

	size_t root(size_t i)
	{
		while (parent_[i] != i)
			i = parent_[i] = parent_[parent_[i]];
		return i;
	}

	// a's set joins b's: the root of b's set becomes the root of both.
	void join(size_t a, size_t b) { parent_[root(a)] = root(b); }

	size_t size() const { return parent_.size(); }

private:
	std::vector<size_t> parent_;
};

} // namespace amdgpu
