// SPDX-License-Identifier: GPL-2.0-only
#include "copy/sdma_packets.hpp"

#include <gtest/gtest.h>

namespace amdgpu::sdma {
namespace {

TEST(SdmaPackets, CopyLinearEncodesByteCountMinusOne)
{
	std::vector<uint32_t> ib;
	emit_copy_linear(ib, 0x123456789000ull, 0xabcdef001000ull, 4096);
	const std::vector<uint32_t> expected = { 0x00000001, 4095, 0, 0x56789000, 0x00001234, 0xef001000, 0x0000abcd };
	EXPECT_EQ(ib, expected);
}

TEST(SdmaPackets, LargeCopiesAreSplitAtTheEngineMaximum)
{
	std::vector<uint32_t> ib;
	const uint64_t bytes = 2 * kMaxCopyBytes + 4096;
	emit_copy_linear(ib, 0x100000000ull, 0x200000000ull, bytes);
	ASSERT_EQ(ib.size(), 3u * kCopyLinearDwords);
	EXPECT_EQ(copy_linear_packets(bytes), 3u);
	uint64_t total = 0;
	for (size_t p = 0; p < 3; p++) {
		const uint32_t *pkt = &ib[p * kCopyLinearDwords];
		const uint64_t src = pkt[3] | (uint64_t(pkt[4]) << 32);
		const uint64_t dst = pkt[5] | (uint64_t(pkt[6]) << 32);
		EXPECT_EQ(src, 0x100000000ull + total) << "packet " << p;
		EXPECT_EQ(dst, 0x200000000ull + total) << "packet " << p;
		EXPECT_LE(uint64_t(pkt[1]) + 1, kMaxCopyBytes);
		total += uint64_t(pkt[1]) + 1;
	}
	EXPECT_EQ(total, bytes);
}

TEST(SdmaPackets, ConstFillWritesADwordValueOverBytesMinusOne)
{
	std::vector<uint32_t> ib;
	emit_const_fill(ib, 0x123456789000ull, 0, 65536);
	const std::vector<uint32_t> expected = { 0x8000000b, 0x56789000, 0x00001234, 0, 65535 };
	EXPECT_EQ(ib, expected);
}

TEST(SdmaPackets, LargeFillsAreSplitAtTheEngineMaximum)
{
	std::vector<uint32_t> ib;
	const uint64_t bytes = kMaxCopyBytes + 8192;
	emit_const_fill(ib, 0x200000000ull, 0xdeadbeef, bytes);
	ASSERT_EQ(ib.size(), 2u * kConstFillDwords);
	EXPECT_EQ(const_fill_packets(bytes), 2u);
	EXPECT_EQ(ib[4] + 1u, kMaxCopyBytes);
	EXPECT_EQ(ib[kConstFillDwords + 1], ((0x200000000ull + kMaxCopyBytes) & 0xffffffffu));
	EXPECT_EQ(ib[kConstFillDwords + 3], 0xdeadbeefu);
	EXPECT_EQ(ib[kConstFillDwords + 4] + 1u, 8192u);
}

TEST(SdmaPackets, ZeroBytesEmitNothing)
{
	std::vector<uint32_t> ib;
	emit_copy_linear(ib, 0x1000, 0x2000, 0);
	emit_const_fill(ib, 0x1000, 0, 0);
	EXPECT_TRUE(ib.empty());
	EXPECT_EQ(copy_linear_packets(0), 0u);
}

TEST(SdmaPackets, IbIsPaddedWithNopsToEightDwords)
{
	std::vector<uint32_t> ib;
	emit_copy_linear(ib, 0x1000, 0x2000, 8192);
	pad_ib(ib);
	ASSERT_EQ(ib.size(), 8u);
	EXPECT_EQ(ib[7], 0u);
	pad_ib(ib);
	EXPECT_EQ(ib.size(), 8u) << "an aligned IB gets no extra NOPs";
}

} // namespace
} // namespace amdgpu::sdma
