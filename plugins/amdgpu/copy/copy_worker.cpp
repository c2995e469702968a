// SPDX-License-Identifier: GPL-2.0-only
#include "copy/copy_worker.hpp"

#include "support/log.hpp"
#include "support/plugin_thread.hpp"

#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace amdgpu {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b)
{
	return std::chrono::duration<double>(b - a).count();
}

} // namespace

struct CopyWorker::State {
	std::mutex lock;
	std::condition_variable changed;
	std::deque<Work> queue;
	bool running_item = false;
	bool stop = false;
	std::exception_ptr failure;
	double busy_seconds = 0;
	std::optional<Clock::time_point> first_post;
	std::optional<OffThreadLogs> logs;
	std::optional<std::thread> thread;

	void run();
};

CopyWorker::CopyWorker() : owner_(getpid()), state_(std::make_unique<State>()) {}

CopyWorker::~CopyWorker()
{
	if (getpid() != owner_) {
		(void)state_.release(); // a child criu forked: the thread is not here, its lock may be held
		return;
	}
	stop();
}

void CopyWorker::stop()
{
	State &s = *state_;
	if (!s.thread)
		return;
	{
		std::lock_guard hold(s.lock);
		s.stop = true;
	}
	s.changed.notify_all();
	s.thread->join();
	s.thread.reset();
	s.stop = false;
	s.logs.reset(); // writes out what the thread logged
}

bool CopyWorker::idle() const
{
	std::lock_guard hold(state_->lock);
	return !state_->first_post;
}

void CopyWorker::post(Work work)
{
	State &s = *state_;
	if (!s.thread) { // first, so that no item waits for a thread that could not start
		s.logs.emplace();
		try {
			s.thread.emplace(plugin_thread([&s] { s.run(); }));
		} catch (...) {
			s.logs.reset();
			throw;
		}
	}
	{
		std::lock_guard hold(s.lock);
		s.queue.push_back(std::move(work));
		if (!s.first_post)
			s.first_post = Clock::now();
	}
	s.changed.notify_all();
}

void CopyWorker::State::run()
{
	std::unique_lock hold(lock);
	for (;;) {
		changed.wait(hold, [this] { return stop || !queue.empty(); });
		if (queue.empty())
			return;
		Work work = std::move(queue.front());
		queue.pop_front();
		running_item = true;
		const bool skip = failure != nullptr;
		hold.unlock();
		const Clock::time_point start = Clock::now();
		std::exception_ptr failed;
		try {
			work(skip);
		} catch (...) {
			failed = std::current_exception();
		}
		work = nullptr; // what the item holds (its fds) goes before the join hears of it
		const double took = seconds_between(start, Clock::now());
		hold.lock();
		busy_seconds += took;
		if (failed && !failure)
			failure = failed;
		running_item = false;
		changed.notify_all();
	}
}

CopyWorker::Joined CopyWorker::join()
{
	State &s = *state_;
	const Clock::time_point start = Clock::now();
	Joined joined;
	{
		std::unique_lock hold(s.lock);
		s.changed.wait(hold, [&s] { return s.queue.empty() && !s.running_item; });
		joined.busy_seconds = s.busy_seconds;
		joined.beside_seconds = s.first_post ? seconds_between(*s.first_post, start) : 0;
		joined.failure = s.failure;
		s.busy_seconds = 0;
		s.first_post.reset();
		s.failure = nullptr;
	}
	joined.waited_seconds = seconds_between(start, Clock::now());
	stop();
	return joined;
}

} // namespace amdgpu
