// SPDX-License-Identifier: GPL-2.0-only
#include "log.hpp"

#include "criu_api.hpp"

#include <cstdarg>
#include <cstdio>

namespace amdgpu {

void log(LogLevel level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	print_on_level(static_cast<unsigned int>(level), "amdgpu_plugin: %s\n", line);
}

} // namespace amdgpu
