// SPDX-License-Identifier: GPL-2.0-only
//
// Which criu loaded the plugin, learnt at run time: one plugin binary serves criu 3.17 to 4.3.
//
// criu refuses a plugin whose descriptor declares more hook slots than it knows, and the meaning
// of a hook can change between releases without the plugin being told. So the plugin is built on
// the oldest header and asks the criu binary it is loaded into:
//
//   - the hooks criu knows: every criu resolves the hooks of descriptor-less plugins by name
//     ("cr_plugin_" + hook name), so the names in the criu executable's read-only data are exactly
//     its hook table; criu 4.3 also exports criu_plugin_get_options(), which nothing older has;
//   - RESTORE_EXT_FILE's arguments: `(int id, bool *retry_needed)` since the criu that added
//     RESTORE_INIT (criu-dev, merged together in November 2025; criu 4.3), `(int id)` before. criu
//     leaves the flag uninitialised, so a plugin must write it, but only where it exists;
//   - who owns the fd UPDATE_VMA_MAP hands back: criu 3.19 and newer close it (cr_fchown() arrived
//     in the same release), 3.17 and 3.18 dup it and leave ours open.
//
// The decision is a pure function of what was found (decide_criu_abi), so every criu is tested.
#pragma once

#include <string>
#include <string_view>

namespace amdgpu {

// criu's hook numbers (criu-plugin.h); stable, only ever appended to.
enum CriuHook : unsigned int {
	kHookDumpExtFile = 2,
	kHookRestoreExtFile = 3,
	kHookHandleDeviceVma = 7,
	kHookUpdateVmaMap = 8,
	kHookResumeDevicesLate = 9,
	kHookPauseDevices = 10,
	kHookCheckpointDevices = 11,
	kHookPostForking = 12,
	kHookRestoreInit = 13,
	kHookDumpDevicesLate = 14,
	kHookUpdateInetsk = 15,
	kHookDumpFinish = 16,
	kHookSlots = 17, // the largest table known (criu 4.3)
};

// What the running criu binary shows of itself.
struct CriuTraits {
	unsigned int named_hooks = 0; // 1 + the highest hook whose "cr_plugin_*" name criu carries
	bool plugin_options = false;  // exports criu_plugin_get_options() (4.3)
	bool fchown_helper = false;   // exports cr_fchown() (3.19)
};

struct CriuAbi {
	unsigned int hooks;	      // CR_PLUGIN_HOOK__MAX of this criu: the descriptor's max_hooks
	bool restore_file_retry_flag; // RESTORE_EXT_FILE takes (int id, bool *retry_needed)
	bool closes_vma_fd;	      // criu closes the fd UPDATE_VMA_MAP returns
	std::string_view era;	      // for the log: "3.17/3.18", "3.19", "4.0/4.1", "4.2", "criu-dev", "4.3"
};

CriuAbi decide_criu_abi(const CriuTraits &traits);

// The hook number of a descriptor-less plugin's entry point name ("cr_plugin_dump_finish"), or -1.
int hook_of_entry_name(std::string_view name);

// 1 + the highest hook whose entry point name stands as a whole string in these bytes (a criu
// binary's read-only data), or 0.
unsigned int named_hooks_in(std::string_view bytes);

// Looks at the executable this process runs (criu, or a test host) once; cached.
const CriuAbi &running_criu();

std::string describe(const CriuAbi &abi);

} // namespace amdgpu
