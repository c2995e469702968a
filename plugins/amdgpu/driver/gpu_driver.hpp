// SPDX-License-Identifier: GPL-2.0-only
//
// What the dump and restore sessions ask of the kernel: to open the GPU device files (/dev/kfd,
// the render nodes) and KFD's CRIU operations on them. The sessions hold it by reference, so that
// their every step, and every failure of a step, can be walked on a host without a GPU; the
// production driver is the libc open() and the typed ioctl wrappers of kfd_ioctl.hpp.
//
// Every call returns what the wrapper returns: an fd or 0 on success, a negative errno on failure.
// No call logs or throws: the session decides what a failure means.
#pragma once

#include "driver/gem_ioctl.hpp"
#include "driver/kfd_ioctl.hpp"

#include <sys/types.h>

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

// A dma-buf: the inode of its file. Every fd of one buffer's dma-buf, in any process, names the
// same one (sessions/shared_buffers.hpp tells shared GPU memory by it).
struct BufferKey {
	uint64_t dev = 0;
	uint64_t ino = 0;
	auto operator<=>(const BufferKey &) const = default;
};

class GpuDriver {
public:
	virtual ~GpuDriver() = default;

	// A new read-write, close-on-exec fd of a device file (/dev/kfd or a render node).
	virtual int open_device(const std::string &path) = 0;
	// The render node of DRM minor `minor` in this mount namespace (find_char_device()), or empty
	// with `*named_is` saying what its usual name is instead.
	virtual std::string find_render_node(unsigned int minor, std::string *named_is) = 0;
	// The character devices where render nodes live, for an error message.
	virtual std::string describe_render_nodes() = 0;
	// Whether this task's device cgroup keeps it to the devices it was given, probed where render
	// nodes live (device_rules_restrict()): 1, 0 or -errno.
	virtual int device_rules_restrict() = 0;
	// Makes the render node of DRM minor `minor` where render nodes live, under its usual name,
	// as the render nodes beside it (make_char_device(), which says how in `*how`). 0 or -errno.
	virtual int make_render_node(unsigned int minor, std::string *how) = 0;

	virtual int get_version(int fd, kfd::Version &out) = 0;
	virtual int criu_process_info(int fd, kfd::ProcessInfo &out) = 0;
	virtual int criu_checkpoint(int fd, const kfd::ProcessInfo &info, std::span<kfd_criu_device_bucket> devices,
				    std::span<kfd_criu_bo_bucket> bos, std::span<uint8_t> priv_data) = 0;
	virtual int criu_unpause(int fd) = 0;
	virtual int criu_restore(int fd, std::span<kfd_criu_device_bucket> devices, std::span<kfd_criu_bo_bucket> bos,
				 std::span<uint8_t> priv_data, uint32_t num_objects) = 0;
	virtual int criu_resume(int fd, uint32_t pid) = 0;

	// How task `pid` (criu's pid namespace) registered ROCm's runtime with KFD (kfd_ioctl.hpp),
	// read through a debug session opened on it and closed at once: the caller must be its
	// ptracer, on KFD 1.13 or newer.
	virtual int runtime_info(pid_t pid, kfd::RuntimeInfo &out) = 0;
	// RUNTIME_ENABLE as `info` says, on a restored task's own /dev/kfd, before it has queues.
	virtual int runtime_enable(int fd, const kfd::RuntimeInfo &info) = 0;

	// The ordinary memory ioctls on a restored task's own /dev/kfd (kfd_ioctl.hpp).
	virtual int import_dmabuf(int fd, uint32_t gpu_id, int dmabuf_fd, uint64_t va, uint64_t &handle) = 0;
	virtual int free_memory(int fd, uint64_t handle) = 0;
	virtual int map_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids) = 0;
	virtual int unmap_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids) = 0;

	// The ids of the secondary KFD contexts (kfd_contexts.hpp) of task `pid`, in criu's pid
	// namespace; none on a kernel without them.
	virtual std::vector<uint32_t> secondary_contexts(pid_t pid) = 0;

	// The buffer behind a dma-buf fd CHECKPOINT handed out (shared_buffers.hpp), or nothing when
	// the fd is no dma-buf.
	virtual std::optional<BufferKey> dmabuf_key(int fd) = 0;
	// The actual gpu_id of the GPU whose buffer a dma-buf is (KFD GET_DMABUF_INFO, asked through
	// a /dev/kfd file of this process), or nothing when KFD does not know it.
	virtual std::optional<uint32_t> dmabuf_gpu(int dmabuf_fd) = 0;
	// The GEM objects a render-node file holds (gem_ioctl.hpp): listed by the kernel (-EINVAL
	// before Linux 6.18), or found by probing handles where it cannot list them.
	virtual int gem_list(int fd, std::vector<gem::Object> &out) = 0;
	virtual int gem_probe(int fd, std::vector<gem::Object> &out) = 0;
	// A dma-buf fd of GEM object `handle` of the file (gem::export_dmabuf), or a negative errno.
	virtual int gem_export(int fd, uint32_t handle) = 0;
	// The rest of what a dump reads of them and a restore makes again (gem_ioctl.hpp).
	virtual int gem_mappings(int fd, uint32_t handle, std::vector<gem::Mapping> &out) = 0;
	virtual int gem_mmap_offset(int fd, uint32_t handle, uint64_t &offset) = 0;
	virtual int gem_wait_idle(int fd, uint32_t handle, uint64_t timeout_ns) = 0;
	virtual int gem_create(int fd, const gem::Object &o, uint32_t &handle) = 0;
	virtual int gem_map(int fd, uint32_t handle, const gem::Mapping &m) = 0;
	virtual int gem_import(int fd, int dmabuf_fd, uint32_t &handle) = 0;
	virtual int gem_close(int fd, uint32_t handle) = 0;
	// Writes `bytes` at the start of GEM object `handle` through a CPU mapping of it.
	virtual int gem_write(int fd, uint32_t handle, std::span<const uint8_t> bytes) = 0;
	// A render-node file's contexts, rings, fences and submissions (cs_ioctl.hpp).
	virtual int cs_context_flags(int fd, uint32_t id, uint64_t &flags) = 0;
	virtual int cs_alloc_context(int fd, uint32_t &id) = 0;
	virtual int cs_free_context(int fd, uint32_t id) = 0;
	virtual int cs_rings(int fd, uint32_t ip_type, uint32_t &rings) = 0;
	virtual int cs_fence_known(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq) = 0;
	virtual int cs_wait_fence(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq,
				  uint64_t timeout_ns) = 0;
	virtual int cs_submit(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint32_t ib_handle, uint64_t ib_va,
			      uint32_t ib_bytes, uint64_t &seq) = 0;

	// The bytes of VRAM KFD charged task `pid` (criu's pid namespace) on GPU `gpu_id` (actual),
	// from sysfs; nothing when the kernel does not show it.
	virtual std::optional<uint64_t> vram_charged(pid_t pid, uint32_t gpu_id) = 0;
};

inline constexpr const char *kDriDir = "/dev/dri";

// The kernel's: /dev/kfd, /dev/dri and the KFD ioctls.
GpuDriver &system_gpu_driver();

} // namespace amdgpu
