// SPDX-License-Identifier: GPL-2.0-only
//
// Copy engines of GPUs whose VRAM is host memory, for host tests and benchmarks of the transfer
// (plugins/amdgpu/copy/bo_transfer.hpp): the plugin's own staging ring, checksums, zero blocks and
// image I/O run as in criu; only the GPU's engine is replaced. Both complete a batch as it is
// submitted.
//
// HostVramEngines copies between staging and buffers the test holds, byte for byte: what a test
// dumps from them it can compare with what a restore puts back.
//
// PatternVramEngines stands for a DMA engine, which costs the host nothing: its VRAM is a
// function of the payload offset (below), so that the engine rarely has to touch host memory to
// put the right bytes in staging, and on restore it takes staging's bytes without reading them (the
// plugin's own checksums verify a restore). What host memory it did have to write it counts, so a
// benchmark can show that its figures are the plugin's.
#pragma once

#include "copy/copy_engine.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

namespace amdgpu::test {

class HostVramEngines final : public CopyEngines {
public:
	// GPU `gpu_id`'s BOs, in the order of its copy job; the buffers outlive every copy.
	void set_bos(uint32_t gpu_id, std::vector<std::span<uint8_t>> bos) { bos_[gpu_id] = std::move(bos); }
	std::unique_ptr<CopyEngine> open(const GpuCopyJob &job) override;

private:
	std::map<uint32_t, std::vector<std::span<uint8_t>>> bos_;
};

// The VRAM of a PatternVramEngines GPU, as its copy job's payload (its BOs one after another). The
// payload is cut in 1 MiB blocks (BO sizes are multiples of 1 MiB); a block is either zeros or
// dense: the bytes of a pseudo-random pattern `period` bytes long, repeated, except that each
// dense block's first 16 bytes hold its index and its version, so that no two blocks are alike
// and a block changes when its version does.
struct PatternVram {
	static constexpr uint64_t kBlock = 1 << 20;
	uint64_t period = 64 << 20;		   // a multiple of kBlock
	std::function<bool(uint64_t block)> dense; // the block holds data, not zeros
	std::function<uint32_t(uint64_t block)> version = [](uint64_t) { return 0u; };
};

class PatternVramEngines final : public CopyEngines {
public:
	explicit PatternVramEngines(PatternVram vram);
	~PatternVramEngines() override;
	std::unique_ptr<CopyEngine> open(const GpuCopyJob &job) override;

	// Host bytes the engines wrote to staging (pattern or zeros where staging held other bytes;
	// the 16-byte stamps are not counted).
	uint64_t host_bytes_written() const { return written_.load(); }
	const PatternVram &vram() const { return vram_; }
	// The bytes of the pattern (`period` long).
	std::span<const uint8_t> pattern() const { return { pattern_, vram_.period }; }

private:
	friend class PatternVramEngine;
	PatternVram vram_;
	uint8_t *pattern_ = nullptr;
	std::atomic<uint64_t> written_ { 0 };
};

// The period that lets a PatternVramEngines dump touch no host memory after the ring's first
// round: the ring's bytes for a GPU of `total` bytes and a budget of `budget` bytes.
uint64_t ring_period(uint64_t budget, uint64_t total);

} // namespace amdgpu::test
