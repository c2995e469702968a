// SPDX-License-Identifier: GPL-2.0-only
//
// The restore's guard: a task criu is restoring with GPU state must not outlive criu unless its
// restore got to the end. If criu dies before, the tasks it was restoring wait for criu's next
// stage forever (futex waits inside criu's restore code and restorer), holding their KFD process,
// BOs and queues; nothing in criu or the kernel ends them.
//
// The guard is started from criu's main process at the plugin's init, before criu forks the tasks,
// when the images hold GPU state. A task enlists itself from the plugin's restore hook, before
// KFD RESTORE creates anything for it, by sending a pidfd of itself. criu closes every inherited
// descriptor in a task it restores (close_old_fds()), so the task reaches the guard through a
// datagram socket the guard binds in the image directory, which the task can always reach through
// criu's image-directory fd whatever its mount and network namespaces:
//   amdgpu-guard-<criu pid>.sock
// criu's main process tells the guard (over a SOCK_SEQPACKET pair) of every task whose GPU queues
// it resumed (the RESUME_DEVICES_LATE hook: the task's memory and GPU state are complete, and
// criu only has to let it go), and releases it at the plugin's exit. The guard ends as soon as
// every enlisted task is resumed, or on release.
//
// The guard also passes the buffers that restored tasks share (restore_session.hpp): the task
// that restores a shared buffer offers a dma-buf of it, and every other holder takes one, through
// the same socket (SCM_RIGHTS); a taker that comes first waits for the offer. The guard holds the
// offered dma-bufs until it ends, when every task is resumed.
//
// The guard also runs the restore's GPU copies (restore_copies.hpp): a task hands it the dma-bufs
// of its BOs after KFD RESTORE and goes on, and the guard's copy thread fills them from the images
// while criu restores the task's host memory (criu reads most of it in its restorer, at the very
// end of the task's restore). criu's main process joins the copies at RESUME_DEVICES_LATE, before
// any queue resumes, and logs what the guard said of them (the guard has no criu log). The copy
// never holds up the guard's loop: criu's death is noticed while a copy runs.
//
// If criu dies first, the guard SIGKILLs every enlisted task not yet resumed, through its pidfd
// (never a pid that could have been reused), waits for it to be gone, and says so in its log
// (guard_process.hpp). The kernel then frees the task's KFD state as for any exiting process. A
// task already resumed is left alone: it is whole, and criu's death only lets it go as criu
// would have.
#pragma once

#include "guard/guard_process.hpp"
#include "copy/restore_copies.hpp"
#include "copy/restore_contents.hpp"

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

namespace amdgpu {

class RestoreGuard {
public:
	// In criu's main process. Throws Error if the guard cannot be started (the socket cannot be
	// made in the image directory, for one). `copy` is what the guard's GPU copies run with.
	explicit RestoreGuard(int image_dir, CopyResources copy = {});
	~RestoreGuard();
	RestoreGuard(const RestoreGuard &) = delete;
	RestoreGuard &operator=(const RestoreGuard &) = delete;

	// In a task being restored, before its KFD state is created; `image_dir` is criu's
	// image-directory fd in that task. Warns (and the restore goes on unguarded) if the guard
	// cannot be reached.
	void enlist_this_task(int image_dir) const;

	// In a task being restored: the dma-buf `dmabuf_fd` of shared buffer `number`, restored by
	// this task, for the other holders. Throws Error if the guard cannot be told.
	void offer_buffer(int image_dir, uint32_t number, int dmabuf_fd) const;
	// In a task being restored: a dma-buf of shared buffer `number`, once the task that restores
	// it offered it, waiting up to `timeout_ms` (0: only if it is there); none if it did not come.
	// Throws Error if the guard cannot be asked.
	unique_fd take_buffer(int image_dir, uint32_t number, int timeout_ms) const;

	// In a task being restored, once KFD RESTORE made its BOs: the copy of kfd image `kfd_id`'s
	// contents (restore_copies.hpp), with the task's GPU map (image gpu_id -> local) and, per
	// bucket of the image, the dma-buf KFD gave (-1: none for the guard to fill). Returns once the
	// guard holds all of them (the task may close its fds). Throws Error if the guard cannot
	// take it.
	void hand_copy(int image_dir, uint32_t kfd_id, const std::map<uint32_t, uint32_t> &gpu_ids,
		       std::span<const int> dmabufs, uint64_t max_buffer_size) const;

	// In criu's main process, before the GPU queues of `pid` (criu's pid namespace) resume: the
	// outcome of the copy the task handed over, none if it handed none. The first call waits for
	// every copy (restore_copies.hpp). Throws Error if the guard cannot say, for this call and
	// every later one.
	std::optional<CopyOutcome> join_copy(pid_t pid);

	// In criu's main process: the GPU queues of `pid` (criu's pid namespace) run again.
	void resumed(pid_t pid);
	pid_t pid() const { return link_->guard_pid(); }
	void release();

private:
	int connect_to_guard(int image_dir, unique_fd &sock) const;
	int open_channel(int image_dir, uint32_t kind, uint32_t value, unique_fd &mine) const;
	void join_all();

	CopyResources copy_;
	std::string socket_name_;
	bool joined_ = false;
	int join_err_ = 0;
	std::string join_error_;
	std::map<pid_t, CopyOutcome> outcomes_;
	std::optional<guard::Link> link_;
};

} // namespace amdgpu
