// SPDX-License-Identifier: GPL-2.0-only
#include "support/log.hpp"

#include "criu/criu_api.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace amdgpu {

namespace {

struct Deferral {
	std::mutex lock;
	int depth = 0;		    // OffThreadLogs alive
	std::thread::id log_thread; // the one that may write into criu's log
	pid_t pid = 0;		    // of the process that deferred (a forked child writes directly)
	std::vector<std::pair<LogLevel, std::string>> queue;
};

std::atomic<LogSink> sink { nullptr };

Deferral &deferral()
{
	static Deferral d;
	return d;
}

void write_line(LogLevel level, const char *line)
{
	print_on_level(static_cast<unsigned int>(level), "amdgpu_plugin: %s\n", line);
}

// In the log thread: what the others queued, in their order.
void write_queue(Deferral &d)
{
	std::vector<std::pair<LogLevel, std::string>> lines;
	{
		std::lock_guard hold(d.lock);
		lines.swap(d.queue);
	}
	for (const auto &[level, line] : lines)
		write_line(level, line.c_str());
}

} // namespace

void redirect_log(LogSink to)
{
	sink = to;
}

void log(LogLevel level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (const LogSink to = sink) {
		to(level, line);
		return;
	}
	Deferral &d = deferral();
	// A process criu forked while the plugin's threads ran has none of them, and perhaps a copy of
	// the lock as one of them held it: it writes directly and never touches the queue.
	if (__atomic_load_n(&d.depth, __ATOMIC_ACQUIRE) && d.pid == getpid()) {
		if (std::this_thread::get_id() != d.log_thread) {
			std::lock_guard hold(d.lock);
			d.queue.emplace_back(level, line);
			return;
		}
		write_queue(d);
	}
	write_line(level, line);
}

OffThreadLogs::OffThreadLogs()
{
	Deferral &d = deferral();
	std::lock_guard hold(d.lock);
	if (d.depth == 0) {
		d.log_thread = std::this_thread::get_id();
		d.pid = getpid();
	}
	__atomic_add_fetch(&d.depth, 1, __ATOMIC_RELEASE);
}

OffThreadLogs::~OffThreadLogs()
{
	Deferral &d = deferral();
	if (d.pid != getpid())
		return;
	flush();
	std::lock_guard hold(d.lock);
	__atomic_sub_fetch(&d.depth, 1, __ATOMIC_RELEASE);
}

void OffThreadLogs::flush()
{
	Deferral &d = deferral();
	if (d.pid == getpid() && std::this_thread::get_id() == d.log_thread)
		write_queue(d);
}

} // namespace amdgpu
