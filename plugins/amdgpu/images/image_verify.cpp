// SPDX-License-Identifier: GPL-2.0-only
#include "images/image_verify.hpp"

#include "support/error.hpp"
#include "images/image_chain.hpp"
#include "images/image_checksums.hpp"
#include "driver/kfd_ioctl.hpp"
#include "images/metadata_images.hpp"
#include "render/render_image.hpp"
#include "images/pages_blocks.hpp"

#include <algorithm>
#include <set>

namespace amdgpu {

namespace {

// What a GPU's pages image holds: its BOs with contents that no other process restores, in
// the kfd image's order (the rule of copy_job()).
struct PagesLayout {
	std::vector<uint64_t> sizes;
	std::vector<uint64_t> addrs;
};

PagesLayout pages_layout(const CriuKfd &msg, uint32_t gpu_id, std::span<const BoShare> shares)
{
	PagesLayout layout;
	for (size_t i = 0; i < msg.n_bo_entries; i++) {
		const KfdBoEntry &bo = *msg.bo_entries[i];
		if (bo.gpu_id != gpu_id || !kfd::holds_contents(bo.alloc_flags, bo.size))
			continue;
		if (i < shares.size() && shares[i].role == ShareRole::taker)
			continue;
		layout.sizes.push_back(bo.size);
		layout.addrs.push_back(bo.addr);
	}
	return layout;
}

// Reads a pages image front to back as the restore does: its holes as zeros, and the blocks it
// takes from earlier checkpoints from their images.
std::vector<BlockSum> sum_pages_image(const ImageDir &dir, const std::string &name, const PagesLayout &layout,
				      const PagesSums &dumped, const ImageChain &chain, uint64_t &chain_bytes)
{
	uint64_t total = 0;
	for (const uint64_t s : layout.sizes)
		total += s;
	BlockSummer summer(layout.sizes);
	const uint64_t stored = dumped.in_chain.empty() ? total : dumped.stored_size;
	auto reader = ImageReader::open_if_exists(dir, name, stored);
	if (!reader) {
		if (stored)
			fail(-ENOENT, "image %s is missing; its GPU's BOs hold %llu bytes", name.c_str(),
			     static_cast<unsigned long long>(total));
		if (total)
			fail(-ENOENT, "image %s is missing", name.c_str());
		return summer.take_sums();
	}
	if (reader->payload_size() != stored)
		fail(-EBADMSG, "image %s holds %llu bytes, but the BOs it restores need %llu", name.c_str(),
		     static_cast<unsigned long long>(reader->payload_size()), static_cast<unsigned long long>(stored));
	std::vector<uint8_t> buffer(4 * kSumBlock);
	if (!dumped.in_chain.empty()) {
		ChainedPages pages(dumped, chain, name);
		chain_bytes += pages.chain_bytes();
		for (uint64_t at = 0; at < total;) {
			const uint64_t len = std::min<uint64_t>(buffer.size(), total - at);
			for (const ChainedPages::Piece &piece : pages.split(at, len)) {
				if (piece.from == ChainedPages::From::zeros) {
					summer.add_zeros(piece.len);
					continue;
				}
				const std::span<uint8_t> bytes { buffer.data(), static_cast<size_t>(piece.len) };
				pages.read(piece, *reader, bytes);
				summer.add(bytes);
			}
			at += len;
		}
		return summer.take_sums();
	}
	const HoleMap holes = reader->holes();
	for (uint64_t at = 0; at < total;) {
		const uint64_t len = std::min<uint64_t>(buffer.size(), total - at);
		for (const Extent &e : holes.split(at, len)) {
			if (e.zero) {
				reader->skip(e.len);
				summer.add_zeros(e.len);
			} else {
				reader->read({ buffer.data(), static_cast<size_t>(e.len) });
				summer.add({ buffer.data(), static_cast<size_t>(e.len) });
			}
		}
		at += len;
	}
	return summer.take_sums();
}

} // namespace

namespace {

// One GPU's pages image of image `id` against its sums.
void verify_pages(const ImageDir &dir, uint32_t id, uint32_t gpu, const PagesLayout &layout, const ImageSums &sums,
		  std::optional<ImageChain> &chain, ImagesVerdict &verdict)
{
	const ImageChain no_chain;
	const std::string pages = pages_image_name(id, gpu);
	const PagesSums *dumped = sums.pages_of(gpu);
	if (!dumped)
		fail(-EBADMSG, "image %s has no checksums of GPU 0x%04x, whose BOs %s holds",
		     sums_image_name(id).c_str(), gpu, pages.c_str());
	// compared before anything is sized by them: the image's sizes are not bounded
	check_bo_sizes(*dumped, layout.sizes, pages);
	if (!dumped->in_chain.empty() && !chain)
		chain.emplace(ImageChain::below(dir.dirfd()));
	const std::vector<BlockSum> read =
		sum_pages_image(dir, pages, layout, *dumped, chain ? *chain : no_chain, verdict.chain_bytes);
	check_pages_sums(*dumped, read, layout.sizes, layout.addrs, pages);
	verdict.blocks += read.size();
	for (const uint64_t s : layout.sizes)
		verdict.bytes += s;
	verdict.pages_images.push_back(pages);
}

void refuse_other_gpus(const ImageSums &sums, const std::set<uint32_t> &gpus, uint32_t id, const std::string &image)
{
	for (const PagesSums &p : sums.pages)
		if (!gpus.count(p.gpu_id))
			fail(-EBADMSG, "image %s has checksums of GPU 0x%04x, which %s does not name",
			     sums_image_name(id).c_str(), p.gpu_id, image.c_str());
}

} // namespace

ImagesVerdict verify_process_images(const ImageDir &dir, uint32_t id)
{
	ImagesVerdict verdict;
	const std::string kfd = kfd_image_name(id);
	ImageReader kfd_image(dir, kfd, kMaxMetadataImageSize);
	const std::vector<uint8_t> payload = read_payload(kfd_image);
	const std::optional<ImageSums> sums = read_image_sums(dir, id);
	if (!sums)
		return verdict;
	verdict.has_sums = true;
	check_kfd_digest(*sums, payload, kfd, sums_image_name(id));
	const CriuKfdPtr msg = unpack_criu_kfd(payload, kfd);
	const std::vector<BoShare> shares = bo_shares(*msg, kfd);

	std::optional<ImageChain> chain; // when an image takes blocks from it
	std::set<uint32_t> gpus;
	for (size_t i = 0; i < msg->n_device_entries; i++)
		if (msg->device_entries[i]->gpu_id)
			gpus.insert(msg->device_entries[i]->gpu_id);
	refuse_other_gpus(*sums, gpus, id, kfd);
	for (const uint32_t gpu : gpus)
		verify_pages(dir, id, gpu, pages_layout(*msg, gpu, shares), *sums, chain, verdict);
	return verdict;
}

ImagesVerdict verify_render_images(const ImageDir &dir, uint32_t id)
{
	ImagesVerdict verdict;
	const std::string name = render_image_name(id);
	ImageReader image(dir, name, kMaxMetadataImageSize);
	const std::vector<uint8_t> payload = read_payload(image);
	const std::optional<ImageSums> sums = read_image_sums(dir, id);
	if (!sums)
		return verdict;
	verdict.has_sums = true;
	check_kfd_digest(*sums, payload, name, sums_image_name(id));
	const CriuRenderNodePtr msg = unpack_criu_render_node(payload, name);
	PagesLayout layout; // the objects with contents of their own, in handle order (save_gem_contents)
	for (const GemEntry &e : gem_entries(*msg, name)) {
		if (e.kfd_addr)
			continue;
		layout.sizes.push_back(e.object.size);
		layout.addrs.push_back(e.mappings.empty() ? 0 : gem::sign_extended(e.mappings.front().addr));
	}
	refuse_other_gpus(*sums, layout.sizes.empty() ? std::set<uint32_t> {} : std::set<uint32_t> { msg->gpu_id }, id,
			  name);
	std::optional<ImageChain> chain;
	if (!layout.sizes.empty())
		verify_pages(dir, id, msg->gpu_id, layout, *sums, chain, verdict);
	return verdict;
}

} // namespace amdgpu
