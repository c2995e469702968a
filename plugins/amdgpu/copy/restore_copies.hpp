// SPDX-License-Identifier: GPL-2.0-only
//
// The GPU copies the restore guard (restore_guard.hpp) runs for restored tasks, beside criu's own
// restore of their host memory, and what crosses between a task, the guard and criu's main process
// for them.
//
// A task, after its KFD RESTORE, hands the guard its kfd image's id, its GPU map and the dma-bufs
// of its BOs, then goes on with criu's restore; the guard's copy thread restores the contents from
// the images (restore_contents.hpp), one task's copy at a time, so that host memory stays that of
// one copy (KFD_MAX_BUFFER_SIZE per GPU) however many tasks criu restores side by side. The guard's
// event loop never waits for a copy: the copy thread hands each outcome back to it through an
// eventfd. criu's main process joins the copies at RESUME_DEVICES_LATE, which criu runs for every
// task only once every task's files are restored, so every copy has been handed by then: the first
// join waits for all of them and gets every outcome at once (a task's queues may read buffers that
// another task restores, so no task's queues should run before every copy is done anyway).
#pragma once

#include "copy/copy_overlap.hpp"
#include "copy/restore_contents.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace amdgpu {

// The request a task hands over: this header, then the GPU map's pairs, in one record; then the
// dma-bufs in records of at most guard::kMaxFds, each record the bucket indices of its fds.
struct CopyRequestHeader {
	uint32_t kfd_id = 0;
	uint32_t gpus = 0;    // (image gpu_id, local gpu_id) pairs that follow
	uint32_t buckets = 0; // the BOs of the kfd image
	uint32_t fds = 0;     // dma-bufs handed, in the records that follow
	uint64_t max_buffer_size = 0;
};
inline constexpr uint32_t kMaxHandedGpus = 256;
inline constexpr uint32_t kMaxHandedBuckets = 1u << 20;

// What became of a task's copy, as criu's main process learns it at the join.
struct CopyOutcome {
	int err = 0;	   // 0: the contents are complete and match their sums
	std::string error; // what failed, for criu's log
	std::vector<LogLine> log;
	CopyOverlap overlap;
};

// The record that carries one outcome from the guard to criu's main process (kind, pid, outcome);
// the log is cut short where the record would pass `max` bytes.
inline constexpr size_t kMaxOutcomeRecord = 60 << 10;
std::vector<uint8_t> encode_outcome(uint32_t kind, pid_t pid, const CopyOutcome &outcome,
				    size_t max = kMaxOutcomeRecord);
// Throws Error(-EBADMSG) for a record encode_outcome() did not make.
CopyOutcome decode_outcome(std::span<const uint8_t> record, uint32_t &kind, pid_t &pid);

// The guard's copy thread.
class GuardCopies {
public:
	using Clock = std::chrono::steady_clock;
	struct Done {
		pid_t pid = 0;
		CopyOutcome outcome; // overlap.copy_seconds set; the rest is the join's
		Clock::time_point handed;
		Clock::time_point finished;
	};

	// `image_dir` and `resources` must outlive the worker (the guard's own).
	GuardCopies(int image_dir, const CopyResources &resources);
	// A copy still running is left to the process's end (the guard exits right after).
	~GuardCopies();
	GuardCopies(const GuardCopies &) = delete;
	GuardCopies &operator=(const GuardCopies &) = delete;

	void queue(pid_t pid, HandedContents handed);
	// Readable when a copy has finished.
	int ready_fd() const;
	std::vector<Done> take_done();
	// Nothing queued or running.
	bool idle() const;

private:
	struct State;
	std::shared_ptr<State> state_;
	std::thread thread_;
};

} // namespace amdgpu
