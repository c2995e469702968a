// SPDX-License-Identifier: GPL-2.0-only
#include "render/render_image.hpp"

#include "support/error.hpp"

#include <climits>

namespace amdgpu {
namespace {

// drm_bo_entry.memory
constexpr uint32_t kMemoryInPages = 0;
constexpr uint32_t kMemoryOfKfdBuffer = 1;
constexpr uint32_t kMemoryOfOtherProcess = 2;

// Bounds on what an image may describe before we allocate for it.
constexpr size_t kMaxObjects = 1u << 20;
constexpr size_t kMaxMappings = 1u << 16;

bool whole_pages(uint64_t v)
{
	return v % gem::kKernelPage == 0;
}

} // namespace

std::vector<uint8_t> pack_render_image(const RenderImageParts &parts)
{
	const size_t n = parts.objects.size();
	std::vector<DrmBoEntry> entries(n);
	std::vector<DrmBoEntry *> entry_ptrs(n);
	size_t n_vms = 0;
	for (const GemObjectState &o : parts.objects)
		n_vms += o.mappings.size();
	std::vector<DrmVmEntry> vms(n_vms);
	std::vector<DrmVmEntry *> vm_ptrs(n_vms);

	size_t v = 0;
	for (size_t i = 0; i < n; i++) {
		const GemObjectState &o = parts.objects[i];
		DrmBoEntry &e = entries[i];
		drm_bo_entry__init(&e);
		e.has_addr = e.has_size = e.has_offset = e.has_alloc_flags = e.has_alignment = true;
		e.has_preferred_domains = e.has_handle = e.has_is_import = e.has_num_of_vms = true;
		e.size = o.object.size;
		e.alloc_flags = o.object.alloc_flags;
		e.alignment = o.object.alignment_pages;
		e.preferred_domains = static_cast<uint32_t>(o.object.preferred_domains);
		e.handle = o.object.handle;
		e.offset = o.mmap_offset;
		e.is_import = o.kfd || (o.object.flags & gem::kListImported) ? 1 : 0;
		e.has_memory = true;
		e.memory = !o.kfd ? kMemoryInPages : o.kfd->own_process ? kMemoryOfKfdBuffer : kMemoryOfOtherProcess;
		if (o.kfd) {
			e.has_kfd_addr = true;
			e.kfd_addr = o.kfd->addr;
		}
		e.num_of_vms = static_cast<uint32_t>(o.mappings.size());
		e.n_vm_entries = o.mappings.size();
		e.vm_entries = vm_ptrs.data() + v;
		for (const gem::Mapping &m : o.mappings) {
			DrmVmEntry &vm = vms[v];
			drm_vm_entry__init(&vm);
			vm.has_addr = vm.has_size = vm.has_offset = vm.has_flags = true;
			vm.addr = m.addr;
			vm.size = m.size;
			vm.offset = m.offset;
			vm.flags = m.flags;
			vm_ptrs[v++] = &vm;
			e.addr = m.addr; // upstream's: the VA of the last mapping
		}
		entry_ptrs[i] = &e;
	}

	CriuRenderNode msg = CRIU_RENDER_NODE__INIT;
	msg.has_gpu_id = msg.has_id = msg.has_drm_render_minor = msg.has_num_of_bos = true;
	msg.gpu_id = parts.gpu_id;
	msg.id = parts.id;
	msg.drm_render_minor = parts.minor;
	msg.num_of_bos = n;
	msg.n_bo_entries = n;
	msg.bo_entries = entry_ptrs.data();
	if (parts.pid) {
		msg.has_pid = true;
		msg.pid = parts.pid;
	}
	ContextEntries contexts;
	fill_context_entries(parts.contexts, contexts);
	msg.n_contexts = contexts.entry_ptrs.size();
	msg.contexts = contexts.entry_ptrs.data();
	if (parts.devices) {
		msg.n_device_entries = parts.devices->entries().size();
		msg.device_entries = const_cast<KfdDeviceEntry **>(parts.devices->entries().data());
	}
	std::vector<uint8_t> out(criu_render_node__get_packed_size(&msg));
	criu_render_node__pack(&msg, out.data());
	return out;
}

std::vector<GemEntry> gem_entries(const CriuRenderNode &msg, const std::string &image)
{
	if (msg.n_bo_entries > kMaxObjects)
		fail(-EINVAL, "image %s describes %zu GEM objects, more than the %zu a render-node file can hold here",
		     image.c_str(), msg.n_bo_entries, kMaxObjects);
	std::vector<GemEntry> out;
	uint32_t previous = 0;
	for (size_t i = 0; i < msg.n_bo_entries; i++) {
		const DrmBoEntry &e = *msg.bo_entries[i];
		const auto bad = [&](const char *what) {
			fail(-EINVAL, "image %s: GEM object entry %zu (handle %u) %s", image.c_str(), i, e.handle,
			     what);
		};
		if (!e.has_handle || e.handle <= previous || e.handle > INT_MAX)
			bad("does not follow the handle before it (handles must rise from 1 up to 2^31-1)");
		previous = e.handle;
		if (!e.has_size || e.size == 0 || !whole_pages(e.size))
			bad("has no size in whole pages");
		const uint32_t memory = e.has_memory ? e.memory : kMemoryInPages;
		if (memory > kMemoryOfOtherProcess)
			bad("keeps its memory in a place this plugin does not know");
		if (memory != kMemoryInPages && !e.has_kfd_addr)
			bad("is a KFD buffer's memory, but names no KFD buffer");
		if (e.n_vm_entries > kMaxMappings || (e.has_num_of_vms && e.num_of_vms != e.n_vm_entries))
			bad("does not hold the number of mappings it announces");
		GemEntry g;
		g.object = { e.handle,	    e.is_import && memory == kMemoryInPages ? gem::kListImported : 0u,
			     e.size,	    e.preferred_domains,
			     e.alloc_flags, e.alignment };
		g.mmap_offset = e.offset;
		if (memory != kMemoryInPages)
			g.kfd_addr = e.kfd_addr;
		g.other_process = memory == kMemoryOfOtherProcess;
		for (size_t j = 0; j < e.n_vm_entries; j++) {
			const DrmVmEntry &vm = *e.vm_entries[j];
			if (!vm.size || !whole_pages(vm.addr) || !whole_pages(vm.size) || !whole_pages(vm.offset) ||
			    vm.offset > e.size || vm.size > e.size - vm.offset)
				fail(-EINVAL,
				     "image %s: GEM object entry %zu (handle %u, %llu bytes): mapping %zu at 0x%llx "
				     "(%llu bytes from offset 0x%llx) is not whole pages within the object",
				     image.c_str(), i, e.handle, static_cast<unsigned long long>(e.size), j,
				     static_cast<unsigned long long>(vm.addr), static_cast<unsigned long long>(vm.size),
				     static_cast<unsigned long long>(vm.offset));
			g.mappings.push_back({ vm.addr, vm.size, vm.offset, vm.flags });
		}
		out.push_back(std::move(g));
	}
	return out;
}

} // namespace amdgpu
