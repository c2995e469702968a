// SPDX-License-Identifier: GPL-2.0-only
#include "options.hpp"

#include "error.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace amdgpu {
namespace {

// The environment a test runs the parser against.
std::map<std::string, std::string> fake_env;

const char *fake_lookup(const char *name)
{
	auto it = fake_env.find(name);
	return it == fake_env.end() ? nullptr : it->second.c_str();
}

class OptionsTest : public ::testing::Test {
protected:
	void SetUp() override { fake_env.clear(); }
	Options load() { return options_from_env(fake_lookup); }
};

TEST_F(OptionsTest, EveryCheckDefaultsOnAndBufferIsBounded)
{
	const Options o = load();
	EXPECT_TRUE(o.match.fw_version);
	EXPECT_TRUE(o.match.sdma_fw_version);
	EXPECT_TRUE(o.match.caches_count);
	EXPECT_TRUE(o.match.num_gws);
	EXPECT_TRUE(o.match.vram_size);
	EXPECT_TRUE(o.match.numa);
	EXPECT_TRUE(o.match.capability);
	EXPECT_EQ(o.max_buffer_size, kDefaultMaxBufferSize);
	EXPECT_TRUE(o.errors.empty());
}

TEST_F(OptionsTest, BooleansAcceptUpstreamSpellings)
{
	fake_env = { { "KFD_FW_VER_CHECK", "0" },	 { "KFD_SDMA_FW_VER_CHECK", "no" },
		     { "KFD_CACHES_COUNT_CHECK", "NO" }, { "KFD_NUM_GWS_CHECK", "No" },
		     { "KFD_VRAM_SIZE_CHECK", "0" },	 { "KFD_NUMA_CHECK", "1" },
		     { "KFD_CAPABILITY_CHECK", "YeS" } };
	const Options o = load();
	EXPECT_FALSE(o.match.fw_version);
	EXPECT_FALSE(o.match.sdma_fw_version);
	EXPECT_FALSE(o.match.caches_count);
	EXPECT_FALSE(o.match.num_gws);
	EXPECT_FALSE(o.match.vram_size);
	EXPECT_TRUE(o.match.numa);
	EXPECT_TRUE(o.match.capability);
	EXPECT_TRUE(o.errors.empty());
}

TEST_F(OptionsTest, InvalidBooleanIsReportedWithNameAndValueAndKeepsTheDefault)
{
	fake_env = { { "KFD_NUMA_CHECK", "off" } };
	const Options o = load();
	EXPECT_TRUE(o.match.numa);
	ASSERT_EQ(o.errors.size(), 1u);
	EXPECT_NE(o.errors[0].find("KFD_NUMA_CHECK='off'"), std::string::npos) << o.errors[0];
	try {
		o.require_valid();
		FAIL() << "invalid environment accepted";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EINVAL);
		EXPECT_NE(std::string(e.what()).find("KFD_NUMA_CHECK"), std::string::npos);
	}
}

TEST_F(OptionsTest, SizesTakeUpstreamSuffixesAndBases)
{
	uint64_t v = 0;
	EXPECT_TRUE(parse_env_size("4096", v));
	EXPECT_EQ(v, 4096u);
	EXPECT_TRUE(parse_env_size("8k", v));
	EXPECT_EQ(v, 8u << 10);
	EXPECT_TRUE(parse_env_size("8K", v));
	EXPECT_EQ(v, 8u << 10);
	EXPECT_TRUE(parse_env_size("16M", v));
	EXPECT_EQ(v, 16u << 20);
	EXPECT_TRUE(parse_env_size("2G", v));
	EXPECT_EQ(v, 2ull << 30);
	EXPECT_TRUE(parse_env_size("0x1000", v));
	EXPECT_EQ(v, 0x1000u);
	EXPECT_TRUE(parse_env_size("010", v)); // octal, as strtoul with base 0
	EXPECT_EQ(v, 8u);
}

TEST_F(OptionsTest, SizesRejectGarbageNegativesAndOverflow)
{
	uint64_t v = 0;
	EXPECT_FALSE(parse_env_size("", v));
	EXPECT_FALSE(parse_env_size("-1", v));
	EXPECT_FALSE(parse_env_size(" 1", v));
	EXPECT_FALSE(parse_env_size("1m", v)); // upstream knows k, K, M and G only
	EXPECT_FALSE(parse_env_size("1GB", v));
	EXPECT_FALSE(parse_env_size("lots", v));
	EXPECT_FALSE(parse_env_size("99999999999999999999", v));
	EXPECT_FALSE(parse_env_size("17179869184G", v)); // 2^34 GiB overflows 64 bits
}

TEST_F(OptionsTest, MaxBufferSizeIsRoundedToPagesAndZeroKeepsTheBound)
{
	fake_env = { { "KFD_MAX_BUFFER_SIZE", "1M" } };
	EXPECT_EQ(load().max_buffer_size, 1u << 20);
	fake_env = { { "KFD_MAX_BUFFER_SIZE", "10000" } };
	EXPECT_EQ(load().max_buffer_size, 8192u);
	fake_env = { { "KFD_MAX_BUFFER_SIZE", "0" } };
	EXPECT_EQ(load().max_buffer_size, kDefaultMaxBufferSize);
}

TEST_F(OptionsTest, MaxBufferSizeBelowOnePageIsAnError)
{
	fake_env = { { "KFD_MAX_BUFFER_SIZE", "100" } };
	const Options o = load();
	ASSERT_EQ(o.errors.size(), 1u);
	EXPECT_NE(o.errors[0].find("KFD_MAX_BUFFER_SIZE='100'"), std::string::npos);
}

TEST_F(OptionsTest, InitLogLinesMatchUpstreamFormat)
{
	fake_env = { { "KFD_FW_VER_CHECK", "0" }, { "KFD_MAX_BUFFER_SIZE", "2M" } };
	const auto lines = describe(load());
	ASSERT_EQ(lines.size(), 8u);
	EXPECT_EQ(lines[0], "param: KFD_FW_VER_CHECK:N");
	EXPECT_EQ(lines[1], "param: KFD_SDMA_FW_VER_CHECK:Y");
	EXPECT_EQ(lines[7], "param: KFD_MAX_BUFFER_SIZE:0x200000");
}

} // namespace
} // namespace amdgpu
