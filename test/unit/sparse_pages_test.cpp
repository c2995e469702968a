// SPDX-License-Identifier: GPL-2.0-only
//
// Pages images with holes: the zero test, the extents of a payload, and the framed writer and
// reader over a file (holes where zeros were, plain read() still sees zeros) and over a pipe
// (every byte carried).
#include "images/image_store.hpp"
#include "images/sparse_pages.hpp"

#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace amdgpu {
namespace {

constexpr uint64_t KiB = 1024;

TEST(SparsePages, ZeroTestStopsAtAnyNonZeroByte)
{
	std::vector<uint8_t> b(100 * KiB + 3, 0);
	EXPECT_TRUE(is_zero(b.data(), b.size()));
	EXPECT_TRUE(is_zero(b.data() + 1, b.size() - 1)) << "unaligned start";
	b.back() = 1;
	EXPECT_FALSE(is_zero(b.data(), b.size()));
	EXPECT_FALSE(is_zero(b.data() + 5, b.size() - 5));
	b.back() = 0;
	b[40 * KiB + 7] = 0x80;
	EXPECT_FALSE(is_zero(b.data(), b.size()));
	EXPECT_TRUE(is_zero(b.data(), 40 * KiB + 7));
}

TEST(SparsePages, ZeroRunsAreWholeBlocksOfThePayload)
{
	// data block, three zero blocks, a block with one byte set, then zeros to the end
	std::vector<uint8_t> b(6 * kZeroBlock, 0);
	b[5] = 1;
	b[4 * kZeroBlock + kZeroBlock / 2] = 1;
	const auto runs = zero_runs(b, 0);
	ASSERT_EQ(runs.size(), 4u);
	EXPECT_FALSE(runs[0].zero);
	EXPECT_EQ(runs[0].len, kZeroBlock);
	EXPECT_TRUE(runs[1].zero);
	EXPECT_EQ(runs[1].offset, kZeroBlock);
	EXPECT_EQ(runs[1].len, 3 * kZeroBlock);
	EXPECT_FALSE(runs[2].zero);
	EXPECT_EQ(runs[2].len, kZeroBlock);
	EXPECT_TRUE(runs[3].zero);
	EXPECT_EQ(runs[3].offset + runs[3].len, 6 * kZeroBlock);
}

TEST(SparsePages, ZeroRunsFollowThePayloadsBlocksNotTheBuffers)
{
	// the buffer starts 4 KiB before a block boundary of the payload
	std::vector<uint8_t> b(4 * KiB + kZeroBlock, 0);
	b[0] = 1;
	const auto runs = zero_runs(b, kZeroBlock - 4 * KiB);
	ASSERT_EQ(runs.size(), 2u);
	EXPECT_EQ(runs[0].len, 4 * KiB);
	EXPECT_FALSE(runs[0].zero);
	EXPECT_EQ(runs[1].offset, kZeroBlock);
	EXPECT_TRUE(runs[1].zero);
}

TEST(SparsePages, SplitCutsHolesToTheRangeToDwordsAndIgnoresSmallOnes)
{
	const HoleMap m =
		HoleMap::of({ { 100 * KiB, 200 * KiB }, { 500 * KiB, 4 * KiB }, { 600 * KiB + 2, 64 * KiB } });
	auto e = m.split(0, 400 * KiB);
	ASSERT_EQ(e.size(), 3u);
	EXPECT_EQ(e[0].len, 100 * KiB);
	EXPECT_FALSE(e[0].zero);
	EXPECT_TRUE(e[1].zero);
	EXPECT_EQ(e[1].offset, 100 * KiB);
	EXPECT_EQ(e[1].len, 200 * KiB);
	EXPECT_FALSE(e[2].zero);

	e = m.split(150 * KiB, 100 * KiB); // inside the hole
	ASSERT_EQ(e.size(), 1u);
	EXPECT_TRUE(e[0].zero);

	e = m.split(450 * KiB, 100 * KiB); // a 4 KiB hole is read
	ASSERT_EQ(e.size(), 1u);
	EXPECT_FALSE(e[0].zero);

	e = m.split(590 * KiB, 100 * KiB); // the hole's ends come in to dwords
	ASSERT_EQ(e.size(), 3u);
	EXPECT_EQ(e[1].offset, 600 * KiB + 4);
	EXPECT_EQ(e[1].len % 4, 0u);
	EXPECT_EQ(e[0].len + e[1].len + e[2].len, 100 * KiB);
	EXPECT_EQ(m.hole_bytes(), 268 * KiB);
}

class SparseImage : public ::testing::Test {
protected:
	void SetUp() override { ASSERT_GE(dirfd_, 0); }

	// 8 MiB: 80 % zeros in large runs, the rest a pattern with scattered zero pages
	static std::vector<uint8_t> payload()
	{
		std::vector<uint8_t> p(8 << 20, 0);
		for (size_t i = 0; i < p.size(); i++) {
			const size_t mib = i >> 20;
			if (mib % 5 == 2 && (i >> 12) % 7)
				p[i] = static_cast<uint8_t>(i * 31 + 7);
		}
		return p;
	}

	// /var/tmp: a disk file system, where holes are holes (not every /tmp is one)
	const test::TempDir tmp_ { "/var/tmp" };
	const std::string dir_ = tmp_.str();
	const int dirfd_ = tmp_.fd();
};

TEST_F(SparseImage, ZerosBecomeHolesAndPlainReadsStillSeeThem)
{
	const std::vector<uint8_t> p = payload();
	const ImageDir dir = ImageDir::files(dirfd_);
	ImageWriter w(dir, "pages.img", p.size());
	for (size_t off = 0; off < p.size(); off += 1 << 20)
		w.write_sparse({ p.data() + off, size_t(1) << 20 });
	w.finish();
	EXPECT_EQ(w.stored() + w.holes(), p.size());
	EXPECT_LE(w.stored(), p.size() / 4) << "only the data blocks are written";

	// the logical file: header, then every byte, zeros included, for any reader
	const std::string path = dir_ + "/pages.img";
	struct stat st;
	ASSERT_EQ(stat(path.c_str(), &st), 0);
	EXPECT_EQ(uint64_t(st.st_size), kFrameHeaderSize + p.size());
	std::vector<uint8_t> all(st.st_size);
	const int fd = open(path.c_str(), O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(read(fd, all.data(), all.size()), ssize_t(all.size()));
	close(fd);
	EXPECT_TRUE(std::equal(p.begin(), p.end(), all.begin() + kFrameHeaderSize));

	// the restore's view: holes skipped, data read, the same payload
	ImageReader r(dir, "pages.img", p.size());
	const HoleMap holes = r.holes();
	if (holes.size() == 0)
		GTEST_SKIP() << dir_ << " reports no holes (its file system stores zeros)";
	EXPECT_LE(uint64_t(st.st_blocks) * 512, p.size() / 4 + 64 * KiB) << "the file occupies its data only";
	EXPECT_GE(holes.hole_bytes(), p.size() * 7 / 10);
	std::vector<uint8_t> back(p.size(), 0xee);
	for (const Extent &e : holes.split(0, p.size())) {
		if (e.zero) {
			r.skip(e.len);
			std::fill_n(back.begin() + e.offset, e.len, 0);
		} else {
			r.read({ back.data() + e.offset, size_t(e.len) });
		}
	}
	EXPECT_EQ(back, p);
}

TEST_F(SparseImage, AFileEndingInZerosHasItsWholeSize)
{
	std::vector<uint8_t> p(4 * kZeroBlock, 0);
	p[3] = 9;
	const ImageDir dir = ImageDir::files(dirfd_);
	ImageWriter w(dir, "tail.img", p.size());
	w.write_sparse(p);
	w.finish();
	struct stat st;
	ASSERT_EQ(stat((dir_ + "/tail.img").c_str(), &st), 0);
	EXPECT_EQ(uint64_t(st.st_size), kFrameHeaderSize + p.size());
	EXPECT_NO_THROW(ImageReader(dir, "tail.img", p.size()));
}

TEST_F(SparseImage, ADenseFileAsOlderPluginsWriteHasNoHoles)
{
	const std::vector<uint8_t> p = payload();
	const ImageDir dir = ImageDir::files(dirfd_);
	ImageWriter w(dir, "dense.img", p.size());
	w.write(p);
	w.finish();
	EXPECT_EQ(w.stored(), p.size());
	ImageReader r(dir, "dense.img", p.size());
	EXPECT_EQ(r.holes().size(), 0u);
	const auto e = r.holes().split(0, p.size());
	ASSERT_EQ(e.size(), 1u);
	EXPECT_FALSE(e[0].zero);
}

TEST(SparsePipe, AStreamCarriesEveryByte)
{
	int fds[2];
	ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
	std::vector<uint8_t> p(2 * kZeroBlock, 0);
	p[kZeroBlock + 1] = 5;
	std::vector<uint8_t> got;
	std::thread reader([&] {
		uint8_t buf[4096];
		ssize_t n;
		while ((n = read(fds[0], buf, sizeof(buf))) > 0)
			got.insert(got.end(), buf, buf + n);
	});
	{
		const ImageDir dir = ImageDir::streamed(-1, ImageDir::Stream::capture,
							[&](const std::string &, bool) { return fds[1]; });
		ImageWriter w(dir, "pages.img", p.size());
		w.write_sparse(p);
		w.finish();
		EXPECT_EQ(w.stored(), p.size());
		EXPECT_EQ(w.holes(), 0u);
	}
	reader.join();
	close(fds[0]);
	ASSERT_EQ(got.size(), kFrameHeaderSize + p.size());
	EXPECT_TRUE(std::equal(p.begin(), p.end(), got.begin() + kFrameHeaderSize));
}

} // namespace
} // namespace amdgpu
