// SPDX-License-Identifier: GPL-2.0-only
//
// How long GPU matching takes on the biggest real topology (8 MI300X in CPX mode: 64 GPU nodes
// in one hive over two sockets) and on inputs that make backtracking matchers explode: many
// identical GPUs and no valid mapping. Prints the median of several runs; asserts nothing about
// time.
#include "support/error.hpp"
#include "matching/gpu_matcher.hpp"
#include "topology/topology.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

namespace amdgpu {
namespace {

constexpr uint32_t kSockets = 2;
constexpr uint32_t kPartitions = 64;

// One MI300X XCD in CPX mode, as KFD describes it (the properties the matcher compares, and
// those it only prints).
NodeProperties cpx_partition()
{
	return NodeProperties { .simd_count = 152,
				.mem_banks_count = 1,
				.caches_count = 78,
				.io_links_count = kPartitions,
				.max_waves_per_simd = 8,
				.lds_size_in_kb = 64,
				.num_gws = 64,
				.wave_front_size = 64,
				.array_count = 4,
				.simd_arrays_per_engine = 1,
				.cu_per_simd_array = 10,
				.simd_per_cu = 4,
				.max_slots_scratch_cu = 32,
				.vendor_id = 0x1002,
				.device_id = 0x74a1,
				.hive_id = 0x93895c2e08e1b5f7ull,
				.num_sdma_engines = 2,
				.num_sdma_queues_per_engine = 8,
				.num_cp_queues = 24,
				.fw_version = 166,
				.capability = 746037888,
				.sdma_fw_version = 22,
				.vram_public = true,
				.vram_size = (48ull << 30) - (16ull << 20),
				.gfx_target_version = 90402 };
}

// CPU nodes 0-1, GPU partitions at nodes 2-65; `socket_of(partition)` places them. GPU node ids
// and gpu_ids are permuted by `node_perm` and `ids`.
Topology cpx(const std::vector<uint32_t> &node_perm, const std::vector<uint32_t> &ids,
	     const std::function<uint32_t(uint32_t)> &socket_of)
{
	std::vector<Node> nodes(kSockets + kPartitions);
	for (uint32_t c = 0; c < kSockets; c++) {
		nodes[c].node_id = c;
		nodes[c].props.cpu_cores_count = 192;
	}
	for (uint32_t p = 0; p < kPartitions; p++) {
		Node &n = nodes[kSockets + p];
		n.node_id = kSockets + node_perm[p];
		n.gpu_id = ids[p];
		n.props = cpx_partition();
		n.props.drm_render_minor = 128 + p;
		n.links.push_back({ IoLinkType::pcie, socket_of(p) });
		nodes[socket_of(p)].links.push_back({ IoLinkType::pcie, n.node_id });
		for (uint32_t q = 0; q < kPartitions; q++)
			if (q != p)
				n.links.push_back({ IoLinkType::xgmi, kSockets + node_perm[q] });
	}
	return Topology(std::move(nodes));
}

double median_ms(const std::function<void()> &fn, int runs = 15)
{
	std::vector<double> ms;
	for (int i = 0; i < runs; i++) {
		const auto start = std::chrono::steady_clock::now();
		fn();
		ms.push_back(
			std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
	}
	std::sort(ms.begin(), ms.end());
	return ms[ms.size() / 2];
}

int run()
{
	std::mt19937 rng(2024);
	std::vector<uint32_t> identity(kPartitions), ids(kPartitions);
	std::iota(identity.begin(), identity.end(), 0);
	for (uint32_t p = 0; p < kPartitions; p++)
		ids[p] = 0x1000 + 97 * p;
	auto half = [](uint32_t p) { return p / (kPartitions / kSockets); };
	const Topology src = cpx(identity, ids, half);

	std::vector<uint32_t> perm = identity, shuffled_ids = ids;
	std::shuffle(perm.begin(), perm.end(), rng);
	std::shuffle(shuffled_ids.begin(), shuffled_ids.end(), rng);
	const Topology shuffled = cpx(perm, shuffled_ids, half);

	// 33 + 31 partitions per socket: every GPU fits, the sockets do not.
	const Topology lopsided = cpx(perm, shuffled_ids, [&](uint32_t p) { return p <= kPartitions / 2 ? 0u : 1u; });

	// One local partition with older firmware than the image's.
	std::vector<Node> nodes = shuffled.nodes();
	nodes.back().props.fw_version--;
	const Topology old_fw(std::move(nodes));

	const MatchPolicy policy;
	int status = 0;
	const double t_shuffled = median_ms([&] {
		if (match_gpus(src, shuffled, policy).gpu_ids.size() != kPartitions)
			status = 1;
	});
	auto expect_failure = [&](const Topology &dest) {
		return [&] {
			try {
				match_gpus(src, dest, policy);
				status = 1;
			} catch (const Error &) {
			}
		};
	};
	const double t_numa = median_ms(expect_failure(lopsided));
	const double t_fw = median_ms(expect_failure(old_fw));

	std::printf("matcher: cpx64 shuffled: %.2f ms\n", t_shuffled);
	std::printf("matcher: cpx64 identical GPUs, one socket short, no mapping: %.2f ms\n", t_numa);
	std::printf("matcher: cpx64 identical GPUs, one older firmware, no mapping: %.2f ms\n", t_fw);
	if (status)
		std::printf("matcher: unexpected matching result\n");
	return status;
}

} // namespace
} // namespace amdgpu

int main()
{
	return amdgpu::run();
}
