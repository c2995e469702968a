// SPDX-License-Identifier: GPL-2.0-only
//
// Finding the task's own fd on a file the plugin holds: what lets a restore hand its render-node
// files over to the task instead of leaving fds of its own behind.
#include "task_fds.hpp"

#include "unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace amdgpu {
namespace {

TEST(TaskFds, ADuplicateSharesTheFileAndTheLowestOneIsFound)
{
	unique_fd ours(open("/dev/null", O_RDWR | O_CLOEXEC));
	ASSERT_TRUE(ours);
	unique_fd high(fcntl(ours.get(), F_DUPFD_CLOEXEC, 200));
	unique_fd low(fcntl(ours.get(), F_DUPFD_CLOEXEC, 100));
	ASSERT_TRUE(high && low);
	EXPECT_EQ(lowest_fd_sharing_file(ours.get(), 0), low.get());
	EXPECT_EQ(lowest_fd_sharing_file(high.get(), 0), std::min(ours.get(), low.get()));
}

TEST(TaskFds, TheSamePathOpenedAgainIsAnotherFile)
{
	unique_fd ours(open("/dev/null", O_RDWR | O_CLOEXEC));
	unique_fd other(open("/dev/null", O_RDWR | O_CLOEXEC));
	ASSERT_TRUE(ours && other);
	EXPECT_EQ(lowest_fd_sharing_file(ours.get(), 0), std::nullopt)
		<< "DRM maps a BO only through the file that owns it: a reopened path will not do";
}

TEST(TaskFds, FdsAtOrAboveTheLimitAreNotTheTasks)
{
	unique_fd ours(open("/dev/null", O_RDWR | O_CLOEXEC));
	unique_fd dup_high(fcntl(ours.get(), F_DUPFD_CLOEXEC, 300));
	ASSERT_TRUE(ours && dup_high);
	EXPECT_EQ(lowest_fd_sharing_file(ours.get(), 300), std::nullopt);
	EXPECT_EQ(lowest_fd_sharing_file(ours.get(), 301), dup_high.get());
}

} // namespace
} // namespace amdgpu
