// SPDX-License-Identifier: GPL-2.0-only
//
// Finding a GPU's render node by its device number in a directory where a container may hold it
// under another name. The directory is made of symlinks to /dev/null and /dev/zero (stat follows
// them), so the test needs no privilege to make device nodes.
#include "driver/device_files.hpp"

#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace amdgpu {
namespace {

class FindCharDevice : public ::testing::Test {
protected:
	void SetUp() override
	{
		struct stat st;
		ASSERT_EQ(stat("/dev/null", &st), 0);
		null_ = st.st_rdev;
		ASSERT_EQ(stat("/dev/zero", &st), 0);
		zero_ = st.st_rdev;
	}
	void link(const char *target, const char *name) { ASSERT_EQ(symlink(target, (dir_ + "/" + name).c_str()), 0); }

	const test::TempDir tmp_;
	const std::string dir_ = tmp_.str();
	dev_t null_ = 0, zero_ = 0;
};

TEST_F(FindCharDevice, TheNameSysfsGivesIsTakenWhenItIsThatDevice)
{
	link("/dev/null", "renderD128");
	link("/dev/null", "renderD129");
	EXPECT_EQ(find_char_device(dir_, "renderD129", null_), dir_ + "/renderD129");
}

TEST_F(FindCharDevice, ARenamedNodeIsFoundByItsDeviceNumber)
{
	link("/dev/zero", "renderD128");
	link("/dev/null", "renderD140");
	std::string named;
	EXPECT_EQ(find_char_device(dir_, "renderD129", null_, &named), dir_ + "/renderD140");
	EXPECT_EQ(named, "absent");
}

TEST_F(FindCharDevice, ANameThatIsAnotherDeviceIsNotTakenForIt)
{
	// the two GPUs' nodes with their names swapped: by name, each would open the other GPU
	link("/dev/zero", "renderD128");
	link("/dev/null", "renderD129");
	std::string named;
	EXPECT_EQ(find_char_device(dir_, "renderD128", null_, &named), dir_ + "/renderD129");
	EXPECT_EQ(named, "device " + std::to_string(major(zero_)) + ":" + std::to_string(minor(zero_)));
}

TEST_F(FindCharDevice, NoSuchDeviceIsAnEmptyAnswerSayingWhatTheNameIs)
{
	link("/dev/zero", "renderD128");
	ASSERT_EQ(mkdir((dir_ + "/by-path").c_str(), 0700), 0);
	std::string named;
	EXPECT_EQ(find_char_device(dir_, "renderD128", null_, &named), "");
	EXPECT_NE(named.find("device "), std::string::npos);
	EXPECT_EQ(find_char_device(dir_, "renderD129", null_, &named), "");
	EXPECT_EQ(named, "absent");
	EXPECT_EQ(find_char_device(dir_, "by-path", null_, &named), "");
	EXPECT_EQ(named, "not a character device");
	EXPECT_EQ(find_char_device(dir_ + "/none", "renderD128", null_, &named), "");
}

TEST_F(FindCharDevice, TheDevicesADirectoryHoldsAreListedForTheError)
{
	EXPECT_EQ(describe_char_devices(dir_), "no device");
	link("/dev/zero", "renderD129");
	link("/dev/null", "card0");
	ASSERT_EQ(mkdir((dir_ + "/by-path").c_str(), 0700), 0);
	const auto num = [](dev_t d) { return std::to_string(major(d)) + ":" + std::to_string(minor(d)); };
	EXPECT_EQ(describe_char_devices(dir_), "card0 (" + num(null_) + "), renderD129 (" + num(zero_) + ")");
	EXPECT_EQ(describe_char_devices(dir_ + "/none"), "no device");
}

// A mapping's path as criu gives it for a task chrooted into another userland: the device it
// names decides, whatever the name.
TEST_F(FindCharDevice, APathIsClassifiedByTheDeviceItNames)
{
	link("/dev/null", "renderD129");
	EXPECT_EQ(classify_path((dir_ + "/renderD129").c_str()), GpuFileKind::none) << "a render node by name only";
	EXPECT_EQ(classify_path("/dev/null"), GpuFileKind::none);
}

TEST_F(FindCharDevice, APathThatCannotBeLookedUpIsJudgedByItsName)
{
	const std::string absent = dir_ + "/absent";
	EXPECT_EQ(classify_path("/dev/dri/renderD4242"), GpuFileKind::render_node);
	EXPECT_EQ(classify_path((dir_ + "/root/dev/dri/renderD4242").c_str()), GpuFileKind::render_node)
		<< "a node gone from a chrooted task's /dev";
	EXPECT_EQ(classify_path((dir_ + "/root/dev/dri/renderD42x").c_str()), GpuFileKind::none);
	EXPECT_EQ(classify_path((dir_ + "/root/dev/dri/card1").c_str()), GpuFileKind::none);
	EXPECT_EQ(classify_path(absent.c_str()), GpuFileKind::none);
	struct stat st;
	if (stat("/dev/kfd", &st)) {
		EXPECT_EQ(classify_path("//dev/kfd"), GpuFileKind::kfd) << "criu doubles the leading slash";
	}
}

// Making a node needs CAP_MKNOD (the tests run as root in CI); without it these say so and skip.
TEST_F(FindCharDevice, AMadeNodeIsTheDeviceWithTheModeAndOwnerOfTheNodesBesideIt)
{
	const std::filesystem::path dir(dir_);
	if (mknod((dir / "renderD128").c_str(), S_IFCHR | 0640, null_))
		GTEST_SKIP() << "cannot make device nodes here: " << strerror(errno);
	ASSERT_EQ(chown((dir / "renderD128").c_str(), 0, 44), 0);
	std::string how;
	ASSERT_EQ(make_char_device(dir_, "renderD150", zero_, "renderD", &how), 0);
	struct stat st;
	ASSERT_EQ(stat((dir / "renderD150").c_str(), &st), 0);
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(st.st_rdev, zero_);
	EXPECT_EQ(st.st_mode & 07777, 0640u);
	EXPECT_EQ(st.st_gid, 44u);
	EXPECT_EQ(how, "mode 0640, owner 0:44, as renderD128");
}

TEST_F(FindCharDevice, ANodeThatExistsIsNotMadeAgain)
{
	const std::filesystem::path dir(dir_);
	if (mknod((dir / "renderD150").c_str(), S_IFCHR | 0600, null_))
		GTEST_SKIP() << "cannot make device nodes here: " << strerror(errno);
	EXPECT_EQ(make_char_device(dir_, "renderD150", zero_, "renderD", nullptr), -EEXIST);
	struct stat st;
	ASSERT_EQ(stat((dir / "renderD150").c_str(), &st), 0);
	EXPECT_EQ(st.st_rdev, null_);
}

// Where nothing restricts the test's devices, opening the probe reaches DRM's (or no) driver,
// which has no minor 127; in a container whose device rules refuse it, the probe says so. Either
// way the probe is an answer, and it leaves nothing in the directory.
TEST_F(FindCharDevice, TheDeviceRulesProbeAnswersAndLeavesNothingBehind)
{
	const std::filesystem::path dir(dir_);
	if (mknod((dir / "probe").c_str(), S_IFCHR | 0600, null_))
		GTEST_SKIP() << "cannot make device nodes here: " << strerror(errno);
	unlink((dir / "probe").c_str());
	const int rules = device_rules_restrict(dir_);
	EXPECT_TRUE(rules == 0 || rules == 1) << rules;
	EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST_F(FindCharDevice, TheDeviceRulesProbeInADirectoryItCannotWriteIsUnknown)
{
	EXPECT_EQ(device_rules_restrict("/nonexistent-dir"), -ENOENT);
}

} // namespace
} // namespace amdgpu
