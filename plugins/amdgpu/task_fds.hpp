// SPDX-License-Identifier: GPL-2.0-only
//
// The fd tables the plugin looks into: its own (a task being restored, seen from inside it) and
// those of the tasks criu holds.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

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

} // namespace amdgpu
