// SPDX-License-Identifier: GPL-2.0-only
//
// The sysfs topology parser, the derived link facts, and the topology <-> kfd image conversion.
#include "topology/topology.hpp"
#include "topology/topology_image.hpp"

#include "support/error.hpp"
#include "support/temp_dir.hpp"
#include "topology_fixtures.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

namespace amdgpu {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::topology_fixture;

constexpr uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;

std::string slurp(const fs::path &path)
{
	std::ifstream in(path, std::ios::binary);
	std::stringstream ss;
	ss << in.rdbuf();
	return ss.str();
}

void spit(const fs::path &path, const std::string &text)
{
	std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Replaces the first line starting with `key ` in `path` by `line`.
void replace_line(const fs::path &path, const std::string &key, const std::string &line)
{
	std::istringstream in(slurp(path));
	std::string out, l;
	bool done = false;
	while (std::getline(in, l)) {
		if (!done && l.rfind(key + " ", 0) == 0) {
			l = line;
			done = true;
		}
		out += l + "\n";
	}
	ASSERT_TRUE(done) << key << " not in " << path;
	spit(path, out);
}

// Line number (1-based) of the line starting with `key ` in `path`.
unsigned line_of(const fs::path &path, const std::string &key)
{
	std::istringstream in(slurp(path));
	std::string l;
	for (unsigned n = 1; std::getline(in, l); n++)
		if (l.rfind(key + " ", 0) == 0)
			return n;
	return 0;
}

// The parse error for a tree, or a test failure if it parses.
Error parse_error(const fs::path &dir)
{
	try {
		parse_topology(dir);
	} catch (const Error &e) {
		return e;
	}
	ADD_FAILURE() << dir << " parsed without error";
	return Error(0, "");
}

std::vector<uint32_t> node_ids(const Topology &t)
{
	std::vector<uint32_t> out;
	for (const Node &n : t.nodes())
		out.push_back(n.node_id);
	return out;
}

std::vector<uint32_t> range(uint32_t first, uint32_t last)
{
	std::vector<uint32_t> out;
	for (uint32_t i = first; i <= last; i++)
		out.push_back(i);
	return out;
}

// A copy of a checked-in tree, to corrupt.
struct TreeCopy {
	TempDir tmp;
	fs::path dir;
	explicit TreeCopy(const std::string &fixture) : dir(tmp.path() / "nodes")
	{
		fs::copy(topology_fixture(fixture), dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
	}
};

// ---------------------------------------------------------------------------------------------
// Fixtures

// Walks two trees and reports the first difference (type, symlink target or content).
std::string diff_trees(const fs::path &a, const fs::path &b)
{
	std::set<fs::path> names;
	for (const fs::path &root : { a, b })
		for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it)
			names.insert(fs::relative(it->path(), root));
	for (const fs::path &rel : names) {
		const fs::file_status sa = fs::symlink_status(a / rel), sb = fs::symlink_status(b / rel);
		if (sa.type() != sb.type())
			return rel.string() + ": type differs";
		if (fs::is_symlink(sa) && fs::read_symlink(a / rel) != fs::read_symlink(b / rel))
			return rel.string() + ": symlink target differs";
		if (fs::is_regular_file(sa) && slurp(a / rel) != slurp(b / rel))
			return rel.string() + ": content differs";
	}
	return "";
}

TEST(TopologyFixtures, CheckedInTreesMatchTheirGenerator)
{
	for (const auto &[name, tree] : test::checked_in_topologies()) {
		TempDir tmp;
		test::write_tree(tree, tmp.path());
		EXPECT_EQ(diff_trees(topology_fixture(name), tmp.path()), "") << "fixture " << name;
	}
}

TEST(TopologyFixtures, NoCheckedInFileExceedsOneHundredKiB)
{
	for (const auto &entry : fs::recursive_directory_iterator(test::kTopologyFixtureDir)) {
		if (entry.is_regular_file()) {
			EXPECT_LE(entry.file_size(), 100u * 1024) << entry.path();
		}
	}
}

// Rewrites the checked-in trees from the generators (from the repository root):
//   build/test/unit/unit-tests --gtest_also_run_disabled_tests
//   --gtest_filter=TopologyFixtures.DISABLED_RegenerateCheckedInTrees
TEST(TopologyFixtures, DISABLED_RegenerateCheckedInTrees)
{
	for (const auto &[name, tree] : test::checked_in_topologies()) {
		const fs::path dir = fs::path(test::kTopologyFixtureDir) / name;
		fs::remove_all(dir);
		test::write_tree(tree, dir);
	}
}

// ---------------------------------------------------------------------------------------------
// Parsing the machine types

TEST(TopologyParse, Mi300xPartitionsFromNumXccAndTheSharedUniqueId)
{
	const Topology spx = parse_topology(topology_fixture("mi300x-8gpu-spx"));
	ASSERT_EQ(spx.gpus().size(), 8u);
	for (const Node *g : spx.gpus()) {
		EXPECT_EQ(g->props.num_xcc, 8u);
		EXPECT_EQ(g->props.device_partitions, 1u);
	}
	const Topology cpx = parse_topology(test::mi300x_cpx_tree());
	ASSERT_EQ(cpx.gpus().size(), 64u);
	for (const Node *g : cpx.gpus()) {
		EXPECT_EQ(g->props.num_xcc, 1u);
		EXPECT_EQ(g->props.device_partitions, 8u);
	}
	// a GPU whose kernel prints no num_xcc, and one that is not an MI300
	const Topology mi210 = parse_topology(topology_fixture("mi210-2gpu-pcie"));
	for (const Node *g : mi210.gpus()) {
		EXPECT_EQ(g->props.num_xcc, 1u);
		EXPECT_EQ(g->props.device_partitions, 1u);
	}
}

TEST(TopologyParse, ComputePartitionModeNames)
{
	EXPECT_EQ(compute_partition_mode(1, 1), "");
	EXPECT_EQ(compute_partition_mode(8, 1), "SPX");
	EXPECT_EQ(compute_partition_mode(4, 2), "DPX");
	EXPECT_EQ(compute_partition_mode(2, 3), "TPX"); // MI300A: 6 XCCs in 3
	EXPECT_EQ(compute_partition_mode(2, 4), "QPX");
	EXPECT_EQ(compute_partition_mode(1, 8), "CPX");
	EXPECT_EQ(compute_partition_mode(1, 6), "CPX");
}

TEST(TopologyParse, ReadsOneMi100)
{
	const Topology t = parse_topology(topology_fixture("mi100-1gpu"));
	ASSERT_EQ(node_ids(t), (std::vector<uint32_t> { 0, 1 }));
	const Node &cpu = t.nodes()[0], &gpu = t.nodes()[1];
	EXPECT_FALSE(cpu.is_gpu());
	EXPECT_EQ(cpu.props.cpu_cores_count, 128u);
	EXPECT_EQ(cpu.props.vram_size, 0u);

	EXPECT_EQ(gpu.gpu_id, 42700u);
	EXPECT_EQ(gpu.props.device_id, 0x738cu);
	EXPECT_EQ(gpu.props.vendor_id, 0x1002u);
	EXPECT_EQ(gpu.props.gfx_target_version, 90008u);
	EXPECT_EQ(gpu.props.simd_count, 480u);
	EXPECT_EQ(gpu.props.max_waves_per_simd, 10u);
	EXPECT_EQ(gpu.props.caches_count, 217u);
	EXPECT_EQ(gpu.props.io_links_count, 1u);
	EXPECT_EQ(gpu.props.num_sdma_engines, 2u);
	EXPECT_EQ(gpu.props.num_sdma_xgmi_engines, 6u);
	EXPECT_EQ(gpu.props.num_cp_queues, 24u);
	EXPECT_EQ(gpu.props.fw_version, 65u);
	EXPECT_EQ(gpu.props.sdma_fw_version, 18u);
	EXPECT_EQ(gpu.props.capability, 749970048u);
	EXPECT_EQ(gpu.props.drm_render_minor, 128u);
	EXPECT_EQ(gpu.props.vram_size, 32 * kGiB - 16 * kMiB);
	EXPECT_FALSE(gpu.props.vram_public); // heap_type 2: no large BAR

	ASSERT_EQ(gpu.links.size(), 1u);
	EXPECT_EQ(gpu.links[0], (IoLink { IoLinkType::pcie, 0, true, true }));
	ASSERT_EQ(cpu.links.size(), 1u);
	EXPECT_EQ(cpu.links[0], (IoLink { IoLinkType::pcie, 1, true, true }));
	EXPECT_TRUE(t.hives().empty());
	EXPECT_EQ(t.gpus().size(), 1u);
	EXPECT_EQ(t.cpus().size(), 1u);
	EXPECT_EQ(t.gpu(42700), &gpu);
	EXPECT_EQ(t.node(1), &gpu);
	EXPECT_EQ(t.gpu(0), nullptr);
}

TEST(TopologyParse, ReadsTwoMi210BehindTwoSocketsAndDropsCpuToCpuLinks)
{
	const Topology t = parse_topology(topology_fixture("mi210-2gpu-pcie"));
	ASSERT_EQ(node_ids(t), (std::vector<uint32_t> { 0, 1, 2, 3 }));
	// The sockets' HyperTransport link (type 1) is not kept: only PCIe and xGMI matter.
	EXPECT_EQ(t.node(0)->links, (std::vector<IoLink> { { IoLinkType::pcie, 2, true, true } }));
	EXPECT_EQ(t.node(1)->links, (std::vector<IoLink> { { IoLinkType::pcie, 3, true, true } }));
	EXPECT_EQ(t.node(2)->links, (std::vector<IoLink> { { IoLinkType::pcie, 0, true, true } }));
	EXPECT_EQ(t.node(3)->links, (std::vector<IoLink> { { IoLinkType::pcie, 1, true, true } }));
	EXPECT_EQ(t.node(0)->props.cpu_cores_count, 64u);
	for (const Node *gpu : t.gpus()) {
		EXPECT_EQ(gpu->props.device_id, 0x740fu);
		EXPECT_EQ(gpu->props.gfx_target_version, 90010u);
		EXPECT_EQ(gpu->props.simd_count, 416u);
		EXPECT_EQ(gpu->props.vram_size, 64 * kGiB - 16 * kMiB);
		EXPECT_TRUE(gpu->props.vram_public);
	}
	EXPECT_EQ(t.node(2)->gpu_id, 19283u);
	EXPECT_EQ(t.node(3)->gpu_id, 59721u);
	EXPECT_EQ(t.node(3)->props.drm_render_minor, 129u);
	EXPECT_TRUE(t.hives().empty());
}

TEST(TopologyParse, ReadsFourMi250xAsOneHiveOfEightGcdsOnFourNumaNodes)
{
	const Topology t = parse_topology(topology_fixture("mi250x-4card"));
	EXPECT_EQ(node_ids(t), range(0, 11));
	EXPECT_EQ(t.cpus().size(), 4u);
	ASSERT_EQ(t.gpus().size(), 8u);
	ASSERT_EQ(t.hives().size(), 1u);
	EXPECT_EQ(t.hives()[0], range(4, 11));
	for (const Node *gpu : t.gpus()) {
		EXPECT_EQ(gpu->props.device_id, 0x740cu);
		EXPECT_EQ(gpu->props.simd_count, 440u);
		EXPECT_EQ(gpu->props.io_links_count, 8u);
		EXPECT_EQ(gpu->props.hive_id, 0x5d3a0f6c2e41b790ull);
		ASSERT_EQ(gpu->links.size(), 8u);
		EXPECT_EQ(gpu->links[0], (IoLink { IoLinkType::pcie, (gpu->node_id - 4) / 2, true, true }));
		for (size_t i = 1; i < gpu->links.size(); i++) {
			EXPECT_EQ(gpu->links[i].type, IoLinkType::xgmi);
			EXPECT_TRUE(gpu->links[i].bidirectional);
		}
		EXPECT_EQ(t.hive_of(gpu->node_id), std::optional<size_t>(0));
	}
	EXPECT_EQ(t.hive_of(0), std::nullopt);
}

TEST(TopologyParse, ReadsEightMi300xInSpxMode)
{
	const Topology t = parse_topology(topology_fixture("mi300x-8gpu-spx"));
	EXPECT_EQ(node_ids(t), range(0, 9));
	ASSERT_EQ(t.hives().size(), 1u);
	EXPECT_EQ(t.hives()[0], range(2, 9));
	for (const Node *gpu : t.gpus()) {
		const uint32_t index = gpu->node_id - 2;
		EXPECT_EQ(gpu->props.device_id, 0x74a1u);
		EXPECT_EQ(gpu->props.gfx_target_version, 90402u);
		EXPECT_EQ(gpu->props.simd_count, 1216u);
		EXPECT_EQ(gpu->props.num_sdma_xgmi_engines, 14u);
		EXPECT_EQ(gpu->props.vram_size, 192 * kGiB - 16 * kMiB);
		EXPECT_EQ(gpu->props.drm_render_minor, 128 + 8 * index);
		EXPECT_EQ(gpu->links[0].node_to, index / 4) << "GPUs 0-3 on socket 0, 4-7 on socket 1";
	}
	EXPECT_EQ(t.node(0)->props.cpu_cores_count, 192u);
}

TEST(TopologyParse, ReadsSixtyFourMi300xCpxPartitions)
{
	const Topology t = parse_topology(test::mi300x_cpx_tree());
	EXPECT_EQ(t.nodes().size(), 66u);
	ASSERT_EQ(t.gpus().size(), 64u);
	ASSERT_EQ(t.hives().size(), 1u);
	EXPECT_EQ(t.hives()[0].size(), 64u);
	std::set<uint32_t> ids;
	for (const Node *gpu : t.gpus()) {
		ids.insert(gpu->gpu_id);
		EXPECT_EQ(gpu->props.simd_count, 152u);
		EXPECT_EQ(gpu->props.io_links_count, 64u);
		EXPECT_EQ(gpu->valid_link_count(), 64u);
	}
	EXPECT_EQ(ids.size(), 64u);
	EXPECT_EQ(t.node(0)->valid_link_count(), 32u);
}

TEST(TopologyParse, ReadsCpuOnlyNode)
{
	const Topology t = parse_topology(topology_fixture("cpu-only"));
	EXPECT_EQ(node_ids(t), (std::vector<uint32_t> { 0, 1 }));
	EXPECT_TRUE(t.gpus().empty());
	EXPECT_TRUE(t.hives().empty());
	EXPECT_TRUE(t.node(0)->links.empty());
}

TEST(TopologyParse, SkipsGpusHiddenByTheDeviceCgroup)
{
	// criu#2248: the container is given the second MI210 only.
	const Topology t = parse_topology(topology_fixture("mi210-2gpu-cgroup-hidden"));
	EXPECT_EQ(node_ids(t), (std::vector<uint32_t> { 0, 1, 3 }));
	ASSERT_EQ(t.gpus().size(), 1u);
	EXPECT_EQ(t.gpus()[0]->gpu_id, 59721u);
	// The CPU's link to the hidden GPU is still listed, but leads nowhere.
	ASSERT_EQ(t.node(0)->links.size(), 1u);
	EXPECT_FALSE(t.node(0)->links[0].valid);
	EXPECT_EQ(t.node(0)->valid_link_count(), 0u);
	EXPECT_TRUE(t.node(3)->links[0].bidirectional);
}

TEST(TopologyParse, ContainerSeesTwoOfEightMi300xAsAHiveOfTwo)
{
	// criu#2723: a pod given the GPUs at nodes 3 (socket 0) and 6 (socket 1).
	const Topology t = parse_topology(topology_fixture("mi300x-8gpu-spx-container"));
	EXPECT_EQ(node_ids(t), (std::vector<uint32_t> { 0, 1, 3, 6 }));
	ASSERT_EQ(t.hives().size(), 1u);
	EXPECT_EQ(t.hives()[0], (std::vector<uint32_t> { 3, 6 }));
	for (const Node *gpu : t.gpus()) {
		EXPECT_EQ(gpu->links.size(), 8u);
		EXPECT_EQ(gpu->valid_link_count(), 2u); // its CPU and the other visible GPU
		EXPECT_EQ(gpu->props.io_links_count, 8u) << "the property still counts hidden peers";
	}
}

TEST(TopologyParse, OrdersNodesByIdAndIgnoresOtherEntries)
{
	TempDir tmp;
	test::SysfsTree tree = test::mi210_2gpu_pcie();
	std::swap(tree.nodes[0], tree.nodes[3]); // written in another order
	test::write_tree(tree, tmp.path());
	fs::create_directory(tmp.path() / "lost+found");
	fs::create_directory(tmp.path() / "07");
	spit(tmp.path() / "generation_id", "4\n");
	const Topology t = parse_topology(tmp.path());
	EXPECT_EQ(node_ids(t), (std::vector<uint32_t> { 0, 1, 2, 3 }));
}

// ---------------------------------------------------------------------------------------------
// Malformed and oversized content

TEST(TopologyParse, MalformedPropertyLineNamesFileLineAndText)
{
	TreeCopy tree("mi100-1gpu");
	const fs::path props = tree.dir / "1" / "properties";
	const unsigned line = line_of(props, "io_links_count");
	replace_line(props, "io_links_count", "io_links_count one");
	const Error e = parse_error(tree.dir);
	EXPECT_EQ(e.err(), -EINVAL);
	EXPECT_NE(std::string(e.what()).find(props.string() + ":" + std::to_string(line) + ":"), std::string::npos)
		<< e.what();
	EXPECT_NE(std::string(e.what()).find("'io_links_count one'"), std::string::npos) << e.what();
}

TEST(TopologyParse, LineWithoutValueIsMalformed)
{
	TreeCopy tree("mi100-1gpu");
	const fs::path props = tree.dir / "0" / "properties";
	replace_line(props, "simd_count", "simd_count");
	const Error e = parse_error(tree.dir);
	EXPECT_NE(std::string(e.what()).find(props.string() + ":2: malformed line 'simd_count'"), std::string::npos)
		<< e.what();
}

TEST(TopologyParse, MalformedLinkPropertiesNameTheLinkFile)
{
	TreeCopy tree("mi210-2gpu-pcie");
	const fs::path props = tree.dir / "2" / "io_links" / "0" / "properties";
	replace_line(props, "node_to", "node_to -1");
	const Error e = parse_error(tree.dir);
	EXPECT_NE(std::string(e.what()).find(props.string() + ":5:"), std::string::npos) << e.what();
}

TEST(TopologyParse, RejectsThirtyTwoBitPropertyAboveRange)
{
	TreeCopy tree("mi100-1gpu");
	const fs::path props = tree.dir / "1" / "properties";
	replace_line(props, "simd_count", "simd_count 4294967296");
	const Error e = parse_error(tree.dir);
	EXPECT_EQ(e.err(), -EINVAL);
	EXPECT_NE(std::string(e.what()).find(props.string() + ":2: simd_count 4294967296 does not fit 32 bits"),
		  std::string::npos)
		<< e.what();
}

TEST(TopologyParse, KeepsSixtyFourBitHiveIdButRejectsMore)
{
	TreeCopy tree("mi100-1gpu");
	const fs::path props = tree.dir / "1" / "properties";
	replace_line(props, "hive_id", "hive_id 18446744073709551615");
	EXPECT_EQ(parse_topology(tree.dir).node(1)->props.hive_id, UINT64_MAX);
	replace_line(props, "hive_id", "hive_id 18446744073709551616");
	const Error e = parse_error(tree.dir);
	EXPECT_NE(std::string(e.what()).find("value of hive_id does not fit 64 bits"), std::string::npos) << e.what();
}

TEST(TopologyParse, RejectsNameLongerThanSixtyFourCharacters)
{
	TreeCopy tree("mi100-1gpu");
	const fs::path props = tree.dir / "1" / "properties";
	spit(props, slurp(props) + std::string(64, 'k') + " 1\n");
	EXPECT_NO_THROW(parse_topology(tree.dir));
	spit(props, slurp(props) + std::string(65, 'x') + " 1\n");
	const Error e = parse_error(tree.dir);
	EXPECT_NE(std::string(e.what()).find("name longer than 64 characters"), std::string::npos) << e.what();
	EXPECT_NE(std::string(e.what()).find(props.string()), std::string::npos) << e.what();
}

TEST(TopologyParse, RejectsRepeatedKey)
{
	TreeCopy tree("mi100-1gpu");
	const fs::path props = tree.dir / "1" / "properties";
	spit(props, slurp(props) + "device_id 29580\n");
	const Error e = parse_error(tree.dir);
	EXPECT_NE(std::string(e.what()).find("device_id repeated"), std::string::npos) << e.what();
}

TEST(TopologyParse, RejectsFileLargerThanSixtyFourKiB)
{
	TreeCopy tree("mi100-1gpu");
	const fs::path props = tree.dir / "1" / "properties";
	std::string big = slurp(props);
	while (big.size() <= 64 * 1024)
		big += "padding_key_" + std::to_string(big.size()) + " 0\n";
	spit(props, big);
	const Error e = parse_error(tree.dir);
	EXPECT_EQ(std::string(e.what()), props.string() + " is larger than 65536 bytes");
}

TEST(TopologyParse, RejectsMalformedOrOutOfRangeGpuId)
{
	TreeCopy tree("mi100-1gpu");
	const fs::path gpu_id = tree.dir / "1" / "gpu_id";
	spit(gpu_id, "0x1234\n");
	Error e = parse_error(tree.dir);
	EXPECT_NE(std::string(e.what()).find(gpu_id.string() + ":1: malformed gpu_id '0x1234?'"), std::string::npos)
		<< e.what();
	spit(gpu_id, "65536\n");
	e = parse_error(tree.dir);
	EXPECT_NE(std::string(e.what()).find("gpu_id 65536 is out of range"), std::string::npos) << e.what();
}

TEST(TopologyParse, GpuWithoutVramBankIsAnError)
{
	TreeCopy tree("mi100-1gpu");
	replace_line(tree.dir / "1" / "mem_banks" / "0" / "properties", "heap_type", "heap_type 0");
	Error e = parse_error(tree.dir);
	EXPECT_EQ(e.err(), -EINVAL);
	EXPECT_NE(std::string(e.what()).find("node 1 (gpu 0xa6cc) has no VRAM"), std::string::npos) << e.what();

	fs::remove_all(tree.dir / "1" / "mem_banks");
	e = parse_error(tree.dir);
	EXPECT_NE(std::string(e.what()).find("has no VRAM"), std::string::npos) << e.what();
}

TEST(TopologyParse, EmptyVramBankIsNotVram)
{
	TreeCopy tree("mi100-1gpu");
	replace_line(tree.dir / "1" / "mem_banks" / "0" / "properties", "size_in_bytes", "size_in_bytes 0");
	EXPECT_NE(std::string(parse_error(tree.dir).what()).find("has no VRAM"), std::string::npos);
}

TEST(TopologyParse, VisibleNodeWithoutPropertiesIsAnError)
{
	TreeCopy tree("mi100-1gpu");
	fs::remove(tree.dir / "1" / "properties");
	const Error e = parse_error(tree.dir);
	EXPECT_EQ(e.err(), -ENOENT);
	EXPECT_NE(std::string(e.what()).find((tree.dir / "1" / "properties").string()), std::string::npos);
}

TEST(TopologyParse, LinkWithoutNodeToIsAnError)
{
	TreeCopy tree("mi100-1gpu");
	const fs::path props = tree.dir / "1" / "io_links" / "0" / "properties";
	replace_line(props, "node_to", "flags_copy 0");
	const Error e = parse_error(tree.dir);
	EXPECT_EQ(std::string(e.what()), props.string() + ": no node_to line");
}

TEST(TopologyParse, RejectsMoreThanTheNodeBound)
{
	TempDir tmp;
	for (uint32_t i = 0; i <= kMaxTopologyNodes; i++)
		fs::create_directory(tmp.path() / std::to_string(i));
	const Error e = parse_error(tmp.path());
	EXPECT_EQ(std::string(e.what()), tmp.path().string() + " has more than 1024 nodes");
}

TEST(TopologyParse, RejectsMoreThanTheLinkBound)
{
	TreeCopy tree("mi100-1gpu");
	for (uint32_t i = 1; i <= kMaxNodeLinks; i++)
		fs::create_directory(tree.dir / "1" / "io_links" / std::to_string(i));
	const Error e = parse_error(tree.dir);
	EXPECT_NE(std::string(e.what()).find("has more than 1024 io links"), std::string::npos) << e.what();
}

TEST(TopologyParse, MissingDirectoryIsAnErrorWithItsName)
{
	const Error e = parse_error("/nonexistent/kfd/topology/nodes");
	EXPECT_EQ(e.err(), -ENOENT);
	EXPECT_EQ(std::string(e.what()), "cannot list /nonexistent/kfd/topology/nodes: No such file or directory");
}

// ---------------------------------------------------------------------------------------------
// Derived link facts

Node cpu_node(uint32_t id)
{
	Node n;
	n.node_id = id;
	n.props.cpu_cores_count = 8;
	return n;
}

Node gpu_node(uint32_t id, uint32_t gpu_id, std::vector<IoLink> links)
{
	Node n;
	n.node_id = id;
	n.gpu_id = gpu_id;
	n.props.simd_count = 440;
	n.links = std::move(links);
	return n;
}

TEST(TopologyLinks, ValidIffThePeerExistsAndBidirectionalIffItLinksBack)
{
	Node cpu = cpu_node(0);
	cpu.links = { { IoLinkType::pcie, 1 } };
	const Topology t(
		{ cpu,
		  gpu_node(1, 0x100, { { IoLinkType::pcie, 0 }, { IoLinkType::xgmi, 2 }, { IoLinkType::xgmi, 9 } }),
		  gpu_node(2, 0x200, { { IoLinkType::pcie, 0 }, { IoLinkType::pcie, 1 } }) });
	const Node &a = *t.node(1), &b = *t.node(2);
	EXPECT_TRUE(a.links[0].valid && a.links[0].bidirectional);
	EXPECT_TRUE(a.links[1].valid);
	EXPECT_FALSE(a.links[1].bidirectional) << "the link back is PCIe, not xGMI";
	EXPECT_FALSE(a.links[2].valid) << "node 9 does not exist";
	EXPECT_FALSE(b.links[0].bidirectional) << "the CPU has no link to node 2";
	EXPECT_EQ(a.valid_link_count(), 2u);
	EXPECT_TRUE(t.hives().empty());
}

TEST(TopologyLinks, HivesAreComponentsOfBidirectionalXgmiLinks)
{
	auto x = [](uint32_t to) { return IoLink { IoLinkType::xgmi, to }; };
	const Topology t({ cpu_node(0), gpu_node(1, 0x11, { x(2) }), gpu_node(2, 0x12, { x(1), x(3) }),
			   gpu_node(3, 0x13, { x(2) }), gpu_node(4, 0x14, { x(5) }), gpu_node(5, 0x15, {}),
			   gpu_node(6, 0x16, { x(7) }), gpu_node(7, 0x17, { x(6) }) });
	ASSERT_EQ(t.hives().size(), 2u);
	EXPECT_EQ(t.hives()[0], (std::vector<uint32_t> { 1, 2, 3 }));
	EXPECT_EQ(t.hives()[1], (std::vector<uint32_t> { 6, 7 }));
	EXPECT_EQ(t.hive_of(3), std::optional<size_t>(0));
	EXPECT_EQ(t.hive_of(4), std::nullopt) << "a one-way xGMI link makes no hive";
	EXPECT_EQ(t.hive_of(7), std::optional<size_t>(1));
}

TEST(TopologyLinks, RejectsDuplicateNodeIdsAndGpuIds)
{
	try {
		Topology({ cpu_node(0), cpu_node(0) });
		ADD_FAILURE();
	} catch (const Error &e) {
		EXPECT_EQ(std::string(e.what()), "topology has node 0 twice");
	}
	try {
		Topology({ gpu_node(1, 0x55, {}), gpu_node(2, 0x55, {}) });
		ADD_FAILURE();
	} catch (const Error &e) {
		EXPECT_EQ(std::string(e.what()), "nodes 1 and 2 have the same gpu_id 0x55");
	}
}

// ---------------------------------------------------------------------------------------------
// Topology <-> kfd image device entries

struct CriuKfdDeleter {
	void operator()(CriuKfd *msg) const { criu_kfd__free_unpacked(msg, nullptr); }
};

// Topology -> device entries -> packed criu_kfd -> unpacked -> Topology.
Topology through_image(const Topology &t, const std::map<uint32_t, uint32_t> *translate = nullptr,
		       uint32_t *gpus = nullptr, uint32_t *cpus = nullptr)
{
	DeviceEntries entries(t, translate);
	CriuKfd msg = CRIU_KFD__INIT;
	entries.attach(msg);
	std::vector<uint8_t> bytes(criu_kfd__get_packed_size(&msg));
	criu_kfd__pack(&msg, bytes.data());
	std::unique_ptr<CriuKfd, CriuKfdDeleter> back(criu_kfd__unpack(nullptr, bytes.size(), bytes.data()));
	if (!back)
		throw std::runtime_error("unpack failed");
	if (gpus)
		*gpus = back->num_of_gpus;
	if (cpus)
		*cpus = back->num_of_cpus;
	return topology_from_image(*back);
}

// What an image keeps of a parsed topology: valid links only, no gfx_target_version or unique_id.
Topology as_stored(const Topology &t)
{
	std::vector<Node> nodes = t.without_invalid_links().nodes();
	for (Node &n : nodes) {
		n.props.gfx_target_version = 0;
		n.props.unique_id = 0;
	}
	return Topology(std::move(nodes));
}

TEST(TopologyImage, RoundTripsEveryFixtureThroughPackedProtobuf)
{
	std::vector<std::pair<std::string, Topology>> cases;
	for (const auto &[name, tree] : test::checked_in_topologies())
		cases.emplace_back(name, parse_topology(topology_fixture(name)));
	cases.emplace_back("mi300x-8gpu-cpx", parse_topology(test::mi300x_cpx_tree()));

	for (const auto &[name, parsed] : cases) {
		uint32_t gpus = 0, cpus = 0;
		const Topology back = through_image(parsed, nullptr, &gpus, &cpus);
		EXPECT_EQ(back, as_stored(parsed)) << name;
		EXPECT_EQ(back.hives(), parsed.hives()) << name;
		EXPECT_EQ(gpus, parsed.gpus().size()) << name;
		EXPECT_EQ(cpus, parsed.cpus().size()) << name;
	}
}

TEST(TopologyImage, WritesEveryFieldUpstreamRequiresOnCpuAndGpuEntries)
{
	const DeviceEntries entries(parse_topology(topology_fixture("mi210-2gpu-pcie")));
	ASSERT_EQ(entries.entries().size(), 4u);
	const ProtobufCMessageDescriptor &desc = kfd_device_entry__descriptor;
	for (const KfdDeviceEntry *e : entries.entries()) {
		for (unsigned i = 0; i < desc.n_fields; i++) {
			const ProtobufCFieldDescriptor &f = desc.fields[i];
			// ours (from 1001) are not upstream's to require
			if (f.label != PROTOBUF_C_LABEL_OPTIONAL || f.id > 1000)
				continue;
			const auto *has = reinterpret_cast<const protobuf_c_boolean *>(
				reinterpret_cast<const char *>(e) + f.quantifier_offset);
			EXPECT_TRUE(*has) << "node " << e->node_id << " lacks " << f.name;
		}
		ASSERT_EQ(e->n_iolinks, 1u);
		EXPECT_TRUE(e->iolinks[0]->has_type && e->iolinks[0]->has_node_to_id);
	}
	EXPECT_EQ(entries.entries()[2]->gpu_id, 19283u);
	EXPECT_EQ(entries.entries()[2]->vram_public, 1u);
	EXPECT_EQ(entries.num_gpus(), 2u);
	EXPECT_EQ(entries.num_cpus(), 2u);
}

TEST(TopologyImage, StoresOnlyValidLinks)
{
	const Topology hidden = parse_topology(topology_fixture("mi210-2gpu-cgroup-hidden"));
	const DeviceEntries entries(hidden);
	ASSERT_EQ(entries.entries().size(), 3u);
	EXPECT_EQ(entries.entries()[0]->n_iolinks, 0u) << "CPU 0's link leads to the hidden GPU";
	EXPECT_EQ(entries.entries()[2]->n_iolinks, 1u);
}

TEST(TopologyImage, TranslatesGpuIdsAndLeavesOutGpusTheProcessCannotUse)
{
	// criu#2248: criu sees both MI210s, the containerised process only the second one, which it
	// knows as 0x1234 (it was restored here from another node before).
	const Topology host = parse_topology(topology_fixture("mi210-2gpu-pcie"));
	const std::map<uint32_t, uint32_t> actual_to_user { { 59721, 0x1234 } };
	uint32_t gpus = 0, cpus = 0;
	const Topology image = through_image(host, &actual_to_user, &gpus, &cpus);
	EXPECT_EQ(node_ids(image), (std::vector<uint32_t> { 0, 1, 3 }));
	EXPECT_EQ(image.node(3)->gpu_id, 0x1234u);
	EXPECT_TRUE(image.node(0)->links.empty()) << "the link to the GPU left out is dropped";
	EXPECT_EQ(image.node(1)->links.size(), 1u);
	EXPECT_EQ(gpus, 1u);
	EXPECT_EQ(cpus, 2u);
}

TEST(TopologyImage, RefusesTranslationThatMergesGpuIds)
{
	const Topology host = parse_topology(topology_fixture("mi210-2gpu-pcie"));
	const std::map<uint32_t, uint32_t> bad { { 19283, 0x77 }, { 59721, 0x77 } };
	try {
		DeviceEntries entries(host, &bad);
		ADD_FAILURE();
	} catch (const Error &e) {
		EXPECT_EQ(std::string(e.what()), "two GPUs would be saved as gpu_id 0x77 (one is node 3)");
	}
}

// Hand-made device entries for the reader's checks.
struct Entries {
	std::vector<KfdDeviceEntry> entries;
	std::vector<std::vector<DevIolink>> links;
	std::vector<std::vector<DevIolink *>> link_ptrs;

	KfdDeviceEntry &add(uint32_t node_id)
	{
		KfdDeviceEntry e = KFD_DEVICE_ENTRY__INIT;
		e.has_node_id = true;
		e.node_id = node_id;
		entries.push_back(e);
		return entries.back();
	}
	KfdDeviceEntry &add_cpu(uint32_t node_id)
	{
		KfdDeviceEntry &e = add(node_id);
		e.has_cpu_cores_count = true;
		e.cpu_cores_count = 16;
		return e;
	}
	KfdDeviceEntry &add_gpu(uint32_t node_id, uint32_t gpu_id)
	{
		KfdDeviceEntry &e = add(node_id);
		e.has_gpu_id = true;
		e.gpu_id = gpu_id;
		e.has_simd_count = true;
		e.simd_count = 416;
		return e;
	}
	void link(size_t entry, uint32_t type, uint32_t to)
	{
		links.resize(entries.size());
		DevIolink l = DEV_IOLINK__INIT;
		l.has_type = l.has_node_to_id = true;
		l.type = type;
		l.node_to_id = to;
		links[entry].push_back(l);
	}
	Topology read()
	{
		links.resize(entries.size());
		link_ptrs.assign(entries.size(), {});
		std::vector<const KfdDeviceEntry *> ptrs;
		for (size_t i = 0; i < entries.size(); i++) {
			for (DevIolink &l : links[i])
				link_ptrs[i].push_back(&l);
			entries[i].n_iolinks = link_ptrs[i].size();
			entries[i].iolinks = link_ptrs[i].data();
			ptrs.push_back(&entries[i]);
		}
		return topology_from_device_entries(ptrs, "amdgpu-kfd-7.img");
	}
	std::string error()
	{
		try {
			read();
		} catch (const Error &e) {
			EXPECT_EQ(e.err(), -EINVAL);
			return e.what();
		}
		return "no error";
	}
};

// Node 0 a CPU, node 1 the GPU `gpu_id`: the smallest machine, for a test to add to or spoil.
Entries cpu_and_gpu(uint32_t gpu_id)
{
	Entries e;
	e.add_cpu(0);
	e.add_gpu(1, gpu_id);
	return e;
}

TEST(TopologyImage, MissingOptionalFieldsReadAsZero)
{
	Entries e = cpu_and_gpu(0x4f1e);
	e.link(1, 2, 0);
	const Topology t = e.read();
	ASSERT_EQ(t.gpus().size(), 1u);
	const Node &gpu = *t.gpus()[0];
	EXPECT_EQ(gpu.gpu_id, 0x4f1eu);
	EXPECT_EQ(gpu.props.simd_count, 416u);
	EXPECT_EQ(gpu.props.fw_version, 0u);
	EXPECT_EQ(gpu.props.vram_size, 0u);
	EXPECT_EQ(gpu.links, (std::vector<IoLink> { { IoLinkType::pcie, 0, true, false } }));
}

TEST(TopologyImage, EntryWithCoresOrWithoutGpuIdAndSimdsIsACpu)
{
	Entries e;
	e.add_cpu(0);
	e.add(1); // a CPU node without cores (memory only): no gpu_id, no SIMDs
	e.add_gpu(2, 0x22);
	const Topology t = e.read();
	EXPECT_EQ(t.cpus().size(), 2u);
	EXPECT_EQ(t.gpus().size(), 1u);
}

TEST(TopologyImage, ReaderRejectsGpuWithoutGpuId)
{
	Entries e;
	e.add_cpu(0);
	KfdDeviceEntry &g = e.add(1);
	g.has_simd_count = true;
	g.simd_count = 416;
	EXPECT_EQ(e.error(), "amdgpu-kfd-7.img: GPU node 1 has no gpu_id");
}

TEST(TopologyImage, ReaderRejectsGpuIdOutOfRange)
{
	EXPECT_EQ(cpu_and_gpu(0x10000).error(),
		  "amdgpu-kfd-7.img: GPU node 1 has gpu_id 0x10000, out of range (1 to 0xffff)");
	Entries z;
	z.add_gpu(1, 0);
	EXPECT_EQ(z.error(), "amdgpu-kfd-7.img: GPU node 1 has gpu_id 0x0, out of range (1 to 0xffff)");
}

TEST(TopologyImage, ReaderRejectsDuplicates)
{
	Entries nodes;
	nodes.add_cpu(0);
	nodes.add_gpu(0, 0x10);
	EXPECT_EQ(nodes.error(), "amdgpu-kfd-7.img: node 0 is described twice");
	Entries gpus;
	gpus.add_gpu(1, 0x10);
	gpus.add_gpu(2, 0x10);
	EXPECT_EQ(gpus.error(), "amdgpu-kfd-7.img: gpu_id 0x10 appears twice (again on node 2)");
}

TEST(TopologyImage, PartitioningIsOneWhereAbsentAndRefusedOutOfRange)
{
	Entries old = cpu_and_gpu(0x10);
	const Topology t = old.read();
	EXPECT_EQ(t.gpu(0x10)->props.num_xcc, 1u);
	EXPECT_EQ(t.gpu(0x10)->props.device_partitions, 1u);
	Entries zero = cpu_and_gpu(0x10);
	zero.entries[1].has_num_xcc = true;
	zero.entries[1].num_xcc = 0;
	EXPECT_EQ(zero.error(), "amdgpu-kfd-7.img: node 1 has num_xcc 0 (expected 1 to 64)");
	Entries many = cpu_and_gpu(0x10);
	many.entries[1].has_device_partitions = true;
	many.entries[1].device_partitions = 65;
	EXPECT_EQ(many.error(), "amdgpu-kfd-7.img: node 1 has device_partitions 65 (expected 1 to 64)");
}

TEST(TopologyImage, ReaderRejectsLinksOutOfRangeOrOfUnknownType)
{
	Entries far = cpu_and_gpu(0x10);
	far.link(1, 2, 5);
	EXPECT_EQ(far.error(),
		  "amdgpu-kfd-7.img: io link 0 of node 1 leads to node 5, which the image does not describe");
	Entries type = cpu_and_gpu(0x10);
	type.link(1, 1, 0);
	EXPECT_EQ(type.error(),
		  "amdgpu-kfd-7.img: io link 0 of node 1 has type 1 (expected 2 for PCIe or 11 for xGMI)");
	Entries self;
	self.add_gpu(1, 0x10);
	self.link(0, 11, 1);
	EXPECT_EQ(self.error(), "amdgpu-kfd-7.img: io link 0 of node 1 leads to the node itself");
}

TEST(TopologyImage, ReaderRejectsEntryCountsOutOfBoundsAndApus)
{
	Entries none;
	EXPECT_EQ(none.error(), "amdgpu-kfd-7.img has 0 device entries (expected 1 to 1024)");
	Entries big;
	for (uint32_t i = 0; i <= kMaxTopologyNodes; i++)
		big.add_cpu(i);
	EXPECT_EQ(big.error(), "amdgpu-kfd-7.img has 1025 device entries (expected 1 to 1024)");
	Entries apu;
	KfdDeviceEntry &a = apu.add_gpu(0, 0x99);
	a.has_cpu_cores_count = true;
	a.cpu_cores_count = 8;
	EXPECT_EQ(apu.error(), "amdgpu-kfd-7.img: node 0 has 8 CPU cores and gpu_id 0x99: APUs are not supported");
	Entries no_id;
	no_id.add_cpu(0).has_node_id = false;
	EXPECT_EQ(no_id.error(), "amdgpu-kfd-7.img: device entry 0 has no node_id");
}

// The emulator's models (test/emu/emu_main.c, kernel C) and the fixtures' (topology_fixtures.cpp)
// describe the same parts: every value both have must be the same. The emulator's table is read
// as text: `static const struct emu_model model_<name> = { .field = value, ... };`.
std::map<std::string, std::map<std::string, std::string>> emulator_models()
{
	const std::string source = slurp("test/emu/emu_main.c");
	const std::regex model(R"(static const struct emu_model model_(\w+) = \{([^;]*)\};)");
	const std::regex field(R"re(\.(\w+) = ("[^"]*"|0x[0-9a-fA-F]+|[0-9]+)[,\s])re");
	std::map<std::string, std::map<std::string, std::string>> out;
	for (std::sregex_iterator m(source.begin(), source.end(), model), end; m != end; ++m) {
		const std::string body = (*m)[2];
		auto &fields = out[(*m)[1]];
		for (std::sregex_iterator f(body.begin(), body.end(), field); f != end; ++f)
			fields[(*f)[1]] = (*f)[2];
	}
	return out;
}

TEST(GpuModels, EmulatorAndFixturesDescribeEachPartAlike)
{
	const auto emulator = emulator_models();
	ASSERT_FALSE(emulator.empty()) << "no emu_model found in test/emu/emu_main.c (run from the repository root)";
	for (const auto &[name, fixture] : test::gpu_models()) {
		SCOPED_TRACE("model " + name);
		ASSERT_TRUE(emulator.count(name)) << "test/emu/emu_main.c has no model_" << name;
		const auto &emu = emulator.at(name);
		const auto number = [&](const char *key) -> uint64_t {
			const auto it = emu.find(key);
			return it == emu.end() ? ~0ull : std::stoull(it->second, nullptr, 0);
		};
		EXPECT_EQ(emu.count("asic") ? emu.at("asic") : "", "\"" + std::string(fixture.asic) + "\"");
		// emulator field, fixture value
		const std::pair<const char *, uint64_t> same[] = {
			{ "device_id", fixture.device_id },
			{ "gfx_target_version", fixture.gfx_target_version },
			{ "simd_count", fixture.simd_count },
			{ "array_count", fixture.array_count },
			{ "cu_per_simd_array", fixture.cu_per_simd_array },
			{ "max_waves_per_simd", fixture.max_waves_per_simd },
			{ "max_engine_clk_fcompute", fixture.max_engine_clk_fcompute },
			{ "num_sdma_engines", fixture.num_sdma_engines },
			{ "num_sdma_xgmi_engines", fixture.num_sdma_xgmi_engines },
			{ "fw_version", fixture.fw_version },
			{ "sdma_fw_version", fixture.sdma_fw_version },
			{ "vram_width", fixture.mem_width },
			{ "mem_clk_max", fixture.mem_clk_max },
		};
		for (const auto &[key, value] : same)
			EXPECT_EQ(number(key), value) << key;
		EXPECT_EQ(number("vram_mb") << 20, fixture.hbm_size);
		EXPECT_EQ(number("num_xcc") == ~0ull ? 1 : number("num_xcc"), fixture.num_xcc);
		// Not compared: capability (the emulator leaves out what it does not emulate, SVM) and
		// caches_count (the emulator derives it from its cache table).
	}
}

} // namespace
} // namespace amdgpu
