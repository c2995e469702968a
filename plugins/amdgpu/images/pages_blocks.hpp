// SPDX-License-Identifier: GPL-2.0-only
//
// A GPU's pages image block by block (image_checksums.hpp), for the copy of bo_transfer.hpp.
//
// Dumping, PagesSink takes the GPU's payload in order as it leaves staging memory, sums every
// block, and writes the blocks to the pages image, leaving out those an earlier checkpoint of
// the chain already holds (image_chain.hpp). Without a chain every byte is written, as before, and
// the image is the one upstream's plugin reads. With one, a block is only known to be left out
// once its last byte passed, so the bytes of a block that straddles two staging buffers wait in
// the sink (at most one block: bounded memory).
//
// Restoring an image that takes blocks from the chain, ChainedPages says where each byte of the
// payload comes from: this image (its blocks but those in the chain, in order), an image of the
// chain, or zeros (a block of zeros, which the copy engine fills).
#pragma once

#include "images/image_chain.hpp"
#include "images/image_checksums.hpp"
#include "images/image_store.hpp"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

class PagesSink {
public:
	// `chain` may be null (or empty): every block is written.
	PagesSink(uint32_t gpu_id, std::span<const uint64_t> bo_sizes, const ImageChain *chain);

	// The next bytes of the payload. Without a chain, given `io`, their writes are posted to it
	// (ImageWriter::write_runs); leaving blocks out, the sink writes them itself.
	void put(std::span<const uint8_t> bytes, ImageWriter &image, IoBatch *io = nullptr);
	// After the last byte: the sums of the image `image` became.
	PagesSums finish(const ImageWriter &image);
	uint64_t chain_bytes() const { return chain_bytes_; } // left out: the chain holds them
	double sum_seconds() const { return summer_.seconds(); }

private:
	uint32_t gpu_id_;
	std::vector<uint64_t> bo_sizes_;
	const ImageChain *chain_;
	BlockSummer summer_;
	std::vector<uint8_t> pending_; // the first bytes of a block that is not complete yet
	uint64_t in_block_ = 0;
	std::vector<bool> in_chain_;
	uint64_t chain_bytes_ = 0;
};

class ChainedPages {
public:
	// `sums` says which blocks of `image` (this checkpoint's pages image, opened by the caller) are
	// in `chain`. Throws Error(-ENOENT) naming the first block the chain does not hold.
	ChainedPages(const PagesSums &sums, const ImageChain &chain, const std::string &image_name);

	enum class From { image, chain, zeros };
	struct Piece {
		uint64_t offset; // in the payload
		uint64_t len;
		From from;
	};
	// [offset, offset + len) of the payload as pieces, in order; no piece crosses a block.
	std::vector<Piece> split(uint64_t offset, uint64_t len) const;
	// Where a piece's bytes are stored: in this checkpoint's pages image `image`, or in an image of
	// the chain (opened here on first use; it lives as long as this).
	struct Source {
		const ImageReader *image;
		uint64_t offset; // in its payload
	};
	Source source(const Piece &piece, const ImageReader &image);
	// The bytes of a piece, from its source.
	void read(const Piece &piece, const ImageReader &image, std::span<uint8_t> out);
	uint64_t chain_bytes() const; // of the payload, read from the chain
	double io_seconds() const;    // reading the chain's images

private:
	struct Block {
		uint64_t offset; // in the payload
		uint64_t len;
		From from;
		uint64_t stored_offset; // in this image, or in the chain's image
		uint32_t chain_image;	// ImageChain::image(), when from the chain
	};
	size_t block_at(uint64_t offset) const;
	const ImageReader &chain_image(uint32_t image);

	const ImageChain &chain_;
	std::string image_name_;
	std::vector<Block> blocks_;
	std::map<uint32_t, ImageReader> chain_images_;
};

} // namespace amdgpu
