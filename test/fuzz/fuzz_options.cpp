// SPDX-License-Identifier: GPL-2.0-only
//
// The KFD_* environment variables and criu 4.3's plugin options. The input's NUL-separated pieces
// are the values of the variables below, in order (a missing piece: unset), then plugin options.
#include "fuzz_support.hpp"

#include "sessions/options.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

using namespace amdgpu;

namespace {

constexpr std::array kNames = { "KFD_FW_VER_CHECK",    "KFD_SDMA_FW_VER_CHECK", "KFD_CACHES_COUNT_CHECK",
				"KFD_NUM_GWS_CHECK",   "KFD_VRAM_SIZE_CHECK",   "KFD_NUMA_CHECK",
				"KFD_CAPABILITY_CHECK", "KFD_MAX_BUFFER_SIZE" };

std::vector<std::string> values;

const char *lookup(const char *name)
{
	for (size_t i = 0; i < kNames.size(); i++)
		if (std::string(name) == kNames[i])
			return i < values.size() ? values[i].c_str() : nullptr;
	return nullptr;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::vector<std::string> pieces;
	const char *p = reinterpret_cast<const char *>(data), *end = p + size;
	while (p < end) {
		const char *nul = std::find(p, end, '\0');
		pieces.emplace_back(p, nul);
		p = nul == end ? end : nul + 1;
	}
	const size_t n = std::min(pieces.size(), kNames.size());
	values.assign(pieces.begin(), pieces.begin() + n);
	const std::vector<std::string> args(pieces.begin() + n, pieces.end());
	const Options options = options_from(lookup, args);
	(void)describe(options);
	fuzz::refusals_are_fine([&] { options.require_valid(); });
	return 0;
}
