// SPDX-License-Identifier: GPL-2.0-only
#include "driver/gpu_driver.hpp"

#include "driver/cs_ioctl.hpp"

#include "driver/device_files.hpp"
#include "support/error.hpp"
#include "driver/kfd_contexts.hpp"
#include "driver/task_fds.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

namespace amdgpu {

namespace {

class SystemGpuDriver final : public GpuDriver {
public:
	int open_device(const std::string &path) override
	{
		const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	std::string find_render_node(unsigned int minor, std::string *named_is) override
	{
		return find_char_device(kDriDir, strprintf("renderD%u", minor), makedev(kDrmMajor, minor), named_is);
	}
	std::string describe_render_nodes() override { return describe_char_devices(kDriDir); }
	int device_rules_restrict() override { return amdgpu::device_rules_restrict(kDriDir); }
	int make_render_node(unsigned int minor, std::string *how) override
	{
		return make_char_device(kDriDir, strprintf("renderD%u", minor), makedev(kDrmMajor, minor), "renderD",
					how);
	}

	int get_version(int fd, kfd::Version &out) override { return kfd::get_version(fd, out); }
	int criu_process_info(int fd, kfd::ProcessInfo &out) override { return kfd::criu_process_info(fd, out); }
	int criu_checkpoint(int fd, const kfd::ProcessInfo &info, std::span<kfd_criu_device_bucket> devices,
			    std::span<kfd_criu_bo_bucket> bos, std::span<uint8_t> priv_data) override
	{
		return kfd::criu_checkpoint(fd, info, devices, bos, priv_data);
	}
	int criu_unpause(int fd) override { return kfd::criu_unpause(fd); }
	int criu_restore(int fd, std::span<kfd_criu_device_bucket> devices, std::span<kfd_criu_bo_bucket> bos,
			 std::span<uint8_t> priv_data, uint32_t num_objects) override
	{
		return kfd::criu_restore(fd, devices, bos, priv_data, num_objects);
	}
	int criu_resume(int fd, uint32_t pid) override { return kfd::criu_resume(fd, pid); }
	int runtime_info(pid_t pid, kfd::RuntimeInfo &out) override
	{
		if (const int ret = own_kfd())
			return ret;
		// KFD writes debug events to this pipe; none is asked for, and it goes with the session
		int ends[2];
		if (pipe2(ends, O_CLOEXEC | O_NONBLOCK))
			return -errno;
		const unique_fd read_end(ends[0]), write_end(ends[1]);
		const uint32_t target = static_cast<uint32_t>(pid);
		if (const int ret = kfd::dbg_trap_enable(own_kfd_.get(), target, write_end.get(), out))
			return ret;
		return kfd::dbg_trap_disable(own_kfd_.get(), target);
	}
	int runtime_enable(int fd, const kfd::RuntimeInfo &info) override
	{
		return kfd::runtime_enable(fd, info.r_debug, info.ttmp_setup);
	}
	int import_dmabuf(int fd, uint32_t gpu_id, int dmabuf_fd, uint64_t va, uint64_t &handle) override
	{
		return kfd::import_dmabuf(fd, gpu_id, dmabuf_fd, va, handle);
	}
	int free_memory(int fd, uint64_t handle) override { return kfd::free_memory(fd, handle); }
	int map_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids) override
	{
		return kfd::map_memory(fd, handle, gpu_ids);
	}
	int unmap_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids) override
	{
		return kfd::unmap_memory(fd, handle, gpu_ids);
	}
	std::vector<uint32_t> secondary_contexts(pid_t pid) override
	{
		return secondary_kfd_contexts(std::filesystem::path(kKfdProcDir) / std::to_string(pid));
	}
	int gem_list(int fd, std::vector<gem::Object> &out) override { return gem::list_handles(fd, out); }
	int gem_probe(int fd, std::vector<gem::Object> &out) override { return gem::probe_handles(fd, out); }
	int gem_export(int fd, uint32_t handle) override { return gem::export_dmabuf(fd, handle); }
	int gem_mappings(int fd, uint32_t handle, std::vector<gem::Mapping> &out) override
	{
		return gem::mapping_info(fd, handle, out);
	}
	int gem_mmap_offset(int fd, uint32_t handle, uint64_t &offset) override
	{
		return gem::mmap_offset(fd, handle, offset);
	}
	int gem_wait_idle(int fd, uint32_t handle, uint64_t timeout_ns) override
	{
		return gem::wait_idle(fd, handle, timeout_ns);
	}
	int gem_create(int fd, const gem::Object &o, uint32_t &handle) override { return gem::create(fd, o, handle); }
	int gem_map(int fd, uint32_t handle, const gem::Mapping &m) override { return gem::map_va(fd, handle, m); }
	int gem_import(int fd, int dmabuf_fd, uint32_t &handle) override
	{
		return gem::import_dmabuf(fd, dmabuf_fd, handle);
	}
	int gem_close(int fd, uint32_t handle) override { return gem::close_handle(fd, handle); }
	int gem_write(int fd, uint32_t handle, std::span<const uint8_t> bytes) override
	{
		return gem::write_object(fd, handle, bytes);
	}
	int cs_context_flags(int fd, uint32_t id, uint64_t &flags) override { return cs::context_flags(fd, id, flags); }
	int cs_alloc_context(int fd, uint32_t &id) override { return cs::alloc_context(fd, id); }
	int cs_free_context(int fd, uint32_t id) override { return cs::free_context(fd, id); }
	int cs_rings(int fd, uint32_t ip_type, uint32_t &rings) override
	{
		return cs::available_rings(fd, ip_type, rings);
	}
	int cs_fence_known(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq) override
	{
		return cs::fence_known(fd, ctx, ip_type, ring, seq);
	}
	int cs_wait_fence(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq,
			  uint64_t timeout_ns) override
	{
		return cs::wait_fence(fd, ctx, ip_type, ring, seq, timeout_ns);
	}
	int cs_submit(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint32_t ib_handle, uint64_t ib_va,
		      uint32_t ib_bytes, uint64_t &seq) override
	{
		return cs::submit(fd, ctx, ip_type, ring, ib_handle, ib_va, ib_bytes, seq);
	}
	std::optional<BufferKey> dmabuf_key(int fd) override
	{
		struct stat st;
		if (!is_dmabuf(fd) || fstat(fd, &st))
			return std::nullopt;
		return BufferKey { static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino) };
	}
	std::optional<uint32_t> dmabuf_gpu(int dmabuf_fd) override
	{
		uint32_t gpu_id = 0;
		if (own_kfd() || kfd::dmabuf_gpu(own_kfd_.get(), dmabuf_fd, gpu_id))
			return std::nullopt;
		return gpu_id;
	}
	std::optional<uint64_t> vram_charged(pid_t pid, uint32_t gpu_id) override
	{
		std::ifstream in(std::filesystem::path(kKfdProcDir) / std::to_string(pid) /
				 ("vram_" + std::to_string(gpu_id)));
		uint64_t bytes;
		if (!(in >> bytes))
			return std::nullopt;
		return bytes;
	}

private:
	// 0 once criu's own /dev/kfd file is open, or the negative errno of open()
	int own_kfd()
	{
		if (own_kfd_)
			return 0;
		const int fd = open(kKfdPath, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		own_kfd_.reset(fd);
		return 0;
	}

	unique_fd own_kfd_; // criu's own KFD process: GET_DMABUF_INFO, DBG_TRAP on the tasks
};

} // namespace

GpuDriver &system_gpu_driver()
{
	static SystemGpuDriver driver;
	return driver;
}

} // namespace amdgpu
