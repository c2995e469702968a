// SPDX-License-Identifier: GPL-2.0-only
//
// The fd table of the process the plugin runs in (a task being restored), seen from inside it.
#pragma once

#include <optional>
#include <string>

namespace amdgpu {

// The lowest fd below `limit` (every fd if limit <= 0), other than `fd` itself, that refers to the
// same open file description as `fd` (a dup of it, or one installed from a dup): kcmp(KCMP_FILE).
std::optional<int> lowest_fd_sharing_file(int fd, int limit);

// True when one of this process's fds is a unix socket connected to the socket bound at `path`
// (criu's connection to the image streamer, for one).
bool has_socket_connected_to(const std::string &path);

} // namespace amdgpu
