// SPDX-License-Identifier: GPL-2.0-only
//
// What a dump takes of the GEM objects of one render-node file (an open /dev/dri/renderD*): each
// object's handle, size, domains, creation flags, alignment, GPU VA mappings and mmap offset, and
// a dma-buf of it through which the copy engine reads its memory into the file's pages image, as
// it reads a KFD buffer's.
//
// Linux 6.18 lists the objects of a file (gem_ioctl.hpp). An older kernel cannot, and its objects
// are found by probing their handles: their memory cannot be saved whole there (nothing tells the
// VA mappings), so such a file refuses the dump, naming its objects, and the task runs on.
//
// Objects whose memory the dump saves elsewhere are not copied twice: an object that is a KFD
// buffer of the dump (ROCm imports KFD buffers into its render node) is recorded as that buffer,
// and the restore imports the restored buffer under its handle. An object the plugin cannot read
// refuses the dump, naming it: a userptr object or one created VM_ALWAYS_VALID (the kernel lends
// neither to another file as a dma-buf), an object of GDS, GWS, OA or doorbell space (no memory to
// copy), another device's memory, or one still in use by the GPU once the task is frozen.
#pragma once

#include "driver/gem_ioctl.hpp"
#include "driver/gpu_driver.hpp"
#include "support/unique_fd.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace amdgpu {

// The KFD buffer of the dump an object is: by its address in the process that holds it, which
// is the file's own process or another one of the dump (a buffer shared through IPC).
struct KfdBufferRef {
	pid_t pid = 0;
	uint64_t addr = 0;
	bool own_process = true;
};

struct GemObjectState {
	gem::Object object;
	std::vector<gem::Mapping> mappings;
	uint64_t mmap_offset = 0;
	std::optional<KfdBufferRef> kfd; // saved with that buffer
	unique_fd dmabuf;		 // otherwise: what the copy reads its memory through
};

// How messages name a render-node file ("pid 12 fd 5"): made the first time one needs it (finding
// the task that holds the file walks /proc, and most files hold nothing).
class FileName {
public:
	explicit FileName(std::function<std::string()> make) : make_(std::move(make)) {}
	const std::string &str() const
	{
		if (!name_)
			name_ = make_();
		return *name_;
	}
	const char *c_str() const { return str().c_str(); }

private:
	std::function<std::string()> make_;
	mutable std::optional<std::string> name_;
};

// Which KFD buffer of the dump a dma-buf is of, if any.
using KfdBufferOf = std::function<std::optional<KfdBufferRef>(int dmabuf_fd)>;

struct GemDumpLimits {
	// How long an object may still be in use by the GPU after criu froze the task: work the task
	// submitted before, which ends on its own.
	std::chrono::milliseconds idle_timeout { 10000 };
};

// The objects of render-node file `fd` (criu's copy of it) in handle order. `file` names it in
// messages ("pid 12 fd 5"), `minor` its render node. Throws Error for anything it cannot save.
std::vector<GemObjectState> take_gem_objects(GpuDriver &driver, int fd, const FileName &file, unsigned int minor,
					     const KfdBufferOf &kfd_buffer, const GemDumpLimits &limits = {});

// Whether the pages image holds an object's memory (not a KFD buffer's, saved with it).
inline bool has_own_contents(const GemObjectState &o)
{
	return !o.kfd;
}

} // namespace amdgpu
