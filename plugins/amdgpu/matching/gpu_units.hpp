// SPDX-License-Identifier: GPL-2.0-only
//
// The image's elements and the units they form (gpu_matcher.hpp, step 2). An element is an image
// xGMI hive or, with the NUMA check, an image NUMA node: a set of image GPUs that must land
// together. Elements sharing a GPU (a hive spanning two NUMA nodes, say) form a unit, placed as
// a whole around its centre, the element adjacent to most others.
#pragma once

#include "matching/gpu_match_model.hpp"

#include <cstdint>
#include <map>
#include <vector>

namespace amdgpu::matching {

class ImageElements {
public:
	ImageElements(const std::vector<GpuFacts> &image, size_t hives, bool numa);

	// The image GPUs of an element.
	const std::vector<size_t> &gpus_of(const Element &e) const;
	// The elements of image GPU `s`: its hive, then (NUMA check) the NUMA nodes it links to.
	std::vector<Element> elements_of(size_t s) const;
	size_t gpu_count() const { return image_.size(); }

private:
	const std::vector<GpuFacts> &image_;
	bool numa_;
	std::vector<std::vector<size_t>> hive_gpus_;	   // image GPUs per image hive
	std::map<uint32_t, std::vector<size_t>> cpu_gpus_; // image GPUs per image CPU node they link to
};

struct Unit {
	std::vector<size_t> gpus; // image GPU indices
	std::vector<Element> elements;
	Element centre { false, 0 };
};

struct Units {
	std::vector<Unit> searched;	  // placed one by one, by the search
	std::vector<Element> numa_groups; // lone NUMA nodes, placed together by one matching
	std::vector<Element> numa_nodes;  // every image NUMA node of a unit, in unit order
};

// The units of the image; image GPUs in no element belong to none (the final matching places them).
Units build_units(const ImageElements &elements);

} // namespace amdgpu::matching
