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

} // namespace
} // namespace amdgpu
