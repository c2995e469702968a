// SPDX-License-Identifier: GPL-2.0-only
//
// The KFD's private checkpoint data is opaque to the plugin, with one exception: RESTORE takes a
// device bucket for every GPU the restoring task can see and skips as many device records of the
// data. Restoring onto a node with more GPUs than the image therefore needs device records for
// the extra GPUs. Layout (6.1, private-data version 1, Documentation/kfd-interface.md §1.3): an
// 8-byte process record starting with the version, one 8-byte record per device (never filled by
// the kernel), then BOs and objects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

// The private data for `devices` GPUs, made from the image's data for `image_devices`: the same
// bytes with zeroed device records inserted after the image's. Throws Error(-EINVAL) naming
// `image` for fewer GPUs, another version, or data too short to hold the records.
std::vector<uint8_t> priv_data_for_devices(std::span<const uint8_t> priv, size_t image_devices, size_t devices,
					   const std::string &image);

// One BO's record (after the process and device records, one per BO bucket, in bucket order): the
// id of its handle, and the GPUs it is mapped on (the gpu_ids the process knows). A record holds
// the user address, the id and a gpu_id per GPU a BO may be mapped on; that number grew from 16
// (6.1) to 64 (later kernels), so the records' size is told by reading them: the size whose
// records all name only GPUs of the image, in a zero-terminated list, is the one.
struct BoPrivRecord {
	uint32_t id = 0;
	std::vector<uint32_t> mapped_gpu_ids;
};
// Throws Error(-EINVAL) naming `image` when no record size reads right.
std::vector<BoPrivRecord> bo_priv_records(std::span<const uint8_t> priv, size_t devices, size_t bos,
					  std::span<const uint32_t> image_gpu_ids, const std::string &image);

} // namespace amdgpu
