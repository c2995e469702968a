// SPDX-License-Identifier: GPL-2.0-only
//
// The plugin as criu 3.17 loads and calls it (support/loaded_plugin.hpp).
#include "support/loaded_plugin.hpp"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>

namespace amdgpu {
namespace {

// This binary plays criu 3.17: it is built on bookworm's criu-plugin.h and exports nothing newer.
using PluginLoad = test::LoadedPlugin;

TEST_F(PluginLoad, DescriptorNamesThePluginAndItsFiveHooks)
{
	EXPECT_STREQ(desc_->name, "amdgpu_plugin");
	EXPECT_EQ(desc_->version, static_cast<unsigned int>(CRIU_PLUGIN_VERSION));
	EXPECT_EQ(desc_->max_hooks, static_cast<unsigned int>(CR_PLUGIN_HOOK__MAX));
	EXPECT_NE(desc_->init, nullptr);
	EXPECT_NE(desc_->exit, nullptr);
	for (int id :
	     { CR_PLUGIN_HOOK__DUMP_EXT_FILE, CR_PLUGIN_HOOK__RESTORE_EXT_FILE, CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA,
	       CR_PLUGIN_HOOK__UPDATE_VMA_MAP, CR_PLUGIN_HOOK__RESUME_DEVICES_LATE })
		EXPECT_NE(desc_->hooks[id], nullptr) << "hook " << id;
	for (int id : { CR_PLUGIN_HOOK__DUMP_UNIX_SK, CR_PLUGIN_HOOK__RESTORE_UNIX_SK, CR_PLUGIN_HOOK__DUMP_EXT_MOUNT,
			CR_PLUGIN_HOOK__RESTORE_EXT_MOUNT, CR_PLUGIN_HOOK__DUMP_EXT_LINK })
		EXPECT_EQ(desc_->hooks[id], nullptr) << "hook " << id;
}

TEST_F(PluginLoad, RestoreLeavesMemoryAloneWhereCriuPassesNoRetryFlag)
{
	// This host is a criu 3.17 (no newer hook names, no 4.3 exports): RESTORE_EXT_FILE is called as
	// (int id). Whatever sits in the second argument register is not a flag and must not be written.
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__RESTORE), 0);
	EXPECT_TRUE(logged(3, "criu hook ABI: 3.17/3.18 (10 hooks, RESTORE_EXT_FILE(id)"));
	using RestoreWithFlag = int(int, unsigned char *);
	auto *restore = hook<RestoreWithFlag>(CR_PLUGIN_HOOK__RESTORE_EXT_FILE);
	unsigned char not_a_flag = 0xa5;
	EXPECT_EQ(restore(3, &not_a_flag), -ENOTSUP);
	EXPECT_EQ(not_a_flag, 0xa5);
	desc_->exit(CR_PLUGIN_STAGE__RESTORE, 0);
}

TEST_F(PluginLoad, OnlyTheDescriptorIsExported)
{
	// Internal symbols must not clash with criu or another plugin loaded into the same process.
	EXPECT_EQ(dlsym(handle_, "_ZN6amdgpu4failEiPKcz"), nullptr);
}

TEST_F(PluginLoad, InitLogsEveryParameter)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__DUMP), 0);
	EXPECT_TRUE(logged(3, "param: KFD_FW_VER_CHECK:Y"));
	EXPECT_TRUE(logged(3, "param: KFD_MAX_BUFFER_SIZE:0x"));
	desc_->exit(CR_PLUGIN_STAGE__DUMP, 0);
}

TEST_F(PluginLoad, NonGpuFilesAreLeftToOthers)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__DUMP), 0);
	auto *dump = hook<CR_PLUGIN_HOOK__DUMP_EXT_FILE_t>(CR_PLUGIN_HOOK__DUMP_EXT_FILE);

	int pipefd[2];
	ASSERT_EQ(pipe(pipefd), 0);
	EXPECT_EQ(dump(pipefd[0], 1), -ENOTSUP);
	close(pipefd[0]);
	close(pipefd[1]);

	const int null_fd = open("/dev/null", O_RDONLY);
	ASSERT_GE(null_fd, 0);
	EXPECT_EQ(dump(null_fd, 2), -ENOTSUP);
	close(null_fd);

	auto *vma = hook<CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA_t>(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA);
	struct stat st = {};
	st.st_mode = S_IFCHR | 0666;
	st.st_rdev = makedev(1, 3); // /dev/null
	EXPECT_EQ(vma(-1, &st), -ENOTSUP);
	st.st_rdev = makedev(226, 0); // a DRM primary node is not ours
	EXPECT_EQ(vma(-1, &st), -ENOTSUP);

	auto *update = hook<CR_PLUGIN_HOOK__UPDATE_VMA_MAP_t>(CR_PLUGIN_HOOK__UPDATE_VMA_MAP);
	uint64_t new_pgoff = 0;
	int plugin_fd = -1;
	EXPECT_EQ(update("/usr/lib/libc.so.6", 0x1000, 0, &new_pgoff, &plugin_fd), -ENOTSUP);

	auto *restore = hook<CR_PLUGIN_HOOK__RESTORE_EXT_FILE_t>(CR_PLUGIN_HOOK__RESTORE_EXT_FILE);
	EXPECT_EQ(restore(3), -ENOTSUP);

	auto *resume = hook<CR_PLUGIN_HOOK__RESUME_DEVICES_LATE_t>(CR_PLUGIN_HOOK__RESUME_DEVICES_LATE);
	EXPECT_EQ(resume(getpid()), -ENOTSUP);
	desc_->exit(CR_PLUGIN_STAGE__DUMP, 0);
}

TEST_F(PluginLoad, RenderNodeMappingsAreClaimed)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__DUMP), 0);
	auto *vma = hook<CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA_t>(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA);
	struct stat st = {};
	st.st_mode = S_IFCHR | 0666;
	st.st_rdev = makedev(226, 128);
	EXPECT_EQ(vma(-1, &st), 0);
	st.st_rdev = makedev(226, 255);
	EXPECT_EQ(vma(-1, &st), 0);
	desc_->exit(CR_PLUGIN_STAGE__DUMP, 0);
}

TEST_F(PluginLoad, CorruptGpuImageFailsRestoreNamingTheImage)
{
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__RESTORE), 0);
	images_.write("amdgpu-kfd-7.img", std::string(8, '\0'));
	auto *restore = hook<CR_PLUGIN_HOOK__RESTORE_EXT_FILE_t>(CR_PLUGIN_HOOK__RESTORE_EXT_FILE);
	const int ret = restore(7);
	EXPECT_EQ(ret, -EINVAL) << "a GPU image must not be passed on as 'not mine'";
	EXPECT_TRUE(logged(1, "amdgpu-kfd-7.img lacks required fields"));
	desc_->exit(CR_PLUGIN_STAGE__RESTORE, ret);
}

TEST_F(PluginLoad, InvalidEnvironmentFailsGpuWorkOnlyAndNamesTheVariable)
{
	setenv("KFD_FW_VER_CHECK", "perhaps", 1);
	ASSERT_EQ(desc_->init(CR_PLUGIN_STAGE__RESTORE), 0) << "non-GPU runs must not be broken by a GPU setting";
	unsetenv("KFD_FW_VER_CHECK");
	EXPECT_TRUE(logged(1, "KFD_FW_VER_CHECK='perhaps'"));
	images_.write("amdgpu-kfd-8.img", std::string(8, '\0'));
	auto *restore = hook<CR_PLUGIN_HOOK__RESTORE_EXT_FILE_t>(CR_PLUGIN_HOOK__RESTORE_EXT_FILE);
	log_.clear();
	EXPECT_EQ(restore(8), -EINVAL);
	EXPECT_TRUE(logged(1, "invalid settings: KFD_FW_VER_CHECK='perhaps'"));
	desc_->exit(CR_PLUGIN_STAGE__RESTORE, -1);
}

} // namespace
} // namespace amdgpu
