// SPDX-License-Identifier: GPL-2.0-only
//
// The threads that carry a copy's image I/O. Each GPU has one worker thread that drives its
// engine and sums its blocks, which a core does at memory speed; what bounds a GPU on that one
// thread is the kernel's part of write() and read(), the copy into or out of the page cache,
// several times slower than memcpy. Posted here, the reads and writes of a GPU's staging buffers
// run on as many cores as the pool has while its worker goes on with the next buffer; a node
// with more cores than GPUs then moves each GPU's bytes at more than one core's rate.
//
// A task is posted in an IoBatch (one per staging buffer): waiting for the batch is what makes the
// buffer free again, and rethrows the first failure of its tasks. A pool of no threads runs each
// task in post() itself, which then throws what the task throws.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace amdgpu {

class IoPool {
public:
	explicit IoPool(unsigned threads);
	~IoPool();
	IoPool(const IoPool &) = delete;
	IoPool &operator=(const IoPool &) = delete;

	unsigned threads() const { return static_cast<unsigned>(threads_.size()); }

	// The pool for a copy of `gpus` GPUs: a thread for each CPU this process may run on beyond one
	// per GPU, at most four per GPU (past that the sink is the bound). With no more CPUs than GPUs
	// the workers already keep every CPU busy, and a pool would only hand their I/O around.
	static unsigned threads_for(size_t gpus);

private:
	friend class IoBatch;
	void push(std::function<void()> task);
	void run() noexcept;

	std::mutex mutex_;
	std::condition_variable wake_;
	std::deque<std::function<void()>> tasks_;
	bool stop_ = false;
	std::vector<std::thread> threads_;
};

class IoBatch {
public:
	explicit IoBatch(IoPool &pool) : pool_(pool) {}
	// Waits for every task: none may outlive the memory it reads or writes.
	~IoBatch();
	IoBatch(const IoBatch &) = delete;
	IoBatch &operator=(const IoBatch &) = delete;

	void post(std::function<void()> task);
	// Until every task posted ran; then throws the first failure among them, once.
	void wait();
	// The same, never throwing (after a failure elsewhere).
	void settle() noexcept;

private:
	void finished(std::exception_ptr error) noexcept;

	IoPool &pool_;
	std::mutex mutex_;
	std::condition_variable done_;
	size_t pending_ = 0;
	std::exception_ptr error_;
};

} // namespace amdgpu
