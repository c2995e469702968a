// SPDX-License-Identifier: GPL-2.0-only
//
// Moving BO contents between VRAM/GTT and the pages images, through each GPU's copy engine (on a
// node its SDMA engine: copy_engine.hpp).
//
// One worker thread per GPU; GPUs run in parallel (through criu's image streamer their images
// still pass one after another, in GPU id order: see ImageTurns). Within a GPU a ring of staging
// buffers, given to the engine once, keeps the engine, the host and the image busy at once: half
// the ring is the engine's, filling buffers (dump) or emptying them (restore), while the other half
// is written to the image or read from it by a pool of threads the copy's GPUs share (io_pool.hpp),
// so that a GPU's image moves at more than one core's rate; the worker sums each buffer between
// the two. Through a stream the worker writes and reads in order itself. Host memory is the ring,
// bounded by KFD_MAX_BUFFER_SIZE per GPU, whatever the size of a BO or of VRAM. Zeros
// are neither written nor read: holes in the image, filled by the engine (sparse_pages.hpp). Every
// block of a GPU's pages is summed as it passes through staging (image_checksums.hpp): the dump's
// sums go to the sums image, the restore's are checked against them. Given the images of earlier
// checkpoints (image_chain.hpp), a dump leaves out the blocks they hold and a restore reads those
// from them (pages_blocks.hpp).
#pragma once

#include "copy/copy_engine.hpp"
#include "images/image_chain.hpp"
#include "images/image_checksums.hpp"
#include "images/image_store.hpp"
#include "driver/kfd_ioctl.hpp"
#include "topology/topology.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

struct GpuCopyJob {
	uint32_t image_gpu_id = 0;   // names amdgpu-pages-<id>-<gpu>.img (the id the process knows)
	uint32_t gpu_id = 0;	     // the local GPU doing the copy
	int render_fd = -1;	     // a render-node fd of that GPU (borrowed)
	int numa_node = -1;	     // where the staging memory goes; -1 = anywhere
	std::vector<int> dmabuf_fds; // borrowed; same order as sizes, the image order
	std::vector<uint64_t> sizes;
	std::vector<uint64_t> addrs; // the BOs' addresses in the process, for messages
	// The earlier checkpoints (may be null). Dumping: blocks they hold are left out. Restoring:
	// `sums` (the dump's sums of this GPU) say which blocks are read from them.
	const ImageChain *chain = nullptr;
	const PagesSums *sums = nullptr;
};

enum class CopyDirection {
	to_image,   // dump
	from_image, // restore
};

struct CopyStats {
	CopyDirection direction = CopyDirection::to_image;
	uint32_t gpu_id = 0;
	uint64_t bytes = 0;	 // logical: the BOs' contents
	uint64_t io_bytes = 0;	 // written to or read from the image
	uint64_t zero_bytes = 0; // left as holes (dump) or filled by the engine (restore)
	double seconds = 0;
	double setup_seconds = 0; // device, plan and queue, before the first chunk
	uint64_t staging_bytes = 0;
	uint64_t chain_bytes = 0; // left out of the image (dump) or read from the chain (restore)
	double sum_seconds = 0;	  // of `seconds`, spent summing the blocks (image_checksums.hpp)
	double io_seconds = 0;	  // of `seconds`, in the kernel writing or reading the images
	// The sums of the bytes that passed (block_grid(job.sizes)); dumping, of the image written.
	PagesSums sums;
};

// The copy job of one GPU: its VRAM/GTT BOs among the KFD's buckets (which name GPUs by the id
// the process knows, `image_gpu_id`), in bucket order, the order of the pages image; staging on
// the GPU's NUMA node. `elsewhere` (per bucket, or empty) marks the BOs whose bytes another
// process's image holds (a buffer processes share): they have no place in this one. The caller adds a render fd when
// the job has BOs. Throws Error(-EINVAL) for a BO the KFD gave no dma-buf for.
GpuCopyJob copy_job(const Topology &topology, uint32_t image_gpu_id, uint32_t gpu_id,
		    std::span<const kfd_criu_bo_bucket> bos, const std::vector<bool> &elsewhere = {});

// The NUMA node of the CPU a GPU is attached to (its first valid PCIe link to a CPU node), or -1.
int numa_node_of(const Topology &topology, uint32_t gpu_id);

// One log line's worth: "GPU 0x4f1e: 1024.0 MiB in 1.250 s (859 MB/s), 204.8 MiB written,
// 819.2 MiB of zeros left as holes, 64.0 MiB staging, setup 0.004 s, image I/O 0.080 s,
// checksums 0.041 s"
// (restoring: read, zeros filled by the engine), then what earlier checkpoints hold: ", 512.0 MiB
// unchanged, left to earlier checkpoints" (restoring: read from).
std::string describe(const CopyStats &stats);

// Runs one worker per job, each driving the engine `engines` opens for its GPU. After every
// worker has stopped, throws the first failure of a GPU's own (a GPU stopped because another
// failed says only -ECANCELED).
std::vector<CopyStats> copy_bo_contents(CopyDirection direction, std::span<const GpuCopyJob> jobs,
					const ImageDir &image_dir, uint32_t kfd_id, uint64_t max_buffer_size,
					CopyEngines &engines);

// The copy as the dump and restore sessions see it, so that a host test can stand in for the GPUs.
class ContentCopier {
public:
	virtual ~ContentCopier() = default;
	virtual std::vector<CopyStats> copy(CopyDirection direction, std::span<const GpuCopyJob> jobs,
					    const ImageDir &image_dir, uint32_t kfd_id, uint64_t max_buffer_size) = 0;
};

// copy_bo_contents() through the engines of `engines`.
class EngineCopier final : public ContentCopier {
public:
	explicit EngineCopier(CopyEngines &engines) : engines_(engines) {}
	std::vector<CopyStats> copy(CopyDirection direction, std::span<const GpuCopyJob> jobs,
				    const ImageDir &image_dir, uint32_t kfd_id, uint64_t max_buffer_size) override;

private:
	CopyEngines &engines_;
};

// copy_bo_contents(), through each GPU's SDMA engine (sdma_engine.hpp).
ContentCopier &sdma_copier();

} // namespace amdgpu
