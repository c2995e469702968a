// SPDX-License-Identifier: GPL-2.0-only
#include "guard/guard_process.hpp"

#include "support/error.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <iterator>
#include <algorithm>

namespace amdgpu::guard {

namespace {

// Gives the guard exactly the descriptors it was handed, as 3, 4, ...
void keep_only(std::span<const int> keep)
{
	// Copy them above the numbers they are to take first, so that no dup2 lands on one of them;
	// close_range then takes the copies away with everything else.
	const int first_free = 3 + static_cast<int>(keep.size());
	int moved[8];
	if (keep.size() > std::size(moved))
		_exit(120);
	for (size_t i = 0; i < keep.size(); i++)
		if ((moved[i] = fcntl(keep[i], F_DUPFD, first_free)) < 0)
			_exit(121);
	for (size_t i = 0; i < keep.size(); i++)
		if (dup2(moved[i], 3 + static_cast<int>(i)) < 0)
			_exit(122);
	syscall(SYS_close_range, first_free, ~0u, 0);
	const int null = open("/dev/null", O_RDWR);
	for (int fd = 0; fd < 3; fd++)
		if (null != fd)
			dup2(null, fd);
	if (null > 2)
		close(null);
}

void default_signals()
{
	struct sigaction sa = {};
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, nullptr); // SIGKILL/SIGSTOP and RT gaps refuse: fine
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, nullptr);
	signal(SIGPIPE, SIG_IGN);
}

[[noreturn]] void become_guard(std::span<const int> keep, int (*body)(void *), void *ctx)
{
	setsid();
	prctl(PR_SET_PDEATHSIG, 0);
	prctl(PR_SET_NAME, "amdgpu-guard");
	default_signals();
	keep_only(keep);
	int status = 1;
	try {
		status = body(ctx);
	} catch (...) {
		status = 2;
	}
	_exit(status);
}

} // namespace

pid_t spawn(std::span<const int> keep, int (*body)(void *), void *ctx)
{
	int pipe_fds[2];
	if (pipe2(pipe_fds, O_CLOEXEC))
		fail_errno(errno, "cannot make a pipe for the guard process");
	unique_fd pid_in(pipe_fds[0]), pid_out(pipe_fds[1]);

	// clone with exit signal 0: criu gets no SIGCHLD for the intermediate, and its plain
	// waitpid(-1) calls do not see it. It is reaped below with __WALL.
	const long mid = syscall(SYS_clone, 0ul, 0ul, 0ul, 0ul, 0ul);
	if (mid < 0)
		fail_errno(errno, "cannot start the guard process");
	if (mid == 0) {
		pid_in.release();
		const pid_t guard = fork();
		if (guard == 0)
			become_guard(keep, body, ctx);
		const ssize_t n = write(pid_out.get(), &guard, sizeof(guard));
		_exit(n == sizeof(guard) && guard > 0 ? 0 : 1);
	}
	pid_out.reset();
	pid_t guard = -1;
	const ssize_t n = read(pid_in.get(), &guard, sizeof(guard));
	int status = 0;
	while (waitpid(static_cast<pid_t>(mid), &status, __WALL) < 0 && errno == EINTR)
		;
	if (n != sizeof(guard) || guard <= 0)
		fail(-ECHILD, "the guard process could not be forked");
	return guard;
}

void Journal::line(const char *fmt, ...) const
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);

	char record[640];
	const int n = snprintf(record, sizeof(record), "<4>amdgpu_plugin: guard (criu pid %d): %s\n", criu_pid_, text);
	// One write is one record; its newline ends it (without one the kernel keeps the record open
	// for a continuation, and dmesg does not show it yet).
	if (const int kmsg = open("/dev/kmsg", O_WRONLY | O_CLOEXEC); kmsg >= 0) {
		if (write(kmsg, record, std::min<size_t>(n, sizeof(record) - 1)) < 0) {
			// nothing to do: the image directory copy below is the other place
		}
		close(kmsg);
	}
	if (image_dir_ < 0)
		return;
	const int file = openat(image_dir_, kLogName, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (file < 0)
		return;
	char stamp[32];
	const time_t now = time(nullptr);
	struct tm tm;
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	dprintf(file, "%s amdgpu_plugin: guard (criu pid %d): %s\n", stamp, criu_pid_, text);
	close(file);
}

unique_fd pidfd_open(pid_t pid)
{
	return unique_fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
}

int pidfd_send_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) ? -errno : 0;
}

std::optional<pid_t> pidfd_pid(int pidfd)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	FILE *f = fopen(path, "re");
	if (!f)
		return std::nullopt;
	char line[128];
	std::optional<pid_t> pid;
	while (fgets(line, sizeof(line), f)) {
		int value;
		if (sscanf(line, "Pid: %d", &value) == 1 && value > 0)
			pid = value; // -1 once it has exited
	}
	fclose(f);
	return pid;
}

namespace {

// The parent in /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold spaces and
// parentheses: the last ')' ends it), or -1.
pid_t parent_of(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	const bool got = fgets(line, sizeof(line), f) != nullptr;
	fclose(f);
	const char *end = got ? strrchr(line, ')') : nullptr;
	char state;
	int ppid;
	return end && sscanf(end + 1, " %c %d", &state, &ppid) == 2 ? ppid : -1;
}

// The children of every thread of `pid`.
std::vector<pid_t> children_of(pid_t pid)
{
	std::vector<pid_t> children;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *tasks = opendir(path);
	if (!tasks)
		return children;
	while (const dirent *t = readdir(tasks)) {
		if (t->d_name[0] == '.')
			continue;
		char file[320]; // d_name holds up to 255 bytes
		snprintf(file, sizeof(file), "/proc/%d/task/%s/children", pid, t->d_name);
		if (FILE *f = fopen(file, "re")) {
			int child;
			while (fscanf(f, "%d", &child) == 1)
				children.push_back(child);
			fclose(f);
		}
	}
	closedir(tasks);
	return children;
}

void collect_descendants(pid_t pid, std::vector<unique_fd> &out, int depth)
{
	if (depth > 64) // a tree deeper than that is no restore's
		return;
	for (const pid_t child : children_of(pid)) {
		unique_fd fd = pidfd_open(child);
		if (!fd || parent_of(child) != pid)
			continue; // gone, or the number is another process's by now
		collect_descendants(child, out, depth + 1);
		out.push_back(std::move(fd));
	}
}

} // namespace

std::vector<unique_fd> descendants(pid_t pid)
{
	std::vector<unique_fd> out;
	collect_descendants(pid, out, 0);
	return out;
}

bool pidfd_wait_exit(int pidfd, int timeout_ms)
{
	pollfd p = { pidfd, POLLIN, 0 };
	int ret;
	while ((ret = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	return ret > 0;
}

int send_record(int sock, std::span<const uint8_t> bytes, std::span<const int> fds)
{
	if (fds.size() > kMaxFds)
		return -EINVAL;
	iovec iov = { const_cast<uint8_t *>(bytes.data()), bytes.size() };
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
	msghdr msg = {};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (!fds.empty()) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
		cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
		memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
	}
	ssize_t n;
	while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -errno;
	return static_cast<size_t>(n) == bytes.size() ? 0 : -EMSGSIZE;
}

int receive_record(int sock, std::vector<uint8_t> &bytes, size_t max, std::vector<unique_fd> &fds, bool wait)
{
	bytes.resize(max);
	iovec iov = { bytes.data(), max };
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
	msghdr msg = {};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	ssize_t n;
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (wait ? 0 : MSG_DONTWAIT))) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -errno;
	for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count; i++) {
			int received;
			memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			fds.emplace_back(received);
		}
	}
	bytes.resize(static_cast<size_t>(n));
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EMSGSIZE;
	// An empty record and a peer that is gone look alike: the records here are never empty.
	return static_cast<int>(n);
}

int send_message(int sock, const Message &m, int fd)
{
	const int fds[1] = { fd };
	return send_record(sock, { reinterpret_cast<const uint8_t *>(&m), sizeof(m) },
			   fd >= 0 ? std::span<const int>(fds) : std::span<const int>());
}

int receive_message(int sock, Message &m, unique_fd &fd, bool wait)
{
	std::vector<uint8_t> bytes;
	std::vector<unique_fd> fds;
	const int n = receive_record(sock, bytes, sizeof(m), fds, wait);
	if (!fds.empty())
		fd = std::move(fds.front());
	if (n == -EMSGSIZE)
		return -EBADMSG;
	if (n <= 0)
		return n;
	if (static_cast<size_t>(n) != sizeof(m))
		return -EBADMSG;
	memcpy(&m, bytes.data(), sizeof(m));
	return n;
}

Link::~Link()
{
	release();
}

int Link::send(uint32_t kind, pid_t pid, int fd) const
{
	if (!owned() || released_)
		return -ESHUTDOWN;
	return send_message(channel_.get(), { kind, pid }, fd);
}

int Link::receive(std::vector<uint8_t> &bytes, size_t max) const
{
	if (!owned() || released_)
		return -ESHUTDOWN;
	std::vector<unique_fd> unused;
	return receive_record(channel_.get(), bytes, max, unused, true);
}

void Link::release()
{
	if (released_ || !owned())
		return;
	send(kRelease, 0); // a guard that is already gone needs no release
	released_ = true;
	channel_.reset();
}

} // namespace amdgpu::guard
