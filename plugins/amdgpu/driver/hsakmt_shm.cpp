// SPDX-License-Identifier: GPL-2.0-only
#include "driver/hsakmt_shm.hpp"

#include "support/error.hpp"
#include "support/log.hpp"
#include "support/unique_fd.hpp"

#include <fcntl.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace amdgpu {

HsakmtShm probe_hsakmt_shm()
{
	HsakmtShm shm;
	unique_fd fd(shm_open(kHsakmtShmName, O_RDONLY | O_CLOEXEC, 0));
	if (!fd) {
		if (errno == ENOENT)
			return shm;
		fail_errno(errno, "cannot open libhsakmt shared memory /dev/shm%s", kHsakmtShmName);
	}
	struct stat st;
	if (fstat(fd.get(), &st))
		fail_errno(errno, "cannot stat /dev/shm%s", kHsakmtShmName);
	shm.size = static_cast<uint64_t>(st.st_size);
	if (shm.size >= sizeof(shm.magic) && pread(fd.get(), &shm.magic, sizeof(shm.magic), 0) != sizeof(shm.magic))
		fail_errno(errno, "cannot read the magic of /dev/shm%s", kHsakmtShmName);
	return shm;
}

void recreate_hsakmt_shm(const HsakmtShm &shm)
{
	if (!shm.size)
		return;
	unique_fd fd(shm_open(kHsakmtShmName, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0666));
	if (fd) {
		if (ftruncate(fd.get(), static_cast<off_t>(shm.size)))
			fail_errno(errno, "cannot size /dev/shm%s to %llu bytes", kHsakmtShmName,
				   static_cast<unsigned long long>(shm.size));
		if (shm.size >= sizeof(shm.magic) &&
		    pwrite(fd.get(), &shm.magic, sizeof(shm.magic), 0) != sizeof(shm.magic))
			fail_errno(errno, "cannot write the magic of /dev/shm%s", kHsakmtShmName);
		pr_info("recreated /dev/shm%s (%llu bytes); libhsakmt performance-counter state starts afresh",
			kHsakmtShmName, static_cast<unsigned long long>(shm.size));
	} else if (errno != EEXIST) {
		fail_errno(errno, "cannot create /dev/shm%s", kHsakmtShmName);
	}

	sem_t *sem = sem_open(kHsakmtSemName, O_CREAT, 0666, 1);
	if (sem == SEM_FAILED)
		fail_errno(errno, "cannot create semaphore /dev/shm/sem.%s", kHsakmtSemName);
	sem_close(sem);
}

} // namespace amdgpu
