// SPDX-License-Identifier: GPL-2.0-only
//
// The GPU as the copy engine sees it, through libdrm_amdgpu: one owning type per libdrm object
// (device, buffer object, GPU virtual address mapping, submission context), so every error path
// releases what was made. Errors throw amdgpu::Error naming the GPU and the call.
#pragma once

#include <amdgpu.h>

#include <cstdint>
#include <span>
#include <string>

namespace amdgpu {

class GpuDevice {
public:
	// `render_fd` stays owned by the caller; libdrm keeps its own dup.
	GpuDevice(int render_fd, uint32_t gpu_id);
	~GpuDevice();
	GpuDevice(const GpuDevice &) = delete;
	GpuDevice &operator=(const GpuDevice &) = delete;

	amdgpu_device_handle handle() const { return dev_; }
	uint32_t gpu_id() const { return gpu_id_; }
	uint32_t family() const { return family_; }

private:
	amdgpu_device_handle dev_ = nullptr;
	uint32_t gpu_id_;
	uint32_t family_ = 0;
};

// A buffer object plus its mapping into this process's GPU address space.
class MappedBo {
public:
	// A BO another process or the KFD exported as a dma-buf.
	static MappedBo import_dmabuf(const GpuDevice &dev, int dmabuf_fd, uint64_t size);
	// Host memory registered with the GPU (page-aligned address and size).
	static MappedBo from_user_memory(const GpuDevice &dev, void *cpu, uint64_t size);
	// A GTT buffer the CPU can write (indirect buffers).
	static MappedBo alloc_gtt(const GpuDevice &dev, uint64_t size);

	MappedBo(MappedBo &&other) noexcept;
	MappedBo &operator=(MappedBo &&) = delete;
	MappedBo(const MappedBo &) = delete;
	~MappedBo();

	amdgpu_bo_handle handle() const { return bo_; }
	uint64_t va() const { return va_; }
	uint64_t size() const { return size_; }
	// CPU view of an alloc_gtt() buffer; nullptr otherwise.
	void *cpu() const { return cpu_; }

private:
	MappedBo(const GpuDevice &dev, amdgpu_bo_handle bo, uint64_t size, const char *what);
	void release() noexcept;

	uint32_t gpu_id_ = 0;
	amdgpu_bo_handle bo_ = nullptr;
	amdgpu_va_handle va_handle_ = nullptr;
	uint64_t va_ = 0;
	uint64_t size_ = 0;
	void *cpu_ = nullptr;
};

// One SDMA submission context of a GPU; submissions on it complete in order.
class SdmaQueue {
public:
	explicit SdmaQueue(const GpuDevice &dev);
	~SdmaQueue();
	SdmaQueue(const SdmaQueue &) = delete;
	SdmaQueue &operator=(const SdmaQueue &) = delete;

	// Submits the IB (already written to `ib`, `dwords` long), with `resources` resident for
	// its duration. Returns the submission's sequence number.
	uint64_t submit(const MappedBo &ib, uint32_t dwords, std::span<const amdgpu_bo_handle> resources);

	// Waits until submission `seq` is done, at most `timeout_ns`.
	void wait(uint64_t seq, uint64_t timeout_ns);

private:
	const GpuDevice &dev_;
	amdgpu_context_handle ctx_ = nullptr;
};

} // namespace amdgpu
