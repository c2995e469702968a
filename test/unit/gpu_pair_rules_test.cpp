// SPDX-License-Identifier: GPL-2.0-only
//
// The matcher's rooms on their own: each pair rule with the reason a user reads in a refusal,
// and the bipartite matching's preference order and its account of a failed Hall condition.
#include "matching/bipartite_matching.hpp"
#include "matching/gpu_pair_rules.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace amdgpu::matching {
namespace {

using Reasons = std::vector<std::string>;

Node cpu(uint32_t id)
{
	Node n;
	n.node_id = id;
	n.props.cpu_cores_count = 1;
	return n;
}

Node gpu(uint32_t id, uint32_t gpu_id)
{
	Node n;
	n.node_id = id;
	n.gpu_id = gpu_id;
	n.props.vendor_id = 0x1002;
	n.props.device_id = 0x740f;
	n.props.simd_count = 416;
	n.props.vram_size = 64ull << 30;
	n.props.fw_version = 78;
	return n;
}

void link_both(std::vector<Node> &nodes, uint32_t a, IoLinkType type, uint32_t b)
{
	for (Node &n : nodes) {
		if (n.node_id == a)
			n.links.push_back({ type, b });
		if (n.node_id == b)
			n.links.push_back({ type, a });
	}
}

// CPU 0 and one GPU at node 1 linked both ways over PCIe; `tweak` changes the nodes.
Topology one_gpu(uint32_t gpu_id, const std::function<void(std::vector<Node> &)> &tweak = {})
{
	std::vector<Node> nodes { cpu(0), gpu(1, gpu_id) };
	link_both(nodes, 0, IoLinkType::pcie, 1);
	if (tweak)
		tweak(nodes);
	return Topology(std::move(nodes));
}

Reasons device_reasons(const Topology &image, const Topology &local, const MatchPolicy &policy = {})
{
	const PairRules rules(image, local, policy);
	EXPECT_EQ(rules.allowed(0, 0, nullptr), rules.why_not(0, 0, nullptr).empty());
	return rules.why_not(0, 0, nullptr);
}

TEST(GpuPairRules, IdenticalGpusAreAllowed)
{
	EXPECT_EQ(device_reasons(one_gpu(0x11), one_gpu(0x22)), Reasons {});
}

struct PropertyCase {
	std::function<void(NodeProperties &)> change;
	const char *reason;
};

TEST(GpuPairRules, EachDeviceDefiningPropertyMustBeEqualAndSaysBothValues)
{
	const PropertyCase cases[] = {
		{ [](NodeProperties &p) { p.vendor_id = 0x1022; }, "has vendor_id 0x1022, not 0x1002" },
		{ [](NodeProperties &p) { p.device_id = 0x738c; }, "has device_id 0x738c, not 0x740f" },
		{ [](NodeProperties &p) { p.simd_count = 480; }, "has simd_count 480, not 416" },
		{ [](NodeProperties &p) { p.mem_banks_count = 2; }, "has mem_banks_count 2, not 0" },
		{ [](NodeProperties &p) { p.io_links_count = 3; }, "has io_links_count 3, not 0" },
		{ [](NodeProperties &p) { p.max_waves_per_simd = 8; }, "has max_waves_per_simd 8, not 0" },
		{ [](NodeProperties &p) { p.lds_size_in_kb = 64; }, "has lds_size_in_kb 64, not 0" },
		{ [](NodeProperties &p) { p.wave_front_size = 64; }, "has wave_front_size 64, not 0" },
		{ [](NodeProperties &p) { p.array_count = 4; }, "has array_count 4, not 0" },
		{ [](NodeProperties &p) { p.simd_arrays_per_engine = 1; }, "has simd_arrays_per_engine 1, not 0" },
		{ [](NodeProperties &p) { p.cu_per_simd_array = 10; }, "has cu_per_simd_array 10, not 0" },
		{ [](NodeProperties &p) { p.simd_per_cu = 4; }, "has simd_per_cu 4, not 0" },
		{ [](NodeProperties &p) { p.max_slots_scratch_cu = 32; }, "has max_slots_scratch_cu 32, not 0" },
		{ [](NodeProperties &p) { p.num_sdma_engines = 2; }, "has num_sdma_engines 2, not 0" },
		{ [](NodeProperties &p) { p.num_sdma_xgmi_engines = 6; }, "has num_sdma_xgmi_engines 6, not 0" },
		{ [](NodeProperties &p) { p.num_sdma_queues_per_engine = 8; },
		  "has num_sdma_queues_per_engine 8, not 0" },
		{ [](NodeProperties &p) { p.num_cp_queues = 24; }, "has num_cp_queues 24, not 0" },
		{ [](NodeProperties &p) { p.vram_public = true; }, "has vram_public 1, not 0" },
	};
	MatchPolicy all_off;
	all_off.fw_version = all_off.sdma_fw_version = all_off.caches_count = all_off.num_gws = all_off.vram_size =
		all_off.numa = all_off.capability = false;
	for (const PropertyCase &c : cases) {
		const Topology local = one_gpu(0x22, [&](std::vector<Node> &n) { c.change(n[1].props); });
		EXPECT_EQ(device_reasons(one_gpu(0x11), local), Reasons { c.reason });
		EXPECT_EQ(device_reasons(one_gpu(0x11), local, all_off), Reasons { c.reason }) << "no switch for it";
	}
}

TEST(GpuPairRules, SwitchableChecksNameTheirVariableAndGoAwayWhenOff)
{
	struct Case {
		std::function<void(NodeProperties &)> change;
		bool MatchPolicy::*flag;
		const char *reason;
	};
	const Case cases[] = {
		{ [](NodeProperties &p) { p.capability = 0x80; }, &MatchPolicy::capability,
		  "has capability 0x80, not 0x0 (KFD_CAPABILITY_CHECK=0 disables this check)" },
		{ [](NodeProperties &p) { p.vram_size = 32ull << 30; }, &MatchPolicy::vram_size,
		  "has vram_size 34359738368 < 68719476736 (KFD_VRAM_SIZE_CHECK=0 disables this check)" },
		{ [](NodeProperties &p) { p.fw_version = 77; }, &MatchPolicy::fw_version,
		  "has fw_version 77 < 78 (KFD_FW_VER_CHECK=0 disables this check)" },
	};
	for (const Case &c : cases) {
		const Topology local = one_gpu(0x22, [&](std::vector<Node> &n) { c.change(n[1].props); });
		EXPECT_EQ(device_reasons(one_gpu(0x11), local), Reasons { c.reason });
		MatchPolicy off;
		off.*c.flag = false;
		EXPECT_EQ(device_reasons(one_gpu(0x11), local, off), Reasons {});
	}
	// "At least": a newer local firmware is fine, an older image one too.
	const Topology newer = one_gpu(0x22, [](std::vector<Node> &n) { n[1].props.fw_version = 80; });
	EXPECT_EQ(device_reasons(one_gpu(0x11), newer), Reasons {});
	EXPECT_EQ(device_reasons(newer, one_gpu(0x11)),
		  Reasons { "has fw_version 78 < 80 (KFD_FW_VER_CHECK=0 disables this check)" });
}

TEST(GpuPairRules, EveryDifferenceIsReportedDeviceDefiningFirst)
{
	const Topology local = one_gpu(0x22, [](std::vector<Node> &n) {
		n[1].props.fw_version = 1;
		n[1].props.device_id = 0x738c;
	});
	EXPECT_EQ(device_reasons(one_gpu(0x11), local),
		  (Reasons { "has device_id 0x738c, not 0x740f",
			     "has fw_version 1 < 78 (KFD_FW_VER_CHECK=0 disables this check)" }));
}

TEST(GpuPairRules, LinksMustBeAsManyAndAsGood)
{
	// The image GPU has a peer; the local one has no link to it.
	const Topology image = one_gpu(0x11, [](std::vector<Node> &n) {
		n.push_back(gpu(2, 0x12));
		link_both(n, 1, IoLinkType::pcie, 2);
		link_both(n, 0, IoLinkType::pcie, 2);
	});
	const Topology local = one_gpu(0x22, [](std::vector<Node> &n) {
		n.push_back(gpu(2, 0x23));
		link_both(n, 0, IoLinkType::pcie, 2);
	});
	EXPECT_EQ(device_reasons(image, local), Reasons { "has 1 io links, fewer than the 2 of the image's GPU" });

	// The local CPU does not link back: its GPU's CPU link is one way.
	const Topology one_way = one_gpu(0x22, [](std::vector<Node> &n) { n[0].links.clear(); });
	EXPECT_EQ(device_reasons(one_gpu(0x11), one_way),
		  Reasons { "has no CPU link as good as the image GPU's bidirectional PCIe link to node 0" });
	EXPECT_EQ(device_reasons(one_way, one_gpu(0x11)), Reasons {}) << "a better link serves";
}

TEST(GpuPairRules, WithTheNumaCheckACpuLinkMustBeOfTheSameType)
{
	const Topology xgmi = one_gpu(0x22, [](std::vector<Node> &n) {
		n[0].links.clear();
		n[1].links.clear();
		link_both(n, 0, IoLinkType::xgmi, 1);
	});
	EXPECT_EQ(device_reasons(one_gpu(0x11), xgmi),
		  Reasons { "has no CPU link as good as the image GPU's bidirectional PCIe link to node 0" });
	MatchPolicy no_numa;
	no_numa.numa = false;
	EXPECT_EQ(device_reasons(one_gpu(0x11), xgmi, no_numa), Reasons {}) << "xGMI serves for PCIe";
	EXPECT_EQ(device_reasons(xgmi, one_gpu(0x11), no_numa),
		  Reasons { "has no CPU link as good as the image GPU's bidirectional xGMI link to node 0" });
}

// CPUs 0 and 1; GPUs 2 and 3 in a hive behind CPU 0, GPU 4 alone behind CPU 1.
Topology hive_and_one()
{
	std::vector<Node> nodes { cpu(0), cpu(1), gpu(2, 0x12), gpu(3, 0x13), gpu(4, 0x14) };
	link_both(nodes, 0, IoLinkType::pcie, 2);
	link_both(nodes, 0, IoLinkType::pcie, 3);
	link_both(nodes, 1, IoLinkType::pcie, 4);
	link_both(nodes, 2, IoLinkType::xgmi, 3);
	return Topology(std::move(nodes));
}

TEST(GpuPairRules, HiveRuleUnderAPlacement)
{
	// Image: GPUs 2 and 3 in a hive, no CPU links (only the hive rule speaks).
	std::vector<Node> nodes { gpu(2, 0x12), gpu(3, 0x13) };
	link_both(nodes, 2, IoLinkType::xgmi, 3);
	const Topology image(std::move(nodes)), local = hive_and_one();
	const PairRules rules(image, local, {});
	Placement p(1, 1);
	EXPECT_EQ(rules.why_not(0, 2, &p), Reasons { "is in no xGMI hive" });
	EXPECT_TRUE(rules.allowed(0, 0, &p));
	p.dest_hive_used[0] = true;
	EXPECT_EQ(rules.why_not(0, 0, &p), Reasons { "is in a local hive taken by another image hive" });
	EXPECT_FALSE(rules.allowed(0, 0, &p));
	p = Placement(1, 2);
	p.assign({ true, 0 }, 1);
	EXPECT_EQ(rules.why_not(0, 0, &p), Reasons { "is outside the local hive chosen for its image hive" });
	EXPECT_FALSE(rules.allowed(0, 0, &p));
}

TEST(GpuPairRules, NumaRuleUnderAPlacement)
{
	// CPUs 0 and 1, GPU 2 behind CPU 0, GPU 3 behind CPU 1.
	std::vector<Node> nodes { cpu(0), cpu(1), gpu(2, 0x12), gpu(3, 0x13) };
	link_both(nodes, 0, IoLinkType::pcie, 2);
	link_both(nodes, 1, IoLinkType::pcie, 3);
	const Topology t(std::move(nodes));
	const PairRules rules(t, t, {});
	Placement p(0, 0);
	p.assign({ false, 0 }, 0);
	EXPECT_TRUE(rules.allowed(0, 0, &p));
	EXPECT_EQ(rules.why_not(1, 0, &p),
		  Reasons { "is attached to no free local NUMA node (KFD_NUMA_CHECK=0 disables this check)" });
	EXPECT_FALSE(rules.allowed(1, 0, &p));
	p.assign({ false, 1 }, 1);
	EXPECT_EQ(rules.why_not(0, 1, &p),
		  Reasons { "is not attached to local NUMA node 0, where the image's NUMA node 0 "
			    "goes (KFD_NUMA_CHECK=0 disables this check)" });
	EXPECT_FALSE(rules.allowed(0, 1, &p));
	MatchPolicy no_numa;
	no_numa.numa = false;
	EXPECT_TRUE(PairRules(t, t, no_numa).allowed(0, 1, &p));
	EXPECT_EQ(PairRules(t, t, no_numa).why_not(0, 1, &p), Reasons {});
}

TEST(GpuPairRules, MatchingPrefersTheLocalGpuAtTheSameNode)
{
	const Topology t = hive_and_one();
	const PairRules rules(t, t, {});
	const Bipartite b = rules.match(rules.all(), nullptr);
	for (size_t s = 0; s < 3; s++)
		EXPECT_EQ(b.left_match(s), static_cast<int>(s));
}

TEST(BipartiteMatching, PreferenceOrderWinsWhenItIsPerfect)
{
	Bipartite b(3, 3);
	for (size_t l = 0; l < 3; l++)
		for (size_t r : { (l + 1) % 3, l, (l + 2) % 3 })
			b.add_edge(l, r);
	EXPECT_EQ(b.solve(), 3u);
	EXPECT_TRUE(b.complete());
	for (size_t l = 0; l < 3; l++)
		EXPECT_EQ(b.left_match(l), static_cast<int>((l + 1) % 3));
}

TEST(BipartiteMatching, AugmentsPastAGreedyChoice)
{
	// Greedy gives right 0 to left 0; left 1 can only use right 0.
	Bipartite b(2, 2);
	b.add_edge(0, 0);
	b.add_edge(0, 1);
	b.add_edge(1, 0);
	EXPECT_EQ(b.solve(), 2u);
	EXPECT_EQ(b.left_match(0), 1);
	EXPECT_EQ(b.left_match(1), 0);
	EXPECT_EQ(b.right_match(0), 1);
}

TEST(BipartiteMatching, CompetitionNamesTheLeftsCrowdingTooFewRights)
{
	// Lefts 0, 1, 2 all fit only rights 0 and 1; left 3 has right 2 of its own.
	Bipartite b(4, 3);
	for (size_t l = 0; l < 3; l++) {
		b.add_edge(l, 0);
		b.add_edge(l, 1);
	}
	b.add_edge(3, 2);
	EXPECT_EQ(b.solve(), 3u);
	EXPECT_FALSE(b.complete());
	size_t unmatched = 0;
	while (b.left_match(unmatched) != kNone)
		unmatched++;
	std::vector<size_t> lefts, rights;
	b.competition(unmatched, lefts, rights);
	EXPECT_EQ(lefts, (std::vector<size_t> { 0, 1, 2 }));
	EXPECT_EQ(rights, (std::vector<size_t> { 0, 1 }));
}

} // namespace
} // namespace amdgpu::matching
