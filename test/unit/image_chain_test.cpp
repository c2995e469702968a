// SPDX-License-Identifier: GPL-2.0-only
//
// Incremental GPU images on the host, without a GPU: pages images written through PagesSink into
// directories linked by criu's `parent` chain, and read back through ChainedPages, as the copy
// does. An incremental image holds only the blocks the chain lacks, whatever pieces the bytes come
// in; any length of chain gives back every byte; a chain that cannot be used is cut short, saying
// why, and never leaned on.
#include "support/error.hpp"
#include "images/image_chain.hpp"
#include "images/image_checksums.hpp"
#include "images/image_store.hpp"
#include "images/pages_blocks.hpp"

#include "support/random_bytes.hpp"
#include "support/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace amdgpu {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr uint32_t kGpu = 0x4b53;
const std::vector<uint64_t> kSizes { 3 * MiB + 4 * KiB, 2 * MiB, 64 * KiB };

using test::random_bytes;

uint64_t total_of(const std::vector<uint64_t> &sizes)
{
	uint64_t n = 0;
	for (const uint64_t s : sizes)
		n += s;
	return n;
}

// Writes `payload` as process `id`'s pages of kGpu into `dir` (in pieces of up to `piece` bytes,
// as staging buffers pass them), leaving out what the chain below `dir` holds, and its sums.
PagesSums dump_pages(const fs::path &dir, uint32_t id, const std::vector<uint8_t> &payload, size_t piece)
{
	const unique_fd dirfd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	const ImageChain chain = ImageChain::below(dirfd.get());
	PagesSink sink(kGpu, kSizes, &chain);
	ImageWriter image(ImageDir::files(dirfd.get()), pages_image_name(id, kGpu), payload.size(),
			  chain.empty() ? ImageWriter::Sizing::exact : ImageWriter::Sizing::at_most);
	for (size_t at = 0; at < payload.size(); at += piece)
		sink.put({ payload.data() + at, std::min(piece, payload.size() - at) }, image);
	image.finish();
	ImageSums sums;
	sums.pages.push_back(sink.finish(image));
	write_image_sums(ImageDir::files(dirfd.get()), id, sums);
	return sums.pages.front();
}

// What a restore from `dir` reads back, through the chain.
std::vector<uint8_t> restore_pages(const fs::path &dir, uint32_t id, const PagesSums &sums)
{
	const unique_fd dirfd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	const ImageChain chain = ImageChain::below(dirfd.get());
	const std::string name = pages_image_name(id, kGpu);
	ImageReader image(ImageDir::files(dirfd.get()), name, sums.stored_size);
	ChainedPages pages(sums, chain, name);
	const uint64_t total = total_of(kSizes);
	std::vector<uint8_t> out(total, 0xee);
	for (const ChainedPages::Piece &p : pages.split(0, total)) {
		if (p.from == ChainedPages::From::zeros)
			std::fill_n(out.begin() + static_cast<ptrdiff_t>(p.offset), p.len, 0);
		else
			pages.read(p, image, { out.data() + p.offset, static_cast<size_t>(p.len) });
	}
	return out;
}

class ImageChainTest : public ::testing::Test {
protected:
	fs::path level(const std::string &name, const std::string &parent = "")
	{
		const fs::path dir = root.path() / name;
		fs::create_directory(dir);
		if (!parent.empty())
			fs::create_directory_symlink("../" + parent, dir / "parent");
		return dir;
	}

	test::TempDir root;
	std::vector<uint8_t> payload = random_bytes(total_of(kSizes), 1);
};

TEST_F(ImageChainTest, AnIncrementalImageHoldsOnlyTheBlocksThatChanged)
{
	const PagesSums full = dump_pages(level("1"), 5, payload, 3 * MiB);
	EXPECT_TRUE(full.in_chain.empty());
	EXPECT_EQ(fs::file_size(root.path() / "1" / pages_image_name(5, kGpu)), 8 + payload.size());

	// one byte of the second BO's first block changes; and a new file id for the process
	payload[3 * MiB + 4 * KiB + 100] ^= 1;
	const PagesSums incremental = dump_pages(level("2", "1"), 9, payload, 700 * KiB);
	ASSERT_EQ(incremental.in_chain.size(), 7u);
	EXPECT_EQ(incremental.in_chain, (std::vector<bool> { true, true, true, true, false, true, true }));
	EXPECT_EQ(incremental.stored_size, 1 * MiB);
	EXPECT_EQ(fs::file_size(root.path() / "2" / pages_image_name(9, kGpu)), 8 + 1 * MiB);
	EXPECT_EQ(restore_pages(root.path() / "2", 9, incremental), payload);
}

TEST_F(ImageChainTest, AChainOfFiveGivesBackEveryByteOfTheLast)
{
	std::vector<PagesSums> sums;
	std::mt19937 rng(7);
	for (int i = 1; i <= 5; i++) {
		if (i > 1) // a tenth of the payload changes, somewhere
			for (uint64_t at = rng() % payload.size(), n = 0; n < payload.size() / 10; n++)
				payload[(at + n) % payload.size()] ^= 0x5a;
		sums.push_back(dump_pages(level(std::to_string(i), i > 1 ? std::to_string(i - 1) : ""),
					  static_cast<uint32_t>(i), payload, 1 + rng() % (4 * MiB)));
	}
	EXPECT_LT(sums.back().stored_size, payload.size() / 2);
	EXPECT_EQ(restore_pages(root.path() / "5", 5, sums.back()), payload);
}

TEST_F(ImageChainTest, ZerosAreNeverLeftToTheChain)
{
	std::fill(payload.begin(), payload.begin() + 2 * MiB, 0);
	dump_pages(level("1"), 1, payload, 1 * MiB);
	const PagesSums again = dump_pages(level("2", "1"), 1, payload, 1 * MiB);
	EXPECT_FALSE(again.block_in_chain(0));
	EXPECT_TRUE(again.blocks[0].zero);
	EXPECT_TRUE(again.block_in_chain(2));
	EXPECT_EQ(restore_pages(root.path() / "2", 1, again), payload);
}

TEST_F(ImageChainTest, AParentThatCannotBeUsedCutsTheChainShortAndIsNotLeanedOn)
{
	dump_pages(level("1"), 1, payload, 1 * MiB);
	dump_pages(level("2", "1"), 2, payload, 1 * MiB);
	// the grandparent's pages lose their last byte: level 2 of the chain of "3" cannot be used
	const fs::path lost = root.path() / "1" / pages_image_name(1, kGpu);
	fs::resize_file(lost, fs::file_size(lost) - 1);
	const fs::path three = level("3", "2");
	const unique_fd dirfd(open(three.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	const ImageChain chain = ImageChain::below(dirfd.get());
	EXPECT_EQ(chain.depth(), 1u);
	EXPECT_NE(chain.cut_short().find("the checkpoint 2 back in the `parent` chain cannot be used"),
		  std::string::npos)
		<< chain.cut_short();
	// "2" holds nothing itself (all of it was left to "1"): nothing to lean on
	EXPECT_EQ(chain.blocks(), 0u);
	const PagesSums whole = dump_pages(three, 3, payload, 1 * MiB);
	EXPECT_TRUE(whole.in_chain.empty());

	// a GPU process's kfd image without its sums: its level cannot be used
	const fs::path unsummed = level("5", "3");
	write_image(ImageDir::files(unique_fd(open(unsummed.c_str(), O_RDONLY | O_DIRECTORY)).get()), kfd_image_name(8),
		    std::vector<uint8_t>(4, 0));
	const fs::path six = level("6", "5");
	const unique_fd six_fd(open(six.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	const ImageChain cut = ImageChain::below(six_fd.get());
	EXPECT_TRUE(cut.empty());
	EXPECT_NE(cut.cut_short().find("amdgpu-kfd-8.img has no amdgpu-sums-8.img"), std::string::npos)
		<< cut.cut_short();

	const fs::path orphan = level("4", "gone");
	const unique_fd orphan_fd(open(orphan.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	const ImageChain none = ImageChain::below(orphan_fd.get());
	EXPECT_TRUE(none.empty());
	EXPECT_NE(none.cut_short().find("`parent` (../gone) cannot be opened"), std::string::npos) << none.cut_short();
}

TEST_F(ImageChainTest, AChainThatLoopsIsFollowedOnce)
{
	const fs::path one = level("1");
	dump_pages(one, 1, payload, 1 * MiB);
	fs::create_directory_symlink(".", one / "parent"); // 1's parent is 1
	const fs::path two = level("2", "1");
	const unique_fd fd(open(two.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	const ImageChain chain = ImageChain::below(fd.get());
	EXPECT_EQ(chain.depth(), 1u);
	EXPECT_NE(chain.cut_short().find("`parent` leads back to a directory of the chain"), std::string::npos)
		<< chain.cut_short();
	const PagesSums again = dump_pages(two, 2, payload, 1 * MiB);
	EXPECT_EQ(again.stored_size, 0u);
	EXPECT_EQ(restore_pages(two, 2, again), payload);
}

TEST_F(ImageChainTest, PiecesPastTheBlocksAndAnUnfinishedSinkAreRefused)
{
	const PagesSums full = dump_pages(level("1"), 1, payload, 1 * MiB);
	const PagesSums again = dump_pages(level("2", "1"), 2, payload, 1 * MiB);
	const unique_fd fd(open((root.path() / "2").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	const ImageChain chain = ImageChain::below(fd.get());
	const ChainedPages pages(again, chain, pages_image_name(2, kGpu));
	EXPECT_THROW(pages.split(payload.size() - 10, 20), Error);
	EXPECT_EQ(pages.split(0, payload.size()).back().offset + pages.split(0, payload.size()).back().len,
		  payload.size());

	const fs::path three = level("3");
	const unique_fd three_fd(open(three.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	PagesSink sink(kGpu, kSizes, &chain);
	ImageWriter image(ImageDir::files(three_fd.get()), pages_image_name(3, kGpu), payload.size(),
			  ImageWriter::Sizing::at_most);
	sink.put({ payload.data(), 1 * MiB + 5 }, image); // a block and a piece of the next
	image.finish();
	EXPECT_THROW(sink.finish(image), Error);
	EXPECT_EQ(full.blocks.size(), 7u);
}

TEST_F(ImageChainTest, ABlockNoImageOfTheChainHoldsRefusesTheRestoreNamingIt)
{
	dump_pages(level("1"), 1, payload, 1 * MiB);
	const PagesSums incremental = dump_pages(level("2", "1"), 2, payload, 1 * MiB);
	fs::remove(root.path() / "2" / "parent");
	try {
		restore_pages(root.path() / "2", 2, incremental);
		FAIL() << "restored without its chain";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -ENOENT);
		EXPECT_NE(std::string(e.what()).find(
				  strprintf("image %s takes block 1 of GPU 0x%04x (1048576 bytes) from "
					    "an earlier checkpoint, and the image directory has no "
					    "`parent` chain",
					    pages_image_name(2, kGpu).c_str(), kGpu)),
			  std::string::npos)
			<< e.what();
	}
}

} // namespace
} // namespace amdgpu
