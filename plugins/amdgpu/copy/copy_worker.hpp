// SPDX-License-Identifier: GPL-2.0-only
//
// One thread of the plugin's own, beside criu's: it runs the GPU copies posted to it one after
// another (so that host memory stays bounded by one copy's staging), while criu goes on with its
// own work. join() waits for all of them and hands back the first failure. Its lines reach criu's
// log through criu's thread (log.hpp's OffThreadLogs).
//
// criu forks helper processes (one per namespace it dumps, for one) while the thread runs; such a
// child has none of the plugin's threads, and its copy of the worker is let go without a join.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

namespace amdgpu {

class CopyWorker {
public:
	// Work gets `skip`: true once an earlier item failed, when it should only clean up after
	// itself (the dump fails anyway).
	using Work = std::function<void(bool skip)>;

	struct Joined {
		double busy_seconds = 0;   // the items' own time
		double beside_seconds = 0; // from the first item's post to join()'s start
		double waited_seconds = 0; // join()'s wait
		std::exception_ptr failure;
	};

	CopyWorker();
	~CopyWorker();
	CopyWorker(const CopyWorker &) = delete;
	CopyWorker &operator=(const CopyWorker &) = delete;

	// From criu's thread. Starts the thread if it is not running.
	void post(Work work);
	// From criu's thread: waits for every item posted so far, and ends the thread.
	Joined join();
	// Nothing was posted since the last join.
	bool idle() const;

private:
	struct State;
	void stop();

	pid_t owner_;
	// On the heap, so that a forked child can let it go unseen: destroying a condition variable
	// another thread waited on at the fork would wait forever.
	std::unique_ptr<State> state_;
};

} // namespace amdgpu
