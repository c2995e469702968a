// SPDX-License-Identifier: GPL-2.0-only
//
// Secondary KFD contexts (KFD 1.19, Linux 7.x): AMDKFD_IOC_CREATE_PROCESS turns the /dev/kfd file
// it is called on into a new KFD process of the same task, with its own GPU VMs, memory, queues
// and events. The kernel tells them apart only in sysfs: /sys/class/kfd/kfd/proc/<pid>/ holds a
// directory context_<id> for each (id 0..0xFFFE); no ioctl returns an id.
//
// Why the plugin refuses such a process (as of Linux 7.3): KFD's CRIU operations act on the
// context of the file they are called on and refuse none of them, but what CHECKPOINT saves
// says nothing of which context it was, RESTORE fills the context of the file it is given (a
// fresh open() is the primary one) and RESUME finds the task's primary context only. Nothing tells
// the plugin which of a task's /dev/kfd files is which context, so a restore would pour every
// context into the primary one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace amdgpu {

inline constexpr std::string_view kKfdProcDir = "/sys/class/kfd/kfd/proc";

// The ids of the secondary contexts listed in `process_dir` (a /sys/class/kfd/kfd/proc/<pid>),
// ascending; none if it does not exist (a kernel before 1.19, or a task without secondaries).
std::vector<uint32_t> secondary_kfd_contexts(const std::filesystem::path &process_dir);

// "context_0, context_3" for a message.
std::string describe_kfd_contexts(const std::vector<uint32_t> &ids);

} // namespace amdgpu
