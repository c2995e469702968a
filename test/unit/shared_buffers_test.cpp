// SPDX-License-Identifier: GPL-2.0-only
//
// The census of GPU buffers in one dump: which are held more than once (two processes, or a
// dma-buf fd), and how much VRAM no dumped process allocated (imported from outside the dump).
#include "sessions/shared_buffers.hpp"

#include "driver/kfd_ioctl.hpp"

#include <gtest/gtest.h>

namespace amdgpu {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint32_t kVram = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
constexpr uint32_t kGtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;

BufferHold bucket(pid_t pid, uint64_t size, uint32_t flags = kVram, uint32_t gpu = 0x1000,
		  uint64_t addr = 0x7f0000000000)
{
	return { .pid = pid, .gpu_id = gpu, .addr = addr, .size = size, .alloc_flags = flags };
}

TEST(SharedBufferCensus, ABufferInTwoProcessesIsSharedAndNamesBoth)
{
	SharedBufferCensus census;
	census.add({ 9, 1 }, bucket(100, 4 * kMiB));
	census.add({ 9, 2 }, bucket(100, kMiB));
	census.add({ 9, 1 }, bucket(101, 4 * kMiB, kGtt, 0x2000, 0x7e0000000000));
	census.add({ 9, 3 }, bucket(101, kMiB));

	const std::vector<SharedBuffer> shared = census.shared();
	ASSERT_EQ(shared.size(), 1u);
	EXPECT_EQ(shared[0].size(), 4 * kMiB);
	EXPECT_TRUE(shared[0].vram());
	EXPECT_EQ(shared[0].pids(), (std::vector<pid_t> { 100, 101 }));
	EXPECT_EQ(describe_holds(shared[0].holds),
		  "pid 100 (VRAM on GPU 0x1000 at 0x7f0000000000), pid 101 (GTT on GPU 0x2000 at 0x7e0000000000)");
}

TEST(SharedBufferCensus, BuffersHeldOnceAreNotShared)
{
	SharedBufferCensus census;
	census.add({ 9, 1 }, bucket(100, kMiB));
	census.add({ 9, 2 }, bucket(101, kMiB));
	EXPECT_TRUE(census.shared().empty());
}

TEST(SharedBufferCensus, ADmabufFdATaskHoldsIsAHoldOfItsOwn)
{
	SharedBufferCensus census;
	census.add({ 9, 1 }, bucket(100, kMiB));
	census.add({ 9, 1 }, { .pid = 100, .size = kMiB, .fd = 7 });
	census.add({ 9, 5 }, { .pid = 101, .size = 8192, .fd = 4 }); // memory of no bucket

	const std::vector<SharedBuffer> shared = census.shared();
	ASSERT_EQ(shared.size(), 2u);
	EXPECT_EQ(describe_holds(shared[0].holds),
		  "pid 100 (VRAM on GPU 0x1000 at 0x7f0000000000), pid 100 (dma-buf fd 7)");
	EXPECT_EQ(shared[1].pids(), std::vector<pid_t> { 101 });
	EXPECT_FALSE(shared[1].vram());
}

TEST(SharedBufferCensus, VramSharedInsideTheDumpIsNotForeign)
{
	// 100 allocated both buffers; 101 imported the first.
	SharedBufferCensus census;
	census.add({ 9, 1 }, bucket(100, 4 * kMiB));
	census.add({ 9, 2 }, bucket(100, kMiB));
	census.add({ 9, 1 }, bucket(101, 4 * kMiB));
	census.charge(100, 5 * kMiB);
	census.charge(101, 0);
	EXPECT_FALSE(census.foreign_vram());
}

TEST(SharedBufferCensus, VramNoDumpedProcessWasChargedForIsForeignAndWhereItMayBeIsSaid)
{
	// 100 allocated 1 MiB and imported 2 MiB from a process outside; 101 allocated its own.
	SharedBufferCensus census;
	census.add({ 9, 1 }, bucket(100, kMiB, kVram, 0x1000, 0x1000000));
	census.add({ 9, 2 }, bucket(100, 2 * kMiB, kVram, 0x1000, 0x2000000));
	census.add({ 9, 3 }, bucket(101, kMiB));
	census.add({ 9, 4 }, bucket(101, kMiB, kGtt)); // GTT is not charged as VRAM, and counts not
	census.charge(100, kMiB);
	census.charge(101, kMiB);

	const std::optional<ForeignVram> f = census.foreign_vram();
	ASSERT_TRUE(f);
	EXPECT_EQ(f->bytes, 2 * kMiB);
	EXPECT_EQ(f->vram, 4 * kMiB);
	EXPECT_EQ(f->charged, 2 * kMiB);
	ASSERT_EQ(f->candidates.size(), 2u); // 100's buffers: which one was imported is not told
	EXPECT_EQ(f->candidates[0].addr, 0x1000000u);
	EXPECT_EQ(f->candidates[1].addr, 0x2000000u);
}

TEST(SharedBufferCensus, ForeignVramIsUndecidedWhileAChargeIsUnknown)
{
	SharedBufferCensus census;
	census.add({ 9, 1 }, bucket(100, kMiB));
	census.charge_unknown(100);
	EXPECT_FALSE(census.foreign_vram());
}

TEST(SharedBufferCensus, AnotherGpusBufferNoBucketHoldsOnItsOwnGpuIsFromOutside)
{
	SharedBufferCensus census;
	BufferHold imported = bucket(100, kMiB, kGtt, 0x2000);
	imported.imported = true;
	census.add({ 9, 1 }, imported); // its owner is not dumped
	census.add({ 9, 2 }, bucket(100, kMiB, kVram, 0x1000));
	census.add({ 9, 2 }, imported); // its owner is
	const std::vector<SharedBuffer> outside = census.imported_from_outside();
	ASSERT_EQ(outside.size(), 1u);
	EXPECT_EQ(outside[0].key, (BufferKey { 9, 1 }));
}

TEST(SharedBufferCensus, TheHolderThatMapsABufferIntoItsMemoryRestoresIt)
{
	SharedBufferCensus census;
	census.add({ 9, 1 }, bucket(100, kMiB)); // the importer, met first
	BufferHold owner = bucket(101, kMiB, kVram, 0x1000, 0x7e0000000000);
	owner.cpu_mapped = true; // ROCm maps what it allocated
	census.add({ 9, 1 }, owner);
	ASSERT_TRUE(census.restorer_of({ 9, 1 }));
	EXPECT_EQ(census.restorer_of({ 9, 1 })->pid, 101);
	EXPECT_EQ(census.shared_number({ 9, 1 }), 1u);

	SharedBufferCensus unmapped; // else the first VRAM holder
	unmapped.add({ 9, 1 }, bucket(100, kMiB, kGtt, 0x2000));
	unmapped.add({ 9, 1 }, bucket(101, kMiB));
	EXPECT_EQ(unmapped.restorer_of({ 9, 1 })->pid, 101);
}

TEST(SharedBufferCensus, BucketsOfOneGpuWithOneMmapOffsetAreOneBufferWhateverTheirDmabufs)
{
	// 6.1 hands out a new dma-buf at every export: the mmap offset still names the buffer
	SharedBufferCensus census;
	const BufferKey a = census.key_of({ 9, 1 }, 0x1000, 0x10000);
	const BufferKey b = census.key_of({ 9, 2 }, 0x1000, 0x10000);
	const BufferKey c = census.key_of({ 9, 3 }, 0x1000, 0x20000);
	const BufferKey d = census.key_of({ 9, 4 }, 0x2000, 0x10000); // another GPU's offset
	EXPECT_EQ(a, b);
	EXPECT_NE(a, c);
	EXPECT_NE(a, d);
	EXPECT_EQ(census.key_of({ 9, 2 }, 0x1000, 0x10000), a) << "the same arguments, another key";
	EXPECT_EQ(census.key_of(BufferKey { 9, 2 }), a) << "a dma-buf fd of it goes by another key";
}

TEST(SharedBufferCensus, SizesAreSaidInTheLargestWholeUnit)
{
	EXPECT_EQ(describe_size(64 * kMiB), "64 MiB (67108864 bytes)");
	EXPECT_EQ(describe_size(12288), "12 KiB (12288 bytes)");
	EXPECT_EQ(describe_size(1000), "1000 bytes");
}

} // namespace
} // namespace amdgpu
