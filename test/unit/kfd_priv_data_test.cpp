// SPDX-License-Identifier: GPL-2.0-only
#include "kfd_priv_data.hpp"

#include "error.hpp"

#include <gtest/gtest.h>

namespace amdgpu {
namespace {

// Version 1, xnack 0, two device records (0xd1, 0xd2), then one byte of BO data (0xb0).
const std::vector<uint8_t> kTwoGpus = { 1, 0, 0, 0,    0, 0, 0, 0, 0xd1, 0, 0, 0,   0,
					0, 0, 0, 0xd2, 0, 0, 0, 0, 0,	 0, 0, 0xb0 };

TEST(KfdPrivData, SameGpuCountKeepsTheBytes)
{
	EXPECT_EQ(priv_data_for_devices(kTwoGpus, 2, 2, "img"), kTwoGpus);
}

TEST(KfdPrivData, ExtraGpusGetZeroedRecordsAfterTheImagesOnes)
{
	const auto out = priv_data_for_devices(kTwoGpus, 2, 4, "img");
	ASSERT_EQ(out.size(), kTwoGpus.size() + 16);
	EXPECT_EQ(out[8], 0xd1);
	EXPECT_EQ(out[16], 0xd2);
	for (size_t i = 24; i < 40; i++)
		EXPECT_EQ(out[i], 0) << "byte " << i;
	EXPECT_EQ(out.back(), 0xb0) << "the BO and object data keep their order, shifted";
}

TEST(KfdPrivData, FewerGpusOrUnknownLayoutIsRefusedWithTheValues)
{
	auto v2 = kTwoGpus;
	v2[0] = 2;
	for (const auto &[priv, devices] : { std::pair { kTwoGpus, size_t { 1 } }, std::pair { v2, size_t { 3 } },
					     std::pair { std::vector<uint8_t>(12, 0), size_t { 3 } } }) {
		try {
			priv_data_for_devices(priv, 2, devices, "amdgpu-kfd-5.img");
			ADD_FAILURE() << "accepted " << devices << " GPUs";
		} catch (const Error &e) {
			EXPECT_EQ(e.err(), -EINVAL);
			EXPECT_NE(
				std::string(e.what()).find("amdgpu-kfd-5.img: cannot give the driver state of 2 GPUs"),
				std::string::npos)
				<< e.what();
		}
	}
}

} // namespace
} // namespace amdgpu
