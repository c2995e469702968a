// SPDX-License-Identifier: GPL-2.0-only
#include "criu_host.hpp"

#include "criu/criu_api.hpp"

#include <cstdarg>
#include <cstdio>

namespace amdgpu::host {

namespace {
int image_dir = -1;
unsigned int verbosity = 2;
LogSink sink;
} // namespace

void set_image_dir(int dirfd)
{
	image_dir = dirfd;
}

void set_log_sink(LogSink s)
{
	sink = std::move(s);
}

void set_verbosity(unsigned int level)
{
	verbosity = level;
}

} // namespace amdgpu::host

extern "C" {

__attribute__((visibility("default"))) void print_on_level(unsigned int loglevel, const char *format, ...)
{
	char line[2048];
	va_list ap;
	va_start(ap, format);
	std::vsnprintf(line, sizeof(line), format, ap);
	va_end(ap);
	if (amdgpu::host::sink)
		amdgpu::host::sink(loglevel, line);
	else if (loglevel <= amdgpu::host::verbosity)
		std::fputs(line, stderr);
}

__attribute__((visibility("default"))) int criu_get_image_dir(void)
{
	return amdgpu::host::image_dir;
}
}
