// SPDX-License-Identifier: GPL-2.0-only
//
// Checkpoint of GPU processes, in the criu process that dumps (stage DUMP).
//
// For each /dev/kfd file criu hands over, the process's queues are paused (PROCESS_INFO), its
// state is taken (CHECKPOINT) and written as amdgpu-kfd-<id>.img with the topology of the GPUs the
// process can use, its BO contents as one amdgpu-pages-<id>-<gpu>.img per GPU, and the checksums
// of both as amdgpu-sums-<id>.img (image_checksums.hpp); given criu's `parent` chain, blocks of
// GPU memory an earlier checkpoint holds are not written again (image_chain.hpp). The queues stay
// paused until the whole dump is over, so that no GPU write can race criu's copy of host memory;
// finish() then resumes them on every path where the task lives on (--leave-running, a failure
// here or anywhere later in criu). While they are paused a guard process (dump_guard.hpp) stands
// ready to resume them should criu die.
//
// Where the GPU copy runs (copy_overlap.hpp). The contents cannot change once the queues are
// paused, and criu hands over a task's files before it dumps the task's memory: so the copy of a
// process's GPU memory can start at its /dev/kfd file and run beside criu's dump of host memory,
// in a thread of the plugin's own (copy_worker.hpp). It must be joined where a failed copy still
// fails the dump: only criu 4.3 calls a hook after the memory dump whose failure fails the dump
// (DUMP_DEVICES_LATE, join_copies()). Under older criu, through criu's image streamer (whose
// images must come in the order the restore reads them), or with KFD_OVERLAP_COPY=0, the copy
// runs within the file's hook, in series with criu's work. A copy that fails beside criu removes
// the images of its process and fails join_copies(); a dump that fails before the join waits
// for the copies in finish(), removes their images, and only then resumes the queues. Render-node files become
// amdgpu-renderD-<id>.img naming their GPU and their GEM objects (render/gem_dump.hpp), whose
// memory goes to amdgpu-pages-<id>-<gpu>.img and amdgpu-sums-<id>.img as a kfd file's does, beside
// criu or in series by the same rule (the task is frozen, and its objects idle, until criu is done).
//
// GPU memory shared between processes (shared_buffers.hpp). criu 4.1 and newer let the session
// look at every task of the tree before anything is written (CHECKPOINT_DEVICES, after criu froze
// the tree): there the session pauses and checkpoints each task's KFD files at once, and knows
// every sharing before the first image. A buffer that several processes of the tree hold is then
// saved once: one holder's image says it restores the buffer and its pages hold the contents, the
// others' say they take it from that holder (restore_session.hpp), and their pages have no place
// for it.
// A dma-buf fd a task holds of such a buffer is saved as the buffer's number (amdgpu-dmabuf_<id>).
// What cannot be restored shared is refused before anything is written, and the processes run
// on: a dma-buf fd of memory no process of the dump holds, VRAM imported from outside the dump,
// a buffer two holders map into their memory, and any sharing under older criu, which hands the files one by one, so
// that sharing shows only when the second holder comes, after the first one's image was written as a buffer of its own.
#pragma once

#include "copy/bo_transfer.hpp"
#include "copy/copy_worker.hpp"
#include "guard/dump_guard.hpp"
#include "driver/gpu_driver.hpp"
#include "images/image_chain.hpp"
#include "images/image_checksums.hpp"
#include "images/image_store.hpp"
#include "driver/kfd_ioctl.hpp"
#include "images/metadata_images.hpp"
#include "sessions/options.hpp"
#include "render/gem_dump.hpp"
#include "sessions/shared_buffers.hpp"
#include "driver/task_fds.hpp"
#include "topology/topology.hpp"
#include "support/unique_fd.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

class DumpSession {
public:
	// `driver` and `copier` stand for the kernel and the GPUs' copy engines (host tests fake them).
	DumpSession(const Options &options, ImageDir image_dir, std::filesystem::path topology_dir,
		    GpuDriver &driver = system_gpu_driver(), ContentCopier &copier = sdma_copier());
	~DumpSession();
	DumpSession(const DumpSession &) = delete;
	DumpSession &operator=(const DumpSession &) = delete;

	// criu 4.1+: task `pid` (criu's pid namespace) of the frozen tree, before anything is dumped.
	// Its KFD files (taken from its fd table) are paused and checkpointed now; dump_kfd() writes
	// them later. Throws Error for GPU memory shared in a way a restore could not keep.
	void checkpoint_task(pid_t pid, TaskGpuFiles files);
	// criu 4.1+: every task went through checkpoint_task(); judges what only the whole tree
	// tells (VRAM imported from outside it). Called by the first hook after them; idempotent.
	void close_census();

	void dump_kfd(int fd, uint32_t id);
	// A render-node file of a task, `fd` criu's copy of it, with its GEM objects
	// (render/gem_dump.hpp). Throws Error for one it cannot save.
	void dump_render_node(int fd, uint32_t id, unsigned int minor);
	// A dma-buf fd a task holds: saved as the shared buffer it is of (criu 4.1+), else refused.
	void dump_dmabuf(int fd, uint32_t id);
	// Whether a process with KFD state was met: the dma-buf fds of such a dump are the plugin's.
	bool met_gpu_process() const { return !paused_.empty(); }

	// Whether criu calls join_copies() after its memory dump (criu 4.3's DUMP_DEVICES_LATE);
	// `criu_era` names the criu in the log when it does not.
	void plan_copies(bool criu_joins, std::string criu_era);
	// After criu dumped every task's memory: waits for the copies begun beside it, logs how much
	// of them was hidden, and throws Error for the first that failed (its images are gone).
	void join_copies();

	// Resumes the queues of every process this session paused. Safe to call more than once;
	// failures are logged (there is nobody left to return them to). In any process but the one
	// that made the session it only lets go: criu forks helpers (one per namespace it dumps)
	// whose exit() destroys their copy of the session, and a helper must never run the queues
	// while criu still dumps the tasks' memory.
	void finish();

private:
	std::optional<KfdBufferRef> kfd_buffer_of(int dmabuf, const std::optional<TaskFd> &held);
	void refuse_render_before_kfd(pid_t pid, const std::string &file, size_t own);
	void refuse_shared_gem_objects(std::span<const GemObjectState> objects, const std::string &file,
				       unsigned int minor);
	void save_gem_contents(uint32_t id, uint32_t pid, uint32_t gpu_id, uint32_t user_gpu,
			       std::span<GemObjectState> objects, const Digest &image_digest);
	// What KFD CHECKPOINT gave for one process; the dma-buf fds it installed are owned here.
	struct Checkpoint {
		kfd::ProcessInfo info;
		std::vector<kfd_criu_device_bucket> devices;
		std::vector<kfd_criu_bo_bucket> bos;
		std::vector<uint8_t> priv;
		std::vector<unique_fd> dmabufs;
		std::optional<kfd::RuntimeInfo> runtime; // unknown before KFD 1.13
	};

	struct PausedProcess {
		unique_fd fd;			 // our dup of the task's /dev/kfd file
		uint32_t pid = 0;		 // in the task's pid namespace
		pid_t host_pid = 0;		 // in criu's, when found (what the guard knows it by)
		std::optional<Checkpoint> taken; // by checkpoint_task(), until dump_kfd() writes it
		pid_t taken_for = 0;		 // the task checkpoint_task() took it from
	};

	DumpGuard &guard();
	const Topology &local_topology();
	void check_kfd_version();
	// The steps of dump_kfd, in order.
	// `file` names the file in messages; `host_pid` is the task when known (else it is looked for).
	PausedProcess &pause(int task_fd, const std::string &file, std::optional<pid_t> host_pid,
			     kfd::ProcessInfo &info);
	void refuse_secondary_contexts(pid_t pid);
	pid_t watch_task(int kfd_fd, const std::string &file, std::optional<pid_t> host_pid);
	Checkpoint checkpoint(int kfd_fd, const kfd::ProcessInfo &info, pid_t host_pid);
	// How the process registered ROCm's runtime with KFD; refuses one a restore cannot repeat.
	std::optional<kfd::RuntimeInfo> runtime_of(pid_t host_pid, uint32_t pid);
	// Adds the process's VRAM/GTT buckets and its VRAM charge to the census; refuses sharing.
	void count_buffers(pid_t host_pid, const Checkpoint &cp);
	void refuse_shared_buffers() const;
	void refuse_imports(pid_t pid) const;
	// How each BO of `cp` is shared (none: nothing of it is).
	std::vector<BoShare> shares_of(pid_t host_pid, const Checkpoint &cp);
	std::map<uint32_t, uint32_t> user_gpu_ids(const Checkpoint &cp);
	// Both return the sums of what they wrote (image_checksums.hpp).
	Digest write_kfd_image(uint32_t id, const Checkpoint &cp, const std::map<uint32_t, uint32_t> &actual_to_user,
			       std::span<const BoShare> shares);
	std::vector<GpuCopyJob> copy_jobs(const Checkpoint &cp, std::span<const BoShare> shares);
	std::vector<PagesSums> save_contents(uint32_t id, uint32_t pid, std::span<const GpuCopyJob> jobs);
	// Writes the pages and the sums: here, or beside criu. `cp` goes when the copy is done.
	// `keep` holds what the jobs read through (a checkpoint's dma-bufs) until the copy is done.
	void copy_contents(uint32_t id, uint32_t pid, std::vector<uint32_t> gpus, std::shared_ptr<const void> keep,
			   std::vector<GpuCopyJob> jobs, ImageSums sums);
	bool copy_beside_criu() const { return !in_series_because_; }
	const ImageChain &chain();
	void remove_images(uint32_t id, std::span<const uint32_t> image_gpus);
	static std::vector<uint32_t> image_gpus(const Checkpoint &cp);
	int render_fd(uint32_t gpu_id);
	void resume(PausedProcess &p);

	const Options &options_;
	ImageDir image_dir_;
	std::filesystem::path topology_dir_;
	GpuDriver &driver_;
	ContentCopier &copier_;
	std::optional<Topology> topology_;
	std::optional<DumpGuard> guard_;
	std::vector<PausedProcess> paused_;
	std::map<uint32_t, unique_fd> render_fds_; // by gpu_id, for the copy engine
	// actual gpu_id -> the gpu_id the dumped processes know it by (they differ after a migration).
	std::map<uint32_t, uint32_t> user_gpu_ids_;
	std::optional<ImageChain> chain_; // earlier checkpoints (image_chain.hpp)
	SharedBufferCensus census_;
	std::map<BufferKey, std::string> gem_objects_seen_; // the render-node files' own objects, named
	bool census_closed_ = false;
	bool warned_uncharged_ = false;
	bool tree_seen_first_ = false; // checkpoint_task() came before the files (criu 4.1+)
	bool version_checked_ = false;
	kfd::Version kfd_version_;
	pid_t owner_; // the criu process that pauses and resumes
	// Why the copy runs in series (copy_overlap.hpp); none: beside criu, joined by join_copies().
	std::optional<std::string> in_series_because_ = "criu calls no hook after its memory dump";
	double series_copy_seconds_ = 0;
	// The images of copies begun beside criu and not joined yet: (kfd id, the GPUs' image ids).
	std::vector<std::pair<uint32_t, std::vector<uint32_t>>> unjoined_;
	// Last: destroyed (joined) before anything its copies use.
	std::optional<CopyWorker> worker_;
};

} // namespace amdgpu
