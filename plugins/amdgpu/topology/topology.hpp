// SPDX-License-Identifier: GPL-2.0-only
//
// The KFD topology: the CPU and GPU nodes the driver publishes under
// /sys/class/kfd/kfd/topology/nodes, the properties GPU matching compares, and the PCIe/xGMI
// links between nodes. At dump it is saved into the kfd image; at restore the saved copy (the
// source) is matched against the local one (the destination), see gpu_matcher.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace amdgpu {

inline constexpr std::string_view kDefaultTopologyDir = "/sys/class/kfd/kfd/topology/nodes";

// Bounds on what sysfs (or an image) may describe. Real machines stay far below them: KFD
// exposes one node per NUMA node and per GPU partition, and links to every peer of a hive.
inline constexpr size_t kMaxTopologyNodes = 1024;
inline constexpr size_t kMaxNodeLinks = 1024;
inline constexpr size_t kMaxMemBanks = 1024;
// KFD derives gpu_ids from a 16-bit hash; its mmap offset encoding has room for 16 bits only.
inline constexpr uint32_t kMaxGpuId = 0xffff;

// Only these two link types matter for placing GPUs; the others (e.g. CPU-to-CPU
// HyperTransport or QPI) are dropped when parsing.
enum class IoLinkType : uint32_t {
	pcie = 2,
	xgmi = 11,
};

const char *io_link_type_name(IoLinkType type);

// The compute partition mode amdgpu names for an MI300-class GPU from a node's XCCs and its
// GPU's partitions: "SPX" (one node of every XCC), "DPX", "TPX", "QPX" (2, 3, 4 nodes), "CPX" (a
// node per XCC); "" for a GPU that is not partitioned into XCCs.
std::string compute_partition_mode(uint32_t num_xcc, uint32_t device_partitions);

struct IoLink {
	IoLinkType type = IoLinkType::pcie;
	uint32_t node_to = 0;

	// Derived by Topology from the whole node set.
	bool valid = false;	    // the peer node is part of the topology (not hidden)
	bool bidirectional = false; // the peer has a link of the same type back

	bool operator==(const IoLink &) const = default;
};

// Every property the upstream plugin saves for a node, under the sysfs key names.
struct NodeProperties {
	uint32_t cpu_cores_count = 0;
	uint32_t simd_count = 0;
	uint32_t mem_banks_count = 0;
	uint32_t caches_count = 0;
	uint32_t io_links_count = 0;
	uint32_t max_waves_per_simd = 0;
	uint32_t lds_size_in_kb = 0;
	uint32_t gds_size_in_kb = 0;
	uint32_t num_gws = 0;
	uint32_t wave_front_size = 0;
	uint32_t array_count = 0;
	uint32_t simd_arrays_per_engine = 0;
	uint32_t cu_per_simd_array = 0;
	uint32_t simd_per_cu = 0;
	uint32_t max_slots_scratch_cu = 0;
	uint32_t vendor_id = 0;
	uint32_t device_id = 0;
	uint32_t domain = 0;
	uint32_t drm_render_minor = 0;
	uint64_t hive_id = 0;
	uint32_t num_sdma_engines = 0;
	uint32_t num_sdma_xgmi_engines = 0;
	uint32_t num_sdma_queues_per_engine = 0;
	uint32_t num_cp_queues = 0;
	uint32_t fw_version = 0;
	uint32_t capability = 0;
	uint32_t sdma_fw_version = 0;
	// From the node's VRAM bank (mem_banks/*/properties), GPU nodes only.
	bool vram_public = false; // heap_type 1 (large BAR) rather than 2
	uint64_t vram_size = 0;
	// An MI300-class GPU's partitioning: the XCCs the node runs as one GPU (KFD's num_xcc, 1 where
	// KFD does not print it) and how many KFD nodes its physical GPU is split into (nodes sharing
	// its unique_id; counted among the nodes visible, 1 for a whole GPU).
	uint32_t num_xcc = 1;
	uint32_t device_partitions = 1;
	// Informational (tools, logs); not part of the kfd image, never compared.
	uint32_t gfx_target_version = 0;
	uint64_t unique_id = 0;

	bool operator==(const NodeProperties &) const = default;
};

struct Node {
	uint32_t node_id = 0;
	uint32_t gpu_id = 0; // 0 for a CPU node
	NodeProperties props;
	std::vector<IoLink> links; // PCIe and xGMI links only

	bool is_gpu() const { return gpu_id != 0; }
	size_t valid_link_count() const;

	bool operator==(const Node &) const = default;
};

// A set of nodes with the link facts derived from it. Immutable once built.
class Topology {
public:
	Topology() = default;
	// Sorts by node id and derives link validity, bidirectionality and hives. Throws
	// Error(-EINVAL) on duplicate node ids or gpu_ids, or more than kMaxTopologyNodes nodes.
	explicit Topology(std::vector<Node> nodes);

	const std::vector<Node> &nodes() const { return nodes_; }
	const Node *node(uint32_t node_id) const;
	const Node *gpu(uint32_t gpu_id) const;
	std::vector<const Node *> gpus() const;
	std::vector<const Node *> cpus() const;

	// xGMI hives: connected components of the bidirectional xGMI links between GPUs, as sorted
	// node ids, in order of their first node. A GPU without such a link is in no hive.
	const std::vector<std::vector<uint32_t>> &hives() const { return hives_; }
	std::optional<size_t> hive_of(uint32_t node_id) const;

	// The same nodes without the links whose peer is missing (what an image stores).
	Topology without_invalid_links() const;

	bool operator==(const Topology &other) const { return nodes_ == other.nodes_; }

private:
	void check_nodes() const;
	void resolve_links();
	void find_hives();

	std::vector<Node> nodes_;
	std::vector<std::vector<uint32_t>> hives_;
	std::vector<std::optional<size_t>> hive_index_; // parallel to nodes_
};

// Reads a KFD topology tree (kDefaultTopologyDir on a live system). Nodes whose gpu_id cannot
// be read (hidden by the device cgroup, or gone) are skipped: the process cannot use them.
// Throws Error: -EINVAL naming the file (and line) for malformed or out-of-range content,
// -errno for unexpected I/O failures.
Topology parse_topology(const std::filesystem::path &nodes_dir);

// Node ids as ranges, for messages and listings: "2, 5-9, 12".
std::string node_ranges(std::vector<uint32_t> ids);

} // namespace amdgpu
