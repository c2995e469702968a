// SPDX-License-Identifier: GPL-2.0-only
#include "engines/memory_engines.hpp"

#include "copy/bo_transfer.hpp"
#include "copy/transfer_plan.hpp"
#include "support/error.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace amdgpu::test {

namespace {

class HostVramEngine final : public CopyEngine {
public:
	HostVramEngine(uint32_t gpu_id, std::vector<std::span<uint8_t>> bos) : gpu_id_(gpu_id), bos_(std::move(bos)) {}

	void add_staging(std::span<uint8_t> memory, size_t) override { staging_.push_back(memory); }

	uint64_t submit(size_t staging, std::span<const EngineOp> ops) override
	{
		const std::span<uint8_t> buffer = staging_.at(staging);
		for (const EngineOp &op : ops) {
			if (op.bo >= bos_.size() || op.bo_offset > bos_[op.bo].size() ||
			    op.len > bos_[op.bo].size() - op.bo_offset)
				fail(-EFAULT, "GPU 0x%04x: an engine operation past BO %u", gpu_id_, op.bo);
			uint8_t *bo = bos_[op.bo].data() + op.bo_offset;
			if (op.kind == EngineOp::Kind::zero_fill) {
				std::memset(bo, 0, op.len);
				continue;
			}
			if (op.staging_offset > buffer.size() || op.len > buffer.size() - op.staging_offset)
				fail(-EFAULT, "GPU 0x%04x: an engine operation past staging buffer %zu", gpu_id_,
				     staging);
			uint8_t *host = buffer.data() + op.staging_offset;
			if (op.kind == EngineOp::Kind::to_staging)
				std::memcpy(host, bo, op.len);
			else
				std::memcpy(bo, host, op.len);
		}
		return ++batches_;
	}

	void wait(uint64_t batch, uint64_t) override
	{
		if (batch > batches_)
			fail(-EINVAL, "GPU 0x%04x: waiting for batch %llu, of %llu submitted", gpu_id_,
			     static_cast<unsigned long long>(batch), static_cast<unsigned long long>(batches_));
	}

private:
	uint32_t gpu_id_;
	std::vector<std::span<uint8_t>> bos_;
	std::vector<std::span<uint8_t>> staging_;
	uint64_t batches_ = 0;
};

// Staging is tracked in granules of 64 KiB: which bytes of the VRAM's pattern (or zeros) each
// holds, so that a granule already holding the bytes asked for is left alone.
constexpr uint64_t kGranule = 64 << 10;
constexpr uint64_t kUnknown = ~0ull;
constexpr uint64_t kZeros = ~0ull - 1;
constexpr size_t kStamp = 16;

} // namespace

std::unique_ptr<CopyEngine> HostVramEngines::open(const GpuCopyJob &job)
{
	const auto it = bos_.find(job.gpu_id);
	if (it == bos_.end() || it->second.size() != job.sizes.size())
		fail(-ENODEV, "GPU 0x%04x: the test gave no BOs for its %zu", job.gpu_id, job.sizes.size());
	for (size_t i = 0; i < job.sizes.size(); i++)
		if (it->second[i].size() != job.sizes[i])
			fail(-EINVAL, "GPU 0x%04x: BO %zu is %zu bytes, the job says %llu", job.gpu_id, i,
			     it->second[i].size(), static_cast<unsigned long long>(job.sizes[i]));
	return std::make_unique<HostVramEngine>(job.gpu_id, it->second);
}

class PatternVramEngine final : public CopyEngine {
public:
	PatternVramEngine(PatternVramEngines &engines, const GpuCopyJob &job) : engines_(engines), gpu_id_(job.gpu_id)
	{
		uint64_t at = 0;
		for (uint64_t size : job.sizes) {
			bo_base_.push_back(at);
			at += size;
		}
	}

	void add_staging(std::span<uint8_t> memory, size_t) override
	{
		staging_.push_back({ memory, std::vector<uint64_t>(memory.size() / kGranule, kUnknown) });
	}

	uint64_t submit(size_t staging, std::span<const EngineOp> ops) override
	{
		Staging &s = staging_.at(staging);
		for (const EngineOp &op : ops) {
			if (op.bo >= bo_base_.size())
				fail(-EFAULT, "GPU 0x%04x: an engine operation on BO %u of %zu", gpu_id_, op.bo,
				     bo_base_.size());
			// restoring, a DMA engine reads staging (or fills VRAM) without the host
			if (op.kind != EngineOp::Kind::to_staging)
				continue;
			if (op.staging_offset > s.memory.size() || op.len > s.memory.size() - op.staging_offset)
				fail(-EFAULT, "GPU 0x%04x: an engine operation past staging buffer %zu", gpu_id_,
				     staging);
			to_staging(s, bo_base_[op.bo] + op.bo_offset, op.staging_offset, op.len);
		}
		return ++batches_;
	}

	void wait(uint64_t, uint64_t) override {}

private:
	struct Staging {
		std::span<uint8_t> memory;
		std::vector<uint64_t> granules; // what each holds: a pattern offset, kZeros or kUnknown
	};

	void to_staging(Staging &s, uint64_t at, uint64_t to, uint64_t len)
	{
		const PatternVram &vram = engines_.vram_;
		while (len) {
			const uint64_t block = at / PatternVram::kBlock;
			const bool dense = vram.dense(block);
			const bool whole = at % kGranule == 0 && to % kGranule == 0 && len >= kGranule;
			const uint64_t n =
				whole ? kGranule
				      : std::min({ len, kGranule - at % kGranule, kGranule - to % kGranule });
			uint8_t *dst = s.memory.data() + to;
			if (whole) {
				uint64_t &held = s.granules[to / kGranule];
				const uint64_t want = dense ? at % vram.period : kZeros;
				if (held != want) {
					fill(dst, at, n, dense);
					held = want;
				}
			} else {
				fill(dst, at, n, dense);
				if (to / kGranule < s.granules.size())
					s.granules[to / kGranule] = kUnknown;
			}
			if (dense && at % PatternVram::kBlock < kStamp)
				stamp(dst, at, n, block);
			at += n;
			to += n;
			len -= n;
		}
	}

	void fill(uint8_t *dst, uint64_t at, uint64_t n, bool dense)
	{
		if (!dense) {
			std::memset(dst, 0, n);
		} else {
			const uint64_t from =
				at % engines_.vram_.period; // a granule never wraps: the period is whole blocks
			std::memcpy(dst, engines_.pattern_ + from, n);
		}
		engines_.written_ += n;
	}

	// The block's first 16 bytes: its index, its version and the GPU.
	void stamp(uint8_t *dst, uint64_t at, uint64_t n, uint64_t block)
	{
		uint8_t bytes[kStamp];
		const uint64_t index = block + 1;
		const uint32_t version = engines_.vram_.version(block);
		std::memcpy(bytes, &index, 8);
		std::memcpy(bytes + 8, &version, 4);
		std::memcpy(bytes + 12, &gpu_id_, 4);
		const uint64_t from = at % PatternVram::kBlock;
		std::memcpy(dst, bytes + from, std::min<uint64_t>(n, kStamp - from));
	}

	PatternVramEngines &engines_;
	uint32_t gpu_id_;
	std::vector<uint64_t> bo_base_;
	std::vector<Staging> staging_;
	uint64_t batches_ = 0;
};

PatternVramEngines::PatternVramEngines(PatternVram vram) : vram_(std::move(vram))
{
	if (!vram_.period || vram_.period % PatternVram::kBlock || !vram_.dense)
		fail(-EINVAL, "a pattern VRAM needs a period of whole %llu-byte blocks and a map of its dense blocks",
		     static_cast<unsigned long long>(PatternVram::kBlock));
	pattern_ = static_cast<uint8_t *>(std::aligned_alloc(4096, vram_.period));
	if (!pattern_)
		fail(-ENOMEM, "no memory for a %llu-byte pattern", static_cast<unsigned long long>(vram_.period));
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (uint64_t i = 0; i < vram_.period; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		std::memcpy(pattern_ + i, &x, 8);
	}
}

PatternVramEngines::~PatternVramEngines()
{
	std::free(pattern_);
}

std::unique_ptr<CopyEngine> PatternVramEngines::open(const GpuCopyJob &job)
{
	return std::make_unique<PatternVramEngine>(*this, job);
}

uint64_t ring_period(uint64_t budget, uint64_t total)
{
	const StagingShape shape = staging_shape(budget, total, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
	const uint64_t ring = shape.slots * shape.slot_size;
	return ring % PatternVram::kBlock ? 0 : ring;
}

} // namespace amdgpu::test
