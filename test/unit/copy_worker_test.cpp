// SPDX-License-Identifier: GPL-2.0-only
//
// The thread that runs the dump's GPU copies beside criu: items run in the order posted, one at a
// time; the first failure reaches the join and the later items only clean up; the thread's log
// lines reach criu's log from criu's thread alone; its signals go to criu's thread.
#include "copy/copy_worker.hpp"

#include "criu_host.hpp"
#include "support/error.hpp"
#include "support/log.hpp"
#include "support/plugin_thread.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace amdgpu {
namespace {

// Every line criu's log gets, with the thread that wrote it.
class LogCapture {
public:
	LogCapture()
	{
		host::set_log_sink([this](unsigned int, const std::string &line) {
			lines.push_back(line);
			threads.push_back(std::this_thread::get_id());
		});
	}
	~LogCapture() { host::set_log_sink(nullptr); }
	std::vector<std::string> lines;
	std::vector<std::thread::id> threads;
};

TEST(CopyWorker, RunsItemsInOrderOneAtATimeAndReportsTheFirstFailure)
{
	CopyWorker worker;
	EXPECT_TRUE(worker.idle());
	std::vector<std::string> seen; // written by the worker alone until the join
	std::atomic<int> running { 0 };
	std::atomic<int> most { 0 };
	auto item = [&](std::string name, bool fails) {
		return [&, name, fails](bool skip) {
			most = std::max(most.load(), ++running);
			seen.push_back(name + (skip ? " skipped" : ""));
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
			--running;
			if (fails && !skip)
				fail(-EIO, "%s failed", name.c_str());
		};
	};
	worker.post(item("a", false));
	worker.post(item("b", true));
	worker.post(item("c", true));
	EXPECT_FALSE(worker.idle());
	const CopyWorker::Joined joined = worker.join();
	EXPECT_EQ(seen, (std::vector<std::string> { "a", "b", "c skipped" }));
	EXPECT_EQ(most.load(), 1);
	ASSERT_TRUE(joined.failure);
	try {
		std::rethrow_exception(joined.failure);
	} catch (const Error &e) {
		EXPECT_STREQ(e.what(), "b failed");
	}
	EXPECT_GE(joined.busy_seconds, 0.015);
	EXPECT_TRUE(worker.idle()) << "the join forgot nothing";

	worker.post(item("d", false)); // a new round after a join starts clean
	EXPECT_FALSE(worker.join().failure);
}

TEST(CopyWorker, TheThreadsLinesReachCriusLogFromCriusThreadInOrder)
{
	LogCapture capture;
	const std::thread::id criu = std::this_thread::get_id();
	CopyWorker worker;
	worker.post([](bool) {
		pr_info("first from the copy");
		pr_info("second from the copy");
	});
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	pr_info("criu's thread goes on"); // writes out what the copy queued, then itself
	worker.post([](bool) { pr_info("third from the copy"); });
	worker.join();
	pr_info("after the join");
	const std::vector<std::string> expected { "amdgpu_plugin: first from the copy\n",
						  "amdgpu_plugin: second from the copy\n",
						  "amdgpu_plugin: criu's thread goes on\n",
						  "amdgpu_plugin: third from the copy\n",
						  "amdgpu_plugin: after the join\n" };
	EXPECT_EQ(capture.lines, expected);
	for (const std::thread::id t : capture.threads)
		EXPECT_EQ(t, criu) << "a line was written into criu's log from another thread";
}

std::atomic<pthread_t> signalled_thread;

void note_signalled_thread(int)
{
	signalled_thread = pthread_self();
}

// criu, dumping, answers SIGCHLD (a dumped task died) with exit(), from whichever thread takes it,
// and blocks SIGCHLD itself in places. A signal sent to the process while the copy runs must wait
// for criu's thread: a copy thread that could take it would, whenever criu's blocks it.
TEST(CopyWorker, SignalsToTheProcessWaitForCriusThreadWhileItBlocksThem)
{
	struct sigaction sa = {}, old = {};
	sa.sa_handler = note_signalled_thread;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
	signalled_thread = pthread_t {};
	std::atomic<bool> blocked { false };
	CopyWorker worker; // its thread starts with criu's mask of the moment, then criu blocks
	worker.post([&](bool) {
		while (!blocked)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		kill(getpid(), SIGUSR2);
		std::this_thread::sleep_for(std::chrono::milliseconds(20)); // time to take it, if it could
	});
	sigset_t usr2, before;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, &before);
	blocked = true;
	worker.join();
	const bool taken_during_copy = !pthread_equal(signalled_thread.load(), pthread_t {});
	pthread_sigmask(SIG_SETMASK, &before, nullptr); // criu's thread takes it now
	sigaction(SIGUSR2, &old, nullptr);
	EXPECT_FALSE(taken_during_copy) << "a copy thread took the signal while criu's blocked it";
	EXPECT_TRUE(pthread_equal(signalled_thread.load(), pthread_self())) << "criu's thread did not take it";
}

TEST(PluginThread, BlocksEverySignalInTheThreadAndLeavesTheCallersMaskAlone)
{
	sigset_t before, after, inside;
	pthread_sigmask(SIG_SETMASK, nullptr, &before);
	std::thread t = plugin_thread([&] { pthread_sigmask(SIG_SETMASK, nullptr, &inside); });
	t.join();
	pthread_sigmask(SIG_SETMASK, nullptr, &after);
	for (int sig : { SIGCHLD, SIGINT, SIGTERM, SIGUSR1, SIGRTMIN })
		EXPECT_TRUE(sigismember(&inside, sig)) << "signal " << sig << " not blocked in the thread";
	for (int sig = 1; sig < SIGRTMIN; sig++)
		EXPECT_EQ(sigismember(&before, sig), sigismember(&after, sig)) << "signal " << sig;
}

} // namespace
} // namespace amdgpu
