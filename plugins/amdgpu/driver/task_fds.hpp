// SPDX-License-Identifier: GPL-2.0-only
//
// The fd tables the plugin looks into: its own (a task being restored, seen from inside it) and
// those of the tasks criu holds.
#pragma once

#include "support/unique_fd.hpp"

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace amdgpu {

// The lowest fd below `limit` (every fd if limit <= 0), other than `fd` itself, that refers to the
// same open file description as `fd` (a dup of it, or one installed from a dup): kcmp(KCMP_FILE).
std::optional<int> lowest_fd_sharing_file(int fd, int limit);

// True when one of this process's fds is a unix socket connected to the socket bound at `path`
// (criu's connection to the image streamer, for one).
bool has_socket_connected_to(const std::string &path);

// The task, among those this process ptraces (as criu's dumping process ptraces the tasks it
// dumps), whose fd table holds the open file `fd` refers to (criu received it from that task): its
// pid in this process's pid namespace. kcmp(KCMP_FILE) decides; a file held by several traced
// tasks names the first found.
std::optional<pid_t> traced_task_holding(int fd);
// The same, with the lowest number the task holds the file under.
struct TaskFd {
	pid_t pid = 0;
	int fd = -1;
};
std::optional<TaskFd> traced_task_fd(int fd);

// Task `pid`'s pid (criu's pid namespace) in its own pid namespace, the one its restore runs in
// (NSpid in /proc/<pid>/status); `pid` itself where that cannot be read.
pid_t innermost_pid(pid_t pid);

// True when fds `a` and `b` of this process refer to the same open file: kcmp(KCMP_FILE).
bool same_open_file(int a, int b);

// The GPU files in the fd table of task `pid` (criu's pid namespace), which this process may
// ptrace (criu's dumping process, once it froze the task): a copy of each distinct /dev/kfd open
// file (pidfd_getfd(), the same open file the task holds, so KFD's CRIU operations on it act on
// the task's KFD process), and the dma-buf fds, by number, with the inode and size of each
// one's buffer. A task that is gone has none. Throws Error when a /dev/kfd file cannot be taken.
struct TaskDmabufFd {
	int fd = -1; // its number in the task
	uint64_t dev = 0;
	uint64_t ino = 0;
	uint64_t size = 0;
};
struct TaskGpuFiles {
	std::vector<unique_fd> kfd;
	std::vector<TaskDmabufFd> dmabufs;
};
TaskGpuFiles gpu_files_of_task(pid_t pid);

// The start addresses of task `pid`'s mappings of GPU device files (/dev/kfd, render nodes), from
// /proc/<pid>/maps; none when it cannot be read.
std::set<uint64_t> gpu_mappings_of_task(pid_t pid);

// True when `fd` is a dma-buf (its file system is the kernel's dma-buf one).
bool is_dmabuf(int fd);

} // namespace amdgpu
