// SPDX-License-Identifier: GPL-2.0-only
//
// amdgpu-topology as a user runs it before a migration: the tool built next to this test binary
// (build/bin/), on the checked-in sysfs trees.
#include "support/temp_dir.hpp"

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

} // namespace
} // namespace amdgpu
