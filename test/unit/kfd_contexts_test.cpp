// SPDX-License-Identifier: GPL-2.0-only
#include "driver/kfd_contexts.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

namespace amdgpu {
namespace {

// A /sys/class/kfd/kfd/proc/<pid> as Linux 7.3 lays it out: the primary's attributes and queues/,
// and one context_<id> directory per secondary context.
class KfdContextsTest : public ::testing::Test {
protected:
	KfdContextsTest()
	{
		std::filesystem::create_directories(dir.path() / "queues");
		std::ofstream(dir.path() / "pasid") << "32770\n";
	}
	void add_context(const std::string &name) { std::filesystem::create_directories(dir.path() / name); }

	test::TempDir dir;
};

TEST_F(KfdContextsTest, APrimaryAloneHasNone)
{
	EXPECT_EQ(secondary_kfd_contexts(dir.path()), std::vector<uint32_t>());
}

TEST_F(KfdContextsTest, AKernelWithoutContextsHasNoProcessDirectory)
{
	EXPECT_EQ(secondary_kfd_contexts(dir.path() / "no-such-pid"), std::vector<uint32_t>());
}

TEST_F(KfdContextsTest, ListsEveryContextDirectoryInOrder)
{
	add_context("context_3");
	add_context("context_0");
	add_context("context_65534");
	EXPECT_EQ(secondary_kfd_contexts(dir.path()), (std::vector<uint32_t> { 0, 3, 65534 }));
	EXPECT_EQ(describe_kfd_contexts({ 0, 3 }), "context_0, context_3");
}

TEST_F(KfdContextsTest, IgnoresWhatIsNotAContextId)
{
	add_context("context_");
	add_context("context_x1");
	add_context("context_1x");
	add_context("context_65535"); // the primary's id, never a directory
	add_context("context_4294967296");
	std::ofstream(dir.path() / "context_7") << "a file, not a context\n";
	add_context("context_2");
	EXPECT_EQ(secondary_kfd_contexts(dir.path()), std::vector<uint32_t> { 2 });
}

} // namespace
} // namespace amdgpu
