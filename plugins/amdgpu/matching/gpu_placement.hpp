// SPDX-License-Identifier: GPL-2.0-only
//
// What a placement allows (gpu_matcher.hpp, steps 2-3): the free local hives and NUMA nodes an
// image element may take, whether its GPUs fit there, and the lookahead that keeps a choice from
// starving the rest: every image GPU still finds a local GPU, and the image hives and NUMA nodes
// not placed yet still find distinct free local ones that take their GPUs. Computes only; the
// search (gpu_placement_search.hpp) decides, the refusal report (gpu_refusal.hpp) explains.
#pragma once

#include "matching/gpu_pair_rules.hpp"
#include "matching/gpu_units.hpp"

#include <map>
#include <set>
#include <vector>

namespace amdgpu::matching {

// Image elements (left) against the free local hives or NUMA nodes (right), edges meaning "may
// go there".
struct ElementMatching {
	std::vector<uint32_t> locals; // right vertices: free local hives or NUMA nodes
	Bipartite b;
};

class PlacementChecks {
public:
	PlacementChecks(const Topology &src, const Topology &dest, const PairRules &rules,
			const ImageElements &elements, const Units &units);

	const Topology &src() const { return src_; }
	const Topology &dest() const { return dest_; }
	const PairRules &rules() const { return rules_; }
	const ImageElements &elements() const { return elements_; }
	// Nothing placed yet.
	Placement empty() const { return Placement(src_.hives().size(), dest_.hives().size()); }

	// Free local hives (by index) or NUMA nodes (by node id), in topology order.
	std::vector<uint32_t> free_locals(bool hives, const Placement &p) const;
	// Free local hives or NUMA nodes for `e`, most likely first: same node ids, then the
	// tightest fit.
	std::vector<uint32_t> candidates(const Element &e, const Placement &p) const;

	// Whether the GPUs of `e` fit on `local`, given `p`.
	bool own_gpus_fit(const Element &e, uint32_t local, const Placement &p) const;
	// Whether `e` may go to `local`: its own GPUs fit there and the result stays feasible.
	bool element_fits(const Element &e, uint32_t local, const Placement &p) const;
	// A necessary condition for completing `p` (see above).
	bool feasible(const Placement &p) const;
	// The image hives not placed yet, and whether they find distinct free local hives.
	std::vector<size_t> unplaced_hives(const Placement &p) const;
	bool hives_find_places(const Placement &p) const;
	// The image NUMA nodes not placed yet.
	std::vector<Element> unplaced_numa_nodes(const Placement &p) const;

	// The image NUMA nodes `cpus` against the free local ones, edges meaning "its GPUs fit there".
	ElementMatching match_numa(const Placement &p, const std::vector<Element> &cpus) const;
	// Places the image NUMA nodes `cpus` (not placed yet), each on its own free local NUMA node,
	// if all find one. For NUMA groups without hives this is exact when every local GPU hangs
	// off one NUMA node: a group only uses GPUs of the NUMA node it gets, so the choices of
	// different groups are independent. For NUMA nodes of hive units it is a necessary condition.
	bool place_numa(Placement &p, const std::vector<Element> &cpus) const;

private:
	std::vector<uint32_t> hive_candidates(const Element &e, const Placement &p) const;
	bool numa_fits(const Element &e, uint32_t local, const Placement &p) const;

	const Topology &src_, &dest_;
	const PairRules &rules_;
	const ImageElements &elements_;
	std::vector<Element> numa_nodes_;
	// Lone image NUMA nodes: the local NUMA nodes their GPUs fit on, placement aside.
	std::map<uint32_t, std::set<uint32_t>> group_fits_;
};

} // namespace amdgpu::matching
