// SPDX-License-Identifier: GPL-2.0-only
#include "driver/cs_ioctl.hpp"

#include "driver/kfd_ioctl.hpp"

#include <drm.h>
#include <amdgpu_drm.h>

#include <time.h>

#include <cerrno>
#include <cstring>

namespace amdgpu::cs {
namespace {

uint64_t deadline(uint64_t timeout_ns)
{
	// the kernel takes an absolute CLOCK_MONOTONIC deadline; 0 asks without waiting
	if (!timeout_ns)
		return 0;
	timespec now = {};
	clock_gettime(CLOCK_MONOTONIC, &now);
	return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec) + timeout_ns;
}

int wait_cs(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq, uint64_t timeout_ns, bool &busy)
{
	drm_amdgpu_wait_cs args;
	std::memset(&args, 0, sizeof(args));
	args.in.handle = seq;
	args.in.timeout = deadline(timeout_ns);
	args.in.ip_type = ip_type;
	args.in.ring = ring;
	args.in.ctx_id = ctx;
	if (const int ret = kfd::ioctl_retry(fd, DRM_IOCTL_AMDGPU_WAIT_CS, &args))
		return ret;
	busy = args.out.status != 0;
	return 0;
}

int ctx_op(int fd, uint32_t op, uint32_t id, drm_amdgpu_ctx &args)
{
	std::memset(&args, 0, sizeof(args));
	args.in.op = op;
	args.in.ctx_id = id;
	args.in.priority = AMDGPU_CTX_PRIORITY_UNSET;
	return kfd::ioctl_retry(fd, DRM_IOCTL_AMDGPU_CTX, &args);
}

} // namespace

int context_flags(int fd, uint32_t id, uint64_t &flags)
{
	drm_amdgpu_ctx args;
	if (const int ret = ctx_op(fd, AMDGPU_CTX_OP_QUERY_STATE2, id, args))
		return ret;
	flags = args.out.state.flags;
	return 0;
}

int alloc_context(int fd, uint32_t &id)
{
	drm_amdgpu_ctx args;
	if (const int ret = ctx_op(fd, AMDGPU_CTX_OP_ALLOC_CTX, 0, args))
		return ret;
	id = args.out.alloc.ctx_id;
	return 0;
}

int free_context(int fd, uint32_t id)
{
	drm_amdgpu_ctx args;
	return ctx_op(fd, AMDGPU_CTX_OP_FREE_CTX, id, args);
}

int available_rings(int fd, uint32_t ip_type, uint32_t &rings)
{
	drm_amdgpu_info_hw_ip ip;
	std::memset(&ip, 0, sizeof(ip));
	drm_amdgpu_info args;
	std::memset(&args, 0, sizeof(args));
	args.return_pointer = reinterpret_cast<uintptr_t>(&ip);
	args.return_size = sizeof(ip);
	args.query = AMDGPU_INFO_HW_IP_INFO;
	args.query_hw_ip.type = ip_type;
	if (const int ret = kfd::ioctl_retry(fd, DRM_IOCTL_AMDGPU_INFO, &args))
		return ret;
	rings = ip.available_rings;
	return 0;
}

int fence_known(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq)
{
	bool busy = false;
	return wait_cs(fd, ctx, ip_type, ring, seq, 0, busy);
}

int wait_fence(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq, uint64_t timeout_ns)
{
	bool busy = false;
	if (const int ret = wait_cs(fd, ctx, ip_type, ring, seq, timeout_ns, busy))
		return ret;
	return busy ? -ETIME : 0;
}

int submit(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint32_t ib_handle, uint64_t ib_va, uint32_t ib_bytes,
	   uint64_t &seq)
{
	drm_amdgpu_bo_list_entry bo = {};
	bo.bo_handle = ib_handle;
	drm_amdgpu_bo_list_in list = {};
	list.bo_number = 1;
	list.bo_info_size = sizeof(bo);
	list.bo_info_ptr = reinterpret_cast<uintptr_t>(&bo);
	drm_amdgpu_cs_chunk_ib ib = {};
	ib.ip_type = ip_type;
	ib.ring = ring;
	ib.va_start = ib_va;
	ib.ib_bytes = ib_bytes;
	drm_amdgpu_cs_chunk chunks[2] = {};
	chunks[0].chunk_id = AMDGPU_CHUNK_ID_BO_HANDLES;
	chunks[0].length_dw = sizeof(list) / 4;
	chunks[0].chunk_data = reinterpret_cast<uintptr_t>(&list);
	chunks[1].chunk_id = AMDGPU_CHUNK_ID_IB;
	chunks[1].length_dw = sizeof(ib) / 4;
	chunks[1].chunk_data = reinterpret_cast<uintptr_t>(&ib);
	uint64_t chunk_ptrs[2] = { reinterpret_cast<uintptr_t>(&chunks[0]), reinterpret_cast<uintptr_t>(&chunks[1]) };
	drm_amdgpu_cs args;
	std::memset(&args, 0, sizeof(args));
	args.in.ctx_id = ctx;
	args.in.num_chunks = 2;
	args.in.chunks = reinterpret_cast<uintptr_t>(chunk_ptrs);
	if (const int ret = kfd::ioctl_retry(fd, DRM_IOCTL_AMDGPU_CS, &args))
		return ret;
	seq = args.out.handle;
	return 0;
}

} // namespace amdgpu::cs
