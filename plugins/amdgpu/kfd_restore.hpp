// SPDX-License-Identifier: GPL-2.0-only
//
// Restore of GPU processes. RestoreSession lives inside one restored task (criu runs
// RESTORE_EXT_FILE and UPDATE_VMA_MAP there, after fork): it maps the image's GPUs onto local ones,
// opens their render nodes above every fd criu will install, recreates the KFD state
// (RESTORE, queues left stopped) and remembers the new mmap offsets for UPDATE_VMA_MAP.
// resume_gpu_process() runs in the criu main process once all memory is back.
//
// The GPU map of a task is derived from its own amdgpu-kfd image, whichever of its /dev/kfd or
// render-node files criu restores first, so the order of files does not matter.
#pragma once

#include "gpu_matcher.hpp"
#include "metadata_images.hpp"
#include "options.hpp"
#include "topology.hpp"
#include "unique_fd.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace amdgpu {

struct RestorePaths {
	std::filesystem::path topology_dir = std::string(kDefaultTopologyDir);
	std::string kfd = "/dev/kfd";
	std::string dri = "/dev/dri";
};

class RestoreSession {
public:
	RestoreSession(const Options &options, int image_dir, RestorePaths paths = {});
	RestoreSession(const RestoreSession &) = delete;
	RestoreSession &operator=(const RestoreSession &) = delete;

	// The task this session belongs to; a forked child must start its own.
	pid_t owner() const { return owner_; }

	// Both return a new fd that criu takes over.
	int restore_kfd(uint32_t id);
	int restore_render_node(uint32_t id);

	// 1 with *new_offset (and *fd for render nodes) set when the mapping is one we moved, 0 when
	// it keeps its offset.
	int update_vma(std::string_view path, uint64_t addr, uint64_t old_offset, uint64_t *new_offset, int *fd);

private:
	struct VmaUpdate {
		uint64_t addr;
		uint64_t old_offset;
		uint64_t new_offset;
		int render_fd; // -1: a /dev/kfd mapping
	};

	const Topology &local_topology();
	// Maps the GPUs of the image describing this task (computed once).
	const GpuMap &gpu_map(const CriuKfd &msg, const std::string &image);
	// Finds this task's kfd image when a render node comes first.
	const GpuMap *gpu_map_from_own_image();
	// A new render-node file of a local GPU, above the task's fds.
	unique_fd open_render_node(uint32_t actual_gpu_id);
	// The render-node file of a GPU shared by KFD (its VM), the task's render fds and its mappings.
	int render_fd(uint32_t actual_gpu_id);
	int fd_floor(uint32_t vpid);

	const Options &options_;
	int image_dir_;
	RestorePaths paths_;
	pid_t owner_;
	std::optional<Topology> local_;
	std::optional<GpuMap> map_;
	bool searched_own_image_ = false;
	int fd_floor_ = -1;
	std::map<uint32_t, unique_fd> render_fds_; // by actual gpu_id
	std::vector<VmaUpdate> vmas_;
};

// RESUME_DEVICES_LATE: restarts the queues of a restored task, from the criu main process.
// Returns 0, or -ENOTSUP when the task has no GPU state.
int resume_gpu_process(int pid, const std::string &kfd_path = "/dev/kfd");

} // namespace amdgpu
