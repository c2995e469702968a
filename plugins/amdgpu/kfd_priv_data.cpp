// SPDX-License-Identifier: GPL-2.0-only
#include "kfd_priv_data.hpp"

#include "error.hpp"

#include <cerrno>
#include <cstring>

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

} // namespace amdgpu
