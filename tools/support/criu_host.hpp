// SPDX-License-Identifier: GPL-2.0-only
//
// Stand-in for the criu binary when plugin code runs outside criu (tools, unit tests): it
// provides the symbols criu exports to plugins.
#pragma once

#include <functional>
#include <string>

namespace amdgpu::host {

// Directory fd returned by criu_get_image_dir(); -1 (the default) means "none".
void set_image_dir(int dirfd);

// Where log lines go. The default writes lines up to `verbosity` (criu's -v, default 2) to stderr.
using LogSink = std::function<void(unsigned int level, const std::string &line)>;
void set_log_sink(LogSink sink);
void set_verbosity(unsigned int level);

} // namespace amdgpu::host
