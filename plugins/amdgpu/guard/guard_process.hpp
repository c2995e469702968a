// SPDX-License-Identifier: GPL-2.0-only
//
// What a guard is made of: a small process the plugin leaves beside criu to act if criu dies in
// the middle of the plugin's work (SIGKILL from the OOM killer, a runtime's timeout, an operator).
// criu's log dies with criu and its hooks never run again, so the guard is the only one left who
// knows that a task's GPU queues are paused (dump_guard.hpp) or that a task is half-restored
// (restore_guard.hpp).
//
// A guard is no child of criu: criu waits for any child it has (criu/seize.c pstree_wait() ends
// with wait4(-1, __WALL) and calls an unexpected child a BUG) and its dump SIGCHLD handler exits
// on an unknown child's death. So the plugin forks an intermediate process with no exit signal,
// which forks the guard and exits; the plugin reaps the intermediate at once. The guard runs in a
// session of its own (Ctrl-C on criu's terminal does not reach it) and holds nothing of criu but
// the descriptors it is given: a runtime that waits for criu's sockets to close is not held up.
// The plugin starts guards only from criu's single thread.
//
// A guard notices criu's death through a pidfd, which becomes readable once criu has fully exited,
// that is after the kernel detached criu's ptrace from the tasks it held.
//
// What a guard did goes to the kernel log (dmesg, with the "amdgpu_plugin: guard: " prefix) and
// to amdgpu-plugin-guard.log in the image directory.
#pragma once

#include "support/unique_fd.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace amdgpu::guard {

inline constexpr const char *kLogName = "amdgpu-plugin-guard.log";

// Runs body(ctx) in a new guard process and returns the guard's pid. In the guard, keep[i] is fd
// 3 + i; every other fd is closed and stdin/out/err are /dev/null; signals are at their defaults.
// body's return value is the guard's exit status. Throws Error if the guard cannot be made.
pid_t spawn(std::span<const int> keep, int (*body)(void *ctx), void *ctx);

// The guard's own log: one line to the kernel log and to kLogName under `image_dir` (when it is
// not -1), each with criu's pid. Never fails: a guard has nobody to report to.
class Journal {
public:
	Journal(int image_dir, pid_t criu_pid) : image_dir_(image_dir), criu_pid_(criu_pid) {}
	void line(const char *fmt, ...) const __attribute__((format(printf, 2, 3)));

private:
	int image_dir_;
	pid_t criu_pid_;
};

unique_fd pidfd_open(pid_t pid);
// 0 or -errno.
int pidfd_send_signal(int pidfd, int sig);
// The pid a pidfd refers to, in this process's pid namespace (its fdinfo), if it still runs.
std::optional<pid_t> pidfd_pid(int pidfd);
// Waits up to `timeout_ms` for the process to exit; true once it has.
bool pidfd_wait_exit(int pidfd, int timeout_ms);
// pidfds of the processes `pid` forked and of theirs, deepest first, each opened while its parent
// was still the process it came from (so never a reused number). Empty when `pid` has none, or
// the kernel does not list children (/proc/PID/task/TID/children).
std::vector<unique_fd> descendants(pid_t pid);

// One record between the plugin and its guard: a kind, a pid, a value, and at most one fd
// alongside.
struct Message {
	uint32_t kind = 0;
	int32_t pid = 0;
	uint32_t value = 0;
};

// The kind every guard takes as "criu's work is done: exit doing nothing".
inline constexpr uint32_t kRelease = 0xff;

// criu's end of the channel to its guard. Only the process that started the guard speaks on it:
// criu's forked helpers inherit a copy (closed with them, nothing said), and in a task criu
// restores the number means nothing any more (criu closed it), so it is never closed there.
class Link {
public:
	Link(unique_fd channel, pid_t guard_pid) : channel_(std::move(channel)), owner_(getpid()), guard_pid_(guard_pid)
	{
	}
	~Link();
	Link(const Link &) = delete;
	Link &operator=(const Link &) = delete;

	bool owned() const { return getpid() == owner_; }
	pid_t guard_pid() const { return guard_pid_; }
	// 0 or -errno; nothing is sent from another process or after release().
	int send(uint32_t kind, pid_t pid, int fd = -1) const;
	// Sends kRelease once, from the owner.
	void release();
	// Waits for the guard's next record (receive_record()); -ESHUTDOWN from another process.
	int receive(std::vector<uint8_t> &bytes, size_t max) const;
	// In a restored task: lets go of the number without closing it.
	void abandon() { channel_.release(); }

private:
	unique_fd channel_;
	pid_t owner_;
	pid_t guard_pid_;
	bool released_ = false;
};

// 0 or -errno (never SIGPIPE).
int send_message(int sock, const Message &m, int fd = -1);
// One record of any size up to the socket's limit, with up to kMaxFds fds alongside.
inline constexpr size_t kMaxFds = 250; // below the kernel's 253 per message
int send_record(int sock, std::span<const uint8_t> bytes, std::span<const int> fds = {});
// > 0: the record's size, its fds appended to `fds`; 0: the peer is gone; -errno otherwise
// (-EAGAIN when `wait` is false and nothing is queued, -EMSGSIZE for a record over `max` bytes).
int receive_record(int sock, std::vector<uint8_t> &bytes, size_t max, std::vector<unique_fd> &fds, bool wait);
// > 0: a message (with its fd, if one came); 0: the peer is gone; -errno otherwise (-EAGAIN when
// `wait` is false and nothing is queued).
int receive_message(int sock, Message &m, unique_fd &fd, bool wait);

} // namespace amdgpu::guard
