// SPDX-License-Identifier: GPL-2.0-only
#include "copy/io_pool.hpp"

#include "support/error.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace amdgpu {
namespace {

// A GPU's reads and writes run on the pool's threads, beside the worker that posted them, and
// waiting for the batch is waiting for all of them.
TEST(IoPool, ABatchRunsOnThePoolsThreadsAndIsDoneWhenWaitedFor)
{
	IoPool pool(3);
	IoBatch batch(pool);
	std::atomic<int> ran { 0 };
	std::mutex mutex;
	std::set<std::thread::id> threads;
	for (int i = 0; i < 30; i++)
		batch.post([&] {
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
			{
				std::lock_guard lock(mutex);
				threads.insert(std::this_thread::get_id());
			}
			ran++;
		});
	batch.wait();
	EXPECT_EQ(ran.load(), 30);
	EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
	EXPECT_GT(threads.size(), 1u);
}

// A write that failed fails the copy with its own error, when the worker next waits for the
// buffer, and only once; the other tasks still ran (none is left holding the buffer).
TEST(IoPool, WaitingRethrowsTheFirstFailureOnce)
{
	IoPool pool(2);
	IoBatch batch(pool);
	std::atomic<int> ran { 0 };
	batch.post([] { fail(-ENOSPC, "failed to write image amdgpu-pages-1-1000.img"); });
	for (int i = 0; i < 5; i++)
		batch.post([&] { ran++; });
	try {
		batch.wait();
		FAIL() << "the failure was lost";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -ENOSPC);
		EXPECT_NE(std::string(e.what()).find("amdgpu-pages-1-1000.img"), std::string::npos);
	}
	EXPECT_EQ(ran.load(), 5);
	EXPECT_NO_THROW(batch.wait());
}

// A batch dies only once its tasks have run: the staging memory they read or write goes after it.
TEST(IoPool, ABatchOutlivesItsTasks)
{
	IoPool pool(1);
	std::atomic<bool> done { false };
	{
		IoBatch batch(pool);
		batch.post([&] {
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
			done = true;
		});
	}
	EXPECT_TRUE(done.load());
}

// Through criu's image streamer a GPU's image is written in order: a pool of no threads runs each
// task as it is posted, and its failure is the poster's at once.
TEST(IoPool, WithoutThreadsEveryTaskRunsWhenPosted)
{
	IoPool pool(0);
	IoBatch batch(pool);
	int ran = 0;
	batch.post([&] { ran++; });
	EXPECT_EQ(ran, 1);
	EXPECT_THROW(batch.post([] { fail(-EPIPE, "the stream is gone"); }), Error);
	EXPECT_NO_THROW(batch.wait());
}

} // namespace
} // namespace amdgpu
