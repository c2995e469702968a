// SPDX-License-Identifier: GPL-2.0-only
//
// KFD sysfs topology trees of real machine types, for the topology and matcher tests. The small
// trees are checked in under test/unit/fixtures/topology/ (README there); they are the output of
// the generators below, which a test keeps in sync. The 64-node MI300X CPX tree is generated into
// a temporary directory when a test needs it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace amdgpu::test {

// Relative to the repository root, where the unit tests run.
inline constexpr const char *kTopologyFixtureDir = "test/unit/fixtures/topology";

// The checked-in tree `name`; throws std::runtime_error when it is missing (tests not run from
// the repository root).
std::filesystem::path topology_fixture(const std::string &name);

// "key value" lines in the order KFD (Linux 6.1) prints them.
using Attributes = std::vector<std::pair<std::string, uint64_t>>;

struct SysfsNode {
	uint32_t id = 0;
	uint32_t gpu_id = 0; // 0 for a CPU node
	std::string name;    // ASIC name, empty for a CPU
	Attributes properties;
	std::vector<Attributes> mem_banks;
	std::vector<Attributes> io_links;
	// Hidden by the device cgroup: its attributes cannot be read. Written as dangling symlinks,
	// since root could read a file whatever its mode.
	bool hidden = false;
};

struct SysfsTree {
	std::vector<SysfsNode> nodes;
};

// Writes `tree` below `dir` (created if needed): <id>/{gpu_id,name,properties},
// <id>/mem_banks/<n>/properties, <id>/io_links/<n>/properties.
void write_tree(const SysfsTree &tree, const std::filesystem::path &dir);

// What KFD reports of one kind of GPU. The emulator (test/emu/emu_main.c) has a table of the same
// parts; a test checks that both say the same wherever both describe a value.
struct GpuModel {
	const char *asic; // the node's "name"
	uint32_t device_id;
	uint32_t gfx_target_version;
	uint32_t simd_count;
	uint32_t caches_count;
	uint32_t max_waves_per_simd;
	uint32_t array_count;
	uint32_t cu_per_simd_array;
	uint32_t num_sdma_engines;	// kept for PCIe copies
	uint32_t num_sdma_xgmi_engines; // the rest of the part's SDMA engines
	uint32_t max_engine_clk_fcompute;
	uint32_t fw_version; // MEC firmware: depends on the installed firmware, not on the part
	uint32_t capability;
	uint32_t sdma_fw_version;
	uint64_t heap_type;
	uint64_t hbm_size; // the memory on the part; its bank shows this minus kVramReservedByDriver
	uint32_t mem_width;
	uint32_t mem_clk_max;
	uint32_t pcie_max_bandwidth;
	uint32_t xgmi_bandwidth;
	uint32_t num_xcc; // XCCs one node runs as one GPU (MI300 in SPX: 8)
};

// What amdgpu keeps of VRAM for itself: a bank's size_in_bytes is the HBM minus this.
inline constexpr uint64_t kVramReservedByDriver = 16ull << 20;

// The models, by the emulator's name for them (its model_<name>).
const std::vector<std::pair<std::string, GpuModel>> &gpu_models();

// Machine types (values from real 6.1 systems; see the fixture README).
SysfsTree mi100_1gpu();
SysfsTree mi210_2gpu_pcie();
SysfsTree mi250x_4card();    // 8 GCD nodes in one xGMI hive, 4 NUMA nodes (NPS4)
SysfsTree mi300x_8gpu_spx(); // one hive, 2 sockets
SysfsTree mi300x_8gpu_cpx(); // 64 GPU partition nodes, one hive, 2 sockets
SysfsTree cpu_only();

// The MI300X CPX tree (about 4300 files), written once per test run into a directory on tmpfs
// when there is one (file creation on a disk-backed /tmp costs seconds), removed at exit.
const std::filesystem::path &mi300x_cpx_tree();

// `tree` as a process sees it when the device cgroup hides the GPU nodes `node_ids`.
SysfsTree hide_nodes(SysfsTree tree, const std::vector<uint32_t> &node_ids);

// The checked-in fixtures, by directory name.
std::vector<std::pair<std::string, SysfsTree>> checked_in_topologies();

} // namespace amdgpu::test
