// SPDX-License-Identifier: GPL-2.0-only
//
// Thin typed wrappers around the render-node ioctls that show which GEM buffer objects a DRM file
// holds. A render-node file (an open /dev/dri/renderD*) is one DRM file with a table of GEM
// handles, 1 and up, each allocated as the lowest one free; every fd of the file (criu's copy of a
// task's fd included) sees the same table.
//
// Linux 6.18 added two ioctls to read that table for checkpointing (the system's libdrm headers
// predate them, so their layouts are spelled out here, from the kernel's uapi header):
//   DRM_IOCTL_AMDGPU_GEM_LIST_HANDLES: every object of the file in handle order, with its size,
//     domains, creation flags and alignment (in pages); an array too small gets only their number;
//   AMDGPU_GEM_OP_GET_MAPPING_INFO: the VA mappings of one object in the file's GPU VM.
// An older kernel answers both with EINVAL. There, GEM_OP's GET_GEM_CREATE_INFO, as old as the
// driver, still tells whether a handle names an object (ENOENT when it does not).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace amdgpu::gem {

struct Object {
	uint32_t handle = 0;
	uint32_t flags = 0;		// kListImported
	uint64_t size = 0;		// bytes
	uint64_t preferred_domains = 0; // AMDGPU_GEM_DOMAIN_*
	uint64_t alloc_flags = 0;	// AMDGPU_GEM_CREATE_* the object can be created with again
	uint64_t alignment_pages = 0;	// LIST_HANDLES gives pages; GET_GEM_CREATE_INFO bytes, converted
};

// An object made from another device's dma-buf (one of the same GPU is that GPU's own object).
inline constexpr uint32_t kListImported = 1u << 0;

// GEM_VA strips the sign extension of an address in the upper half of the VM (bits 63..48 copies
// of bit 47), MAPPING_INFO gives it back so, and GEM_VA refuses it so: it lies in the hole.
inline constexpr uint64_t kVaHoleStart = 1ull << 47;
inline constexpr uint64_t sign_extended(uint64_t va)
{
	return va >= kVaHoleStart && va < (1ull << 48) ? va | ~((1ull << 48) - 1) : va;
}

// The size of the pages the kernel counts alignments in (x86-64's).
inline constexpr uint64_t kKernelPage = 4096;

struct Mapping {
	uint64_t addr = 0; // GPU VA, without the sign extension of the upper half
	uint64_t size = 0;
	uint64_t offset = 0; // in the object
	uint64_t flags = 0;  // AMDGPU_VM_PAGE_* and MTYPE bits, as they were mapped
};

// DRM_IOCTL_AMDGPU_GEM_LIST_HANDLES: 0 and every object of the file; -EINVAL on a kernel before
// 6.18.
int list_handles(int fd, std::vector<Object> &out);

// AMDGPU_GEM_OP_GET_MAPPING_INFO: 0 and the mappings of `handle`; -EINVAL before 6.18, -ENOENT for a
// handle that names nothing.
int mapping_info(int fd, uint32_t handle, std::vector<Mapping> &out);

// AMDGPU_GEM_OP_GET_GEM_CREATE_INFO: 0 and what `handle` was created with (flags 0); -ENOENT for a
// handle that names nothing.
int create_info(int fd, uint32_t handle, Object &out);

// PRIME_HANDLE_TO_FD: a new close-on-exec fd of the dma-buf of `handle` (the one the kernel keeps
// for the object, when it exported it before), or a negative errno.
int export_dmabuf(int fd, uint32_t handle);

// GEM_MMAP: the offset at which the file's mmap() maps `handle`.
int mmap_offset(int fd, uint32_t handle, uint64_t &offset);

// GEM_WAIT_IDLE: 0 once the GPU work that uses `handle` is done, -ETIME if it is not within
// `timeout_ns`.
int wait_idle(int fd, uint32_t handle, uint64_t timeout_ns);

// GEM_CREATE of an object like `o` (size, domains, creation flags, alignment); its new handle.
int create(int fd, const Object &o, uint32_t &handle);

// GEM_VA MAP of `m` (its address sign-extended) for `handle`.
int map_va(int fd, uint32_t handle, const Mapping &m);

// PRIME_FD_TO_HANDLE: the handle of `dmabuf_fd` in the file (an existing one when the file has
// it already).
int import_dmabuf(int fd, int dmabuf_fd, uint32_t &handle);

// GEM_CLOSE.
int close_handle(int fd, uint32_t handle);

// Writes `bytes` at the start of the object through a CPU mapping of it (GEM_MMAP, mmap).
int write_object(int fd, uint32_t handle, std::span<const uint8_t> bytes);

// The objects of a file on a kernel without LIST_HANDLES, found by asking GET_GEM_CREATE_INFO for
// handles 1, 2, ... until `free_run` handles in a row name nothing. Handles are allocated lowest
// first, so this misses only objects above `free_run` freed handles in a row.
inline constexpr uint32_t kProbeFreeRun = 64;
int probe_handles(int fd, std::vector<Object> &out, uint32_t free_run = kProbeFreeRun);

} // namespace amdgpu::gem
