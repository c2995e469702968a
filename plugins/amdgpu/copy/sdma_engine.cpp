// SPDX-License-Identifier: GPL-2.0-only
#include "copy/sdma_engine.hpp"

#include "copy/amdgpu_device.hpp"
#include "copy/bo_transfer.hpp"
#include "copy/sdma_packets.hpp"
#include "support/error.hpp"

#include <cstring>
#include <optional>
#include <vector>

namespace amdgpu {

namespace {

// A staging buffer registered with the GPU, and the indirect buffer of the batches through it.
struct Staging {
	MappedBo memory;
	MappedBo ib;
};

class SdmaEngine final : public CopyEngine {
public:
	explicit SdmaEngine(const GpuCopyJob &job)
	    : job_(job), dev_(job.render_fd, job.gpu_id), bos_(job.sizes.size()), queue_(dev_)
	{
	}

	void add_staging(std::span<uint8_t> memory, size_t max_ops) override
	{
		// an operation is split into packets of at most kMaxCopyBytes: at most one more packet
		// per kMaxCopyBytes of the buffer than operations, each a copy or a fill
		const uint64_t packets = max_ops + sdma::copy_linear_packets(memory.size());
		const uint64_t ib_bytes =
			packets * (sdma::kCopyLinearDwords + sdma::kConstFillDwords) * 4 + sdma::kIbAlignDwords * 4;
		MappedBo registered = MappedBo::from_user_memory(dev_, memory.data(), memory.size());
		staging_.push_back({ std::move(registered), MappedBo::alloc_gtt(dev_, ib_bytes) });
	}

	uint64_t submit(size_t staging, std::span<const EngineOp> ops) override
	{
		const Staging &s = staging_.at(staging);
		ib_.clear();
		resources_.assign(1, s.memory.handle());
		for (const EngineOp &op : ops) {
			const MappedBo &bo = mapped_bo(op.bo);
			const uint64_t bo_va = bo.va() + op.bo_offset;
			const uint64_t staging_va = s.memory.va() + op.staging_offset;
			switch (op.kind) {
			case EngineOp::Kind::to_staging:
				sdma::emit_copy_linear(ib_, bo_va, staging_va, op.len);
				break;
			case EngineOp::Kind::from_staging:
				sdma::emit_copy_linear(ib_, staging_va, bo_va, op.len);
				break;
			case EngineOp::Kind::zero_fill:
				sdma::emit_const_fill(ib_, bo_va, 0, op.len);
				break;
			}
			if (resources_.back() != bo.handle())
				resources_.push_back(bo.handle());
		}
		sdma::pad_ib(ib_);
		if (ib_.size() * sizeof(uint32_t) > s.ib.size())
			fail(-EOVERFLOW, "GPU 0x%04x: %zu-dword indirect buffer exceeds its %llu bytes", job_.gpu_id,
			     ib_.size(), static_cast<unsigned long long>(s.ib.size()));
		std::memcpy(s.ib.cpu(), ib_.data(), ib_.size() * sizeof(uint32_t));
		return queue_.submit(s.ib, static_cast<uint32_t>(ib_.size()), resources_);
	}

	void wait(uint64_t batch, uint64_t timeout_ns) override { queue_.wait(batch, timeout_ns); }

private:
	const MappedBo &mapped_bo(uint32_t index)
	{
		if (!bos_.at(index))
			bos_[index].emplace(MappedBo::import_dmabuf(dev_, job_.dmabuf_fds[index], job_.sizes[index]));
		return *bos_[index];
	}

	const GpuCopyJob &job_;
	// Members die in reverse: every mapping is undone through the device before the device goes
	// (libdrm closes its fd with it, and the render file may outlive this engine).
	GpuDevice dev_;
	std::vector<std::optional<MappedBo>> bos_;
	SdmaQueue queue_;
	std::vector<Staging> staging_;
	std::vector<uint32_t> ib_;
	std::vector<amdgpu_bo_handle> resources_;
};

class SdmaEngines final : public CopyEngines {
public:
	std::unique_ptr<CopyEngine> open(const GpuCopyJob &job) override { return std::make_unique<SdmaEngine>(job); }
};

} // namespace

CopyEngines &sdma_engines()
{
	static SdmaEngines engines;
	return engines;
}

} // namespace amdgpu
