// SPDX-License-Identifier: GPL-2.0-only
//
// What the kernel keeps of a file in its page cache, for tests of how the images use it.
#pragma once

#include "support/unique_fd.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <vector>

namespace amdgpu::test {

// Bytes of the file `name` in `dirfd` that are in the page cache (whole pages).
inline size_t cached_bytes(int dirfd, const std::string &name)
{
	struct stat st {};
	const unique_fd fd(openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd || fstat(fd.get(), &st) || !st.st_size)
		return 0;
	const size_t bytes = static_cast<size_t>(st.st_size);
	void *map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
	if (map == MAP_FAILED)
		return 0;
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	std::vector<unsigned char> resident((bytes + page - 1) / page);
	mincore(map, bytes, resident.data());
	munmap(map, bytes);
	size_t n = 0;
	for (unsigned char r : resident)
		n += r & 1;
	return n * page;
}

// Whether `dirfd` is on tmpfs, whose pages are the files themselves and never leave.
inline bool on_tmpfs(int dirfd)
{
	struct statfs fs {};
	return fstatfs(dirfd, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

} // namespace amdgpu::test
