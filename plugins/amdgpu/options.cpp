// SPDX-License-Identifier: GPL-2.0-only
#include "options.hpp"

#include "error.hpp"

#include <unistd.h>

#include <cerrno>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace amdgpu {

namespace {

struct BoolVar {
	const char *name;
	bool MatchPolicy::*field;
};

constexpr BoolVar kMatchVars[] = {
	{ "KFD_FW_VER_CHECK", &MatchPolicy::fw_version },
	{ "KFD_SDMA_FW_VER_CHECK", &MatchPolicy::sdma_fw_version },
	{ "KFD_CACHES_COUNT_CHECK", &MatchPolicy::caches_count },
	{ "KFD_NUM_GWS_CHECK", &MatchPolicy::num_gws },
	{ "KFD_VRAM_SIZE_CHECK", &MatchPolicy::vram_size },
	{ "KFD_NUMA_CHECK", &MatchPolicy::numa },
	{ "KFD_CAPABILITY_CHECK", &MatchPolicy::capability },
};

constexpr const char *kMaxBufferVar = "KFD_MAX_BUFFER_SIZE";

MatchPolicy read_match_policy(EnvLookup lookup, std::vector<std::string> &errors)
{
	MatchPolicy policy;
	for (const auto &var : kMatchVars) {
		const char *value = lookup(var.name);
		if (!value)
			continue;
		if (!parse_env_bool(value, policy.*var.field))
			errors.push_back(strprintf("%s='%s' is not a boolean (use 0, 1, no or yes)", var.name, value));
	}
	return policy;
}

} // namespace

bool parse_env_bool(const char *value, bool &out)
{
	if (!strcmp(value, "0") || !strcasecmp(value, "no")) {
		out = false;
		return true;
	}
	if (!strcmp(value, "1") || !strcasecmp(value, "yes")) {
		out = true;
		return true;
	}
	return false;
}

bool parse_env_size(const char *value, uint64_t &out)
{
	// strtoull would accept leading blanks and a minus sign ("-1" wraps to 2^64-1): refuse both.
	if (!*value || !isdigit(static_cast<unsigned char>(*value)))
		return false;
	char *end = nullptr;
	errno = 0;
	const unsigned long long base = strtoull(value, &end, 0);
	if (errno || end == value)
		return false;
	unsigned shift = 0;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	default:
		return false;
	}
	if (*end && end[1])
		return false;
	if (shift && base > (UINT64_MAX >> shift))
		return false;
	out = static_cast<uint64_t>(base) << shift;
	return true;
}

MatchPolicy match_policy_from_env(EnvLookup lookup)
{
	std::vector<std::string> errors;
	MatchPolicy policy = read_match_policy(lookup, errors);
	if (!errors.empty())
		fail(-EINVAL, "%s", errors.front().c_str());
	return policy;
}

Options options_from_env(EnvLookup lookup)
{
	Options options;
	options.match = read_match_policy(lookup, options.errors);

	if (const char *value = lookup(kMaxBufferVar)) {
		uint64_t size = 0;
		const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
		if (!parse_env_size(value, size)) {
			options.errors.push_back(
				strprintf("%s='%s' is not a size (a number with an optional k, K, M or G suffix)",
					  kMaxBufferVar, value));
		} else if (size == 0) {
			// Upstream reads 0 as "no cap"; unbounded staging is what we refuse to do, so 0 keeps
			// the default bound.
			options.max_buffer_size = kDefaultMaxBufferSize;
		} else if (size < page) {
			options.errors.push_back(strprintf("%s='%s' is smaller than one page (%llu bytes)",
							   kMaxBufferVar, value,
							   static_cast<unsigned long long>(page)));
		} else {
			// Staging buffers are registered with the GPU as userptr memory, which must be
			// page-granular.
			options.max_buffer_size = size / page * page;
		}
	}
	return options;
}

void Options::require_valid() const
{
	if (errors.empty())
		return;
	std::string all = errors.front();
	for (size_t i = 1; i < errors.size(); i++)
		all += "; " + errors[i];
	fail(-EINVAL, "invalid environment: %s", all.c_str());
}

std::vector<std::string> describe(const Options &options)
{
	std::vector<std::string> lines;
	for (const auto &var : kMatchVars)
		lines.push_back(strprintf("param: %s:%c", var.name, options.match.*var.field ? 'Y' : 'N'));
	lines.push_back(
		strprintf("param: %s:0x%llx", kMaxBufferVar, static_cast<unsigned long long>(options.max_buffer_size)));
	return lines;
}

} // namespace amdgpu
