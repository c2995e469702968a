// SPDX-License-Identifier: GPL-2.0-only
#include "restore_guard.hpp"

#include "error.hpp"
#include "guard_process.hpp"
#include "log.hpp"
#include "unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace amdgpu {

namespace {

enum Kind : uint32_t { kEnlist = 1, kResumed = 2, kOffer = 3, kTake = 4, kBuffer = 5 };

// The guard's descriptors (guard_process.hpp renumbers them from 3).
constexpr int kChannel = 3;
constexpr int kCriu = 4;
constexpr int kEnlistSocket = 5;
constexpr int kImageDir = 6;

// How long the guard waits for a task it killed to be gone before it says it could not.
constexpr int kKillWaitMs = 10000;

struct Context {
	pid_t criu_pid;
	char socket_name[64];
};

struct Enlisted {
	pid_t pid; // in criu's pid namespace
	unique_fd pidfd;
	bool resumed = false;
};

struct GuardState {
	std::vector<Enlisted> tasks;
	std::map<uint32_t, unique_fd> offered;	   // shared buffers' dma-bufs, by number
	std::multimap<uint32_t, unique_fd> takers; // waiting for an offer: where to answer
	bool channel_open = true;
	bool released = false;
	bool any_resumed = false;

	bool all_resumed() const
	{
		return std::all_of(tasks.begin(), tasks.end(), [](const Enlisted &t) { return t.resumed; });
	}
};

// Answers a taker of buffer `number` (a taker that is gone is nobody's loss).
void hand_buffer(int taker, uint32_t number, int dmabuf)
{
	guard::send_message(taker, { kBuffer, 0, number }, dmabuf);
}

void read_enlisted(GuardState &s)
{
	for (;;) {
		guard::Message m;
		unique_fd fd;
		if (guard::receive_message(kEnlistSocket, m, fd, false) <= 0)
			return;
		if (!fd)
			continue;
		if (m.kind == kEnlist) {
			if (const auto pid = guard::pidfd_pid(fd.get()))
				s.tasks.push_back({ *pid, std::move(fd) });
		} else if (m.kind == kOffer) {
			const auto [first, last] = s.takers.equal_range(m.value);
			for (auto it = first; it != last; ++it)
				hand_buffer(it->second.get(), m.value, fd.get());
			s.takers.erase(first, last);
			s.offered[m.value] = std::move(fd);
		} else if (m.kind == kTake) {
			const auto it = s.offered.find(m.value);
			if (it != s.offered.end())
				hand_buffer(fd.get(), m.value, it->second.get());
			else
				s.takers.emplace(m.value, std::move(fd));
		}
	}
}

void read_channel(GuardState &s)
{
	for (;;) {
		guard::Message m;
		unique_fd unused;
		const int n = guard::receive_message(kChannel, m, unused, false);
		if (n == 0)
			s.channel_open = false;
		if (n <= 0)
			return;
		if (m.kind == guard::kRelease)
			s.released = true;
		if (m.kind != kResumed)
			continue;
		s.any_resumed = true;
		for (Enlisted &t : s.tasks)
			if (t.pid == m.pid)
				t.resumed = true;
	}
}

void end_half_restored(const guard::Journal &journal, Enlisted &t)
{
	if (const int ret = guard::pidfd_send_signal(t.pidfd.get(), SIGKILL)) {
		if (ret != -ESRCH)
			journal.line("criu died while it restored pid %d, and the task cannot be killed: %s", t.pid,
				     strerror(-ret));
		return;
	}
	if (guard::pidfd_wait_exit(t.pidfd.get(), kKillWaitMs))
		journal.line("criu died while it restored pid %d: killed the half-restored task", t.pid);
	else
		journal.line("criu died while it restored pid %d: sent it SIGKILL, and it is still there after %d ms",
			     t.pid, kKillWaitMs);
}

// Follows criu and the enlisted tasks until every task resumed, criu let go, or criu died
// (returns true then).
bool watch_until_done(GuardState &s)
{
	while (!s.released) {
		pollfd p[3] = { { kCriu, POLLIN, 0 }, { kEnlistSocket, POLLIN, 0 }, { kChannel, POLLIN, 0 } };
		if (poll(p, s.channel_open ? 3 : 2, -1) < 0 && errno != EINTR)
			return false;
		// Tasks enlist before criu's stage that resumes them: read them first.
		read_enlisted(s);
		read_channel(s);
		if (p[0].revents)
			return true;
		if (s.any_resumed && s.all_resumed()) {
			read_enlisted(s); // nothing can still be on its way, but look
			if (s.all_resumed())
				return false;
		}
	}
	return false;
}

int guard_main(void *arg)
{
	const Context &ctx = *static_cast<const Context *>(arg);
	const guard::Journal journal(kImageDir, ctx.criu_pid);
	GuardState s;
	if (watch_until_done(s) && !s.released) {
		read_enlisted(s);
		read_channel(s);
		if (!s.released)
			for (Enlisted &t : s.tasks)
				if (!t.resumed)
					end_half_restored(journal, t);
	}
	unlinkat(kImageDir, ctx.socket_name, 0);
	return 0;
}

} // namespace

namespace {

// The guard's socket in the image directory, removed again unless the guard took it over.
class BoundSocket {
public:
	BoundSocket(int image_dir, const std::string &name) : image_dir_(image_dir), name_(name)
	{
		fd_.reset(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
		if (!fd_)
			fail_errno(errno, "cannot make the restore guard's socket");
		sockaddr_un addr = {};
		addr.sun_family = AF_UNIX;
		snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/%s", image_dir, name.c_str());
		unlinkat(image_dir, name.c_str(), 0); // left by an earlier criu with this pid
		if (bind(fd_.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)))
			fail_errno(errno, "cannot create the restore guard's socket %s in the image directory",
				   name.c_str());
		bound_ = true;
	}
	~BoundSocket()
	{
		if (bound_)
			unlinkat(image_dir_, name_.c_str(), 0);
	}
	BoundSocket(const BoundSocket &) = delete;
	BoundSocket &operator=(const BoundSocket &) = delete;

	int fd() const { return fd_.get(); }
	// The guard owns the name now: it removes it when it ends.
	void hand_over() { bound_ = false; }

private:
	int image_dir_;
	std::string name_;
	unique_fd fd_;
	bool bound_ = false;
};

} // namespace

RestoreGuard::RestoreGuard(int image_dir)
{
	const pid_t criu_pid = getpid();
	socket_name_ = strprintf("amdgpu-guard-%d.sock", criu_pid);
	BoundSocket listen(image_dir, socket_name_);

	int pair[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair))
		fail_errno(errno, "cannot make the restore guard's channel");
	unique_fd channel(pair[0]), guard_end(pair[1]);
	unique_fd criu = guard::pidfd_open(criu_pid);
	if (!criu)
		fail_errno(errno, "cannot open a pidfd of criu (pid %d) for the restore guard", criu_pid);

	Context ctx = { criu_pid, {} };
	snprintf(ctx.socket_name, sizeof(ctx.socket_name), "%s", socket_name_.c_str());
	const int keep[] = { guard_end.get(), criu.get(), listen.fd(), image_dir };
	const pid_t guard_pid = guard::spawn(keep, guard_main, &ctx);
	listen.hand_over();
	link_.emplace(std::move(channel), guard_pid);
	pr_info("restore guard started (pid %d): it kills half-restored GPU tasks if criu dies", guard_pid);
}

RestoreGuard::~RestoreGuard()
{
	if (!link_->owned())
		link_->abandon(); // criu closed it in this task; the number may be a restored file now
}

// A socket connected to the guard's, from a task being restored: a relative name from the image
// directory reaches it whatever mount namespace and root the task has by now; the working
// directory is put back at once (criu sets the task's own later). -errno on failure.
int RestoreGuard::connect_to_guard(int image_dir, unique_fd &sock) const
{
	sock.reset(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (!sock)
		return -errno;
	sockaddr_un addr = {};
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_name_.c_str());
	const unique_fd cwd(open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
	int ret = -ENOENT;
	if (cwd && !fchdir(image_dir)) {
		ret = connect(sock.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)) ? -errno : 0;
		if (fchdir(cwd.get()))
			pr_warn("cannot return to the working directory after reaching the restore guard: %s",
				strerror(errno));
	}
	return ret;
}

void RestoreGuard::enlist_this_task(int image_dir) const
{
	unique_fd sock;
	const unique_fd self = guard::pidfd_open(getpid());
	if (!self) {
		pr_warn("pid %d cannot enlist with the restore guard: %s; should criu die before the task is "
			"restored, the task would be left half-restored",
			getpid(), strerror(errno));
		return;
	}
	int ret = connect_to_guard(image_dir, sock);
	if (!ret)
		ret = guard::send_message(sock.get(), { kEnlist, getpid() }, self.get());
	if (ret)
		pr_warn("pid %d cannot enlist with the restore guard through %s: %s; should criu die before the "
			"task is restored, the task would be left half-restored",
			getpid(), socket_name_.c_str(), strerror(-ret));
	else
		pr_debug("pid %d enlisted with the restore guard", getpid());
}

void RestoreGuard::offer_buffer(int image_dir, uint32_t number, int dmabuf_fd) const
{
	unique_fd sock;
	int ret = connect_to_guard(image_dir, sock);
	if (!ret)
		ret = guard::send_message(sock.get(), { kOffer, getpid(), number }, dmabuf_fd);
	if (ret)
		fail_errno(ret, "cannot offer shared buffer %u to the other tasks through the restore guard (%s)",
			   number, socket_name_.c_str());
}

unique_fd RestoreGuard::take_buffer(int image_dir, uint32_t number, int timeout_ms) const
{
	unique_fd sock;
	int pair[2];
	int ret = connect_to_guard(image_dir, sock);
	if (!ret && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair))
		ret = -errno;
	if (ret)
		fail_errno(ret, "cannot ask the restore guard (%s) for shared buffer %u", socket_name_.c_str(), number);
	const unique_fd answer(pair[0]);
	{
		const unique_fd ask(pair[1]); // the guard's copy is the only one left once sent
		ret = guard::send_message(sock.get(), { kTake, getpid(), number }, ask.get());
	}
	if (ret)
		fail_errno(ret, "cannot ask the restore guard (%s) for shared buffer %u", socket_name_.c_str(), number);
	pollfd p = { answer.get(), POLLIN, 0 };
	while ((ret = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	guard::Message m;
	unique_fd dmabuf;
	if (ret > 0)
		ret = guard::receive_message(answer.get(), m, dmabuf, false);
	if (ret <= 0 || m.kind != kBuffer || m.value != number || !dmabuf)
		return unique_fd();
	return dmabuf;
}

void RestoreGuard::resumed(pid_t pid)
{
	link_->send(kResumed, pid);
}

void RestoreGuard::release()
{
	link_->release();
}

} // namespace amdgpu
