// SPDX-License-Identifier: GPL-2.0-only
//
// An amdgpu-renderD-<id>.img through the image reader and its decoders: the message, its GEM
// objects and its contexts, and the device entries of a process without KFD state.
#include "fuzz_support.hpp"

#include "images/metadata_images.hpp"
#include "render/render_image.hpp"
#include "topology/topology_image.hpp"

using namespace amdgpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const fuzz::ScratchDir dir;
	dir.put(render_image_name(1), data, size);
	fuzz::refusals_are_fine([&] {
		const CriuRenderNodePtr msg = read_criu_render_node(dir.images(), 1);
		(void)gem_entries(*msg, "image");
		(void)contexts_of(*msg, "image");
		(void)topology_from_device_entries(
			std::span<const KfdDeviceEntry *const>(msg->device_entries, msg->n_device_entries), "image");
	});
	return 0;
}
