// SPDX-License-Identifier: GPL-2.0-only
#include "support/fake_gpu.hpp"

#include "driver/device_files.hpp"

#include <amdgpu_drm.h>
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace amdgpu::test {

const char *to_string(Op op)
{
	switch (op) {
	case Op::open_kfd:
		return "open_kfd";
	case Op::open_render_node:
		return "open_render_node";
	case Op::get_version:
		return "get_version";
	case Op::process_info:
		return "process_info";
	case Op::checkpoint:
		return "checkpoint";
	case Op::unpause:
		return "unpause";
	case Op::restore:
		return "restore";
	case Op::resume:
		return "resume";
	case Op::runtime_info:
		return "runtime_info";
	case Op::runtime_enable:
		return "runtime_enable";
	case Op::copy:
		return "copy";
	case Op::import_dmabuf:
		return "import_dmabuf";
	case Op::free_memory:
		return "free_memory";
	case Op::map_memory:
		return "map_memory";
	case Op::unmap_memory:
		return "unmap_memory";
	case Op::gem_list:
		return "gem_list";
	case Op::gem_probe:
		return "gem_probe";
	case Op::gem_wait_idle:
		return "gem_wait_idle";
	case Op::gem_create:
		return "gem_create";
	case Op::gem_map:
		return "gem_map";
	case Op::gem_import:
		return "gem_import";
	case Op::gem_close:
		return "gem_close";
	case Op::make_render_node:
		return "make_render_node";
	}
	return "?";
}

std::set<int> open_fds()
{
	std::set<int> fds;
	for (const auto &e : std::filesystem::directory_iterator("/proc/self/fd"))
		fds.insert(std::stoi(e.path().filename().string()));
	return fds;
}

FakeGpu::FakeGpu(const Topology &topology, uint64_t bo_size)
{
	uint64_t addr = 0x7f0000000000;
	for (const Node *gpu : topology.gpus()) {
		gpu_ids_.push_back(gpu->gpu_id);
		for (int i = 0; i < 2; i++) {
			kfd_criu_bo_bucket bo = {};
			bo.addr = addr;
			bo.size = bo_size;
			bo.offset = addr >> 12;
			bo.gpu_id = gpu->gpu_id;
			bo.alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM;
			bos_.push_back(bo);
			addr += bo_size;
		}
	}
	if (gpu_ids_.empty())
		return;
	kfd_criu_bo_bucket user = {};
	user.addr = addr;
	user.size = 4096;
	user.gpu_id = gpu_ids_.at(0);
	user.alloc_flags = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR;
	bos_.push_back(user);
}

int FakeGpu::call(Op op, int fd)
{
	calls_.push_back({ op, fd });
	if (fail_op_ == op && (fail_nth_ == kEveryCall || count(op) == fail_nth_ + 1))
		return fail_err_;
	return 0;
}

int FakeGpu::new_fd(Op op)
{
	const int fd = eventfd(0, EFD_CLOEXEC);
	if (fd < 0)
		throw std::runtime_error("eventfd failed");
	handed_out_.emplace_back(op, fd);
	return fd;
}

bool FakeGpu::called(Op op, int fd) const
{
	return std::any_of(calls_.begin(), calls_.end(), [&](const Call &c) { return c.op == op && c.fd == fd; });
}

int FakeGpu::count(Op op) const
{
	return static_cast<int>(std::count_if(calls_.begin(), calls_.end(), [&](const Call &c) { return c.op == op; }));
}

size_t FakeGpu::first_call(Op op) const
{
	return static_cast<size_t>(
		std::find_if(calls_.begin(), calls_.end(), [&](const Call &c) { return c.op == op; }) - calls_.begin());
}

int FakeGpu::paused_fd() const
{
	for (const Call &c : calls_)
		if (c.op == Op::process_info)
			return c.fd;
	return -1;
}

std::vector<int> FakeGpu::still_open(Op op) const
{
	std::vector<int> open;
	for (const auto &[by, fd] : handed_out_)
		if (by == op && fcntl(fd, F_GETFD) >= 0)
			open.push_back(fd);
	return open;
}

int FakeGpu::open_device(const std::string &path)
{
	const Op op = path == kKfdPath ? Op::open_kfd : Op::open_render_node;
	if (const int ret = call(op, -1))
		return ret;
	return new_fd(op);
}

std::string FakeGpu::find_render_node(unsigned int minor, std::string *named_is)
{
	if (!hidden_minors_.count(minor))
		return strprintf("%s/renderD%u", kDriDir, minor);
	if (named_is)
		*named_is = "absent";
	return {};
}

int FakeGpu::make_render_node(unsigned int minor, std::string *how)
{
	if (const int ret = call(Op::make_render_node, -1))
		return ret;
	hidden_minors_.erase(minor);
	made_render_nodes.push_back(minor);
	*how = "mode 0660, owner 0:105, as renderD128";
	return 0;
}

int FakeGpu::get_version(int fd, kfd::Version &out)
{
	out = version;
	return call(Op::get_version, fd);
}

int FakeGpu::criu_process_info(int fd, kfd::ProcessInfo &out)
{
	if (const int ret = call(Op::process_info, fd))
		return ret;
	out = { pid, static_cast<uint32_t>(gpu_ids_.size()), static_cast<uint32_t>(bos_.size()), 3, 64 };
	return 0;
}

int FakeGpu::criu_checkpoint(int fd, const kfd::ProcessInfo &, std::span<kfd_criu_device_bucket> devices,
			     std::span<kfd_criu_bo_bucket> bos, std::span<uint8_t> priv_data)
{
	if (const int ret = call(Op::checkpoint, fd))
		return ret;
	for (size_t i = 0; i < devices.size(); i++)
		devices[i] = { gpu_ids_[i], gpu_ids_[i], 0, 0 };
	// every checkpoint is of another process: its buffers have other mmap offsets, but the shared
	const uint64_t process = static_cast<uint64_t>(count(Op::checkpoint) - 1) << 32;
	for (size_t i = 0; i < bos.size(); i++) {
		bos[i] = bos_[i];
		if (!shared_bos.count(i))
			bos[i].offset += process;
		bos[i].dmabuf_fd =
			bos_[i].alloc_flags & kfd::kContentMemFlags ? new_fd(Op::checkpoint) : KFD_INVALID_FD;
		if (bos[i].dmabuf_fd != KFD_INVALID_FD) {
			keys_[static_cast<int>(bos[i].dmabuf_fd)] =
				shared_bos.count(i) ? BufferKey { 1, i } : BufferKey { 2, next_key_++ };
			gpus_[static_cast<int>(bos[i].dmabuf_fd)] =
				imported_bos.count(i) ? foreign_gpu : bos_[i].gpu_id;
		}
	}
	std::memset(priv_data.data(), 0x5a, priv_data.size());
	return 0;
}

std::optional<uint32_t> FakeGpu::dmabuf_gpu(int fd)
{
	const auto it = gpus_.find(fd);
	if (it == gpus_.end())
		return std::nullopt;
	return it->second;
}

std::optional<BufferKey> FakeGpu::dmabuf_key(int fd)
{
	const auto it = keys_.find(fd);
	if (it == keys_.end())
		return std::nullopt;
	return it->second;
}

int FakeGpu::criu_unpause(int fd)
{
	return call(Op::unpause, fd);
}

int FakeGpu::criu_restore(int fd, std::span<kfd_criu_device_bucket>, std::span<kfd_criu_bo_bucket> bos,
			  std::span<uint8_t>, uint32_t)
{
	if (const int ret = call(Op::restore, fd))
		return ret;
	for (auto &bo : bos) {
		bo.restored_offset = bo.offset + 0x1000;
		bo.dmabuf_fd = bo.alloc_flags & kfd::kContentMemFlags ? new_fd(Op::restore) : KFD_INVALID_FD;
	}
	return 0;
}

int FakeGpu::criu_resume(int fd, uint32_t)
{
	return call(Op::resume, fd);
}

int FakeGpu::runtime_info(pid_t task, kfd::RuntimeInfo &out)
{
	runtime_asked_for = task;
	if (const int ret = call(Op::runtime_info, -1))
		return ret;
	out = runtime;
	return 0;
}

int FakeGpu::runtime_enable(int fd, const kfd::RuntimeInfo &info)
{
	if (const int ret = call(Op::runtime_enable, fd))
		return ret;
	// KFD refuses it once the process has queues
	if (called(Op::restore, fd))
		return -EEXIST;
	runtime_enabled.push_back(info);
	return 0;
}

int FakeGpu::import_dmabuf(int fd, uint32_t gpu_id, int, uint64_t, uint64_t &handle)
{
	if (const int ret = call(Op::import_dmabuf, fd))
		return ret;
	const uint32_t id =
		imports_ < import_ids.size() ? import_ids[imports_] : 0x100 + static_cast<uint32_t>(imports_);
	imports_++;
	handle = kfd::make_handle(gpu_id, id);
	memory_calls.push_back({ Op::import_dmabuf, handle, {} });
	return 0;
}

int FakeGpu::free_memory(int fd, uint64_t handle)
{
	memory_calls.push_back({ Op::free_memory, handle, {} });
	return call(Op::free_memory, fd);
}

int FakeGpu::map_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids)
{
	memory_calls.push_back({ Op::map_memory, handle, { gpu_ids.begin(), gpu_ids.end() } });
	return call(Op::map_memory, fd);
}

int FakeGpu::unmap_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids)
{
	memory_calls.push_back({ Op::unmap_memory, handle, { gpu_ids.begin(), gpu_ids.end() } });
	return call(Op::unmap_memory, fd);
}

int FakeGpu::gem_list(int fd, std::vector<gem::Object> &out)
{
	if (const int ret = call(Op::gem_list, fd))
		return ret;
	if (!gem_listing)
		return -EINVAL;
	out = gem_objects;
	return 0;
}

int FakeGpu::gem_probe(int fd, std::vector<gem::Object> &out)
{
	if (const int ret = call(Op::gem_probe, fd))
		return ret;
	out = gem_objects;
	return 0;
}

int FakeGpu::gem_export(int, uint32_t handle)
{
	if (gem_unexportable.count(handle))
		return -EPERM;
	const int fd = eventfd(0, EFD_CLOEXEC);
	if (gem_shared.count(handle)) {
		keys_[fd] = BufferKey { 3, handle };
		gpus_.erase(fd);
		return fd;
	}
	if (const auto it = gem_kfd_bos.find(handle); it != gem_kfd_bos.end()) {
		keys_[fd] = BufferKey { 1, it->second };
		gpus_[fd] = bos_.at(it->second).gpu_id;
		return fd;
	}
	keys_.erase(fd); // a number a closed dma-buf of CHECKPOINT had: this is another buffer
	gpus_.erase(fd);
	return fd;
}

int FakeGpu::gem_mappings(int, uint32_t handle, std::vector<gem::Mapping> &out)
{
	const auto it = gem_mappings_of.find(handle);
	out = it == gem_mappings_of.end() ? std::vector<gem::Mapping> {} : it->second;
	return 0;
}

int FakeGpu::gem_mmap_offset(int, uint32_t handle, uint64_t &offset)
{
	offset = (0x100000ull + handle) << 12;
	return 0;
}

int FakeGpu::gem_wait_idle(int fd, uint32_t handle, uint64_t)
{
	if (const int ret = call(Op::gem_wait_idle, fd))
		return ret;
	return gem_busy.count(handle) ? -ETIME : 0;
}

uint32_t FakeGpu::lowest_free_handle(GemFile &file)
{
	uint32_t h = 1;
	while (file.objects.count(h) || gem_taken.count(h))
		h++;
	return h;
}

int FakeGpu::gem_create(int fd, const gem::Object &o, uint32_t &handle)
{
	if (const int ret = call(Op::gem_create, fd))
		return ret;
	GemFile &file = gem_files[fd];
	handle = lowest_free_handle(file);
	file.objects[handle] = o;
	file.objects[handle].handle = handle;
	file.created++;
	return 0;
}

int FakeGpu::gem_map(int fd, uint32_t handle, const gem::Mapping &m)
{
	if (const int ret = call(Op::gem_map, fd))
		return ret;
	GemFile &file = gem_files[fd];
	if (!file.objects.count(handle))
		return -ENOENT;
	file.mappings[handle].push_back(m);
	return 0;
}

int FakeGpu::gem_import(int fd, int, uint32_t &handle)
{
	if (const int ret = call(Op::gem_import, fd))
		return ret;
	GemFile &file = gem_files[fd];
	handle = lowest_free_handle(file);
	file.objects[handle] = gem::Object { handle, 0, 0, 0, 0, 0 };
	file.imported.insert(handle);
	return 0;
}

int FakeGpu::gem_close(int fd, uint32_t handle)
{
	if (const int ret = call(Op::gem_close, fd))
		return ret;
	GemFile &file = gem_files[fd];
	if (!file.objects.erase(handle))
		return -EINVAL;
	file.mappings.erase(handle);
	file.closed++;
	return 0;
}

int FakeGpu::gem_write(int, uint32_t, std::span<const uint8_t> bytes)
{
	gem_writes.emplace_back(bytes.begin(), bytes.end());
	return 0;
}

// The sequences a context has: a dump's file holds contexts_held, a restore's those it made.
static uint64_t *sequence_of(std::map<uint32_t, uint64_t> &held, std::map<int, std::map<uint32_t, uint64_t>> &made,
			     int fd, uint32_t ctx)
{
	if (const auto f = made.find(fd); f != made.end()) {
		const auto it = f->second.find(ctx);
		return it == f->second.end() ? nullptr : &it->second;
	}
	const auto it = held.find(ctx);
	return it == held.end() ? nullptr : &it->second;
}

int FakeGpu::cs_context_flags(int fd, uint32_t id, uint64_t &flags)
{
	if (!sequence_of(contexts_held, contexts_made, fd, id))
		return -EINVAL;
	flags = guilty_contexts.count(id) ? AMDGPU_CTX_QUERY2_FLAGS_GUILTY : 0;
	return 0;
}

int FakeGpu::cs_alloc_context(int fd, uint32_t &id)
{
	auto &made = contexts_made[fd];
	id = 1;
	while (made.count(id) || context_taken.count(id))
		id++;
	made[id] = 1;
	return 0;
}

int FakeGpu::cs_free_context(int fd, uint32_t id)
{
	return contexts_made[fd].erase(id) ? 0 : -EINVAL;
}

int FakeGpu::cs_rings(int, uint32_t ip_type, uint32_t &rings)
{
	rings = ip_type == AMDGPU_HW_IP_DMA ? 0x3 : 0;
	return ip_type < 10 ? 0 : -EINVAL;
}

int FakeGpu::cs_fence_known(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq)
{
	const uint64_t *sequence = sequence_of(contexts_held, contexts_made, fd, ctx);
	if (!sequence || ip_type != AMDGPU_HW_IP_DMA || ring > 1)
		return -EINVAL;
	return seq < (ring == 0 ? *sequence : 1) ? 0 : -EINVAL;
}

int FakeGpu::cs_wait_fence(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq, uint64_t)
{
	return cs_fence_known(fd, ctx, ip_type, ring, seq);
}

int FakeGpu::cs_submit(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint32_t, uint64_t, uint32_t,
		       uint64_t &seq)
{
	uint64_t *sequence = sequence_of(contexts_held, contexts_made, fd, ctx);
	if (!sequence || ip_type != AMDGPU_HW_IP_DMA || ring != 0)
		return -EINVAL;
	seq = (*sequence)++;
	empty_submissions++;
	return 0;
}

// Writes (or reads) each GPU's pages image as the real copier does, with the BOs' bytes made up.
std::vector<CopyStats> FakeGpu::copy(CopyDirection direction, std::span<const GpuCopyJob> given,
				     const ImageDir &image_dir, uint32_t kfd_id, uint64_t)
{
	if (while_copying)
		while_copying();
	jobs.assign(given.begin(), given.end());
	std::vector<CopyStats> stats;
	for (const GpuCopyJob &job : given) {
		uint64_t total = 0;
		for (const uint64_t s : job.sizes)
			total += s;
		const std::string name = pages_image_name(kfd_id, job.image_gpu_id);
		BlockSummer summer(job.sizes);
		if (direction == CopyDirection::to_image) {
			ImageWriter writer(image_dir, name, total);
			const std::vector<uint8_t> bytes(total, 0xa5);
			summer.add(bytes);
			writer.write(bytes);
			writer.finish();
		} else if (total) {
			ImageReader reader(image_dir, name, total);
			std::vector<uint8_t> bytes(total);
			reader.read(bytes);
			summer.add(bytes);
		}
		if (const int ret = call(Op::copy, job.render_fd))
			throw Error(ret, strprintf("GPU 0x%04x: the copy engine failed", job.gpu_id));
		CopyStats s;
		s.direction = direction;
		s.gpu_id = job.gpu_id;
		s.bytes = s.io_bytes = total;
		s.sums = { job.image_gpu_id, total, job.sizes, summer.take_sums(), {} };
		stats.push_back(std::move(s));
	}
	return stats;
}

} // namespace amdgpu::test
