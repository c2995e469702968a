// SPDX-License-Identifier: GPL-2.0-only
#include "driver/kfd_buckets.hpp"

#include "support/error.hpp"
#include "topology/topology.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

namespace amdgpu {
namespace {

std::vector<std::pair<uint32_t, uint32_t>> actual_user(const std::vector<kfd_criu_device_bucket> &buckets)
{
	std::vector<std::pair<uint32_t, uint32_t>> out;
	for (const auto &b : buckets)
		out.emplace_back(b.actual_gpu_id, b.user_gpu_id);
	return out;
}

TEST(DeviceBuckets, GpusOfTheImageKeepTheIdTheProcessKnows)
{
	const std::vector<uint32_t> local { 0x2000, 0x3000 };
	const auto buckets = device_buckets(local, { { 0x1111, 0x3000 }, { 0x2222, 0x2000 } });
	EXPECT_EQ(actual_user(buckets),
		  (std::vector<std::pair<uint32_t, uint32_t>> { { 0x2000, 0x2222 }, { 0x3000, 0x1111 } }));
	for (const auto &b : buckets)
		EXPECT_EQ(b.drm_fd, 0u);
}

TEST(DeviceBuckets, AnUnusedGpuKeepsItsOwnIdWhenFree)
{
	const std::vector<uint32_t> local { 0x2000, 0x3000 };
	EXPECT_EQ(actual_user(device_buckets(local, { { 0x2000, 0x2000 } })),
		  (std::vector<std::pair<uint32_t, uint32_t>> { { 0x2000, 0x2000 }, { 0x3000, 0x3000 } }));
}

TEST(DeviceBuckets, AnUnusedGpuWhoseIdTheImageTookTakesTheNextFreeBelow)
{
	// The image calls local 0x2000 "0x3000" and local 0x3000 is unused: 0x2fff is free.
	const std::vector<uint32_t> local { 0x2000, 0x3000 };
	EXPECT_EQ(actual_user(device_buckets(local, { { 0x3000, 0x2000 }, { 0x2fff, 0x4000 } })),
		  (std::vector<std::pair<uint32_t, uint32_t>> { { 0x2000, 0x3000 }, { 0x3000, 0x2ffe } }));
}

TEST(DeviceBuckets, SpareIdsWrapFromOneToTheLargestId)
{
	const std::vector<uint32_t> local { 0x0001, 0x0005 };
	EXPECT_EQ(actual_user(device_buckets(local, { { 0x0001, 0x0005 } })),
		  (std::vector<std::pair<uint32_t, uint32_t>> { { 0x0001, kMaxGpuId }, { 0x0005, 0x0001 } }));
}

TEST(DeviceBuckets, UserIdsAreDistinctWhateverTheMap)
{
	// Every local GPU used under another's id: each unused one must still get an id of its own.
	const std::vector<uint32_t> local { 0x10, 0x11, 0x12, 0x13, 0x14 };
	const auto buckets = device_buckets(local, { { 0x11, 0x10 }, { 0x12, 0x11 }, { 0x14, 0x12 } });
	std::set<uint32_t> ids;
	for (const auto &b : buckets) {
		EXPECT_NE(b.user_gpu_id, 0u);
		ids.insert(b.user_gpu_id);
	}
	EXPECT_EQ(ids.size(), local.size());
	EXPECT_EQ(actual_user(buckets)[3], (std::pair<uint32_t, uint32_t> { 0x13, 0x13 }));
	EXPECT_EQ(actual_user(buckets)[4], (std::pair<uint32_t, uint32_t> { 0x14, 0x10 }));
}

// A kfd image holding one BO (0x2000 bytes at 0x1000 on GPU 0x1111) with the given flags.
struct OneBoImage {
	KfdBoEntry bo = KFD_BO_ENTRY__INIT;
	KfdBoEntry *entries[1] = { &bo };
	CriuKfd msg = CRIU_KFD__INIT;

	explicit OneBoImage(uint32_t alloc_flags)
	{
		bo.addr = 0x1000;
		bo.size = 0x2000;
		bo.gpu_id = 0x1111;
		bo.alloc_flags = alloc_flags;
		msg.n_bo_entries = 1;
		msg.bo_entries = entries;
	}
	OneBoImage(const OneBoImage &) = delete;
	OneBoImage &operator=(const OneBoImage &) = delete;
};

TEST(BoBuckets, CopyTheImagesBosAndRefuseOnesOfAGpuTheMapLacks)
{
	OneBoImage image(KFD_IOC_ALLOC_MEM_FLAGS_VRAM);
	image.bo.offset = 0x30;
	const CriuKfd &msg = image.msg;

	const auto bos = bo_buckets(msg, { { 0x1111, 0x2000 } }, "amdgpu-kfd-1.img");
	ASSERT_EQ(bos.size(), 1u);
	EXPECT_EQ(bos[0].addr, 0x1000u);
	EXPECT_EQ(bos[0].size, 0x2000u);
	EXPECT_EQ(bos[0].offset, 0x30u);
	EXPECT_EQ(bos[0].gpu_id, 0x1111u);
	EXPECT_EQ(bos[0].dmabuf_fd, static_cast<uint32_t>(KFD_INVALID_FD));

	try {
		bo_buckets(msg, { { 0x2222, 0x2000 } }, "amdgpu-kfd-1.img");
		FAIL() << "a BO of an unmapped GPU was accepted";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EINVAL);
		EXPECT_NE(std::string(e.what()).find("GPU 0x1111"), std::string::npos) << e.what();
	}
}

// Kernels from 6.5 and 6.11 add allocation flags (EXT_COHERENT 1 << 24, CONTIGUOUS 1 << 23) that
// RESTORE must see again: the bucket carries every bit of the image's alloc_flags, known or not.
TEST(BoBuckets, NewerKernelsAllocationFlagsReachRestoreUnchanged)
{
	constexpr uint32_t kExtCoherent = 1u << 24;
	constexpr uint32_t kContiguous = 1u << 23;
	const OneBoImage image(KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | kExtCoherent |
			       kContiguous);

	const auto bos = bo_buckets(image.msg, { { 0x1111, 0x2000 } }, "amdgpu-kfd-1.img");
	ASSERT_EQ(bos.size(), 1u);
	EXPECT_EQ(bos[0].alloc_flags, image.bo.alloc_flags);
}

} // namespace
} // namespace amdgpu
