// SPDX-License-Identifier: GPL-2.0-only
#include "copy/transfer_plan.hpp"

#include <gtest/gtest.h>

namespace amdgpu {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// Every byte of every BO appears exactly once, in image order, within the chunk limits.
void expect_covers(const std::vector<TransferChunk> &chunks, const std::vector<uint64_t> &sizes, uint64_t slot,
		   size_t max_pieces)
{
	uint64_t image = 0;
	uint32_t bo = 0;
	uint64_t bo_off = 0;
	for (const TransferChunk &c : chunks) {
		EXPECT_EQ(c.image_offset, image);
		EXPECT_LE(c.len, slot);
		EXPECT_LE(c.pieces.size(), max_pieces);
		uint64_t slot_off = 0;
		for (const TransferPiece &p : c.pieces) {
			while (bo < sizes.size() && bo_off == sizes[bo]) {
				bo++;
				bo_off = 0;
			}
			ASSERT_LT(bo, sizes.size());
			EXPECT_EQ(p.bo, bo);
			EXPECT_EQ(p.bo_offset, bo_off);
			EXPECT_EQ(p.slot_offset, slot_off);
			EXPECT_GT(p.len, 0u);
			bo_off += p.len;
			slot_off += p.len;
		}
		EXPECT_EQ(slot_off, c.len);
		image += c.len;
	}
	uint64_t total = 0;
	for (uint64_t s : sizes)
		total += s;
	EXPECT_EQ(image, total);
}

TEST(TransferPlan, LargeBoIsCutIntoSlotSizedChunks)
{
	const std::vector<uint64_t> sizes = { 10 * kMiB };
	const auto chunks = plan_transfer(sizes, 4 * kMiB, 64);
	ASSERT_EQ(chunks.size(), 3u);
	EXPECT_EQ(chunks[2].len, 2 * kMiB);
	expect_covers(chunks, sizes, 4 * kMiB, 64);
}

TEST(TransferPlan, SmallBosShareAChunk)
{
	const std::vector<uint64_t> sizes = { 4096, 8192, 0, 4096, 3 * kMiB };
	const auto chunks = plan_transfer(sizes, 2 * kMiB, 64);
	ASSERT_EQ(chunks.size(), 2u);
	EXPECT_EQ(chunks[0].pieces.size(), 4u) << "three small BOs and the head of the large one";
	expect_covers(chunks, sizes, 2 * kMiB, 64);
}

TEST(TransferPlan, PieceLimitClosesChunks)
{
	const std::vector<uint64_t> sizes(10, 4096);
	const auto chunks = plan_transfer(sizes, 64 * kMiB, 4);
	ASSERT_EQ(chunks.size(), 3u);
	expect_covers(chunks, sizes, 64 * kMiB, 4);
}

TEST(TransferPlan, NoBytesNoChunks)
{
	EXPECT_TRUE(plan_transfer(std::vector<uint64_t> {}, kMiB, 8).empty());
	EXPECT_TRUE(plan_transfer(std::vector<uint64_t> { 0, 0 }, kMiB, 8).empty());
}

TEST(TransferPlan, StagingStaysWithinTheBudget)
{
	const StagingShape big = staging_shape(64 * kMiB, 100ull << 30, 4096);
	EXPECT_EQ(big.slots, 8u);
	EXPECT_EQ(big.slot_size, 8 * kMiB);
	const StagingShape huge = staging_shape(4096 * kMiB, 100ull << 30, 4096);
	EXPECT_EQ(huge.slots, 16u);
	EXPECT_EQ(huge.slot_size, 256 * kMiB);
	const StagingShape small = staging_shape(1 * kMiB, 100ull << 30, 4096);
	EXPECT_EQ(small.slots, 2u);
	EXPECT_LE(small.slots * small.slot_size, 1 * kMiB);
	const StagingShape tiny_job = staging_shape(64 * kMiB, 10000, 4096);
	EXPECT_EQ(tiny_job.slot_size, 12288u) << "no slot larger than the job";
}

} // namespace
} // namespace amdgpu
