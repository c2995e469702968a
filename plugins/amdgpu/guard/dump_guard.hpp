// SPDX-License-Identifier: GPL-2.0-only
//
// The dump's guard: from the moment the plugin pauses a task's GPU queues (PROCESS_INFO) until it
// has resumed them, someone outside criu must be able to resume them if criu dies. KFD keeps the
// queues paused until UNPAUSE comes from the task itself or from its ptracer (with
// CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN); once criu is gone nobody else would ever send it, and
// the task would run on with queues that never execute again.
//
// Protocol (criu's dumping process -> guard, a SOCK_SEQPACKET pair):
//   watch <pid> + the task's /dev/kfd file   before PROCESS_INFO on that file
//   resumed <pid>                             after the plugin's own UNPAUSE (or a failed PROCESS_INFO)
//   release                                  the plugin's session is over (criu's exit hook)
// On release the guard exits doing nothing. If criu dies first (its pidfd becomes readable), the
// guard reads what criu sent before it died and, for every task watched and not resumed that
// still runs, becomes its ptracer (PTRACE_SEIZE, which does not stop it), sends UNPAUSE through
// the task's kfd file, and exits (which detaches it). A task criu killed after a successful dump is
// never touched: criu kills tasks only after the plugin's exit hook released the guard.
#pragma once

#include "guard/guard_process.hpp"

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace amdgpu {

class DumpGuard {
public:
	// Starts the guard for this criu process; image_dir (a directory fd, or -1 for a stream) is
	// where the guard writes its log. Throws Error if the guard cannot be started.
	explicit DumpGuard(int image_dir);
	DumpGuard(const DumpGuard &) = delete;
	DumpGuard &operator=(const DumpGuard &) = delete;

	// `pid` in criu's pid namespace. Warnings, not errors: a dump does not fail because its guard
	// is gone, it only loses the guarantee (and says so).
	void watch(pid_t pid, int kfd_fd);
	void resumed(pid_t pid);
	// Only in the process that started the guard (criu forks helpers that exit with a copy).
	void release();

private:
	void send(uint32_t kind, pid_t pid, int fd = -1);

	std::optional<guard::Link> link_;
	bool lost_ = false; // said once that the guard is gone
};

} // namespace amdgpu
