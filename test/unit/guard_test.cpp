// SPDX-License-Identifier: GPL-2.0-only
//
// The guards without a GPU: a forked "criu" starts one, a forked "task" plays the GPU process, and
// the test kills "criu" as the OOM killer would. What the guard does to the task (a ptrace and an
// UNPAUSE for a dump, SIGKILL for a restore) and what it writes to its log is what a user would
// see; the KFD side of UNPAUSE is the VM suite's (e2e/90).
#include "guard/dump_guard.hpp"
#include "guard/guard_process.hpp"
#include "guard/restore_guard.hpp"

#include "support/sleeping_child.hpp"
#include "support/temp_dir.hpp"
#include "support/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace amdgpu {
namespace {

std::string read_file(const std::filesystem::path &path)
{
	std::ifstream in(path);
	std::stringstream s;
	s << in.rdbuf();
	return s.str();
}

bool exits_within(pid_t pid, int ms)
{
	const unique_fd pidfd = guard::pidfd_open(pid);
	return !pidfd || guard::pidfd_wait_exit(pidfd.get(), ms);
}

char process_state(pid_t pid)
{
	std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
	std::string line;
	std::getline(stat, line);
	const size_t close = line.rfind(')');
	return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

// Sends pids from a forked process to the test.
struct PidPipe {
	int fds[2];
	PidPipe() { EXPECT_EQ(pipe(fds), 0); }
	~PidPipe()
	{
		close(fds[0]);
		close(fds[1]);
	}
	void put(pid_t pid) const { EXPECT_EQ(write(fds[1], &pid, sizeof(pid)), static_cast<ssize_t>(sizeof(pid))); }
	pid_t get() const
	{
		pid_t pid = -1;
		pollfd p = { fds[0], POLLIN, 0 };
		if (poll(&p, 1, 5000) == 1 && read(fds[0], &pid, sizeof(pid)) != sizeof(pid))
			pid = -1;
		return pid;
	}
};

void kill_and_reap(pid_t pid)
{
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
}

int ok_if_own_session(void *arg)
{
	const int expected_fds = *static_cast<int *>(arg);
	char verdict = 'y';
	if (getsid(0) != getpid())
		verdict = 's'; // not a session of its own
	for (int fd = 3 + expected_fds; fd < 64; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			verdict = 'f'; // holds a descriptor it was not given
	return write(3, &verdict, 1) == 1 ? 0 : 1;
}

TEST(Guard, IsNoChildOfItsStarterAndHoldsOnlyWhatItWasGiven)
{
	int p[2];
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	const unique_fd in(p[0]), out(p[1]);
	const unique_fd unrelated(open("/dev/null", O_RDONLY)); // not O_CLOEXEC: must not leak either
	int kept = 1;
	const int keep[] = { out.get() };
	const pid_t guard = guard::spawn(keep, ok_if_own_session, &kept);
	ASSERT_GT(guard, 0);
	char verdict = 0;
	pollfd pfd = { in.get(), POLLIN, 0 };
	ASSERT_EQ(poll(&pfd, 1, 5000), 1);
	ASSERT_EQ(read(in.get(), &verdict, 1), 1);
	EXPECT_EQ(verdict, 'y') << "s: it shares criu's session; f: it holds a descriptor it was not given";
	int status;
	EXPECT_EQ(waitpid(-1, &status, WNOHANG | __WALL), -1) << "criu would wait for, or BUG() on, a child";
	EXPECT_EQ(errno, ECHILD);
	EXPECT_TRUE(exits_within(guard, 5000));
}

// "criu" starts a dump guard and watches `task`; what it does then is `then`.
enum class DumpEnd { release, die };

pid_t criu_with_dump_guard(const test::TempDir &dir, pid_t task, DumpEnd end, const PidPipe &pids)
{
	const pid_t criu = fork();
	if (criu == 0) {
		DumpGuard guard(dir.fd());
		const unique_fd not_kfd(open("/dev/null", O_RDWR | O_CLOEXEC));
		guard.watch(task, not_kfd.get());
		if (end == DumpEnd::release)
			guard.release();
		pids.put(getpid());
		pause();
		_exit(0);
	}
	return criu;
}

// A task, and a "criu" that watched it with a dump guard (released or not, as `end` says) and was
// then killed: what the guard does next is each test's.
void kill_criu_of_guarded_dump(const test::TempDir &dir, DumpEnd end, pid_t &task, pid_t &criu)
{
	task = test::sleeping_child();
	const PidPipe pids;
	criu = criu_with_dump_guard(dir, task, end, pids);
	ASSERT_EQ(pids.get(), criu);
	kill_and_reap(criu);
}

TEST(DumpGuard, DoesNothingOnceReleased)
{
	const test::TempDir dir;
	pid_t task = -1, criu = -1;
	ASSERT_NO_FATAL_FAILURE(kill_criu_of_guarded_dump(dir, DumpEnd::release, task, criu));
	usleep(200 * 1000);
	EXPECT_NE(process_state(task), 't') << "the guard stopped the task";
	EXPECT_FALSE(std::filesystem::exists(dir.path() / guard::kLogName)) << read_file(dir.path() / guard::kLogName);
	kill_and_reap(task);
}

TEST(DumpGuard, ResumesAWatchedTaskWhenCriuDies)
{
	const test::TempDir dir;
	pid_t task = -1, criu = -1;
	ASSERT_NO_FATAL_FAILURE(kill_criu_of_guarded_dump(dir, DumpEnd::die, task, criu));
	const auto log = dir.path() / guard::kLogName;
	// The guard creates its log, then writes the line: wait for a whole line, not for the file.
	for (int i = 0; i < 50 && read_file(log).find('\n') == std::string::npos; i++)
		usleep(100 * 1000);
	const std::string text = read_file(log);
	// The stand-in for the task's kfd file is /dev/null: the guard got as far as UNPAUSE (it
	// became the task's ptracer first), and the kernel refused the ioctl.
	if (text.find("ptrace of pid") != std::string::npos && geteuid() != 0)
		GTEST_SKIP() << "this user may not ptrace: " << text;
	EXPECT_NE(text.find("amdgpu_plugin: guard (criu pid " + std::to_string(criu) + "): "), std::string::npos)
		<< text;
	EXPECT_NE(text.find("pid " + std::to_string(task) + "'s GPU queues were paused; KFD UNPAUSE failed"),
		  std::string::npos)
		<< text;
	usleep(100 * 1000);
	EXPECT_NE(process_state(task), 't') << "the guard left the task stopped";
	kill_and_reap(task);
}

// "criu" starts a restore guard and forks a task that enlists; `resume` says whether criu got as
// far as resuming it before it dies.
struct RestoreRun {
	pid_t criu;
	pid_t task;
};

RestoreRun criu_restoring(const test::TempDir &dir, bool resume, const PidPipe &pids)
{
	const pid_t criu = fork();
	if (criu == 0) {
		RestoreGuard guard(dir.fd());
		const PidPipe ready;
		const pid_t task = fork();
		if (task == 0) {
			guard.enlist_this_task(dir.fd());
			ready.put(getpid());
			for (;;)
				pause();
		}
		if (ready.get() != task)
			_exit(1);
		if (resume)
			guard.resumed(task);
		pids.put(task);
		pause();
		_exit(0);
	}
	return { criu, pids.get() };
}

TEST(RestoreGuard, KillsAnEnlistedTaskWhenCriuDies)
{
	const test::TempDir dir;
	const PidPipe pids;
	const RestoreRun run = criu_restoring(dir, false, pids);
	ASSERT_GT(run.task, 0);
	const unique_fd task = guard::pidfd_open(run.task);
	ASSERT_TRUE(task);
	EXPECT_TRUE(std::filesystem::exists(dir.path() / ("amdgpu-guard-" + std::to_string(run.criu) + ".sock")));
	kill_and_reap(run.criu);
	EXPECT_TRUE(guard::pidfd_wait_exit(task.get(), 5000)) << "the half-restored task survived criu";
	const auto log = dir.path() / guard::kLogName;
	for (int i = 0; i < 50 && read_file(log).find('\n') == std::string::npos; i++)
		usleep(100 * 1000);
	EXPECT_NE(read_file(log).find("criu died while it restored pid " + std::to_string(run.task) +
				      ": killed the half-restored task"),
		  std::string::npos)
		<< read_file(log);
	for (int i = 0;
	     i < 50 && std::filesystem::exists(dir.path() / ("amdgpu-guard-" + std::to_string(run.criu) + ".sock"));
	     i++)
		usleep(100 * 1000);
	EXPECT_FALSE(std::filesystem::exists(dir.path() / ("amdgpu-guard-" + std::to_string(run.criu) + ".sock")))
		<< "the guard left its socket in the image directory";
	guard::pidfd_send_signal(task.get(), SIGKILL); // when the guard failed to
}

TEST(RestoreGuard, LeavesAResumedTaskAloneAndEndsByItself)
{
	const test::TempDir dir;
	const PidPipe pids;
	const RestoreRun run = criu_restoring(dir, true, pids);
	ASSERT_GT(run.task, 0);
	const auto socket = dir.path() / ("amdgpu-guard-" + std::to_string(run.criu) + ".sock");
	for (int i = 0; i < 50 && std::filesystem::exists(socket); i++)
		usleep(100 * 1000);
	EXPECT_FALSE(std::filesystem::exists(socket)) << "the guard is still there with every task resumed";
	kill_and_reap(run.criu);
	usleep(200 * 1000);
	EXPECT_EQ(kill(run.task, 0), 0) << "the guard killed a task whose restore was complete";
	EXPECT_FALSE(std::filesystem::exists(dir.path() / guard::kLogName));
	kill(run.task, SIGKILL);
	EXPECT_TRUE(exits_within(run.task, 5000));
}

// criu 4.3 forks a helper from each task it restores (its "async" daemon), which outlives criu
// and keeps the task's session, and so its pid, in use: a later restore of the same images then
// cannot have the pid. The guard ends the processes a half-restored task forked too.
TEST(RestoreGuard, KillsWhatAHalfRestoredTaskForkedWhenCriuDies)
{
	const test::TempDir dir;
	const PidPipe pids, helpers;
	const pid_t criu = fork();
	if (criu == 0) {
		RestoreGuard guard(dir.fd());
		const pid_t task = fork();
		if (task == 0) {
			guard.enlist_this_task(dir.fd());
			const pid_t helper = fork();
			if (helper == 0)
				for (;;)
					pause();
			helpers.put(helper);
			pids.put(getpid());
			for (;;)
				pause();
		}
		pause();
		_exit(0);
	}
	const pid_t helper = helpers.get(), task = pids.get();
	ASSERT_GT(helper, 0);
	ASSERT_GT(task, 0);
	const unique_fd helper_fd = guard::pidfd_open(helper), task_fd = guard::pidfd_open(task);
	ASSERT_TRUE(helper_fd && task_fd);
	kill_and_reap(criu);
	EXPECT_TRUE(guard::pidfd_wait_exit(task_fd.get(), 5000)) << "the half-restored task survived criu";
	EXPECT_TRUE(guard::pidfd_wait_exit(helper_fd.get(), 5000)) << "what the task forked survived criu";
	const auto log = dir.path() / guard::kLogName;
	for (int i = 0; i < 50 && read_file(log).find('\n') == std::string::npos; i++)
		usleep(100 * 1000);
	EXPECT_NE(read_file(log).find("criu died while it restored pid " + std::to_string(task) +
				      ": killed the half-restored task and 1 process(es) it had forked"),
		  std::string::npos)
		<< read_file(log);
	guard::pidfd_send_signal(helper_fd.get(), SIGKILL); // when the guard failed to
	guard::pidfd_send_signal(task_fd.get(), SIGKILL);
}

} // namespace
} // namespace amdgpu
