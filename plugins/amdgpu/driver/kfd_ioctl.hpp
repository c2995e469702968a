// SPDX-License-Identifier: GPL-2.0-only
//
// Thin typed wrappers around the KFD ioctls the plugin uses. Each one zeroes the arguments, fills
// the inputs, calls, copies the outputs and returns 0 or a negative errno. No policy lives here:
// ordering, unpause-on-failure and error messages belong to the callers.
#pragma once

#include <linux/kfd_ioctl.h>

#include <compare>
#include <cstdint>
#include <span>

namespace amdgpu::kfd {

// Oldest KFD ioctl interface with the CRIU ops and SDMA-accessible GTT BOs.
inline constexpr uint32_t kMinMajor = 1;
inline constexpr uint32_t kMinMinor = 8;

// BOs whose contents the plugin copies (the others are user memory criu dumps itself, or
// apertures without contents).
inline constexpr uint32_t kContentMemFlags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT;
// Whether a BO's contents go through the pages image of its GPU.
inline constexpr bool holds_contents(uint32_t alloc_flags, uint64_t size)
{
	return (alloc_flags & kContentMemFlags) && size;
}

struct Version {
	uint32_t major = 0;
	uint32_t minor = 0;
	friend constexpr auto operator<=>(const Version &, const Version &) = default;
};

struct ProcessInfo {
	uint32_t pid = 0; // in the target's own pid namespace
	uint32_t num_devices = 0;
	uint32_t num_bos = 0;
	uint32_t num_objects = 0; // queues + events + SVM ranges
	uint64_t priv_data_size = 0;
};

// ioctl() that retries while the driver asks to (EINTR, EAGAIN), with a bound so that a driver
// stuck in EAGAIN cannot hang criu.
int ioctl_retry(int fd, unsigned long request, void *arg);

int get_version(int fd, Version &out);

int criu_process_info(int fd, ProcessInfo &out);
int criu_checkpoint(int fd, const ProcessInfo &info, std::span<kfd_criu_device_bucket> devices,
		    std::span<kfd_criu_bo_bucket> bos, std::span<uint8_t> priv_data);
int criu_unpause(int fd);
int criu_restore(int fd, std::span<kfd_criu_device_bucket> devices, std::span<kfd_criu_bo_bucket> bos,
		 std::span<uint8_t> priv_data, uint32_t num_objects);
int criu_resume(int fd, uint32_t pid);

// ROCm's runtime announces itself to KFD (RUNTIME_ENABLE, KFD 1.13, Linux 6.5): from then on KFD
// reports the process's queue errors and wave exceptions to it through each queue's context save
// area header, and nothing else does. KFD's CRIU does not carry that registration, and only the
// process itself can make it, before it has queues (-EEXIST after). A ptracer reads it back by
// opening a debug session on the process (DBG_TRAP ENABLE copies the runtime info out) and
// closing it again at once (DISABLE).
inline constexpr Version kRuntimeEnableSince = { 1, 13 };
// KFD's runtime_state
enum class RuntimeState : uint32_t {
	disabled = 0,
	enabled = 1,
	enabled_busy = 2,  // RUNTIME_ENABLE waits for the process's debugger
	enabled_error = 3, // its debugger failed it
};
struct RuntimeInfo {
	RuntimeState state = RuntimeState::disabled;
	uint64_t r_debug = 0;	 // the runtime's r_debug (code objects, for debuggers)
	bool ttmp_setup = false; // trap temporaries set up at wave launch
};
// RUNTIME_ENABLE, on the caller's own /dev/kfd file.
int runtime_enable(int fd, uint64_t r_debug, bool ttmp_setup);
// DBG_TRAP ENABLE of task `pid` (the caller's pid namespace) with no exception forwarded;
// `event_fd` is where KFD would write debug events. DISABLE ends the session.
int dbg_trap_enable(int fd, uint32_t pid, int event_fd, RuntimeInfo &out);
int dbg_trap_disable(int fd, uint32_t pid);

// The ordinary memory ioctls, in the process that owns `fd`. A handle is (gpu_id << 32) | id, the
// gpu_id the process knows; ids are per GPU of the process, and ALLOC and IMPORT take the lowest
// free one.
inline constexpr uint64_t make_handle(uint32_t gpu_id, uint32_t id)
{
	return (static_cast<uint64_t>(gpu_id) << 32) | id;
}
inline constexpr uint32_t handle_id(uint64_t handle)
{
	return static_cast<uint32_t>(handle);
}
// The GPU (its gpu_id) whose buffer a dma-buf is, when it is an amdgpu buffer KFD can use.
int dmabuf_gpu(int fd, int dmabuf_fd, uint32_t &gpu_id);
int import_dmabuf(int fd, uint32_t gpu_id, int dmabuf_fd, uint64_t va, uint64_t &handle);
int free_memory(int fd, uint64_t handle);
int map_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids);
int unmap_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids);

} // namespace amdgpu::kfd
