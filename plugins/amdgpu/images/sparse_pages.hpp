// SPDX-License-Identifier: GPL-2.0-only
//
// Zeros in the pages images cost nothing. Dumping, a block of BO contents that is all zeros is not
// written: the image file gets a hole there (its size and layout do not change, so any reader,
// an older plugin, cat or crit, still reads zeros at the same offsets). Restoring, the plugin asks
// the file where its holes are (SEEK_DATA/SEEK_HOLE) and has the copy engine fill them with zeros
// instead of reading them. A stream, or a file system that stores holes as zeros, simply carries
// the zeros: nothing else changes.
//
// Sizes: the zero test looks at kZeroBlock-byte blocks of the payload (aligned in the payload),
// stopping at the first non-zero byte, so dense data costs one word per block; a hole shorter than
// kMinFillBytes is read like data (the file system reports holes in whole blocks, and ours are at
// least kZeroBlock minus the 8-byte header's offset); a file reports at most kMaxHoles holes, the
// rest of it is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace amdgpu {

inline constexpr uint64_t kZeroBlock = 64 * 1024;
inline constexpr uint64_t kMinFillBytes = 32 * 1024;
inline constexpr size_t kMaxHoles = size_t(1) << 20;

struct Extent {
	uint64_t offset; // in the payload
	uint64_t len;
	bool zero;
};

bool is_zero(const uint8_t *p, size_t n);

// `bytes`, which sit at payload offset `base`, as alternating data and zero extents: a zero
// extent is a run of whole kZeroBlock blocks (the first and last may be cut by `bytes`' ends).
std::vector<Extent> zero_runs(std::span<const uint8_t> bytes, uint64_t base);

// Where a file's payload has holes.
class HoleMap {
public:
	HoleMap() = default;
	// The holes of the payload [0, payload_size) that starts at file offset `payload_start` of
	// `fd`, which must be a regular file; the file offset is left where it was.
	static HoleMap of_file(int fd, uint64_t payload_start, uint64_t payload_size);
	// For tests and for holes found another way: [offset, offset + len) pairs in the payload.
	static HoleMap of(std::vector<std::pair<uint64_t, uint64_t>> holes);

	// [offset, offset + len) as data and zero extents, in order; a zero extent is a hole of at
	// least kMinFillBytes, dword-aligned at both ends.
	std::vector<Extent> split(uint64_t offset, uint64_t len) const;
	uint64_t hole_bytes() const;
	size_t size() const { return holes_.size(); }

private:
	std::vector<std::pair<uint64_t, uint64_t>> holes_; // sorted, disjoint
};

} // namespace amdgpu
