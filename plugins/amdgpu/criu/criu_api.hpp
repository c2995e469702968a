// SPDX-License-Identifier: GPL-2.0-only
//
// What the plugin imports from the criu binary that loads it. criu-plugin.h declares the plugin
// ABI; print_on_level() lives in criu's log.h, which is not installed, so it is declared here.
#pragma once

#include <fcntl.h>

#include <cstddef>

extern "C" {
#include <criu/criu-plugin.h>

void print_on_level(unsigned int loglevel, const char *format, ...) __attribute__((format(printf, 2, 3)));

// First fd number above every fd criu will install in the task with this (virtual) pid. Weak:
// only a criu binary provides it.
int find_unused_fd_pid(int pid) __attribute__((weak));

// criu 4.3: this run's plugin options, argv-style (argv[0] a program name, then "--..." words).
// Weak: older criu have none.
int criu_plugin_get_options(int *argc, char ***argv) __attribute__((weak));

// criu --stream: an fd of the image `filename` from the image streamer (a pipe), -ENOENT for an
// image the served stream lacks, -1 on failure. `flags` must be exactly criu's mode of this run
// (criu/include/image.h: O_DUMP dumping, O_RSTR restoring), or criu aborts.
int img_streamer_open(char *filename, int flags) __attribute__((weak));

// criu 4.1+: the inventory's list of plugins a restore needs. A dump names the plugin there once it
// saved GPU state (a restore without the plugin then fails naming it); a restore takes its name off
// the list at init (criu fails a restore whose listed plugins are not all taken off).
int add_inventory_plugin(const char *name) __attribute__((weak));
bool check_and_remove_inventory_plugin(const char *name, size_t n) __attribute__((weak));
}

inline constexpr int kCriuStreamDump = O_WRONLY | O_CREAT | O_TRUNC; // criu's O_DUMP
inline constexpr int kCriuStreamRestore = O_RDONLY;		     // criu's O_RSTR
