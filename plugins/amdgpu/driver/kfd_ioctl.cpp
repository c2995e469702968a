// SPDX-License-Identifier: GPL-2.0-only
#include "driver/kfd_ioctl.hpp"

#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

namespace amdgpu::kfd {

namespace {

constexpr int kMaxRetries = 200;

// CHECKPOINT refuses a NULL array even when its count is 0, so empty arrays point here.
uint8_t empty_array[8];

template <typename T> uint64_t to_user(std::span<T> array)
{
	return reinterpret_cast<uintptr_t>(array.empty() ? static_cast<void *>(empty_array) : array.data());
}

// What Linux 6.5 (KFD 1.13) added for runtimes and debuggers, laid out here because the plugin is
// built on the oldest headers it supports (6.1's).
struct RuntimeEnableArgs {
	uint64_t r_debug;
	uint32_t mode_mask;
	uint32_t capabilities_mask;
};
constexpr uint32_t kRuntimeEnableModeEnable = 1u << 0;
constexpr uint32_t kRuntimeEnableModeTtmpSave = 1u << 1;

struct KernelRuntimeInfo {
	uint64_t r_debug;
	uint32_t runtime_state;
	uint32_t ttmp_setup;
};
struct DbgTrapEnableArgs {
	uint64_t exception_mask;
	uint64_t rinfo_ptr;
	uint32_t rinfo_size;
	uint32_t dbg_fd;
};
// kfd_ioctl_dbg_trap_args: pid, op, then a union of the operations' arguments, 24 bytes at most
struct DbgTrapArgs {
	uint32_t pid;
	uint32_t op;
	union {
		DbgTrapEnableArgs enable;
		uint64_t words[3];
	};
};
static_assert(sizeof(RuntimeEnableArgs) == 16 && sizeof(KernelRuntimeInfo) == 16 && sizeof(DbgTrapArgs) == 32);
constexpr uint32_t kDbgTrapEnable = 0;
constexpr uint32_t kDbgTrapDisable = 1;
constexpr unsigned long kIocRuntimeEnable = _IOWR('K', 0x25, RuntimeEnableArgs);
constexpr unsigned long kIocDbgTrap = _IOWR('K', 0x26, DbgTrapArgs);

} // namespace

int ioctl_retry(int fd, unsigned long request, void *arg)
{
	for (int i = 0;; i++) {
		if (!ioctl(fd, request, arg))
			return 0;
		if ((errno != EINTR && errno != EAGAIN) || i == kMaxRetries)
			return -errno;
	}
}

int get_version(int fd, Version &out)
{
	kfd_ioctl_get_version_args args;
	std::memset(&args, 0, sizeof(args));
	const int ret = ioctl_retry(fd, AMDKFD_IOC_GET_VERSION, &args);
	if (!ret)
		out = { args.major_version, args.minor_version };
	return ret;
}

int criu_process_info(int fd, ProcessInfo &out)
{
	kfd_ioctl_criu_args args;
	std::memset(&args, 0, sizeof(args));
	args.op = KFD_CRIU_OP_PROCESS_INFO;
	const int ret = ioctl_retry(fd, AMDKFD_IOC_CRIU_OP, &args);
	if (!ret)
		out = { args.pid, args.num_devices, args.num_bos, args.num_objects, args.priv_data_size };
	return ret;
}

int criu_checkpoint(int fd, const ProcessInfo &info, std::span<kfd_criu_device_bucket> devices,
		    std::span<kfd_criu_bo_bucket> bos, std::span<uint8_t> priv_data)
{
	kfd_ioctl_criu_args args;
	std::memset(&args, 0, sizeof(args));
	args.op = KFD_CRIU_OP_CHECKPOINT;
	args.devices = to_user(devices);
	args.num_devices = static_cast<uint32_t>(devices.size());
	args.bos = to_user(bos);
	args.num_bos = static_cast<uint32_t>(bos.size());
	args.priv_data = to_user(priv_data);
	args.priv_data_size = priv_data.size();
	args.num_objects = info.num_objects;
	return ioctl_retry(fd, AMDKFD_IOC_CRIU_OP, &args);
}

int criu_unpause(int fd)
{
	kfd_ioctl_criu_args args;
	std::memset(&args, 0, sizeof(args));
	args.op = KFD_CRIU_OP_UNPAUSE;
	return ioctl_retry(fd, AMDKFD_IOC_CRIU_OP, &args);
}

int criu_restore(int fd, std::span<kfd_criu_device_bucket> devices, std::span<kfd_criu_bo_bucket> bos,
		 std::span<uint8_t> priv_data, uint32_t num_objects)
{
	kfd_ioctl_criu_args args;
	std::memset(&args, 0, sizeof(args));
	args.op = KFD_CRIU_OP_RESTORE;
	args.devices = to_user(devices);
	args.num_devices = static_cast<uint32_t>(devices.size());
	args.bos = to_user(bos);
	args.num_bos = static_cast<uint32_t>(bos.size());
	args.priv_data = to_user(priv_data);
	args.priv_data_size = priv_data.size();
	args.num_objects = num_objects;
	return ioctl_retry(fd, AMDKFD_IOC_CRIU_OP, &args);
}

int criu_resume(int fd, uint32_t pid)
{
	kfd_ioctl_criu_args args;
	std::memset(&args, 0, sizeof(args));
	args.op = KFD_CRIU_OP_RESUME;
	args.pid = pid;
	return ioctl_retry(fd, AMDKFD_IOC_CRIU_OP, &args);
}

int runtime_enable(int fd, uint64_t r_debug, bool ttmp_setup)
{
	RuntimeEnableArgs args;
	std::memset(&args, 0, sizeof(args));
	args.r_debug = r_debug;
	args.mode_mask = kRuntimeEnableModeEnable | (ttmp_setup ? kRuntimeEnableModeTtmpSave : 0);
	return ioctl_retry(fd, kIocRuntimeEnable, &args);
}

int dbg_trap_enable(int fd, uint32_t pid, int event_fd, RuntimeInfo &out)
{
	KernelRuntimeInfo info;
	std::memset(&info, 0, sizeof(info));
	DbgTrapArgs args;
	std::memset(&args, 0, sizeof(args));
	args.pid = pid;
	args.op = kDbgTrapEnable;
	args.enable.rinfo_ptr = reinterpret_cast<uintptr_t>(&info);
	args.enable.rinfo_size = sizeof(info);
	args.enable.dbg_fd = static_cast<uint32_t>(event_fd);
	const int ret = ioctl_retry(fd, kIocDbgTrap, &args);
	if (!ret)
		out = { static_cast<RuntimeState>(info.runtime_state), info.r_debug, info.ttmp_setup != 0 };
	return ret;
}

int dbg_trap_disable(int fd, uint32_t pid)
{
	DbgTrapArgs args;
	std::memset(&args, 0, sizeof(args));
	args.pid = pid;
	args.op = kDbgTrapDisable;
	return ioctl_retry(fd, kIocDbgTrap, &args);
}

int dmabuf_gpu(int fd, int dmabuf_fd, uint32_t &gpu_id)
{
	kfd_ioctl_get_dmabuf_info_args args;
	std::memset(&args, 0, sizeof(args));
	args.dmabuf_fd = static_cast<uint32_t>(dmabuf_fd);
	const int ret = ioctl_retry(fd, AMDKFD_IOC_GET_DMABUF_INFO, &args);
	if (!ret)
		gpu_id = args.gpu_id;
	return ret;
}

int import_dmabuf(int fd, uint32_t gpu_id, int dmabuf_fd, uint64_t va, uint64_t &handle)
{
	kfd_ioctl_import_dmabuf_args args;
	std::memset(&args, 0, sizeof(args));
	args.va_addr = va;
	args.gpu_id = gpu_id;
	args.dmabuf_fd = static_cast<uint32_t>(dmabuf_fd);
	const int ret = ioctl_retry(fd, AMDKFD_IOC_IMPORT_DMABUF, &args);
	if (!ret)
		handle = args.handle;
	return ret;
}

int free_memory(int fd, uint64_t handle)
{
	kfd_ioctl_free_memory_of_gpu_args args;
	std::memset(&args, 0, sizeof(args));
	args.handle = handle;
	return ioctl_retry(fd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &args);
}

namespace {

template <typename Args>
int map_or_unmap(int fd, unsigned long request, uint64_t handle, std::span<const uint32_t> gpu_ids)
{
	if (gpu_ids.empty())
		return 0;
	Args args;
	std::memset(&args, 0, sizeof(args));
	args.handle = handle;
	args.device_ids_array_ptr = reinterpret_cast<uint64_t>(gpu_ids.data());
	args.n_devices = static_cast<uint32_t>(gpu_ids.size());
	// KFD counts the GPUs done in n_success and goes on from there when called again
	return ioctl_retry(fd, request, &args);
}

} // namespace

int map_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids)
{
	return map_or_unmap<kfd_ioctl_map_memory_to_gpu_args>(fd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, gpu_ids);
}

int unmap_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids)
{
	return map_or_unmap<kfd_ioctl_unmap_memory_from_gpu_args>(fd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle,
								  gpu_ids);
}

} // namespace amdgpu::kfd
