// SPDX-License-Identifier: GPL-2.0-only
//
// Checksums of the GPU images, so that a damaged image is refused rather than restored into a
// process that would then run on with wrong GPU memory.
//
// What is summed. Each GPU's pages are cut into blocks of kSumBlock bytes from the start of each
// BO (a BO's last block may be shorter), and every block gets a digest as its bytes pass through
// staging memory: dumping, after the copy engine filled the staging buffer and before the bytes
// go to the image; restoring, as they are read from the image (a hole counts as its zeros). The
// payload of the process's kfd image gets a digest of its own. A block of zeros gets none: it is
// marked as zeros, which is cheaper to check than to hash (the dump's zero test stops at the first
// non-zero word), and a mostly-zero GPU costs nothing to sum.
//
// The hash. XXH3 with 128-bit digests, from the xxHash library Debian ships (libxxhash-dev),
// compiled into the plugin through the header's inline mode, so the plugin needs no library
// at run time. It runs at memory speed (tens of GB/s on one core, far above a copy engine), and
// 128 bits make it negligible that damage keeps a block's digest. It is not a cryptographic hash:
// it catches damage, not someone who forges an image.
//
// Where the sums go. amdgpu-sums-<id>.img, an image of its own beside the kfd and pages images,
// written after the pages (through criu's image streamer, restore reads it in that place).
// Upstream's plugin never opens it, so it still restores our images, and images without it
// (upstream's, or of this plugin before checksums) still restore, unverified, saying so.
#pragma once

#include "images/image_store.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

inline constexpr uint64_t kSumBlock = 1ull << 20;
inline constexpr uint32_t kSumAlgorithmXxh3_128 = 1;
// 17 bytes a block: 64 MiB sums 3.7 TiB of GPU memory.
inline constexpr uint64_t kMaxSumsImageSize = 64ull << 20;
// No BO is larger (a sums image is refused for one): far above any GPU's memory.
inline constexpr uint64_t kMaxSummedBo = 1ull << 46;

struct Digest {
	std::array<uint8_t, 16> bytes {};
	bool operator==(const Digest &) const = default;
	std::string hex() const;
};

Digest digest_of(std::span<const uint8_t> bytes);

struct BlockSum {
	bool zero = true; // every byte zero; then the digest is all zeros
	Digest digest;
	bool operator==(const BlockSum &) const = default;
};

// Where one block of a GPU's pages lies.
struct BlockPlace {
	uint32_t bo = 0;	// index into the GPU's BO list
	uint64_t bo_offset = 0; // where in that BO
	uint64_t len = 0;
};

// The blocks of BOs of `bo_sizes` bytes, in payload order.
std::vector<BlockPlace> block_grid(std::span<const uint64_t> bo_sizes, uint64_t block_size = kSumBlock);

// Sums one GPU's payload, fed in payload order.
class BlockSummer {
public:
	explicit BlockSummer(std::span<const uint64_t> bo_sizes, uint64_t block_size = kSumBlock);
	~BlockSummer();
	BlockSummer(BlockSummer &&) noexcept;
	BlockSummer &operator=(BlockSummer &&) noexcept;

	// The next bytes of the payload (or `n` zeros); more than the BOs hold throws Error(-EINVAL).
	void add(std::span<const uint8_t> bytes);
	void add_zeros(uint64_t n);
	// The sums of the blocks completed so far: all of them once every byte passed.
	const std::vector<BlockSum> &sums() const { return sums_; }
	std::vector<BlockSum> take_sums() { return std::move(sums_); }
	const std::vector<BlockPlace> &grid() const { return grid_; }
	// Time spent summing so far (what the checksums cost the copy).
	double seconds() const { return seconds_; }

private:
	struct State;
	// `bytes` null: `n` zeros.
	void feed(const uint8_t *bytes, uint64_t n);
	// The same, never crossing the end of the current block.
	void take(const uint8_t *bytes, uint64_t n);
	void hash_zeros(uint64_t n);
	void close_block();

	std::vector<BlockPlace> grid_;
	std::vector<BlockSum> sums_;
	std::unique_ptr<State> state_;
	uint64_t seen_ = 0;    // bytes of the current block so far
	bool hashing_ = false; // a non-zero byte was seen in the current block
	double seconds_ = 0;
};

// One GPU's part of amdgpu-sums-<id>.img.
struct PagesSums {
	uint32_t gpu_id = 0;	  // the id the process knows, which names the pages image
	uint64_t stored_size = 0; // the pages image's payload size
	std::vector<uint64_t> bo_sizes;
	std::vector<BlockSum> blocks; // block_grid(bo_sizes)
	// Per block, or empty for none: the block is in an earlier checkpoint of the chain
	// (image_chain.hpp), not in this pages image.
	std::vector<bool> in_chain;

	bool block_in_chain(size_t i) const { return i < in_chain.size() && in_chain[i]; }
	// The bytes this pages image holds: its blocks but those in the chain.
	uint64_t stored_bytes() const;
};

struct ImageSums {
	uint64_t block_size = kSumBlock;
	Digest kfd; // of the kfd image's payload
	std::vector<PagesSums> pages;

	const PagesSums *pages_of(uint32_t gpu_id) const;
};

std::vector<uint8_t> pack_image_sums(const ImageSums &sums);
// Throws Error(-EINVAL) naming `name` for anything this plugin did not write: another algorithm
// or block size, kinds or digests that do not fit the BOs, a stored size that does not fit the
// blocks, a GPU twice.
ImageSums unpack_image_sums(std::span<const uint8_t> bytes, const std::string &name);
void write_image_sums(const ImageDir &dir, uint32_t id, const ImageSums &sums);
std::optional<ImageSums> read_image_sums(const ImageDir &dir, uint32_t id);

// The BOs the kfd image names for a pages image against those its sums were made for: throws
// Error(-EBADMSG) naming the image when they differ. Cheap: call it before anything is sized by
// the kfd image's sizes, which are not bounded.
void check_bo_sizes(const PagesSums &dumped, std::span<const uint64_t> bo_sizes, const std::string &image);

// What the restore read of one GPU against what the dump wrote. `bo_sizes` and `addrs` are the
// BOs the kfd image names for the pages image. Throws Error(-EBADMSG) naming the image, the GPU,
// the BO, the offset in it and the block, for the first block that differs, or for BOs that are
// not the ones the sums were made of (check_bo_sizes()).
void check_pages_sums(const PagesSums &dumped, std::span<const BlockSum> restored, std::span<const uint64_t> bo_sizes,
		      std::span<const uint64_t> addrs, const std::string &image);

// The kfd image's payload against its digest in the sums; throws Error(-EBADMSG) naming both.
void check_kfd_digest(const ImageSums &sums, std::span<const uint8_t> payload, const std::string &kfd_image,
		      const std::string &sums_image);

} // namespace amdgpu
