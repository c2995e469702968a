// SPDX-License-Identifier: GPL-2.0-only
//
// Errors inside the plugin are exceptions carrying a negative errno and a message composed where
// the decision was made. Only the hook entry layer (plugin_entry.cpp) catches them: it logs the
// message once and returns the errno to criu. Nothing else logs a failure it throws.
#pragma once

#include <cerrno>
#include <stdexcept>
#include <string>

namespace amdgpu {

class Error : public std::runtime_error {
public:
	// `err` may be given positive or negative. 0 is no errno at all: a hook returning it would tell
	// criu that the failure succeeded, so it becomes -EIO.
	Error(int err, std::string message)
	    : std::runtime_error(std::move(message)), err_(err > 0    ? -err
							   : err == 0 ? -EIO
								      : err)
	{
	}

	// Negative errno, ready to be returned from a hook; never 0.
	int err() const noexcept { return err_; }

private:
	int err_;
};

// printf-style formatting into a std::string (libstdc++ 12 has no std::format).
std::string strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Throws Error(err, formatted message). err may be given positive or negative.
[[noreturn]] void fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Like fail(), with ": <strerror(err)>" appended; for failed system calls.
[[noreturn]] void fail_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace amdgpu
