// SPDX-License-Identifier: GPL-2.0-only
//
// amdgpu-topology as a user runs it before a migration: the tool built next to this test binary
// (build/bin/), on the checked-in sysfs trees.
#include "sessions/dump_session.hpp"
#include "images/image_checksums.hpp"
#include "support/fake_gpu.hpp"
#include "support/temp_dir.hpp"
#include "topology_fixtures.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace amdgpu {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = "test/unit/fixtures/topology";

fs::path tool()
{
	// build/test/unit/unit-tests -> build/bin/amdgpu-topology
	return fs::read_symlink("/proc/self/exe").parent_path().parent_path().parent_path() / "bin" / "amdgpu-topology";
}

struct ToolRun {
	int exit_status;
	std::string output;
};

ToolRun run_tool(const std::string &args, const std::string &env = "")
{
	const std::string cmd = env + " " + tool().string() + " " + args + " 2>&1";
	FILE *p = popen(cmd.c_str(), "r");
	if (!p)
		return { -1, "popen failed" };
	std::string out;
	std::array<char, 4096> buf;
	size_t n;
	while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
		out.append(buf.data(), n);
	const int status = pclose(p);
	return { WIFEXITED(status) ? WEXITSTATUS(status) : -1, out };
}

// A copy of a fixture tree with one node's fw_version replaced.
void lower_firmware(const test::TempDir &dir, const fs::path &fixture, const std::string &node, unsigned int fw)
{
	fs::copy(fixture, dir.path(), fs::copy_options::recursive);
	const fs::path props = dir.path() / node / "properties";
	std::ifstream in(props);
	std::stringstream text;
	text << in.rdbuf();
	in.close();
	const std::string changed = std::regex_replace(text.str(), std::regex("(^|\n)fw_version [0-9]+"),
						       "$1fw_version " + std::to_string(fw));
	std::ofstream(props) << changed;
}

TEST(AmdgpuTopologyTool, OneOfEightGpusWithOlderFirmwareIsNamedWithItsValues)
{
	ASSERT_TRUE(fs::exists(tool())) << tool();
	const test::TempDir node;
	lower_firmware(node, kFixtures / "mi300x-8gpu-spx", "5", 100);
	const std::string args =
		"--sysfs " + node.path().string() + " --from " + (kFixtures / "mi300x-8gpu-spx").string();

	const ToolRun refused = run_tool(args);
	EXPECT_EQ(refused.exit_status, 1) << refused.output;
	EXPECT_NE(refused.output.find("fit only the 7 local GPUs"), std::string::npos) << refused.output;
	EXPECT_NE(refused.output.find("left out: node 5 gpu 0xebfc has fw_version 100 < 166 (KFD_FW_VER_CHECK=0 "
				      "disables this check)"),
		  std::string::npos)
		<< refused.output;

	const ToolRun lenient = run_tool(args, "KFD_FW_VER_CHECK=0");
	EXPECT_EQ(lenient.exit_status, 0) << lenient.output;
}

// A checkpoint checked offline: the images a (fake) dump wrote are intact; one bit flipped in a
// pages image is named by image, GPU and BO; images without sums cannot be checked.
TEST(AmdgpuTopologyTool, VerifyChecksTheImagesAgainstTheirSumsAndNamesTheDamagedBlock)
{
	test::TempDir images;
	const fs::path topology_dir = test::topology_fixture("mi210-2gpu-pcie");
	const Topology topology = parse_topology(topology_dir);
	{
		test::FakeGpu gpu(topology);
		gpu.pid = static_cast<uint32_t>(getpid());
		Options options;
		DumpSession dump(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		const int task_fd = eventfd(0, EFD_CLOEXEC);
		dump.dump_kfd(task_fd, 11);
		close(task_fd);
	}
	const ToolRun intact = run_tool("--verify " + images.path().string());
	EXPECT_EQ(intact.exit_status, 0) << intact.output;
	EXPECT_NE(intact.output.find("amdgpu-kfd-11.img: intact (the kfd image and 4 blocks, 0.2 MiB, of GPU memory in "
				     "2 pages images match their checksums)"),
		  std::string::npos)
		<< intact.output;

	const uint32_t gpu = topology.gpus().back()->gpu_id;
	const fs::path pages = images.path() / pages_image_name(11, gpu);
	{
		std::fstream f(pages, std::ios::in | std::ios::out | std::ios::binary);
		f.seekg(8 + 70000);
		const char c = static_cast<char>(f.get() ^ 0x01);
		f.seekp(8 + 70000);
		f.put(c);
	}
	const ToolRun damaged = run_tool("--verify " + images.path().string());
	EXPECT_EQ(damaged.exit_status, 3) << damaged.output;
	EXPECT_NE(damaged.output.find(
			  strprintf("amdgpu-kfd-11.img: DAMAGED: image %s is damaged: GPU 0x%04x, the BO at 0x",
				    pages.filename().c_str(), gpu)),
		  std::string::npos)
		<< damaged.output;

	fs::remove(images.path() / sums_image_name(11));
	const ToolRun unsummed = run_tool("--verify " + images.path().string());
	EXPECT_EQ(unsummed.exit_status, 3) << unsummed.output;
	EXPECT_NE(unsummed.output.find("no amdgpu-sums-11.img"), std::string::npos) << unsummed.output;
}

// A render-node file's image and the memory of its GEM objects, checked the same way.
TEST(AmdgpuTopologyTool, VerifyChecksARenderNodeFilesObjects)
{
	test::TempDir images;
	const fs::path topology_dir = test::topology_fixture("mi210-2gpu-pcie");
	const Topology topology = parse_topology(topology_dir);
	const Node *first = topology.gpus().front();
	{
		test::FakeGpu gpu(topology);
		gpu.gem_objects = { { 1, 0, 1 << 20, 4, 0, 1 }, { 3, 0, 2 << 20, 2, 0, 1 } };
		Options options;
		DumpSession dump(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		const int render_fd = eventfd(0, EFD_CLOEXEC);
		dump.dump_render_node(render_fd, 12, first->props.drm_render_minor);
		close(render_fd);
	}
	const ToolRun intact = run_tool("--verify " + images.path().string());
	EXPECT_EQ(intact.exit_status, 0) << intact.output;
	EXPECT_NE(intact.output.find("amdgpu-renderD-12.img: intact (the render-node image and 3 blocks, 3.0 MiB, of "
				     "GPU memory in 1 pages images match their checksums)"),
		  std::string::npos)
		<< intact.output;

	const fs::path pages = images.path() / pages_image_name(12, first->gpu_id);
	{
		std::fstream f(pages, std::ios::in | std::ios::out | std::ios::binary);
		f.seekg(8 + (1 << 20) + 5);
		const char c = static_cast<char>(f.get() ^ 0x01);
		f.seekp(8 + (1 << 20) + 5);
		f.put(c);
	}
	const ToolRun damaged = run_tool("--verify " + images.path().string());
	EXPECT_EQ(damaged.exit_status, 3) << damaged.output;
	EXPECT_NE(damaged.output.find(strprintf("amdgpu-renderD-12.img: DAMAGED: image %s is damaged: GPU 0x%04x",
						pages.filename().c_str(), first->gpu_id)),
		  std::string::npos)
		<< damaged.output;
}

} // namespace
} // namespace amdgpu
