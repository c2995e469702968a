// SPDX-License-Identifier: GPL-2.0-only
//
// What the checksums cost the CPU (image_checksums.hpp), on this host's CPU rather than the test
// bed's emulated one: BlockSummer over a 64 MiB staging buffer, dense (every block hashed) and
// 80 % zeros in 1 MiB runs (zero blocks only tested), fed in 8 MiB pieces as the copy feeds it.
// Prints the median GB/s of several runs and, for copy engines of 10 and 25 GB/s (a real GPU's
// SDMA), the share of a copy the hashing would take were it not hidden behind the engine (one
// worker thread per GPU hashes while its engine fills the next staging buffer). Asserts nothing.
#include "images/image_checksums.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace amdgpu {
namespace {

constexpr size_t kBytes = 64u << 20;
constexpr size_t kPiece = 8u << 20;

double median_gbps(const std::vector<uint8_t> &buf)
{
	const std::vector<uint64_t> bos { kBytes };
	std::vector<double> runs;
	for (int i = 0; i < 9; i++) {
		BlockSummer summer(bos);
		const auto t0 = std::chrono::steady_clock::now();
		for (size_t at = 0; at < buf.size(); at += kPiece)
			summer.add({ buf.data() + at, kPiece });
		runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
	}
	std::sort(runs.begin(), runs.end());
	return static_cast<double>(buf.size()) / 1e9 / runs[runs.size() / 2];
}

int run()
{
	std::vector<uint8_t> dense(kBytes), mixed(kBytes, 0);
	for (size_t i = 0; i < kBytes; i++)
		dense[i] = static_cast<uint8_t>(i * 131 + 17) | 1;
	for (size_t mib = 0; mib < kBytes >> 20; mib++)
		if (mib % 5 == 0)
			std::memcpy(mixed.data() + (mib << 20), dense.data() + (mib << 20), 1u << 20);
	for (const auto &[what, buf] :
	     { std::pair { "dense", &dense }, std::pair { "80 % zeros in 1 MiB runs", &mixed } }) {
		const double gbps = median_gbps(*buf);
		std::printf("checksums: 64 MiB %s: %.1f GB/s on one core; against an engine of 10 GB/s %.0f %% of the "
			    "copy, of 25 GB/s %.0f %% (unhidden)\n",
			    what, gbps, 100 * 10 / gbps, 100 * 25 / gbps);
	}
	return 0;
}

} // namespace
} // namespace amdgpu

int main()
{
	return amdgpu::run();
}
