// SPDX-License-Identifier: GPL-2.0-only
//
// GPU matching on restore: upstream's remap cases, the policy switches, containers and larger
// nodes, and agreement with exhaustive search.
#include "matching/gpu_matcher.hpp"

#include "support/error.hpp"
#include "support/temp_dir.hpp"
#include "topology_fixtures.hpp"
#include "topology/topology_image.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <set>

namespace amdgpu {
namespace {

using test::topology_fixture;

// ---------------------------------------------------------------------------------------------
// The acceptance rules, written again from their statement in gpu_matcher.hpp, to check the
// matcher's answers. They read the links as the node lists describe them (a link and, perhaps,
// the peer's link back), not the facts Topology derives for the matcher, and state "at least as
// good" as an inclusion of what a link offers, not as the matcher's sequence of refusals.

// What an IO link offers, read from the raw node lists.
struct LinkOffer {
	bool reaches;	// its peer is another node of the topology
	bool both_ways; // the peer lists a link of the same type back
	IoLinkType type;
};

LinkOffer offer(const Topology &t, uint32_t from, const IoLink &l)
{
	const Node *peer = l.node_to == from ? nullptr : t.node(l.node_to);
	const bool back = peer && std::any_of(peer->links.begin(), peer->links.end(),
					      [&](const IoLink &m) { return m.node_to == from && m.type == l.type; });
	return { peer != nullptr, back, l.type };
}

// The qualities a link has that a stand-in must have too. With the NUMA check the kind of link
// is one of them, whatever it is; without, only xGMI counts (a faster link than PCIe may serve).
std::set<std::string> qualities(const LinkOffer &o, bool same_type)
{
	std::set<std::string> q;
	if (o.both_ways)
		q.insert("both ways");
	if (same_type)
		q.insert("type " + std::to_string(static_cast<uint32_t>(o.type)));
	else if (o.type == IoLinkType::xgmi)
		q.insert("xgmi");
	return q;
}

bool at_least_as_good(const LinkOffer &image, const LinkOffer &local, bool same_type)
{
	const std::set<std::string> need = qualities(image, same_type), have = qualities(local, same_type);
	return local.reaches && std::includes(have.begin(), have.end(), need.begin(), need.end());
}

// The links of GPU `n` that reach a CPU node.
std::vector<LinkOffer> cpu_links(const Topology &t, const Node &n, std::vector<uint32_t> *peers = nullptr)
{
	std::vector<LinkOffer> out;
	for (const IoLink &l : n.links) {
		const LinkOffer o = offer(t, n.node_id, l);
		if (o.reaches && !t.node(l.node_to)->is_gpu()) {
			out.push_back(o);
			if (peers)
				peers->push_back(l.node_to);
		}
	}
	return out;
}

size_t links_that_reach(const Topology &t, const Node &n)
{
	return static_cast<size_t>(std::count_if(n.links.begin(), n.links.end(),
						 [&](const IoLink &l) { return offer(t, n.node_id, l).reaches; }));
}

// Whether local GPU `b` may stand for image GPU `a` on its own (properties and links).
bool pair_ok(const Topology &src, const Node &a, const Topology &dest, const Node &b, const MatchPolicy &p)
{
	const NodeProperties &x = a.props, &y = b.props;
	const bool equal = x.simd_count == y.simd_count && x.mem_banks_count == y.mem_banks_count &&
			   x.io_links_count == y.io_links_count && x.max_waves_per_simd == y.max_waves_per_simd &&
			   x.lds_size_in_kb == y.lds_size_in_kb && x.wave_front_size == y.wave_front_size &&
			   x.array_count == y.array_count && x.simd_arrays_per_engine == y.simd_arrays_per_engine &&
			   x.cu_per_simd_array == y.cu_per_simd_array && x.simd_per_cu == y.simd_per_cu &&
			   x.max_slots_scratch_cu == y.max_slots_scratch_cu && x.vendor_id == y.vendor_id &&
			   x.device_id == y.device_id && x.num_sdma_engines == y.num_sdma_engines &&
			   x.num_sdma_xgmi_engines == y.num_sdma_xgmi_engines &&
			   x.num_sdma_queues_per_engine == y.num_sdma_queues_per_engine &&
			   x.num_cp_queues == y.num_cp_queues && x.vram_public == y.vram_public;
	if (!equal)
		return false;
	if ((p.capability && x.capability != y.capability) || (p.vram_size && y.vram_size < x.vram_size) ||
	    (p.num_gws && y.num_gws < x.num_gws) || (p.caches_count && y.caches_count < x.caches_count) ||
	    (p.fw_version && y.fw_version < x.fw_version) ||
	    (p.sdma_fw_version && y.sdma_fw_version < x.sdma_fw_version))
		return false;
	if (links_that_reach(dest, b) < links_that_reach(src, a))
		return false;
	const std::vector<LinkOffer> local = cpu_links(dest, b);
	for (const LinkOffer &l : cpu_links(src, a))
		if (std::none_of(local.begin(), local.end(),
				 [&](const LinkOffer &m) { return at_least_as_good(l, m, p.numa); }))
			return false;
	return true;
}

// Hive rule: each image hive inside one local hive, different image hives in different ones.
bool hives_ok(const Topology &src, const Topology &dest, const std::map<uint32_t, uint32_t> &node_map)
{
	std::set<size_t> used;
	for (const std::vector<uint32_t> &hive : src.hives()) {
		const auto target = dest.hive_of(node_map.at(hive[0]));
		if (!target || !used.insert(*target).second)
			return false;
		for (uint32_t n : hive)
			if (dest.hive_of(node_map.at(n)) != target)
				return false;
	}
	return true;
}

// NUMA rule for a given image CPU -> local CPU map.
bool numa_ok(const Topology &src, const Topology &dest, const std::map<uint32_t, uint32_t> &node_map,
	     const std::map<uint32_t, uint32_t> &cpu_map)
{
	std::set<uint32_t> targets;
	for (const auto &[from, to] : cpu_map)
		if (!targets.insert(to).second || !dest.node(to) || dest.node(to)->is_gpu())
			return false;
	for (const Node *a : src.gpus()) {
		const Node &b = *dest.node(node_map.at(a->node_id));
		std::vector<uint32_t> image_cpus, local_cpus;
		const std::vector<LinkOffer> image = cpu_links(src, *a, &image_cpus);
		const std::vector<LinkOffer> local = cpu_links(dest, b, &local_cpus);
		for (size_t i = 0; i < image.size(); i++) {
			const auto it = cpu_map.find(image_cpus[i]);
			if (it == cpu_map.end())
				return false;
			bool attached = false;
			for (size_t j = 0; j < local.size(); j++)
				attached |= local_cpus[j] == it->second && at_least_as_good(image[i], local[j], true);
			if (!attached)
				return false;
		}
	}
	return true;
}

::testing::AssertionResult valid_mapping(const Topology &src, const Topology &dest, const MatchPolicy &p,
					 const GpuMap &map)
{
	std::map<uint32_t, uint32_t> node_map;
	std::set<uint32_t> used;
	if (map.gpu_ids.size() != src.gpus().size())
		return ::testing::AssertionFailure()
		       << map.gpu_ids.size() << " GPUs mapped, image has " << src.gpus().size();
	for (const Node *a : src.gpus()) {
		const auto it = map.gpu_ids.find(a->gpu_id);
		if (it == map.gpu_ids.end())
			return ::testing::AssertionFailure() << "gpu " << a->gpu_id << " not mapped";
		const Node *b = dest.gpu(it->second);
		if (!b || !used.insert(b->gpu_id).second)
			return ::testing::AssertionFailure()
			       << "gpu " << a->gpu_id << " mapped to missing or reused " << it->second;
		if (!pair_ok(src, *a, dest, *b, p))
			return ::testing::AssertionFailure() << "gpu " << a->gpu_id << " cannot stand on " << b->gpu_id;
		node_map[a->node_id] = b->node_id;
	}
	if (!hives_ok(src, dest, node_map))
		return ::testing::AssertionFailure() << "hive rule broken";
	if (p.numa && !numa_ok(src, dest, node_map, map.cpu_nodes))
		return ::testing::AssertionFailure() << "NUMA rule broken";
	return ::testing::AssertionSuccess();
}

// Exhaustive search: is there any valid mapping at all? (Small topologies only.)
bool exists_mapping(const Topology &src, const Topology &dest, const MatchPolicy &p)
{
	const auto sg = src.gpus(), dg = dest.gpus();
	std::vector<uint32_t> src_cpus;
	for (const Node *a : sg) {
		std::vector<uint32_t> peers;
		cpu_links(src, *a, &peers);
		for (uint32_t cpu : peers)
			if (std::find(src_cpus.begin(), src_cpus.end(), cpu) == src_cpus.end())
				src_cpus.push_back(cpu);
	}
	const auto dcpus = dest.cpus();

	std::map<uint32_t, uint32_t> node_map;
	std::vector<bool> taken(dg.size(), false);
	std::function<bool(size_t)> place = [&](size_t i) -> bool {
		if (i == sg.size()) {
			if (!hives_ok(src, dest, node_map))
				return false;
			if (!p.numa)
				return true;
			std::map<uint32_t, uint32_t> cpu_map;
			std::function<bool(size_t)> cpus = [&](size_t k) -> bool {
				if (k == src_cpus.size())
					return numa_ok(src, dest, node_map, cpu_map);
				for (const Node *c : dcpus) {
					cpu_map[src_cpus[k]] = c->node_id;
					if (cpus(k + 1))
						return true;
				}
				cpu_map.erase(src_cpus[k]);
				return false;
			};
			return cpus(0);
		}
		for (size_t d = 0; d < dg.size(); d++) {
			if (taken[d] || !pair_ok(src, *sg[i], dest, *dg[d], p))
				continue;
			taken[d] = true;
			node_map[sg[i]->node_id] = dg[d]->node_id;
			if (place(i + 1))
				return true;
			taken[d] = false;
		}
		node_map.erase(sg[i]->node_id);
		return false;
	};
	return place(0);
}

// ---------------------------------------------------------------------------------------------
// Building topologies in memory, in the style of upstream's remap test.

class Builder {
public:
	Node &cpu(uint32_t id)
	{
		Node n;
		n.node_id = id;
		n.props.cpu_cores_count = 1;
		nodes_.push_back(n);
		return nodes_.back();
	}
	Node &gpu(uint32_t id, uint32_t gpu_id, uint32_t device_id = 0xd000)
	{
		Node n;
		n.node_id = id;
		n.gpu_id = gpu_id;
		n.props.device_id = device_id;
		n.props.vendor_id = 0x1002;
		n.props.simd_count = 416;
		n.props.vram_size = 64ull << 30;
		n.props.fw_version = 78;
		nodes_.push_back(n);
		return nodes_.back();
	}
	void link(uint32_t from, IoLinkType type, uint32_t to) { find(from).links.push_back({ type, to }); }
	void both(uint32_t a, IoLinkType type, uint32_t b)
	{
		link(a, type, b);
		link(b, type, a);
	}
	Node &find(uint32_t id)
	{
		for (Node &n : nodes_)
			if (n.node_id == id)
				return n;
		throw std::runtime_error("no node " + std::to_string(id));
	}
	Topology build() const { return Topology(nodes_); }

private:
	std::vector<Node> nodes_;
};

constexpr IoLinkType kPcie = IoLinkType::pcie, kXgmi = IoLinkType::xgmi;

Topology fixture(const std::string &name)
{
	return parse_topology(topology_fixture(name));
}

std::string match_error(const Topology &src, const Topology &dest, const MatchPolicy &p = {})
{
	try {
		match_gpus(src, dest, p);
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EINVAL);
		return e.what();
	}
	return "matched";
}

bool contains(const std::string &haystack, const std::string &needle)
{
	return haystack.find(needle) != std::string::npos;
}

// Upstream's remap cases: 2 CPUs, 8 GPUs at nodes 2-9 in two hives of four (nodes 2-5 and 6-9),
// GPU i attached to CPU i % 2. `base` is the first gpu_id of each side (0xA000 / 0xB000).
struct TwoHives {
	Builder b;
	TwoHives(uint32_t base, uint32_t device_first, uint32_t device_second, bool cpu_links_back = true)
	{
		b.cpu(0);
		b.cpu(1);
		for (uint32_t i = 0; i < 8; i++) {
			b.gpu(i + 2, base + (i < 4 ? i : 0x10 + i), i < 4 ? device_first : device_second);
			b.link(i + 2, kPcie, i & 1);
			if (cpu_links_back)
				b.link(i & 1, kPcie, i + 2);
		}
		for (uint32_t i = 0; i < 8; i++)
			for (uint32_t j = 1; j < 4; j++)
				b.link(i + 2, kXgmi, (i / 4) * 4 + (i + j) % 4 + 2);
	}
	// P2P-PCIe links from the GPUs of each hive to those of the other one, keeping only targets
	// accepted by `keep`.
	void cross_pcie(const std::function<bool(uint32_t from, uint32_t to)> &keep)
	{
		for (uint32_t i = 0; i < 8; i++)
			for (uint32_t j = 0; j < 4; j++) {
				const uint32_t to = (i < 4 ? 6 : 2) + (i + j) % 4;
				if (keep(i + 2, to))
					b.link(i + 2, kPcie, to);
			}
	}
};

void expect_maps(const Topology &src, const Topology &dest, const MatchPolicy &p = {})
{
	GpuMap map;
	try {
		map = match_gpus(src, dest, p);
	} catch (const Error &e) {
		FAIL() << e.what();
	}
	EXPECT_TRUE(valid_mapping(src, dest, p, map));
	EXPECT_TRUE(exists_mapping(src, dest, p));
}

void expect_no_mapping(const Topology &src, const Topology &dest, const MatchPolicy &p = {})
{
	EXPECT_NE(match_error(src, dest, p), "matched");
	EXPECT_FALSE(exists_mapping(src, dest, p)) << "exhaustive search finds one";
}

TEST(GpuMatcherUpstream, Case0HivesOfDifferentModelsSwapPlaces)
{
	TwoHives src(0xa000, 0xd000, 0xd001), dest(0xb000, 0xd001, 0xd000);
	src.cross_pcie([](uint32_t, uint32_t) { return true; });
	dest.cross_pcie([](uint32_t, uint32_t) { return true; });
	const Topology s = src.b.build(), d = dest.b.build();
	expect_maps(s, d);
	const GpuMap map = match_gpus(s, d, {});
	for (uint32_t id : { 0xa000u, 0xa001u, 0xa002u, 0xa003u })
		EXPECT_GE(d.gpu(map.gpu_ids.at(id))->node_id, 6u) << "the D000 hive lands on the local D000 hive";
	EXPECT_EQ(map.cpu_nodes.size(), 2u);
}

// Cases 1 and 2: the last two GPUs have no large BAR: no P2P-PCIe links to them, no link back
// from their CPU.
bool large_bar_peers(uint32_t from, uint32_t to)
{
	return from >= 6 || to < 8;
}

Topology partial_p2p(uint32_t base, uint32_t device_second)
{
	TwoHives h(base, 0xd000, device_second, false);
	for (uint32_t i = 0; i < 8; i++)
		if (i < 6)
			h.b.link(i & 1, kPcie, i + 2);
	h.cross_pcie(large_bar_peers);
	return h.b.build();
}

TEST(GpuMatcherUpstream, Case1PartialPeerToPeer)
{
	expect_maps(partial_p2p(0xa000, 0xd000), partial_p2p(0xb000, 0xd000));
}

TEST(GpuMatcherUpstream, Case2PartialPeerToPeerWithHivesOfDifferentModelsFails)
{
	// The D000 hive needs bidirectional CPU links everywhere; the local D000 hive has two GPUs
	// without.
	TwoHives src(0xa000, 0xd000, 0xd001, false), dest(0xb000, 0xd001, 0xd000, false);
	for (TwoHives *h : { &src, &dest }) {
		for (uint32_t i = 0; i < 6; i++)
			h->b.link(i & 1, kPcie, i + 2);
		h->cross_pcie(large_bar_peers);
	}
	const Topology s = src.b.build(), d = dest.b.build();
	expect_no_mapping(s, d);
	// The D001 GPUs of the image have P2P links to all four D000 GPUs, the local ones to two.
	EXPECT_EQ(match_error(s, d), "gpu 0xa014 (node 6, device 0xd001): no local GPU fits (closest of 8): node 2 gpu "
				     "0xb000 has 6 io links, fewer than the 8 of the image's GPU");
	// With peer links alike, the bidirectional CPU links still do not fit.
	TwoHives src2(0xa000, 0xd000, 0xd001, false), dest2(0xb000, 0xd001, 0xd000, false);
	for (TwoHives *h : { &src2, &dest2 })
		for (uint32_t i = 0; i < 6; i++)
			h->b.link(i & 1, kPcie, i + 2);
	expect_no_mapping(src2.b.build(), dest2.b.build());
	EXPECT_EQ(match_error(src2.b.build(), dest2.b.build()),
		  "gpu 0xa002 (node 4, device 0xd000): no local GPU left: the image's 4 GPUs 0xa000, 0xa001, 0xa002, "
		  "0xa003 fit only the 2 local GPUs 0xb014, 0xb015; left out: node 2 gpu 0xb000 has device_id 0xd001, "
		  "not "
		  "0xd000; node 3 gpu 0xb001 has device_id 0xd001, not 0xd000; node 4 gpu 0xb002 has device_id 0xd001, "
		  "not "
		  "0xd000; node 5 gpu 0xb003 has device_id 0xd001, not 0xd000; and 2 more local GPUs left out");
}

// Cases 3 and 4: only one GPU per hive has a link back from its CPU.
Topology one_backlink_per_hive(uint32_t base, uint32_t cpu0_gpu, uint32_t cpu1_gpu)
{
	TwoHives h(base, 0xd000, 0xd001, false);
	h.b.link(0, kPcie, cpu0_gpu);
	h.b.link(1, kPcie, cpu1_gpu);
	return h.b.build();
}

TEST(GpuMatcherUpstream, Case3BidirectionalGpusAtDifferentPositions)
{
	const Topology s = one_backlink_per_hive(0xa000, 4, 9), d = one_backlink_per_hive(0xb000, 2, 7);
	expect_maps(s, d);
	const GpuMap map = match_gpus(s, d, {});
	EXPECT_EQ(map.gpu_ids.at(0xa002), 0xb000u) << "the only possible way";
	EXPECT_EQ(map.gpu_ids.at(0xa017), 0xb015u);
}

TEST(GpuMatcherUpstream, Case4CpuLinkMovedFails)
{
	// Node 6 hangs off CPU 0, so CPU 1's link to it is one way: no GPU of the D001 hive has a
	// bidirectional link to a CPU.
	expect_no_mapping(one_backlink_per_hive(0xa000, 4, 9), one_backlink_per_hive(0xb000, 2, 6));
}

Topology hive_and_standalone(uint32_t base)
{
	Builder b;
	b.cpu(0);
	b.cpu(1);
	for (uint32_t i = 0; i < 8; i++) {
		b.gpu(i + 2, base + (i < 4 ? i : 0x10 + i));
		b.both(i + 2, kPcie, i & 1);
	}
	for (uint32_t i = 0; i < 8; i++) {
		for (uint32_t j = 1; j < 4; j++)
			b.link(i + 2, i < 4 ? kXgmi : kPcie, (i / 4) * 4 + (i + j) % 4 + 2);
		for (uint32_t j = 4; j < 8; j++)
			b.link(i + 2, kPcie, (i < 4 ? 6 : 2) + (i + j) % 4);
	}
	return b.build();
}

TEST(GpuMatcherUpstream, Case5OneHiveAndFourStandaloneGpus)
{
	const Topology s = hive_and_standalone(0xa000), d = hive_and_standalone(0xb000);
	ASSERT_EQ(s.hives().size(), 1u);
	expect_maps(s, d);
}

Topology five_mixed(uint32_t base, std::vector<uint32_t> devices, uint32_t p2p_below)
{
	Builder b;
	b.cpu(0);
	for (uint32_t i = 0; i < 5; i++) {
		b.gpu(i + 1, base + i, devices[i]);
		b.both(i + 1, kPcie, 0);
	}
	for (uint32_t i = 0; i < 5; i++)
		for (uint32_t j = 1; j < 5; j++)
			if ((i + j) % 5 + 1 < p2p_below)
				b.link(i + 1, kPcie, (i + j) % 5 + 1);
	return b.build();
}

TEST(GpuMatcherUpstream, Case6MixedModelsAtDifferentPositions)
{
	const Topology s = five_mixed(0xa000, { 0xd000, 0xd000, 0xd001, 0xd000, 0xd001 }, 5);
	const Topology d = five_mixed(0xb000, { 0xd000, 0xd001, 0xd000, 0xd000, 0xd001 }, 5);
	expect_maps(s, d);
}

TEST(GpuMatcherUpstream, Case7LocalNodeHasAnExtraHive)
{
	auto make = [](uint32_t base, bool second_hive) {
		Builder b;
		b.cpu(0);
		b.cpu(1);
		for (uint32_t i = 0; i < 8; i++) {
			b.gpu(i + 2, base + (i < 4 ? i : 0x10 + i));
			if (i < 4)
				b.link(i + 2, kPcie, i & 1);
		}
		for (uint32_t i = 0; i < 8; i++)
			for (uint32_t j = 1; j < 4; j++)
				if (i < 4 || second_hive)
					b.link(i + 2, kXgmi, (i / 4) * 4 + (i + j) % 4 + 2);
		return b.build();
	};
	const Topology s = make(0xa000, false), d = make(0xb000, true);
	ASSERT_EQ(d.hives().size(), 2u);
	expect_maps(s, d);
	EXPECT_EQ(match_gpus(s, d, {}).cpu_nodes.size(), 2u);
}

TEST(GpuMatcherUpstream, Case8LocalNodeHasMorePeerLinks)
{
	const std::vector<uint32_t> same(5, 0xd000);
	expect_maps(five_mixed(0xa000, same, 4), five_mixed(0xb000, same, 5));
}

TEST(GpuMatcherUpstream, TheIndependentCheckerCatchesBrokenMappings)
{
	// The checker above must be able to fail, or the tests built on it prove nothing.
	const Topology t = fixture("mi250x-4card");
	GpuMap good = match_gpus(t, t, {});
	ASSERT_TRUE(valid_mapping(t, t, {}, good));

	GpuMap swapped_numa = good; // GCDs 0 and 2 sit behind different NUMA nodes
	std::swap(swapped_numa.gpu_ids.at(t.node(4)->gpu_id), swapped_numa.gpu_ids.at(t.node(6)->gpu_id));
	EXPECT_FALSE(valid_mapping(t, t, {}, swapped_numa));
	MatchPolicy no_numa;
	no_numa.numa = false;
	EXPECT_TRUE(valid_mapping(t, t, no_numa, swapped_numa));

	GpuMap twice = good;
	twice.gpu_ids.at(t.node(4)->gpu_id) = t.node(5)->gpu_id;
	EXPECT_FALSE(valid_mapping(t, t, no_numa, twice));

	Builder b;
	b.cpu(0);
	b.gpu(1, 0x11);
	b.gpu(2, 0x12);
	b.gpu(3, 0x13);
	b.gpu(4, 0x14);
	b.both(1, kXgmi, 2);
	b.both(3, kXgmi, 4);
	const Topology two_hives = b.build();
	const GpuMap split { { { 0x11, 0x11 }, { 0x12, 0x13 }, { 0x13, 0x12 }, { 0x14, 0x14 } }, {} };
	EXPECT_FALSE(valid_mapping(two_hives, two_hives, no_numa, split));
	EXPECT_TRUE(exists_mapping(two_hives, two_hives, no_numa));

	// Links: the image GPU with the only link both ways to its CPU moved onto a local GPU whose
	// CPU link is one way (same hive, same CPU: only the link rule is broken).
	const Topology s = one_backlink_per_hive(0xa000, 4, 9), d = one_backlink_per_hive(0xb000, 2, 7);
	GpuMap one_way = match_gpus(s, d, {});
	ASSERT_TRUE(valid_mapping(s, d, {}, one_way));
	std::swap(one_way.gpu_ids.at(0xa002), one_way.gpu_ids.at(0xa000));
	EXPECT_FALSE(valid_mapping(s, d, {}, one_way));
	EXPECT_FALSE(valid_mapping(s, d, no_numa, one_way));

	// With the NUMA check a link must be of the same type; without, xGMI may serve for PCIe.
	Builder pcie, xgmi;
	for (Builder *b : { &pcie, &xgmi }) {
		b->cpu(0);
		b->gpu(1, b == &pcie ? 0x11 : 0x21);
		b->both(1, b == &pcie ? kPcie : kXgmi, 0);
	}
	const GpuMap across { { { 0x11, 0x21 } }, { { 0, 0 } } };
	EXPECT_FALSE(valid_mapping(pcie.build(), xgmi.build(), {}, across));
	EXPECT_TRUE(valid_mapping(pcie.build(), xgmi.build(), no_numa, GpuMap { across.gpu_ids, {} }));
	EXPECT_FALSE(valid_mapping(xgmi.build(), pcie.build(), no_numa, GpuMap { { { 0x21, 0x11 } }, {} }));
}

// ---------------------------------------------------------------------------------------------
// Real machine types

// A copy of `t` with gpu_ids (and render minors) rotated among the GPUs, as after a driver
// reload or on a twin node.
Topology rotate_ids(const Topology &t, size_t by)
{
	std::vector<Node> nodes = t.nodes();
	std::vector<Node *> gpus;
	for (Node &n : nodes)
		if (n.is_gpu())
			gpus.push_back(&n);
	std::vector<std::pair<uint32_t, uint32_t>> ids;
	for (Node *g : gpus)
		ids.push_back({ g->gpu_id, g->props.drm_render_minor });
	for (size_t i = 0; i < gpus.size(); i++) {
		gpus[i]->gpu_id = ids[(i + by) % ids.size()].first;
		gpus[i]->props.drm_render_minor = ids[(i + by) % ids.size()].second;
	}
	return Topology(std::move(nodes));
}

// A copy of `t` with the GPU nodes renumbered by a random permutation (links follow) and the
// gpu_ids shuffled: the same machine enumerated in another order.
Topology shuffle_gpus(const Topology &t, uint32_t seed)
{
	std::mt19937 rng(seed);
	std::vector<uint32_t> gpu_nodes, gpu_ids;
	for (const Node *g : t.gpus()) {
		gpu_nodes.push_back(g->node_id);
		gpu_ids.push_back(g->gpu_id);
	}
	std::vector<uint32_t> perm = gpu_nodes;
	std::shuffle(perm.begin(), perm.end(), rng);
	std::shuffle(gpu_ids.begin(), gpu_ids.end(), rng);
	std::map<uint32_t, uint32_t> renumber;
	for (size_t i = 0; i < gpu_nodes.size(); i++)
		renumber[gpu_nodes[i]] = perm[i];
	auto moved = [&](uint32_t id) { return renumber.count(id) ? renumber[id] : id; };

	std::vector<Node> nodes;
	size_t next_id = 0;
	for (const Node &n : t.nodes()) {
		Node c = n;
		c.node_id = moved(n.node_id);
		if (c.is_gpu())
			c.gpu_id = gpu_ids[next_id++];
		for (IoLink &l : c.links)
			l.node_to = moved(l.node_to);
		nodes.push_back(std::move(c));
	}
	return Topology(std::move(nodes));
}

uint32_t cpu_of(const Topology &t, uint32_t gpu_id)
{
	for (const IoLink &l : t.gpu(gpu_id)->links)
		if (!t.node(l.node_to)->is_gpu())
			return l.node_to;
	return UINT32_MAX;
}

TEST(GpuMatcherNodes, RestoringOnTheSameNodeKeepsEveryGpu)
{
	for (const char *name : { "mi100-1gpu", "mi210-2gpu-pcie", "mi250x-4card", "mi300x-8gpu-spx" }) {
		const Topology t = fixture(name);
		const GpuMap map = match_gpus(t, t, {});
		for (const auto &[from, to] : map.gpu_ids)
			EXPECT_EQ(from, to) << name;
		EXPECT_TRUE(valid_mapping(t, t, {}, map)) << name;
	}
	EXPECT_TRUE(match_gpus(fixture("cpu-only"), fixture("cpu-only"), {}).gpu_ids.empty());
}

TEST(GpuMatcherNodes, GpuIdsAndRenderMinorsSwappedBetweenGpus)
{
	for (const char *name : { "mi210-2gpu-pcie", "mi250x-4card", "mi300x-8gpu-spx" }) {
		const Topology src = fixture(name), dest = rotate_ids(src, 1);
		const GpuMap map = match_gpus(src, dest, {});
		EXPECT_TRUE(valid_mapping(src, dest, {}, map)) << name;
		// Same machine: every GPU comes back on the GPU at its old node, now under another id.
		for (const Node *g : src.gpus())
			EXPECT_EQ(dest.gpu(map.gpu_ids.at(g->gpu_id))->node_id, g->node_id) << name;
	}
	const Topology src = fixture("mi210-2gpu-pcie");
	const GpuMap map = match_gpus(src, rotate_ids(src, 1), {});
	EXPECT_EQ(map.gpu_ids, (std::map<uint32_t, uint32_t> { { 19283, 59721 }, { 59721, 19283 } }));
}

TEST(GpuMatcherNodes, Mi300xCpxSixtyFourPartitionsAgainstAShuffledCopy)
{
	const Topology src = parse_topology(test::mi300x_cpx_tree());
	for (uint32_t seed : { 1u, 2u, 3u }) {
		const Topology dest = shuffle_gpus(src, seed);
		ASSERT_NE(src, dest);
		const GpuMap map = match_gpus(src, dest, {});
		ASSERT_TRUE(valid_mapping(src, dest, {}, map));
		// The 32 partitions of each socket stay together on one local socket.
		for (const Node *g : src.gpus())
			EXPECT_EQ(cpu_of(dest, map.gpu_ids.at(g->gpu_id)), map.cpu_nodes.at(cpu_of(src, g->gpu_id)));
	}
}

TEST(GpuMatcherNodes, NumaNodesMoveAsWholes)
{
	// The local MI250X node has its OAMs behind other NUMA nodes: GPUs 0-1 of the image (NUMA 0)
	// must land together behind one local NUMA node, and so on.
	const Topology src = fixture("mi250x-4card");
	const uint32_t numa_of_oam[] = { 2, 0, 3, 1 };
	auto numa_of = [&](uint32_t gpu_node) { return numa_of_oam[(gpu_node - 4) / 2]; };
	std::vector<Node> nodes = src.nodes();
	for (Node &n : nodes) {
		if (n.is_gpu()) {
			n.links[0].node_to = numa_of(n.node_id); // the PCIe link to its CPU comes first
			continue;
		}
		n.links.clear();
		for (uint32_t g = 4; g < 12; g++)
			if (numa_of(g) == n.node_id)
				n.links.push_back({ IoLinkType::pcie, g });
	}
	const Topology dest(std::move(nodes));
	const Topology shuffled = shuffle_gpus(dest, 7);
	const GpuMap map = match_gpus(src, shuffled, {});
	ASSERT_TRUE(valid_mapping(src, shuffled, {}, map));
	ASSERT_EQ(map.cpu_nodes.size(), 4u);
	for (const Node *g : src.gpus())
		EXPECT_EQ(cpu_of(shuffled, map.gpu_ids.at(g->gpu_id)), map.cpu_nodes.at(cpu_of(src, g->gpu_id)));
}

// ---------------------------------------------------------------------------------------------
// Containers and bigger nodes

TEST(GpuMatcherNodes, ContainerWithOneOfTwoGpusRestoresOnTheFullNode)
{
	// criu#2248: dumped in a container that saw the second MI210 only (through the image, as the
	// plugin would read it), restored outside.
	const Topology host = fixture("mi210-2gpu-pcie");
	DeviceEntries entries(fixture("mi210-2gpu-cgroup-hidden"));
	std::vector<const KfdDeviceEntry *> ptrs(entries.entries().begin(), entries.entries().end());
	const Topology image = topology_from_device_entries(ptrs);
	const GpuMap map = match_gpus(image, host, {});
	EXPECT_EQ(map.gpu_ids, (std::map<uint32_t, uint32_t> { { 59721, 59721 } }));
	EXPECT_EQ(map.cpu_nodes, (std::map<uint32_t, uint32_t> { { 1, 1 } }));
	EXPECT_TRUE(valid_mapping(image, host, {}, map));
}

TEST(GpuMatcherNodes, PodWithTwoOfEightMi300xRestoresOnTheFullNodeAndInAnotherPod)
{
	// criu#2723: a pod saw nodes 3 (socket 0) and 6 (socket 1), a hive of two.
	const Topology pod = fixture("mi300x-8gpu-spx-container");
	const Topology host = fixture("mi300x-8gpu-spx");
	GpuMap map = match_gpus(pod, host, {});
	EXPECT_TRUE(valid_mapping(pod, host, {}, map));
	EXPECT_EQ(map.gpu_ids.size(), 2u);

	// Another pod on a twin node is given nodes 2 and 9, under other ids.
	test::SysfsTree twin = test::hide_nodes(test::mi300x_8gpu_spx(), { 3, 4, 5, 6, 7, 8 });
	test::TempDir tmp;
	test::write_tree(twin, tmp.path());
	const Topology other_pod = rotate_ids(parse_topology(tmp.path()), 1);
	map = match_gpus(pod, other_pod, {});
	EXPECT_TRUE(valid_mapping(pod, other_pod, {}, map));
	EXPECT_EQ(other_pod.gpu(map.gpu_ids.at(pod.node(3)->gpu_id))->node_id, 2u) << "socket 0 to socket 0";
	EXPECT_EQ(other_pod.gpu(map.gpu_ids.at(pod.node(6)->gpu_id))->node_id, 9u) << "socket 1 to socket 1";
}

TEST(GpuMatcherNodes, LocalNodeMayHaveMoreGpusThanTheImage)
{
	Builder small, big;
	for (Builder *b : { &small, &big })
		b->cpu(0);
	small.gpu(1, 0x11);
	small.both(1, kPcie, 0);
	for (uint32_t i = 1; i <= 4; i++) {
		big.gpu(i, 0x20 + i);
		big.both(i, kPcie, 0);
	}
	const Topology s = small.build(), d = big.build();
	const GpuMap map = match_gpus(s, d, {});
	EXPECT_EQ(map.gpu_ids, (std::map<uint32_t, uint32_t> { { 0x11, 0x21 } }));
	EXPECT_EQ(match_error(d, s), "the image uses 4 GPUs (0x0021, 0x0022, 0x0023, 0x0024), this node has only 1 "
				     "that this task may use (0x0011)");
}

TEST(GpuMatcherNodes, HiveNeedsALocalHive)
{
	Builder src, dest;
	for (Builder *b : { &src, &dest }) {
		b->cpu(0);
		for (uint32_t i = 1; i <= 4; i++) {
			b->gpu(i, 0x10 * (b == &src ? 1 : 2) + i);
			b->both(i, kPcie, 0);
		}
	}
	src.both(1, kXgmi, 2);
	src.both(3, kXgmi, 4);
	dest.both(1, kXgmi, 2);
	dest.both(2, kXgmi, 3);
	dest.both(3, kXgmi, 4);
	EXPECT_EQ(match_error(src.build(), dest.build()), "the image has 2 xGMI hive(s), this node only 1");
	// One image hive fits into the local hive of four.
	Builder one;
	one.cpu(0);
	for (uint32_t i = 1; i <= 4; i++) {
		one.gpu(i, 0x30 + i);
		one.both(i, kPcie, 0);
	}
	one.both(3, kXgmi, 4);
	expect_maps(one.build(), dest.build());
	const GpuMap map = match_gpus(one.build(), dest.build(), {});
	EXPECT_EQ(dest.build().hive_of(dest.build().gpu(map.gpu_ids.at(0x33))->node_id), std::optional<size_t>(0));
	EXPECT_EQ(dest.build().hive_of(dest.build().gpu(map.gpu_ids.at(0x34))->node_id), std::optional<size_t>(0));
}

// ---------------------------------------------------------------------------------------------
// Policy switches and error messages

struct OneGpu {
	Topology src, dest;
	// Image and local node: one MI210 each; `tweak` changes the local GPU.
	explicit OneGpu(const std::function<void(NodeProperties &)> &tweak)
	{
		const Topology base = fixture("mi210-2gpu-cgroup-hidden");
		src = base;
		std::vector<Node> nodes = base.nodes();
		for (Node &n : nodes)
			if (n.is_gpu()) {
				n.gpu_id = 0x8a21;
				tweak(n.props);
			}
		dest = Topology(std::move(nodes));
	}
};

struct SwitchCase {
	const char *name;
	bool MatchPolicy::*flag;
	std::function<void(NodeProperties &)> tweak;
	const char *message;
};

TEST(GpuMatcherPolicy, EachCheckRefusesWhenOnAndAcceptsWhenOff)
{
	const std::string gpu = "gpu 0xe949 (node 3, device 0x740f): no local GPU fits: node 3 gpu 0x8a21 ";
	const SwitchCase cases[] = {
		{ "fw_version", &MatchPolicy::fw_version, [](NodeProperties &p) { p.fw_version = 58; },
		  "has fw_version 58 < 78 (KFD_FW_VER_CHECK=0 disables this check)" },
		{ "sdma_fw_version", &MatchPolicy::sdma_fw_version, [](NodeProperties &p) { p.sdma_fw_version = 7; },
		  "has sdma_fw_version 7 < 8 (KFD_SDMA_FW_VER_CHECK=0 disables this check)" },
		{ "caches_count", &MatchPolicy::caches_count, [](NodeProperties &p) { p.caches_count = 200; },
		  "has caches_count 200 < 258 (KFD_CACHES_COUNT_CHECK=0 disables this check)" },
		{ "num_gws", &MatchPolicy::num_gws, [](NodeProperties &p) { p.num_gws = 0; },
		  "has num_gws 0 < 64 (KFD_NUM_GWS_CHECK=0 disables this check)" },
		{ "vram_size", &MatchPolicy::vram_size, [](NodeProperties &p) { p.vram_size = 32ull << 30; },
		  "has vram_size 34359738368 < 68702699520 (KFD_VRAM_SIZE_CHECK=0 disables this check)" },
		{ "capability", &MatchPolicy::capability, [](NodeProperties &p) { p.capability ^= 0x80; },
		  "has capability 0x2c808400, not 0x2c808480 (KFD_CAPABILITY_CHECK=0 disables this check)" },
	};
	for (const SwitchCase &c : cases) {
		const OneGpu one(c.tweak);
		EXPECT_EQ(match_error(one.src, one.dest), gpu + c.message) << c.name;
		MatchPolicy off;
		off.*c.flag = false;
		EXPECT_EQ(match_gpus(one.src, one.dest, off).gpu_ids,
			  (std::map<uint32_t, uint32_t> { { 59721, 0x8a21 } }))
			<< c.name;
		EXPECT_TRUE(exists_mapping(one.src, one.dest, off)) << c.name;
		EXPECT_FALSE(exists_mapping(one.src, one.dest, {})) << c.name;
	}
}

TEST(GpuMatcherPolicy, NewerFirmwareAndMoreVramAreFine)
{
	const OneGpu one([](NodeProperties &p) {
		p.fw_version = 80;
		p.sdma_fw_version = 9;
		p.vram_size *= 2;
		p.caches_count++;
		p.num_gws++;
	});
	EXPECT_TRUE(valid_mapping(one.src, one.dest, {}, match_gpus(one.src, one.dest, {})));
}

TEST(GpuMatcherPolicy, NumaCheckKeepsGpusOfOneNumaNodeTogether)
{
	// The image's two GPUs share NUMA node 0; the local ones are on different NUMA nodes.
	Builder src, dest;
	src.cpu(0);
	src.cpu(1);
	src.gpu(2, 0x12);
	src.gpu(3, 0x13);
	src.both(2, kPcie, 0);
	src.both(3, kPcie, 0);
	dest.cpu(0);
	dest.cpu(1);
	dest.gpu(2, 0x22);
	dest.gpu(3, 0x23);
	dest.both(2, kPcie, 0);
	dest.both(3, kPcie, 1);
	const Topology s = src.build(), d = dest.build();
	const std::string error = match_error(s, d);
	EXPECT_TRUE(contains(error, "cannot place the image's 2 GPUs on NUMA node 0 (nodes 2, 3)")) << error;
	EXPECT_TRUE(contains(error, "(KFD_NUMA_CHECK=0 disables this check)")) << error;
	EXPECT_FALSE(exists_mapping(s, d, {}));

	MatchPolicy off;
	off.numa = false;
	const GpuMap map = match_gpus(s, d, off);
	EXPECT_TRUE(valid_mapping(s, d, off, map));
	EXPECT_TRUE(map.cpu_nodes.empty());
}

TEST(GpuMatcherPolicy, ImageNumaNodesNeedLocalNumaNodesOfTheirOwn)
{
	// One GPU on each image NUMA node; both local GPUs hang off NUMA node 0.
	Builder src, dest;
	for (Builder *b : { &src, &dest }) {
		b->cpu(0);
		b->cpu(1);
	}
	src.gpu(2, 0x12);
	src.gpu(3, 0x13);
	src.both(2, kPcie, 0);
	src.both(3, kPcie, 1);
	dest.gpu(2, 0x22);
	dest.gpu(3, 0x23);
	dest.both(2, kPcie, 0);
	dest.both(3, kPcie, 0);
	const Topology s = src.build(), d = dest.build();
	EXPECT_EQ(match_error(s, d),
		  "cannot place the image's GPU on NUMA node 1 (node 3): the GPUs of the image's NUMA "
		  "nodes 0, 1 fit only on local NUMA node(s) 0 (KFD_NUMA_CHECK=0 disables this check)");
	EXPECT_FALSE(exists_mapping(s, d, {}));
	MatchPolicy off;
	off.numa = false;
	EXPECT_TRUE(valid_mapping(s, d, off, match_gpus(s, d, off)));
}

TEST(GpuMatcherPolicy, ModelMismatchNamesGpuPropertyAndBothValues)
{
	const std::string error = match_error(fixture("mi210-2gpu-cgroup-hidden"), fixture("mi100-1gpu"));
	EXPECT_EQ(error.rfind("gpu 0xe949 (node 3, device 0x740f): no local GPU fits: node 1 gpu 0xa6cc has device_id "
			      "0x738c, not 0x740f; has simd_count 480, not 416; ",
			      0),
		  0u)
		<< error;
	EXPECT_TRUE(contains(error, "more differences")) << error;
}

TEST(GpuMatcherPolicy, PartitionModeMismatchIsNamedFirstWithBothModes)
{
	// An MI300X node dumped in SPX mode, restored on one in CPX mode, and the other way round: a
	// queue's state has one MQD per XCC, so neither can take the other's; the mode is the reason
	// given first, with the XCCs of both.
	const Topology spx = fixture("mi300x-8gpu-spx"), cpx = parse_topology(test::mi300x_cpx_tree());
	const std::string to_cpx = match_error(spx, cpx);
	EXPECT_TRUE(contains(to_cpx, "no local GPU fits (closest of 64): ")) << to_cpx;
	EXPECT_TRUE(contains(to_cpx, " is in compute partition mode CPX (1 XCC per node), the image's GPU was in "
				     "SPX (8 XCCs per node) (its queues' state has one MQD per XCC); has simd_count "
				     "152, not 1216"))
		<< to_cpx;
	// one OAM's 8 partitions (nodes 2..9), no more GPUs than the SPX node has
	std::vector<Node> oam;
	for (const Node &n : cpx.nodes())
		if (n.node_id < 10)
			oam.push_back(n);
	const std::string to_spx = match_error(Topology(std::move(oam)), spx);
	EXPECT_TRUE(contains(to_spx, "is in compute partition mode SPX (8 XCCs per node), the image's GPU was in "
				     "CPX (1 XCC per node)"))
		<< to_spx;
	// the same mode matches
	EXPECT_TRUE(valid_mapping(cpx, cpx, {}, match_gpus(cpx, cpx, {})));
}

TEST(GpuMatcherPolicy, ReportsTheClosestOfSeveralLocalGpus)
{
	// Image: one MI250X GCD with newer firmware than any local GCD.
	const Topology local = fixture("mi250x-4card");
	std::vector<Node> nodes;
	for (const Node &n : local.nodes())
		if (n.node_id == 0 || n.node_id == 4)
			nodes.push_back(n);
	nodes[1].props.fw_version = 80;
	const Topology image(std::move(nodes));
	EXPECT_EQ(match_error(image, local),
		  "gpu 0x3256 (node 4, device 0x740c): no local GPU fits (closest of 8): node 4 gpu 0x3256 has "
		  "fw_version 78 < 80 (KFD_FW_VER_CHECK=0 disables this check)");
}

TEST(GpuMatcherPolicy, TooFewFittingGpusNamesTheCompetitors)
{
	Builder src, dest;
	for (Builder *b : { &src, &dest })
		b->cpu(0);
	src.gpu(1, 0x11);
	src.gpu(2, 0x12);
	dest.gpu(1, 0x21);
	dest.gpu(2, 0x22, 0xd001);
	const std::string error = match_error(src.build(), dest.build());
	EXPECT_EQ(error, "gpu 0x12 (node 2, device 0xd000): no local GPU left: the image's 2 GPUs 0x11, 0x12 fit only "
			 "local GPU 0x21; left out: node 2 gpu 0x22 has device_id 0xd001, not 0xd000");
}

TEST(GpuMatcherPolicy, OneOfEightLocalGpusWithOlderFirmwareIsNamedWithItsValues)
{
	// Eight GPUs dumped; on the restoring node one of the eight has older MEC firmware.
	Builder src, dest;
	for (Builder *b : { &src, &dest })
		b->cpu(0);
	for (uint32_t i = 1; i <= 8; i++) {
		src.gpu(i, 0x10 + i).props.fw_version = 80;
		dest.gpu(i, 0x20 + i).props.fw_version = i == 6 ? 78 : 80;
	}
	const std::string error = match_error(src.build(), dest.build());
	EXPECT_TRUE(contains(error, "fit only the 7 local GPUs 0x21, 0x22, 0x23, 0x24, 0x25, 0x27, 0x28; left out: "
				    "node 6 gpu 0x26 has fw_version 78 < 80 (KFD_FW_VER_CHECK=0 disables this check)"))
		<< error;
	MatchPolicy lenient;
	lenient.fw_version = false;
	EXPECT_EQ(match_gpus(src.build(), dest.build(), lenient).gpu_ids.size(), 8u);
}

TEST(GpuMatcherPolicy, ManyIdenticalGpusOneNumaNodeShortFailsQuickly)
{
	// 32 + 32 partitions on two sockets in the image, 33 + 31 locally: every GPU fits, the
	// sockets do not. Backtracking over GPUs would take forever.
	const Topology src = parse_topology(test::mi300x_cpx_tree());
	std::vector<Node> nodes = src.nodes();
	Node &moved = nodes[2 + 32]; // first partition of socket 1
	for (IoLink &l : moved.links)
		if (l.node_to == 1)
			l.node_to = 0;
	for (Node &n : nodes) {
		if (n.node_id == 1)
			std::erase_if(n.links, [](const IoLink &l) { return l.node_to == 34; });
		if (n.node_id == 0)
			n.links.push_back({ IoLinkType::pcie, 34 });
	}
	const Topology dest(std::move(nodes));
	EXPECT_EQ(match_error(src, dest),
		  "cannot place the image's xGMI hive of 64 GPUs (nodes 2-65) on NUMA nodes 0, 1: local hive of nodes "
		  "2-65 leaves too little for the rest: cannot place the image's 32 GPUs on NUMA node 1 (nodes 34-65): "
		  "the GPUs of the image's NUMA nodes 0, 1 fit only on local NUMA node(s) 0 (KFD_NUMA_CHECK=0 "
		  "disables this check)");
	MatchPolicy off;
	off.numa = false;
	EXPECT_TRUE(valid_mapping(src, dest, off, match_gpus(src, dest, off)));
}

// ---------------------------------------------------------------------------------------------
// Agreement with exhaustive search on random topologies shaped like real machines: GPUs hang
// off one NUMA node each, a hive either stays within one NUMA node or is the only hive.

// `identical`: one GPU model and firmware throughout, so that only the structure decides.
Topology random_machine(std::mt19937 &rng, uint32_t gpus, bool image, bool identical)
{
	auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
	Builder b;
	const uint32_t cpus = 1 + pick(identical ? 4 : 3);
	for (uint32_t c = 0; c < cpus; c++)
		b.cpu(c);
	std::vector<uint32_t> numa(gpus);
	for (uint32_t i = 0; i < gpus; i++) {
		const uint32_t id = cpus + i;
		numa[i] = pick(cpus);
		Node &g = b.gpu(id, (image ? 0x1000 : 0x2000) + i, identical || pick(4) ? 0xd000 : 0xd001);
		g.props.fw_version = identical ? 78 : 77 + pick(2);
		b.link(id, kPcie, numa[i]);
		if (pick(5))
			b.link(numa[i], kPcie, id);
	}
	auto hive = [&](const std::vector<uint32_t> &members) {
		for (uint32_t a : members)
			for (uint32_t c : members)
				if (a != c)
					b.link(cpus + a, kXgmi, cpus + c);
	};
	switch (pick(3)) {
	case 0: // no hive
		break;
	case 1: { // one hive of random members, possibly across NUMA nodes
		std::vector<uint32_t> members;
		for (uint32_t i = 0; i < gpus; i++)
			if (pick(2))
				members.push_back(i);
		if (members.size() >= 2)
			hive(members);
		break;
	}
	case 2: // per NUMA node, a hive of its GPUs (bridged cards behind each socket)
		for (uint32_t c = 0; c < cpus; c++) {
			std::vector<uint32_t> members;
			for (uint32_t i = 0; i < gpus; i++)
				if (numa[i] == c && pick(4))
					members.push_back(i);
			if (members.size() >= 2)
				hive(members);
		}
		break;
	}
	return b.build();
}

TEST(GpuMatcherExhaustive, AgreesWithExhaustiveSearchOnRealisticShapes)
{
	std::mt19937 rng(20240611);
	size_t found = 0, refused = 0;
	for (int round = 0; round < 4000; round++) {
		const bool identical = rng() % 2;
		const uint32_t n = 1 + static_cast<uint32_t>(rng() % (identical ? 5 : 6));
		const Topology src = random_machine(rng, n, true, identical);
		const Topology dest = random_machine(rng, n + static_cast<uint32_t>(rng() % 2), false, identical);
		MatchPolicy policy;
		policy.numa = rng() % 4 != 0;
		const bool exists = exists_mapping(src, dest, policy);
		try {
			const GpuMap map = match_gpus(src, dest, policy);
			ASSERT_TRUE(valid_mapping(src, dest, policy, map)) << "round " << round;
			found++;
		} catch (const Error &e) {
			ASSERT_FALSE(exists) << "round " << round << ": refused a valid mapping: " << e.what();
			refused++;
		}
	}
	// The generator must exercise both outcomes.
	EXPECT_GT(found, 1000u);
	EXPECT_GT(refused, 1000u);
}

} // namespace
} // namespace amdgpu
