// SPDX-License-Identifier: GPL-2.0-only
//
// A fake kernel and a fake copy engine for the dump and restore sessions: every call is recorded
// in order, any one of them can be made to fail, and every fd they hand out is a real one (an
// eventfd) so that a test sees which the sessions leave open.
#pragma once

#include "copy/bo_transfer.hpp"
#include "support/error.hpp"
#include "driver/gpu_driver.hpp"
#include "images/image_store.hpp"
#include "topology/topology.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace amdgpu::test {

enum class Op {
	open_kfd,
	open_render_node,
	get_version,
	process_info,
	checkpoint,
	unpause,
	restore,
	resume,
	runtime_info,
	runtime_enable,
	copy,
	import_dmabuf,
	free_memory,
	map_memory,
	unmap_memory,
	gem_list,
	gem_probe,
	gem_wait_idle,
	gem_create,
	gem_map,
	gem_import,
	gem_close,
	make_render_node,
};

const char *to_string(Op op);

// The fds of this process, by number.
std::set<int> open_fds();

class FakeGpu : public GpuDriver, public ContentCopier {
public:
	// The GPUs of `topology`, each with two VRAM BOs of `bo_size` bytes, and one BO of user memory
	// (no contents to copy) on the first.
	explicit FakeGpu(const Topology &topology, uint64_t bo_size = 1 << 16);

	// Makes the `nth` call (0: the first; kEveryCall: all) of `op` fail with `err`.
	static constexpr int kEveryCall = -1;
	void fail(Op op, int err = -EIO, int nth = 0)
	{
		fail_op_ = op;
		fail_err_ = err;
		fail_nth_ = nth;
	}
	// A render node this mount namespace lacks (until make_render_node() makes it).
	void hide_render_node(unsigned int minor) { hidden_minors_.insert(minor); }
	// What the probe of the device cgroup finds: 1 it restricts the task, 0 it does not, -errno.
	int device_rules = 0;
	std::vector<unsigned int> made_render_nodes; // the minors make_render_node() made

	struct Call {
		Op op;
		int fd;
	};
	const std::vector<Call> &calls() const { return calls_; }
	bool called(Op op, int fd) const;
	int count(Op op) const;
	// Where the first call of `op` stands among all calls (calls().size() if none).
	size_t first_call(Op op) const;
	// The fd PROCESS_INFO paused (or -1).
	int paused_fd() const;
	// The fds `op` handed out (CHECKPOINT and RESTORE: dma-bufs) that are open. A number the
	// process reused since counts too: ask before anything else is opened.
	std::vector<int> still_open(Op op) const;
	std::vector<GpuCopyJob> jobs; // what the last copy was given
	// Called as a copy begins, before anything of it is recorded (a copy running beside criu is
	// held there by the tests).
	std::function<void()> while_copying;
	uint32_t pid = 0;					   // PROCESS_INFO's and CHECKPOINT's pid
	kfd::Version version = { kfd::kMinMajor, kfd::kMinMinor }; // what GET_VERSION says
	kfd::RuntimeInfo runtime;				   // what the debug session reads of a task
	pid_t runtime_asked_for = 0;
	std::vector<kfd::RuntimeInfo> runtime_enabled; // what RUNTIME_ENABLE was given, in order

	int open_device(const std::string &path) override;
	std::string find_render_node(unsigned int minor, std::string *named_is) override;
	std::string describe_render_nodes() override { return "renderD128 (226:128)"; }
	int device_rules_restrict() override { return device_rules; }
	int make_render_node(unsigned int minor, std::string *how) override;
	int get_version(int fd, kfd::Version &out) override;
	int criu_process_info(int fd, kfd::ProcessInfo &out) override;
	int criu_checkpoint(int fd, const kfd::ProcessInfo &info, std::span<kfd_criu_device_bucket> devices,
			    std::span<kfd_criu_bo_bucket> bos, std::span<uint8_t> priv_data) override;
	int criu_unpause(int fd) override;
	int criu_restore(int fd, std::span<kfd_criu_device_bucket> devices, std::span<kfd_criu_bo_bucket> bos,
			 std::span<uint8_t> priv_data, uint32_t num_objects) override;
	int criu_resume(int fd, uint32_t pid) override;
	int runtime_info(pid_t task, kfd::RuntimeInfo &out) override;
	int runtime_enable(int fd, const kfd::RuntimeInfo &info) override;
	// IMPORT_DMABUF gives these ids in turn (then 0x100, 0x101, ...); every memory call is logged.
	std::vector<uint32_t> import_ids;
	struct MemoryCall {
		Op op;
		uint64_t handle;
		std::vector<uint32_t> gpus;
	};
	std::vector<MemoryCall> memory_calls;
	int import_dmabuf(int fd, uint32_t gpu_id, int dmabuf_fd, uint64_t va, uint64_t &handle) override;
	int free_memory(int fd, uint64_t handle) override;
	int map_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids) override;
	int unmap_memory(int fd, uint64_t handle, std::span<const uint32_t> gpu_ids) override;
	std::vector<uint32_t> secondary_contexts(pid_t task) override
	{
		contexts_asked_for = task;
		return contexts;
	}
	std::vector<uint32_t> contexts; // what sysfs lists for the task
	// Each dma-buf CHECKPOINT hands out is a buffer of its own, but for the BOs (by index) named
	// here: those are one buffer in every checkpoint, as a buffer that processes share.
	std::set<size_t> shared_bos;
	std::optional<BufferKey> dmabuf_key(int fd) override;
	// The GPU whose buffer each dma-buf is: the BO's own, but for the BOs (by index) named here,
	// which are another GPU's (`foreign_gpu`), as buffers imported from another GPU.
	std::set<size_t> imported_bos;
	uint32_t foreign_gpu = 0xf00d;
	std::optional<uint32_t> dmabuf_gpu(int fd) override;
	// The GEM objects every render-node file holds, and whether the kernel lists them (Linux 6.18
	// and newer) or gem_probe() must find them.
	std::vector<gem::Object> gem_objects;
	bool gem_listing = true;
	int gem_list(int fd, std::vector<gem::Object> &out) override;
	int gem_probe(int fd, std::vector<gem::Object> &out) override;
	// No GEM object is a KFD buffer here: its dma-buf is a buffer of its own, but for the
	// handles named here (by the index of a BO among `shared_bos`, whose buffer is the same in
	// every checkpoint), and those that cannot be exported (userptr, VM_ALWAYS_VALID).
	std::map<uint32_t, size_t> gem_kfd_bos;
	std::set<uint32_t> gem_unexportable;
	std::set<uint32_t> gem_shared; // handles whose dma-buf is one buffer in every file
	int gem_export(int fd, uint32_t handle) override;
	// What a dump reads of the objects, by handle: their mappings, and which stay busy.
	std::map<uint32_t, std::vector<gem::Mapping>> gem_mappings_of;
	std::set<uint32_t> gem_busy;
	int gem_mappings(int fd, uint32_t handle, std::vector<gem::Mapping> &out) override;
	int gem_mmap_offset(int fd, uint32_t handle, uint64_t &offset) override;
	int gem_wait_idle(int fd, uint32_t handle, uint64_t timeout_ns) override;
	// The objects restores make, per render-node fd: handles allocated lowest free first, as
	// the kernel does, from what `gem_taken` says each fd's file holds already.
	struct GemFile {
		std::map<uint32_t, gem::Object> objects;
		std::map<uint32_t, std::vector<gem::Mapping>> mappings;
		std::set<uint32_t> imported; // by handle
		size_t created = 0, closed = 0;
	};
	std::map<int, GemFile> gem_files;
	std::set<uint32_t> gem_taken;
	int gem_create(int fd, const gem::Object &o, uint32_t &handle) override;
	int gem_map(int fd, uint32_t handle, const gem::Mapping &m) override;
	int gem_import(int fd, int dmabuf_fd, uint32_t &handle) override;
	int gem_close(int fd, uint32_t handle) override;
	std::vector<std::vector<uint8_t>> gem_writes;
	int gem_write(int fd, uint32_t handle, std::span<const uint8_t> bytes) override;
	// Contexts: those every render-node file holds for a dump (id -> SDMA ring 0's sequence),
	// and those restores make, per fd, allocated lowest free first.
	std::map<uint32_t, uint64_t> contexts_held;
	std::map<int, std::map<uint32_t, uint64_t>> contexts_made;
	std::set<uint32_t> context_taken;
	std::set<uint32_t> guilty_contexts;
	uint64_t empty_submissions = 0;
	int cs_context_flags(int fd, uint32_t id, uint64_t &flags) override;
	int cs_alloc_context(int fd, uint32_t &id) override;
	int cs_free_context(int fd, uint32_t id) override;
	int cs_rings(int fd, uint32_t ip_type, uint32_t &rings) override;
	int cs_fence_known(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq) override;
	int cs_wait_fence(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint64_t seq,
			  uint64_t timeout_ns) override;
	int cs_submit(int fd, uint32_t ctx, uint32_t ip_type, uint32_t ring, uint32_t ib_handle, uint64_t ib_va,
		      uint32_t ib_bytes, uint64_t &seq) override;
	// KFD's VRAM charge of every process on every GPU; unknown when unset.
	std::optional<uint64_t> vram_charge;
	std::optional<uint64_t> vram_charged(pid_t, uint32_t) override { return vram_charge; }
	pid_t contexts_asked_for = 0;
	std::vector<CopyStats> copy(CopyDirection direction, std::span<const GpuCopyJob> jobs,
				    const ImageDir &image_dir, uint32_t kfd_id, uint64_t max_buffer_size) override;

private:
	// Records the call; its injected failure, or 0.
	int call(Op op, int fd);
	int new_fd(Op op);
	uint32_t lowest_free_handle(GemFile &file);

	std::vector<uint32_t> gpu_ids_;
	std::vector<kfd_criu_bo_bucket> bos_;
	std::vector<Call> calls_;
	std::vector<std::pair<Op, int>> handed_out_;
	std::map<int, BufferKey> keys_; // of the dma-bufs handed out, by fd
	std::map<int, uint32_t> gpus_;	// the GPU whose buffer each is, by fd
	uint64_t next_key_ = 1;
	size_t imports_ = 0;
	std::set<unsigned int> hidden_minors_;
	std::optional<Op> fail_op_;
	int fail_err_ = -EIO;
	int fail_nth_ = 0;
};

} // namespace amdgpu::test
