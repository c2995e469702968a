// SPDX-License-Identifier: GPL-2.0-only
#include "copy/sdma_packets.hpp"

#include <algorithm>

namespace amdgpu::sdma {

namespace {

constexpr uint32_t header(uint32_t op, uint32_t sub_op)
{
	return (op & 0xff) | ((sub_op & 0xff) << 8);
}

constexpr uint32_t lo(uint64_t v)
{
	return static_cast<uint32_t>(v);
}

constexpr uint32_t hi(uint64_t v)
{
	return static_cast<uint32_t>(v >> 32);
}

} // namespace

void emit_copy_linear(std::vector<uint32_t> &ib, uint64_t src_va, uint64_t dst_va, uint64_t bytes)
{
	ib.reserve(ib.size() + copy_linear_packets(bytes) * kCopyLinearDwords);
	while (bytes) {
		const uint64_t n = std::min(bytes, kMaxCopyBytes);
		ib.push_back(header(kOpCopy, kSubOpCopyLinear));
		ib.push_back(static_cast<uint32_t>(n - 1)); // SDMA 4.x counts bytes minus one
		ib.push_back(0);			    // no endian swap
		ib.push_back(lo(src_va));
		ib.push_back(hi(src_va));
		ib.push_back(lo(dst_va));
		ib.push_back(hi(dst_va));
		src_va += n;
		dst_va += n;
		bytes -= n;
	}
}

void emit_const_fill(std::vector<uint32_t> &ib, uint64_t dst_va, uint32_t value, uint64_t bytes)
{
	constexpr uint32_t kFillDword = 2u << 30; // log2 of the fill unit's bytes
	ib.reserve(ib.size() + const_fill_packets(bytes) * kConstFillDwords);
	while (bytes) {
		const uint64_t n = std::min(bytes, kMaxCopyBytes);
		ib.push_back(header(kOpConstFill, 0) | kFillDword);
		ib.push_back(lo(dst_va));
		ib.push_back(hi(dst_va));
		ib.push_back(value);
		ib.push_back(static_cast<uint32_t>(n - 1));
		dst_va += n;
		bytes -= n;
	}
}

void pad_ib(std::vector<uint32_t> &ib)
{
	while (ib.size() % kIbAlignDwords)
		ib.push_back(header(kOpNop, 0));
}

} // namespace amdgpu::sdma
