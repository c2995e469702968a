// SPDX-License-Identifier: GPL-2.0-only
//
// An amdgpu-kfd-<id>.img, from the file to the last step before the restore's first KFD ioctl:
// the framed protobuf through the image reader, the topology it describes, the GPU matcher onto
// the local node, each BO's GPU in that map, the driver's private data resized for the local GPU
// count, and the runtime's registration with KFD (restore_session.cpp's order).
#include "fuzz_support.hpp"

#include "matching/gpu_matcher.hpp"
#include "driver/kfd_priv_data.hpp"
#include "images/metadata_images.hpp"
#include "topology/topology_image.hpp"

using namespace amdgpu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const fuzz::ScratchDir dir;
	dir.put(kfd_image_name(1), data, size);
	fuzz::refusals_are_fine([&] {
		const CriuKfdPtr msg = read_criu_kfd(dir.images(), 1);
		const Topology image = topology_from_image(*msg, kfd_image_name(1));
		const GpuMap map = match_gpus(image, fuzz::local_topology(), MatchPolicy {});
		size_t mapped = 0;
		for (size_t i = 0; i < msg->n_bo_entries; i++)
			mapped += map.gpu_ids.count(msg->bo_entries[i]->gpu_id);
		(void)mapped;
		priv_data_for_devices({ msg->priv_data.data, msg->priv_data.len }, msg->num_of_gpus,
				      fuzz::local_topology().gpus().size(), kfd_image_name(1));
		(void)kfd_runtime(*msg, kfd_image_name(1));
	});
	return 0;
}
