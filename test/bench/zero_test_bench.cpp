// SPDX-License-Identifier: GPL-2.0-only
//
// What the dump's zero test costs the CPU (sparse_pages.hpp): zero_runs over a 64 MiB staging
// buffer that is all zeros (the whole buffer scanned), dense (one word per 64 KiB block), and 80 %
// zeros in 1 MiB runs. Prints the median GB/s of several runs; asserts nothing about time.
#include "images/sparse_pages.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace amdgpu {
namespace {

constexpr size_t kBytes = 64u << 20;

double median_gbps(const std::vector<uint8_t> &buf, size_t *extents)
{
	std::vector<double> runs;
	for (int i = 0; i < 9; i++) {
		const auto t0 = std::chrono::steady_clock::now();
		*extents = zero_runs(buf, 0).size();
		runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
	}
	std::sort(runs.begin(), runs.end());
	return static_cast<double>(buf.size()) / 1e9 / runs[runs.size() / 2];
}

int run()
{
	std::vector<uint8_t> zeros(kBytes, 0), dense(kBytes), mixed(kBytes, 0);
	for (size_t i = 0; i < kBytes; i++)
		dense[i] = static_cast<uint8_t>(i * 131 + 17) | 1;
	for (size_t mib = 0; mib < kBytes >> 20; mib++)
		if (mib % 5 == 0)
			std::memcpy(mixed.data() + (mib << 20), dense.data() + (mib << 20), 1u << 20);
	size_t n;
	double gbps = median_gbps(zeros, &n);
	std::printf("zero test: 64 MiB of zeros: %.1f GB/s (%zu extent)\n", gbps, n);
	gbps = median_gbps(dense, &n);
	std::printf("zero test: 64 MiB dense: %.1f GB/s (%zu extent)\n", gbps, n);
	gbps = median_gbps(mixed, &n);
	std::printf("zero test: 64 MiB, 80 %% zeros in 1 MiB runs: %.1f GB/s (%zu extents)\n", gbps, n);
	return 0;
}

} // namespace
} // namespace amdgpu

int main()
{
	return amdgpu::run();
}
