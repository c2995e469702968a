// SPDX-License-Identifier: GPL-2.0-only
//
// GPU memory that processes share, as one dump finds it.
//
// ROCm's runtime shares a buffer between processes as a dma-buf: the exporter hands a dma-buf fd
// of its buffer to a peer (ROCr's IPC does it over a Unix socket), which imports it into KFD
// (IMPORT_DMABUF) or into a render node. Both processes then hold the same memory. KFD's
// CHECKPOINT does not say which of a process's buffers were imported: an imported buffer comes
// as a VRAM or GTT bucket like any other. Its RESTORE allocates a new buffer for every bucket, so
// two processes restored from buckets of one buffer each get a private copy: a job that looks
// alive, whose ranks no longer see each other's writes.
//
// What tells the plugin that two buckets are one buffer: the dma-buf fd CHECKPOINT hands out for
// a bucket. On kernels that export a buffer through the one dma-buf they keep for it (KFD 1.12,
// Linux 6.4, and newer: the dma-buf EXPORT_DMABUF hands out; an import's bucket hands out the
// dma-buf it was imported from), every bucket of one buffer, in any process, comes with the same
// dma-buf, and a dma-buf is its own inode. A dma-buf fd a task holds itself is one too.
//
// What tells it that a buffer came from a process outside the dump: a buffer imported from
// another GPU is a buffer of its own on the importing GPU (KFD imports it as GTT there), whose
// dma-buf is still the other GPU's (KFD's GET_DMABUF_INFO names that GPU); a buffer of another GPU
// that no process of the dump holds on that GPU is some other process's. For imports on the same
// GPU, KFD charges each process
// for the VRAM it allocates (sysfs /sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>) and not for what
// it imports. So the VRAM buffers of the dump, each counted once, may exceed what the dumped
// processes were charged by no more than what they imported from one another; anything beyond is
// VRAM that a process outside the dump allocated. The reverse, a buffer of the dump imported by a
// process outside it, leaves no trace a user-space program can read: the kernel does not list who
// imported a buffer.
//
// This file only counts; the dump session decides what a finding means.
#pragma once

#include "driver/gpu_driver.hpp"

#include <sys/types.h>

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace amdgpu {

// One process's hold on a buffer: a KFD bucket, or a dma-buf fd in its fd table.
struct BufferHold {
	pid_t pid = 0;		  // in criu's pid namespace
	uint32_t gpu_id = 0;	  // actual gpu_id of the bucket's GPU; 0 for an fd
	uint64_t addr = 0;	  // GPU virtual address of the bucket
	uint64_t size = 0;	  // bytes
	uint32_t alloc_flags = 0; // the bucket's KFD_IOC_ALLOC_MEM_FLAGS_*; 0 for an fd
	int fd = -1;		  // the fd's number in the task, for a held dma-buf fd
	int file_id = -1;	  // or criu's file id of it, where the number is not known
	bool imported = false;	  // a bucket of another GPU's buffer (KFD's GET_DMABUF_INFO says so)
	bool cpu_mapped = false;  // the process maps the bucket into its memory (at its address)
	bool held_fd() const { return fd >= 0 || file_id >= 0; }
	bool same_bucket(const BufferHold &o) const
	{
		return !held_fd() && !o.held_fd() && pid == o.pid && gpu_id == o.gpu_id && addr == o.addr;
	}
};

// A buffer held more than once in the dump, or held through a dma-buf fd.
struct SharedBuffer {
	BufferKey key;
	std::vector<BufferHold> holds; // in the order the dump met them
	uint64_t size() const { return holds.empty() ? 0 : holds.front().size; }
	bool vram() const;
	// The distinct processes holding it.
	std::vector<pid_t> pids() const;
};

// VRAM of the dump that no dumped process was charged for.
struct ForeignVram {
	uint64_t bytes = 0;   // VRAM buffers (each once) minus what the processes were charged
	uint64_t vram = 0;    // the dump's VRAM buffers, each counted once
	uint64_t charged = 0; // what KFD charged the dumped processes
	// Buffers held by one process only, of processes that hold more VRAM than they were charged:
	// where the foreign bytes are (not which of them: the kernel does not say).
	std::vector<BufferHold> candidates;
};

class SharedBufferCensus {
public:
	// The key a bucket's buffer goes by: its dma-buf's, unless a bucket on the same GPU with the
	// same mmap offset came first (the offset belongs to the buffer on its GPU: an import on the
	// exporter's GPU reports the exporter's), which also tells sharing apart on kernels that hand
	// out a new dma-buf at every export (6.1). The same arguments give the same key again.
	BufferKey key_of(const BufferKey &dmabuf, uint32_t gpu_id, uint64_t offset);
	// The key a dma-buf goes by (that of the bucket it was met with), for a dma-buf fd a task holds.
	BufferKey key_of(const BufferKey &dmabuf) const;
	void add(const BufferKey &key, const BufferHold &hold);
	// KFD's VRAM charge of `pid` on one of its GPUs (added up). A process whose charge is not
	// known on each of its GPUs leaves foreign_vram() undecided.
	void charge(pid_t pid, uint64_t bytes);
	void charge_unknown(pid_t pid);

	// The buffers held by more than one bucket, or through a dma-buf fd; by first hold.
	std::vector<SharedBuffer> shared() const;
	// The holds of buffer `key` so far (none when it is not met).
	std::vector<BufferHold> holds_of(const BufferKey &key) const;
	// Buffer `key`'s number among the buffers held more than once with a bucket among the holds
	// (1, 2, ... in the order they were met), or 0 when nothing else holds it.
	uint32_t shared_number(const BufferKey &key) const;
	// The bucket that restores shared buffer `key` (the others take it from the process that
	// holds this one): the first the process maps into its memory (a taker's mapping could not be
	// moved; ROCm maps what it allocated, not what it attached), else the first whose allocation
	// flags say more than an import's (KFD gives an import only its domain, WRITABLE and
	// EXECUTABLE: the allocator's coherence and visibility would be lost), else the first that is
	// VRAM, where the buffer lives, else the first.
	std::optional<BufferHold> restorer_of(const BufferKey &key) const;
	// VRAM from outside the dump, when the charges of every process are known and fall short.
	std::optional<ForeignVram> foreign_vram() const;
	// Buffers of another GPU than their buckets' (imported across GPUs) that no bucket of the dump
	// holds on their own GPU: a process outside the dump holds them there.
	std::vector<SharedBuffer> imported_from_outside() const;
	// What process `pid` imported, whoever from: the VRAM it holds beyond its charge (0 when the
	// charge is unknown), and its buckets of another GPU's buffers.
	uint64_t vram_beyond_charge(pid_t pid) const;
	std::vector<BufferHold> imported_holds(pid_t pid) const;

private:
	std::map<BufferKey, std::vector<BufferHold>> holds_;
	std::map<BufferKey, BufferKey> alias_;			       // dma-buf -> the key it goes by
	std::map<std::pair<uint32_t, uint64_t>, BufferKey> by_offset_; // (gpu, offset) -> key
	std::vector<BufferKey> order_;
	std::map<pid_t, uint64_t> charged_;
	std::vector<pid_t> uncharged_;
};

// "4 MiB (4194304 bytes)".
std::string describe_size(uint64_t bytes);
// "pid 12 (VRAM on GPU 0x1234 at 0x7f0000000000), pid 13 (dma-buf fd 7)".
std::string describe_holds(const std::vector<BufferHold> &holds);

} // namespace amdgpu
