// SPDX-License-Identifier: GPL-2.0-only
//
// The plugin as criu 4.3 loads and calls it. This binary is compiled against criu 4.3's own
// criu-plugin.h (Debian experimental's libcriu-dev, unpacked by test/criu/build.sh --header-4.3)
// and exports criu_plugin_get_options() as criu 4.3 does, so every hook is called through 4.3's
// typedefs: RESTORE_EXT_FILE gets a flag that criu leaves uninitialised.
#include "support/loaded_plugin.hpp"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

static_assert(CR_PLUGIN_HOOK__MAX == 17, "compiled against criu 4.3's criu-plugin.h");

// What this criu was given as --plugin-option words (argv[0] first, as criu 4.3 hands them over).
static std::vector<std::string> plugin_option_words = { "criu" };

extern "C" __attribute__((visibility("default"))) int criu_plugin_get_options(int *argc, char ***argv)
{
	static std::vector<char *> args;
	args.clear();
	for (std::string &w : plugin_option_words)
		args.push_back(w.data());
	args.push_back(nullptr);
	*argc = static_cast<int>(plugin_option_words.size());
	*argv = args.data();
	return 0;
}

// criu's inventory list of the plugins a restore needs (criu 4.1+), as this criu was asked.
static std::vector<std::string> inventory_added, inventory_taken_off;

extern "C" __attribute__((visibility("default"))) int add_inventory_plugin(const char *name)
{
	inventory_added.emplace_back(name);
	return 0;
}

extern "C" __attribute__((visibility("default"))) bool check_and_remove_inventory_plugin(const char *name, size_t n)
{
	inventory_taken_off.emplace_back(name, n);
	return true;
}

namespace amdgpu {
namespace {

class Criu43 : public test::LoadedPlugin {
protected:
	void SetUp() override
	{
		inventory_added.clear();
		inventory_taken_off.clear();
		LoadedPlugin::SetUp();
	}
};

// What criu 4.3's open_fd() hands over: a bool it never initialised, here filled with garbage.
struct GarbageFlag {
	GarbageFlag() { std::memset(&flag, 0xa5, sizeof(flag)); }
	unsigned char byte() const
	{
		unsigned char b;
		std::memcpy(&b, &flag, 1);
		return b;
	}
	bool flag;
};

TEST_F(Criu43, DescriptorIsOneCriu43Accepts)
{
	EXPECT_STREQ(desc_->name, "amdgpu_plugin");
	EXPECT_LE(desc_->version, static_cast<unsigned int>(CRIU_PLUGIN_VERSION));
	EXPECT_EQ(desc_->max_hooks, static_cast<unsigned int>(CR_PLUGIN_HOOK__MAX));
	for (int id : { CR_PLUGIN_HOOK__DUMP_EXT_FILE, CR_PLUGIN_HOOK__RESTORE_EXT_FILE,
			CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA, CR_PLUGIN_HOOK__UPDATE_VMA_MAP,
			CR_PLUGIN_HOOK__RESUME_DEVICES_LATE, CR_PLUGIN_HOOK__CHECKPOINT_DEVICES,
			CR_PLUGIN_HOOK__DUMP_DEVICES_LATE })
		EXPECT_NE(desc_->hooks[id], nullptr) << "hook " << id;
	// Hooks the plugin has nothing to do in stay empty: criu skips them.
	for (int id : { CR_PLUGIN_HOOK__PAUSE_DEVICES, CR_PLUGIN_HOOK__RESTORE_INIT, CR_PLUGIN_HOOK__UPDATE_INETSK })
		EXPECT_EQ(desc_->hooks[id], nullptr) << "hook " << id;
}

TEST_F(Criu43, CheckpointDevicesPassesOnATaskWithoutGpuState)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__DUMP), 0);
	using CheckpointDevices = int (*)(int);
	const auto hook = reinterpret_cast<CheckpointDevices>(desc_->hooks[CR_PLUGIN_HOOK__CHECKPOINT_DEVICES]);
	EXPECT_EQ(hook(getpid()), -ENOTSUP) << "a task with no /dev/kfd file is not the plugin's";
	desc_->exit(CR_PLUGIN_STAGE__DUMP, 0);
}

// criu 4.3 calls it once per dump, after every task's memory, GPU work or not.
TEST_F(Criu43, DumpDevicesLatePassesOnADumpWithoutGpuState)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__DUMP), 0);
	using DumpDevicesLate = int (*)(int);
	const auto hook = reinterpret_cast<DumpDevicesLate>(desc_->hooks[CR_PLUGIN_HOOK__DUMP_DEVICES_LATE]);
	EXPECT_EQ(hook(getpid()), -ENOTSUP) << "a dump without GPU state is not the plugin's";
	desc_->exit(CR_PLUGIN_STAGE__DUMP, 0);
}

TEST_F(Criu43, InitNamesTheHookAbiItDetected)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__RESTORE), 0);
	EXPECT_TRUE(logged(3, "criu hook ABI: 4.3 (17 hooks, RESTORE_EXT_FILE with retry flag"));
	desc_->exit(CR_PLUGIN_STAGE__RESTORE, 0);
}

TEST_F(Criu43, PluginOptionsReachThePluginAndWinOverTheEnvironment)
{
	setenv("KFD_FW_VER_CHECK", "1", 1);
	plugin_option_words = { "criu", "--amdgpu.KFD_FW_VER_CHECK=0", "--amdgpu.KFD_MAX_BUFFER_SIZE=8M" };
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__RESTORE), 0);
	unsetenv("KFD_FW_VER_CHECK");
	plugin_option_words = { "criu" };
	EXPECT_TRUE(logged(3, "param: KFD_FW_VER_CHECK:N"));
	EXPECT_TRUE(logged(3, "param: KFD_MAX_BUFFER_SIZE:0x800000"));
	EXPECT_TRUE(logged(3, "param: KFD_FW_VER_CHECK set by plugin option amdgpu.KFD_FW_VER_CHECK"));
	desc_->exit(CR_PLUGIN_STAGE__RESTORE, 0);
}

TEST_F(Criu43, AnInvalidPluginOptionFailsGpuWorkAndNamesTheOption)
{
	plugin_option_words = { "criu", "--amdgpu.KFD_NUMA_CHECK=sometimes" };
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__RESTORE), 0) << "non-GPU runs must not be broken by a GPU setting";
	plugin_option_words = { "criu" };
	EXPECT_TRUE(logged(1, "plugin option amdgpu.KFD_NUMA_CHECK='sometimes' is not a boolean"));
	images_.write("amdgpu-kfd-9.img", std::string(8, '\0'));
	GarbageFlag flag;
	log_.clear();
	EXPECT_EQ(hook<CR_PLUGIN_HOOK__RESTORE_EXT_FILE_t>(CR_PLUGIN_HOOK__RESTORE_EXT_FILE)(9, &flag.flag), -EINVAL);
	EXPECT_EQ(flag.byte(), 0);
	EXPECT_TRUE(logged(1, "invalid settings: plugin option amdgpu.KFD_NUMA_CHECK='sometimes'"));
	desc_->exit(CR_PLUGIN_STAGE__RESTORE, -1);
}

TEST_F(Criu43, ADumpOfGpuMappingsNamesThePluginInTheInventoryOnce)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__DUMP), 0);
	auto *vma = hook<CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA_t>(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA);
	struct stat st = {};
	st.st_mode = S_IFCHR | 0666;
	st.st_rdev = makedev(1, 3);
	EXPECT_EQ(vma(-1, &st), -ENOTSUP);
	EXPECT_TRUE(inventory_added.empty()) << "a dump without GPU state needs no plugin to restore";
	st.st_rdev = makedev(226, 128);
	EXPECT_EQ(vma(-1, &st), 0);
	EXPECT_EQ(vma(-1, &st), 0);
	EXPECT_EQ(inventory_added, std::vector<std::string> { "amdgpu_plugin" });
	desc_->exit(CR_PLUGIN_STAGE__DUMP, 0);
}

TEST_F(Criu43, RestoreTakesThePluginOffTheInventoryAtInit)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__RESTORE), 0);
	EXPECT_EQ(inventory_taken_off, std::vector<std::string> { "amdgpu_plugin" })
		<< "criu refuses a restore whose listed plugins were not all taken off";
	desc_->exit(CR_PLUGIN_STAGE__RESTORE, 0);
	inventory_taken_off.clear();
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__DUMP), 0);
	EXPECT_TRUE(inventory_taken_off.empty());
	desc_->exit(CR_PLUGIN_STAGE__DUMP, 0);
}

TEST_F(Criu43, RestoreClearsTheUninitialisedRetryFlagOnEveryPath)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__RESTORE), 0);
	auto *restore = hook<CR_PLUGIN_HOOK__RESTORE_EXT_FILE_t>(CR_PLUGIN_HOOK__RESTORE_EXT_FILE);

	GarbageFlag not_ours;
	EXPECT_EQ(restore(3, &not_ours.flag), -ENOTSUP);
	EXPECT_EQ(not_ours.byte(), 0) << "criu would discard the next plugin's answer and call again";

	images_.write("amdgpu-kfd-7.img", std::string(8, '\0'));
	GarbageFlag corrupt;
	EXPECT_EQ(restore(7, &corrupt.flag), -EINVAL);
	EXPECT_EQ(corrupt.byte(), 0);
	EXPECT_TRUE(logged(1, "amdgpu-kfd-7.img lacks required fields"));
	desc_->exit(CR_PLUGIN_STAGE__RESTORE, -1);
}

TEST_F(Criu43, EveryHookAnswersWhenCalledThe43Way)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__DUMP), 0);
	int pipefd[2];
	ASSERT_EQ(pipe(pipefd), 0);
	EXPECT_EQ(hook<CR_PLUGIN_HOOK__DUMP_EXT_FILE_t>(CR_PLUGIN_HOOK__DUMP_EXT_FILE)(pipefd[0], 1), -ENOTSUP);
	close(pipefd[0]);
	close(pipefd[1]);

	struct stat st = {};
	st.st_mode = S_IFCHR | 0666;
	st.st_rdev = makedev(226, 128);
	EXPECT_EQ(hook<CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA_t>(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA)(-1, &st), 0);
	st.st_rdev = makedev(1, 3);
	EXPECT_EQ(hook<CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA_t>(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA)(-1, &st), -ENOTSUP);

	uint64_t new_pgoff = 0;
	int plugin_fd = -1;
	EXPECT_EQ(hook<CR_PLUGIN_HOOK__UPDATE_VMA_MAP_t>(CR_PLUGIN_HOOK__UPDATE_VMA_MAP)("/usr/lib/libc.so.6", 0x1000,
											 0, &new_pgoff, &plugin_fd),
		  -ENOTSUP);
	EXPECT_EQ(hook<CR_PLUGIN_HOOK__RESUME_DEVICES_LATE_t>(CR_PLUGIN_HOOK__RESUME_DEVICES_LATE)(getpid()), -ENOTSUP);
	desc_->exit(CR_PLUGIN_STAGE__DUMP, 0);
}

} // namespace
} // namespace amdgpu
