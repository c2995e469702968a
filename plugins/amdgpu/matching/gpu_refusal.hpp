// SPDX-License-Identifier: GPL-2.0-only
//
// The refusal report: when no mapping is found, what the user reads in criu's log. It names the
// first image GPU, hive or NUMA node that cannot be placed and the telling cause: the closest
// local GPU with each rule it breaks and both values, or the image GPUs (or NUMA nodes) that
// compete for too few local ones, or the local GPUs left out and why. Every sentence of the
// matcher's refusals is here but for the GPU and hive counts match_gpus checks first; it computes
// nothing the search relies on.
#pragma once

#include "matching/gpu_placement.hpp"

#include <string>
#include <vector>

namespace amdgpu::matching {

class RefusalReport {
public:
	explicit RefusalReport(const PlacementChecks &checks) : checks_(checks), rules_(checks.rules()) {}

	// Why the image GPUs `gpus` cannot all be placed (p null: as devices alone): the first one
	// left over, and either the closest local GPU (among `candidates`, default all) with every
	// difference, or the competitors that took the local GPUs it could use.
	std::string gpus(const std::vector<size_t> &gpus, const Placement *p,
			 const std::vector<size_t> *candidates = nullptr) const;
	// Why `e` may not go to `local`.
	std::string element(const Element &e, uint32_t local, const Placement &p) const;
	// Why feasible(p) is false.
	std::string infeasible(const Placement &p) const;
	// Why place_numa(p, cpus) fails.
	std::string numa(const Placement &p, const std::vector<Element> &cpus) const;

	// The search's refusals.
	std::string layer_element(const Element &e, const Placement &p) const;
	std::string crowded_out(const Element &e) const;
	std::string unit_without_place(const Unit &u) const;
	std::string unit(const Unit &u, std::string why) const;
	std::string numa_groups(const std::string &why) const;

private:
	std::string closest(size_t s, const std::vector<size_t> &cands, const Placement *p) const;
	std::string competitors(const Bipartite &b, size_t left, const std::vector<size_t> &gpus,
				const std::vector<size_t> &cands, const Placement *p) const;
	std::string left_out(size_t s, const std::vector<size_t> &taken, const std::vector<size_t> &cands,
			     const Placement *p) const;
	std::string numa_competition(const ElementMatching &m, size_t i, const std::vector<Element> &cpus) const;
	std::vector<size_t> dest_gpus_of(const Element &e, uint32_t local) const;
	std::string describe(const Element &e) const;
	std::string describe_local(const Element &e, uint32_t local) const;
	std::string describe(const Unit &u) const;

	const PlacementChecks &checks_;
	const PairRules &rules_;
};

} // namespace amdgpu::matching
