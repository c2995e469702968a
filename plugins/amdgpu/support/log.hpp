// SPDX-License-Identifier: GPL-2.0-only
//
// Logging into criu's own log. criu exports print_on_level(); every line gets the
// "amdgpu_plugin: " prefix so that `grep amdgpu_plugin dump.log` tells the whole story.
//
// criu's log is not thread-safe (one static buffer), and criu logs from its own thread all the
// time. While the plugin works in threads of its own beside criu (OffThreadLogs), their lines wait
// in a queue and reach criu's log from criu's thread: at its next plugin line, or when the
// background work is joined.
#pragma once

#include <sys/types.h>

#include <thread>

namespace amdgpu {

enum class LogLevel : unsigned int {
	// criu's LOG_ERROR .. LOG_DEBUG
	error = 1,
	warn = 2,
	info = 3,
	debug = 4,
};

void log(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Where the lines go instead, in a process that has no criu log (the restore guard,
// restore_guard.hpp); null: criu's log again. The sink may be called from any thread.
using LogSink = void (*)(LogLevel level, const char *line);
void redirect_log(LogSink sink);

// While one lives, lines logged by any thread other than the one that made it are queued; the
// queue is written out by that thread's next line and when the last one ends. Made and ended by
// criu's thread.
class OffThreadLogs {
public:
	OffThreadLogs();
	~OffThreadLogs();
	OffThreadLogs(const OffThreadLogs &) = delete;
	OffThreadLogs &operator=(const OffThreadLogs &) = delete;

	// Writes out what the other threads logged so far.
	static void flush();
};

} // namespace amdgpu

#define pr_err(fmt, ...)   ::amdgpu::log(::amdgpu::LogLevel::error, fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...)  ::amdgpu::log(::amdgpu::LogLevel::warn, fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)  ::amdgpu::log(::amdgpu::LogLevel::info, fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) ::amdgpu::log(::amdgpu::LogLevel::debug, fmt, ##__VA_ARGS__)
