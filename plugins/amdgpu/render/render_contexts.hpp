// SPDX-License-Identifier: GPL-2.0-only
//
// The contexts of a render-node file (AMDGPU_CTX), taken by a dump and made again by a restore.
//
// A process submits work through a context of its file, by the context's id, and waits for it by
// the fence a submission returns: the n-th on a ring of that context is fence n. Restored without
// its contexts, its next submission fails with EINVAL; restored with fresh ones, a wait for a
// fence it got before the dump fails the same way, since the fresh ring has not reached it.
//
// No ioctl lists contexts or tells a ring's sequence, but both can be asked without changing
// anything the task sees: QUERY_STATE2 of an id says whether it is a context (ids are allocated
// lowest free first, so asking 1, 2, ... until 64 ids in a row are free misses only contexts above
// such a run), and WAIT_CS of fence n, without waiting, fails with EINVAL exactly when the ring
// has not reached n: the first such n, found by doubling then halving, is the ring's sequence.
// The dump waits for every ring to finish first; the task is frozen and submits nothing new.
//
// The restore allocates the contexts in id order, filling the gaps for the moment as it does
// handles (gem_restore.hpp), and brings each ring to its sequence with as many empty submissions
// (one no-op packet) as the process made there: a wait for an old fence then finds it done, and
// the process's next submission gets the fence number it would have had. Only rings whose empty
// packet this plugin knows can be brought back (GFX, compute, SDMA); a context that used another
// (video engines) refuses the dump. A context that caused a GPU hang (its submissions fail with
// ECANCELED) refuses it too: a restored one would accept them.
#pragma once

#include "driver/gpu_driver.hpp"
#include "render/gem_dump.hpp"

#include "criu-amdgpu.pb-c.h"

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

struct RingSequence {
	uint32_t ip_type = 0;
	uint32_t ring = 0;
	uint64_t sequence = 1; // the next submission's fence
};

struct ContextState {
	uint32_t id = 0;
	std::vector<RingSequence> rings; // those used
};

inline constexpr uint32_t kContextProbeFreeRun = 64;

// The contexts of render-node file `fd`, in id order, each ring idle. Throws Error naming `file`.
std::vector<ContextState> take_contexts(GpuDriver &driver, int fd, const FileName &file,
					std::chrono::milliseconds idle_timeout = std::chrono::milliseconds(10000));

// For the image (the entries point into `storage`).
struct ContextEntries {
	std::vector<DrmContextEntry> entries;
	std::vector<DrmContextEntry *> entry_ptrs;
	std::vector<DrmRingSequence> rings;
	std::vector<DrmRingSequence *> ring_ptrs;
};
void fill_context_entries(std::span<const ContextState> contexts, ContextEntries &storage);
// Checked: ids rising from 1, known engines, sequences from 1. Throws Error(-EINVAL) naming `image`.
std::vector<ContextState> contexts_of(const CriuRenderNode &msg, const std::string &image);

struct RestoredContexts {
	size_t fillers = 0;
	uint64_t submissions = 0; // empty ones, to bring the rings to their sequences
};

// Makes `contexts` again in file `fd`, above every GPU address in `busy_below` (where the file's
// mappings are: a one-page command buffer is mapped above them for the empty submissions, and
// closed after). Throws Error naming `image`.
RestoredContexts restore_contexts(GpuDriver &driver, int fd, std::span<const ContextState> contexts,
				  uint64_t busy_below, const std::string &image);

} // namespace amdgpu
