// SPDX-License-Identifier: GPL-2.0-only
#include "render/gem_restore.hpp"

#include "support/error.hpp"
#include "render/gap_fillers.hpp"
#include "support/log.hpp"

#include <amdgpu_drm.h>

#include <cerrno>
#include <cstring>

namespace amdgpu {
namespace {

// One page of GTT: the cheapest object there is.
const gem::Object kFiller = { 0, 0, gem::kKernelPage, AMDGPU_GEM_DOMAIN_GTT, 0, 1 };

// Fills every free handle below `wanted`; `next` is the lowest handle that may be free.
void fill_below(GpuDriver &driver, int fd, uint32_t wanted, uint32_t &next, GapFillers &fillers,
		const std::string &image)
{
	while (next < wanted) {
		uint32_t h = 0;
		if (const int ret = driver.gem_create(fd, kFiller, h))
			fail(ret,
			     "%s: cannot make a one-page GEM object to hold handle %u free of the file for the moment: "
			     "%s",
			     image.c_str(), next, strerror(-ret));
		if (h >= wanted) {
			// the handles up to `wanted` were taken already; `wanted` itself must be free
			driver.gem_close(fd, h);
			if (h > wanted)
				fail(-EEXIST,
				     "%s: the file already holds GEM handle %u, which the restored object needs",
				     image.c_str(), wanted);
			break;
		}
		fillers.add(h);
		next = h + 1;
	}
}

} // namespace

RestoredGem restore_gem_objects(GpuDriver &driver, int fd, std::span<const GemEntry> entries, const std::string &image,
				const RestoredKfdBufferOf &kfd_buffer)
{
	RestoredGem out;
	GapFillers fillers([&](uint32_t h) { return driver.gem_close(fd, h); }, "GEM handle");
	uint32_t next = 1;
	for (const GemEntry &e : entries) {
		const gem::Object &o = e.object;
		unique_fd kfd_dmabuf;
		if (e.kfd_addr) {
			kfd_dmabuf = e.other_process ? unique_fd() : kfd_buffer(*e.kfd_addr);
			if (!kfd_dmabuf) {
				pr_info("%s: GEM handle %u was the KFD buffer at 0x%llx, which this restore does not "
					"give "
					"back to the render node: the handle stays free",
					image.c_str(), o.handle, static_cast<unsigned long long>(*e.kfd_addr));
				out.without_buffer++;
				continue;
			}
		}
		fill_below(driver, fd, o.handle, next, fillers, image);
		uint32_t h = 0;
		const int ret = kfd_dmabuf ? driver.gem_import(fd, kfd_dmabuf.get(), h) : driver.gem_create(fd, o, h);
		if (ret)
			fail(ret,
			     "%s: cannot make GEM handle %u again (%llu bytes, domains 0x%llx, flags 0x%llx): %s %s",
			     image.c_str(), o.handle, static_cast<unsigned long long>(o.size),
			     static_cast<unsigned long long>(o.preferred_domains),
			     static_cast<unsigned long long>(o.alloc_flags), kfd_dmabuf ? "PRIME import" : "GEM_CREATE",
			     strerror(-ret));
		if (h != o.handle) {
			driver.gem_close(fd, h);
			if (h > o.handle)
				fail(-EEXIST,
				     "%s: the file already holds GEM handle %u, which the restored object needs",
				     image.c_str(), o.handle);
			fail(-EEXIST, "%s: GEM handle %u came back as %u, a gap below it the restore could not fill",
			     image.c_str(), o.handle, h);
		}
		next = h + 1;
		if (kfd_dmabuf) {
			out.kfd_buffers++;
			continue; // KFD maps its buffers itself
		}
		for (const gem::Mapping &m : e.mappings)
			if (const int r = driver.gem_map(fd, h, m))
				fail(r,
				     "%s: GEM handle %u: cannot map %llu bytes from offset 0x%llx at GPU address "
				     "0x%llx "
				     "(flags 0x%llx) again: %s",
				     image.c_str(), h, static_cast<unsigned long long>(m.size),
				     static_cast<unsigned long long>(m.offset),
				     static_cast<unsigned long long>(gem::sign_extended(m.addr)),
				     static_cast<unsigned long long>(m.flags), strerror(-r));
		unique_fd dmabuf(driver.gem_export(fd, h));
		if (!dmabuf)
			fail(dmabuf.get(), "%s: cannot export GEM handle %u as a dma-buf to fill it: %s", image.c_str(),
			     h, strerror(-dmabuf.get()));
		uint64_t offset = 0;
		if (const int r = driver.gem_mmap_offset(fd, h, offset))
			fail(r, "%s: GEM_MMAP of GEM handle %u failed: %s", image.c_str(), h, strerror(-r));
		out.dmabufs.push_back(std::move(dmabuf));
		out.offsets.emplace_back(e.mmap_offset, offset);
	}
	out.fillers = fillers.size();
	return out;
}

} // namespace amdgpu
