// SPDX-License-Identifier: GPL-2.0-only
//
// An amdgpu-renderD-<id>.img through the image reader and its decoder.
#include "fuzz_support.hpp"

#include "images/metadata_images.hpp"

using namespace amdgpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const fuzz::ScratchDir dir;
	dir.put(render_image_name(1), data, size);
	fuzz::refusals_are_fine([&] { (void)read_criu_render_node(dir.images(), 1); });
	return 0;
}
