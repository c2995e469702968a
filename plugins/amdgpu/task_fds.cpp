// SPDX-License-Identifier: GPL-2.0-only
#include "task_fds.hpp"

#include "error.hpp"

#include <dirent.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

namespace amdgpu {

std::optional<int> lowest_fd_sharing_file(int fd, int limit)
{
	std::unique_ptr<DIR, int (*)(DIR *)> dir(opendir("/proc/self/fd"), closedir);
	if (!dir)
		fail_errno(errno, "cannot list /proc/self/fd");
	const pid_t self = getpid();
	std::optional<int> lowest;
	while (const dirent *de = readdir(dir.get())) {
		char *end;
		const long n = strtol(de->d_name, &end, 10);
		if (*end || end == de->d_name || n == fd || n == dirfd(dir.get()) || (limit > 0 && n >= limit))
			continue;
		if (lowest && n > *lowest)
			continue;
		if (syscall(SYS_kcmp, self, self, KCMP_FILE, fd, n) == 0)
			lowest = static_cast<int>(n);
	}
	return lowest;
}

} // namespace amdgpu
