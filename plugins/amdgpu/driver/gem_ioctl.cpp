// SPDX-License-Identifier: GPL-2.0-only
#include "driver/gem_ioctl.hpp"

#include "driver/kfd_ioctl.hpp"

#include <drm.h>
#include <amdgpu_drm.h>
#include <xf86drm.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>

#include <cerrno>
#include <cstring>

namespace amdgpu::gem {
namespace {

// Linux 6.18's include/uapi/drm/amdgpu_drm.h, field by field.
constexpr unsigned kListHandlesNr = 0x19;
constexpr unsigned kOpGetMappingInfo = 2;

struct ListHandlesArgs {
	uint64_t entries;
	uint32_t num_entries;
	uint32_t padding;
};
static_assert(sizeof(ListHandlesArgs) == 16);

struct ListHandlesEntry {
	uint32_t gem_handle;
	uint32_t flags;
	uint64_t size;
	uint64_t preferred_domains;
	uint64_t alloc_flags;
	uint64_t alignment;
};
static_assert(sizeof(ListHandlesEntry) == 40);

// drm_amdgpu_gem_op as 6.18 extended it: num_entries and a padding that must be 0. An older
// kernel copies in only the first 16 bytes.
struct GemOpArgs {
	uint32_t handle;
	uint32_t op;
	uint64_t value;
	uint32_t num_entries;
	uint32_t padding;
};
static_assert(sizeof(GemOpArgs) == 24);

struct VmEntry {
	uint64_t addr;
	uint64_t size;
	uint64_t offset;
	uint64_t flags;
};
static_assert(sizeof(VmEntry) == 32);

const unsigned long kListHandles = DRM_IOWR(DRM_COMMAND_BASE + kListHandlesNr, ListHandlesArgs);
const unsigned long kGemOp = DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, GemOpArgs);
const unsigned long kGemOpOld = DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, struct drm_amdgpu_gem_op);

// Both ioctls answer an array too small with the number needed and nothing in it; objects added
// in between make another round.
constexpr int kMaxRounds = 8;

} // namespace

int list_handles(int fd, std::vector<Object> &out)
{
	std::vector<ListHandlesEntry> entries;
	out.clear();
	for (int round = 0; round < kMaxRounds; round++) {
		ListHandlesArgs args;
		std::memset(&args, 0, sizeof(args));
		args.entries = reinterpret_cast<uintptr_t>(entries.data());
		args.num_entries = static_cast<uint32_t>(entries.size());
		if (const int ret = kfd::ioctl_retry(fd, kListHandles, &args))
			return ret;
		if (args.num_entries > entries.size()) {
			entries.assign(args.num_entries, ListHandlesEntry {});
			continue;
		}
		for (uint32_t i = 0; i < args.num_entries; i++) {
			const ListHandlesEntry &e = entries[i];
			out.push_back(
				{ e.gem_handle, e.flags, e.size, e.preferred_domains, e.alloc_flags, e.alignment });
		}
		return 0;
	}
	return -EAGAIN;
}

int mapping_info(int fd, uint32_t handle, std::vector<Mapping> &out)
{
	std::vector<VmEntry> entries;
	out.clear();
	for (int round = 0; round < kMaxRounds; round++) {
		GemOpArgs args;
		std::memset(&args, 0, sizeof(args));
		args.handle = handle;
		args.op = kOpGetMappingInfo;
		args.value = reinterpret_cast<uintptr_t>(entries.data());
		args.num_entries = static_cast<uint32_t>(entries.size());
		if (const int ret = kfd::ioctl_retry(fd, kGemOp, &args))
			return ret;
		if (args.num_entries > entries.size()) {
			entries.assign(args.num_entries, VmEntry {});
			continue;
		}
		for (uint32_t i = 0; i < args.num_entries; i++)
			out.push_back({ entries[i].addr, entries[i].size, entries[i].offset, entries[i].flags });
		return 0;
	}
	return -EAGAIN;
}

int create_info(int fd, uint32_t handle, Object &out)
{
	drm_amdgpu_gem_create_in info;
	std::memset(&info, 0, sizeof(info));
	drm_amdgpu_gem_op args;
	std::memset(&args, 0, sizeof(args));
	args.handle = handle;
	args.op = AMDGPU_GEM_OP_GET_GEM_CREATE_INFO;
	args.value = reinterpret_cast<uintptr_t>(&info);
	if (const int ret = kfd::ioctl_retry(fd, kGemOpOld, &args))
		return ret;
	// GET_GEM_CREATE_INFO gives the alignment in bytes; LIST_HANDLES, and Object, in the kernel's pages
	out = { handle,
		0,
		info.bo_size,
		info.domains,
		info.domain_flags,
		(info.alignment + kKernelPage - 1) / kKernelPage };
	return 0;
}

int export_dmabuf(int fd, uint32_t handle)
{
	int out = -1;
	if (drmPrimeHandleToFD(fd, handle, DRM_CLOEXEC | DRM_RDWR, &out))
		return -errno;
	return out;
}

int mmap_offset(int fd, uint32_t handle, uint64_t &offset)
{
	drm_amdgpu_gem_mmap args;
	std::memset(&args, 0, sizeof(args));
	args.in.handle = handle;
	if (const int ret = kfd::ioctl_retry(fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &args))
		return ret;
	offset = args.out.addr_ptr;
	return 0;
}

int wait_idle(int fd, uint32_t handle, uint64_t timeout_ns)
{
	// the kernel takes an absolute CLOCK_MONOTONIC deadline, as libdrm computes it
	timespec now = {};
	clock_gettime(CLOCK_MONOTONIC, &now);
	drm_amdgpu_gem_wait_idle args;
	std::memset(&args, 0, sizeof(args));
	args.in.handle = handle;
	args.in.timeout =
		static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec) + timeout_ns;
	if (const int ret = kfd::ioctl_retry(fd, DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE, &args))
		return ret;
	return args.out.status ? -ETIME : 0;
}

int create(int fd, const Object &o, uint32_t &handle)
{
	drm_amdgpu_gem_create args;
	std::memset(&args, 0, sizeof(args));
	args.in.bo_size = o.size;
	args.in.alignment = o.alignment_pages * kKernelPage;
	args.in.domains = o.preferred_domains;
	args.in.domain_flags = o.alloc_flags;
	if (const int ret = kfd::ioctl_retry(fd, DRM_IOCTL_AMDGPU_GEM_CREATE, &args))
		return ret;
	handle = args.out.handle;
	return 0;
}

int map_va(int fd, uint32_t handle, const Mapping &m)
{
	drm_amdgpu_gem_va args;
	std::memset(&args, 0, sizeof(args));
	args.handle = handle;
	args.operation = AMDGPU_VA_OP_MAP;
	args.flags = static_cast<uint32_t>(m.flags);
	args.va_address = sign_extended(m.addr);
	args.offset_in_bo = m.offset;
	args.map_size = m.size;
	return kfd::ioctl_retry(fd, DRM_IOCTL_AMDGPU_GEM_VA, &args);
}

int import_dmabuf(int fd, int dmabuf_fd, uint32_t &handle)
{
	if (drmPrimeFDToHandle(fd, dmabuf_fd, &handle))
		return -errno;
	return 0;
}

int close_handle(int fd, uint32_t handle)
{
	drm_gem_close args;
	std::memset(&args, 0, sizeof(args));
	args.handle = handle;
	return kfd::ioctl_retry(fd, DRM_IOCTL_GEM_CLOSE, &args);
}

int write_object(int fd, uint32_t handle, std::span<const uint8_t> bytes)
{
	uint64_t offset = 0;
	if (const int ret = mmap_offset(fd, handle, offset))
		return ret;
	void *p = mmap(nullptr, bytes.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
	if (p == MAP_FAILED)
		return -errno;
	std::memcpy(p, bytes.data(), bytes.size());
	munmap(p, bytes.size());
	return 0;
}

int probe_handles(int fd, std::vector<Object> &out, uint32_t free_run)
{
	out.clear();
	uint32_t free_in_a_row = 0;
	for (uint32_t handle = 1; free_in_a_row < free_run; handle++) {
		Object o;
		const int ret = create_info(fd, handle, o);
		if (ret == -ENOENT) {
			free_in_a_row++;
			continue;
		}
		if (ret)
			return ret;
		free_in_a_row = 0;
		out.push_back(o);
	}
	return 0;
}

} // namespace amdgpu::gem
