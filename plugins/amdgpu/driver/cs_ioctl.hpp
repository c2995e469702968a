// SPDX-License-Identifier: GPL-2.0-only
//
// Thin typed wrappers around the render-node ioctls of command submission: contexts, the rings a
// GPU has, fences and submissions. A render-node file holds a table of contexts (AMDGPU_CTX),
// 1 and up, each allocated as the lowest id free, as its GEM handles are; a context has, per ring
// it submitted to, a fence sequence: the n-th submission there is fence n, and WAIT_CS refuses
// (EINVAL) a fence the ring has not reached. No ioctl lists the contexts or tells a sequence, but
// both can be asked for one by one, without changing anything the task would notice.
#pragma once

#include <cstdint>

namespace amdgpu::cs {

// AMDGPU_CTX_OP_QUERY_STATE2: 0 and its AMDGPU_CTX_QUERY2_FLAGS_*, -EINVAL for an id that
// names no context.
int context_flags(int fd, uint32_t id, uint64_t &flags);
int alloc_context(int fd, uint32_t &id);
int free_context(int fd, uint32_t id);

// AMDGPU_INFO HW_IP_INFO: the rings of an engine type (AMDGPU_HW_IP_*), instance 0, as a mask.
int available_rings(int fd, uint32_t ip_type, uint32_t &rings);

// WAIT_CS of fence `seq` without waiting: 0 (done or not), -EINVAL when the ring of the context
// has not reached it (or the ring is no ring of the GPU).
int fence_known(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq);
// WAIT_CS up to `timeout_ns`: 0 once fence `seq` is done, -ETIME if it is not.
int wait_fence(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq, uint64_t timeout_ns);

// CS of one indirect buffer at GPU address `ib_va` (`ib_bytes`), on a ring of a context, with
// the GEM object holding it as the submission's only buffer; its fence.
int submit(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint32_t ib_handle, uint64_t ib_va, uint32_t ib_bytes,
	   uint64_t &seq);

} // namespace amdgpu::cs
