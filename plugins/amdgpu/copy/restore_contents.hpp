// SPDX-License-Identifier: GPL-2.0-only
//
// The contents of one kfd image's BOs put back and checked: each GPU's pages image copied into
// the BOs KFD RESTORE made (bo_transfer.hpp), blocks that an incremental dump left to earlier
// checkpoints read from criu's `parent` chain (image_chain.hpp), and every block read back checked
// against the dump's sums (image_checksums.hpp) before the task's queues may run.
//
// Two places do it, through the same functions: the restored task itself, in criu's restore hook
// (in series with criu's own work: through criu's image streamer, without a restore guard, or with
// KFD_OVERLAP_COPY=0), and the restore guard (restore_guard.hpp), to which the task hands the BOs'
// dma-bufs so that the copy runs beside criu's restore of the task's host memory. The guard reads
// the kfd image and its sums from the image directory itself and rebuilds the copy from them and
// from what the task handed over (restore_handed_contents()); it trusts nothing else of the task.
//
// Nothing here logs: what criu's log is to say comes back as lines, which the caller logs where
// criu's log is (the guard has none: criu's main process logs them when it joins the copy).
#pragma once

#include "copy/bo_transfer.hpp"
#include "driver/gpu_driver.hpp"
#include "images/image_checksums.hpp"
#include "images/image_store.hpp"
#include "support/log.hpp"
#include "images/metadata_images.hpp"
#include "topology/topology.hpp"
#include "support/unique_fd.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

// One line for criu's log.
struct LogLine {
	LogLevel level = LogLevel::info;
	std::string text;
};

// What a GPU's copy read back, block by block (image_checksums.hpp).
struct GpuContents {
	uint32_t image_gpu_id = 0;
	std::vector<uint64_t> sizes; // of the BOs of its pages image
	std::vector<uint64_t> addrs;
	std::vector<BlockSum> restored;
};

// The copy of one kfd image's contents into the BOs KFD RESTORE made.
struct ContentsCopy {
	const Topology &local;
	const ImageDir &image_dir;
	uint32_t kfd_id = 0;
	uint32_t pid = 0;			     // the pid the kfd image names, for the log
	const std::map<uint32_t, uint32_t> &gpu_ids; // image gpu_id -> local
	std::span<const kfd_criu_bo_bucket> bos;     // in image order, with KFD RESTORE's dma-buf fds
	std::vector<bool> elsewhere;		     // per bucket: a buffer another task restores
	// A render-node file of its own for a local GPU's copy (its mappings must not meet the task's).
	std::function<unique_fd(uint32_t local_gpu_id)> open_render_node;
	ContentCopier &copier;
	uint64_t max_buffer_size = 0;
};

// The copy alone. `sums` (read before the copy, from files) say which blocks come from earlier
// checkpoints; through a stream they come after the pages and are given to check_contents().
std::vector<GpuContents> copy_contents(const ContentsCopy &copy, const std::optional<ImageSums> &sums,
				       std::vector<LogLine> &log);
// Every block read back against the sums: throws Error(-EBADMSG) naming the first damage; no
// sums is a warning (images written without them restore unverified).
void check_contents(uint32_t kfd_id, uint32_t pid, const std::optional<ImageSums> &sums,
		    std::span<const GpuContents> contents, std::vector<LogLine> &log);
// Both, for images read from files: the lines for criu's log, or Error.
std::vector<LogLine> restore_contents_of(const ContentsCopy &copy, const std::optional<ImageSums> &sums);

// The sums image of kfd image `kfd_id`, if there is one, the kfd image's payload checked against it
// (or that of `image`, the render-node image of the same id, when named).
std::optional<ImageSums> read_checked_sums(const ImageDir &dir, uint32_t kfd_id, std::span<const uint8_t> kfd_payload,
					   const std::string &image = {});

// What a task hands to the restore guard for its copy.
struct HandedContents {
	uint32_t kfd_id = 0;
	std::map<uint32_t, uint32_t> gpu_ids; // image gpu_id -> local, the task's GPU map
	std::vector<unique_fd> dmabufs;	      // per bucket of the kfd image; empty: none handed
	uint64_t max_buffer_size = 0;
};

// What the guard copies with (host tests give a fake driver and copier).
struct CopyResources {
	std::filesystem::path topology_dir = std::string(kDefaultTopologyDir);
	GpuDriver *driver = nullptr;	 // null: the system's
	ContentCopier *copier = nullptr; // null: the SDMA engines
};

// In the restore guard: reads kfd image `handed.kfd_id` and its sums from `dir`, checks them as
// the task did, and restore_contents_of() it into the handed dma-bufs (or, where the id is a
// render-node file's, that image and the dma-bufs of its objects with contents, in image order);
// render nodes are opened in the guard's own mount namespace. The lines for criu's log, or Error.
std::vector<LogLine> restore_handed_contents(const ImageDir &dir, const HandedContents &handed,
					     const CopyResources &resources);

} // namespace amdgpu
