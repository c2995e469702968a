// SPDX-License-Identifier: GPL-2.0-only
//
// How one GPU's BO contents are cut into staging-buffer-sized chunks. The pages image of a GPU is
// the concatenation of its VRAM/GTT BOs in bucket order; a chunk is a contiguous range of that
// stream, made of pieces of one or more BOs, that fits one staging buffer and one indirect buffer.
// Pure: the transfer code executes the plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace amdgpu {

struct TransferPiece {
	uint32_t bo;	      // index into the GPU's BO list
	uint64_t bo_offset;   // where in the BO
	uint64_t slot_offset; // where in the staging buffer
	uint64_t len;
};

struct TransferChunk {
	uint64_t image_offset; // where in the pages payload
	uint64_t len;
	std::vector<TransferPiece> pieces;
};

// Plans the chunks for BOs of `bo_sizes` bytes, each chunk at most `slot_size` bytes and
// `max_pieces` pieces. Zero-sized BOs contribute nothing.
std::vector<TransferChunk> plan_transfer(std::span<const uint64_t> bo_sizes, uint64_t slot_size, size_t max_pieces);

// The staging ring for a host-memory budget: `slots` buffers of `slot_size` bytes (page
// multiples), slots * slot_size <= budget, at least two slots so that the copy engine and the
// file I/O overlap, and no slot larger than needed for `total_bytes`.
struct StagingShape {
	uint32_t slots;
	uint64_t slot_size;
};
StagingShape staging_shape(uint64_t budget, uint64_t total_bytes, uint64_t page_size);

} // namespace amdgpu
