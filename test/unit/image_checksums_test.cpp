// SPDX-License-Identifier: GPL-2.0-only
//
// The checksums of the GPU images: blocks cut per BO, the same digests however the bytes arrive
// (in pieces, or with holes), blocks of zeros marked instead of hashed, the sums image's round trip
// and its refusals, and the messages that name a damaged block.
#include "criu-amdgpu.pb-c.h"
#include "support/error.hpp"
#include "images/image_checksums.hpp"

#include "support/random_bytes.hpp"
#include "support/temp_dir.hpp"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace amdgpu {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

using test::random_bytes;

std::string error_of(const auto &fn)
{
	try {
		fn();
	} catch (const Error &e) {
		return e.what();
	}
	return "(no error)";
}

TEST(ImageChecksums, BlocksStartAtEachBoAndTheLastOfABoIsShorter)
{
	const std::vector<uint64_t> sizes { 2 * MiB + 4 * KiB, 8 * KiB, 1 * MiB };
	const std::vector<BlockPlace> grid = block_grid(sizes);
	ASSERT_EQ(grid.size(), 5u);
	EXPECT_EQ(grid[0].bo, 0u);
	EXPECT_EQ(grid[2].bo_offset, 2 * MiB);
	EXPECT_EQ(grid[2].len, 4 * KiB);
	EXPECT_EQ(grid[3].bo, 1u);
	EXPECT_EQ(grid[3].len, 8 * KiB);
	EXPECT_EQ(grid[4].len, 1 * MiB);
}

TEST(ImageChecksums, EachBlocksDigestIsTheHashOfItsBytesHoweverTheyArrive)
{
	const std::vector<uint64_t> sizes { 2 * MiB + 4 * KiB, 8 * KiB, 1 * MiB };
	const std::vector<uint8_t> payload = random_bytes(3 * MiB + 12 * KiB, 1);
	const std::vector<BlockPlace> grid = block_grid(sizes);

	std::vector<BlockSum> want;
	uint64_t at = 0;
	for (const BlockPlace &b : grid) {
		want.push_back({ false, digest_of({ payload.data() + at, b.len }) });
		at += b.len;
	}
	BlockSummer whole(sizes);
	whole.add(payload);
	EXPECT_EQ(whole.sums(), want);

	std::mt19937 rng(2);
	BlockSummer pieces(sizes);
	for (size_t pos = 0; pos < payload.size();) {
		const size_t n = std::min<size_t>(payload.size() - pos, 1 + rng() % (700 * KiB));
		pieces.add({ payload.data() + pos, n });
		pos += n;
	}
	EXPECT_EQ(pieces.sums(), want);
}

TEST(ImageChecksums, ABlockOfZerosIsMarkedAndAHoleInADataBlockHashesAsItsZeros)
{
	const std::vector<uint64_t> sizes { 2 * MiB };
	std::vector<uint8_t> payload(2 * MiB, 0);
	payload[1 * MiB + 512 * KiB] = 7; // block 1 has data after 512 KiB of zeros

	BlockSummer read(sizes);
	read.add_zeros(1 * MiB + 256 * KiB); // block 0 and a hole at the start of block 1
	read.add({ payload.data() + 1 * MiB + 256 * KiB, 768 * KiB });
	ASSERT_EQ(read.sums().size(), 2u);
	EXPECT_TRUE(read.sums()[0].zero);
	EXPECT_EQ(read.sums()[0].digest, Digest {});
	EXPECT_FALSE(read.sums()[1].zero);
	EXPECT_EQ(read.sums()[1].digest, digest_of({ payload.data() + 1 * MiB, 1 * MiB }));

	BlockSummer written(sizes);
	written.add(payload);
	EXPECT_EQ(written.sums(), read.sums());
}

ImageSums sample_sums()
{
	ImageSums sums;
	sums.kfd = digest_of(random_bytes(100, 3));
	sums.pages.push_back(
		{ 0x4b53, 2 * MiB, { 2 * MiB }, { { true, {} }, { false, digest_of(random_bytes(64, 4)) } }, {} });
	sums.pages.push_back({ 0xe949, 0, {}, {}, {} });
	return sums;
}

TEST(ImageChecksums, TheSumsImageRoundTrips)
{
	test::TempDir dir;
	const ImageSums sums = sample_sums();
	write_image_sums(ImageDir::files(dir.fd()), 7, sums);
	const std::optional<ImageSums> back = read_image_sums(ImageDir::files(dir.fd()), 7);
	ASSERT_TRUE(back);
	EXPECT_EQ(back->kfd, sums.kfd);
	ASSERT_EQ(back->pages.size(), 2u);
	EXPECT_EQ(back->pages[0].gpu_id, 0x4b53u);
	EXPECT_EQ(back->pages[0].stored_size, 2 * MiB);
	EXPECT_EQ(back->pages[0].bo_sizes, sums.pages[0].bo_sizes);
	EXPECT_EQ(back->pages[0].blocks, sums.pages[0].blocks);
	EXPECT_TRUE(back->pages[1].blocks.empty());
	EXPECT_FALSE(read_image_sums(ImageDir::files(dir.fd()), 8)) << "no sums image: nothing, no error";
}

// Each field's damage, in a message packed by hand through the generated code.
TEST(ImageChecksums, ASumsImageThisPluginDidNotWriteIsRefusedNamingWhy)
{
	const std::vector<uint8_t> good = pack_image_sums(sample_sums());
	const auto refusal = [&](auto &&edit) {
		AmdgpuImageSums *msg = amdgpu_image_sums__unpack(nullptr, good.size(), good.data());
		edit(*msg);
		std::vector<uint8_t> bytes(amdgpu_image_sums__get_packed_size(msg));
		amdgpu_image_sums__pack(msg, bytes.data());
		amdgpu_image_sums__free_unpacked(msg, nullptr);
		return error_of([&] { unpack_image_sums(bytes, "amdgpu-sums-7.img"); });
	};
	EXPECT_NE(refusal([](AmdgpuImageSums &m) { m.algorithm = 2; }).find("algorithm 2 is not XXH3-128"),
		  std::string::npos);
	EXPECT_NE(refusal([](AmdgpuImageSums &m) { m.block_size = 4096; }).find("block of 4096 bytes"),
		  std::string::npos);
	EXPECT_NE(refusal([](AmdgpuImageSums &m) { m.pages[0]->digests.len -= 1; }).find("2 block kinds but 31"),
		  std::string::npos);
	EXPECT_NE(refusal([](AmdgpuImageSums &m) {
			  m.pages[0]->bo_sizes[0] = 3 * MiB;
		  }).find("GPU 0x4b53 has 2 block kinds, but its 1 BOs make 3 blocks"),
		  std::string::npos);
	EXPECT_NE(refusal([](AmdgpuImageSums &m) {
			  m.pages[0]->stored_size = 1;
		  }).find("GPU 0x4b53's pages image holds 1 bytes, but its blocks make 2097152"),
		  std::string::npos);
	EXPECT_NE(refusal([](AmdgpuImageSums &m) { m.pages[0]->kinds.data[1] = 9; }).find("block 2 has kind 9"),
		  std::string::npos);
	EXPECT_NE(refusal([](AmdgpuImageSums &m) { m.pages[1]->gpu_id = 0x4b53; }).find("GPU 0x4b53 a second time"),
		  std::string::npos);
	EXPECT_NE(refusal([](AmdgpuImageSums &m) { m.has_kfd_digest = false; }).find("kfd image's digest"),
		  std::string::npos);
	const std::vector<uint8_t> garbage(40, 0xff);
	EXPECT_NE(error_of([&] {
			  unpack_image_sums(garbage, "amdgpu-sums-7.img");
		  }).find("amdgpu-sums-7.img is not a valid amdgpu_image_sums message"),
		  std::string::npos);
}

TEST(ImageChecksums, ADamagedBlockIsNamedByImageGpuBoAndOffset)
{
	const std::vector<uint64_t> sizes { 4 * KiB, 3 * MiB };
	const std::vector<uint64_t> addrs { 0x7f0000000000, 0x7f0000200000 };
	std::vector<uint8_t> payload = random_bytes(3 * MiB + 4 * KiB, 5);
	BlockSummer dumped(sizes);
	dumped.add(payload);
	const PagesSums sums { 0x4b53, payload.size(), sizes, dumped.sums(), {} };

	BlockSummer intact(sizes);
	intact.add(payload);
	check_pages_sums(sums, intact.sums(), sizes, addrs, "amdgpu-pages-7-4b53.img");

	payload[4 * KiB + 1 * MiB + 10] ^= 0x10; // the second block of the second BO
	BlockSummer damaged(sizes);
	damaged.add(payload);
	const std::string why =
		error_of([&] { check_pages_sums(sums, damaged.sums(), sizes, addrs, "amdgpu-pages-7-4b53.img"); });
	EXPECT_NE(why.find("image amdgpu-pages-7-4b53.img is damaged: GPU 0x4b53, the BO at 0x7f0000200000, "
			   "bytes 0x100000..0x200000 (block 3 of 4)"),
		  std::string::npos)
		<< why;

	const std::vector<uint64_t> one_bo { 4 * KiB };
	const std::string other_bos =
		error_of([&] { check_pages_sums(sums, intact.sums(), one_bo, addrs, "amdgpu-pages-7-4b53.img"); });
	EXPECT_NE(other_bos.find("the kfd image gives it 1 BOs, but its checksums were made for 2 BOs of other sizes"),
		  std::string::npos)
		<< other_bos;
}

TEST(ImageChecksums, AKfdPayloadThatDiffersFromItsDigestIsRefused)
{
	std::vector<uint8_t> payload = random_bytes(995, 6);
	ImageSums sums;
	sums.kfd = digest_of(payload);
	check_kfd_digest(sums, payload, "amdgpu-kfd-7.img", "amdgpu-sums-7.img");
	payload[500] ^= 1;
	const std::string why =
		error_of([&] { check_kfd_digest(sums, payload, "amdgpu-kfd-7.img", "amdgpu-sums-7.img"); });
	EXPECT_NE(why.find("image amdgpu-kfd-7.img is damaged: its 995 payload bytes hash to"), std::string::npos)
		<< why;
}

} // namespace
} // namespace amdgpu
