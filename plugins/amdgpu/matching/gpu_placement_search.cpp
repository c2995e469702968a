// SPDX-License-Identifier: GPL-2.0-only
#include "matching/gpu_placement_search.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cerrno>
#include <numeric>

namespace amdgpu::matching {

namespace {

bool adjacent(const ImageElements &elements, const Element &a, const Element &b)
{
	const std::vector<size_t> &ga = elements.gpus_of(a), &gb = elements.gpus_of(b);
	return std::any_of(ga.begin(), ga.end(),
			   [&](size_t s) { return std::find(gb.begin(), gb.end(), s) != gb.end(); });
}

// The elements of `unit` not placed yet that share a GPU with one placed.
std::vector<Element> frontier(const ImageElements &elements, const Unit &unit, const std::vector<Element> &done)
{
	std::vector<Element> out;
	for (const Element &e : unit.elements)
		if (std::find(done.begin(), done.end(), e) == done.end() &&
		    std::any_of(done.begin(), done.end(), [&](const Element &x) { return adjacent(elements, e, x); }))
			out.push_back(e);
	return out;
}

std::vector<Element> of_kind(const std::vector<Element> &elements, bool hives)
{
	std::vector<Element> out;
	for (const Element &e : elements)
		if (e.is_hive == hives)
			out.push_back(e);
	return out;
}

} // namespace

Placement PlacementSearch::run() const
{
	Placement p = checks_.empty();
	for (size_t i : most_constrained_first())
		p = place_unit(units_.searched[i], p);
	if (!checks_.place_numa(p, units_.numa_groups))
		fail(-EINVAL, "%s", report_.numa_groups(report_.numa(p, units_.numa_groups)).c_str());
	return p;
}

// Fewest local places for the centre first, then the biggest unit.
std::vector<size_t> PlacementSearch::most_constrained_first() const
{
	const std::vector<Unit> &units = units_.searched;
	const Placement none = checks_.empty();
	std::vector<size_t> options(units.size());
	for (size_t i = 0; i < units.size(); i++)
		for (uint32_t local : checks_.candidates(units[i].centre, none))
			options[i] += checks_.element_fits(units[i].centre, local, none);
	std::vector<size_t> order(units.size());
	std::iota(order.begin(), order.end(), 0);
	std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
		if (options[a] != options[b])
			return options[a] < options[b];
		return units[a].gpus.size() > units[b].gpus.size();
	});
	return order;
}

// The first local place for the unit's centre around which the whole unit fits.
Placement PlacementSearch::place_unit(const Unit &unit, const Placement &p) const
{
	const std::vector<uint32_t> locals = checks_.candidates(unit.centre, p);
	if (locals.empty())
		fail(-EINVAL, "%s", report_.unit_without_place(unit).c_str());
	std::string first_why;
	for (uint32_t local : locals) {
		std::string why;
		if (std::optional<Placement> next = embed(unit, local, p, why))
			return std::move(*next);
		if (first_why.empty())
			first_why = why;
	}
	fail(-EINVAL, "%s", report_.unit(unit, first_why).c_str());
}

// Places one unit with its centre on `local_centre`, then its other hives and NUMA nodes layer
// by layer, hives first. Returns the extended placement, or nullopt with `why`.
std::optional<Placement> PlacementSearch::embed(const Unit &unit, uint32_t local_centre, const Placement &base,
						std::string &why) const
{
	if (!checks_.element_fits(unit.centre, local_centre, base)) {
		why = report_.element(unit.centre, local_centre, base);
		return std::nullopt;
	}
	Placement p = base.with(unit.centre, local_centre);
	std::vector<Element> done { unit.centre };
	while (done.size() < unit.elements.size()) {
		const std::vector<Element> next = frontier(checks_.elements(), unit, done);
		if (next.empty())
			break; // cannot happen: a unit is connected
		for (bool hives : { true, false }) {
			const std::vector<Element> layer = of_kind(next, hives);
			if (!layer.empty() && !place_layer(layer, p, why))
				return std::nullopt;
			done.insert(done.end(), layer.begin(), layer.end());
		}
	}
	if (!checks_.feasible(p)) {
		why = report_.infeasible(p);
		return std::nullopt;
	}
	return p;
}

// One matching places the layer; if its choices, each fine alone, do not go together, the layer
// is placed one element at a time instead.
bool PlacementSearch::place_layer(const std::vector<Element> &layer, Placement &p, std::string &why) const
{
	const ElementMatching m = match_layer(layer, p);
	for (size_t i = 0; i < layer.size(); i++) {
		if (m.b.left_match(i) == kNone) {
			why = report_.layer_element(layer[i], p);
			return false;
		}
	}
	Placement matched = p;
	for (size_t i = 0; i < layer.size(); i++)
		matched.assign(layer[i], m.locals[static_cast<size_t>(m.b.left_match(i))]);
	if (!checks_.feasible(matched))
		return place_one_by_one(layer, p, why);
	p = std::move(matched);
	return true;
}

ElementMatching PlacementSearch::match_layer(const std::vector<Element> &layer, const Placement &p) const
{
	ElementMatching m { checks_.free_locals(layer.front().is_hive, p), Bipartite(0, 0) };
	m.b = Bipartite(layer.size(), m.locals.size());
	for (size_t i = 0; i < layer.size(); i++) {
		// Candidates in this element's own preference order.
		for (uint32_t local : checks_.candidates(layer[i], p)) {
			const size_t j = static_cast<size_t>(std::find(m.locals.begin(), m.locals.end(), local) -
							     m.locals.begin());
			if (checks_.element_fits(layer[i], local, p))
				m.b.add_edge(i, j);
		}
	}
	m.b.solve();
	return m;
}

// Each element on its first free local place that keeps the placement feasible, given the ones
// before it.
bool PlacementSearch::place_one_by_one(const std::vector<Element> &layer, Placement &p, std::string &why) const
{
	for (const Element &e : layer) {
		const std::vector<uint32_t> own = checks_.candidates(e, p);
		const auto it = std::find_if(own.begin(), own.end(),
					     [&](uint32_t local) { return checks_.element_fits(e, local, p); });
		if (it == own.end()) {
			why = report_.crowded_out(e);
			return false;
		}
		p.assign(e, *it);
	}
	return true;
}

} // namespace amdgpu::matching
