// SPDX-License-Identifier: GPL-2.0-only
//
// Maximum bipartite matching (Hopcroft-Karp), O(E sqrt(V)). Edges are added in order of
// preference; a greedy first pass takes them in that order, so the preferred pairing (an identity
// mapping, say) wins whenever it is a perfect matching. The GPU matcher uses it for GPUs onto
// GPUs, hives onto hives and NUMA nodes onto NUMA nodes (gpu_matcher.hpp).
#pragma once

#include <cstddef>
#include <vector>

namespace amdgpu::matching {

inline constexpr int kNone = -1;

class Bipartite {
public:
	Bipartite(size_t left, size_t right) : adj_(left), match_left_(left, kNone), match_right_(right, kNone) {}

	void add_edge(size_t l, size_t r) { adj_[l].push_back(static_cast<int>(r)); }

	// Returns the size of a maximum matching.
	size_t solve();

	int left_match(size_t l) const { return match_left_[l]; }
	int right_match(size_t r) const { return match_right_[r]; }
	const std::vector<int> &edges(size_t l) const { return adj_[l]; }
	// After solve(): whether every left vertex is matched.
	bool complete() const;

	// After solve(), for a left vertex left unmatched: the left vertices competing with it (all
	// those whose every edge leads into the right vertices reachable by alternating paths from
	// it) and those right vertices, fewer than the competitors (Hall's condition fails there).
	void competition(size_t left, std::vector<size_t> &lefts, std::vector<size_t> &rights) const;

private:
	size_t greedy();
	bool layer();
	bool augment(int l);
	std::vector<bool> reachable_rights(size_t left) const;

	std::vector<std::vector<int>> adj_;
	std::vector<int> match_left_, match_right_, dist_;
};

} // namespace amdgpu::matching
