// SPDX-License-Identifier: GPL-2.0-only
#include "topology_fixtures.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace amdgpu::test {

namespace fs = std::filesystem;

namespace {

// Flags KFD gives a link it creates in both directions: enabled | bi-directional.
constexpr uint64_t kLinkFlagsBidirectional = 0x80000001;
constexpr uint64_t kLinkTypeHyperTransport = 1;
constexpr uint64_t kLinkTypePcie = 2;
constexpr uint64_t kLinkTypeXgmi = 11;
constexpr uint64_t kHeapSystem = 0;
constexpr uint64_t kHeapFbPublic = 1;
constexpr uint64_t kHeapFbPrivate = 2;
constexpr uint64_t kAmdVendorId = 0x1002;
constexpr uint64_t kGiB = 1ull << 30;

// Instinct MI100 (Arcturus, gfx908): 120 CUs, 32 GiB HBM2, large BAR usually off. Eight SDMA
// engines: KFD keeps two for PCIe and gives the other six to xGMI on every part that can join a
// hive, bridge or not.
constexpr GpuModel kMi100 = {
	.asic = "arcturus",
	.device_id = 0x738c,
	.gfx_target_version = 90008,
	.simd_count = 480,
	.caches_count = 217,
	.max_waves_per_simd = 10,
	.array_count = 8,
	.cu_per_simd_array = 16,
	.num_sdma_engines = 2,
	.num_sdma_xgmi_engines = 6,
	.max_engine_clk_fcompute = 1502,
	.fw_version = 65,
	.capability = 749970048,
	.sdma_fw_version = 18,
	.heap_type = kHeapFbPrivate,
	.hbm_size = 32 * kGiB,
	.mem_width = 4096,
	.mem_clk_max = 1200,
	.pcie_max_bandwidth = 31504,
	.xgmi_bandwidth = 0,
	.num_xcc = 1,
};

// Instinct MI210 (Aldebaran, gfx90a): 104 CUs, 64 GiB HBM2e, PCIe card; five SDMA engines, 2 + 3.
constexpr GpuModel kMi210 = {
	.asic = "aldebaran",
	.device_id = 0x740f,
	.gfx_target_version = 90010,
	.simd_count = 416,
	.caches_count = 258,
	.max_waves_per_simd = 8,
	.array_count = 8,
	.cu_per_simd_array = 16,
	.num_sdma_engines = 2,
	.num_sdma_xgmi_engines = 3,
	.max_engine_clk_fcompute = 1700,
	.fw_version = 78,
	.capability = 746620032,
	.sdma_fw_version = 8,
	.heap_type = kHeapFbPublic,
	.hbm_size = 64 * kGiB,
	.mem_width = 4096,
	.mem_clk_max = 1600,
	.pcie_max_bandwidth = 31504,
	.xgmi_bandwidth = 50000,
	.num_xcc = 1,
};

// Instinct MI250X, one GCD: the MI210's die with 110 CUs enabled, 64 GiB HBM2e per GCD.
constexpr GpuModel kMi250x = [] {
	GpuModel m = kMi210;
	m.device_id = 0x740c;
	m.simd_count = 440;
	m.caches_count = 275;
	return m;
}();

// Instinct MI300X (gfx942) in SPX+NPS1 mode: 304 CUs on 8 XCCs, 192 GiB HBM3.
constexpr GpuModel kMi300x = {
	.asic = "ip discovery",
	.device_id = 0x74a1,
	.gfx_target_version = 90402,
	.simd_count = 1216,
	.caches_count = 626,
	.max_waves_per_simd = 8,
	.array_count = 32,
	.cu_per_simd_array = 10,
	.num_sdma_engines = 2,
	.num_sdma_xgmi_engines = 14,
	.max_engine_clk_fcompute = 2100,
	.fw_version = 166,
	.capability = 746037888,
	.sdma_fw_version = 22,
	.heap_type = kHeapFbPublic,
	.hbm_size = 192 * kGiB,
	.mem_width = 8192,
	.mem_clk_max = 1300,
	.pcie_max_bandwidth = 63008,
	.xgmi_bandwidth = 64000,
	.num_xcc = 8,
};

// One XCD of an MI300X in CPX mode with NPS4 memory: 38 CUs, two SDMA engines, no xGMI engine of
// its own, 24 GiB (an NPS4 memory partition of 48 GiB shared by two CPX partitions).
constexpr GpuModel kMi300xCpx = [] {
	GpuModel m = kMi300x;
	m.simd_count = 152;
	m.caches_count = 80;
	m.array_count = 4;
	m.num_sdma_xgmi_engines = 0;
	m.hbm_size = 24 * kGiB;
	m.num_xcc = 1;
	return m;
}();

struct GpuSlot {
	uint32_t cpu; // NUMA (CPU) node the GPU is attached to
	uint32_t gpu_id;
	uint32_t render_minor;
	uint32_t location_id; // PCI bus/device/function
	uint32_t package;     // card or OAM: peers on the same package are closer
};

struct Machine {
	std::vector<uint32_t> cpu_threads; // per CPU node
	std::vector<uint64_t> cpu_ram;	   // per CPU node
	uint32_t cpu_clock;
	uint32_t cpu_distance; // NUMA distance between the CPU nodes
	GpuModel model;
	std::vector<GpuSlot> gpus;
	uint64_t hive_id; // 0: no xGMI
	uint32_t (*xgmi_weight)(const GpuSlot &, const GpuSlot &);
};

Attributes link(uint64_t type, uint32_t from, uint32_t to, uint32_t weight, uint32_t min_bw, uint32_t max_bw,
		uint64_t flags)
{
	return { { "type", type },
		 { "version_major", 0 },
		 { "version_minor", 0 },
		 { "node_from", from },
		 { "node_to", to },
		 { "weight", weight },
		 { "min_latency", 0 },
		 { "max_latency", 0 },
		 { "min_bandwidth", min_bw },
		 { "max_bandwidth", max_bw },
		 { "recommended_transfer_size", 0 },
		 { "flags", flags } };
}

Attributes mem_bank(uint64_t heap, uint64_t size, uint32_t width, uint32_t clock)
{
	return { { "heap_type", heap },
		 { "size_in_bytes", size },
		 { "flags", 0 },
		 { "width", width },
		 { "mem_clk_max", clock } };
}

Attributes cpu_properties(uint32_t threads, uint32_t first_thread, size_t links, uint32_t clock)
{
	return { { "cpu_cores_count", threads },
		 { "simd_count", 0 },
		 { "mem_banks_count", 1 },
		 { "caches_count", 0 },
		 { "io_links_count", links },
		 { "p2p_links_count", 0 },
		 { "cpu_core_id_base", first_thread },
		 { "simd_id_base", 0 },
		 { "max_waves_per_simd", 0 },
		 { "lds_size_in_kb", 0 },
		 { "gds_size_in_kb", 0 },
		 { "num_gws", 0 },
		 { "wave_front_size", 0 },
		 { "array_count", 0 },
		 { "simd_arrays_per_engine", 0 },
		 { "cu_per_simd_array", 0 },
		 { "simd_per_cu", 0 },
		 { "max_slots_scratch_cu", 0 },
		 { "gfx_target_version", 0 },
		 { "vendor_id", 0 },
		 { "device_id", 0 },
		 { "location_id", 0 },
		 { "domain", 0 },
		 { "drm_render_minor", 0 },
		 { "hive_id", 0 },
		 { "num_sdma_engines", 0 },
		 { "num_sdma_xgmi_engines", 0 },
		 { "num_sdma_queues_per_engine", 0 },
		 { "num_cp_queues", 0 },
		 { "max_engine_clk_ccompute", clock } };
}

// The parts a kernel of 6.5 or newer drives, which prints each node's num_xcc
bool is_mi300(const GpuModel &g)
{
	return g.gfx_target_version >= 90400;
}

uint64_t unique_id(const GpuModel &g, const GpuSlot &slot);

Attributes gpu_properties(const Machine &m, size_t index, size_t links)
{
	const GpuModel &g = m.model;
	const GpuSlot &slot = m.gpus[index];
	Attributes props = { { "cpu_cores_count", 0 },
			     { "simd_count", g.simd_count },
			     { "mem_banks_count", 1 },
			     { "caches_count", g.caches_count },
			     { "io_links_count", links },
			     { "p2p_links_count", 0 },
			     { "cpu_core_id_base", 0 },
			     { "simd_id_base", 0x80001000 + 16 * index },
			     { "max_waves_per_simd", g.max_waves_per_simd },
			     { "lds_size_in_kb", 64 },
			     { "gds_size_in_kb", 0 },
			     { "num_gws", 64 },
			     { "wave_front_size", 64 },
			     { "array_count", g.array_count },
			     { "simd_arrays_per_engine", 1 },
			     { "cu_per_simd_array", g.cu_per_simd_array },
			     { "simd_per_cu", 4 },
			     { "max_slots_scratch_cu", 32 },
			     { "gfx_target_version", g.gfx_target_version },
			     { "vendor_id", kAmdVendorId },
			     { "device_id", g.device_id },
			     { "location_id", slot.location_id },
			     { "domain", 0 },
			     { "drm_render_minor", slot.render_minor },
			     { "hive_id", m.hive_id },
			     { "num_sdma_engines", g.num_sdma_engines },
			     { "num_sdma_xgmi_engines", g.num_sdma_xgmi_engines },
			     { "num_sdma_queues_per_engine", 8 },
			     { "num_cp_queues", 24 },
			     { "max_engine_clk_fcompute", g.max_engine_clk_fcompute },
			     { "local_mem_size", 0 },
			     { "fw_version", g.fw_version },
			     { "capability", g.capability },
			     { "sdma_fw_version", g.sdma_fw_version },
			     { "unique_id", unique_id(g, slot) },
			     { "max_engine_clk_ccompute", m.cpu_clock } };
	if (is_mi300(g))
		props.insert(props.end() - 1, { "num_xcc", g.num_xcc });
	return props;
}

// The GPU's own id, which an MI300's partitions share (they are one package).
uint64_t unique_id(const GpuModel &g, const GpuSlot &slot)
{
	return 0x3c2a6e5d00000000ull + (is_mi300(g) ? slot.package : slot.gpu_id) * 0x10001ull;
}

// KFD numbers CPU nodes first, then GPUs in probe order. Each GPU has a PCIe link to its NUMA
// node (and the CPU node one back); GPUs of a hive have an xGMI link to every other member.
SysfsTree build(const Machine &m)
{
	const uint32_t cpus = static_cast<uint32_t>(m.cpu_threads.size());
	SysfsTree tree;
	uint32_t first_thread = 0;
	for (uint32_t c = 0; c < cpus; c++) {
		SysfsNode node;
		node.id = c;
		for (uint32_t other = 0; other < cpus; other++)
			if (other != c)
				node.io_links.push_back(
					link(kLinkTypeHyperTransport, c, other, m.cpu_distance, 0, 0, 1));
		for (size_t i = 0; i < m.gpus.size(); i++)
			if (m.gpus[i].cpu == c)
				node.io_links.push_back(link(kLinkTypePcie, c, cpus + static_cast<uint32_t>(i), 20, 250,
							     m.model.pcie_max_bandwidth, kLinkFlagsBidirectional));
		node.properties = cpu_properties(m.cpu_threads[c], first_thread, node.io_links.size(), m.cpu_clock);
		node.mem_banks.push_back(mem_bank(kHeapSystem, m.cpu_ram[c], 72, 3200));
		first_thread += m.cpu_threads[c];
		tree.nodes.push_back(std::move(node));
	}
	for (size_t i = 0; i < m.gpus.size(); i++) {
		const uint32_t id = cpus + static_cast<uint32_t>(i);
		SysfsNode node;
		node.id = id;
		node.gpu_id = m.gpus[i].gpu_id;
		node.name = m.model.asic;
		node.io_links.push_back(link(kLinkTypePcie, id, m.gpus[i].cpu, 20, 250, m.model.pcie_max_bandwidth,
					     kLinkFlagsBidirectional));
		if (m.hive_id) {
			for (size_t j = 0; j < m.gpus.size(); j++) {
				if (j == i)
					continue;
				const uint32_t weight = m.xgmi_weight(m.gpus[i], m.gpus[j]);
				const uint32_t bw = weight <= 15 ? m.model.xgmi_bandwidth : 0;
				node.io_links.push_back(link(kLinkTypeXgmi, id, cpus + static_cast<uint32_t>(j), weight,
							     bw, bw, kLinkFlagsBidirectional));
			}
		}
		node.properties = gpu_properties(m, i, node.io_links.size());
		node.mem_banks.push_back(mem_bank(m.model.heap_type, m.model.hbm_size - kVramReservedByDriver,
						  m.model.mem_width, m.model.mem_clk_max));
		tree.nodes.push_back(std::move(node));
	}
	return tree;
}

void write_file(const fs::path &path, const std::string &text)
{
	std::ofstream out(path, std::ios::binary | std::ios::trunc);
	out << text;
	if (!out)
		throw std::runtime_error("cannot write " + path.string());
}

std::string format(const Attributes &attrs)
{
	std::string out;
	for (const auto &[key, value] : attrs)
		out += key + " " + std::to_string(value) + "\n";
	return out;
}

// A hidden node's attribute: a dangling symlink, so that open() fails even for root.
void write_attribute(const fs::path &path, const std::string &text, bool hidden)
{
	if (hidden)
		fs::create_symlink("denied-by-device-cgroup", path);
	else
		write_file(path, text);
}

} // namespace

const std::vector<std::pair<std::string, GpuModel>> &gpu_models()
{
	static const std::vector<std::pair<std::string, GpuModel>> models = {
		{ "mi100", kMi100 },
		{ "mi210", kMi210 },
		{ "mi250x", kMi250x },
		{ "mi300x_spx", kMi300x },
		{ "mi300x_cpx", kMi300xCpx }, // NPS1: the 192 GiB shared by the 8 partitions
		{ "mi300x_cpx_nps4", kMi300xCpx },
	};
	return models;
}

fs::path topology_fixture(const std::string &name)
{
	const fs::path path = fs::path(kTopologyFixtureDir) / name;
	if (!fs::is_directory(path))
		throw std::runtime_error("fixture " + path.string() +
					 " not found: run the unit tests from the repository root");
	return path;
}

void write_tree(const SysfsTree &tree, const fs::path &dir)
{
	for (const SysfsNode &node : tree.nodes) {
		const fs::path nd = dir / std::to_string(node.id);
		fs::create_directories(nd);
		write_attribute(nd / "gpu_id", std::to_string(node.gpu_id) + "\n", node.hidden);
		write_attribute(nd / "name", node.name + "\n", node.hidden);
		write_attribute(nd / "properties", format(node.properties), node.hidden);
		for (size_t i = 0; i < node.mem_banks.size(); i++) {
			fs::create_directories(nd / "mem_banks" / std::to_string(i));
			write_attribute(nd / "mem_banks" / std::to_string(i) / "properties", format(node.mem_banks[i]),
					node.hidden);
		}
		for (size_t i = 0; i < node.io_links.size(); i++) {
			fs::create_directories(nd / "io_links" / std::to_string(i));
			write_attribute(nd / "io_links" / std::to_string(i) / "properties", format(node.io_links[i]),
					node.hidden);
		}
	}
}

SysfsTree mi100_1gpu()
{
	// One EPYC 7742 (64 cores, 128 threads), 256 GiB.
	return build({
		.cpu_threads = { 128 },
		.cpu_ram = { 256 * kGiB },
		.cpu_clock = 2250,
		.cpu_distance = 12,
		.model = kMi100,
		.gpus = { { .cpu = 0, .gpu_id = 42700, .render_minor = 128, .location_id = 0x2300, .package = 0 } },
		.hive_id = 0,
		.xgmi_weight = nullptr,
	});
}

SysfsTree mi210_2gpu_pcie()
{
	// Two EPYC 7543 sockets (32 cores each), one MI210 behind each, no bridge.
	return build({
		.cpu_threads = { 64, 64 },
		.cpu_ram = { 128 * kGiB, 128 * kGiB },
		.cpu_clock = 2800,
		.cpu_distance = 32,
		.model = kMi210,
		.gpus = { { .cpu = 0, .gpu_id = 19283, .render_minor = 128, .location_id = 0x4100, .package = 0 },
			  { .cpu = 1, .gpu_id = 59721, .render_minor = 129, .location_id = 0xc100, .package = 1 } },
		.hive_id = 0,
		.xgmi_weight = nullptr,
	});
}

SysfsTree mi250x_4card()
{
	// One 64-core EPYC in NPS4 (4 NUMA nodes) and four MI250X OAMs, two GCDs each; each OAM hangs
	// off one NUMA node. All eight GCDs form one hive: one hop to the sibling GCD and to the GCDs
	// in the same position on the other OAMs, two hops to the rest.
	Machine m = {
		.cpu_threads = { 32, 32, 32, 32 },
		.cpu_ram = { 128 * kGiB, 128 * kGiB, 128 * kGiB, 128 * kGiB },
		.cpu_clock = 3500,
		.cpu_distance = 12,
		.model = kMi250x,
		.gpus = {},
		.hive_id = 0x5d3a0f6c2e41b790ull,
		.xgmi_weight = [](const GpuSlot &a, const GpuSlot &b) -> uint32_t {
			// Render minors are consecutive, so their parity is the GCD's position on its OAM.
			const bool direct = a.package == b.package || (a.render_minor & 1) == (b.render_minor & 1);
			return direct ? 15 : 30;
		},
	};
	const uint32_t ids[] = { 12886, 47405, 3071, 40121, 28664, 61940, 8801, 33590 };
	const uint32_t buses[] = { 0xc1, 0xc6, 0xc9, 0xce, 0xd1, 0xd6, 0xd9, 0xde };
	for (uint32_t i = 0; i < 8; i++)
		m.gpus.push_back({ .cpu = i / 2,
				   .gpu_id = ids[i],
				   .render_minor = 128 + i,
				   .location_id = buses[i] << 8,
				   .package = i / 2 });
	return build(m);
}

SysfsTree mi300x_8gpu_spx()
{
	// Two EPYC 9654 sockets (96 cores each), eight MI300X OAMs, four per socket, one hive.
	Machine m = {
		.cpu_threads = { 192, 192 },
		.cpu_ram = { 768 * kGiB, 768 * kGiB },
		.cpu_clock = 3700,
		.cpu_distance = 32,
		.model = kMi300x,
		.gpus = {},
		.hive_id = 0x93895c2e08e1b5f7ull,
		.xgmi_weight = [](const GpuSlot &, const GpuSlot &) -> uint32_t { return 15; },
	};
	const uint32_t ids[] = { 20249, 51737, 1867, 60412, 36470, 9130, 45223, 26981 };
	const uint32_t buses[] = { 0x0c, 0x22, 0x38, 0x5c, 0x9f, 0xaf, 0xbf, 0xdf };
	for (uint32_t i = 0; i < 8; i++)
		m.gpus.push_back({ .cpu = i / 4,
				   .gpu_id = ids[i],
				   .render_minor = 128 + 8 * i,
				   .location_id = buses[i] << 8,
				   .package = i });
	return build(m);
}

SysfsTree mi300x_8gpu_cpx()
{
	// The same node with every OAM in CPX mode: each of the 8 XCDs of an OAM is its own KFD
	// node, 64 in all, still one hive (partitions of one OAM are a little closer).
	Machine m = {
		.cpu_threads = { 192, 192 },
		.cpu_ram = { 768 * kGiB, 768 * kGiB },
		.cpu_clock = 3700,
		.cpu_distance = 32,
		.model = kMi300xCpx,
		.gpus = {},
		.hive_id = 0x93895c2e08e1b5f7ull,
		.xgmi_weight = [](const GpuSlot &a, const GpuSlot &b) -> uint32_t {
			return a.package == b.package ? 13 : 15;
		},
	};
	const uint32_t buses[] = { 0x0c, 0x22, 0x38, 0x5c, 0x9f, 0xaf, 0xbf, 0xdf };
	uint32_t seed = 0x2545f491;
	std::vector<uint32_t> used;
	for (uint32_t p = 0; p < 64; p++) {
		uint32_t id;
		do {
			seed = seed * 1664525 + 1013904223;
			id = (seed >> 16) & 0xffff;
		} while (id == 0 || std::find(used.begin(), used.end(), id) != used.end());
		used.push_back(id);
		m.gpus.push_back({ .cpu = p / 32,
				   .gpu_id = id,
				   .render_minor = 128 + p,
				   .location_id = buses[p / 8] << 8 | (p % 8),
				   .package = p / 8 });
	}
	return build(m);
}

SysfsTree cpu_only()
{
	// A two-socket server with amdgpu loaded but no GPU: KFD still publishes the CPU nodes.
	return build({
		.cpu_threads = { 64, 64 },
		.cpu_ram = { 256 * kGiB, 256 * kGiB },
		.cpu_clock = 3400,
		.cpu_distance = 32,
		.model = kMi100,
		.gpus = {},
		.hive_id = 0,
		.xgmi_weight = nullptr,
	});
}

namespace {

class GeneratedTree {
public:
	explicit GeneratedTree(const SysfsTree &tree)
	{
		std::error_code ec;
		const fs::path base = fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0
					      ? fs::path("/dev/shm")
					      : fs::temp_directory_path();
		std::string tmpl = (base / "amdgpu-topology-XXXXXX").string();
		if (!mkdtemp(tmpl.data()))
			throw std::runtime_error("mkdtemp in " + base.string() + " failed");
		path_ = tmpl;
		write_tree(tree, path_);
	}
	~GeneratedTree()
	{
		std::error_code ec;
		fs::remove_all(path_, ec);
	}
	GeneratedTree(const GeneratedTree &) = delete;
	GeneratedTree &operator=(const GeneratedTree &) = delete;

	const fs::path &path() const { return path_; }

private:
	fs::path path_;
};

} // namespace

const fs::path &mi300x_cpx_tree()
{
	static const GeneratedTree tree(mi300x_8gpu_cpx());
	return tree.path();
}

SysfsTree hide_nodes(SysfsTree tree, const std::vector<uint32_t> &node_ids)
{
	for (SysfsNode &node : tree.nodes)
		if (std::find(node_ids.begin(), node_ids.end(), node.id) != node_ids.end())
			node.hidden = true;
	return tree;
}

std::vector<std::pair<std::string, SysfsTree>> checked_in_topologies()
{
	std::vector<std::pair<std::string, SysfsTree>> out;
	out.emplace_back("mi100-1gpu", mi100_1gpu());
	out.emplace_back("mi210-2gpu-pcie", mi210_2gpu_pcie());
	out.emplace_back("mi250x-4card", mi250x_4card());
	out.emplace_back("mi300x-8gpu-spx", mi300x_8gpu_spx());
	out.emplace_back("cpu-only", cpu_only());
	// criu#2248: a container on the 2xMI210 node is given the second GPU only.
	out.emplace_back("mi210-2gpu-cgroup-hidden", hide_nodes(mi210_2gpu_pcie(), { 2 }));
	// criu#2723: a Kubernetes pod on the MI300X node sees two of the eight GPUs, one per socket.
	out.emplace_back("mi300x-8gpu-spx-container", hide_nodes(mi300x_8gpu_spx(), { 2, 4, 5, 7, 8, 9 }));
	return out;
}

} // namespace amdgpu::test
