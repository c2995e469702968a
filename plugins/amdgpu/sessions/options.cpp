// SPDX-License-Identifier: GPL-2.0-only
#include "sessions/options.hpp"

#include "support/error.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
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
constexpr const char *kOverlapVar = "KFD_OVERLAP_COPY";

constexpr std::string_view kOptionPrefix = "amdgpu.";

// A setting's text and the name to quote it by in messages.
struct Setting {
	std::string value;
	std::string quoted; // "KFD_FW_VER_CHECK" or "plugin option amdgpu.KFD_FW_VER_CHECK"
	const char *origin; // "environment" or "plugin option"
};

bool is_known(const std::string &name)
{
	if (name == kMaxBufferVar || name == kOverlapVar)
		return true;
	return std::any_of(std::begin(kMatchVars), std::end(kMatchVars),
			   [&](const BoolVar &v) { return name == v.name; });
}

// The environment, with criu's plugin options over it.
class Settings {
public:
	Settings(EnvLookup env, const std::vector<std::string> &plugin_args, std::vector<std::string> &errors)
	    : env_(env)
	{
		for (const std::string &arg : plugin_args) {
			std::string_view a(arg);
			if (!a.starts_with("--"))
				continue;
			a.remove_prefix(2);
			if (a.size() < kOptionPrefix.size() ||
			    strncasecmp(a.data(), kOptionPrefix.data(), kOptionPrefix.size()))
				continue; // another plugin's
			a.remove_prefix(kOptionPrefix.size());
			const size_t eq = a.find('=');
			std::string name(a.substr(0, eq));
			std::transform(name.begin(), name.end(), name.begin(),
				       [](unsigned char c) { return toupper(c); });
			if (!is_known(name)) {
				errors.push_back(
					strprintf("unknown plugin option %s (the options are the KFD_* settings)",
						  arg.c_str() + 2));
				continue;
			}
			if (eq == std::string_view::npos && name == kMaxBufferVar) {
				errors.push_back(strprintf("plugin option amdgpu.%s needs a value", name.c_str()));
				continue;
			}
			options_[name] = eq == std::string_view::npos ? "1" : std::string(a.substr(eq + 1));
		}
	}

	std::optional<Setting> get(const char *name) const
	{
		if (const auto it = options_.find(name); it != options_.end())
			return Setting { it->second, strprintf("plugin option amdgpu.%s", name), "plugin option" };
		if (const char *value = env_(name))
			return Setting { value, name, "environment" };
		return std::nullopt;
	}

private:
	EnvLookup env_;
	std::map<std::string, std::string> options_;
};

MatchPolicy read_match_policy(const Settings &settings, Options *options, std::vector<std::string> &errors)
{
	MatchPolicy policy;
	for (const auto &var : kMatchVars) {
		const std::optional<Setting> s = settings.get(var.name);
		if (!s)
			continue;
		if (options)
			options->origins.emplace_back(var.name, s->origin);
		if (!parse_env_bool(s->value.c_str(), policy.*var.field))
			errors.push_back(strprintf("%s='%s' is not a boolean (use 0, 1, no or yes)", s->quoted.c_str(),
						   s->value.c_str()));
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
	MatchPolicy policy = read_match_policy(Settings(lookup, {}, errors), nullptr, errors);
	if (!errors.empty())
		fail(-EINVAL, "%s", errors.front().c_str());
	return policy;
}

Options options_from_env(EnvLookup lookup)
{
	return options_from(lookup, {});
}

namespace {

// KFD_MAX_BUFFER_SIZE: the staging memory of one GPU's copy, in whole pages.
void read_max_buffer_size(const Settings &settings, Options &options)
{
	const std::optional<Setting> s = settings.get(kMaxBufferVar);
	if (!s)
		return;
	options.origins.emplace_back(kMaxBufferVar, s->origin);
	const char *value = s->value.c_str();
	uint64_t size = 0;
	const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
	if (!parse_env_size(value, size)) {
		options.errors.push_back(
			strprintf("%s='%s' is not a size (a number with an optional k, K, M or G suffix)",
				  s->quoted.c_str(), value));
	} else if (size == 0) {
		// Upstream reads 0 as "no cap"; unbounded staging is what we refuse to do, so 0 keeps
		// the default bound.
		options.max_buffer_size = kDefaultMaxBufferSize;
	} else if (size < page) {
		options.errors.push_back(strprintf("%s='%s' is smaller than one page (%llu bytes)", s->quoted.c_str(),
						   value, static_cast<unsigned long long>(page)));
	} else {
		// Staging buffers are registered with the GPU as userptr memory, which must be
		// page-granular.
		options.max_buffer_size = size / page * page;
	}
}

// KFD_OVERLAP_COPY: a boolean, like the matching switches.
void read_overlap_copy(const Settings &settings, Options &options)
{
	const std::optional<Setting> s = settings.get(kOverlapVar);
	if (!s)
		return;
	options.origins.emplace_back(kOverlapVar, s->origin);
	if (!parse_env_bool(s->value.c_str(), options.overlap_copy))
		options.errors.push_back(strprintf("%s='%s' is not a boolean (use 0, 1, no or yes)", s->quoted.c_str(),
						   s->value.c_str()));
}

} // namespace

Options options_from(EnvLookup lookup, const std::vector<std::string> &plugin_args)
{
	Options options;
	const Settings settings(lookup, plugin_args, options.errors);
	options.match = read_match_policy(settings, &options, options.errors);
	read_max_buffer_size(settings, options);
	read_overlap_copy(settings, options);
	return options;
}

void Options::require_valid() const
{
	if (errors.empty())
		return;
	std::string all = errors.front();
	for (size_t i = 1; i < errors.size(); i++)
		all += "; " + errors[i];
	fail(-EINVAL, "invalid settings: %s", all.c_str());
}

std::vector<std::string> describe(const Options &options)
{
	std::vector<std::string> lines;
	for (const auto &var : kMatchVars)
		lines.push_back(strprintf("param: %s:%c", var.name, options.match.*var.field ? 'Y' : 'N'));
	lines.push_back(
		strprintf("param: %s:0x%llx", kMaxBufferVar, static_cast<unsigned long long>(options.max_buffer_size)));
	lines.push_back(strprintf("param: %s:%c", kOverlapVar, options.overlap_copy ? 'Y' : 'N'));
	// Upstream's lines stay as they are; where a value came from criu's options is said apart.
	for (const auto &[name, origin] : options.origins)
		if (origin == "plugin option")
			lines.push_back(
				strprintf("param: %s set by plugin option amdgpu.%s", name.c_str(), name.c_str()));
	return lines;
}

} // namespace amdgpu
