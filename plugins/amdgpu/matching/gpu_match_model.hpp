// SPDX-License-Identifier: GPL-2.0-only
//
// The words the GPU matcher's rooms share (gpu_matcher.hpp tells the algorithm): the facts of one
// GPU that the rules look at, an element (an image hive or NUMA node, what the search places) and
// a placement (where the elements placed so far went). GPUs are named by their index in
// Topology::gpus() of their side: `s` for the image (source), `d` for the local node.
#pragma once

#include "matching/bipartite_matching.hpp"
#include "topology/topology.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace amdgpu::matching {

// One GPU of either side.
struct GpuFacts {
	const Node *node;
	int hive;			       // index into the topology's hives(), or kNone
	std::vector<const IoLink *> cpu_links; // valid links to CPU (NUMA) nodes
	size_t links;			       // valid links of any kind
};

std::vector<GpuFacts> gpu_facts(const Topology &t);

// An image hive (index into src.hives()) or an image CPU node (its node id).
struct Element {
	bool is_hive;
	uint32_t id;

	bool operator==(const Element &) const = default;
};

// Where the image's hives and CPU (NUMA) nodes go, as decided so far.
struct Placement {
	std::vector<int> hive;		  // per image hive: local hive index or kNone
	std::vector<bool> dest_hive_used; // per local hive
	std::map<uint32_t, uint32_t> cpu; // image CPU node -> local CPU node
	std::set<uint32_t> dest_cpu_used;

	Placement(size_t image_hives, size_t local_hives) : hive(image_hives, kNone), dest_hive_used(local_hives, false)
	{
	}

	void assign(const Element &e, uint32_t local);
	// A copy with `e` on `local`: a trial.
	Placement with(const Element &e, uint32_t local) const;
};

} // namespace amdgpu::matching
