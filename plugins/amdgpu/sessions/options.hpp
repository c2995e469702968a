// SPDX-License-Identifier: GPL-2.0-only
//
// The plugin's settings, from the same KFD_* environment variables upstream's plugin reads, so
// that habits and scripts carry over, and from criu's plugin options (criu 4.3:
// `--plugin-option=amdgpu.KFD_NAME[=VALUE]`, on the command line or in criu's configuration files,
// which is how a setting reaches a criu that a container engine drives over RPC). A plugin option
// wins over the environment variable of the same name. Read once per criu run, at init.
#pragma once

#include "matching/match_policy.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace amdgpu {

// Host memory the transfer of one GPU's buffers may use when KFD_MAX_BUFFER_SIZE is unset or 0.
// Upstream's default was "the largest BO", which runs a node whose VRAM exceeds its RAM out of
// memory (criu#2248); a fixed bound keeps the copy engine busy without that risk.
inline constexpr uint64_t kDefaultMaxBufferSize = 64ull << 20;

struct Options {
	MatchPolicy match;
	uint64_t max_buffer_size = kDefaultMaxBufferSize;
	// KFD_OVERLAP_COPY: the GPU copy runs beside criu's own work wherever criu allows it (the
	// default); 0 puts it in series with criu's work, where the hook that starts it runs.
	bool overlap_copy = true;

	// Where each setting that is not at its default came from, for the init log:
	// "KFD_FW_VER_CHECK" -> "plugin option" or "environment".
	std::vector<std::pair<std::string, std::string>> origins;

	// One entry per setting whose value could not be parsed, naming where it came from, e.g.
	// "KFD_FW_VER_CHECK='maybe' is not a boolean (use 0, 1, no or yes)" or "plugin option
	// amdgpu.KFD_FW_VER_CHECK='maybe' is not ...". Invalid values do not fail criu runs that never
	// touch a GPU; they fail any hook that is about to do GPU work.
	std::vector<std::string> errors;

	// Throws Error(-EINVAL) listing every invalid setting, if any.
	void require_valid() const;
};

// Parses the environment through `lookup` (secure_getenv in the plugin, a map in tests).
using EnvLookup = const char *(*)(const char *name);
Options options_from_env(EnvLookup lookup);

// The same, with criu's plugin options over the environment. `plugin_args` is what criu 4.3's
// criu_plugin_get_options() returns, without argv[0]: "--amdgpu.NAME=VALUE" or "--amdgpu.NAME" (a
// boolean set to yes); options of other plugins are left alone, unknown amdgpu ones are errors.
Options options_from(EnvLookup lookup, const std::vector<std::string> &plugin_args);

// The GPU matching switches alone, for tools that only match topologies.
MatchPolicy match_policy_from_env(EnvLookup lookup);

// Parsers with upstream's rules, exposed for tests. Return false on invalid input.
bool parse_env_bool(const char *value, bool &out);
bool parse_env_size(const char *value, uint64_t &out);

// The lines "param: NAME:Y" / "param: KFD_MAX_BUFFER_SIZE:0x4000000" that init logs (upstream's
// format, and this plugin's KFD_OVERLAP_COPY the same way), then "param: NAME set by plugin option amdgpu.NAME" for each value criu's options set.
std::vector<std::string> describe(const Options &options);

} // namespace amdgpu
