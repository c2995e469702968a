// SPDX-License-Identifier: GPL-2.0-only
#include "matching/gpu_refusal.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <numeric>

namespace amdgpu::matching {

namespace {

constexpr const char *kNumaHint = " (KFD_NUMA_CHECK=0 disables this check)";

std::string list_gpu_ids(const std::vector<const Node *> &nodes)
{
	constexpr size_t kShown = 8;
	std::string out;
	for (size_t i = 0; i < nodes.size() && i < kShown; i++)
		out += strprintf("%s0x%x", i ? ", " : "", nodes[i]->gpu_id);
	if (nodes.size() > kShown)
		out += strprintf(" and %zu more", nodes.size() - kShown);
	return out;
}

std::string describe_image_gpu(const Node &n)
{
	return strprintf("gpu 0x%x (node %u, device 0x%x)", n.gpu_id, n.node_id, n.props.device_id);
}

// The leftover of matching `b` to explain: preferably one that fits no local GPU at all; `size`
// if every one was matched.
size_t leftover(const Bipartite &b, size_t size)
{
	size_t left = size;
	for (size_t i = 0; i < size; i++)
		if (b.left_match(i) == kNone && (left == size || (b.edges(i).empty() && !b.edges(left).empty())))
			left = i;
	return left;
}

const char *kind(const Element &e)
{
	return e.is_hive ? "xGMI hive" : "NUMA node";
}

} // namespace

std::string RefusalReport::gpus(const std::vector<size_t> &gpus, const Placement *p,
				const std::vector<size_t> *candidates) const
{
	const Bipartite b = rules_.match(gpus, p);
	const size_t left = leftover(b, gpus.size());
	if (left == gpus.size())
		return "the GPUs fit one by one but not together";
	const size_t s = gpus[left];

	std::vector<size_t> all(rules_.local().size());
	std::iota(all.begin(), all.end(), 0);
	const std::vector<size_t> &cands = candidates ? *candidates : all;
	if (cands.empty())
		return strprintf("%s: no local GPU to try", describe_image_gpu(*rules_.image()[s].node).c_str());
	if (b.edges(left).empty())
		return closest(s, cands, p);
	return competitors(b, left, gpus, cands, p);
}

// Image GPU `s` fits none of `cands`: the one with the fewest differences, and those.
std::string RefusalReport::closest(size_t s, const std::vector<size_t> &cands, const Placement *p) const
{
	size_t best = cands.front();
	std::vector<std::string> best_why;
	for (size_t d : cands) {
		std::vector<std::string> why = rules_.why_not(s, d, p);
		if (best_why.empty() || why.size() < best_why.size()) {
			best = d;
			best_why = std::move(why);
		}
	}
	constexpr size_t kShown = 3;
	std::string reasons;
	for (size_t i = 0; i < best_why.size() && i < kShown; i++)
		reasons += (i ? "; " : "") + best_why[i];
	if (best_why.size() > kShown)
		reasons += strprintf("; and %zu more differences", best_why.size() - kShown);
	const Node &local = *rules_.local()[best].node;
	return strprintf("%s: no local GPU fits%s: node %u gpu 0x%x %s",
			 describe_image_gpu(*rules_.image()[s].node).c_str(),
			 cands.size() > 1 ? strprintf(" (closest of %zu)", cands.size()).c_str() : "", local.node_id,
			 local.gpu_id, reasons.c_str());
}

// Hall's condition fails: the image GPUs that compete for too few local ones.
std::string RefusalReport::competitors(const Bipartite &b, size_t left, const std::vector<size_t> &gpus,
				       const std::vector<size_t> &cands, const Placement *p) const
{
	std::vector<size_t> lefts, rights;
	b.competition(left, lefts, rights);
	std::vector<const Node *> image, local;
	for (size_t i : lefts)
		image.push_back(rules_.image()[gpus[i]].node);
	for (size_t d : rights)
		local.push_back(rules_.local()[d].node);
	std::sort(image.begin(), image.end(), [](const Node *x, const Node *y) { return x->node_id < y->node_id; });
	const size_t s = gpus[left];
	return strprintf("%s: no local GPU left: the image's %zu GPUs %s fit only %s %s%s",
			 describe_image_gpu(*rules_.image()[s].node).c_str(), image.size(), list_gpu_ids(image).c_str(),
			 local.size() == 1 ? "local GPU" : strprintf("the %zu local GPUs", local.size()).c_str(),
			 list_gpu_ids(local).c_str(), left_out(s, rights, cands, p).c_str());
}

// The local GPUs among `cands` that none of the competing image GPUs can take (not in `taken`),
// each with what excludes it for image GPU `s`: one local GPU of eight with older firmware, say.
std::string RefusalReport::left_out(size_t s, const std::vector<size_t> &taken, const std::vector<size_t> &cands,
				    const Placement *p) const
{
	constexpr size_t kShown = 4;
	std::string out;
	size_t n = 0;
	for (size_t d : cands) {
		if (std::find(taken.begin(), taken.end(), d) != taken.end())
			continue;
		if (++n > kShown)
			continue;
		const std::vector<std::string> why = rules_.why_not(s, d, p);
		const Node &local = *rules_.local()[d].node;
		out += strprintf("%s node %u gpu 0x%x %s", n == 1 ? "; left out:" : ";", local.node_id, local.gpu_id,
				 why.empty() ? "does not fit" : why.front().c_str());
		if (why.size() > 1)
			out += strprintf(" (and %zu more differences)", why.size() - 1);
	}
	if (n > kShown)
		out += strprintf("; and %zu more local GPUs left out", n - kShown);
	return out;
}

std::string RefusalReport::element(const Element &e, uint32_t local, const Placement &p) const
{
	const Placement trial = p.with(e, local);
	const std::vector<size_t> cands = dest_gpus_of(e, local);
	const std::vector<size_t> &own = checks_.elements().gpus_of(e);
	if (cands.empty())
		return strprintf("%s has no GPU", describe_local(e, local).c_str());
	if (!rules_.fits(own, trial))
		return strprintf("%s: %s", describe_local(e, local).c_str(), gpus(own, &trial, &cands).c_str());
	return strprintf("%s leaves too little for the rest: %s", describe_local(e, local).c_str(),
			 infeasible(trial).c_str());
}

std::string RefusalReport::infeasible(const Placement &p) const
{
	if (!rules_.fits(rules_.all(), p))
		return gpus(rules_.all(), &p);
	for (size_t h : checks_.unplaced_hives(p)) {
		const Element e { true, static_cast<uint32_t>(h) };
		const std::vector<uint32_t> locals = checks_.free_locals(true, p);
		if (std::none_of(locals.begin(), locals.end(),
				 [&](uint32_t local) { return checks_.own_gpus_fit(e, local, p); }))
			return strprintf("%s fits no free local hive", describe(e).c_str());
	}
	const std::vector<Element> pending = checks_.unplaced_numa_nodes(p);
	Placement rest = p;
	if (!checks_.place_numa(rest, pending))
		return numa(p, pending);
	return "the image's xGMI hives compete for too few free local hives";
}

// The first image NUMA node the matching leaves without a local one.
std::string RefusalReport::numa(const Placement &p, const std::vector<Element> &cpus) const
{
	const ElementMatching m = checks_.match_numa(p, cpus);
	size_t i = 0;
	while (i < cpus.size() && m.b.left_match(i) != kNone)
		i++;
	if (i == cpus.size())
		return "";
	const Element &e = cpus[i];
	if (m.locals.empty())
		return strprintf("cannot place %s: no free local NUMA node is left", describe(e).c_str());
	if (m.b.edges(i).empty())
		return strprintf("cannot place %s: %s", describe(e).c_str(),
				 element(e, checks_.candidates(e, p).front(), p).c_str());
	return numa_competition(m, i, cpus);
}

std::string RefusalReport::numa_competition(const ElementMatching &m, size_t i, const std::vector<Element> &cpus) const
{
	std::vector<size_t> lefts, rights;
	m.b.competition(i, lefts, rights);
	std::string image, local;
	for (size_t l : lefts)
		image += strprintf("%s%u", image.empty() ? "" : ", ", cpus[l].id);
	for (size_t r : rights)
		local += strprintf("%s%u", local.empty() ? "" : ", ", m.locals[r]);
	return strprintf("cannot place %s: the GPUs of the image's NUMA nodes %s fit only on local NUMA node(s) %s",
			 describe(cpus[i]).c_str(), image.c_str(), local.c_str());
}

std::string RefusalReport::layer_element(const Element &e, const Placement &p) const
{
	const std::vector<uint32_t> own = checks_.candidates(e, p);
	if (own.empty())
		return strprintf("%s finds no free local %s", describe(e).c_str(), kind(e));
	return strprintf("%s fits no free local %s next to it: %s", describe(e).c_str(), kind(e),
			 element(e, own.front(), p).c_str());
}

std::string RefusalReport::crowded_out(const Element &e) const
{
	return strprintf("%s fits no free local %s next to it once its neighbours are placed", describe(e).c_str(),
			 kind(e));
}

std::string RefusalReport::unit_without_place(const Unit &u) const
{
	return strprintf("cannot place %s: no free local %s is left", describe(u).c_str(),
			 u.centre.is_hive ? "xGMI hive big enough" : "NUMA node");
}

// Without the NUMA check a unit would be a hive alone (or nothing): say how to turn it off.
std::string RefusalReport::unit(const Unit &u, std::string why) const
{
	const bool numa =
		std::any_of(u.elements.begin(), u.elements.end(), [](const Element &e) { return !e.is_hive; });
	if (numa && why.find(kNumaHint + 1) == std::string::npos)
		why += kNumaHint;
	return strprintf("cannot place %s: %s", describe(u).c_str(), why.c_str());
}

std::string RefusalReport::numa_groups(const std::string &why) const
{
	return why + kNumaHint;
}

// The local GPUs an element placed on `local` can use.
std::vector<size_t> RefusalReport::dest_gpus_of(const Element &e, uint32_t local) const
{
	std::vector<size_t> out;
	const std::vector<GpuFacts> &gpus = rules_.local();
	for (size_t d = 0; d < gpus.size(); d++) {
		const std::vector<const IoLink *> &links = gpus[d].cpu_links;
		const bool in = e.is_hive ? gpus[d].hive == static_cast<int>(local)
					  : std::any_of(links.begin(), links.end(),
							[&](const IoLink *l) { return l->node_to == local; });
		if (in)
			out.push_back(d);
	}
	return out;
}

std::string RefusalReport::describe(const Element &e) const
{
	const Topology &src = checks_.src();
	if (e.is_hive)
		return strprintf("the image's xGMI hive of %zu GPUs (nodes %s)", src.hives()[e.id].size(),
				 node_ranges(src.hives()[e.id]).c_str());
	std::vector<uint32_t> nodes;
	for (size_t s : checks_.elements().gpus_of(e))
		nodes.push_back(rules_.image()[s].node->node_id);
	if (nodes.size() == 1)
		return strprintf("the image's GPU on NUMA node %u (node %u)", e.id, nodes[0]);
	return strprintf("the image's %zu GPUs on NUMA node %u (nodes %s)", nodes.size(), e.id,
			 node_ranges(nodes).c_str());
}

std::string RefusalReport::describe_local(const Element &e, uint32_t local) const
{
	if (e.is_hive)
		return strprintf("local hive of nodes %s", node_ranges(checks_.dest().hives()[local]).c_str());
	return strprintf("local NUMA node %u", local);
}

std::string RefusalReport::describe(const Unit &u) const
{
	std::vector<uint32_t> cpus;
	std::string hives;
	for (const Element &e : u.elements) {
		if (e == u.centre)
			continue;
		if (e.is_hive)
			hives += strprintf("%s%s", hives.empty() ? "" : "; ",
					   node_ranges(checks_.src().hives()[e.id]).c_str());
		else
			cpus.push_back(e.id);
	}
	std::string out = describe(u.centre);
	if (!cpus.empty())
		out += strprintf(" on NUMA node%s %s", cpus.size() > 1 ? "s" : "", node_ranges(cpus).c_str());
	if (!hives.empty())
		out += strprintf(" with the hive(s) of nodes %s", hives.c_str());
	return out;
}

} // namespace amdgpu::matching
