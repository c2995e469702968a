// SPDX-License-Identifier: GPL-2.0-only
//
// Which local GPU may take the place of which image GPU, and why not: the per-pair rules of GPU
// matching (gpu_matcher.hpp), and the GPU matchings built on them.
//
// A pair is judged on the device alone (its properties and links, once per pair) and, during the
// placement search, on where the image GPU's hive and NUMA nodes have gone so far. Every rule has
// its reason, a clause naming the local value and the image's ("has fw_version 78 < 80 (...)"),
// which the refusal report (gpu_refusal.hpp) puts together.
#pragma once

#include "matching/gpu_match_model.hpp"
#include "matching/match_policy.hpp"

#include <string>
#include <vector>

namespace amdgpu::matching {

class PairRules {
public:
	PairRules(const Topology &src, const Topology &dest, const MatchPolicy &policy);

	const std::vector<GpuFacts> &image() const { return image_; }
	const std::vector<GpuFacts> &local() const { return local_; }
	// Every image GPU: 0 .. image().size() - 1.
	const std::vector<size_t> &all() const { return all_; }

	// Whether local GPU `d` may take image GPU `s`: as a device (p null), or also within `p`.
	bool allowed(size_t s, size_t d, const Placement *p) const;
	// Why not: one reason per rule broken, device rules first; empty when allowed.
	std::vector<std::string> why_not(size_t s, size_t d, const Placement *p) const;

	// Image GPUs `gpus` onto distinct local GPUs that allow them, each preferring the local GPU at
	// its own node id.
	Bipartite match(const std::vector<size_t> &gpus, const Placement *p) const;
	// Whether that matching places every one of `gpus`.
	bool fits(const std::vector<size_t> &gpus, const Placement &p) const;

private:
	std::vector<std::string> device_reasons(size_t s, size_t d) const;
	void link_reasons(size_t s, size_t d, std::vector<std::string> &why) const;
	static void partition_reasons(const NodeProperties &image, const NodeProperties &local,
				      std::vector<std::string> &why);
	const char *hive_refusal(size_t s, size_t d, const Placement &p) const;
	bool numa_attached(const IoLink &image_link, size_t d, const Placement &p) const;
	void numa_reasons(size_t s, size_t d, const Placement &p, std::vector<std::string> &why) const;
	std::vector<size_t> preferred_locals(size_t s) const;

	const MatchPolicy policy_; // a copy: seven switches
	std::vector<GpuFacts> image_, local_;
	std::vector<size_t> all_;
	std::vector<std::vector<size_t>> preferred_; // per image GPU: local GPUs, same node id first
	std::vector<std::vector<uint8_t>> device_ok_;
};

} // namespace amdgpu::matching
