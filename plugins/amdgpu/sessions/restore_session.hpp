// SPDX-License-Identifier: GPL-2.0-only
//
// Restore of GPU processes. RestoreSession lives inside one restored task (criu runs
// RESTORE_EXT_FILE and UPDATE_VMA_MAP there, after fork): it maps the image's GPUs onto local ones,
// opens their render nodes above every fd criu will install, recreates the KFD state
// (RESTORE, queues left stopped) and remembers the new mmap offsets for UPDATE_VMA_MAP.
// resume_gpu_process() runs in the criu main process once all memory is back. Before it creates
// anything in KFD, the task enlists with the restore guard (restore_guard.hpp), so that it does
// not outlive a criu that dies before the restore is done.
//
// The GPU map of a task is derived from its own amdgpu-kfd image, whichever of its /dev/kfd or
// render-node files criu restores first, so the order of files does not matter. From files, a
// render node that comes first finds that image by its pid. Through criu's image streamer each
// image can be asked for only once and there is no directory to search: a render node that comes
// first asks criu to come back later where criu can (4.3's retry flag), and is otherwise placed
// on the local GPU with the same id, a choice the kfd image must confirm or the restore fails.
//
// A buffer that processes of the dump shared (shared_buffers.hpp) comes back shared. KFD RESTORE
// gives each of them a buffer of its own; the one whose image restores it (ShareRole::restorer)
// offers a dma-buf of its new buffer through the restore guard, and fills it from its pages image.
// Each other holder (ShareRole::taker) takes that dma-buf and puts it in place of the buffer KFD
// made for it: unmapped from its GPUs and freed, the dma-buf imported at the same address under
// the same handle (KFD gives an import the lowest free id: lower free ids are filled for the
// moment, then let go), and mapped on the same GPUs. No queue runs before criu resumes them all,
// long after. A dma-buf fd a task held of such a buffer (amdgpu-dmabuf_<id>.img) is given back as
// a dma-buf of the restored buffer, taken the same way. A CPU mapping of a taken buffer cannot be
// moved (KFD's import does not say where the buffer would be mapped): criu's request to map it
// fails the restore, naming it; the dump makes the one holder that maps a buffer its restorer.
//
// What is restored is what was dumped (image_checksums.hpp): the kfd image's payload and every
// block of GPU memory read from the images into staging are checked against the dump's sums before
// the restore goes on, and a mismatch fails it naming the image, GPU, BO and offset. Images without
// sums restore unverified, with a warning. Blocks an incremental dump left to earlier checkpoints
// are read from criu's `parent` chain (image_chain.hpp), open only while the copy runs, and checked
// the same way.
//
// From files, with a restore guard and KFD_OVERLAP_COPY on (the default), the task does not copy:
// it hands its BOs' dma-bufs to the guard, which copies and checks them (restore_contents.hpp)
// beside criu's restore of the task's memory, and join_gpu_copy() waits for the outcome before the
// queues resume. Through criu's image streamer each image is handed out once, to the task that
// asks, so the task copies there, in series, as it does without a guard or with the switch off.
//
// A render-node image with GEM objects or contexts (render/gem_restore.hpp, render_contexts.hpp)
// has them made again in the file the task gets: the GPU's first such file is render_fd() (KFD's VM
// is in it, as it was in the runtime's render node), each further one a file of its own. Their
// memory is copied and checked as a kfd file's: by the restore guard beside criu, or here in
// series, by the same rule; a task that hands the guard several copies gets one outcome. A handle of a KFD buffer
// is an import of the restored buffer, whose dma-buf restore_kfd() keeps until the task's files
// are all in place; a render file that comes first asks criu 4.3 to come back. A process without
// KFD state is matched to local GPUs from its render-node images.
//
// Nothing of the plugin's stays in the task. KFD keeps its own reference to each GPU's render file
// once RESTORE succeeded, so the render fds of GPUs the task does not use are closed right away.
// The others are needed until criu maps the task's BOs, which DRM allows only through the file
// that owns them; criu installs all of a task's files before it maps anything, so at the first
// UPDATE_VMA_MAP the plugin finds, for each GPU, a task fd sharing its file (the task's own
// render-node fds are restored as duplicates of it), maps through that one and closes its own.
// Only a GPU with BOs to map of which the task holds no fd at all keeps the plugin's (one per GPU,
// never more: the next checkpoint sees it as the task's).
#pragma once

#include "copy/bo_transfer.hpp"
#include "driver/device_files.hpp"
#include "driver/gpu_driver.hpp"
#include "matching/gpu_matcher.hpp"
#include "images/image_chain.hpp"
#include "images/image_checksums.hpp"
#include "driver/kfd_priv_data.hpp"
#include "images/metadata_images.hpp"
#include "render/render_image.hpp"
#include "sessions/options.hpp"
#include "copy/restore_contents.hpp"
#include "guard/restore_guard.hpp"
#include "topology/topology.hpp"
#include "support/unique_fd.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace amdgpu {

class RestoreSession {
public:
	// `guard` (may be null) is told of the task before its KFD state is created. `driver` and
	// `copier` stand for the kernel and the GPUs' copy engines (host tests fake them).
	RestoreSession(const Options &options, ImageDir image_dir, const RestoreGuard *guard,
		       std::filesystem::path topology_dir = std::string(kDefaultTopologyDir),
		       GpuDriver &driver = system_gpu_driver(), ContentCopier &copier = sdma_copier());
	RestoreSession(const RestoreSession &) = delete;
	RestoreSession &operator=(const RestoreSession &) = delete;

	// How long a task that takes a shared buffer waits for the task that restores it to offer it.
	// That task offers it right after its own KFD RESTORE; criu restores the tasks side by side,
	// and what a task does before (forking, its other files) takes seconds at most.
	int take_timeout_ms = kTakeTimeoutMs;
	static constexpr int kTakeTimeoutMs = 60000;

	// The task this session belongs to; a forked child must start its own.
	pid_t owner() const { return owner_; }

	// RESTORE_EXT_FILE: a new fd that criu takes over, or -ENOTSUP for a file that is not ours.
	// `retry` is criu's retry flag where criu has one (4.3), else null; when the file is set
	// aside for a retry, the fd returned is a placeholder criu drops.
	int restore_file(uint32_t id, bool *retry);

	// 1 with *new_offset (and *fd for render nodes) set when the mapping of `file` (/dev/kfd or
	// a render node) is one we moved, 0 when it keeps its offset.
	int update_vma(GpuFileKind file, uint64_t addr, uint64_t old_offset, uint64_t *new_offset, int *fd);

private:
	struct VmaUpdate {
		uint64_t addr;
		uint64_t old_offset;
		uint64_t new_offset;
		uint32_t render_gpu;   // actual gpu_id whose render file maps it; 0: a /dev/kfd mapping
		uint32_t taken = 0;    // the shared buffer it maps, taken from another task: unmappable
		bool any_addr = false; // a GEM object's: criu's mapping is found by its offset alone
		int through = -1;      // the plugin's fd of the file it maps (-1: render_fd(render_gpu)'s)
		int through_task = -1; // the task's fd of that file, once criu installed it
	};
	// A render-node image as read: criu's retry hands it back later.
	struct RenderImage {
		CriuRenderNodePtr msg;
		std::vector<uint8_t> payload;
	};

	int restore_kfd(ImageReader &image, uint32_t id);
	// The steps of restore_kfd, in order.
	void enlist();
	unique_fd open_kfd(kfd::Version &version); // and checks its interface version
	// Registers ROCm's runtime with KFD as the dumped process had it (before RESTORE makes queues).
	void register_runtime(int kfd, const kfd::Version &version, const CriuKfd &msg, const std::string &image);
	std::vector<kfd_criu_device_bucket> device_buckets_of(const GpuMap &map);
	std::vector<uint8_t> driver_state(const CriuKfd &msg, size_t devices, const std::string &image);
	std::vector<unique_fd> restore_state(int kfd, std::span<kfd_criu_device_bucket> devices,
					     std::span<kfd_criu_bo_bucket> bos, std::span<uint8_t> priv,
					     const CriuKfd &msg, const std::string &image);
	// The contents of the BOs: handed to the restore guard, which copies them beside criu's own
	// restore of the task's memory, or copied here, in series with it.
	void restore_contents(uint32_t id, const CriuKfd &msg, const GpuMap &map,
			      std::span<const kfd_criu_bo_bucket> bos, std::span<const BoShare> shares,
			      std::optional<ImageSums> &sums, std::span<const uint8_t> kfd_payload);
	// Why the copy runs in series here, or null when the guard takes it.
	const char *copy_in_series_because() const;
	void hand_contents_to_guard(uint32_t id, const CriuKfd &msg, const GpuMap &map,
				    std::span<const kfd_criu_bo_bucket> bos, std::span<const BoShare> shares);
	void offer_shared_buffers(std::span<const kfd_criu_bo_bucket> bos, std::span<const BoShare> shares);
	// A dma-buf of shared buffer `number`, waiting for its restorer's offer up to take_timeout_ms.
	unique_fd take_buffer(uint32_t number);
	int restore_dmabuf(ImageReader &image, bool *retry);
	void take_shared_buffers(int kfd, const CriuKfd &msg, std::span<const kfd_criu_bo_bucket> bos,
				 std::span<const BoShare> shares, const std::string &image);
	void take_shared_buffer(int kfd, const kfd_criu_bo_bucket &bo, const BoShare &share, const BoPrivRecord &rec);
	void keep_kfd_buffers(std::span<const kfd_criu_bo_bucket> bos);
	bool render_images_name_kfd_buffers();
	// A dma-buf of the restored KFD buffer at `addr`, or an invalid fd.
	unique_fd restored_kfd_buffer(uint64_t addr);
	void remember_mappings(const GpuMap &map, std::span<const kfd_criu_bo_bucket> bos,
			       std::span<const BoShare> shares);
	int restore_render_node(RenderImage image, uint32_t id, bool *retry);
	void restore_gem(const RenderImage &image, uint32_t id, uint32_t actual, std::span<const GemEntry> objects,
			 std::span<const ContextState> contexts, int fd, int through);
	// A render node whose GPU cannot be mapped yet: the same id, if the kfd image confirms it.
	uint32_t provisional_render_gpu(const CriuRenderNode &msg, uint32_t id);
	int retry_placeholder();

	const Topology &local_topology();
	// Maps the GPUs of the image describing this task (computed once).
	const GpuMap &gpu_map(const CriuKfd &msg, const std::string &image);
	// Finds this task's kfd image when a render node comes first.
	const GpuMap *gpu_map_from_own_image();
	const GpuMap *gpu_map_from_render_images(uint32_t vpid);
	// Fails, naming them all, if any local GPU has no render node in this mount namespace.
	void require_render_nodes(const GpuMap &map);
	// A new render-node file of a local GPU (found by its device number), above the task's fds.
	unique_fd open_render_node(uint32_t actual_gpu_id);
	// The render-node file of a GPU shared by KFD (its VM), the task's render fds and its mappings.
	int render_fd(uint32_t actual_gpu_id);
	int fd_floor(uint32_t vpid);
	// Closes the render fds of local GPUs the task does not use (KFD holds their files now).
	void close_unused_render_fds(const GpuMap &map);
	// Once per task, when its files are all in place: its own fds take over from the plugin's.
	void hand_render_files_to_task();
	// The fd through which a GPU's BOs are mapped: the task's own, or the plugin's.
	int mapping_fd(uint32_t actual_gpu_id);

	const Options &options_;
	ImageDir image_dir_;
	const RestoreGuard *guard_;
	bool enlisted_ = false;
	std::filesystem::path topology_dir_;
	GpuDriver &driver_;
	ContentCopier &copier_;
	pid_t owner_;
	std::optional<Topology> local_;
	std::optional<GpuMap> map_;
	bool searched_own_image_ = false;
	bool map_from_render_images_ = false;
	std::map<uint32_t, RenderImage> retried_render_; // by file id: read, set aside for a retry
	std::map<uint32_t, uint32_t> provisional_gpus_;	 // image gpu_id -> local, to confirm
	unique_fd placeholder_;				 // what a retried file returns
	int fd_floor_ = -1;
	std::map<uint32_t, unique_fd> render_fds_; // the plugin's, by actual gpu_id
	std::map<uint32_t, int> task_render_fds_;  // the task's own, sharing the same files
	bool handed_over_ = false;
	std::vector<VmaUpdate> vmas_;
	std::set<uint32_t> gem_filled_;	   // GPUs whose render_fd() got GEM objects of an image
	std::vector<unique_fd> gem_files_; // the plugin's fds of other render-node files with objects
	bool kfd_restored_ = false;
	std::map<uint64_t, unique_fd> kfd_buffers_; // by address: dma-bufs of the restored KFD buffers
};

// RESUME_DEVICES_LATE, before resume_gpu_process(): waits for the GPU copy the task handed to the
// guard and logs what the guard said of it. A copy that failed, or a guard that cannot say, kills
// the task (criu goes on whatever the hook returns, in every version) and throws Error.
void join_gpu_copy(int pid, RestoreGuard &guard);

// RESUME_DEVICES_LATE: restarts the queues of a restored task, from the criu main process.
// Returns 0, or -ENOTSUP when the task has no GPU state.
int resume_gpu_process(int pid, GpuDriver &driver = system_gpu_driver());

} // namespace amdgpu
