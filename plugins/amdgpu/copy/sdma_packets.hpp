// SPDX-License-Identifier: GPL-2.0-only
//
// SDMA 4.x packet builders (gfx9 and later: Vega, MI100, MI200, MI300). Pure functions: they only
// append dwords to an indirect buffer; submission lives in the transfer code.
#pragma once

#include <cstdint>
#include <vector>

namespace amdgpu::sdma {

inline constexpr uint32_t kOpNop = 0;
inline constexpr uint32_t kOpCopy = 1;
inline constexpr uint32_t kSubOpCopyLinear = 0;
inline constexpr uint32_t kOpConstFill = 11;

// COPY_LINEAR's count field holds bytes - 1 in 22 bits on SDMA 4.x, so one packet could move
// 4 MiB; we stay at 2 MiB, which every gfx9+ SDMA revision accepts, at a cost of 28 bytes of IB
// per 2 MiB moved.
inline constexpr uint64_t kMaxCopyBytes = 1ull << 21;
inline constexpr uint32_t kCopyLinearDwords = 7;

// The engine fetches IBs in 8-dword units; the tail is padded with NOPs.
inline constexpr uint32_t kIbAlignDwords = 8;

// Number of COPY_LINEAR packets needed to move `bytes`.
inline uint64_t copy_linear_packets(uint64_t bytes)
{
	return (bytes + kMaxCopyBytes - 1) / kMaxCopyBytes;
}

// Appends the packets copying `bytes` from src_va to dst_va (GPU virtual addresses).
void emit_copy_linear(std::vector<uint32_t> &ib, uint64_t src_va, uint64_t dst_va, uint64_t bytes);

// CONST_FILL writes one dword value over `bytes` (a multiple of 4) at dst_va: dst lo/hi, the
// value, bytes minus one; the header's bits 31:30 say the unit is a dword. Same 2 MiB per packet.
inline constexpr uint32_t kConstFillDwords = 5;
inline uint64_t const_fill_packets(uint64_t bytes)
{
	return (bytes + kMaxCopyBytes - 1) / kMaxCopyBytes;
}
void emit_const_fill(std::vector<uint32_t> &ib, uint64_t dst_va, uint32_t value, uint64_t bytes);

// Pads the IB with NOPs to a multiple of kIbAlignDwords.
void pad_ib(std::vector<uint32_t> &ib);

} // namespace amdgpu::sdma
