// SPDX-License-Identifier: GPL-2.0-only
//
// CR_PLUGIN_DESC, the one symbol criu looks up. criu's header sizes the descriptor's hook table for
// the criu it ships with and criu refuses a descriptor that claims more slots than it knows: so the
// table here is as large as the newest criu's, and the slots claimed (max_hooks) are set when the
// plugin is loaded, from the criu that loads it (criu reads the descriptor after the plugin's
// constructors ran). This file deliberately does not include criu-plugin.h, whose declaration of
// CR_PLUGIN_DESC has the table size of the build host's criu.

#include "criu/criu_abi.hpp"
#include "hooks/plugin_hooks.hpp"

#include <cstddef>

namespace amdgpu {
namespace {

// The layout every criu since 2.x reads (criu-plugin.h's cr_plugin_desc_t).
struct PluginDescriptor {
	const char *name;
	int (*init)(int stage);
	void (*exit)(int stage, int ret);
	unsigned int version;
	unsigned int max_hooks;
	void *hooks[kHookSlots];
};

// Plugin ABI 0.2.0: accepted by every criu from 3.x to 4.3 (which is 0.3.0 and takes older ones).
constexpr unsigned int kPluginAbiVersion = (0 << 16) + (2 << 8) + 0;

struct HookEntry {
	CriuHook hook;
	void *fn;
};

} // namespace
} // namespace amdgpu

extern "C" {
#pragma GCC visibility push(default)
amdgpu::PluginDescriptor CR_PLUGIN_DESC = {
	.name = "amdgpu_plugin",
	.init = amdgpu::hooks::init,
	.exit = amdgpu::hooks::exit,
	.version = amdgpu::kPluginAbiVersion,
	.max_hooks = 0,
	.hooks = {},
};
#pragma GCC visibility pop
}

namespace amdgpu {
namespace {

static_assert(offsetof(PluginDescriptor, hooks) == 4 * sizeof(void *), "criu's descriptor layout");

__attribute__((constructor)) void register_hooks()
{
	const HookEntry entries[] = {
		{ kHookDumpExtFile, reinterpret_cast<void *>(hooks::dump_ext_file) },
		{ kHookRestoreExtFile, reinterpret_cast<void *>(hooks::restore_ext_file) },
		{ kHookHandleDeviceVma, reinterpret_cast<void *>(hooks::handle_device_vma) },
		{ kHookUpdateVmaMap, reinterpret_cast<void *>(hooks::update_vma_map) },
		{ kHookResumeDevicesLate, reinterpret_cast<void *>(hooks::resume_devices_late) },
		{ kHookCheckpointDevices, reinterpret_cast<void *>(hooks::checkpoint_devices) },
		{ kHookDumpDevicesLate, reinterpret_cast<void *>(hooks::dump_devices_late) },
	};
	const CriuAbi &abi = running_criu();
	CR_PLUGIN_DESC.max_hooks = abi.hooks;
	for (const HookEntry &e : entries)
		if (e.hook < abi.hooks)
			CR_PLUGIN_DESC.hooks[e.hook] = e.fn;
}

} // namespace
} // namespace amdgpu
