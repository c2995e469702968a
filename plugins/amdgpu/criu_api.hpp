// SPDX-License-Identifier: GPL-2.0-only
//
// What the plugin imports from the criu binary that loads it. criu-plugin.h declares the plugin
// ABI; print_on_level() lives in criu's log.h, which is not installed, so it is declared here.
#pragma once

extern "C" {
#include <criu/criu-plugin.h>

void print_on_level(unsigned int loglevel, const char *format, ...) __attribute__((format(printf, 2, 3)));

// First fd number above every fd criu will install in the task with this (virtual) pid. Weak:
// only a criu binary provides it.
int find_unused_fd_pid(int pid) __attribute__((weak));

// criu 4.3: this run's plugin options, argv-style (argv[0] a program name, then "--..." words).
// Weak: older criu have none.
int criu_plugin_get_options(int *argc, char ***argv) __attribute__((weak));
}
