// SPDX-License-Identifier: GPL-2.0-only
#include "copy/io_pool.hpp"

#include "support/plugin_thread.hpp"

#include <sched.h>

#include <algorithm>
#include <utility>

namespace amdgpu {

IoPool::IoPool(unsigned threads)
{
	for (unsigned i = 0; i < threads; i++)
		threads_.push_back(plugin_thread([this] { run(); }));
}

IoPool::~IoPool()
{
	{
		std::lock_guard lock(mutex_);
		stop_ = true;
	}
	wake_.notify_all();
	for (auto &t : threads_)
		t.join();
}

unsigned IoPool::threads_for(size_t gpus)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	const int available = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	const size_t cpus = static_cast<size_t>(std::max(available, 1));
	return cpus > gpus ? static_cast<unsigned>(std::min(cpus - gpus, 4 * gpus)) : 0;
}

void IoPool::push(std::function<void()> task)
{
	{
		std::lock_guard lock(mutex_);
		tasks_.push_back(std::move(task));
	}
	wake_.notify_one();
}

// Every task is run, even after stop: a batch waits for its own.
void IoPool::run() noexcept
{
	for (;;) {
		std::function<void()> task;
		{
			std::unique_lock lock(mutex_);
			wake_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
			if (tasks_.empty())
				return;
			task = std::move(tasks_.front());
			tasks_.pop_front();
		}
		task();
	}
}

IoBatch::~IoBatch()
{
	settle();
}

void IoBatch::post(std::function<void()> task)
{
	if (!pool_.threads()) {
		task(); // its failure is the caller's at once
		return;
	}
	{
		std::lock_guard lock(mutex_);
		pending_++;
	}
	pool_.push([this, task = std::move(task)]() noexcept {
		std::exception_ptr error;
		try {
			task();
		} catch (...) {
			error = std::current_exception();
		}
		finished(error);
	});
}

void IoBatch::finished(std::exception_ptr error) noexcept
{
	std::lock_guard lock(mutex_);
	if (error && !error_)
		error_ = error;
	if (--pending_ == 0)
		done_.notify_all();
}

void IoBatch::wait()
{
	std::unique_lock lock(mutex_);
	done_.wait(lock, [&] { return pending_ == 0; });
	if (error_)
		std::rethrow_exception(std::exchange(error_, nullptr));
}

void IoBatch::settle() noexcept
{
	std::unique_lock lock(mutex_);
	done_.wait(lock, [&] { return pending_ == 0; });
}

} // namespace amdgpu
