// SPDX-License-Identifier: GPL-2.0-only
#include "copy/bo_transfer.hpp"

#include "copy/sdma_engine.hpp"
#include "engines/memory_engines.hpp"
#include "images/image_chain.hpp"
#include "images/image_store.hpp"
#include "support/error.hpp"
#include "support/page_cache.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace amdgpu {
namespace {

// Through criu's image streamer the GPUs take turns at their pages image, in gpu_id order. When
// the first in line fails, the others are cancelled: criu must hear of the GPU that failed, not of
// one that was only stopped (whatever their order among the jobs).
TEST(BoTransfer, CriuHearsTheGpuThatFailedNotOneThatWasCancelled)
{
	test::TempDir dir;
	const ImageDir streamed =
		ImageDir::streamed(dir.fd(), ImageDir::Stream::capture, [](const std::string &name, bool) {
			return name == pages_image_name(7, 0x1000) ? -ENOSPC : -EIO;
		});
	std::vector<GpuCopyJob> jobs(2);
	jobs[0].image_gpu_id = jobs[0].gpu_id = 0x2000; // second in line: cancelled
	jobs[1].image_gpu_id = jobs[1].gpu_id = 0x1000; // first in line: fails
	try {
		copy_bo_contents(CopyDirection::to_image, jobs, streamed, 7, 1 << 20, sdma_engines());
		FAIL() << "the copy succeeded";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -ENOSPC) << e.what();
		EXPECT_NE(std::string(e.what()).find(pages_image_name(7, 0x1000)), std::string::npos) << e.what();
	}
}

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr uint32_t kKfd = 9;

// The BOs of one GPU, held by the test: what the plugin dumps from and restores into.
struct Bos {
	std::vector<std::vector<uint8_t>> bytes;

	std::vector<std::span<uint8_t>> spans()
	{
		std::vector<std::span<uint8_t>> out;
		for (auto &b : bytes)
			out.emplace_back(b);
		return out;
	}
	std::vector<uint64_t> sizes() const
	{
		std::vector<uint64_t> out;
		for (const auto &b : bytes)
			out.push_back(b.size());
		return out;
	}
};

// BOs of random bytes, with a megabyte of zeros in the first and a BO of zeros after it, as GPU
// memory a job has only partly written looks.
Bos gpu_memory(uint32_t seed)
{
	Bos bos;
	bos.bytes.push_back(test::random_bytes(3 * MiB + 4 * KiB, seed));
	std::fill_n(bos.bytes[0].begin() + MiB, MiB, 0);
	bos.bytes.emplace_back(2 * MiB, 0);
	bos.bytes.push_back(test::random_bytes(64 * KiB, seed + 1));
	return bos;
}

GpuCopyJob job_of(uint32_t gpu_id, const Bos &bos)
{
	GpuCopyJob job;
	job.image_gpu_id = job.gpu_id = gpu_id;
	job.sizes = bos.sizes();
	job.dmabuf_fds.assign(job.sizes.size(), -1); // the memory engines need none
	job.addrs.assign(job.sizes.size(), 0);
	return job;
}

uint64_t allocated_bytes(int dirfd, const std::string &name)
{
	struct stat st {};
	if (fstatat(dirfd, name.c_str(), &st, 0))
		return 0;
	return static_cast<uint64_t>(st.st_blocks) * 512;
}

// The transfer's own host side (staging ring, checksums, zero blocks as holes, image I/O) carries
// two GPUs' memory to their images and back, byte for byte, through a ring far smaller than the
// memory; the zeros take no room in the images and the restore's sums are the dump's.
TEST(BoTransfer, DumpAndRestoreCarryEveryByteThroughASmallRing)
{
	test::TempDir dir;
	const ImageDir images = ImageDir::files(dir.fd());
	Bos gpu_a = gpu_memory(1), gpu_b = gpu_memory(2);
	test::HostVramEngines engines;
	engines.set_bos(0x1111, gpu_a.spans());
	engines.set_bos(0x2222, gpu_b.spans());
	const std::vector<GpuCopyJob> jobs { job_of(0x1111, gpu_a), job_of(0x2222, gpu_b) };

	const std::vector<CopyStats> dumped =
		copy_bo_contents(CopyDirection::to_image, jobs, images, kKfd, MiB, engines);
	ASSERT_EQ(dumped.size(), 2u);
	for (const CopyStats &s : dumped) {
		EXPECT_EQ(s.bytes, 5 * MiB + 68 * KiB);
		// the zeros, but where a 64 KiB block of the image holds some data
		EXPECT_GE(s.zero_bytes, 3 * MiB - 128 * KiB) << describe(s);
		EXPECT_EQ(s.io_bytes + s.zero_bytes, s.bytes) << describe(s);
		EXPECT_LE(s.staging_bytes, MiB) << describe(s);
		EXPECT_LT(allocated_bytes(dir.fd(), pages_image_name(kKfd, s.gpu_id)), 3 * MiB) << describe(s);
	}

	const Bos original_a = gpu_a, original_b = gpu_b;
	for (Bos *bos : { &gpu_a, &gpu_b })
		for (auto &b : bos->bytes)
			std::fill(b.begin(), b.end(), 0xee);
	const std::vector<CopyStats> restored =
		copy_bo_contents(CopyDirection::from_image, jobs, images, kKfd, MiB, engines);
	EXPECT_EQ(gpu_a.bytes, original_a.bytes);
	EXPECT_EQ(gpu_b.bytes, original_b.bytes);
	for (size_t i = 0; i < 2; i++) {
		EXPECT_GE(restored[i].zero_bytes, 3 * MiB - 128 * KiB) << describe(restored[i]);
		ASSERT_EQ(restored[i].sums.blocks.size(), dumped[i].sums.blocks.size());
		for (size_t b = 0; b < dumped[i].sums.blocks.size(); b++)
			EXPECT_EQ(restored[i].sums.blocks[b].digest, dumped[i].sums.blocks[b].digest) << "block " << b;
	}
}

// A dump over an earlier checkpoint writes only the block that changed; the restore takes the
// rest from the earlier image and puts back the memory as it was at the second dump.
TEST(BoTransfer, IncrementalDumpWritesWhatChangedAndRestoresThroughTheChain)
{
	test::TempDir root;
	namespace fs = std::filesystem;
	fs::create_directory(root.path() / "1");
	fs::create_directory(root.path() / "2");
	fs::create_directory_symlink("../1", root.path() / "2" / "parent");
	const unique_fd first(open((root.path() / "1").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	const unique_fd second(open((root.path() / "2").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));

	Bos gpu = gpu_memory(3);
	test::HostVramEngines engines;
	engines.set_bos(0x3333, gpu.spans());
	std::vector<GpuCopyJob> jobs { job_of(0x3333, gpu) };
	ImageSums first_sums; // what the dump session writes beside the pages: the chain's index
	first_sums.pages.push_back(
		copy_bo_contents(CopyDirection::to_image, jobs, ImageDir::files(first.get()), kKfd, MiB, engines)[0]
			.sums);
	write_image_sums(ImageDir::files(first.get()), kKfd, first_sums);
	gpu.bytes[0][2 * MiB + 100] ^= 0xff; // one byte of the third block
	const ImageChain chain = ImageChain::below(second.get());
	jobs[0].chain = &chain;
	const std::vector<CopyStats> dumped =
		copy_bo_contents(CopyDirection::to_image, jobs, ImageDir::files(second.get()), kKfd, MiB, engines);
	EXPECT_EQ(dumped[0].io_bytes, MiB) << describe(dumped[0]); // the changed block only
	// the first block, BO 0's 4 KiB tail and BO 2
	EXPECT_EQ(dumped[0].chain_bytes, MiB + 68 * KiB) << describe(dumped[0]);

	const Bos original = gpu;
	for (auto &b : gpu.bytes)
		std::fill(b.begin(), b.end(), 0xee);
	jobs[0].sums = &dumped[0].sums;
	const std::vector<CopyStats> restored =
		copy_bo_contents(CopyDirection::from_image, jobs, ImageDir::files(second.get()), kKfd, MiB, engines);
	EXPECT_EQ(gpu.bytes, original.bytes);
	EXPECT_EQ(restored[0].chain_bytes, dumped[0].chain_bytes) << describe(restored[0]);
}

// The benchmarks' engine stands for a DMA engine: once the ring has gone round, putting the
// VRAM's bytes in staging costs the host nothing, and a restore of what it dumped sums alike.
TEST(BoTransfer, PatternEngineTouchesHostMemoryOnlyInTheRingsFirstRound)
{
	test::TempDir dir;
	const ImageDir images = ImageDir::files(dir.fd());
	const uint64_t budget = 4 * MiB, total = 48 * MiB;
	const uint64_t period = test::ring_period(budget, total);
	ASSERT_GT(period, 0u);
	test::PatternVram vram;
	vram.period = period;
	vram.dense = [](uint64_t block) { return block < 40; };
	test::PatternVramEngines engines(vram);
	GpuCopyJob job;
	job.image_gpu_id = job.gpu_id = 0x4444;
	job.sizes = { 32 * MiB, 16 * MiB };
	job.dmabuf_fds = { -1, -1 };
	job.addrs = { 0, 0 };
	const std::vector<GpuCopyJob> jobs { job };

	const std::vector<CopyStats> dumped =
		copy_bo_contents(CopyDirection::to_image, jobs, images, kKfd, budget, engines);
	EXPECT_EQ(dumped[0].zero_bytes, 8 * MiB) << describe(dumped[0]);
	EXPECT_LE(engines.host_bytes_written(), period + 8 * MiB) << "the ring's round and the zeros once";
	// every dense block differs from every other
	std::set<std::string> digests;
	for (const BlockSum &b : dumped[0].sums.blocks)
		if (!b.zero)
			digests.insert(b.digest.hex());
	EXPECT_EQ(digests.size(), 40u);

	const std::vector<CopyStats> restored =
		copy_bo_contents(CopyDirection::from_image, jobs, images, kKfd, budget, engines);
	ASSERT_EQ(restored[0].sums.blocks.size(), dumped[0].sums.blocks.size());
	for (size_t b = 0; b < dumped[0].sums.blocks.size(); b++)
		EXPECT_EQ(restored[0].sums.blocks[b].digest, dumped[0].sums.blocks[b].digest) << "block " << b;
}

// A dump to a disk does not fill the node's memory with its images: what was written goes to the
// disk as the copy goes, and leaves the page cache once there, all but the last 64 to 128 MiB of
// each image.
TEST(BoTransfer, ADumpToADiskKeepsLittleOfItsImageInThePageCache)
{
	test::TempDir dir;
	if (test::on_tmpfs(dir.fd()))
		GTEST_SKIP() << "the test directory is on tmpfs, whose pages are the file itself";
	Bos gpu;
	gpu.bytes.emplace_back(224 * MiB);
	for (size_t i = 0; i < gpu.bytes[0].size(); i += 4096)
		std::memset(gpu.bytes[0].data() + i, static_cast<int>((i >> 12) | 1), 4096);
	test::HostVramEngines engines;
	engines.set_bos(0x5555, gpu.spans());
	const std::vector<GpuCopyJob> jobs { job_of(0x5555, gpu) };
	const std::vector<CopyStats> dumped =
		copy_bo_contents(CopyDirection::to_image, jobs, ImageDir::files(dir.fd()), kKfd, 8 * MiB, engines);
	EXPECT_EQ(dumped[0].io_bytes, 224 * MiB) << describe(dumped[0]);
	EXPECT_LE(test::cached_bytes(dir.fd(), pages_image_name(kKfd, 0x5555)),
		  2 * ImageWriter::kWriteBehind + 8 * MiB);
}

} // namespace
} // namespace amdgpu
