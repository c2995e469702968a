// SPDX-License-Identifier: GPL-2.0-only
//
// An amdgpu-sums-<id>.img through the image reader and its decoder, then as a restore uses it:
// the kfd image's digest, each GPU's block sums against the blocks of two BOs, and, for an
// incremental image, where each block comes from (an empty chain: each block it leaves to the
// chain is refused).
#include "fuzz_support.hpp"

#include "images/image_chain.hpp"
#include "images/image_checksums.hpp"
#include "images/pages_blocks.hpp"

using namespace amdgpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const fuzz::ScratchDir dir;
	static const std::vector<uint64_t> sizes { 3 * kSumBlock + 4096, 8192 };
	static const std::vector<uint64_t> addrs { 0x7f0000000000, 0x7f0000400000 };
	dir.put(sums_image_name(1), data, size);
	fuzz::refusals_are_fine([&] {
		const std::optional<ImageSums> sums = read_image_sums(dir.images(), 1);
		if (!sums)
			return;
		const uint8_t kfd[16] = {};
		check_kfd_digest(*sums, kfd, kfd_image_name(1), sums_image_name(1));
		BlockSummer zeros(sizes);
		zeros.add_zeros(sizes[0] + sizes[1]);
		const ImageChain no_chain;
		for (const PagesSums &p : sums->pages) {
			if (!p.in_chain.empty())
				ChainedPages(p, no_chain, pages_image_name(1, p.gpu_id));
			check_pages_sums(p, zeros.sums(), sizes, addrs, pages_image_name(1, p.gpu_id));
		}
	});
	return 0;
}
