// SPDX-License-Identifier: GPL-2.0-only
//
// Logging into criu's own log. criu exports print_on_level(); every line gets the
// "amdgpu_plugin: " prefix so that `grep amdgpu_plugin dump.log` tells the whole story.
#pragma once

namespace amdgpu {

enum class LogLevel : unsigned int {
	// criu's LOG_ERROR .. LOG_DEBUG
	error = 1,
	warn = 2,
	info = 3,
	debug = 4,
};

void log(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace amdgpu

#define pr_err(fmt, ...)   ::amdgpu::log(::amdgpu::LogLevel::error, fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...)  ::amdgpu::log(::amdgpu::LogLevel::warn, fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)  ::amdgpu::log(::amdgpu::LogLevel::info, fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) ::amdgpu::log(::amdgpu::LogLevel::debug, fmt, ##__VA_ARGS__)
