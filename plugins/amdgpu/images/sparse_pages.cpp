// SPDX-License-Identifier: GPL-2.0-only
#include "images/sparse_pages.hpp"

#include "support/error.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace amdgpu {

bool is_zero(const uint8_t *p, size_t n)
{
	// Word at a time; dense data fails on its first word.
	while (n && reinterpret_cast<uintptr_t>(p) % sizeof(uint64_t)) {
		if (*p++)
			return false;
		n--;
	}
	for (; n >= 4 * sizeof(uint64_t); p += 4 * sizeof(uint64_t), n -= 4 * sizeof(uint64_t)) {
		uint64_t w[4];
		std::memcpy(w, p, sizeof(w));
		if (w[0] | w[1] | w[2] | w[3])
			return false;
	}
	while (n--)
		if (*p++)
			return false;
	return true;
}

std::vector<Extent> zero_runs(std::span<const uint8_t> bytes, uint64_t base)
{
	std::vector<Extent> out;
	uint64_t pos = 0;
	while (pos < bytes.size()) {
		const uint64_t block_end =
			std::min<uint64_t>(bytes.size(), (base + pos) / kZeroBlock * kZeroBlock + kZeroBlock - base);
		const bool zero = is_zero(bytes.data() + pos, static_cast<size_t>(block_end - pos));
		if (!out.empty() && out.back().zero == zero)
			out.back().len += block_end - pos;
		else
			out.push_back({ base + pos, block_end - pos, zero });
		pos = block_end;
	}
	return out;
}

HoleMap HoleMap::of(std::vector<std::pair<uint64_t, uint64_t>> holes)
{
	HoleMap m;
	std::sort(holes.begin(), holes.end());
	for (const auto &[off, len] : holes) {
		if (!len)
			continue;
		if (!m.holes_.empty() && off <= m.holes_.back().first + m.holes_.back().second)
			m.holes_.back().second = std::max(m.holes_.back().first + m.holes_.back().second, off + len) -
						 m.holes_.back().first;
		else
			m.holes_.emplace_back(off, len);
	}
	return m;
}

HoleMap HoleMap::of_file(int fd, uint64_t payload_start, uint64_t payload_size)
{
	HoleMap m;
	const off_t saved = lseek(fd, 0, SEEK_CUR);
	if (saved < 0)
		fail_errno(errno, "cannot tell the position in a pages image");
	const uint64_t end = payload_start + payload_size;
	uint64_t pos = payload_start;
	while (pos < end && m.holes_.size() < kMaxHoles) {
		const off_t data = lseek(fd, static_cast<off_t>(pos), SEEK_DATA);
		if (data < 0 && errno != ENXIO)
			break; // no hole information: all of it is data
		const uint64_t data_at = data < 0 ? end : std::min<uint64_t>(static_cast<uint64_t>(data), end);
		if (data_at > pos && data_at - pos >= kMinFillBytes)
			m.holes_.emplace_back(pos - payload_start, data_at - pos);
		if (data_at >= end)
			break;
		const off_t hole = lseek(fd, static_cast<off_t>(data_at), SEEK_HOLE);
		if (hole < 0 || static_cast<uint64_t>(hole) <= data_at)
			break;
		pos = static_cast<uint64_t>(hole);
	}
	if (lseek(fd, saved, SEEK_SET) != saved)
		fail_errno(errno, "cannot return to the position in a pages image");
	return m;
}

std::vector<Extent> HoleMap::split(uint64_t offset, uint64_t len) const
{
	std::vector<Extent> out;
	const uint64_t end = offset + len;
	uint64_t pos = offset;
	auto it = std::upper_bound(holes_.begin(), holes_.end(), std::make_pair(offset, UINT64_MAX));
	if (it != holes_.begin())
		--it;
	for (; it != holes_.end() && it->first < end; ++it) {
		uint64_t h0 = std::max(it->first, pos), h1 = std::min(it->first + it->second, end);
		h0 = (h0 + 3) & ~uint64_t(3);
		h1 &= ~uint64_t(3);
		if (h1 <= h0 || h1 - h0 < kMinFillBytes)
			continue;
		if (h0 > pos)
			out.push_back({ pos, h0 - pos, false });
		out.push_back({ h0, h1 - h0, true });
		pos = h1;
	}
	if (pos < end)
		out.push_back({ pos, end - pos, false });
	return out;
}

uint64_t HoleMap::hole_bytes() const
{
	uint64_t n = 0;
	for (const auto &h : holes_)
		n += h.second;
	return n;
}

} // namespace amdgpu
