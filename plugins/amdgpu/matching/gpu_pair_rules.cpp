// SPDX-License-Identifier: GPL-2.0-only
#include "matching/gpu_pair_rules.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <numeric>

namespace amdgpu::matching {

namespace {

// ---------------------------------------------------------------------------------------------
// Device rules: properties.

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

	bool holds(uint64_t image, uint64_t local) const
	{
		return rule == Rule::at_least ? local >= image : local == image;
	}
	std::string reason(uint64_t image, uint64_t local) const;
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

std::string PropertyRule::reason(uint64_t image, uint64_t local) const
{
	std::string out = strprintf(rule == Rule::at_least ? "has %s %s < %s" : "has %s %s, not %s", name,
				    show(local, hex).c_str(), show(image, hex).c_str());
	if (env)
		out += strprintf(" (%s=0 disables this check)", env);
	return out;
}

// ---------------------------------------------------------------------------------------------
// Device rules: links.

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

} // namespace

PairRules::PairRules(const Topology &src, const Topology &dest, const MatchPolicy &policy)
    : policy_(policy), image_(gpu_facts(src)), local_(gpu_facts(dest)), all_(image_.size())
{
	std::iota(all_.begin(), all_.end(), 0);
	device_ok_.assign(image_.size(), std::vector<uint8_t>(local_.size(), 0));
	for (size_t s = 0; s < image_.size(); s++) {
		preferred_.push_back(preferred_locals(s));
		for (size_t d = 0; d < local_.size(); d++)
			device_ok_[s][d] = device_reasons(s, d).empty();
	}
}

std::vector<size_t> PairRules::preferred_locals(size_t s) const
{
	std::vector<size_t> out;
	for (size_t d = 0; d < local_.size(); d++)
		if (local_[d].node->node_id == image_[s].node->node_id)
			out.push_back(d);
	for (size_t d = 0; d < local_.size(); d++)
		if (local_[d].node->node_id != image_[s].node->node_id)
			out.push_back(d);
	return out;
}

std::vector<std::string> PairRules::device_reasons(size_t s, size_t d) const
{
	std::vector<std::string> why;
	partition_reasons(image_[s].node->props, local_[d].node->props, why);
	for (const PropertyRule &rule : kPropertyRules) {
		if (rule.enabled && !(policy_.*rule.enabled))
			continue;
		const uint64_t image = rule.get(image_[s].node->props), local = rule.get(local_[d].node->props);
		if (!rule.holds(image, local))
			why.push_back(rule.reason(image, local));
	}
	link_reasons(s, d, why);
	return why;
}

// The partition rule, first because it is what the other differences follow from: a node runs a
// queue on each of its XCCs, and KFD's queue state holds an MQD and a control stack per XCC, so the
// state of a queue on N XCCs fits only a node of N (an SPX image on a CPX node is refused). The
// memory partition mode (NPS) is not compared: it decides which HBM backs the node's memory and
// how much there is, which the VRAM size rule checks, and nothing in the saved state depends on it.
void PairRules::partition_reasons(const NodeProperties &image, const NodeProperties &local,
				  std::vector<std::string> &why)
{
	if (image.num_xcc == local.num_xcc)
		return;
	const auto mode = [](const NodeProperties &p) {
		const std::string name = compute_partition_mode(p.num_xcc, p.device_partitions);
		return strprintf("%s%s%u XCC%s per node%s", name.c_str(), name.empty() ? "" : " (", p.num_xcc,
				 p.num_xcc == 1 ? "" : "s", name.empty() ? "" : ")");
	};
	why.push_back(strprintf("is in compute partition mode %s, the image's GPU was in %s (its queues' state "
				"has one MQD per XCC)",
				mode(local).c_str(), mode(image).c_str()));
}

void PairRules::link_reasons(size_t s, size_t d, std::vector<std::string> &why) const
{
	const size_t image_links = image_[s].links, local_links = local_[d].links;
	if (local_links < image_links)
		why.push_back(
			strprintf("has %zu io links, fewer than the %zu of the image's GPU", local_links, image_links));
	const std::vector<const IoLink *> &locals = local_[d].cpu_links;
	for (const IoLink *link : image_[s].cpu_links) {
		if (std::none_of(locals.begin(), locals.end(),
				 [&](const IoLink *l) { return link_serves(*link, *l, policy_.numa); }))
			why.push_back(strprintf("has no CPU link as good as the image GPU's %s",
						describe_link(*link).c_str()));
	}
}

// The hive rule: an image hive lands inside the one local hive chosen for it, and a local hive
// takes one image hive.
const char *PairRules::hive_refusal(size_t s, size_t d, const Placement &p) const
{
	const int sh = image_[s].hive;
	if (sh == kNone)
		return nullptr;
	const int target = p.hive[sh], dh = local_[d].hive;
	if (target != kNone && dh != target)
		return "is outside the local hive chosen for its image hive";
	if (target == kNone && dh == kNone)
		return "is in no xGMI hive";
	if (target == kNone && p.dest_hive_used[dh])
		return "is in a local hive taken by another image hive";
	return nullptr;
}

// The NUMA rule for one of the image GPU's CPU links: the local GPU has a link of the same kind
// to the local NUMA node chosen for the image's, or (not chosen yet) to a free one.
bool PairRules::numa_attached(const IoLink &image_link, size_t d, const Placement &p) const
{
	const auto placed = p.cpu.find(image_link.node_to);
	const std::vector<const IoLink *> &locals = local_[d].cpu_links;
	return std::any_of(locals.begin(), locals.end(), [&](const IoLink *l) {
		if (!link_serves(image_link, *l, true))
			return false;
		return placed != p.cpu.end() ? l->node_to == placed->second : !p.dest_cpu_used.count(l->node_to);
	});
}

void PairRules::numa_reasons(size_t s, size_t d, const Placement &p, std::vector<std::string> &why) const
{
	for (const IoLink *link : image_[s].cpu_links) {
		if (numa_attached(*link, d, p))
			continue;
		const auto placed = p.cpu.find(link->node_to);
		if (placed != p.cpu.end())
			why.push_back(strprintf("is not attached to local NUMA node %u, where the image's NUMA node %u "
						"goes (KFD_NUMA_CHECK=0 disables this check)",
						placed->second, placed->first));
		else
			why.push_back("is attached to no free local NUMA node (KFD_NUMA_CHECK=0 disables this check)");
	}
}

bool PairRules::allowed(size_t s, size_t d, const Placement *p) const
{
	if (!device_ok_[s][d])
		return false;
	if (!p)
		return true;
	if (hive_refusal(s, d, *p))
		return false;
	const std::vector<const IoLink *> &links = image_[s].cpu_links;
	return !policy_.numa ||
	       std::all_of(links.begin(), links.end(), [&](const IoLink *l) { return numa_attached(*l, d, *p); });
}

std::vector<std::string> PairRules::why_not(size_t s, size_t d, const Placement *p) const
{
	std::vector<std::string> why;
	if (!device_ok_[s][d])
		why = device_reasons(s, d);
	if (!p)
		return why;
	if (const char *reason = hive_refusal(s, d, *p))
		why.push_back(reason);
	if (policy_.numa)
		numa_reasons(s, d, *p, why);
	return why;
}

Bipartite PairRules::match(const std::vector<size_t> &gpus, const Placement *p) const
{
	Bipartite b(gpus.size(), local_.size());
	for (size_t i = 0; i < gpus.size(); i++)
		for (size_t d : preferred_[gpus[i]])
			if (allowed(gpus[i], d, p))
				b.add_edge(i, d);
	b.solve();
	return b;
}

bool PairRules::fits(const std::vector<size_t> &gpus, const Placement &p) const
{
	return gpus.size() <= local_.size() && match(gpus, &p).complete();
}

} // namespace amdgpu::matching
