// SPDX-License-Identifier: GPL-2.0-only
#include "guard/dump_guard.hpp"

#include "support/error.hpp"
#include "guard/guard_process.hpp"
#include "driver/kfd_ioctl.hpp"
#include "support/log.hpp"

#include <poll.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace amdgpu {

namespace {

enum Kind : uint32_t { kWatch = 1, kResumed = 2 };

// The guard's descriptors (guard_process.hpp renumbers them from 3).
constexpr int kChannel = 3;
constexpr int kCriu = 4;
constexpr int kImageDir = 5;

struct Context {
	pid_t criu_pid;
	bool has_image_dir;
};

struct Watched {
	pid_t pid;
	unique_fd kfd;
	unique_fd pidfd;
	bool resumed = false;
};

using Clock = std::chrono::steady_clock;

// ptrace attaches only once criu's own link to the task is gone; the kernel drops it before criu's
// pidfd turns readable, so this waits only if something else still traces the task.
int seize(pid_t pid)
{
	const auto give_up = Clock::now() + std::chrono::seconds(2);
	while (ptrace(PTRACE_SEIZE, pid, nullptr, nullptr)) {
		const int err = errno;
		if (err != EPERM || Clock::now() > give_up)
			return -err;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return 0;
}

void resume(const guard::Journal &journal, Watched &w, Clock::time_point criu_died)
{
	if (guard::pidfd_send_signal(w.pidfd.get(), 0) == -ESRCH) {
		journal.line("pid %d, whose GPU queues criu had paused, has exited meanwhile", w.pid);
		return;
	}
	if (const int ret = seize(w.pid)) {
		journal.line("criu died while pid %d's GPU queues were paused, and they cannot be resumed: "
			     "ptrace of pid %d failed: %s; the task runs with stopped GPU queues",
			     w.pid, w.pid, strerror(-ret));
		return;
	}
	const int ret = kfd::criu_unpause(w.kfd.get());
	const double ms = std::chrono::duration<double, std::milli>(Clock::now() - criu_died).count();
	if (!ret)
		journal.line("criu died while pid %d's GPU queues were paused: resumed them %.0f ms after criu's death",
			     w.pid, ms);
	else if (ret == -EINVAL)
		journal.line("criu died during the dump of pid %d; its GPU queues were not paused", w.pid);
	else
		journal.line("criu died while pid %d's GPU queues were paused; KFD UNPAUSE failed: %s; "
			     "the task runs with stopped GPU queues",
			     w.pid, strerror(-ret));
}

// Takes every message that is queued. False once the plugin released the guard.
bool read_messages(std::vector<Watched> &watched, bool &channel_open)
{
	for (;;) {
		guard::Message m;
		unique_fd fd;
		const int n = guard::receive_message(kChannel, m, fd, false);
		if (n == 0)
			channel_open = false;
		if (n <= 0)
			return true;
		switch (m.kind) {
		case kWatch:
			watched.push_back({ m.pid, std::move(fd), guard::pidfd_open(m.pid) });
			break;
		case kResumed:
			for (Watched &w : watched)
				if (w.pid == m.pid)
					w.resumed = true;
			break;
		case guard::kRelease:
			return false;
		}
	}
}

int guard_main(void *arg)
{
	const Context &ctx = *static_cast<const Context *>(arg);
	const guard::Journal journal(ctx.has_image_dir ? kImageDir : -1, ctx.criu_pid);
	std::vector<Watched> watched;
	bool channel_open = true;
	for (;;) {
		pollfd p[2] = { { kCriu, POLLIN, 0 }, { kChannel, POLLIN, 0 } };
		if (poll(p, channel_open ? 2 : 1, -1) < 0 && errno != EINTR)
			return 1;
		if (p[0].revents)
			break;
		if (p[1].revents && !read_messages(watched, channel_open))
			return 0;
	}
	const auto criu_died = Clock::now();
	if (!read_messages(watched, channel_open))
		return 0; // released just before criu exited
	for (Watched &w : watched)
		if (!w.resumed)
			resume(journal, w, criu_died);
	return 0; // and exiting detaches from the tasks
}

} // namespace

DumpGuard::DumpGuard(int image_dir)
{
	const pid_t criu_pid = getpid();
	int pair[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair))
		fail_errno(errno, "cannot make the dump guard's channel");
	unique_fd channel(pair[0]), guard_end(pair[1]);
	unique_fd criu = guard::pidfd_open(criu_pid);
	if (!criu)
		fail_errno(errno, "cannot open a pidfd of criu (pid %d) for the dump guard", criu_pid);
	Context ctx = { criu_pid, image_dir >= 0 };
	const int keep[] = { guard_end.get(), criu.get(), image_dir };
	const pid_t guard_pid = guard::spawn(std::span(keep, image_dir >= 0 ? 3 : 2), guard_main, &ctx);
	link_.emplace(std::move(channel), guard_pid);
	pr_info("dump guard started (pid %d): it resumes paused GPU queues if criu dies", guard_pid);
}

void DumpGuard::send(uint32_t kind, pid_t pid, int fd)
{
	const int ret = link_->send(kind, pid, fd);
	if (ret && ret != -ESHUTDOWN && !lost_) {
		pr_warn("the dump guard (pid %d) cannot be reached (%s): if criu dies before this dump ends, "
			"paused GPU queues stay paused",
			link_->guard_pid(), strerror(-ret));
		lost_ = true;
	}
}

void DumpGuard::watch(pid_t pid, int kfd_fd)
{
	send(kWatch, pid, kfd_fd);
}

void DumpGuard::resumed(pid_t pid)
{
	send(kResumed, pid);
}

void DumpGuard::release()
{
	link_->release();
}

} // namespace amdgpu
