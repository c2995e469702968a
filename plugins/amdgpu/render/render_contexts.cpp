// SPDX-License-Identifier: GPL-2.0-only
#include "render/render_contexts.hpp"

#include "support/error.hpp"
#include "render/gap_fillers.hpp"
#include "support/log.hpp"

#include <amdgpu_drm.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace amdgpu {
namespace {

// The engine types KFD's render-node sibling knows (AMDGPU_HW_IP_*, Linux 6.18: GFX .. VPE).
constexpr uint32_t kEngineTypes = 10;
constexpr uint32_t kMaxRings = 32;

const char *engine_name(uint32_t ip_type)
{
	static const char *const names[kEngineTypes] = { "GFX",	       "compute",    "SDMA",	   "UVD",      "VCE",
							 "UVD encode", "VCN decode", "VCN encode", "VCN JPEG", "VPE" };
	return ip_type < kEngineTypes ? names[ip_type] : "unknown";
}

// One empty packet per engine, repeated to a 32-byte command buffer (every engine's alignment).
bool nop_of(uint32_t ip_type, uint32_t &nop)
{
	switch (ip_type) {
	case AMDGPU_HW_IP_GFX:
	case AMDGPU_HW_IP_COMPUTE:
		nop = 0xffff1000; // PM4 type-3 NOP without payload, as amdgpu pads gfx9 rings
		return true;
	case AMDGPU_HW_IP_DMA:
		nop = 0; // SDMA NOP
		return true;
	default:
		return false;
	}
}
constexpr uint32_t kIbBytes = 32;

// The first fence the ring has not reached.
uint64_t sequence_of(GpuDriver &driver, int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, const FileName &file)
{
	const auto known = [&](uint64_t seq) {
		const int ret = driver.cs_fence_known(fd, ctx, ip_type, ring, seq);
		if (ret && ret != -EINVAL)
			fail(ret, "%s: WAIT_CS of fence %llu on %s ring %u of context %u failed: %s", file.c_str(),
			     static_cast<unsigned long long>(seq), engine_name(ip_type), ring, ctx, strerror(-ret));
		return ret == 0;
	};
	if (!known(1))
		return 1;
	uint64_t lo = 1, hi = 2; // lo known, hi to be tried
	while (known(hi)) {
		lo = hi;
		if (hi >= (1ull << 62))
			fail(-EINVAL, "%s: %s ring %u of context %u claims fences beyond 2^62", file.c_str(),
			     engine_name(ip_type), ring, ctx);
		hi *= 2;
	}
	while (hi - lo > 1) { // lo known, hi not
		const uint64_t mid = lo + (hi - lo) / 2;
		(known(mid) ? lo : hi) = mid;
	}
	return hi;
}

// A one-page command buffer of empty packets, mapped at `va` in the file's VM; closed (which
// unmaps it) when done.
class NopBuffer {
public:
	NopBuffer(GpuDriver &driver, int fd, uint64_t busy_below, const std::string &image) : driver_(driver), fd_(fd)
	{
		const gem::Object page = { 0, 0, gem::kKernelPage, AMDGPU_GEM_DOMAIN_GTT, 0, 1 };
		if (const int ret = driver.gem_create(fd, page, handle_))
			fail(ret, "%s: cannot make a command buffer to bring the contexts' rings back: %s",
			     image.c_str(), strerror(-ret));
		// above every mapping the file had; a few tries, should something of KFD's be there
		constexpr uint64_t kStep = 1ull << 30;
		va_ = std::max<uint64_t>((busy_below + kStep - 1) / kStep * kStep, kStep);
		int ret = -EINVAL;
		for (int i = 0; i < 8 && ret; i++, va_ += kStep)
			ret = driver.gem_map(
				fd, handle_,
				{ va_, gem::kKernelPage, 0, AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_EXECUTABLE });
		va_ -= kStep;
		if (ret)
			fail(ret, "%s: cannot map a command buffer above 0x%llx to bring the contexts' rings back: %s",
			     image.c_str(), static_cast<unsigned long long>(busy_below), strerror(-ret));
	}
	~NopBuffer() { driver_.gem_close(fd_, handle_); }
	NopBuffer(const NopBuffer &) = delete;
	NopBuffer &operator=(const NopBuffer &) = delete;

	// Empty packets of `ip_type` in it.
	void fill(uint32_t nop, const std::string &image)
	{
		if (filled_ && nop == nop_)
			return;
		std::vector<uint32_t> dw(kIbBytes / 4, nop);
		if (const int ret = driver_.gem_write(fd_, handle_,
						      { reinterpret_cast<const uint8_t *>(dw.data()), dw.size() * 4 }))
			fail(ret, "%s: cannot write the command buffer that brings the contexts' rings back: %s",
			     image.c_str(), strerror(-ret));
		filled_ = true;
		nop_ = nop;
	}
	uint32_t handle() const { return handle_; }
	uint64_t va() const { return va_; }

private:
	GpuDriver &driver_;
	int fd_;
	uint32_t handle_ = 0;
	uint64_t va_ = 0;
	bool filled_ = false;
	uint32_t nop_ = 0;
};

} // namespace

std::vector<ContextState> take_contexts(GpuDriver &driver, int fd, const FileName &file,
					std::chrono::milliseconds idle_timeout)
{
	std::vector<std::pair<uint32_t, uint32_t>> rings; // engine type, ring
	for (uint32_t ip = 0; ip < kEngineTypes; ip++) {
		uint32_t mask = 0;
		if (driver.cs_rings(fd, ip, mask))
			continue; // an engine type this kernel does not know
		for (uint32_t r = 0; r < kMaxRings; r++)
			if (mask & (1u << r))
				rings.emplace_back(ip, r);
	}
	std::vector<ContextState> out;
	uint32_t free_in_a_row = 0;
	for (uint32_t id = 1; free_in_a_row < kContextProbeFreeRun && id < INT_MAX; id++) {
		uint64_t flags = 0;
		const int ret = driver.cs_context_flags(fd, id, flags);
		if (ret == -EINVAL) {
			free_in_a_row++;
			continue;
		}
		if (ret)
			fail(ret, "%s: QUERY_STATE2 of context %u failed: %s", file.c_str(), id, strerror(-ret));
		free_in_a_row = 0;
		if (flags & AMDGPU_CTX_QUERY2_FLAGS_GUILTY)
			fail(-EOPNOTSUPP,
			     "%s: context %u caused a GPU hang, and the kernel fails its submissions (ECANCELED); a "
			     "restored context would take them, so the dump is refused and the task runs on",
			     file.c_str(), id);
		ContextState c { id, {} };
		for (const auto &[ip, ring] : rings) {
			const uint64_t seq = sequence_of(driver, fd, id, ip, ring, file);
			if (seq == 1)
				continue;
			uint32_t nop = 0;
			if (!nop_of(ip, nop))
				fail(-EOPNOTSUPP,
				     "%s: context %u made %llu submissions to the %s engine (ring %u), whose fence "
				     "numbers a "
				     "restore cannot bring back, so the dump is refused and the task runs on",
				     file.c_str(), id, static_cast<unsigned long long>(seq - 1), engine_name(ip), ring);
			// the task is frozen: what it submitted ends on its own
			const uint64_t timeout_ns = static_cast<uint64_t>(idle_timeout.count()) * 1000000ull;
			if (const int r = driver.cs_wait_fence(fd, id, ip, ring, seq - 1, timeout_ns))
				fail(r == -ETIME ? -EBUSY : r,
				     "%s: context %u: fence %llu on %s ring %u %s, so the dump is refused and the task "
				     "runs "
				     "on",
				     file.c_str(), id, static_cast<unsigned long long>(seq - 1), engine_name(ip), ring,
				     r == -ETIME ? strprintf("is not done %lld ms after the task was frozen",
							     static_cast<long long>(idle_timeout.count()))
							   .c_str()
						 : strprintf("cannot be waited for: %s", strerror(-r)).c_str());
			c.rings.push_back({ ip, ring, seq });
		}
		out.push_back(std::move(c));
	}
	return out;
}

void fill_context_entries(std::span<const ContextState> contexts, ContextEntries &s)
{
	size_t n_rings = 0;
	for (const ContextState &c : contexts)
		n_rings += c.rings.size();
	s.entries.assign(contexts.size(), DrmContextEntry {});
	s.entry_ptrs.assign(contexts.size(), nullptr);
	s.rings.assign(n_rings, DrmRingSequence {});
	s.ring_ptrs.assign(n_rings, nullptr);
	size_t r = 0;
	for (size_t i = 0; i < contexts.size(); i++) {
		DrmContextEntry &e = s.entries[i];
		drm_context_entry__init(&e);
		e.has_id = true;
		e.id = contexts[i].id;
		e.n_rings = contexts[i].rings.size();
		e.rings = s.ring_ptrs.data() + r;
		for (const RingSequence &q : contexts[i].rings) {
			DrmRingSequence &rs = s.rings[r];
			drm_ring_sequence__init(&rs);
			rs.has_ip_type = rs.has_ring = rs.has_sequence = true;
			rs.ip_type = q.ip_type;
			rs.ring = q.ring;
			rs.sequence = q.sequence;
			s.ring_ptrs[r++] = &rs;
		}
		s.entry_ptrs[i] = &e;
	}
}

std::vector<ContextState> contexts_of(const CriuRenderNode &msg, const std::string &image)
{
	std::vector<ContextState> out;
	uint32_t previous = 0;
	for (size_t i = 0; i < msg.n_contexts; i++) {
		const DrmContextEntry &e = *msg.contexts[i];
		if (!e.has_id || e.id <= previous || e.id > INT_MAX)
			fail(-EINVAL, "image %s: context entry %zu (id %u) does not follow the one before it",
			     image.c_str(), i, e.id);
		previous = e.id;
		ContextState c { e.id, {} };
		for (size_t j = 0; j < e.n_rings; j++) {
			const DrmRingSequence &q = *e.rings[j];
			uint32_t nop = 0;
			if (!nop_of(q.ip_type, nop) || q.ring >= kMaxRings || !q.has_sequence || q.sequence < 1 ||
			    q.sequence > (1ull << 62))
				fail(-EINVAL,
				     "image %s: context %u names %s ring %u at fence %llu, which this plugin cannot "
				     "bring "
				     "back",
				     image.c_str(), e.id, engine_name(q.ip_type), q.ring,
				     static_cast<unsigned long long>(q.sequence));
			c.rings.push_back({ q.ip_type, q.ring, q.sequence });
		}
		out.push_back(std::move(c));
	}
	return out;
}

RestoredContexts restore_contexts(GpuDriver &driver, int fd, std::span<const ContextState> contexts,
				  uint64_t busy_below, const std::string &image)
{
	RestoredContexts out;
	{
		GapFillers fillers([&](uint32_t id) { return driver.cs_free_context(fd, id); }, "context");
		uint32_t next = 1;
		for (const ContextState &c : contexts) {
			for (;;) {
				uint32_t id = 0;
				if (const int ret = driver.cs_alloc_context(fd, id))
					fail(ret, "%s: cannot make context %u again: %s", image.c_str(), c.id,
					     strerror(-ret));
				if (id == c.id)
					break;
				if (id > c.id || id < next) {
					driver.cs_free_context(fd, id);
					fail(-EEXIST, "%s: context %u came back as %u: the file holds that id already",
					     image.c_str(), c.id, id);
				}
				fillers.add(id);
				next = id + 1;
			}
			next = c.id + 1;
		}
		out.fillers = fillers.size();
	}
	std::optional<NopBuffer> ib;
	for (const ContextState &c : contexts)
		for (const RingSequence &q : c.rings) {
			uint32_t nop = 0;
			nop_of(q.ip_type, nop);
			if (!ib)
				ib.emplace(driver, fd, busy_below, image);
			ib->fill(nop, image);
			uint64_t seq = 0;
			for (uint64_t n = 1; n < q.sequence; n++) {
				if (const int ret = driver.cs_submit(fd, c.id, q.ip_type, q.ring, ib->handle(),
								     ib->va(), kIbBytes, seq))
					fail(ret,
					     "%s: context %u: empty submission %llu of %llu on %s ring %u failed: %s",
					     image.c_str(), c.id, static_cast<unsigned long long>(n),
					     static_cast<unsigned long long>(q.sequence - 1), engine_name(q.ip_type),
					     q.ring, strerror(-ret));
				out.submissions++;
			}
			if (seq != q.sequence - 1)
				fail(-EPROTO, "%s: context %u: %s ring %u came to fence %llu where %llu was wanted",
				     image.c_str(), c.id, engine_name(q.ip_type), q.ring,
				     static_cast<unsigned long long>(seq),
				     static_cast<unsigned long long>(q.sequence - 1));
			if (const int ret = driver.cs_wait_fence(fd, c.id, q.ip_type, q.ring, seq, 10000000000ull))
				fail(ret, "%s: context %u: the empty submissions on %s ring %u did not end: %s",
				     image.c_str(), c.id, engine_name(q.ip_type), q.ring, strerror(-ret));
		}
	return out;
}

} // namespace amdgpu
