// SPDX-License-Identifier: GPL-2.0-only
#include "copy/bo_transfer.hpp"

#include "copy/io_pool.hpp"
#include "copy/sdma_engine.hpp"
#include "support/error.hpp"
#include "images/image_store.hpp"
#include "support/log.hpp"
#include "support/plugin_thread.hpp"
#include "images/pages_blocks.hpp"
#include "copy/staging_memory.hpp"
#include "copy/transfer_plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

namespace amdgpu {

namespace {

// How long a chunk may take before the engine counts as hung and criu fails, rather than wait
// forever with the task's queues paused: 2 s plus the chunk at 4 MB/s, a floor a thousand times
// below a real SDMA engine and four below the slowest the test bed runs at (8 MiB: 4.1 s).
constexpr uint64_t kHungEngineFloorBytesPerSec = 4'000'000;
constexpr uint64_t kHungEngineGraceNs = 2'000'000'000;
constexpr size_t kMaxPiecesPerChunk = 1024;

uint64_t engine_timeout_ns(uint64_t bytes)
{
	return kHungEngineGraceNs + bytes * 1'000'000'000 / kHungEngineFloorBytesPerSec;
}

// One staging buffer of the ring: the engine's staging buffer number `index`, given to it once,
// not per chunk.
struct Slot {
	Slot(size_t index, uint64_t size, int numa_node, IoPool &pool) : index(index), memory(size, numa_node), io(pool)
	{
	}

	size_t index;
	StagingMemory memory;
	IoBatch io;		     // the image reads into or writes from `memory` in flight (dies first, waiting)
	std::optional<size_t> chunk; // the chunk in the engine
	uint64_t batch = 0;
	uint64_t written_to = 0; // dumping: the image's payload up to the end of the writes in `io`

	// Restoring: the chunk read (or being read) into the slot, what the engine does with it, and
	// the parts of it to sum, in payload order.
	struct Sum {
		uint64_t slot_offset;
		uint64_t len;
		bool zero;
	};
	std::optional<size_t> prepared;
	std::vector<EngineOp> ops;
	std::vector<Sum> sums;
	std::vector<std::pair<const ImageReader *, uint64_t>> read_to; // each image, read up to
};

// Through the image streamer the pages images pass one after another, each in one go. The workers
// take turns at their image, in the order of their GPUs' ids in the image (the order restore
// reads them back, whatever the order of the devices): a worker waits for its turn before it opens
// its image and passes the turn on once the image is complete. Meanwhile the others set up their
// GPU and, dumping, let the engine fill their staging ring. Without a stream every turn is free.
class ImageTurns {
public:
	ImageTurns(bool ordered, std::span<const GpuCopyJob> jobs, const std::atomic<bool> &cancel)
	    : ordered_(ordered), rank_(jobs.size()), cancel_(cancel)
	{
		std::vector<size_t> order(jobs.size());
		std::iota(order.begin(), order.end(), 0);
		std::stable_sort(order.begin(), order.end(),
				 [&](size_t a, size_t b) { return jobs[a].image_gpu_id < jobs[b].image_gpu_id; });
		for (size_t pos = 0; pos < order.size(); pos++)
			rank_[order[pos]] = pos;
	}

	void wait(size_t job)
	{
		if (!ordered_)
			return;
		std::unique_lock lock(mutex_);
		changed_.wait(lock, [&] { return current_ == rank_[job] || cancel_.load(); });
		if (current_ != rank_[job])
			fail(-ECANCELED, "copy stopped after another GPU failed");
	}

	void pass(size_t job)
	{
		if (!ordered_)
			return;
		{
			std::lock_guard lock(mutex_);
			if (current_ != rank_[job])
				return;
			current_++;
		}
		changed_.notify_all();
	}

	// After `cancel` was set: wakes every waiter.
	void wake_all()
	{
		{
			std::lock_guard lock(mutex_);
		}
		changed_.notify_all();
	}

private:
	bool ordered_;
	std::vector<size_t> rank_; // job -> its place in line
	const std::atomic<bool> &cancel_;
	std::mutex mutex_;
	std::condition_variable changed_;
	size_t current_ = 0;
};

class GpuWorker {
public:
	GpuWorker(CopyDirection dir, const GpuCopyJob &job, size_t job_index, const ImageDir &image_dir,
		  uint32_t kfd_id, uint64_t budget, const std::atomic<bool> &cancel, ImageTurns &turns,
		  CopyEngines &engines, IoPool &pool)
	    : dir_(dir), job_(job), job_index_(job_index), image_dir_(image_dir), kfd_id_(kfd_id), budget_(budget),
	      cancel_(cancel), turns_(turns), engines_(engines), pool_(pool)
	{
	}

	CopyStats run();

private:
	struct Ring {
		uint64_t slot_size = 0;
		size_t slots = 0; // never more than the chunks
	};

	void take_empty_image(); // restoring a GPU without BOs
	Ring set_up();
	Slot &slot_for(size_t chunk_index, const Ring &ring); // made when first needed
	void dump_chunks(const Ring &ring);
	void restore_chunks(const Ring &ring);
	void drain() noexcept;
	void check_cancel() const;
	// Dumping: the engine fills the slot with a chunk; then, once it has, the chunk is summed and
	// its writes posted.
	void submit(Slot &slot, size_t chunk_index);
	void take_from_engine(Slot &slot);
	// Restoring: a chunk's reads are posted into the slot (the engine done with its last one);
	// then, once they are done, it is summed and handed to the engine.
	void complete(Slot &slot);
	void prepare(Slot &slot, size_t chunk_index);
	void read_piece(Slot &slot, const TransferChunk &c, const TransferPiece &p);
	void read_into(Slot &slot, const ImageReader &image, uint64_t image_offset, uint64_t slot_offset, uint64_t len);
	void launch(Slot &slot);
	ImageWriter &writer(); // opened at its turn
	ImageReader &reader(); // opened at its turn
	void finish_image();   // closes the image and passes the turn on

	CopyDirection dir_;
	const GpuCopyJob &job_;
	size_t job_index_;
	const ImageDir &image_dir_;
	uint32_t kfd_id_;
	uint64_t budget_;
	const std::atomic<bool> &cancel_;
	ImageTurns &turns_;
	CopyEngines &engines_;
	IoPool &pool_;
	uint64_t total_ = 0;
	uint64_t io_bytes_ = 0;
	uint64_t zero_bytes_ = 0;
	HoleMap holes_;			      // restoring: the image's
	std::optional<PagesSink> sink_;	      // dumping
	std::optional<BlockSummer> summer_;   // restoring
	std::optional<ChainedPages> chained_; // restoring an image that takes blocks from the chain
	uint64_t chain_bytes_ = 0;
	double io_seconds_ = 0;

	std::vector<TransferChunk> plan_;
	// Members die in reverse: the staging memory outlives the engine that reaches it.
	std::vector<std::unique_ptr<Slot>> slots_;
	std::unique_ptr<CopyEngine> engine_;
	std::optional<ImageWriter> writer_;
	std::optional<ImageReader> reader_;
	size_t max_ops_ = 0; // of a chunk
};

void GpuWorker::complete(Slot &slot)
{
	if (!slot.chunk)
		return;
	engine_->wait(slot.batch, engine_timeout_ns(plan_[*slot.chunk].len));
	slot.chunk.reset();
}

void GpuWorker::take_from_engine(Slot &slot)
{
	const size_t chunk = *slot.chunk;
	complete(slot);
	sink_->put({ slot.memory.data(), static_cast<size_t>(plan_[chunk].len) }, writer(), &slot.io);
	slot.written_to = writer_->written();
}

ImageWriter &GpuWorker::writer()
{
	if (!writer_) {
		turns_.wait(job_index_);
		// leaving blocks out, the image is as long as the blocks the chain lacks
		const bool incremental = job_.chain && !job_.chain->empty();
		writer_.emplace(image_dir_, pages_image_name(kfd_id_, job_.image_gpu_id), total_,
				incremental ? ImageWriter::Sizing::at_most : ImageWriter::Sizing::exact);
	}
	return *writer_;
}

ImageReader &GpuWorker::reader()
{
	if (!reader_) {
		turns_.wait(job_index_);
		const std::string name = pages_image_name(kfd_id_, job_.image_gpu_id);
		const uint64_t stored = chained_ ? job_.sums->stored_size : total_;
		reader_.emplace(image_dir_, name, stored);
		reader_->read_once();
		if (reader_->payload_size() != stored)
			fail(-EINVAL, "image %s holds %llu bytes, but the GPU 0x%04x BOs it restores need %llu",
			     name.c_str(), static_cast<unsigned long long>(reader_->payload_size()), job_.image_gpu_id,
			     static_cast<unsigned long long>(stored));
		if (!chained_)
			holes_ = reader_->holes();
	}
	return *reader_;
}

void GpuWorker::finish_image()
{
	if (dir_ == CopyDirection::to_image) {
		if (!sink_) // a GPU without BOs
			sink_.emplace(job_.image_gpu_id, job_.sizes, job_.chain);
		writer().finish();
		io_seconds_ = writer_->io_seconds();
		io_bytes_ = writer_->stored();
		zero_bytes_ = writer_->holes();
	}
	if (reader_)
		io_seconds_ += reader_->io_seconds();
	reader_.reset();
	turns_.pass(job_index_);
}

void GpuWorker::submit(Slot &slot, size_t chunk_index)
{
	const TransferChunk &c = plan_[chunk_index];
	slot.ops.clear();
	for (const TransferPiece &p : c.pieces)
		slot.ops.push_back({ EngineOp::Kind::to_staging, p.bo, p.bo_offset, p.slot_offset, p.len });
	slot.batch = engine_->submit(slot.index, slot.ops);
	slot.chunk = chunk_index;
}

// The image's bytes of a restore chunk are read into the slot (by the pool, from a regular file;
// a stream is read here, in order), its holes and zero blocks filled by the engine.
void GpuWorker::prepare(Slot &slot, size_t chunk_index)
{
	const TransferChunk &c = plan_[chunk_index];
	slot.ops.clear();
	slot.sums.clear();
	slot.read_to.clear();
	for (const TransferPiece &p : c.pieces)
		read_piece(slot, c, p);
	if (slot.ops.size() > max_ops_)
		fail(-EOVERFLOW, "GPU 0x%04x: a chunk of %zu engine operations exceeds the %zu planned", job_.gpu_id,
		     slot.ops.size(), max_ops_);
	slot.prepared = chunk_index;
}

void GpuWorker::read_into(Slot &slot, const ImageReader &image, uint64_t image_offset, uint64_t slot_offset,
			  uint64_t len)
{
	const std::span<uint8_t> bytes { slot.memory.data() + slot_offset, static_cast<size_t>(len) };
	if (!image.positional()) {
		// a stream: read here, in order; one that leaves blocks to the chain is refused there
		if (chained_)
			image.read_at(image_offset, bytes);
		else
			reader_->read(bytes);
		return;
	}
	slot.io.post([&image, image_offset, bytes] { image.read_at(image_offset, bytes); });
	auto at = std::find_if(slot.read_to.begin(), slot.read_to.end(),
			       [&](const auto &r) { return r.first == &image; });
	if (at == slot.read_to.end())
		slot.read_to.emplace_back(&image, image_offset + len);
	else
		at->second = std::max(at->second, image_offset + len);
}

// One piece of a restore chunk: data read into the slot and copied by the engine, holes and zero
// blocks filled by it.
void GpuWorker::read_piece(Slot &slot, const TransferChunk &c, const TransferPiece &p)
{
	const uint64_t at = c.image_offset + p.slot_offset;
	reader(); // opened at its turn, which finds its holes
	auto zeros = [&](uint64_t d, uint64_t len) {
		slot.ops.push_back({ EngineOp::Kind::zero_fill, p.bo, p.bo_offset + d, 0, len });
		slot.sums.push_back({ p.slot_offset + d, len, true });
		zero_bytes_ += len;
	};
	auto data = [&](uint64_t d, uint64_t len) {
		slot.ops.push_back({ EngineOp::Kind::from_staging, p.bo, p.bo_offset + d, p.slot_offset + d, len });
		slot.sums.push_back({ p.slot_offset + d, len, false });
	};
	if (chained_) {
		for (const ChainedPages::Piece &piece : chained_->split(at, p.len)) {
			const uint64_t d = piece.offset - at;
			if (piece.from == ChainedPages::From::zeros) {
				zeros(d, piece.len);
				continue;
			}
			const ChainedPages::Source from = chained_->source(piece, *reader_);
			read_into(slot, *from.image, from.offset, p.slot_offset + d, piece.len);
			data(d, piece.len);
			(piece.from == ChainedPages::From::chain ? chain_bytes_ : io_bytes_) += piece.len;
		}
		return;
	}
	// only a regular file has holes (a stream's map is empty), read in place: nothing to skip
	for (const Extent &e : holes_.split(at, p.len)) {
		const uint64_t d = e.offset - at;
		if (e.zero) {
			zeros(d, e.len);
		} else {
			read_into(slot, *reader_, e.offset, p.slot_offset + d, e.len);
			data(d, e.len);
			io_bytes_ += e.len;
		}
	}
}

// A restore chunk whose reads are done: summed in payload order, what was read leaves the page
// cache, and the engine takes it.
void GpuWorker::launch(Slot &slot)
{
	slot.io.wait();
	for (const Slot::Sum &part : slot.sums) {
		if (part.zero)
			summer_->add_zeros(part.len);
		else
			summer_->add({ slot.memory.data() + part.slot_offset, static_cast<size_t>(part.len) });
	}
	for (const auto &[image, to] : slot.read_to)
		image->drop_before(to);
	const size_t chunk = *slot.prepared;
	slot.prepared.reset();
	if (chunk + 1 == plan_.size())
		finish_image(); // read to the end: the next GPU's image may come
	slot.batch = engine_->submit(slot.index, slot.ops);
	slot.chunk = chunk;
}

// Nothing to read, and older writers may omit the file. A stream still carries the (empty) image in
// its place: take it in turn, or the next GPU's would never come.
void GpuWorker::take_empty_image()
{
	if (image_dir_.streamed()) {
		turns_.wait(job_index_);
		const std::string name = pages_image_name(kfd_id_, job_.image_gpu_id);
		if (const auto empty = ImageReader::open_if_exists(image_dir_, name, 0); empty && empty->payload_size())
			fail(-EINVAL, "image %s holds %llu bytes for a GPU with no BOs to restore", name.c_str(),
			     static_cast<unsigned long long>(empty->payload_size()));
	}
	turns_.pass(job_index_);
}

// The engine, the plan and the ring's shape.
GpuWorker::Ring GpuWorker::set_up()
{
	engine_ = engines_.open(job_);

	const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
	const StagingShape shape = staging_shape(budget_, total_, page);
	plan_ = plan_transfer(job_.sizes, shape.slot_size, kMaxPiecesPerChunk);
	// Restoring, every hole of a chunk (at least kMinFillBytes; a block of the chain, 1 MiB, is
	// longer) splits a piece's copy in two and adds a fill.
	const uint64_t max_holes = shape.slot_size / kMinFillBytes + 1;
	max_ops_ = kMaxPiecesPerChunk + 2 * max_holes;
	return { shape.slot_size, std::min<size_t>(shape.slots, plan_.size()) };
}

Slot &GpuWorker::slot_for(size_t chunk_index, const Ring &ring)
{
	// a slot is made (its memory given to the engine) when first needed, while the engine
	// already copies through the earlier ones
	if (slots_.size() < ring.slots && chunk_index == slots_.size()) {
		slots_.push_back(std::make_unique<Slot>(slots_.size(), ring.slot_size, job_.numa_node, pool_));
		const Slot &made = *slots_.back();
		engine_->add_staging({ made.memory.data(), made.memory.size() }, max_ops_);
	}
	return *slots_[chunk_index % ring.slots];
}

void GpuWorker::check_cancel() const
{
	if (cancel_.load(std::memory_order_relaxed))
		fail(-ECANCELED, "GPU 0x%04x: copy stopped after another GPU failed", job_.gpu_id);
}

// The engine works `lead` chunks ahead of the host: half the ring is the engine's, the other half
// holds chunks whose writes (dump) or reads (restore) run on the pool, so that engine, host and
// image all move at once.
size_t lead_of(size_t slots)
{
	return std::max<size_t>(1, slots / 2);
}

void GpuWorker::dump_chunks(const Ring &ring)
{
	const size_t lead = lead_of(ring.slots);
	for (size_t i = 0; i < plan_.size() + lead; i++) {
		check_cancel();
		if (i < plan_.size()) {
			Slot &slot = slot_for(i, ring);
			slot.io.wait(); // its last chunk is in the image, and so is every one before it
			if (writer_)
				writer_->written_before(slot.written_to);
			submit(slot, i);
		}
		if (i >= lead)
			take_from_engine(*slots_[(i - lead) % ring.slots]);
	}
	for (auto &slot : slots_)
		slot->io.wait();
}

void GpuWorker::restore_chunks(const Ring &ring)
{
	const size_t lead = lead_of(ring.slots);
	for (size_t i = 0; i < plan_.size() + lead; i++) {
		check_cancel();
		if (i < plan_.size()) {
			Slot &slot = slot_for(i, ring);
			complete(slot); // the engine is done with its last chunk
			prepare(slot, i);
		}
		if (i >= lead)
			launch(*slots_[(i - lead) % ring.slots]);
	}
	for (auto &slot : slots_)
		complete(*slot);
}

// After a failure: nothing may be freed while the pool or the engine still reads or writes it. The
// submissions still in flight share one deadline (a hung engine fails them all at once).
void GpuWorker::drain() noexcept
{
	for (auto &slot : slots_)
		slot->io.settle();
	const auto deadline =
		std::chrono::steady_clock::now() +
		std::chrono::nanoseconds(engine_timeout_ns(slots_.empty() ? 0 : slots_.front()->memory.size()));
	for (auto &slot : slots_) {
		if (!slot->chunk)
			continue;
		const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
			deadline - std::chrono::steady_clock::now());
		try {
			engine_->wait(slot->batch, std::max<int64_t>(left.count(), 0));
		} catch (...) {
		}
	}
}

CopyStats GpuWorker::run()
{
	const auto start = std::chrono::steady_clock::now();
	CopyStats stats;
	stats.direction = dir_;
	stats.gpu_id = job_.gpu_id;
	for (uint64_t s : job_.sizes)
		total_ += s;
	stats.bytes = total_;
	if (dir_ == CopyDirection::from_image && total_ == 0) {
		take_empty_image();
		return stats;
	}
	if (total_) {
		if (dir_ == CopyDirection::to_image) {
			sink_.emplace(job_.image_gpu_id, job_.sizes, job_.chain);
		} else {
			summer_.emplace(job_.sizes);
			if (job_.sums && !job_.sums->in_chain.empty())
				chained_.emplace(*job_.sums, *job_.chain, pages_image_name(kfd_id_, job_.image_gpu_id));
		}
		const Ring ring = set_up();
		stats.staging_bytes = ring.slots * ring.slot_size;
		stats.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
		try {
			if (dir_ == CopyDirection::to_image)
				dump_chunks(ring);
			else
				restore_chunks(ring);
		} catch (...) {
			drain();
			throw;
		}
	}
	if (dir_ == CopyDirection::to_image)
		finish_image(); // every GPU has a pages image, empty or not, as upstream writes them
	stats.io_bytes = io_bytes_;
	stats.zero_bytes = zero_bytes_;
	stats.io_seconds = io_seconds_ + (chained_ ? chained_->io_seconds() : 0);
	if (dir_ == CopyDirection::to_image) {
		stats.sum_seconds = sink_->sum_seconds();
		stats.sums = sink_->finish(*writer_);
		stats.chain_bytes = sink_->chain_bytes();
	} else {
		stats.sums.gpu_id = job_.image_gpu_id;
		stats.sums.bo_sizes = job_.sizes;
		stats.chain_bytes = chain_bytes_;
		if (summer_) {
			stats.sum_seconds = summer_->seconds();
			stats.sums.blocks = summer_->take_sums();
		}
	}
	stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	return stats;
}

bool is_cancellation(const std::exception_ptr &error)
{
	try {
		std::rethrow_exception(error);
	} catch (const Error &e) {
		return e.err() == -ECANCELED;
	} catch (...) {
		return false;
	}
}

// The error criu receives: the first GPU that failed of itself, never one that only stopped
// because another had failed (its -ECANCELED names no cause). The other real failures are logged
// here, or they would be lost.
std::exception_ptr first_cause(std::span<const std::exception_ptr> errors, std::span<const GpuCopyJob> jobs)
{
	std::exception_ptr cause;
	for (size_t i = 0; i < errors.size(); i++) {
		if (!errors[i] || is_cancellation(errors[i]))
			continue;
		if (!cause) {
			cause = errors[i];
			continue;
		}
		try {
			std::rethrow_exception(errors[i]);
		} catch (const Error &e) {
			pr_err("%s", e.what());
		} catch (const std::exception &e) {
			pr_err("GPU 0x%04x copy: %s", jobs[i].gpu_id, e.what());
		} catch (...) {
			pr_err("GPU 0x%04x copy: unexpected error", jobs[i].gpu_id);
		}
	}
	if (cause)
		return cause;
	for (const std::exception_ptr &e : errors)
		if (e)
			return e;
	return nullptr;
}

} // namespace

GpuCopyJob copy_job(const Topology &topology, uint32_t image_gpu_id, uint32_t gpu_id,
		    std::span<const kfd_criu_bo_bucket> bos, const std::vector<bool> &elsewhere)
{
	GpuCopyJob job;
	job.image_gpu_id = image_gpu_id;
	job.gpu_id = gpu_id;
	job.numa_node = numa_node_of(topology, gpu_id);
	for (size_t i = 0; i < bos.size(); i++) {
		const kfd_criu_bo_bucket &bo = bos[i];
		if (bo.gpu_id != image_gpu_id || !kfd::holds_contents(bo.alloc_flags, bo.size))
			continue;
		if (i < elsewhere.size() && elsewhere[i])
			continue;
		if (bo.dmabuf_fd == KFD_INVALID_FD)
			fail(-EINVAL, "GPU 0x%04x: KFD gave no dma-buf for the %llu-byte BO at 0x%llx", image_gpu_id,
			     static_cast<unsigned long long>(bo.size), static_cast<unsigned long long>(bo.addr));
		job.dmabuf_fds.push_back(static_cast<int>(bo.dmabuf_fd));
		job.sizes.push_back(bo.size);
		job.addrs.push_back(bo.addr);
	}
	return job;
}

int numa_node_of(const Topology &topology, uint32_t gpu_id)
{
	const Node *gpu = topology.gpu(gpu_id);
	if (!gpu)
		return -1;
	for (const IoLink &link : gpu->links) {
		const Node *peer = link.valid ? topology.node(link.node_to) : nullptr;
		if (peer && !peer->is_gpu() && link.type == IoLinkType::pcie)
			return static_cast<int>(peer->node_id);
	}
	return -1;
}

std::string describe(const CopyStats &s)
{
	const double mib = static_cast<double>(s.bytes) / (1 << 20);
	const double mbps = s.seconds > 0 ? static_cast<double>(s.bytes) / 1e6 / s.seconds : 0;
	const bool dump = s.direction == CopyDirection::to_image;
	const std::string chain = s.chain_bytes ? strprintf(", %.1f MiB %s earlier checkpoints",
							    static_cast<double>(s.chain_bytes) / (1 << 20),
							    dump ? "unchanged, left to" : "read from")
						: std::string();
	return strprintf("GPU 0x%04x: %.1f MiB in %.3f s (%.0f MB/s), %.1f MiB %s, %.1f MiB of zeros %s, "
			 "%.1f MiB staging, setup %.3f s, image I/O %.3f s, checksums %.3f s%s",
			 s.gpu_id, mib, s.seconds, mbps, static_cast<double>(s.io_bytes) / (1 << 20),
			 dump ? "written" : "read", static_cast<double>(s.zero_bytes) / (1 << 20),
			 dump ? "left as holes" : "filled by the engine",
			 static_cast<double>(s.staging_bytes) / (1 << 20), s.setup_seconds, s.io_seconds, s.sum_seconds,
			 chain.c_str());
}

std::vector<CopyStats> copy_bo_contents(CopyDirection direction, std::span<const GpuCopyJob> jobs,
					const ImageDir &image_dir, uint32_t kfd_id, uint64_t max_buffer_size,
					CopyEngines &engines)
{
	std::vector<CopyStats> stats(jobs.size());
	std::vector<std::exception_ptr> errors(jobs.size());
	std::atomic<bool> cancel { false };
	ImageTurns turns(image_dir.streamed(), jobs, cancel);
	// a stream is written and read in order, by each GPU's worker
	IoPool pool(image_dir.streamed() ? 0 : IoPool::threads_for(jobs.size()));
	std::vector<std::thread> threads;
	for (size_t i = 0; i < jobs.size(); i++) {
		threads.push_back(plugin_thread([&, i] {
			try {
				GpuWorker worker(direction, jobs[i], i, image_dir, kfd_id, max_buffer_size, cancel,
						 turns, engines, pool);
				stats[i] = worker.run();
			} catch (...) {
				errors[i] = std::current_exception();
				cancel = true;
				turns.wake_all();
			}
		}));
	}
	for (auto &t : threads)
		t.join();

	if (const std::exception_ptr cause = first_cause(errors, jobs))
		std::rethrow_exception(cause);
	return stats;
}

std::vector<CopyStats> EngineCopier::copy(CopyDirection direction, std::span<const GpuCopyJob> jobs,
					  const ImageDir &image_dir, uint32_t kfd_id, uint64_t max_buffer_size)
{
	return copy_bo_contents(direction, jobs, image_dir, kfd_id, max_buffer_size, engines_);
}

ContentCopier &sdma_copier()
{
	static EngineCopier copier(sdma_engines());
	return copier;
}

} // namespace amdgpu
