// SPDX-License-Identifier: GPL-2.0-only
#include "driver/kfd_buckets.hpp"

#include "support/error.hpp"
#include "topology/topology.hpp"

#include <cerrno>
#include <set>

namespace amdgpu {

namespace {

uint32_t image_id_of(uint32_t local, const std::map<uint32_t, uint32_t> &image_to_local)
{
	for (const auto &[image, actual] : image_to_local)
		if (actual == local)
			return image;
	return 0;
}

uint32_t take_spare_id(uint32_t wanted, std::set<uint32_t> &taken)
{
	while (taken.count(wanted))
		wanted = wanted == 1 ? kMaxGpuId : wanted - 1;
	taken.insert(wanted);
	return wanted;
}

} // namespace

std::vector<kfd_criu_device_bucket> device_buckets(std::span<const uint32_t> local_gpu_ids,
						   const std::map<uint32_t, uint32_t> &image_to_local)
{
	std::set<uint32_t> taken;
	for (const auto &[image, actual] : image_to_local)
		taken.insert(image);
	std::vector<kfd_criu_device_bucket> buckets;
	for (const uint32_t local : local_gpu_ids) {
		kfd_criu_device_bucket b = {};
		b.actual_gpu_id = local;
		b.user_gpu_id = image_id_of(local, image_to_local);
		if (!b.user_gpu_id)
			b.user_gpu_id = take_spare_id(local, taken);
		buckets.push_back(b);
	}
	return buckets;
}

std::vector<kfd_criu_bo_bucket> bo_buckets(const CriuKfd &msg, const std::map<uint32_t, uint32_t> &image_to_local,
					   const std::string &image)
{
	std::vector<kfd_criu_bo_bucket> bos(msg.n_bo_entries);
	for (size_t i = 0; i < bos.size(); i++) {
		const KfdBoEntry &e = *msg.bo_entries[i];
		if (!image_to_local.count(e.gpu_id))
			fail(-EINVAL, "%s: BO %zu at 0x%llx belongs to GPU 0x%04x, which the image's topology lacks",
			     image.c_str(), i, static_cast<unsigned long long>(e.addr), e.gpu_id);
		bos[i] = {};
		bos[i].addr = e.addr;
		bos[i].size = e.size;
		bos[i].offset = e.offset;
		bos[i].gpu_id = e.gpu_id;
		bos[i].alloc_flags = e.alloc_flags;
		bos[i].dmabuf_fd = KFD_INVALID_FD;
	}
	return bos;
}

} // namespace amdgpu
