// SPDX-License-Identifier: GPL-2.0-only
#include "task_fds.hpp"

#include "error.hpp"

#include <dirent.h>
#include <linux/kcmp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <memory>

namespace amdgpu {

namespace {

// Calls fn(fd) for every fd of this process but the listing's own; stops when fn returns true.
template <typename Fn> bool any_fd(Fn &&fn)
{
	std::unique_ptr<DIR, int (*)(DIR *)> dir(opendir("/proc/self/fd"), closedir);
	if (!dir)
		fail_errno(errno, "cannot list /proc/self/fd");
	while (const dirent *de = readdir(dir.get())) {
		char *end;
		const long n = strtol(de->d_name, &end, 10);
		if (*end || end == de->d_name || n == dirfd(dir.get()))
			continue;
		if (fn(static_cast<int>(n)))
			return true;
	}
	return false;
}

} // namespace

bool has_socket_connected_to(const std::string &path)
{
	return any_fd([&](int fd) {
		struct stat st;
		if (fstat(fd, &st) || !S_ISSOCK(st.st_mode))
			return false;
		sockaddr_un peer = {};
		socklen_t len = sizeof(peer);
		if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &len) || peer.sun_family != AF_UNIX ||
		    len <= offsetof(sockaddr_un, sun_path))
			return false;
		const size_t n = strnlen(peer.sun_path, len - offsetof(sockaddr_un, sun_path));
		return path == std::string_view(peer.sun_path, n);
	});
}

std::optional<int> lowest_fd_sharing_file(int fd, int limit)
{
	const pid_t self = getpid();
	std::optional<int> lowest;
	any_fd([&](int n) {
		if (n == fd || (limit > 0 && n >= limit) || (lowest && n > *lowest))
			return false;
		if (syscall(SYS_kcmp, self, self, KCMP_FILE, fd, n) == 0)
			lowest = n;
		return false;
	});
	return lowest;
}

} // namespace amdgpu
