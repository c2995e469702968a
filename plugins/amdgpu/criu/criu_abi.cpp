// SPDX-License-Identifier: GPL-2.0-only
#include "criu/criu_abi.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <array>

namespace amdgpu {
namespace {

// criu's names for descriptor-less plugin entry points, by hook number, without their common
// "cr_plugin_" prefix: kept apart so that no whole name appears in the plugin or a test host.
constexpr std::array<std::string_view, kHookSlots> kEntryNames = {
	"dump_unix_sk",	     "restore_unix_sk",	   "dump_file",		"restore_file",	  "dump_ext_mount",
	"restore_ext_mount", "dump_ext_link",	   "handle_device_vma", "update_vma_map", "resume_devices_late",
	"pause_devices",     "checkpoint_devices", "post_forking",	"restore_init",	  "dump_devices_late",
	"update_inetsk",     "dump_finish",
};

constexpr std::string_view kEntryPrefix = "cr_plugin_";

// The main executable's read-only, file-backed loaded segments: where criu keeps its strings.
int scan_main_program(struct dl_phdr_info *info, size_t, void *data)
{
	auto *known = static_cast<unsigned int *>(data);
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) &ph = info->dlpi_phdr[i];
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_R) || (ph.p_flags & PF_W) || !ph.p_filesz)
			continue;
		const char *start = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
		*known = std::max(*known, named_hooks_in(std::string_view(start, ph.p_filesz)));
	}
	return 1; // the first object dl_iterate_phdr reports is the executable itself
}

CriuTraits probe_running_criu()
{
	CriuTraits t;
	dl_iterate_phdr(scan_main_program, &t.named_hooks);
	t.plugin_options = dlsym(RTLD_DEFAULT, "criu_plugin_get_options") != nullptr;
	t.fchown_helper = dlsym(RTLD_DEFAULT, "cr_fchown") != nullptr;
	return t;
}

} // namespace

int hook_of_entry_name(std::string_view name)
{
	if (name.starts_with(kEntryPrefix))
		name.remove_prefix(kEntryPrefix.size());
	const auto it = std::find(kEntryNames.begin(), kEntryNames.end(), name);
	return it == kEntryNames.end() ? -1 : static_cast<int>(it - kEntryNames.begin());
}

// It reads the whole of criu's read-only segments, the gaps between objects included. Under
// AddressSanitizer (in the host tests, whose executable stands in for criu) those gaps are
// redzones: the scan is left uninstrumented and calls nothing that is intercepted, each name
// copied out before it is looked up.
__attribute__((no_sanitize("address"))) unsigned int named_hooks_in(std::string_view bytes)
{
	const char *p = bytes.data();
	const size_t n = bytes.size();
	const size_t prefix = kEntryPrefix.size();
	unsigned int known = 0;
	for (size_t at = 0; at + prefix < n; at++) {
		if (at > 0 && p[at - 1] != '\0')
			continue; // the tail of a longer string
		size_t k = 0;
		while (k < prefix && p[at + k] == kEntryPrefix[k])
			k++;
		if (k < prefix)
			continue;
		char name[40];
		size_t len = 0, i = at + prefix;
		while (i < n && p[i] != '\0' && len < sizeof(name))
			name[len++] = p[i++];
		if (i >= n || p[i] != '\0')
			continue;
		const int hook = hook_of_entry_name(std::string_view(name, len));
		if (hook >= 0)
			known = std::max(known, static_cast<unsigned int>(hook) + 1);
		at = i;
	}
	return known;
}

CriuAbi decide_criu_abi(const CriuTraits &t)
{
	// A criu too old or too odd to show its names gets the oldest table this plugin supports.
	unsigned int hooks = std::max(t.named_hooks, static_cast<unsigned int>(kHookResumeDevicesLate) + 1);
	if (t.plugin_options)
		hooks = std::max(hooks, static_cast<unsigned int>(kHookSlots));
	hooks = std::min(hooks, static_cast<unsigned int>(kHookSlots));

	CriuAbi abi {};
	abi.hooks = hooks;
	abi.restore_file_retry_flag = hooks > kHookRestoreInit;
	abi.closes_vma_fd = t.fchown_helper || hooks > kHookResumeDevicesLate + 1;
	if (hooks > kHookDumpFinish)
		abi.era = "4.3";
	else if (hooks > kHookRestoreInit)
		abi.era = "criu-dev";
	else if (hooks > kHookPostForking)
		abi.era = "4.2";
	else if (hooks > kHookResumeDevicesLate + 1)
		abi.era = "4.0/4.1";
	else
		abi.era = abi.closes_vma_fd ? "3.19" : "3.17/3.18";
	return abi;
}

const CriuAbi &running_criu()
{
	static const CriuAbi abi = decide_criu_abi(probe_running_criu());
	return abi;
}

std::string describe(const CriuAbi &abi)
{
	std::string s = "criu hook ABI: " + std::string(abi.era) + " (" + std::to_string(abi.hooks) + " hooks";
	s += abi.restore_file_retry_flag ? ", RESTORE_EXT_FILE with retry flag" : ", RESTORE_EXT_FILE(id)";
	s += abi.closes_vma_fd ? ", criu owns UPDATE_VMA_MAP fds)" : ", UPDATE_VMA_MAP fds stay ours)";
	return s;
}

} // namespace amdgpu
