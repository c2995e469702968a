// SPDX-License-Identifier: GPL-2.0-only
#include "render/gem_dump.hpp"

#include "support/error.hpp"
#include "support/log.hpp"

#include <amdgpu_drm.h>

#include <cerrno>
#include <cstring>

namespace amdgpu {
namespace {

// The domains whose objects have memory the copy engine can read through a dma-buf.
constexpr uint64_t kMemoryDomains = AMDGPU_GEM_DOMAIN_CPU | AMDGPU_GEM_DOMAIN_GTT | AMDGPU_GEM_DOMAIN_VRAM;

std::string handles_of(const std::vector<gem::Object> &objects, uint64_t &bytes)
{
	std::string handles;
	bytes = 0;
	for (const gem::Object &o : objects) {
		bytes += o.size;
		if (handles.size() < 64)
			handles += strprintf("%s%u", handles.empty() ? "" : ", ", o.handle);
		else if (handles.back() != '.')
			handles += ", ...";
	}
	return handles;
}

// Before Linux 6.18 the objects are found by their handles, and nothing tells where they are
// mapped: their memory cannot be brought back whole.
[[noreturn]] void refuse_unlisted(const std::vector<gem::Object> &objects, const FileName &file, unsigned int minor)
{
	uint64_t bytes = 0;
	const std::string handles = handles_of(objects, bytes);
	fail(-EOPNOTSUPP,
	     "%s, a file of renderD%u, holds %zu GEM buffer object(s) of %llu bytes (handles %s; found by their "
	     "handles, as this kernel cannot list them): a kernel before Linux 6.18 cannot tell where they are "
	     "mapped in the GPU's address space, so their memory cannot be saved whole and the dump is refused; "
	     "the task runs on",
	     file.c_str(), minor, objects.size(), static_cast<unsigned long long>(bytes), handles.c_str());
}

void take_own(GpuDriver &driver, int fd, const FileName &file, unsigned int minor, GemObjectState &s, unique_fd dmabuf,
	      int export_err, const GemDumpLimits &limits)
{
	const gem::Object &o = s.object;
	if (!(o.preferred_domains & kMemoryDomains))
		fail(-EOPNOTSUPP,
		     "%s, a file of renderD%u: GEM handle %u is an object of GDS, GWS, OA or doorbell space (domains "
		     "0x%llx), which has no memory the plugin can save, so the dump is refused; the task runs on",
		     file.c_str(), minor, o.handle, static_cast<unsigned long long>(o.preferred_domains));
	if (o.flags & gem::kListImported)
		fail(-EOPNOTSUPP,
		     "%s, a file of renderD%u: GEM handle %u (%llu bytes) is another device's memory, imported "
		     "through a dma-buf; its owner is outside the dump and a restore could not share it again, so "
		     "the dump is refused; the task runs on",
		     file.c_str(), minor, o.handle, static_cast<unsigned long long>(o.size));
	if (!dmabuf)
		fail(export_err,
		     "%s, a file of renderD%u: GEM handle %u (%llu bytes, creation flags 0x%llx) cannot be exported "
		     "as a dma-buf (%s): the kernel lends neither a userptr object nor one created VM_ALWAYS_VALID "
		     "to another file, so its memory cannot be read and the dump is refused; the task runs on",
		     file.c_str(), minor, o.handle, static_cast<unsigned long long>(o.size),
		     static_cast<unsigned long long>(o.alloc_flags), strerror(-export_err));
	// The task is frozen: what it submitted before ends on its own, and then the memory is still.
	const uint64_t timeout_ns = static_cast<uint64_t>(limits.idle_timeout.count()) * 1000000ull;
	if (const int ret = driver.gem_wait_idle(fd, o.handle, timeout_ns))
		fail(ret == -ETIME ? -EBUSY : ret,
		     "%s, a file of renderD%u: GEM handle %u (%llu bytes) %s, so its memory cannot be saved and the "
		     "dump is refused; the task runs on",
		     file.c_str(), minor, o.handle, static_cast<unsigned long long>(o.size),
		     ret == -ETIME ? strprintf("is still in use by the GPU %lld ms after the task was frozen",
					       static_cast<long long>(limits.idle_timeout.count()))
					     .c_str()
				   : strprintf("cannot be waited for (GEM_WAIT_IDLE: %s)", strerror(-ret)).c_str());
	if (const int ret = driver.gem_mappings(fd, o.handle, s.mappings))
		fail(ret, "%s, a file of renderD%u: GET_MAPPING_INFO of GEM handle %u failed: %s", file.c_str(), minor,
		     o.handle, strerror(-ret));
	if (const int ret = driver.gem_mmap_offset(fd, o.handle, s.mmap_offset))
		fail(ret, "%s, a file of renderD%u: GEM_MMAP of GEM handle %u failed: %s", file.c_str(), minor,
		     o.handle, strerror(-ret));
	s.dmabuf = std::move(dmabuf);
}

} // namespace

std::vector<GemObjectState> take_gem_objects(GpuDriver &driver, int fd, const FileName &file, unsigned int minor,
					     const KfdBufferOf &kfd_buffer, const GemDumpLimits &limits)
{
	std::vector<gem::Object> objects;
	int ret = driver.gem_list(fd, objects);
	const bool listed = ret != -EINVAL;
	if (!listed)
		ret = driver.gem_probe(fd, objects);
	if (ret)
		fail(ret, "cannot tell which GEM buffer objects %s (renderD%u) holds: %s %s", file.c_str(), minor,
		     listed ? "GEM_LIST_HANDLES" : "GEM_OP GET_GEM_CREATE_INFO", strerror(-ret));

	std::vector<GemObjectState> states;
	std::vector<gem::Object> unlisted;
	for (const gem::Object &o : objects) {
		GemObjectState s;
		s.object = o;
		unique_fd dmabuf(driver.gem_export(fd, o.handle));
		const int export_err = dmabuf ? 0 : dmabuf.get();
		if (dmabuf)
			s.kfd = kfd_buffer(dmabuf.get());
		if (s.kfd) {
			// ROCm imports KFD buffers into its render node: their memory is saved with them
			pr_info("%s (renderD%u): GEM handle %u is the memory of KFD buffer 0x%llx of pid %d, saved "
				"with "
				"it",
				file.c_str(), minor, o.handle, static_cast<unsigned long long>(s.kfd->addr),
				static_cast<int>(s.kfd->pid));
		} else if (!listed) {
			unlisted.push_back(o);
			continue;
		} else {
			take_own(driver, fd, file, minor, s, std::move(dmabuf), export_err, limits);
		}
		states.push_back(std::move(s));
	}
	if (!unlisted.empty())
		refuse_unlisted(unlisted, file, minor);
	if (objects.empty())
		pr_debug("a file of renderD%u holds no GEM buffer objects (%s)", minor,
			 listed ? "listed by the kernel" : "handles probed: this kernel cannot list them");
	return states;
}

} // namespace amdgpu
