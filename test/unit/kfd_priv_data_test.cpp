// SPDX-License-Identifier: GPL-2.0-only
#include "driver/kfd_priv_data.hpp"

#include "support/error.hpp"

#include <gtest/gtest.h>

#include <cstring>

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

// Driver state with two GPUs (0x1111, 0x2222) and three BO records of `gpus_per_bo` GPUs each:
// ids 4, 0 and 7, mapped on {0x1111}, {} and {0x1111, 0x2222}; then 40 bytes of object data.
std::vector<uint8_t> with_bo_records(size_t gpus_per_bo)
{
	const size_t record = (12 + 4 * gpus_per_bo + 7) / 8 * 8;
	std::vector<uint8_t> priv(8 + 16 + 3 * record + 40, 0);
	priv[0] = 1;
	const uint32_t ids[] = { 4, 0, 7 };
	const std::vector<std::vector<uint32_t>> mapped = { { 0x1111 }, {}, { 0x1111, 0x2222 } };
	for (size_t b = 0; b < 3; b++) {
		uint8_t *r = priv.data() + 24 + b * record;
		std::memcpy(r + 8, &ids[b], 4);
		for (size_t g = 0; g < mapped[b].size(); g++)
			std::memcpy(r + 12 + 4 * g, &mapped[b][g], 4);
	}
	for (size_t i = priv.size() - 40; i < priv.size(); i++)
		priv[i] = 0x77; // a queue's data: no GPU id
	return priv;
}

TEST(KfdPrivData, BoRecordsAreReadInTheLayoutOfTheKernelThatWroteThem)
{
	const std::vector<uint32_t> gpus = { 0x1111, 0x2222 };
	for (const size_t per_bo : { 16, 64 }) {
		const std::vector<BoPrivRecord> r = bo_priv_records(with_bo_records(per_bo), 2, 3, gpus, "img");
		ASSERT_EQ(r.size(), 3u) << per_bo;
		EXPECT_EQ(r[0].id, 4u) << per_bo;
		EXPECT_EQ(r[0].mapped_gpu_ids, std::vector<uint32_t> { 0x1111 }) << per_bo;
		EXPECT_EQ(r[1].id, 0u) << per_bo;
		EXPECT_TRUE(r[1].mapped_gpu_ids.empty()) << per_bo;
		EXPECT_EQ(r[2].id, 7u) << per_bo;
		EXPECT_EQ(r[2].mapped_gpu_ids, (std::vector<uint32_t> { 0x1111, 0x2222 })) << per_bo;
	}
}

TEST(KfdPrivData, BoRecordsThatReadInNoLayoutAreRefusedNamingTheImage)
{
	try {
		bo_priv_records(with_bo_records(16), 2, 3, std::vector<uint32_t> { 0x3333 }, "amdgpu-kfd-9.img");
		ADD_FAILURE() << "records naming GPUs the image lacks were read";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EINVAL);
		EXPECT_NE(std::string(e.what()).find("amdgpu-kfd-9.img: the driver state's 3 BO records"),
			  std::string::npos)
			<< e.what();
	}
}

} // namespace
} // namespace amdgpu
