// SPDX-License-Identifier: GPL-2.0-only
//
// KFD's private data blob from an image, resized for another GPU count. The first two bytes
// choose the image's and the local GPU counts, the rest is the blob.
#include "fuzz_support.hpp"

#include "driver/kfd_priv_data.hpp"

#include <span>

using namespace amdgpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	const std::span<const uint8_t> priv(data + 2, size - 2);
	fuzz::refusals_are_fine([&] { (void)priv_data_for_devices(priv, data[0], data[1], "amdgpu-kfd-1.img"); });
	return 0;
}
