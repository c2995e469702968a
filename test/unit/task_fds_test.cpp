// SPDX-License-Identifier: GPL-2.0-only
//
// Finding the task's own fd on a file the plugin holds: what lets a restore hand its render-node
// files over to the task instead of leaving fds of its own behind.
#include "driver/task_fds.hpp"

#include "support/sleeping_child.hpp"
#include "support/unique_fd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

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

TEST(TaskFds, TheTracedTaskHoldingAFileIsFound)
{
	// How the dump guard learns the pid of the task whose /dev/kfd file criu received.
	unique_fd file(open("/dev/null", O_RDWR)); // inherited by the child
	ASSERT_TRUE(file);
	const pid_t child = test::sleeping_child();
	ASSERT_GT(child, 0);
	EXPECT_EQ(traced_task_holding(file.get()), std::nullopt) << "a task this process does not trace";
	if (ptrace(PTRACE_SEIZE, child, nullptr, nullptr) == 0) {
		EXPECT_EQ(traced_task_holding(file.get()), child);
		unique_fd other(open("/dev/null", O_RDWR | O_CLOEXEC));
		EXPECT_EQ(traced_task_holding(other.get()), std::nullopt) << "the same path, another file";
	} else {
		ADD_FAILURE() << "cannot ptrace a child: " << strerror(errno);
	}
	kill(child, SIGKILL);
	waitpid(child, nullptr, __WALL);
}

} // namespace
} // namespace amdgpu

#include "support/temp_dir.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

namespace amdgpu {
namespace {

unique_fd unix_socket()
{
	return unique_fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
}

sockaddr_un address_of(const std::string &path)
{
	sockaddr_un a = {};
	a.sun_family = AF_UNIX;
	std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
	return a;
}

TEST(TaskFds, AConnectionToTheImageStreamerIsSeen)
{
	test::TempDir dir;
	const std::string path = (dir.path() / "streamer-capture.sock").string();
	unique_fd server = unix_socket();
	const sockaddr_un addr = address_of(path);
	ASSERT_EQ(bind(server.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)), 0);
	ASSERT_EQ(listen(server.get(), 1), 0);
	EXPECT_FALSE(has_socket_connected_to(path)) << "a listening socket is not a connection to it";

	unique_fd client = unix_socket();
	ASSERT_EQ(connect(client.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)), 0);
	EXPECT_TRUE(has_socket_connected_to(path));
	EXPECT_FALSE(has_socket_connected_to((dir.path() / "streamer-serve.sock").string()));
	client.reset();
	EXPECT_FALSE(has_socket_connected_to(path));
}

} // namespace
} // namespace amdgpu
