// SPDX-License-Identifier: GPL-2.0-only
//
// The images of earlier checkpoints that an incremental dump builds on.
//
// criu dumps with a parent when it is given --prev-images-dir: it links `parent` in the image
// directory to the earlier directory (whose own `parent` may link further back) and writes only the
// host pages that changed since. The plugin does the same for GPU memory. Every block of a GPU's
// pages has a digest (image_checksums.hpp); a block whose digest an earlier image of the chain
// holds, on the same GPU, is not written again: the sums say it is in the chain, and a restore
// reads it from there, checking it against the same digest. Blocks are found by content, not by
// place, so a BO that moved, or a process whose criu file ids changed between dumps, still
// finds its blocks, and any length of chain costs one lookup per block.
//
// Only blocks an image holds itself are indexed (a block that image took from further back is
// found further back). A level of the chain that cannot be used — its directory gone, a GPU
// process's kfd image without its sums, a sums image that does not decode, a pages image whose
// size is not the sum of the blocks it holds, a `parent` that leads back into the chain — ends
// the chain there, and the blocks beyond it are written again: what a new dump leans on is always
// found. A parent whose bytes were damaged after it was written is not seen here: the restore
// reads every block against its digest and refuses it, naming the image. A level without GPU
// images (a criu pre-dump, or a process without GPU state) is passed through.
//
// Through criu's image streamer there is no chain: the plugin looks for none there (and criu
// writes its own pages whole with --stream).
#pragma once

#include "images/image_checksums.hpp"
#include "support/unique_fd.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace amdgpu {

// How many parents deep the plugin looks: further back, blocks are written again.
inline constexpr unsigned kMaxChainDepth = 64;

// A pages image of an earlier checkpoint.
struct ChainImage {
	unsigned level = 0; // 1: the parent, 2: its parent, ...
	int dirfd = -1;	    // that level's directory (owned by the chain)
	std::string name;
	uint64_t stored_size = 0; // its payload
};

// Where a block of an earlier checkpoint lies.
struct ChainBlock {
	uint32_t image = 0;	    // ImageChain::image()
	uint64_t stored_offset = 0; // where in that image's payload
};

class ImageChain {
public:
	ImageChain() = default;
	// The chain below the image directory `dirfd`: empty when it has no `parent`.
	static ImageChain below(int dirfd, unsigned max_depth = kMaxChainDepth);

	// Whether it holds any block to lean on.
	bool empty() const { return index_.empty(); }
	// Whether the image directory has a usable `parent` at all.
	bool has_parent() const { return !levels_.empty(); }
	// The earlier checkpoints with GPU images (a criu pre-dump holds none).
	size_t depth() const { return gpu_levels_; }
	// The newest image of the chain that holds a block of `len` bytes with this digest on this GPU.
	const ChainBlock *find(uint32_t gpu_id, const Digest &digest, uint64_t len) const;
	const ChainImage &image(uint32_t index) const { return images_[index]; }
	// Whether any image of the chain holds blocks of this GPU.
	bool has_gpu(uint32_t gpu_id) const;
	// Why the chain ends where it does, when it ends early (for the log); empty otherwise.
	const std::string &cut_short() const { return cut_short_; }
	uint64_t blocks() const { return index_.size(); }

private:
	struct Key {
		uint32_t gpu_id;
		uint64_t len;
		Digest digest;
		bool operator<(const Key &o) const
		{
			return std::tie(gpu_id, len, digest.bytes) < std::tie(o.gpu_id, o.len, o.digest.bytes);
		}
	};
	// Indexes one level's stored blocks, or says why it cannot be used.
	bool add_level(int dirfd, unsigned level, std::string &why);

	std::vector<unique_fd> levels_;
	size_t gpu_levels_ = 0;
	std::vector<ChainImage> images_;
	std::map<Key, ChainBlock> index_;
	std::string cut_short_;
};

} // namespace amdgpu
