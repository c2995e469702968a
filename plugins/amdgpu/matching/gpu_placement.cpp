// SPDX-License-Identifier: GPL-2.0-only
#include "matching/gpu_placement.hpp"

#include <algorithm>

namespace amdgpu::matching {

PlacementChecks::PlacementChecks(const Topology &src, const Topology &dest, const PairRules &rules,
				 const ImageElements &elements, const Units &units)
    : src_(src), dest_(dest), rules_(rules), elements_(elements), numa_nodes_(units.numa_nodes)
{
	const Placement none = empty();
	for (const Element &group : units.numa_groups) {
		std::set<uint32_t> &fit = group_fits_[group.id];
		for (uint32_t local : candidates(group, none))
			if (own_gpus_fit(group, local, none))
				fit.insert(local);
	}
}

std::vector<uint32_t> PlacementChecks::free_locals(bool hives, const Placement &p) const
{
	std::vector<uint32_t> out;
	if (hives) {
		for (size_t h = 0; h < dest_.hives().size(); h++)
			if (!p.dest_hive_used[h])
				out.push_back(static_cast<uint32_t>(h));
	} else {
		for (const Node *cpu : dest_.cpus())
			if (!p.dest_cpu_used.count(cpu->node_id))
				out.push_back(cpu->node_id);
	}
	return out;
}

std::vector<uint32_t> PlacementChecks::candidates(const Element &e, const Placement &p) const
{
	if (e.is_hive)
		return hive_candidates(e, p);
	std::vector<uint32_t> out;
	for (const Node *cpu : dest_.cpus())
		if (cpu->node_id == e.id && !p.dest_cpu_used.count(cpu->node_id))
			out.push_back(cpu->node_id);
	for (const Node *cpu : dest_.cpus())
		if (cpu->node_id != e.id && !p.dest_cpu_used.count(cpu->node_id))
			out.push_back(cpu->node_id);
	return out;
}

// Free local hives big enough, most node ids in common first, then the smallest.
std::vector<uint32_t> PlacementChecks::hive_candidates(const Element &e, const Placement &p) const
{
	const std::vector<uint32_t> &image = src_.hives()[e.id];
	std::vector<std::pair<std::pair<long, size_t>, uint32_t>> ranked;
	for (size_t h = 0; h < dest_.hives().size(); h++) {
		const std::vector<uint32_t> &local = dest_.hives()[h];
		if (p.dest_hive_used[h] || local.size() < image.size())
			continue;
		long common = 0;
		for (uint32_t n : image)
			common += std::binary_search(local.begin(), local.end(), n);
		ranked.push_back({ { -common, local.size() }, static_cast<uint32_t>(h) });
	}
	std::stable_sort(ranked.begin(), ranked.end(), [](const auto &x, const auto &y) { return x.first < y.first; });
	std::vector<uint32_t> out;
	for (const auto &r : ranked)
		out.push_back(r.second);
	return out;
}

bool PlacementChecks::own_gpus_fit(const Element &e, uint32_t local, const Placement &p) const
{
	return rules_.fits(elements_.gpus_of(e), p.with(e, local));
}

// The second test is what keeps a greedy choice from starving a later unit or the standalone GPUs.
bool PlacementChecks::element_fits(const Element &e, uint32_t local, const Placement &p) const
{
	const Placement trial = p.with(e, local);
	return rules_.fits(elements_.gpus_of(e), trial) && feasible(trial);
}

bool PlacementChecks::feasible(const Placement &p) const
{
	if (!rules_.fits(rules_.all(), p) || !hives_find_places(p))
		return false;
	Placement rest = p;
	return place_numa(rest, unplaced_numa_nodes(p));
}

std::vector<size_t> PlacementChecks::unplaced_hives(const Placement &p) const
{
	std::vector<size_t> out;
	for (size_t h = 0; h < p.hive.size(); h++)
		if (p.hive[h] == kNone)
			out.push_back(h);
	return out;
}

// Each image hive not placed yet needs a free local hive of its own that takes all its GPUs.
bool PlacementChecks::hives_find_places(const Placement &p) const
{
	const std::vector<size_t> hives = unplaced_hives(p);
	if (hives.empty())
		return true;
	const std::vector<uint32_t> locals = free_locals(true, p);
	Bipartite b(hives.size(), locals.size());
	for (size_t i = 0; i < hives.size(); i++)
		for (size_t j = 0; j < locals.size(); j++)
			if (own_gpus_fit({ true, static_cast<uint32_t>(hives[i]) }, locals[j], p))
				b.add_edge(i, j);
	return b.solve() == hives.size();
}

std::vector<Element> PlacementChecks::unplaced_numa_nodes(const Placement &p) const
{
	std::vector<Element> out;
	for (const Element &e : numa_nodes_)
		if (!p.cpu.count(e.id))
			out.push_back(e);
	return out;
}

// A lone NUMA node's GPUs use only the local NUMA node it gets: what fits does not depend on
// the rest of the placement, and was found once.
bool PlacementChecks::numa_fits(const Element &e, uint32_t local, const Placement &p) const
{
	const auto group = group_fits_.find(e.id);
	if (group != group_fits_.end())
		return group->second.count(local);
	return own_gpus_fit(e, local, p);
}

ElementMatching PlacementChecks::match_numa(const Placement &p, const std::vector<Element> &cpus) const
{
	ElementMatching m { free_locals(false, p), Bipartite(0, 0) };
	m.b = Bipartite(cpus.size(), m.locals.size());
	for (size_t i = 0; i < cpus.size(); i++) {
		for (uint32_t local : candidates(cpus[i], p))
			if (numa_fits(cpus[i], local, p))
				m.b.add_edge(i, static_cast<size_t>(std::find(m.locals.begin(), m.locals.end(), local) -
								    m.locals.begin()));
	}
	m.b.solve();
	return m;
}

bool PlacementChecks::place_numa(Placement &p, const std::vector<Element> &cpus) const
{
	if (cpus.empty())
		return true;
	const ElementMatching m = match_numa(p, cpus);
	if (!m.b.complete())
		return false;
	for (size_t i = 0; i < cpus.size(); i++)
		p.assign(cpus[i], m.locals[static_cast<size_t>(m.b.left_match(i))]);
	return true;
}

} // namespace amdgpu::matching
