// SPDX-License-Identifier: GPL-2.0-only
//
// libhsakmt's cross-process bookkeeping in /dev/shm: the shared memory "hsakmt_shared_mem" and the
// semaphore "hsakmt_semaphore". A process restored on a node where they do not exist would find
// its mapping of the shared memory gone; the plugin records the size and magic at dump and
// recreates both at restore (the contents past the magic are performance-counter bookkeeping
// that is not preserved).
#pragma once

#include <cstdint>

namespace amdgpu {

inline constexpr const char *kHsakmtShmName = "/hsakmt_shared_mem";
inline constexpr const char *kHsakmtSemName = "hsakmt_semaphore";

struct HsakmtShm {
	uint64_t size = 0; // 0: the file does not exist
	uint32_t magic = 0;
};

// Reads the size and first four bytes of /dev/shm/hsakmt_shared_mem as criu sees it.
HsakmtShm probe_hsakmt_shm();

// Creates the shared memory (if missing) with `shm.size` bytes and the magic, and the semaphore.
// Nothing is done when shm.size is 0.
void recreate_hsakmt_shm(const HsakmtShm &shm);

} // namespace amdgpu
