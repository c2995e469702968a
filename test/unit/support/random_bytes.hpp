// SPDX-License-Identifier: GPL-2.0-only
//
// Reproducible pseudo-random contents for tests of GPU memory images.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace amdgpu::test {

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed)
{
	std::mt19937 rng(seed);
	std::vector<uint8_t> b(n);
	for (auto &x : b)
		x = static_cast<uint8_t>(rng());
	return b;
}

} // namespace amdgpu::test
