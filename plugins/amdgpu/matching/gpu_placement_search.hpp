// SPDX-License-Identifier: GPL-2.0-only
//
// The placement search (gpu_matcher.hpp, steps 2-4): where each image hive and NUMA node goes.
// Units are placed one by one, most constrained first; a unit's centre tries each free local
// candidate, then its other elements follow layer by layer, each layer by one matching. Every
// choice is checked against the lookahead of PlacementChecks and never revisited. The lone NUMA
// nodes go last, together, by one matching.
#pragma once

#include "matching/gpu_refusal.hpp"

#include <optional>
#include <string>
#include <vector>

namespace amdgpu::matching {

class PlacementSearch {
public:
	PlacementSearch(const PlacementChecks &checks, const RefusalReport &report, const Units &units)
	    : checks_(checks), report_(report), units_(units)
	{
	}

	// Throws Error(-EINVAL) with the report's account of the first unit that fits nowhere.
	Placement run() const;

private:
	std::vector<size_t> most_constrained_first() const;
	Placement place_unit(const Unit &unit, const Placement &p) const;
	std::optional<Placement> embed(const Unit &unit, uint32_t local_centre, const Placement &base,
				       std::string &why) const;
	bool place_layer(const std::vector<Element> &layer, Placement &p, std::string &why) const;
	ElementMatching match_layer(const std::vector<Element> &layer, const Placement &p) const;
	bool place_one_by_one(const std::vector<Element> &layer, Placement &p, std::string &why) const;

	const PlacementChecks &checks_;
	const RefusalReport &report_;
	const Units &units_;
};

} // namespace amdgpu::matching
