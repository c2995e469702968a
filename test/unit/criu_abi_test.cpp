// SPDX-License-Identifier: GPL-2.0-only
//
// Which hook ABI the plugin picks for each criu it may be loaded into (criu_abi.hpp). No whole
// "cr_plugin_*" entry name may appear as a literal here: this binary loads the plugin, and the
// plugin looks for those names in the executable that loads it.
#include "criu/criu_abi.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

namespace amdgpu {
namespace {

std::string entry_name(const char *hook)
{
	std::string name = "cr_plugin";
	name += '_';
	return name + hook;
}

// The strings a criu binary carries for the descriptor-less plugin lookup, NUL-separated.
std::string criu_strings(std::initializer_list<const char *> hooks)
{
	std::string s(1, '\0');
	for (const char *h : hooks)
		s += entry_name(h) + '\0';
	return s;
}

struct Release {
	const char *criu;
	CriuTraits traits;
	unsigned int max_hooks; // CR_PLUGIN_HOOK__MAX in that release's criu-plugin.h
	bool retry_flag;
	bool closes_vma_fd;
};

TEST(CriuAbi, EachCriuReleaseGetsExactlyItsOwnHookTable)
{
	const Release releases[] = {
		{ "3.17.1", { 10, false, false }, 10, false, false },
		{ "3.19", { 10, false, true }, 10, false, true },
		{ "4.1.1", { 12, false, true }, 12, false, true },
		{ "4.2.1", { 13, false, true }, 13, false, true },
		{ "criu-dev (Nov 2025)", { 15, false, true }, 15, true, true },
		{ "4.3", { 17, true, true }, 17, true, true },
		{ "4.3, names not found", { 0, true, true }, 17, true, true },
	};
	for (const Release &r : releases) {
		const CriuAbi abi = decide_criu_abi(r.traits);
		// criu refuses a descriptor whose max_hooks exceeds its own table: equal is the most
		// a plugin may claim, and claiming less would hide hooks this criu has.
		EXPECT_EQ(abi.hooks, r.max_hooks) << r.criu;
		EXPECT_EQ(abi.restore_file_retry_flag, r.retry_flag) << r.criu;
		EXPECT_EQ(abi.closes_vma_fd, r.closes_vma_fd) << r.criu;
	}
}

TEST(CriuAbi, AnExecutableWithoutCriuNamesGetsTheOldestTable)
{
	const CriuAbi abi = decide_criu_abi(CriuTraits {});
	EXPECT_EQ(abi.hooks, 10u);
	EXPECT_FALSE(abi.restore_file_retry_flag) << "writing a flag criu never passed corrupts memory";
	EXPECT_FALSE(abi.closes_vma_fd);
	EXPECT_EQ(abi.era, "3.17/3.18");
}

TEST(CriuAbi, HookNamesCountOnlyAsWholeStrings)
{
	EXPECT_EQ(named_hooks_in(criu_strings({ "dump_file", "resume_devices_late" })), 10u);
	EXPECT_EQ(named_hooks_in(criu_strings({ "resume_devices_late", "post_forking", "pause_devices" })), 13u);
	EXPECT_EQ(named_hooks_in(criu_strings({ "dump_finish" })), 17u);
	EXPECT_EQ(named_hooks_in(std::string("x") + entry_name("dump_finish") + '\0'), 0u) << "tail of another string";
	EXPECT_EQ(named_hooks_in(criu_strings({ "dump_finish_t" })), 0u) << "a longer name";
	EXPECT_EQ(named_hooks_in(std::string(1, '\0') + entry_name("dump_finish")), 0u) << "no terminating NUL";
	EXPECT_EQ(named_hooks_in(criu_strings({ "ctl", "init", "fini" })), 0u) << "criu's own cr_plugin_* symbols";
	EXPECT_EQ(named_hooks_in(""), 0u);
}

TEST(CriuAbi, EntryNamesMapToCriuHookNumbers)
{
	EXPECT_EQ(hook_of_entry_name(entry_name("dump_file")), 2);
	EXPECT_EQ(hook_of_entry_name(entry_name("restore_file")), 3);
	EXPECT_EQ(hook_of_entry_name(entry_name("resume_devices_late")), 9);
	EXPECT_EQ(hook_of_entry_name(entry_name("post_forking")), 12);
	EXPECT_EQ(hook_of_entry_name(entry_name("restore_init")), 13);
	EXPECT_EQ(hook_of_entry_name(entry_name("dump_finish")), 16);
	EXPECT_EQ(hook_of_entry_name("dump_devices_late"), 14);
	EXPECT_EQ(hook_of_entry_name(entry_name("nothing")), -1);
}

// The real criu binaries: bookworm's package, the trixie guest's root (trixie's 4.1.1 and
// experimental's 4.3) and 4.2.1 from test/criu/build.sh, when present.
TEST(CriuAbi, EveryCriuBinaryOnThisMachineIsRecognised)
{
	const struct {
		const char *path;
		unsigned int hooks;
	} binaries[] = {
		{ "/usr/sbin/criu", 10 },
		{ "build/vm/trixie/root/usr/sbin/criu", 12 },
		{ "build/criu/4.2.1/criu", 13 },
		// 4.3 names 16 of its 17 slots (the last, DUMP_FINISH, has no caller yet); its
		// criu_plugin_get_options export is what gives the plugin 4.3's 17-slot table
		{ "build/vm/trixie/root/opt/criu-4.3/pkg/usr/sbin/criu", 16 },
	};
	int seen = 0;
	for (const auto &b : binaries) {
		std::ifstream in(b.path, std::ios::binary);
		if (!in)
			continue;
		std::ostringstream bytes;
		bytes << in.rdbuf();
		EXPECT_EQ(named_hooks_in(bytes.str()), b.hooks) << b.path;
		seen++;
	}
	if (!seen)
		GTEST_SKIP() << "no criu binary on this machine";
}

} // namespace
} // namespace amdgpu
