// SPDX-License-Identifier: GPL-2.0-only
#include "images/pages_blocks.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cerrno>

namespace amdgpu {

PagesSink::PagesSink(uint32_t gpu_id, std::span<const uint64_t> bo_sizes, const ImageChain *chain)
    : gpu_id_(gpu_id), bo_sizes_(bo_sizes.begin(), bo_sizes.end()), chain_(chain && !chain->empty() ? chain : nullptr),
      summer_(bo_sizes)
{
}

void PagesSink::put(std::span<const uint8_t> bytes, ImageWriter &image, IoBatch *io)
{
	if (!chain_) {
		// one look for zeros serves both: the sums take a zero run as zeros, the image as a hole
		const uint64_t base = image.written();
		const std::vector<Extent> runs = zero_runs(bytes, base);
		for (const Extent &e : runs) {
			if (e.zero)
				summer_.add_zeros(e.len);
			else
				summer_.add(bytes.subspan(static_cast<size_t>(e.offset - base),
							  static_cast<size_t>(e.len)));
		}
		image.write_runs(bytes, runs, io);
		return;
	}
	const std::vector<BlockPlace> &grid = summer_.grid();
	while (!bytes.empty() && summer_.sums().size() < grid.size()) {
		const BlockPlace &block = grid[summer_.sums().size()];
		const size_t len = static_cast<size_t>(std::min<uint64_t>(bytes.size(), block.len - in_block_));
		const std::span<const uint8_t> piece = bytes.first(len);
		summer_.add(piece);
		bytes = bytes.subspan(len);
		in_block_ += len;
		if (in_block_ < block.len) {
			pending_.insert(pending_.end(), piece.begin(), piece.end());
			continue;
		}
		const BlockSum &sum = summer_.sums().back();
		const bool held = !sum.zero && chain_->find(gpu_id_, sum.digest, block.len);
		in_chain_.push_back(held);
		if (held) {
			chain_bytes_ += block.len;
		} else {
			if (!pending_.empty())
				image.write_sparse(pending_);
			image.write_sparse(piece);
		}
		pending_.clear();
		in_block_ = 0;
	}
	if (!bytes.empty())
		fail(-EINVAL, "GPU 0x%04x: %zu bytes past the end of its BOs", gpu_id_, bytes.size());
}

PagesSums PagesSink::finish(const ImageWriter &image)
{
	if (summer_.sums().size() != summer_.grid().size() || !pending_.empty())
		fail(-EIO, "GPU 0x%04x: %zu of the %zu blocks of its BOs were copied", gpu_id_, summer_.sums().size(),
		     summer_.grid().size());
	PagesSums sums;
	sums.gpu_id = gpu_id_;
	sums.stored_size = image.written();
	sums.bo_sizes = bo_sizes_;
	sums.blocks = summer_.take_sums();
	if (std::find(in_chain_.begin(), in_chain_.end(), true) != in_chain_.end())
		sums.in_chain = std::move(in_chain_);
	return sums;
}

ChainedPages::ChainedPages(const PagesSums &sums, const ImageChain &chain, const std::string &image_name)
    : chain_(chain), image_name_(image_name)
{
	const std::vector<BlockPlace> grid = block_grid(sums.bo_sizes);
	uint64_t offset = 0, stored = 0;
	for (size_t i = 0; i < grid.size(); i++) {
		Block b { offset, grid[i].len, From::image, stored, 0 };
		if (sums.block_in_chain(i)) {
			const ChainBlock *found = chain.find(sums.gpu_id, sums.blocks[i].digest, grid[i].len);
			if (!found)
				fail(-ENOENT,
				     "image %s takes block %zu of GPU 0x%04x (%llu bytes) from an earlier checkpoint, "
				     "and "
				     "%s; the restore is refused",
				     image_name.c_str(), i + 1, sums.gpu_id,
				     static_cast<unsigned long long>(grid[i].len),
				     !chain.has_parent()
					     ? "the image directory has no `parent` chain"
					     : strprintf("none of the %zu checkpoints with GPU images in its `parent` "
							 "chain holds it",
							 chain.depth())
						       .c_str());
			b.from = From::chain;
			b.stored_offset = found->stored_offset;
			b.chain_image = found->image;
		} else {
			if (sums.blocks[i].zero)
				b.from = From::zeros;
			stored += grid[i].len;
		}
		blocks_.push_back(b);
		offset += grid[i].len;
	}
}

size_t ChainedPages::block_at(uint64_t offset) const
{
	const auto it = std::upper_bound(blocks_.begin(), blocks_.end(), offset,
					 [](uint64_t off, const Block &b) { return off < b.offset; });
	return static_cast<size_t>(it - blocks_.begin()) - 1;
}

std::vector<ChainedPages::Piece> ChainedPages::split(uint64_t offset, uint64_t len) const
{
	const uint64_t size = blocks_.empty() ? 0 : blocks_.back().offset + blocks_.back().len;
	if (offset > size || len > size - offset)
		fail(-EINVAL, "image %s: bytes 0x%llx..0x%llx lie past its BOs' 0x%llx", image_name_.c_str(),
		     static_cast<unsigned long long>(offset), static_cast<unsigned long long>(offset + len),
		     static_cast<unsigned long long>(size));
	std::vector<Piece> out;
	const uint64_t end = offset + len;
	for (size_t i = len ? block_at(offset) : blocks_.size(); i < blocks_.size() && blocks_[i].offset < end; i++) {
		const Block &b = blocks_[i];
		const uint64_t from = std::max(offset, b.offset), to = std::min(end, b.offset + b.len);
		out.push_back({ from, to - from, b.from });
	}
	return out;
}

ChainedPages::Source ChainedPages::source(const Piece &piece, const ImageReader &image)
{
	const Block &b = blocks_[block_at(piece.offset)];
	const uint64_t at = b.stored_offset + (piece.offset - b.offset);
	return { b.from == From::chain ? &chain_image(b.chain_image) : &image, at };
}

void ChainedPages::read(const Piece &piece, const ImageReader &image, std::span<uint8_t> out)
{
	const Source from = source(piece, image);
	from.image->read_at(from.offset, out);
}

const ImageReader &ChainedPages::chain_image(uint32_t index)
{
	auto it = chain_images_.find(index);
	if (it != chain_images_.end())
		return it->second;
	const ChainImage &ci = chain_.image(index);
	auto reader = ImageReader::open_if_exists(ImageDir::files(ci.dirfd), ci.name, ci.stored_size);
	if (!reader)
		fail(-ENOENT, "%s of the checkpoint %u back in the `parent` chain is gone", ci.name.c_str(), ci.level);
	reader->read_once();
	return chain_images_.emplace(index, std::move(*reader)).first->second;
}

double ChainedPages::io_seconds() const
{
	double s = 0;
	for (const auto &[index, reader] : chain_images_)
		s += reader.io_seconds();
	return s;
}

uint64_t ChainedPages::chain_bytes() const
{
	uint64_t n = 0;
	for (const Block &b : blocks_)
		if (b.from == From::chain)
			n += b.len;
	return n;
}

} // namespace amdgpu
