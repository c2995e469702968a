// SPDX-License-Identifier: GPL-2.0-only
#include "gpu_matcher.hpp"

#include "error.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace amdgpu {

namespace {

constexpr int kNone = -1;

// ---------------------------------------------------------------------------------------------
// Maximum bipartite matching (Hopcroft-Karp). Edges are added in order of preference; a greedy
// first pass takes them in that order, so an identity mapping wins whenever it is valid.

class Bipartite {
public:
	Bipartite(size_t left, size_t right) : adj_(left), match_left_(left, kNone), match_right_(right, kNone) {}

	void add_edge(size_t l, size_t r) { adj_[l].push_back(static_cast<int>(r)); }

	size_t solve()
	{
		size_t size = 0;
		for (size_t l = 0; l < adj_.size(); l++) {
			for (int r : adj_[l]) {
				if (match_right_[r] == kNone) {
					match_left_[l] = r;
					match_right_[r] = static_cast<int>(l);
					size++;
					break;
				}
			}
		}
		while (layer())
			for (size_t l = 0; l < adj_.size(); l++)
				if (match_left_[l] == kNone && augment(static_cast<int>(l)))
					size++;
		return size;
	}

	int left_match(size_t l) const { return match_left_[l]; }
	int right_match(size_t r) const { return match_right_[r]; }
	const std::vector<int> &edges(size_t l) const { return adj_[l]; }

	// After solve(), for a left vertex left unmatched: the left vertices competing with it (all
	// those whose every edge leads into the right vertices reachable by alternating paths from
	// it) and those right vertices, fewer than the competitors (Hall's condition fails there).
	void competition(size_t left, std::vector<size_t> &lefts, std::vector<size_t> &rights) const
	{
		std::vector<bool> seen_left(adj_.size(), false), seen_right(match_right_.size(), false);
		std::vector<size_t> queue { left };
		seen_left[left] = true;
		for (size_t head = 0; head < queue.size(); head++) {
			for (int r : adj_[queue[head]]) {
				if (seen_right[r])
					continue;
				seen_right[r] = true;
				const int m = match_right_[r];
				if (m != kNone && !seen_left[m]) {
					seen_left[m] = true;
					queue.push_back(static_cast<size_t>(m));
				}
			}
		}
		lefts.clear();
		rights.clear();
		for (size_t l = 0; l < adj_.size(); l++) {
			const std::vector<int> &e = adj_[l];
			if (seen_left[l] ||
			    (!e.empty() && std::all_of(e.begin(), e.end(), [&](int r) { return seen_right[r]; })))
				lefts.push_back(l);
		}
		for (size_t r = 0; r < seen_right.size(); r++)
			if (seen_right[r])
				rights.push_back(r);
	}

private:
	bool layer()
	{
		dist_.assign(adj_.size(), INT_MAX);
		std::vector<int> queue;
		for (size_t l = 0; l < adj_.size(); l++) {
			if (match_left_[l] == kNone) {
				dist_[l] = 0;
				queue.push_back(static_cast<int>(l));
			}
		}
		bool found = false;
		for (size_t head = 0; head < queue.size(); head++) {
			const int l = queue[head];
			for (int r : adj_[l]) {
				const int m = match_right_[r];
				if (m == kNone)
					found = true;
				else if (dist_[m] == INT_MAX) {
					dist_[m] = dist_[l] + 1;
					queue.push_back(m);
				}
			}
		}
		return found;
	}

	bool augment(int l)
	{
		for (int r : adj_[l]) {
			const int m = match_right_[r];
			if (m == kNone || (dist_[m] == dist_[l] + 1 && augment(m))) {
				match_left_[l] = r;
				match_right_[r] = l;
				return true;
			}
		}
		dist_[l] = INT_MAX;
		return false;
	}

	std::vector<std::vector<int>> adj_;
	std::vector<int> match_left_, match_right_, dist_;
};

// ---------------------------------------------------------------------------------------------
// Per-pair acceptance: properties and links of one image GPU against one local GPU.

enum class Rule {
	equal,		// always compared
	at_least,	// local >= image, switchable
	equal_switched, // equal, switchable
};

struct PropertyRule {
	const char *name;
	uint64_t (*get)(const NodeProperties &);
	Rule rule;
	bool MatchPolicy::*enabled;
	const char *env;
	bool hex;
};

#define PROP(field) #field, [](const NodeProperties &p) -> uint64_t { return p.field; }

// The device-defining properties first, so the first difference reported is the telling one.
const PropertyRule kPropertyRules[] = {
	{ PROP(vendor_id), Rule::equal, nullptr, nullptr, true },
	{ PROP(device_id), Rule::equal, nullptr, nullptr, true },
	{ PROP(simd_count), Rule::equal, nullptr, nullptr, false },
	{ PROP(mem_banks_count), Rule::equal, nullptr, nullptr, false },
	{ PROP(io_links_count), Rule::equal, nullptr, nullptr, false },
	{ PROP(max_waves_per_simd), Rule::equal, nullptr, nullptr, false },
	{ PROP(lds_size_in_kb), Rule::equal, nullptr, nullptr, false },
	{ PROP(wave_front_size), Rule::equal, nullptr, nullptr, false },
	{ PROP(array_count), Rule::equal, nullptr, nullptr, false },
	{ PROP(simd_arrays_per_engine), Rule::equal, nullptr, nullptr, false },
	{ PROP(cu_per_simd_array), Rule::equal, nullptr, nullptr, false },
	{ PROP(simd_per_cu), Rule::equal, nullptr, nullptr, false },
	{ PROP(max_slots_scratch_cu), Rule::equal, nullptr, nullptr, false },
	{ PROP(num_sdma_engines), Rule::equal, nullptr, nullptr, false },
	{ PROP(num_sdma_xgmi_engines), Rule::equal, nullptr, nullptr, false },
	{ PROP(num_sdma_queues_per_engine), Rule::equal, nullptr, nullptr, false },
	{ PROP(num_cp_queues), Rule::equal, nullptr, nullptr, false },
	{ PROP(vram_public), Rule::equal, nullptr, nullptr, false },
	{ PROP(capability), Rule::equal_switched, &MatchPolicy::capability, "KFD_CAPABILITY_CHECK", true },
	{ PROP(vram_size), Rule::at_least, &MatchPolicy::vram_size, "KFD_VRAM_SIZE_CHECK", false },
	{ PROP(num_gws), Rule::at_least, &MatchPolicy::num_gws, "KFD_NUM_GWS_CHECK", false },
	{ PROP(caches_count), Rule::at_least, &MatchPolicy::caches_count, "KFD_CACHES_COUNT_CHECK", false },
	{ PROP(fw_version), Rule::at_least, &MatchPolicy::fw_version, "KFD_FW_VER_CHECK", false },
	{ PROP(sdma_fw_version), Rule::at_least, &MatchPolicy::sdma_fw_version, "KFD_SDMA_FW_VER_CHECK", false },
};

#undef PROP

std::string show(uint64_t value, bool hex)
{
	return strprintf(hex ? "0x%llx" : "%llu", static_cast<unsigned long long>(value));
}

// A local link can stand in for an image link if it reaches a node of the same kind (checked by
// the caller), is xGMI where the image's is, and is bidirectional where the image's is. With the
// NUMA check the link type must also be the same.
bool link_serves(const IoLink &image, const IoLink &local, bool same_type)
{
	if (!local.valid)
		return false;
	if (image.type == IoLinkType::xgmi && local.type != IoLinkType::xgmi)
		return false;
	if (same_type && image.type != local.type)
		return false;
	return !image.bidirectional || local.bidirectional;
}

std::string describe_link(const IoLink &link)
{
	return strprintf("%s%s link to node %u", link.bidirectional ? "bidirectional " : "",
			 io_link_type_name(link.type), link.node_to);
}

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

// Where the image's hives and CPU (NUMA) nodes go, as decided so far.
struct Placement {
	std::vector<int> hive;		  // per image hive: local hive index or kNone
	std::vector<bool> dest_hive_used; // per local hive
	std::map<uint32_t, uint32_t> cpu; // image CPU node -> local CPU node
	std::set<uint32_t> dest_cpu_used;
};

// An image hive (index into src.hives()) or an image CPU node (its node id).
struct Element {
	bool is_hive;
	uint32_t id;

	bool operator==(const Element &) const = default;
};

struct Unit {
	std::vector<size_t> gpus; // image GPU indices
	std::vector<Element> elements;
	Element centre { false, 0 };
};

class Matcher {
public:
	Matcher(const Topology &src, const Topology &dest, const MatchPolicy &policy);
	GpuMap run(); // once per Matcher

private:
	// Pair checks.
	bool compatible(size_t s, size_t d, std::vector<std::string> *why) const;
	bool allowed(size_t s, size_t d, const Placement *p, std::vector<std::string> *why) const;

	// GPU matchings.
	Bipartite match(const std::vector<size_t> &gpus, const Placement *p) const;
	bool fits(const std::vector<size_t> &gpus, const Placement &p) const;
	std::string explain_left_out(size_t s, const std::vector<size_t> &taken, const std::vector<size_t> &cands,
				     const Placement *p) const;
	std::string explain(const std::vector<size_t> &gpus, const Placement *p,
			    const std::vector<size_t> *candidates) const;

	// Units.
	std::vector<Unit> build_units() const;
	const std::vector<size_t> &gpus_of(const Element &e) const;
	std::vector<uint32_t> free_locals(bool hives, const Placement &p) const;
	std::vector<uint32_t> candidates(const Element &e, const Placement &p) const;
	std::vector<size_t> dest_gpus_of(const Element &e, uint32_t local) const;
	void assign(Placement &p, const Element &e, uint32_t local) const;
	bool element_fits(const Element &e, uint32_t local, const Placement &p) const;
	bool feasible(const Placement &p) const;
	std::string explain_infeasible(const Placement &p) const;
	bool place_cpus(Placement &p, const std::vector<Element> &cpus, std::string *why) const;
	std::string explain_element(const Element &e, uint32_t local, const Placement &p) const;
	std::optional<Placement> embed(const Unit &unit, uint32_t local_centre, const Placement &base,
				       std::string &why) const;
	std::string describe(const Element &e) const;
	std::string describe_local(const Element &e, uint32_t local) const;
	std::string describe(const Unit &u) const;

	const Topology &src_, &dest_;
	const MatchPolicy &policy_;
	std::vector<const Node *> sg_, dg_;
	std::vector<int> s_hive_, d_hive_;
	std::vector<std::vector<const IoLink *>> s_cpu_links_, d_cpu_links_;
	std::vector<size_t> s_links_, d_links_;	     // valid link counts
	std::vector<std::vector<size_t>> preferred_; // per image GPU: local GPUs, same node id first
	std::vector<std::vector<uint8_t>> compat_;
	std::vector<size_t> all_;			   // every image GPU
	std::vector<std::vector<size_t>> hive_gpus_;	   // image GPUs per image hive
	std::map<uint32_t, std::vector<size_t>> cpu_gpus_; // image GPUs per image CPU node they link to
	// Set by run(): the NUMA nodes of units that are one NUMA node without hives (groups, placed
	// last, all at once), and every image NUMA node with GPUs.
	std::vector<Element> group_cpus_, all_cpus_;
	// Where each group fits: it depends on nothing but the local NUMA node it gets.
	std::map<uint32_t, std::set<uint32_t>> group_fits_;
};

Matcher::Matcher(const Topology &src, const Topology &dest, const MatchPolicy &policy)
    : src_(src), dest_(dest), policy_(policy), sg_(src.gpus()), dg_(dest.gpus())
{
	auto index = [](const Topology &t, const std::vector<const Node *> &gpus, std::vector<int> &hive,
			std::vector<std::vector<const IoLink *>> &cpu_links, std::vector<size_t> &links) {
		for (const Node *n : gpus) {
			const auto h = t.hive_of(n->node_id);
			hive.push_back(h ? static_cast<int>(*h) : kNone);
			links.push_back(n->valid_link_count());
			cpu_links.emplace_back();
			for (const IoLink &link : n->links)
				if (link.valid && !t.node(link.node_to)->is_gpu())
					cpu_links.back().push_back(&link);
		}
	};
	index(src_, sg_, s_hive_, s_cpu_links_, s_links_);
	index(dest_, dg_, d_hive_, d_cpu_links_, d_links_);

	all_.resize(sg_.size());
	std::iota(all_.begin(), all_.end(), 0);
	hive_gpus_.resize(src_.hives().size());
	for (size_t s = 0; s < sg_.size(); s++) {
		if (s_hive_[s] != kNone)
			hive_gpus_[static_cast<size_t>(s_hive_[s])].push_back(s);
		for (const IoLink *l : s_cpu_links_[s]) {
			std::vector<size_t> &gpus = cpu_gpus_[l->node_to];
			if (gpus.empty() || gpus.back() != s)
				gpus.push_back(s);
		}
	}
	preferred_.resize(sg_.size());
	compat_.assign(sg_.size(), std::vector<uint8_t>(dg_.size(), 0));
	for (size_t s = 0; s < sg_.size(); s++) {
		for (size_t d = 0; d < dg_.size(); d++)
			if (dg_[d]->node_id == sg_[s]->node_id)
				preferred_[s].push_back(d);
		for (size_t d = 0; d < dg_.size(); d++)
			if (dg_[d]->node_id != sg_[s]->node_id)
				preferred_[s].push_back(d);
		for (size_t d = 0; d < dg_.size(); d++)
			compat_[s][d] = compatible(s, d, nullptr);
	}
}

bool Matcher::compatible(size_t s, size_t d, std::vector<std::string> *why) const
{
	const Node &a = *sg_[s], &b = *dg_[d];
	bool ok = true;
	auto reject = [&](std::string reason) {
		ok = false;
		if (why)
			why->push_back(std::move(reason));
		return why == nullptr;
	};

	for (const PropertyRule &rule : kPropertyRules) {
		if (rule.enabled && !(policy_.*rule.enabled))
			continue;
		const uint64_t image = rule.get(a.props), local = rule.get(b.props);
		if (rule.rule == Rule::at_least ? local >= image : local == image)
			continue;
		std::string reason;
		if (rule.rule == Rule::at_least)
			reason = strprintf("has %s %s < %s", rule.name, show(local, rule.hex).c_str(),
					   show(image, rule.hex).c_str());
		else
			reason = strprintf("has %s %s, not %s", rule.name, show(local, rule.hex).c_str(),
					   show(image, rule.hex).c_str());
		if (rule.env)
			reason += strprintf(" (%s=0 disables this check)", rule.env);
		if (reject(std::move(reason)))
			return false;
	}

	const size_t image_links = s_links_[s], local_links = d_links_[d];
	if (local_links < image_links &&
	    reject(strprintf("has %zu io links, fewer than the %zu of the image's GPU", local_links, image_links)))
		return false;

	for (const IoLink *link : s_cpu_links_[s]) {
		const bool served = std::any_of(d_cpu_links_[d].begin(), d_cpu_links_[d].end(),
						[&](const IoLink *l) { return link_serves(*link, *l, policy_.numa); });
		if (!served &&
		    reject(strprintf("has no CPU link as good as the image GPU's %s", describe_link(*link).c_str())))
			return false;
	}
	return ok;
}

bool Matcher::allowed(size_t s, size_t d, const Placement *p, std::vector<std::string> *why) const
{
	bool ok = compat_[s][d];
	if (!ok) {
		if (!why)
			return false;
		compatible(s, d, why);
	}
	if (!p)
		return ok;

	if (const int sh = s_hive_[s]; sh != kNone) {
		const int target = p->hive[sh], dh = d_hive_[d];
		const char *reason = nullptr;
		if (target != kNone && dh != target)
			reason = "is outside the local hive chosen for its image hive";
		else if (target == kNone && dh == kNone)
			reason = "is in no xGMI hive";
		else if (target == kNone && p->dest_hive_used[dh])
			reason = "is in a local hive taken by another image hive";
		if (reason) {
			ok = false;
			if (!why)
				return false;
			why->push_back(reason);
		}
	}

	if (!policy_.numa)
		return ok;
	for (const IoLink *link : s_cpu_links_[s]) {
		const auto placed = p->cpu.find(link->node_to);
		const bool attached = std::any_of(d_cpu_links_[d].begin(), d_cpu_links_[d].end(), [&](const IoLink *l) {
			if (!link_serves(*link, *l, true))
				return false;
			return placed != p->cpu.end() ? l->node_to == placed->second
						      : !p->dest_cpu_used.count(l->node_to);
		});
		if (attached)
			continue;
		ok = false;
		if (!why)
			return false;
		if (placed != p->cpu.end())
			why->push_back(
				strprintf("is not attached to local NUMA node %u, where the image's NUMA node %u "
					  "goes (KFD_NUMA_CHECK=0 disables this check)",
					  placed->second, placed->first));
		else
			why->push_back("is attached to no free local NUMA node (KFD_NUMA_CHECK=0 disables this check)");
	}
	return ok;
}

Bipartite Matcher::match(const std::vector<size_t> &gpus, const Placement *p) const
{
	Bipartite b(gpus.size(), dg_.size());
	for (size_t i = 0; i < gpus.size(); i++)
		for (size_t d : preferred_[gpus[i]])
			if (allowed(gpus[i], d, p, nullptr))
				b.add_edge(i, d);
	b.solve();
	return b;
}

bool Matcher::fits(const std::vector<size_t> &gpus, const Placement &p) const
{
	if (gpus.size() > dg_.size())
		return false;
	Bipartite b = match(gpus, &p);
	for (size_t i = 0; i < gpus.size(); i++)
		if (b.left_match(i) == kNone)
			return false;
	return true;
}

// Why `gpus` cannot all be placed: the first one left over, and either the closest local GPU
// (among `candidates`, default all) with every difference, or the competitors that took the
// local GPUs it could use.
std::string Matcher::explain(const std::vector<size_t> &gpus, const Placement *p,
			     const std::vector<size_t> *candidates) const
{
	Bipartite b = match(gpus, p);
	// The leftover to explain: preferably one that fits no local GPU at all.
	size_t left = gpus.size();
	for (size_t i = 0; i < gpus.size(); i++)
		if (b.left_match(i) == kNone && (left == gpus.size() || (b.edges(i).empty() && !b.edges(left).empty())))
			left = i;
	if (left == gpus.size())
		return "the GPUs fit one by one but not together";
	const size_t s = gpus[left];

	std::vector<size_t> all(dg_.size());
	std::iota(all.begin(), all.end(), 0);
	const std::vector<size_t> &cands = candidates ? *candidates : all;
	if (cands.empty())
		return strprintf("%s: no local GPU to try", describe_image_gpu(*sg_[s]).c_str());

	if (b.edges(left).empty()) {
		size_t best = cands.front();
		std::vector<std::string> best_why;
		for (size_t d : cands) {
			std::vector<std::string> why;
			allowed(s, d, p, &why);
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
		return strprintf("%s: no local GPU fits%s: node %u gpu 0x%x %s", describe_image_gpu(*sg_[s]).c_str(),
				 cands.size() > 1 ? strprintf(" (closest of %zu)", cands.size()).c_str() : "",
				 dg_[best]->node_id, dg_[best]->gpu_id, reasons.c_str());
	}

	// Hall's condition fails: the image GPUs that compete for too few local ones.
	std::vector<size_t> lefts, rights;
	b.competition(left, lefts, rights);
	std::vector<const Node *> image, local;
	for (size_t i : lefts)
		image.push_back(sg_[gpus[i]]);
	for (size_t d : rights)
		local.push_back(dg_[d]);
	std::sort(image.begin(), image.end(), [](const Node *x, const Node *y) { return x->node_id < y->node_id; });
	return strprintf("%s: no local GPU left: the image's %zu GPUs %s fit only %s %s%s",
			 describe_image_gpu(*sg_[s]).c_str(), image.size(), list_gpu_ids(image).c_str(),
			 local.size() == 1 ? "local GPU" : strprintf("the %zu local GPUs", local.size()).c_str(),
			 list_gpu_ids(local).c_str(), explain_left_out(s, rights, cands, p).c_str());
}

// The local GPUs among `cands` that none of the competing image GPUs can take (not in `taken`),
// each with what excludes it for image GPU `s`: one local GPU of eight with older firmware, say.
std::string Matcher::explain_left_out(size_t s, const std::vector<size_t> &taken, const std::vector<size_t> &cands,
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
		std::vector<std::string> why;
		allowed(s, d, p, &why);
		out += strprintf("%s node %u gpu 0x%x %s", n == 1 ? "; left out:" : ";", dg_[d]->node_id,
				 dg_[d]->gpu_id, why.empty() ? "does not fit" : why.front().c_str());
		if (why.size() > 1)
			out += strprintf(" (and %zu more differences)", why.size() - 1);
	}
	if (n > kShown)
		out += strprintf("; and %zu more local GPUs left out", n - kShown);
	return out;
}

// ---------------------------------------------------------------------------------------------
// Units: image GPUs tied together by a hive or (NUMA check) a CPU node.

const std::vector<size_t> &Matcher::gpus_of(const Element &e) const
{
	static const std::vector<size_t> none;
	if (e.is_hive)
		return hive_gpus_[e.id];
	const auto it = cpu_gpus_.find(e.id);
	return it == cpu_gpus_.end() ? none : it->second;
}

std::vector<Unit> Matcher::build_units() const
{
	// Union-find over image GPUs.
	std::vector<size_t> parent(sg_.size());
	std::iota(parent.begin(), parent.end(), 0);
	auto root = [&](size_t i) {
		while (parent[i] != i)
			i = parent[i] = parent[parent[i]];
		return i;
	};
	std::map<std::pair<bool, uint32_t>, size_t> first_of; // element -> first GPU seen with it
	auto elements_of = [&](size_t s) {
		std::vector<Element> out;
		if (s_hive_[s] != kNone)
			out.push_back({ true, static_cast<uint32_t>(s_hive_[s]) });
		if (policy_.numa)
			for (const IoLink *l : s_cpu_links_[s])
				if (std::find(out.begin(), out.end(), Element { false, l->node_to }) == out.end())
					out.push_back({ false, l->node_to });
		return out;
	};
	for (size_t s = 0; s < sg_.size(); s++) {
		for (const Element &e : elements_of(s)) {
			auto [it, inserted] = first_of.try_emplace({ e.is_hive, e.id }, s);
			if (!inserted)
				parent[root(s)] = root(it->second);
		}
	}

	std::map<size_t, Unit> by_root;
	for (size_t s = 0; s < sg_.size(); s++) {
		const std::vector<Element> elements = elements_of(s);
		if (elements.empty())
			continue; // placed by the final matching alone
		Unit &u = by_root[root(s)];
		u.gpus.push_back(s);
		for (const Element &e : elements)
			if (std::find(u.elements.begin(), u.elements.end(), e) == u.elements.end())
				u.elements.push_back(e);
	}

	std::vector<Unit> units;
	for (auto &[r, u] : by_root) {
		// The centre: the element adjacent to most others (a hive spanning NUMA nodes, or a NUMA
		// node holding several hives); ties go to hives, then to the bigger element.
		size_t best_degree = 0, best_size = 0;
		bool first = true;
		for (const Element &e : u.elements) {
			std::set<std::pair<bool, uint32_t>> neighbours;
			for (size_t s : gpus_of(e))
				for (const Element &other : elements_of(s))
					if (!(other == e))
						neighbours.insert({ other.is_hive, other.id });
			const size_t degree = neighbours.size(), size = gpus_of(e).size();
			const bool better =
				first || degree > best_degree ||
				(degree == best_degree && e.is_hive && !u.centre.is_hive) ||
				(degree == best_degree && e.is_hive == u.centre.is_hive && size > best_size);
			if (better) {
				u.centre = e;
				best_degree = degree;
				best_size = size;
				first = false;
			}
		}
		units.push_back(std::move(u));
	}
	return units;
}

std::vector<uint32_t> Matcher::free_locals(bool hives, const Placement &p) const
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

// Free local hives or CPU nodes for `e`, most likely first: same node ids, then the tightest fit.
std::vector<uint32_t> Matcher::candidates(const Element &e, const Placement &p) const
{
	std::vector<uint32_t> out;
	if (e.is_hive) {
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
		std::stable_sort(ranked.begin(), ranked.end(),
				 [](const auto &x, const auto &y) { return x.first < y.first; });
		for (const auto &r : ranked)
			out.push_back(r.second);
	} else {
		for (const Node *cpu : dest_.cpus())
			if (cpu->node_id == e.id && !p.dest_cpu_used.count(cpu->node_id))
				out.push_back(cpu->node_id);
		for (const Node *cpu : dest_.cpus())
			if (cpu->node_id != e.id && !p.dest_cpu_used.count(cpu->node_id))
				out.push_back(cpu->node_id);
	}
	return out;
}

// The local GPUs an element placed on `local` can use (for explanations).
std::vector<size_t> Matcher::dest_gpus_of(const Element &e, uint32_t local) const
{
	std::vector<size_t> out;
	for (size_t d = 0; d < dg_.size(); d++) {
		const bool in = e.is_hive ? d_hive_[d] == static_cast<int>(local)
					  : std::any_of(d_cpu_links_[d].begin(), d_cpu_links_[d].end(),
							[&](const IoLink *l) { return l->node_to == local; });
		if (in)
			out.push_back(d);
	}
	return out;
}

void Matcher::assign(Placement &p, const Element &e, uint32_t local) const
{
	if (e.is_hive) {
		p.hive[e.id] = static_cast<int>(local);
		p.dest_hive_used[local] = true;
	} else {
		p.cpu[e.id] = local;
		p.dest_cpu_used.insert(local);
	}
}

// Whether `e` may go to `local`: its own GPUs fit there, and all image GPUs still fit somewhere
// (elements not placed yet may take any free local hive or NUMA node). The second test is what
// keeps a greedy choice from starving a later unit or the standalone GPUs.
bool Matcher::element_fits(const Element &e, uint32_t local, const Placement &p) const
{
	Placement trial = p;
	assign(trial, e, local);
	return fits(gpus_of(e), trial) && feasible(trial);
}

// A necessary condition for completing `p`: every image GPU still has a local GPU (hives and
// NUMA nodes not placed yet may take any free one), and the image hives and NUMA nodes not placed
// yet still find distinct free local ones that can take their GPUs.
bool Matcher::feasible(const Placement &p) const
{
	if (!fits(all_, p))
		return false;

	// Each image hive not placed yet needs a free local hive of its own that takes all its GPUs.
	std::vector<size_t> hives;
	for (size_t h = 0; h < p.hive.size(); h++)
		if (p.hive[h] == kNone)
			hives.push_back(h);
	if (!hives.empty()) {
		const std::vector<uint32_t> locals = free_locals(true, p);
		Bipartite b(hives.size(), locals.size());
		for (size_t i = 0; i < hives.size(); i++) {
			const Element e { true, static_cast<uint32_t>(hives[i]) };
			for (size_t j = 0; j < locals.size(); j++) {
				Placement trial = p;
				assign(trial, e, locals[j]);
				if (fits(gpus_of(e), trial))
					b.add_edge(i, j);
			}
		}
		if (b.solve() < hives.size())
			return false;
	}

	std::vector<Element> pending;
	for (const Element &e : all_cpus_)
		if (!p.cpu.count(e.id))
			pending.push_back(e);
	Placement rest = p;
	return place_cpus(rest, pending, nullptr);
}

// Places the image NUMA nodes `cpus` (not placed yet), each on its own free local NUMA node, by
// one matching whose edges say "its GPUs fit there". For NUMA groups without hives this is exact
// when every local GPU hangs off one NUMA node: a group only uses GPUs of the NUMA node it gets,
// so the choices of different groups are independent. For NUMA nodes of hive units it is a
// necessary condition.
bool Matcher::place_cpus(Placement &p, const std::vector<Element> &cpus, std::string *why) const
{
	if (cpus.empty())
		return true;
	const std::vector<uint32_t> locals = free_locals(false, p);
	Bipartite b(cpus.size(), locals.size());
	for (size_t i = 0; i < cpus.size(); i++) {
		const auto group = group_fits_.find(cpus[i].id);
		for (uint32_t local : candidates(cpus[i], p)) {
			bool fit;
			if (group != group_fits_.end()) {
				fit = group->second.count(local);
			} else {
				Placement trial = p;
				assign(trial, cpus[i], local);
				fit = fits(gpus_of(cpus[i]), trial);
			}
			if (fit)
				b.add_edge(i, static_cast<size_t>(std::find(locals.begin(), locals.end(), local) -
								  locals.begin()));
		}
	}
	b.solve();
	for (size_t i = 0; i < cpus.size(); i++) {
		if (b.left_match(i) != kNone)
			continue;
		if (!why)
			return false;
		const Element &e = cpus[i];
		if (locals.empty()) {
			*why = strprintf("cannot place %s: no free local NUMA node is left", describe(e).c_str());
		} else if (b.edges(i).empty()) {
			*why = strprintf("cannot place %s: %s", describe(e).c_str(),
					 explain_element(e, candidates(e, p).front(), p).c_str());
		} else {
			std::vector<size_t> lefts, rights;
			b.competition(i, lefts, rights);
			std::string image, local;
			for (size_t l : lefts)
				image += strprintf("%s%u", image.empty() ? "" : ", ", cpus[l].id);
			for (size_t r : rights)
				local += strprintf("%s%u", local.empty() ? "" : ", ", locals[r]);
			*why = strprintf(
				"cannot place %s: the GPUs of the image's NUMA nodes %s fit only on local NUMA "
				"node(s) %s",
				describe(e).c_str(), image.c_str(), local.c_str());
		}
		return false;
	}
	for (size_t i = 0; i < cpus.size(); i++)
		assign(p, cpus[i], locals[static_cast<size_t>(b.left_match(i))]);
	return true;
}

std::string Matcher::explain_element(const Element &e, uint32_t local, const Placement &p) const
{
	Placement trial = p;
	assign(trial, e, local);
	const std::vector<size_t> cands = dest_gpus_of(e, local);
	if (cands.empty())
		return strprintf("%s has no GPU", describe_local(e, local).c_str());
	if (!fits(gpus_of(e), trial))
		return strprintf("%s: %s", describe_local(e, local).c_str(),
				 explain(gpus_of(e), &trial, &cands).c_str());
	return strprintf("%s leaves too little for the rest: %s", describe_local(e, local).c_str(),
			 explain_infeasible(trial).c_str());
}

// Why feasible(p) is false.
std::string Matcher::explain_infeasible(const Placement &p) const
{
	if (!fits(all_, p))
		return explain(all_, &p, nullptr);
	for (size_t h = 0; h < p.hive.size(); h++) {
		const Element e { true, static_cast<uint32_t>(h) };
		if (p.hive[h] != kNone)
			continue;
		const std::vector<uint32_t> locals = free_locals(true, p);
		if (std::none_of(locals.begin(), locals.end(), [&](uint32_t local) {
			    Placement trial = p;
			    assign(trial, e, local);
			    return fits(gpus_of(e), trial);
		    }))
			return strprintf("%s fits no free local hive", describe(e).c_str());
	}
	std::vector<Element> pending;
	for (const Element &e : all_cpus_)
		if (!p.cpu.count(e.id))
			pending.push_back(e);
	Placement rest = p;
	std::string why;
	if (!place_cpus(rest, pending, &why))
		return why;
	return "the image's xGMI hives compete for too few free local hives";
}

std::string Matcher::describe(const Element &e) const
{
	if (e.is_hive)
		return strprintf("the image's xGMI hive of %zu GPUs (nodes %s)", src_.hives()[e.id].size(),
				 node_ranges(src_.hives()[e.id]).c_str());
	std::vector<uint32_t> nodes;
	for (size_t s : gpus_of(e))
		nodes.push_back(sg_[s]->node_id);
	if (nodes.size() == 1)
		return strprintf("the image's GPU on NUMA node %u (node %u)", e.id, nodes[0]);
	return strprintf("the image's %zu GPUs on NUMA node %u (nodes %s)", nodes.size(), e.id,
			 node_ranges(nodes).c_str());
}

std::string Matcher::describe_local(const Element &e, uint32_t local) const
{
	if (e.is_hive)
		return strprintf("local hive of nodes %s", node_ranges(dest_.hives()[local]).c_str());
	return strprintf("local NUMA node %u", local);
}

std::string Matcher::describe(const Unit &u) const
{
	std::vector<uint32_t> cpus;
	std::string hives;
	for (const Element &e : u.elements) {
		if (e == u.centre)
			continue;
		if (e.is_hive)
			hives += strprintf("%s%s", hives.empty() ? "" : "; ", node_ranges(src_.hives()[e.id]).c_str());
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

// Places one unit with its centre on `local_centre`, then its other hives and NUMA nodes layer
// by layer, each layer by one matching. Returns the extended placement, or nullopt with `why`.
std::optional<Placement> Matcher::embed(const Unit &unit, uint32_t local_centre, const Placement &base,
					std::string &why) const
{
	Placement p = base;
	if (!element_fits(unit.centre, local_centre, p)) {
		why = explain_element(unit.centre, local_centre, p);
		return std::nullopt;
	}
	assign(p, unit.centre, local_centre);

	std::vector<Element> done { unit.centre };
	auto adjacent = [&](const Element &a, const Element &b) {
		const std::vector<size_t> &ga = gpus_of(a), &gb = gpus_of(b);
		return std::any_of(ga.begin(), ga.end(),
				   [&](size_t s) { return std::find(gb.begin(), gb.end(), s) != gb.end(); });
	};
	while (done.size() < unit.elements.size()) {
		std::vector<Element> frontier;
		for (const Element &e : unit.elements)
			if (std::find(done.begin(), done.end(), e) == done.end() &&
			    std::any_of(done.begin(), done.end(), [&](const Element &x) { return adjacent(e, x); }))
				frontier.push_back(e);
		if (frontier.empty())
			break; // cannot happen: a unit is connected

		for (bool hives : { true, false }) {
			std::vector<Element> layer;
			for (const Element &e : frontier)
				if (e.is_hive == hives)
					layer.push_back(e);
			if (layer.empty())
				continue;
			const std::vector<uint32_t> locals = free_locals(hives, p);
			Bipartite b(layer.size(), locals.size());
			for (size_t i = 0; i < layer.size(); i++) {
				// Candidates in this element's own preference order.
				for (uint32_t local : candidates(layer[i], p)) {
					const size_t j = static_cast<size_t>(
						std::find(locals.begin(), locals.end(), local) - locals.begin());
					if (element_fits(layer[i], local, p))
						b.add_edge(i, j);
				}
			}
			b.solve();
			for (size_t i = 0; i < layer.size(); i++) {
				if (b.left_match(i) != kNone)
					continue;
				const std::vector<uint32_t> own = candidates(layer[i], p);
				why = own.empty()
					      ? strprintf("%s finds no free local %s", describe(layer[i]).c_str(),
							  hives ? "xGMI hive" : "NUMA node")
					      : strprintf("%s fits no free local %s next to it: %s",
							  describe(layer[i]).c_str(), hives ? "xGMI hive" : "NUMA node",
							  explain_element(layer[i], own.front(), p).c_str());
				return std::nullopt;
			}
			Placement matched = p;
			for (size_t i = 0; i < layer.size(); i++)
				assign(matched, layer[i], locals[static_cast<size_t>(b.left_match(i))]);
			if (feasible(matched)) {
				p = std::move(matched);
			} else {
				// Each choice was fine alone but not this combination: place the layer one
				// element at a time, each choice checked against the ones before it.
				for (const Element &e : layer) {
					const std::vector<uint32_t> own = candidates(e, p);
					const auto it = std::find_if(own.begin(), own.end(), [&](uint32_t local) {
						return element_fits(e, local, p);
					});
					if (it == own.end()) {
						why = strprintf(
							"%s fits no free local %s next to it once its neighbours are "
							"placed",
							describe(e).c_str(), hives ? "xGMI hive" : "NUMA node");
						return std::nullopt;
					}
					assign(p, e, *it);
				}
			}
			done.insert(done.end(), layer.begin(), layer.end());
		}
	}

	if (!feasible(p)) {
		why = explain_infeasible(p);
		return std::nullopt;
	}
	return p;
}

GpuMap Matcher::run()
{
	GpuMap map;
	if (sg_.empty())
		return map;
	if (sg_.size() > dg_.size())
		fail(-EINVAL, "the image uses %zu GPUs, this node has only %zu", sg_.size(), dg_.size());
	if (src_.hives().size() > dest_.hives().size())
		fail(-EINVAL, "the image has %zu xGMI hive(s), this node only %zu", src_.hives().size(),
		     dest_.hives().size());

	// Each GPU on its own first: most failures are a property mismatch, best told per GPU.
	{
		const Bipartite relaxed = match(all_, nullptr);
		for (size_t s = 0; s < sg_.size(); s++)
			if (relaxed.left_match(s) == kNone)
				fail(-EINVAL, "%s", explain(all_, nullptr, nullptr).c_str());
	}

	Placement p {
		std::vector<int>(src_.hives().size(), kNone), std::vector<bool>(dest_.hives().size(), false), {}, {}
	};
	std::vector<Unit> units;
	for (Unit &u : build_units()) {
		for (const Element &e : u.elements)
			if (!e.is_hive)
				all_cpus_.push_back(e);
		if (u.elements.size() == 1 && !u.centre.is_hive) {
			std::set<uint32_t> &fit = group_fits_[u.centre.id];
			for (uint32_t local : candidates(u.centre, p)) {
				Placement trial = p;
				assign(trial, u.centre, local);
				if (fits(u.gpus, trial))
					fit.insert(local);
			}
			group_cpus_.push_back(u.centre);
		} else {
			units.push_back(std::move(u));
		}
	}

	// Most constrained first: fewest local places for the centre, then the biggest unit.
	std::vector<size_t> options(units.size());
	for (size_t i = 0; i < units.size(); i++)
		for (uint32_t local : candidates(units[i].centre, p))
			options[i] += element_fits(units[i].centre, local, p);
	std::vector<size_t> order(units.size());
	std::iota(order.begin(), order.end(), 0);
	std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
		if (options[a] != options[b])
			return options[a] < options[b];
		return units[a].gpus.size() > units[b].gpus.size();
	});

	for (size_t i : order) {
		const Unit &unit = units[i];
		const std::vector<uint32_t> locals = candidates(unit.centre, p);
		if (locals.empty())
			fail(-EINVAL, "cannot place %s: no free local %s is left", describe(unit).c_str(),
			     unit.centre.is_hive ? "xGMI hive big enough" : "NUMA node");
		std::string first_why;
		std::optional<Placement> next;
		for (uint32_t local : locals) {
			std::string why;
			next = embed(unit, local, p, why);
			if (next)
				break;
			if (first_why.empty())
				first_why = why;
		}
		if (!next) {
			// Without the NUMA check this unit would be a hive alone (or nothing).
			const char *numa_hint = " (KFD_NUMA_CHECK=0 disables this check)";
			const bool numa = std::any_of(unit.elements.begin(), unit.elements.end(),
						      [](const Element &e) { return !e.is_hive; });
			if (numa && first_why.find(numa_hint + 1) == std::string::npos)
				first_why += numa_hint;
			fail(-EINVAL, "cannot place %s: %s", describe(unit).c_str(), first_why.c_str());
		}
		p = std::move(*next);
	}
	if (std::string why; !place_cpus(p, group_cpus_, &why))
		fail(-EINVAL, "%s (KFD_NUMA_CHECK=0 disables this check)", why.c_str());

	const Bipartite b = match(all_, &p);
	for (size_t s = 0; s < sg_.size(); s++)
		if (b.left_match(s) == kNone)
			fail(-EINVAL, "%s", explain(all_, &p, nullptr).c_str());
	for (size_t s = 0; s < sg_.size(); s++)
		map.gpu_ids[sg_[s]->gpu_id] = dg_[static_cast<size_t>(b.left_match(s))]->gpu_id;
	if (policy_.numa)
		map.cpu_nodes = p.cpu;
	return map;
}

} // namespace

GpuMap match_gpus(const Topology &src, const Topology &dest, const MatchPolicy &policy)
{
	return Matcher(src, dest, policy).run();
}

} // namespace amdgpu
