// SPDX-License-Identifier: GPL-2.0-only
#include "copy/amdgpu_device.hpp"

#include "support/error.hpp"
#include "support/log.hpp"

#include <amdgpu_drm.h>
#include <xf86drm.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

namespace amdgpu {

namespace {

constexpr uint64_t kPageSize = 4096;

// libdrm_amdgpu returns -errno from its own checks but passes drmIoctl()'s -1 through from
// others (a failed PRIME import, say), leaving the reason in errno.
int drm_error(int ret)
{
	return ret == -1 && errno ? -errno : ret;
}

uint64_t page_align(uint64_t size)
{
	return (size + kPageSize - 1) & ~(kPageSize - 1);
}

} // namespace

GpuDevice::GpuDevice(int render_fd, uint32_t gpu_id) : gpu_id_(gpu_id)
{
	// libdrm_amdgpu 2.4.114 dereferences what drmGetVersion() returns without a check: ask first,
	// so that a render node that does not answer fails here with its reason, not in libdrm.
	drmVersionPtr version = drmGetVersion(render_fd);
	if (!version)
		fail_errno(errno ? errno : EIO, "GPU 0x%04x: the render node does not answer DRM_IOCTL_VERSION", gpu_id);
	drmFreeVersion(version);
	uint32_t major = 0, minor = 0;
	if (const int ret = amdgpu_device_initialize(render_fd, &major, &minor, &dev_))
		fail_errno(drm_error(ret), "GPU 0x%04x: libdrm_amdgpu cannot initialise the render node", gpu_id);
	amdgpu_gpu_info info = {};
	if (const int ret = amdgpu_query_gpu_info(dev_, &info)) {
		amdgpu_device_deinitialize(dev_);
		fail_errno(drm_error(ret), "GPU 0x%04x: cannot query the GPU family", gpu_id);
	}
	family_ = info.family_id;
	// The SDMA packet encoding used here is that of SDMA 4 and later (gfx9+).
	if (family_ < AMDGPU_FAMILY_AI) {
		amdgpu_device_deinitialize(dev_);
		fail(-ENOTSUP, "GPU 0x%04x: family %u predates gfx9, whose SDMA engines are not supported", gpu_id,
		     family_);
	}
}

GpuDevice::~GpuDevice()
{
	amdgpu_device_deinitialize(dev_);
}

MappedBo::MappedBo(const GpuDevice &dev, amdgpu_bo_handle bo, uint64_t size, const char *what)
    : gpu_id_(dev.gpu_id()), bo_(bo), size_(page_align(size))
{
	if (int ret = amdgpu_va_range_alloc(dev.handle(), amdgpu_gpu_va_range_general, size_, kPageSize, 0, &va_,
					    &va_handle_, 0)) {
		release();
		fail_errno(drm_error(ret), "GPU 0x%04x: no GPU address range of %llu bytes for %s", gpu_id_,
			   static_cast<unsigned long long>(size_), what);
	}
	if (int ret = amdgpu_bo_va_op(bo_, 0, size_, va_, 0, AMDGPU_VA_OP_MAP)) {
		amdgpu_va_range_free(va_handle_);
		va_handle_ = nullptr;
		release();
		fail_errno(drm_error(ret), "GPU 0x%04x: cannot map %s (%llu bytes) at GPU address 0x%llx", gpu_id_, what,
			   static_cast<unsigned long long>(size_), static_cast<unsigned long long>(va_));
	}
}

MappedBo::MappedBo(MappedBo &&o) noexcept
    : gpu_id_(o.gpu_id_), bo_(std::exchange(o.bo_, nullptr)), va_handle_(std::exchange(o.va_handle_, nullptr)),
      va_(o.va_), size_(o.size_), cpu_(std::exchange(o.cpu_, nullptr))
{
}

MappedBo::~MappedBo()
{
	release();
}

void MappedBo::release() noexcept
{
	if (!bo_)
		return;
	if (cpu_)
		amdgpu_bo_cpu_unmap(bo_);
	if (va_handle_) {
		// A range whose unmap failed is never handed out again: the next BO there would be
		// copied through whatever the GPU still maps at that address.
		if (const int ret = amdgpu_bo_va_op(bo_, 0, size_, va_, 0, AMDGPU_VA_OP_UNMAP))
			pr_warn("GPU 0x%04x: cannot unmap %llu bytes at GPU address 0x%llx: %s; the range stays reserved",
				gpu_id_, static_cast<unsigned long long>(size_), static_cast<unsigned long long>(va_),
				strerror(-drm_error(ret)));
		else
			amdgpu_va_range_free(va_handle_);
	}
	amdgpu_bo_free(bo_);
	bo_ = nullptr;
}

MappedBo MappedBo::import_dmabuf(const GpuDevice &dev, int dmabuf_fd, uint64_t size)
{
	amdgpu_bo_import_result res = {};
	if (int ret = amdgpu_bo_import(dev.handle(), amdgpu_bo_handle_type_dma_buf_fd, static_cast<uint32_t>(dmabuf_fd),
				       &res))
		fail_errno(drm_error(ret), "GPU 0x%04x: cannot import the dma-buf of a %llu-byte BO", dev.gpu_id(),
			   static_cast<unsigned long long>(size));
	if (res.alloc_size < size) {
		amdgpu_bo_free(res.buf_handle);
		fail(-EINVAL, "GPU 0x%04x: the dma-buf of a %llu-byte BO holds only %llu bytes", dev.gpu_id(),
		     static_cast<unsigned long long>(size), static_cast<unsigned long long>(res.alloc_size));
	}
	return MappedBo(dev, res.buf_handle, size, "an imported BO");
}

MappedBo MappedBo::from_user_memory(const GpuDevice &dev, void *cpu, uint64_t size)
{
	amdgpu_bo_handle bo = nullptr;
	if (int ret = amdgpu_create_bo_from_user_mem(dev.handle(), cpu, size, &bo))
		fail_errno(drm_error(ret), "GPU 0x%04x: cannot register %llu bytes of staging memory", dev.gpu_id(),
			   static_cast<unsigned long long>(size));
	return MappedBo(dev, bo, size, "staging memory");
}

MappedBo MappedBo::alloc_gtt(const GpuDevice &dev, uint64_t size)
{
	amdgpu_bo_alloc_request req = {};
	req.alloc_size = page_align(size);
	req.phys_alignment = kPageSize;
	req.preferred_heap = AMDGPU_GEM_DOMAIN_GTT;
	amdgpu_bo_handle bo = nullptr;
	if (int ret = amdgpu_bo_alloc(dev.handle(), &req, &bo))
		fail_errno(drm_error(ret), "GPU 0x%04x: cannot allocate a %llu-byte GTT buffer", dev.gpu_id(),
			   static_cast<unsigned long long>(req.alloc_size));
	MappedBo mapped(dev, bo, req.alloc_size, "an indirect buffer");
	if (int ret = amdgpu_bo_cpu_map(bo, &mapped.cpu_))
		fail_errno(drm_error(ret), "GPU 0x%04x: cannot map an indirect buffer for the CPU", dev.gpu_id());
	return mapped;
}

SdmaQueue::SdmaQueue(const GpuDevice &dev) : dev_(dev)
{
	if (int ret = amdgpu_cs_ctx_create(dev.handle(), &ctx_))
		fail_errno(drm_error(ret), "GPU 0x%04x: cannot create a submission context", dev.gpu_id());
}

SdmaQueue::~SdmaQueue()
{
	amdgpu_cs_ctx_free(ctx_);
}

uint64_t SdmaQueue::submit(const MappedBo &ib, uint32_t dwords, std::span<const amdgpu_bo_handle> resources)
{
	std::vector<amdgpu_bo_handle> handles(resources.begin(), resources.end());
	handles.push_back(ib.handle());
	amdgpu_bo_list_handle list = nullptr;
	if (int ret = amdgpu_bo_list_create(dev_.handle(), static_cast<uint32_t>(handles.size()), handles.data(),
					    nullptr, &list))
		fail_errno(drm_error(ret), "GPU 0x%04x: cannot build the buffer list of an SDMA submission", dev_.gpu_id());

	amdgpu_cs_ib_info ib_info = {};
	ib_info.ib_mc_address = ib.va();
	ib_info.size = dwords;
	amdgpu_cs_request req = {};
	req.ip_type = AMDGPU_HW_IP_DMA;
	req.ring = 0;
	req.resources = list;
	req.number_of_ibs = 1;
	req.ibs = &ib_info;
	const int ret = amdgpu_cs_submit(ctx_, 0, &req, 1);
	amdgpu_bo_list_destroy(list);
	if (ret)
		fail_errno(drm_error(ret), "GPU 0x%04x: SDMA submission of %u dwords failed", dev_.gpu_id(), dwords);
	return req.seq_no;
}

void SdmaQueue::wait(uint64_t seq, uint64_t timeout_ns)
{
	amdgpu_cs_fence fence = {};
	fence.context = ctx_;
	fence.ip_type = AMDGPU_HW_IP_DMA;
	fence.ring = 0;
	fence.fence = seq;
	// The kernel is only asked to look (an absolute deadline of 0), and the waiting is timed here:
	// a task criu restores lives in criu's time namespace, whose monotonic clock is off the
	// kernel's by however long ago (or, after a migration, how much later) the dump was taken, so
	// any deadline libdrm computes from it means another moment to the kernel.
	using Clock = std::chrono::steady_clock;
	const auto deadline = Clock::now() + std::chrono::nanoseconds(timeout_ns);
	auto pause = std::chrono::microseconds(20);
	for (;;) {
		uint32_t expired = 0;
		if (int ret = amdgpu_cs_query_fence_status(&fence, 0, AMDGPU_QUERY_FENCE_TIMEOUT_IS_ABSOLUTE, &expired))
			fail_errno(drm_error(ret), "GPU 0x%04x: waiting for SDMA submission %llu failed", dev_.gpu_id(),
				   static_cast<unsigned long long>(seq));
		if (expired)
			return;
		if (Clock::now() > deadline)
			fail(-ETIMEDOUT,
			     "GPU 0x%04x: SDMA submission %llu did not complete within %.1f s: the copy engine is taken for hung",
			     dev_.gpu_id(), static_cast<unsigned long long>(seq), static_cast<double>(timeout_ns) / 1e9);
		std::this_thread::sleep_for(pause);
		pause = std::min(pause * 2, std::chrono::microseconds(1000));
	}
}

} // namespace amdgpu
