// SPDX-License-Identifier: GPL-2.0-only
#include "support/error.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace amdgpu {

namespace {

std::string vstrprintf(const char *fmt, va_list ap)
{
	va_list copy;
	va_copy(copy, ap);
	const int len = std::vsnprintf(nullptr, 0, fmt, copy);
	va_end(copy);
	if (len <= 0)
		return {};
	std::string out(static_cast<size_t>(len), '\0');
	std::vsnprintf(out.data(), out.size() + 1, fmt, ap);
	return out;
}

} // namespace

std::string strprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::string out = vstrprintf(fmt, ap);
	va_end(ap);
	return out;
}

void fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::string msg = vstrprintf(fmt, ap);
	va_end(ap);
	throw Error(err, std::move(msg));
}

void fail_errno(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::string msg = vstrprintf(fmt, ap);
	va_end(ap);
	msg += ": ";
	msg += std::strerror(err < 0 ? -err : err);
	throw Error(err, std::move(msg));
}

} // namespace amdgpu
