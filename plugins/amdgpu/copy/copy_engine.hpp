// SPDX-License-Identifier: GPL-2.0-only
//
// A GPU's copy engine as the transfer (bo_transfer.hpp) drives it: it reaches the job's BOs and
// the staging buffers the transfer gives it, and runs batches of operations between them that
// complete in the order they were submitted, while the host goes on. On a node that is the GPU's
// SDMA engine (sdma_engine.hpp); a host benchmark or test gives an engine of its own, so that the
// transfer's host side (staging ring, checksums, zero blocks, image I/O, chains) runs as it does
// in criu, at whatever rate the engine has.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace amdgpu {

struct GpuCopyJob;

struct EngineOp {
	enum class Kind : uint8_t {
		to_staging,   // BO bytes into the staging buffer (dump)
		from_staging, // staging bytes into the BO (restore)
		zero_fill,    // zeros into the BO (restore; staging_offset unused)
	};
	Kind kind;
	uint32_t bo; // index into the job's BOs
	uint64_t bo_offset;
	uint64_t staging_offset;
	uint64_t len;
};

class CopyEngine {
public:
	virtual ~CopyEngine() = default;

	// Gives the engine staging buffer number `index` (the count of earlier calls): `memory` is
	// page-aligned host memory that outlives the engine, a batch through it holds at most
	// `max_ops` operations.
	virtual void add_staging(std::span<uint8_t> memory, size_t max_ops) = 0;

	// Starts `ops` through staging buffer `staging`; returns the batch's number, increasing.
	virtual uint64_t submit(size_t staging, std::span<const EngineOp> ops) = 0;

	// Returns once batch `batch` (and so every earlier one) is done; throws if that takes
	// longer than `timeout_ns` or the engine failed.
	virtual void wait(uint64_t batch, uint64_t timeout_ns) = 0;
};

// What opens the engine of each GPU of a copy.
class CopyEngines {
public:
	virtual ~CopyEngines() = default;
	// The engine of `job.gpu_id`, reaching `job`'s BOs (the job outlives it).
	virtual std::unique_ptr<CopyEngine> open(const GpuCopyJob &job) = 0;
};

} // namespace amdgpu
