// SPDX-License-Identifier: GPL-2.0-only
//
// GPU matching on restore: which local GPU takes the place of each checkpointed one.
//
// The source topology comes from the image, the destination is this node's. Acceptance follows
// upstream's plugin: a local GPU may replace an image GPU when the properties that define the
// device are equal, the ones that may grow (firmware, VRAM, GWS, caches) are at least as large,
// and its links are at least as good; an xGMI hive of the image lands inside one local hive (one
// image hive per local hive), and with the NUMA check the GPUs of one image NUMA node land on one
// local NUMA node, image NUMA nodes mapping one-to-one. gpu_ids and render minors are never
// compared. Unlike upstream, the node may have more GPUs than the image (the extra ones stay
// unused), and the image may describe only the GPUs a container could see.
//
// How, in polynomial time (no backtracking over GPUs):
//  1. Every image/local GPU pair is checked once (properties, links). A Hopcroft-Karp matching
//     on these pairs alone finds the GPUs nothing can stand in for; the error names the closest
//     local GPU and what differs.
//  2. Image GPUs tied together by a hive or (NUMA check) a NUMA node form units. Units holding
//     a hive are placed one by one, most constrained first: the unit's most connected hive or
//     NUMA node (its centre) tries each free local candidate, then its neighbouring hives and
//     NUMA nodes are assigned layer by layer by a bipartite matching whose edges say "fits
//     there" (itself a GPU matching).
//  3. Every choice must leave the rest solvable as far as three matchings can tell: all image
//     GPUs still find distinct local GPUs, and the image hives and NUMA nodes not placed yet
//     find distinct free local ones that take their GPUs.
//  4. The NUMA groups without hives are then placed together by one matching of image NUMA nodes
//     onto local ones, and a last Hopcroft-Karp matching assigns every GPU.
//
// Exactness. When every GPU links to exactly one NUMA node (as KFD describes discrete GPUs) and
// the image has at most one xGMI hive, this finds a mapping whenever one exists: every local
// place for the hive is tried, and given it the NUMA nodes are a bipartite matching whose edges
// are exact, which the lookahead of step 3 keeps solvable. With several hives, choices are
// checked against those necessary conditions and never revisited, so it can refuse a mapping
// exhaustive search finds when hives and NUMA nodes interlock (say image hives A on NUMA 0+1 and
// B on NUMA 1+2, and a local node where only one of two places for A leaves room for B that the
// per-hive checks cannot see). A local GPU linked to several NUMA nodes, or an image GPU linked
// to none, also breaks the independence the exact cases rely on. No real machine type we know
// has any of this (PCIe cards, bridged MI100/MI210 per socket, MI250X and MI300X hives, CPX
// partitions, container subsets of these), and on random topologies of those shapes, several
// hives included, it agrees with exhaustive search (a unit test checks thousands).
//
// Where each part lives (internal headers, namespace amdgpu::matching):
//  - match_policy.hpp: the checks the user switched off, obeyed by every step.
//  - gpu_pair_rules.hpp: which local GPU may take which image GPU and, for each rule, why not
//    (step 1, and the hive and NUMA rules under a placement); the GPU matchings on them.
//  - bipartite_matching.hpp: Hopcroft-Karp, and the competitors when Hall's condition fails.
//  - gpu_units.hpp: the image's hives and NUMA nodes (elements) and the units they form.
//  - gpu_placement.hpp: where an element may go, and the lookahead of step 3.
//  - gpu_placement_search.hpp: the search of steps 2 and 4 (the units one by one, then the
//    NUMA groups together).
//  - gpu_refusal.hpp: what a refusal says (but for the counts match_gpus checks first).
//  - gpu_matcher.cpp: match_gpus, the steps in order, and the last matching of step 4.
#pragma once

#include "matching/match_policy.hpp"
#include "topology/topology.hpp"

#include <cstdint>
#include <map>

namespace amdgpu {

struct GpuMap {
	std::map<uint32_t, uint32_t> gpu_ids;	// image gpu_id -> local gpu_id
	std::map<uint32_t, uint32_t> cpu_nodes; // image CPU node -> local CPU node (NUMA check only)
};

// Throws Error(-EINVAL) explaining, for the first image GPU that cannot be placed, which local
// candidate came closest and which property or link differs, with both values.
GpuMap match_gpus(const Topology &src, const Topology &dest, const MatchPolicy &policy);

} // namespace amdgpu
