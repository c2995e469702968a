// SPDX-License-Identifier: GPL-2.0-only
#include "images/metadata_images.hpp"

#include "support/error.hpp"
#include "images/image_store.hpp"
#include "driver/kfd_ioctl.hpp"

#include <cerrno>

namespace amdgpu {

std::vector<bool> taken_elsewhere(std::span<const BoShare> shares)
{
	std::vector<bool> elsewhere;
	for (const BoShare &s : shares)
		elsewhere.push_back(s.role == ShareRole::taker);
	return elsewhere;
}

namespace {

// The KFD never reports more than this many BOs or devices for one process that we could copy
// in a reasonable time; bigger counts in an image mean the image is corrupt.
constexpr uint64_t kMaxBos = 1u << 22;
constexpr size_t kMaxDeviceEntries = 1024;

void check_kfd(const CriuKfd &msg, const std::string &name)
{
	if (!msg.has_num_of_gpus || !msg.has_num_of_bos || !msg.has_priv_data)
		fail(-EINVAL, "image %s lacks required fields (num_of_gpus%s, num_of_bos%s, priv_data%s)", name.c_str(),
		     msg.has_num_of_gpus ? " ok" : " missing", msg.has_num_of_bos ? " ok" : " missing",
		     msg.has_priv_data ? " ok" : " missing");
	if (msg.n_device_entries == 0 || msg.n_device_entries > kMaxDeviceEntries)
		fail(-EINVAL, "image %s has %zu device entries (expected 1..%zu)", name.c_str(), msg.n_device_entries,
		     kMaxDeviceEntries);
	if (msg.num_of_bos != msg.n_bo_entries || msg.num_of_bos > kMaxBos)
		fail(-EINVAL, "image %s: num_of_bos is %llu but it holds %zu BO entries", name.c_str(),
		     static_cast<unsigned long long>(msg.num_of_bos), msg.n_bo_entries);
	size_t gpus = 0;
	for (size_t i = 0; i < msg.n_device_entries; i++)
		if (msg.device_entries[i]->has_gpu_id && msg.device_entries[i]->gpu_id)
			gpus++;
	if (gpus != msg.num_of_gpus)
		fail(-EINVAL, "image %s: num_of_gpus is %u but it describes %zu GPU nodes", name.c_str(),
		     msg.num_of_gpus, gpus);
	for (size_t i = 0; i < msg.n_bo_entries; i++) {
		const KfdBoEntry &bo = *msg.bo_entries[i];
		if (!bo.has_addr || !bo.has_size || !bo.has_offset || !bo.has_alloc_flags || !bo.has_gpu_id)
			fail(-EINVAL, "image %s: BO entry %zu lacks a required field", name.c_str(), i);
		if (bo.addr + bo.size < bo.addr)
			fail(-EINVAL, "image %s: BO entry %zu at 0x%llx with size 0x%llx wraps the address space",
			     name.c_str(), i, static_cast<unsigned long long>(bo.addr),
			     static_cast<unsigned long long>(bo.size));
	}
}

void check_render_node(const CriuRenderNode &msg, const std::string &name)
{
	if (!msg.has_gpu_id || msg.gpu_id == 0)
		fail(-EINVAL, "image %s has no gpu_id", name.c_str());
	if (msg.has_num_of_bos && msg.num_of_bos != msg.n_bo_entries)
		fail(-EINVAL, "image %s: num_of_bos is %llu but it holds %zu BO entries", name.c_str(),
		     static_cast<unsigned long long>(msg.num_of_bos), msg.n_bo_entries);
}

// No GEM handle is recorded: the field says so to upstream's reader.
constexpr uint32_t kNoGemHandle = 0xffffffff;

std::vector<KfdBoEntry> bo_entries(std::span<const kfd_criu_bo_bucket> bos, std::span<const BoShare> shares)
{
	std::vector<KfdBoEntry> entries(bos.size());
	for (size_t i = 0; i < bos.size(); i++) {
		KfdBoEntry &e = entries[i];
		kfd_bo_entry__init(&e);
		e.has_addr = e.has_size = e.has_offset = e.has_alloc_flags = e.has_gpu_id = e.has_handle = true;
		e.addr = bos[i].addr;
		e.size = bos[i].size;
		e.offset = bos[i].offset;
		e.alloc_flags = bos[i].alloc_flags;
		e.gpu_id = bos[i].gpu_id;
		e.handle = kNoGemHandle;
		if (i < shares.size() && shares[i].role != ShareRole::none) {
			e.handle = shares[i].buffer;
			e.has_shared = true;
			e.shared = static_cast<uint32_t>(shares[i].role);
		}
	}
	return entries;
}

} // namespace

std::vector<uint8_t> pack_kfd_image(const KfdImageParts &parts)
{
	std::vector<KfdBoEntry> entries = bo_entries(parts.bos, parts.shares);
	std::vector<KfdBoEntry *> entry_ptrs;
	for (KfdBoEntry &e : entries)
		entry_ptrs.push_back(&e);

	CriuKfd msg = CRIU_KFD__INIT;
	if (parts.devices)
		parts.devices->attach(msg);
	msg.has_pid = msg.has_num_of_bos = msg.has_num_of_objects = true;
	msg.pid = parts.pid;
	msg.num_of_bos = entries.size();
	msg.n_bo_entries = entry_ptrs.size();
	msg.bo_entries = entry_ptrs.data();
	msg.num_of_objects = parts.num_objects;
	msg.has_shared_mem_size = msg.has_shared_mem_magic = true;
	msg.shared_mem_size = parts.shared_mem_size;
	msg.shared_mem_magic = parts.shared_mem_magic;
	msg.has_priv_data = true;
	msg.priv_data.len = parts.priv_data.size();
	// protobuf-c's type is not const; packing only reads it
	msg.priv_data.data = const_cast<uint8_t *>(parts.priv_data.data());
	KfdRuntimeEntry runtime = KFD_RUNTIME_ENTRY__INIT;
	if (parts.runtime) {
		runtime.has_state = runtime.has_r_debug = runtime.has_ttmp_setup = true;
		runtime.state = static_cast<uint32_t>(parts.runtime->state);
		runtime.r_debug = parts.runtime->r_debug;
		runtime.ttmp_setup = parts.runtime->ttmp_setup;
		msg.runtime = &runtime;
	}
	return pack(msg);
}

std::optional<kfd::RuntimeInfo> kfd_runtime(const CriuKfd &msg, const std::string &image)
{
	if (!msg.runtime)
		return std::nullopt;
	const KfdRuntimeEntry &r = *msg.runtime;
	const auto state = static_cast<kfd::RuntimeState>(r.state);
	if (state != kfd::RuntimeState::disabled && state != kfd::RuntimeState::enabled)
		fail(-EINVAL, "image %s: the runtime registration is in state %u, which a dump never saves (0 or 1)",
		     image.c_str(), r.state);
	if (r.ttmp_setup > 1)
		fail(-EINVAL, "image %s: the runtime registration's trap temporaries are %u (0 or 1)", image.c_str(),
		     r.ttmp_setup);
	return kfd::RuntimeInfo { state, r.r_debug, r.ttmp_setup == 1 };
}

std::vector<BoShare> bo_shares(const CriuKfd &msg, const std::string &image)
{
	std::vector<BoShare> shares(msg.n_bo_entries);
	for (size_t i = 0; i < msg.n_bo_entries; i++) {
		const KfdBoEntry &e = *msg.bo_entries[i];
		if (!e.has_shared || e.shared == 0)
			continue;
		if (e.shared > static_cast<uint32_t>(ShareRole::taker))
			fail(-EINVAL, "image %s: BO %zu (at 0x%llx) is shared in a way this plugin does not know (%u)",
			     image.c_str(), i, static_cast<unsigned long long>(e.addr), e.shared);
		if (!(e.alloc_flags & kfd::kContentMemFlags) || !e.size || e.handle == 0 || e.handle == kNoGemHandle)
			fail(-EINVAL,
			     "image %s: BO %zu (at 0x%llx, flags 0x%x, %llu bytes) is said to be shared buffer %u, "
			     "which "
			     "only a VRAM or GTT BO with a buffer number can be",
			     image.c_str(), i, static_cast<unsigned long long>(e.addr), e.alloc_flags,
			     static_cast<unsigned long long>(e.size), e.handle);
		shares[i] = { e.handle, static_cast<ShareRole>(e.shared) };
	}
	return shares;
}

std::vector<uint8_t> pack(const CriuKfd &msg)
{
	std::vector<uint8_t> out(criu_kfd__get_packed_size(&msg));
	criu_kfd__pack(&msg, out.data());
	return out;
}

std::vector<uint8_t> pack(const CriuRenderNode &msg)
{
	std::vector<uint8_t> out(criu_render_node__get_packed_size(&msg));
	criu_render_node__pack(&msg, out.data());
	return out;
}

CriuKfdPtr unpack_criu_kfd(std::span<const uint8_t> bytes, const std::string &name)
{
	CriuKfdPtr msg(criu_kfd__unpack(nullptr, bytes.size(), bytes.data()));
	if (!msg)
		fail(-EINVAL, "image %s is not a valid criu_kfd message (%zu bytes)", name.c_str(), bytes.size());
	check_kfd(*msg, name);
	return msg;
}

CriuRenderNodePtr unpack_criu_render_node(std::span<const uint8_t> bytes, const std::string &name)
{
	CriuRenderNodePtr msg(criu_render_node__unpack(nullptr, bytes.size(), bytes.data()));
	if (!msg)
		fail(-EINVAL, "image %s is not a valid criu_render_node message (%zu bytes)", name.c_str(),
		     bytes.size());
	check_render_node(*msg, name);
	return msg;
}

void write_criu_kfd(const ImageDir &dir, uint32_t id, const CriuKfd &msg)
{
	write_image(dir, kfd_image_name(id), pack(msg));
}

CriuKfdPtr read_criu_kfd(ImageReader &image)
{
	return unpack_criu_kfd(read_payload(image), image.name());
}

CriuKfdPtr read_criu_kfd(const ImageDir &dir, uint32_t id)
{
	ImageReader image(dir, kfd_image_name(id), kMaxMetadataImageSize);
	return read_criu_kfd(image);
}

void write_criu_render_node(const ImageDir &dir, uint32_t id, const CriuRenderNode &msg)
{
	write_image(dir, render_image_name(id), pack(msg));
}

CriuRenderNodePtr read_criu_render_node(ImageReader &image)
{
	return unpack_criu_render_node(read_payload(image), image.name());
}

void write_dmabuf_image(const ImageDir &dir, uint32_t id, uint32_t buffer)
{
	CriuDmabufNode msg = CRIU_DMABUF_NODE__INIT;
	msg.has_gem_handle = true;
	msg.gem_handle = buffer;
	std::vector<uint8_t> out(criu_dmabuf_node__get_packed_size(&msg));
	criu_dmabuf_node__pack(&msg, out.data());
	write_image(dir, dmabuf_image_name(id), out);
}

uint32_t read_dmabuf_image(ImageReader &image)
{
	const std::vector<uint8_t> bytes = read_payload(image);
	std::unique_ptr<CriuDmabufNode, void (*)(CriuDmabufNode *)> msg(
		criu_dmabuf_node__unpack(nullptr, bytes.size(), bytes.data()),
		[](CriuDmabufNode *m) { criu_dmabuf_node__free_unpacked(m, nullptr); });
	if (!msg || !msg->has_gem_handle || msg->gem_handle == 0 || msg->gem_handle == 0xffffffff)
		fail(-EINVAL, "image %s is not a criu_dmabuf_node naming a shared buffer (%zu bytes)",
		     image.name().c_str(), bytes.size());
	return msg->gem_handle;
}

CriuRenderNodePtr read_criu_render_node(const ImageDir &dir, uint32_t id)
{
	ImageReader image(dir, render_image_name(id), kMaxMetadataImageSize);
	return read_criu_render_node(image);
}

} // namespace amdgpu
