// SPDX-License-Identifier: GPL-2.0-only
#include "driver/kfd_priv_data.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

namespace amdgpu {

namespace {

constexpr size_t kProcessRecordBytes = 8;
constexpr size_t kDeviceRecordBytes = 8;
constexpr uint32_t kVersion = 1;

} // namespace

std::vector<uint8_t> priv_data_for_devices(std::span<const uint8_t> priv, size_t image_devices, size_t devices,
					   const std::string &image)
{
	std::vector<uint8_t> out(priv.begin(), priv.end());
	if (devices == image_devices)
		return out;
	uint32_t version = 0;
	if (priv.size() >= sizeof(version))
		std::memcpy(&version, priv.data(), sizeof(version));
	const size_t records_end = kProcessRecordBytes + image_devices * kDeviceRecordBytes;
	if (devices < image_devices || version != kVersion || priv.size() < records_end)
		fail(-EINVAL,
		     "%s: cannot give the driver state of %zu GPUs to %zu (private data version %u, %zu bytes; "
		     "version %u expected)",
		     image.c_str(), image_devices, devices, version, priv.size(), kVersion);
	out.insert(out.begin() + static_cast<std::ptrdiff_t>(records_end),
		   (devices - image_devices) * kDeviceRecordBytes, 0);
	return out;
}

namespace {

constexpr size_t kGpusPerBoRecord[] = { 16, 64 };

size_t bo_record_bytes(size_t gpus)
{
	return (8 + 4 + 4 * gpus + 7) / 8 * 8; // u64 user address, u32 id, u32 per GPU, 8-aligned
}

std::optional<std::vector<BoPrivRecord>> read_bo_records(std::span<const uint8_t> priv, size_t at, size_t bos,
							 size_t gpus, std::span<const uint32_t> image_gpu_ids)
{
	const size_t bytes = bo_record_bytes(gpus);
	if (priv.size() < at || (priv.size() - at) / bytes < bos)
		return std::nullopt;
	std::vector<BoPrivRecord> records(bos);
	for (size_t b = 0; b < bos; b++) {
		const uint8_t *r = priv.data() + at + b * bytes;
		std::memcpy(&records[b].id, r + 8, 4);
		bool ended = false;
		for (size_t g = 0; g < gpus; g++) {
			uint32_t id;
			std::memcpy(&id, r + 12 + 4 * g, 4);
			if (!id) {
				ended = true;
				continue;
			}
			if (ended || std::find(image_gpu_ids.begin(), image_gpu_ids.end(), id) == image_gpu_ids.end())
				return std::nullopt;
			records[b].mapped_gpu_ids.push_back(id);
		}
	}
	return records;
}

} // namespace

std::vector<BoPrivRecord> bo_priv_records(std::span<const uint8_t> priv, size_t devices, size_t bos,
					  std::span<const uint32_t> image_gpu_ids, const std::string &image)
{
	const size_t at = kProcessRecordBytes + devices * kDeviceRecordBytes;
	const auto mappings = [](const std::vector<BoPrivRecord> &records) {
		size_t n = 0;
		for (const BoPrivRecord &r : records)
			n += r.mapped_gpu_ids.size();
		return n;
	};
	std::optional<std::vector<BoPrivRecord>> found;
	for (const size_t gpus : kGpusPerBoRecord) {
		std::optional<std::vector<BoPrivRecord>> r = read_bo_records(priv, at, bos, gpus, image_gpu_ids);
		if (!r)
			continue;
		// both read right only when little is mapped: the reading that finds more mappings is
		// the one that did not read zeros past the records
		if (found && mappings(*r) == mappings(*found))
			fail(-EINVAL, "%s: the driver state's %zu BO records read right as %zu and as %zu GPUs each",
			     image.c_str(), bos, kGpusPerBoRecord[0], gpus);
		if (!found || mappings(*r) > mappings(*found))
			found = std::move(r);
	}
	if (!found)
		fail(-EINVAL,
		     "%s: the driver state's %zu BO records read as none of the layouts known (%zu bytes of data)",
		     image.c_str(), bos, priv.size());
	return *found;
}

} // namespace amdgpu
