// SPDX-License-Identifier: GPL-2.0-only
//
// What the plugin imports from the criu binary that loads it. criu-plugin.h declares the plugin
// ABI; print_on_level() lives in criu's log.h, which is not installed, so it is declared here.
#pragma once

extern "C" {
#include <criu/criu-plugin.h>

void print_on_level(unsigned int loglevel, const char *format, ...) __attribute__((format(printf, 2, 3)));
}
