// SPDX-License-Identifier: GPL-2.0-only
#include "sessions/options.hpp"

#include "support/error.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

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

// The restore's checks, in the order of their variables: KFD_FW_VER_CHECK, KFD_SDMA_FW_VER_CHECK,
// KFD_CACHES_COUNT_CHECK, KFD_NUM_GWS_CHECK, KFD_VRAM_SIZE_CHECK, KFD_NUMA_CHECK,
// KFD_CAPABILITY_CHECK.
std::vector<bool> checks(const Options &o)
{
	return { o.match.fw_version, o.match.sdma_fw_version, o.match.caches_count, o.match.num_gws, o.match.vram_size,
		 o.match.numa,	     o.match.capability };
}

TEST_F(OptionsTest, EveryCheckDefaultsOnAndBufferIsBounded)
{
	const Options o = load();
	EXPECT_EQ(checks(o), std::vector<bool>(7, true));
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
	EXPECT_EQ(checks(o), (std::vector<bool> { false, false, false, false, false, true, true }));
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
	ASSERT_EQ(lines.size(), 9u);
	EXPECT_EQ(lines[0], "param: KFD_FW_VER_CHECK:N");
	EXPECT_EQ(lines[1], "param: KFD_SDMA_FW_VER_CHECK:Y");
	EXPECT_EQ(lines[7], "param: KFD_MAX_BUFFER_SIZE:0x200000");
	EXPECT_EQ(lines[8], "param: KFD_OVERLAP_COPY:Y");
}

TEST_F(OptionsTest, OverlapCopyIsABooleanOnByDefault)
{
	EXPECT_TRUE(load().overlap_copy);
	fake_env = { { "KFD_OVERLAP_COPY", "no" } };
	EXPECT_FALSE(load().overlap_copy);
	fake_env = { { "KFD_OVERLAP_COPY", "later" } };
	const Options o = load();
	ASSERT_EQ(o.errors.size(), 1u);
	EXPECT_NE(o.errors[0].find("KFD_OVERLAP_COPY='later' is not a boolean"), std::string::npos);
}

} // namespace
} // namespace amdgpu

namespace amdgpu {
namespace {

// criu 4.3's --plugin-option=amdgpu.NAME[=VALUE], as criu_plugin_get_options() hands them over.
class PluginOptionsTest : public OptionsTest {
protected:
	Options load(std::vector<std::string> args) { return options_from(fake_lookup, args); }
};

TEST_F(PluginOptionsTest, EverySettingIsAcceptedAsAPluginOption)
{
	const Options o = load({ "--amdgpu.KFD_FW_VER_CHECK=0", "--amdgpu.KFD_SDMA_FW_VER_CHECK=no",
				 "--amdgpu.KFD_CACHES_COUNT_CHECK=0", "--amdgpu.KFD_NUM_GWS_CHECK=0",
				 "--amdgpu.KFD_VRAM_SIZE_CHECK=0", "--amdgpu.KFD_NUMA_CHECK=NO",
				 "--amdgpu.KFD_CAPABILITY_CHECK=0", "--amdgpu.KFD_MAX_BUFFER_SIZE=8M" });
	EXPECT_TRUE(o.errors.empty()) << o.errors.front();
	EXPECT_FALSE(o.match.fw_version);
	EXPECT_FALSE(o.match.sdma_fw_version);
	EXPECT_FALSE(o.match.caches_count);
	EXPECT_FALSE(o.match.num_gws);
	EXPECT_FALSE(o.match.vram_size);
	EXPECT_FALSE(o.match.numa);
	EXPECT_FALSE(o.match.capability);
	EXPECT_EQ(o.max_buffer_size, 8ull << 20);
}

TEST_F(PluginOptionsTest, APluginOptionWinsOverTheEnvironmentAndSaysSo)
{
	fake_env["KFD_FW_VER_CHECK"] = "1";
	fake_env["KFD_MAX_BUFFER_SIZE"] = "16M";
	const Options o = load({ "--amdgpu.KFD_FW_VER_CHECK=0" });
	EXPECT_FALSE(o.match.fw_version);
	EXPECT_EQ(o.max_buffer_size, 16ull << 20) << "the environment still counts where no option is given";
	const std::vector<std::string> lines = describe(o);
	EXPECT_EQ(lines[0], "param: KFD_FW_VER_CHECK:N");
	EXPECT_EQ(lines.back(), "param: KFD_FW_VER_CHECK set by plugin option amdgpu.KFD_FW_VER_CHECK");
}

TEST_F(PluginOptionsTest, ABareNameSetsABooleanAndNamesAreCaseInsensitive)
{
	fake_env["KFD_NUMA_CHECK"] = "0";
	const Options o = load({ "--amdgpu.kfd_numa_check", "--AMDGPU.KFD_VRAM_SIZE_CHECK=no" });
	EXPECT_TRUE(o.errors.empty());
	EXPECT_TRUE(o.match.numa);
	EXPECT_FALSE(o.match.vram_size);
}

TEST_F(PluginOptionsTest, InvalidValuesAreNamedByTheOptionLikeVariablesAre)
{
	const Options o = load({ "--amdgpu.KFD_FW_VER_CHECK=maybe", "--amdgpu.KFD_MAX_BUFFER_SIZE=lots" });
	ASSERT_EQ(o.errors.size(), 2u);
	EXPECT_EQ(o.errors[0], "plugin option amdgpu.KFD_FW_VER_CHECK='maybe' is not a boolean (use 0, 1, no or yes)");
	EXPECT_EQ(o.errors[1], "plugin option amdgpu.KFD_MAX_BUFFER_SIZE='lots' is not a size (a number with an "
			       "optional k, K, M or G suffix)");
	EXPECT_TRUE(o.match.fw_version) << "an invalid value keeps the default";
	try {
		o.require_valid();
		FAIL() << "invalid plugin options accepted";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EINVAL);
		EXPECT_NE(std::string(e.what()).find("plugin option amdgpu.KFD_FW_VER_CHECK='maybe'"),
			  std::string::npos);
	}
}

TEST_F(PluginOptionsTest, UnknownAmdgpuOptionsAreErrorsOthersPluginsOptionsAreNot)
{
	const Options o = load({ "--amdgpu.KFD_FW_VER_CHEK=0", "--cuda.LOCK_TIMEOUT=5", "--amdgpu.KFD_MAX_BUFFER_SIZE",
				 "not-an-option" });
	ASSERT_EQ(o.errors.size(), 2u);
	EXPECT_EQ(o.errors[0], "unknown plugin option amdgpu.KFD_FW_VER_CHEK=0 (the options are the KFD_* settings)");
	EXPECT_EQ(o.errors[1], "plugin option amdgpu.KFD_MAX_BUFFER_SIZE needs a value");
}

} // namespace
} // namespace amdgpu
