// SPDX-License-Identifier: GPL-2.0-only
//
// The plugin's hooks, as criu calls them (plugin_entry.cpp defines them, plugin_descriptor.cpp
// hands them to criu). Signatures are the widest any supported criu uses: RESTORE_EXT_FILE's flag
// exists only where criu_abi.hpp says so.
#pragma once

#include <sys/stat.h>

#include <cstdint>

namespace amdgpu::hooks {

int init(int stage);
void exit(int stage, int ret);
int checkpoint_devices(int pid);
int dump_devices_late(int pid);
int dump_ext_file(int fd, int id);
int restore_ext_file(int id, bool *retry_needed);
int handle_device_vma(int fd, const struct stat *st);
int update_vma_map(const char *path, uint64_t addr, uint64_t old_pgoff, uint64_t *new_pgoff, int *plugin_fd);
int resume_devices_late(int pid);

} // namespace amdgpu::hooks
