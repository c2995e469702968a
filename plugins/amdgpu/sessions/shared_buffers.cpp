// SPDX-License-Identifier: GPL-2.0-only
#include "sessions/shared_buffers.hpp"

#include "support/error.hpp"
#include "driver/kfd_ioctl.hpp"

#include <algorithm>
#include <set>

namespace amdgpu {

namespace {

bool is_vram(const BufferHold &h)
{
	return !h.held_fd() && (h.alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM);
}

// Buckets, not fds: a dma-buf fd is no second copy of a buffer a bucket holds.
size_t buckets(const std::vector<BufferHold> &holds)
{
	return static_cast<size_t>(
		std::count_if(holds.begin(), holds.end(), [](const BufferHold &h) { return !h.held_fd(); }));
}

} // namespace

bool SharedBuffer::vram() const
{
	return std::any_of(holds.begin(), holds.end(), is_vram);
}

std::vector<pid_t> SharedBuffer::pids() const
{
	std::vector<pid_t> pids;
	for (const BufferHold &h : holds)
		if (std::find(pids.begin(), pids.end(), h.pid) == pids.end())
			pids.push_back(h.pid);
	return pids;
}

BufferKey SharedBufferCensus::key_of(const BufferKey &dmabuf, uint32_t gpu_id, uint64_t offset)
{
	const auto a = alias_.find(dmabuf);
	const auto o = by_offset_.find({ gpu_id, offset });
	const BufferKey key = a != alias_.end() ? a->second : o != by_offset_.end() ? o->second : dmabuf;
	alias_.emplace(dmabuf, key);
	by_offset_.emplace(std::pair { gpu_id, offset }, key);
	return key;
}

BufferKey SharedBufferCensus::key_of(const BufferKey &dmabuf) const
{
	const auto a = alias_.find(dmabuf);
	return a != alias_.end() ? a->second : dmabuf;
}

void SharedBufferCensus::add(const BufferKey &key, const BufferHold &hold)
{
	auto [it, added] = holds_.try_emplace(key);
	if (added)
		order_.push_back(key);
	it->second.push_back(hold);
}

void SharedBufferCensus::charge(pid_t pid, uint64_t bytes)
{
	charged_[pid] += bytes;
}

void SharedBufferCensus::charge_unknown(pid_t pid)
{
	uncharged_.push_back(pid);
}

std::vector<SharedBuffer> SharedBufferCensus::shared() const
{
	std::vector<SharedBuffer> out;
	for (const BufferKey &key : order_) {
		const std::vector<BufferHold> &holds = holds_.at(key);
		if (holds.size() > 1 || holds.front().held_fd())
			out.push_back({ key, holds });
	}
	return out;
}

std::vector<BufferHold> SharedBufferCensus::holds_of(const BufferKey &key) const
{
	const auto it = holds_.find(key);
	return it == holds_.end() ? std::vector<BufferHold> {} : it->second;
}

uint32_t SharedBufferCensus::shared_number(const BufferKey &key) const
{
	uint32_t n = 0;
	for (const BufferKey &k : order_) {
		const std::vector<BufferHold> &holds = holds_.at(k);
		if (holds.size() < 2 || buckets(holds) == 0) // another bucket or an fd, and a bucket to restore it
			continue;
		n++;
		if (k == key)
			return n;
	}
	return 0;
}

std::optional<BufferHold> SharedBufferCensus::restorer_of(const BufferKey &key) const
{
	const auto it = holds_.find(key);
	if (it == holds_.end())
		return std::nullopt;
	for (const BufferHold &h : it->second)
		if (!h.held_fd() && h.cpu_mapped)
			return h;
	constexpr uint32_t kImportFlags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT |
					  KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
	for (const BufferHold &h : it->second)
		if (!h.held_fd() && (h.alloc_flags & ~kImportFlags))
			return h;
	for (const BufferHold &h : it->second)
		if (is_vram(h))
			return h;
	for (const BufferHold &h : it->second)
		if (!h.held_fd())
			return h;
	return std::nullopt;
}

std::optional<ForeignVram> SharedBufferCensus::foreign_vram() const
{
	if (!uncharged_.empty())
		return std::nullopt;
	ForeignVram f;
	std::map<pid_t, uint64_t> vram_of; // VRAM bytes in each process's buckets
	for (const BufferKey &key : order_) {
		const std::vector<BufferHold> &holds = holds_.at(key);
		if (!std::any_of(holds.begin(), holds.end(), is_vram))
			continue;
		f.vram += holds.front().size;
		for (const BufferHold &h : holds)
			if (is_vram(h))
				vram_of[h.pid] += h.size;
	}
	for (const auto &[pid, bytes] : charged_)
		f.charged += bytes;
	if (f.vram <= f.charged)
		return std::nullopt;
	f.bytes = f.vram - f.charged;

	std::set<pid_t> importers; // processes holding more VRAM than they were charged
	for (const auto &[pid, bytes] : vram_of) {
		const auto c = charged_.find(pid);
		if (bytes > (c == charged_.end() ? 0 : c->second))
			importers.insert(pid);
	}
	for (const BufferKey &key : order_) {
		const std::vector<BufferHold> &holds = holds_.at(key);
		if (buckets(holds) == 1 && is_vram(holds.front()) && importers.count(holds.front().pid))
			f.candidates.push_back(holds.front());
	}
	return f;
}

std::vector<SharedBuffer> SharedBufferCensus::imported_from_outside() const
{
	std::vector<SharedBuffer> out;
	for (const BufferKey &key : order_) {
		const std::vector<BufferHold> &holds = holds_.at(key);
		const bool owned = std::any_of(holds.begin(), holds.end(),
					       [](const BufferHold &h) { return !h.held_fd() && !h.imported; });
		const bool imported =
			std::any_of(holds.begin(), holds.end(), [](const BufferHold &h) { return h.imported; });
		if (imported && !owned)
			out.push_back({ key, holds });
	}
	return out;
}

uint64_t SharedBufferCensus::vram_beyond_charge(pid_t pid) const
{
	const auto c = charged_.find(pid);
	if (c == charged_.end() || std::find(uncharged_.begin(), uncharged_.end(), pid) != uncharged_.end())
		return 0;
	uint64_t vram = 0;
	for (const auto &[key, holds] : holds_)
		for (const BufferHold &h : holds)
			if (h.pid == pid && is_vram(h))
				vram += h.size;
	return vram > c->second ? vram - c->second : 0;
}

std::vector<BufferHold> SharedBufferCensus::imported_holds(pid_t pid) const
{
	std::vector<BufferHold> out;
	for (const BufferKey &key : order_)
		for (const BufferHold &h : holds_.at(key))
			if (h.pid == pid && h.imported)
				out.push_back(h);
	return out;
}

std::string describe_size(uint64_t bytes)
{
	if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
		return strprintf("%llu MiB (%llu bytes)", static_cast<unsigned long long>(bytes >> 20),
				 static_cast<unsigned long long>(bytes));
	if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0)
		return strprintf("%llu KiB (%llu bytes)", static_cast<unsigned long long>(bytes >> 10),
				 static_cast<unsigned long long>(bytes));
	return strprintf("%llu bytes", static_cast<unsigned long long>(bytes));
}

std::string describe_holds(const std::vector<BufferHold> &holds)
{
	std::string out;
	for (const BufferHold &h : holds) {
		if (!out.empty())
			out += ", ";
		if (h.fd >= 0)
			out += strprintf("pid %d (dma-buf fd %d)", static_cast<int>(h.pid), h.fd);
		else if (h.held_fd())
			out += strprintf("pid %d (a dma-buf fd, criu file id %d)", static_cast<int>(h.pid), h.file_id);
		else
			out += strprintf("pid %d (%s on GPU 0x%04x at 0x%llx)", static_cast<int>(h.pid),
					 h.alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM ? "VRAM" : "GTT", h.gpu_id,
					 static_cast<unsigned long long>(h.addr));
	}
	return out;
}

} // namespace amdgpu
