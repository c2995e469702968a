// SPDX-License-Identifier: GPL-2.0-only
#include "matching/gpu_units.hpp"

#include "topology/disjoint_sets.hpp"

#include <algorithm>
#include <numeric>
#include <set>

namespace amdgpu::matching {

ImageElements::ImageElements(const std::vector<GpuFacts> &image, size_t hives, bool numa)
    : image_(image), numa_(numa), hive_gpus_(hives)
{
	for (size_t s = 0; s < image_.size(); s++) {
		if (image_[s].hive != kNone)
			hive_gpus_[static_cast<size_t>(image_[s].hive)].push_back(s);
		for (const IoLink *l : image_[s].cpu_links) {
			std::vector<size_t> &gpus = cpu_gpus_[l->node_to];
			if (gpus.empty() || gpus.back() != s)
				gpus.push_back(s);
		}
	}
}

const std::vector<size_t> &ImageElements::gpus_of(const Element &e) const
{
	static const std::vector<size_t> none;
	if (e.is_hive)
		return hive_gpus_[e.id];
	const auto it = cpu_gpus_.find(e.id);
	return it == cpu_gpus_.end() ? none : it->second;
}

std::vector<Element> ImageElements::elements_of(size_t s) const
{
	std::vector<Element> out;
	if (image_[s].hive != kNone)
		out.push_back({ true, static_cast<uint32_t>(image_[s].hive) });
	if (numa_)
		for (const IoLink *l : image_[s].cpu_links)
			if (std::find(out.begin(), out.end(), Element { false, l->node_to }) == out.end())
				out.push_back({ false, l->node_to });
	return out;
}

namespace {

// Union-find over image GPUs: GPUs sharing an element get one root.
std::vector<size_t> unit_roots(const ImageElements &elements)
{
	DisjointSets sets(elements.gpu_count());
	std::map<std::pair<bool, uint32_t>, size_t> first_of; // element -> first GPU seen with it
	for (size_t s = 0; s < sets.size(); s++) {
		for (const Element &e : elements.elements_of(s)) {
			auto [it, inserted] = first_of.try_emplace({ e.is_hive, e.id }, s);
			if (!inserted)
				sets.join(s, it->second);
		}
	}
	std::vector<size_t> roots(sets.size());
	for (size_t s = 0; s < roots.size(); s++)
		roots[s] = sets.root(s);
	return roots;
}

// The elements sharing a GPU with `e`.
size_t degree(const ImageElements &elements, const Element &e)
{
	std::set<std::pair<bool, uint32_t>> neighbours;
	for (size_t s : elements.gpus_of(e))
		for (const Element &other : elements.elements_of(s))
			if (!(other == e))
				neighbours.insert({ other.is_hive, other.id });
	return neighbours.size();
}

// The centre: the element adjacent to most others (a hive spanning NUMA nodes, or a NUMA node
// holding several hives); ties go to hives, then to the bigger element.
Element centre_of(const ImageElements &elements, const Unit &u)
{
	Element centre = u.elements.front();
	size_t best_degree = degree(elements, centre), best_size = elements.gpus_of(centre).size();
	for (const Element &e : u.elements) {
		const size_t d = degree(elements, e), size = elements.gpus_of(e).size();
		const bool better = d > best_degree || (d == best_degree && e.is_hive && !centre.is_hive) ||
				    (d == best_degree && e.is_hive == centre.is_hive && size > best_size);
		if (better) {
			centre = e;
			best_degree = d;
			best_size = size;
		}
	}
	return centre;
}

// The units, in order of their root GPU.
std::vector<Unit> connected_units(const ImageElements &elements)
{
	const std::vector<size_t> roots = unit_roots(elements);
	std::map<size_t, Unit> by_root;
	for (size_t s = 0; s < roots.size(); s++) {
		const std::vector<Element> of = elements.elements_of(s);
		if (of.empty())
			continue; // placed by the final matching alone
		Unit &u = by_root[roots[s]];
		u.gpus.push_back(s);
		for (const Element &e : of)
			if (std::find(u.elements.begin(), u.elements.end(), e) == u.elements.end())
				u.elements.push_back(e);
	}
	std::vector<Unit> units;
	for (auto &[r, u] : by_root) {
		u.centre = centre_of(elements, u);
		units.push_back(std::move(u));
	}
	return units;
}

} // namespace

Units build_units(const ImageElements &elements)
{
	Units out;
	for (Unit &u : connected_units(elements)) {
		for (const Element &e : u.elements)
			if (!e.is_hive)
				out.numa_nodes.push_back(e);
		if (u.elements.size() == 1 && !u.centre.is_hive)
			out.numa_groups.push_back(u.centre);
		else
			out.searched.push_back(std::move(u));
	}
	return out;
}

} // namespace amdgpu::matching
