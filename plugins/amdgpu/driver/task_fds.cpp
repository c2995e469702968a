// SPDX-License-Identifier: GPL-2.0-only
#include "driver/task_fds.hpp"

#include "driver/device_files.hpp"
#include "support/error.hpp"

#include <dirent.h>
#include <linux/kcmp.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
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

// The pid that ptraces `pid` (0 for none), from /proc/<pid>/status.
pid_t tracer_of(pid_t pid)
{
	const std::string path = "/proc/" + std::to_string(pid) + "/status";
	std::unique_ptr<FILE, int (*)(FILE *)> f(fopen(path.c_str(), "re"), fclose);
	if (!f)
		return 0;
	char line[256];
	while (fgets(line, sizeof(line), f.get())) {
		int tracer;
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			return tracer;
	}
	return 0;
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

namespace {

// The lowest descriptor task `pid` has on the same open file as our `fd` (of device `mine`).
std::optional<int> task_fd_of_file(pid_t pid, int fd, const struct stat &mine)
{
	const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
	std::unique_ptr<DIR, int (*)(DIR *)> fds(opendir(fd_dir.c_str()), closedir);
	if (!fds)
		return std::nullopt;
	std::optional<int> lowest;
	while (const dirent *f = readdir(fds.get())) {
		char *end;
		const long n = strtol(f->d_name, &end, 10);
		struct stat st;
		if (*end || end == f->d_name || stat((fd_dir + "/" + f->d_name).c_str(), &st) ||
		    st.st_rdev != mine.st_rdev || st.st_ino != mine.st_ino)
			continue;
		if (syscall(SYS_kcmp, getpid(), pid, KCMP_FILE, fd, n) == 0 && (!lowest || n < *lowest))
			lowest = static_cast<int>(n);
	}
	return lowest;
}

} // namespace

std::optional<pid_t> traced_task_holding(int fd)
{
	const std::optional<TaskFd> held = traced_task_fd(fd);
	return held ? std::optional<pid_t>(held->pid) : std::nullopt;
}

std::optional<TaskFd> traced_task_fd(int fd)
{
	struct stat mine;
	if (fstat(fd, &mine))
		return std::nullopt;
	std::unique_ptr<DIR, int (*)(DIR *)> proc(opendir("/proc"), closedir);
	if (!proc)
		return std::nullopt;
	while (const dirent *de = readdir(proc.get())) {
		char *end;
		const long pid = strtol(de->d_name, &end, 10);
		if (*end || end == de->d_name || pid <= 0)
			continue;
		if (tracer_of(static_cast<pid_t>(pid)) != getpid())
			continue;
		if (const std::optional<int> n = task_fd_of_file(static_cast<pid_t>(pid), fd, mine))
			return TaskFd { static_cast<pid_t>(pid), *n };
	}
	return std::nullopt;
}

pid_t innermost_pid(pid_t pid)
{
	std::ifstream status("/proc/" + std::to_string(pid) + "/status");
	std::string line;
	while (std::getline(status, line)) {
		if (line.rfind("NSpid:", 0) != 0)
			continue;
		std::istringstream fields(line.substr(6));
		pid_t last = pid;
		for (pid_t p; fields >> p;)
			last = p;
		return last;
	}
	return pid;
}

bool same_open_file(int a, int b)
{
	const pid_t self = getpid();
	return syscall(SYS_kcmp, self, self, KCMP_FILE, a, b) == 0;
}

namespace {

#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC 0x444d4142 // "DMAB": the dma-buf file system's magic (linux/magic.h)
#endif

bool on_dmabuf_fs(const struct statfs &sfs)
{
	return static_cast<unsigned long>(sfs.f_type) == DMA_BUF_MAGIC;
}

} // namespace

bool is_dmabuf(int fd)
{
	struct statfs sfs;
	return fstatfs(fd, &sfs) == 0 && on_dmabuf_fs(sfs);
}

TaskGpuFiles gpu_files_of_task(pid_t pid)
{
	TaskGpuFiles files;
	const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
	std::unique_ptr<DIR, int (*)(DIR *)> fds(opendir(fd_dir.c_str()), closedir);
	if (!fds)
		return files;
	unique_fd pidfd;
	while (const dirent *f = readdir(fds.get())) {
		char *end;
		const long n = strtol(f->d_name, &end, 10);
		if (*end || end == f->d_name)
			continue;
		const std::string path = fd_dir + "/" + f->d_name;
		struct stat st;
		if (stat(path.c_str(), &st))
			continue;
		if (classify_device(st) == GpuFileKind::kfd) {
			if (!pidfd)
				pidfd = unique_fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
			if (!pidfd)
				fail_errno(errno, "cannot open a pidfd of pid %d to take its /dev/kfd file",
					   static_cast<int>(pid));
			unique_fd copy(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), static_cast<int>(n), 0)));
			if (!copy)
				fail_errno(errno, "cannot take /dev/kfd (fd %ld) of pid %d", n, static_cast<int>(pid));
			bool seen = false;
			for (const unique_fd &k : files.kfd)
				seen = seen || same_open_file(k.get(), copy.get());
			if (!seen)
				files.kfd.push_back(std::move(copy));
			continue;
		}
		struct statfs sfs;
		if (!S_ISCHR(st.st_mode) && statfs(path.c_str(), &sfs) == 0 && on_dmabuf_fs(sfs))
			files.dmabufs.push_back({ static_cast<int>(n), static_cast<uint64_t>(st.st_dev),
						  static_cast<uint64_t>(st.st_ino),
						  static_cast<uint64_t>(st.st_size) });
	}
	return files;
}

std::set<uint64_t> gpu_mappings_of_task(pid_t pid)
{
	std::set<uint64_t> starts;
	const std::string path = "/proc/" + std::to_string(pid) + "/maps";
	std::unique_ptr<FILE, int (*)(FILE *)> f(fopen(path.c_str(), "re"), fclose);
	if (!f)
		return starts;
	char line[PATH_MAX + 256];
	while (fgets(line, sizeof(line), f.get())) {
		unsigned long long start;
		char file[PATH_MAX + 1] = "";
		if (sscanf(line, "%llx-%*x %*s %*x %*s %*u %4096s", &start, file) != 2)
			continue;
		const std::string_view name(file);
		if (name.ends_with("/dev/kfd") || name.find("/dev/dri/renderD") != std::string_view::npos)
			starts.insert(start);
	}
	return starts;
}

} // namespace amdgpu
