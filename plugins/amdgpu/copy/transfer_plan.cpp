// SPDX-License-Identifier: GPL-2.0-only
#include "copy/transfer_plan.hpp"

#include <algorithm>

namespace amdgpu {

std::vector<TransferChunk> plan_transfer(std::span<const uint64_t> bo_sizes, uint64_t slot_size, size_t max_pieces)
{
	std::vector<TransferChunk> chunks;
	TransferChunk cur { 0, 0, {} };
	uint64_t image_offset = 0;
	auto close_chunk = [&] {
		if (cur.len)
			chunks.push_back(std::move(cur));
		cur = TransferChunk { image_offset, 0, {} };
	};
	for (uint32_t bo = 0; bo < bo_sizes.size(); bo++) {
		uint64_t done = 0;
		while (done < bo_sizes[bo]) {
			if (cur.len == slot_size || cur.pieces.size() == max_pieces)
				close_chunk();
			const uint64_t len = std::min(bo_sizes[bo] - done, slot_size - cur.len);
			cur.pieces.push_back({ bo, done, cur.len, len });
			cur.len += len;
			done += len;
			image_offset += len;
		}
	}
	close_chunk();
	return chunks;
}

StagingShape staging_shape(uint64_t budget, uint64_t total_bytes, uint64_t page_size)
{
	// Slots of about 8 MiB, 2 to 16 of them: the engine always has submissions queued, and the
	// pipeline's ends cost little (the sink waits for the first chunk, the engine idles during the
	// last write: one slot each, 3 % of a 256 MiB GPU at 8 MiB against 6 % at 16 MiB).
	constexpr uint64_t kSlotTarget = 8ull << 20;
	const uint32_t slots = static_cast<uint32_t>(std::clamp<uint64_t>(budget / kSlotTarget, 2, 16));
	uint64_t slot = std::max(page_size, budget / slots / page_size * page_size);
	const uint64_t needed = std::max(page_size, (total_bytes + page_size - 1) / page_size * page_size);
	slot = std::min(slot, needed);
	return { slots, slot };
}

} // namespace amdgpu
