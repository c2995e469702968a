// SPDX-License-Identifier: GPL-2.0-only
//
// The plugin's host path at a node's speed. On a real node each GPU's SDMA engines move tens of
// GB/s, and what decides a checkpoint's time is the plugin's own work on the host: the staging
// ring, the checksum of every block, finding the blocks of zeros, writing the images; on restore
// reading them, checking and filling. Here the transfer (plugins/amdgpu/copy/bo_transfer.hpp)
// runs exactly as in criu, driven by an engine that costs the host nothing, as a DMA engine
// (test/engines/memory_engines.hpp: PatternVramEngines), for 1, 2, 4 and 8 GPUs, dense and mostly
// zeros, dumping to and restoring from image files on a sink (tmpfs unless HOST_PATH_SINK names
// another directory), and through a chain of five incremental dumps.
//
// It prints, per case (the median of three runs), GB/s per GPU and in total, each as a fraction of
// what the sink itself takes from the same cores in the same run (write() or read() on one thread,
// and on one per core); the plugin's own CPU rate against memcpy's; where the GPUs' time went (the
// kernel's part of writing or reading the images, the checksums, the rest); and the host memory
// the copy took above its start against its bound (KFD_MAX_BUFFER_SIZE per GPU). Asserts
// nothing about time; fails only when a restore's sums differ from the dump's, the engine had to
// write more host memory than its first round, or memory passed the bound by more than 64 MiB.
#include "copy/bo_transfer.hpp"
#include "engines/memory_engines.hpp"
#include "images/image_chain.hpp"
#include "images/image_store.hpp"
#include "support/error.hpp"
#include "support/unique_fd.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace amdgpu {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uint64_t MiB = 1 << 20, GiB = 1ull << 30;
constexpr uint64_t kBudget = 64 * MiB; // KFD_MAX_BUFFER_SIZE's default: the ring of each GPU
constexpr uint64_t kMemorySlack = 64 * MiB;
constexpr uint64_t kBoSize = 256 * MiB; // a GPU's memory as BOs of this size
constexpr uint32_t kKfd = 1;

double seconds_since(Clock::time_point t)
{
	return std::chrono::duration<double>(Clock::now() - t).count();
}

// memcpy of `bytes` in 8 MiB pieces from a buffer far larger than the caches into a ring, on
// `threads` threads at once: GB/s in total.
double memcpy_gbps(unsigned threads, uint64_t bytes)
{
	constexpr size_t kPiece = 8 * MiB;
	std::vector<std::thread> workers;
	std::vector<double> secs(threads);
	for (unsigned t = 0; t < threads; t++)
		workers.emplace_back([&, t] {
			std::vector<uint8_t> src(bytes), ring(kBudget);
			std::memset(src.data(), 0x5a + t, src.size());
			std::memset(ring.data(), 0, ring.size());
			const auto start = Clock::now();
			for (uint64_t at = 0; at + kPiece <= bytes; at += kPiece)
				std::memcpy(ring.data() + at % kBudget, src.data() + at, kPiece);
			secs[t] = seconds_since(start);
		});
	for (auto &w : workers)
		w.join();
	return static_cast<double>(bytes) * threads / 1e9 / *std::max_element(secs.begin(), secs.end());
}

// write() (or read()) `bytes` to (from) a file of the sink on each of `threads` threads at once:
// GB/s in all.
double sink_gbps(const fs::path &dir, unsigned threads, uint64_t bytes, bool write)
{
	constexpr size_t kPiece = 8 * MiB;
	std::vector<std::thread> workers;
	std::vector<double> secs(threads);
	for (unsigned t = 0; t < threads; t++)
		workers.emplace_back([&, t] {
			std::vector<uint8_t> buf(kPiece, static_cast<uint8_t>(0x33 + t));
			const fs::path file = dir / strprintf("reference-%u", t);
			const unique_fd fd(open(file.c_str(),
						write ? O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC : O_RDONLY | O_CLOEXEC,
						0600));
			const auto start = Clock::now();
			for (uint64_t at = 0; fd && at < bytes; at += kPiece)
				if ((write ? ::write(fd.get(), buf.data(), kPiece)
					   : ::read(fd.get(), buf.data(), kPiece)) != static_cast<ssize_t>(kPiece))
					break;
			secs[t] = seconds_since(start);
		});
	for (auto &w : workers)
		w.join();
	return static_cast<double>(bytes) * threads / 1e9 / *std::max_element(secs.begin(), secs.end());
}

// The resident set, and its peak since the last reset_peak(), in bytes.
uint64_t status_kib(const char *field)
{
	std::ifstream in("/proc/self/status");
	std::string line;
	while (std::getline(in, line))
		if (line.rfind(field, 0) == 0)
			return std::strtoull(line.c_str() + std::strlen(field), nullptr, 10);
	return 0;
}
uint64_t rss()
{
	return status_kib("VmRSS:") * 1024;
}
uint64_t peak_rss()
{
	return status_kib("VmHWM:") * 1024;
}
void reset_peak()
{
	std::ofstream("/proc/self/clear_refs") << "5";
}

// Memory the kernel keeps for files: the page cache (tmpfs's pages are files too, and are the
// images themselves there).
uint64_t page_cache()
{
	std::ifstream in("/proc/meminfo");
	std::string key;
	uint64_t kib = 0, cached = 0, shmem = 0;
	while (in >> key >> kib) {
		if (key == "Cached:")
			cached = kib;
		if (key == "Shmem:")
			shmem = kib;
		in.ignore(64, '\n');
	}
	return (cached - std::min(cached, shmem)) * 1024;
}

struct Shape {
	const char *name;
	unsigned dense_in_ten; // of every ten blocks, how many hold data
};

struct Gpus {
	std::vector<GpuCopyJob> jobs;
	std::vector<PagesSums> sums; // each GPU's, from its last dump
};

Gpus gpus_of(unsigned n, uint64_t bytes_each)
{
	Gpus g;
	for (unsigned i = 0; i < n; i++) {
		GpuCopyJob job;
		job.image_gpu_id = job.gpu_id = 0x1000 + i;
		for (uint64_t at = 0; at < bytes_each; at += kBoSize) {
			job.sizes.push_back(std::min(kBoSize, bytes_each - at));
			job.dmabuf_fds.push_back(-1);
			job.addrs.push_back(0);
		}
		g.jobs.push_back(job);
	}
	return g;
}

double cpu_seconds(const timeval &t)
{
	return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

struct Run {
	double seconds = 0;
	double user_seconds = 0;   // the process's CPU time outside the kernel: the plugin's own work,
	uint64_t engine_bytes = 0; // and the engine's first round, these bytes memcpy'd
	uint64_t bytes = 0, io_bytes = 0, zero_bytes = 0, chain_bytes = 0;
	double io_seconds = 0, sum_seconds = 0, gpu_seconds = 0; // summed over GPUs
	uint64_t memory = 0;					 // peak resident set above the start
	uint64_t cache = 0;					 // page cache grown (a tmpfs sink: none)
};

Run copy(CopyDirection dir, Gpus &gpus, const fs::path &images, test::PatternVramEngines &engines)
{
	const unique_fd dirfd(open(images.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!dirfd)
		fail_errno(errno, "cannot open %s", images.c_str());
	const ImageChain chain = ImageChain::below(dirfd.get());
	for (size_t i = 0; i < gpus.jobs.size(); i++) {
		gpus.jobs[i].chain = &chain;
		gpus.jobs[i].sums = dir == CopyDirection::from_image ? &gpus.sums[i] : nullptr;
	}
	const uint64_t base = rss(), cache = page_cache();
	reset_peak();
	const uint64_t engine_bytes = engines.host_bytes_written();
	rusage before {}, after {};
	getrusage(RUSAGE_SELF, &before);
	const auto start = Clock::now();
	const std::vector<CopyStats> stats =
		copy_bo_contents(dir, gpus.jobs, ImageDir::files(dirfd.get()), kKfd, kBudget, engines);
	Run r;
	r.seconds = seconds_since(start);
	getrusage(RUSAGE_SELF, &after);
	r.user_seconds = cpu_seconds(after.ru_utime) - cpu_seconds(before.ru_utime);
	r.engine_bytes = engines.host_bytes_written() - engine_bytes;
	r.memory = peak_rss() > base ? peak_rss() - base : 0;
	const uint64_t cache_now = page_cache();
	r.cache = cache_now > cache ? cache_now - cache : 0;
	for (size_t i = 0; i < stats.size(); i++) {
		const CopyStats &s = stats[i];
		r.bytes += s.bytes;
		r.io_bytes += s.io_bytes;
		r.zero_bytes += s.zero_bytes;
		r.chain_bytes += s.chain_bytes;
		r.io_seconds += s.io_seconds;
		r.sum_seconds += s.sum_seconds;
		r.gpu_seconds += s.seconds;
		if (dir == CopyDirection::to_image) {
			gpus.sums[i] = s.sums;
			continue;
		}
		if (s.sums.blocks != gpus.sums[i].blocks)
			fail(-EIO, "GPU 0x%04x: the restore's sums differ from the dump's", s.gpu_id);
	}
	if (dir == CopyDirection::to_image) {
		ImageSums sums;
		sums.pages = gpus.sums;
		write_image_sums(ImageDir::files(dirfd.get()), kKfd, sums);
	}
	for (GpuCopyJob &job : gpus.jobs)
		job.chain = nullptr, job.sums = nullptr;
	return r;
}

// What the same cores reach without the plugin: memcpy, and the sink's own write() and read() of
// files in 8 MiB pieces, on one thread and on one per core (GB/s in all).
// The same copy three times: the run of the median time (a virtual machine's rates wander).
template <typename Fn> Run median_of_three(Fn &&copy_once)
{
	std::vector<Run> runs;
	for (int i = 0; i < 3; i++)
		runs.push_back(copy_once());
	std::sort(runs.begin(), runs.end(), [](const Run &a, const Run &b) { return a.seconds < b.seconds; });
	return runs[1];
}

struct Reference {
	unsigned cores = 1;
	double memcpy_one = 0, memcpy_all = 0;
	double write_one = 0, write_all = 0;
	double read_one = 0, read_all = 0;
};

int failures = 0;

// One case in two lines: the rates against the sink's and memcpy's, then where the GPUs' time
// went and the memory it took.
void print(const char *what, unsigned n, bool dump, const Run &r, const Reference &ref)
{
	const double total = static_cast<double>(r.bytes) / 1e9 / r.seconds;
	const double per_gpu = total / n;
	// the plugin's own work: the CPU time it took outside the kernel, less the engine's memcpy
	const double engine_seconds = static_cast<double>(r.engine_bytes) / 1e9 / ref.memcpy_one;
	const double own_seconds = std::max(0.01, r.user_seconds - engine_seconds); // the clock's tick
	const double own = static_cast<double>(r.bytes) / 1e9 / own_seconds;
	const double rest = std::max(0.0, r.gpu_seconds - r.io_seconds - r.sum_seconds);
	const uint64_t bound = n * kBudget;
	std::printf("  %-20s %u GPU%s: %6.2f GB/s per GPU = %.2f of the sink's %s on one core | %6.2f GB/s in all = "
		    "%.2f of it on %u | the plugin's own work %6.2f GB/s of CPU time = %.2f of memcpy on one core\n",
		    what, n, n > 1 ? "s" : " ", per_gpu, per_gpu / (dump ? ref.write_one : ref.read_one),
		    dump ? "write" : "read", total, total / (dump ? ref.write_all : ref.read_all), ref.cores, own,
		    own / ref.memcpy_one);
	std::printf(
		"  %-20s         the GPUs' time: image I/O %2.0f %%, checksums %2.0f %%, the rest %2.0f %%%s | "
		"memory %4.0f MiB, bound %4.0f MiB%s%s\n",
		"", 100 * r.io_seconds / r.gpu_seconds, 100 * r.sum_seconds / r.gpu_seconds, 100 * rest / r.gpu_seconds,
		r.engine_bytes ? strprintf(" (of it the engine's first round: %.0f MiB, %.0f %% of the bytes)",
					   static_cast<double>(r.engine_bytes) / MiB,
					   100.0 * static_cast<double>(r.engine_bytes) / static_cast<double>(r.bytes))
					 .c_str()
			       : "",
		static_cast<double>(r.memory) / MiB, static_cast<double>(bound) / MiB,
		r.cache ? strprintf(", page cache +%.0f MiB", static_cast<double>(r.cache) / MiB).c_str() : "",
		r.memory > bound + kMemorySlack ? "  <-- over the bound and 64 MiB" : "");
	if (r.memory > bound + kMemorySlack)
		failures++;
}

void clear(const fs::path &dir)
{
	for (const auto &e : fs::directory_iterator(dir))
		fs::remove_all(e.path());
}

// Of every ten blocks, the first `dense_in_ten` hold data, counted anew in each `period` (so that
// the engine's staging ring, a period long, always holds the same kind of block at a place).
std::function<bool(uint64_t)> dense_map(unsigned dense_in_ten, uint64_t period)
{
	const uint64_t blocks = period / test::PatternVram::kBlock;
	return [dense_in_ten, blocks](uint64_t block) { return block % blocks % 10 < dense_in_ten; };
}

void scaling(const fs::path &sink, const Reference &ref, uint64_t sink_room)
{
	const uint64_t per_gpu_cap = std::max<uint64_t>(256 * MiB, std::min<uint64_t>(4 * GiB, sink_room / 2));
	for (const Shape shape : { Shape { "dense", 10 }, Shape { "sparse", 1 } }) {
		std::printf("%s: %s\n", shape.name,
			    shape.dense_in_ten == 10 ? "every block holds data"
						     : "one block in ten holds data, the rest are zeros");
		for (const unsigned n : { 1u, 2u, 4u, 8u }) {
			// the images of all GPUs fit the room
			const uint64_t dense_part = std::max<uint64_t>(1, shape.dense_in_ten);
			uint64_t each = std::min(per_gpu_cap, sink_room * 10 / dense_part / n);
			each = std::max<uint64_t>(kBoSize, each / kBoSize * kBoSize);
			Gpus gpus = gpus_of(n, each);
			gpus.sums.resize(n);
			test::PatternVram vram;
			vram.period = test::ring_period(kBudget, each);
			vram.dense = dense_map(shape.dense_in_ten, vram.period);
			test::PatternVramEngines engines(vram);
			const fs::path dir = sink / "images";
			fs::create_directories(dir);
			const Run dump =
				median_of_three([&] { return copy(CopyDirection::to_image, gpus, dir, engines); });
			const std::string label = strprintf("%.1f GiB", static_cast<double>(each) / GiB);
			print(strprintf("dump %s", label.c_str()).c_str(), n, true, dump, ref);
			const Run restore =
				median_of_three([&] { return copy(CopyDirection::from_image, gpus, dir, engines); });
			print(strprintf("restore %s", label.c_str()).c_str(), n, false, restore, ref);
			if (dump.engine_bytes > n * vram.period) {
				std::printf("  the engine wrote %.0f MiB of host memory in a dump: more than its first "
					    "round\n",
					    static_cast<double>(dump.engine_bytes) / MiB);
				failures++;
			}
			clear(dir);
		}
	}
}

// A chain of five dumps (the first whole, each next one after a fifth of the blocks changed)
// restored from its last, against a whole dump of the same memory restored.
void chain(const fs::path &sink, const Reference &ref, uint64_t sink_room)
{
	const unsigned n = 2;
	uint64_t each = std::min<uint64_t>(2 * GiB, sink_room / 4 / n);
	each = std::max<uint64_t>(kBoSize, each / kBoSize * kBoSize);
	Gpus gpus = gpus_of(n, each);
	gpus.sums.resize(n);
	unsigned generation = 0;
	test::PatternVram vram;
	vram.period = test::ring_period(kBudget, each);
	vram.dense = dense_map(10, vram.period);
	// dump g changes the blocks whose index is g modulo 5: a fifth each time
	vram.version = [&generation](uint64_t block) {
		return generation == 0 ? 0u : (block % 5 < generation ? 1u + static_cast<unsigned>(block % 5) : 0u);
	};
	test::PatternVramEngines engines(vram);
	std::printf("chain: %u GPUs of %.1f GiB, five dumps, each after a fifth of the blocks changed\n", n,
		    static_cast<double>(each) / GiB);
	fs::path parent;
	for (generation = 0; generation < 5; generation++) {
		const fs::path dir = sink / strprintf("chain-%u", generation);
		fs::create_directories(dir);
		if (!parent.empty())
			fs::create_directory_symlink(fs::path("..") / parent.filename(), dir / "parent");
		const Run r = copy(CopyDirection::to_image, gpus, dir, engines);
		print(strprintf("dump %u", generation + 1).c_str(), n, true, r, ref);
		parent = dir;
	}
	generation = 4;
	const Run chained = median_of_three([&] { return copy(CopyDirection::from_image, gpus, parent, engines); });
	print("restore the chain", n, false, chained, ref);
	const fs::path whole = sink / "whole";
	fs::create_directories(whole);
	copy(CopyDirection::to_image, gpus, whole, engines);
	const Run full = median_of_three([&] { return copy(CopyDirection::from_image, gpus, whole, engines); });
	print("restore a whole dump", n, false, full, ref);
	std::printf("  the chain's restore took %.2fx a whole one's (%.0f %% of its bytes from earlier dumps)\n",
		    chained.seconds / full.seconds, 100.0 * static_cast<double>(chained.chain_bytes) / chained.bytes);
	clear(sink);
}

int run()
{
	const char *env = std::getenv("HOST_PATH_SINK");
	const fs::path base = env && *env ? fs::path(env) : fs::path("/dev/shm");
	const fs::path sink = base / strprintf("host-path-bench.%d", getpid());
	fs::create_directories(sink);
	struct statvfs vfs {};
	statvfs(sink.c_str(), &vfs);
	// at most half the sink's free room, and 8 GiB
	const uint64_t room = std::min<uint64_t>(8 * GiB, static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize / 2);

	Reference ref;
	ref.cores = std::max(1u, std::thread::hardware_concurrency());
	// Once over all the room the sink will take, untimed: a virtual machine's host hands over its
	// memory at the first touch, several times slower than memory that was touched before.
	sink_gbps(sink, ref.cores, room / ref.cores, true);
	ref.memcpy_one = memcpy_gbps(1, 2 * GiB);
	ref.memcpy_all = memcpy_gbps(ref.cores, 1 * GiB);
	ref.write_one = sink_gbps(sink, 1, 2 * GiB, true);
	ref.read_one = sink_gbps(sink, 1, 2 * GiB, false);
	ref.write_all = sink_gbps(sink, ref.cores, 1 * GiB, true);
	ref.read_all = sink_gbps(sink, ref.cores, 1 * GiB, false);
	clear(sink);
	std::printf("host path: %u cores; memcpy %.2f GB/s on one, %.2f on all; the sink, %s: write %.2f GB/s on one "
		    "core, %.2f on all, read %.2f and %.2f; %.1f GiB of it used at most; staging %llu MiB per GPU\n",
		    ref.cores, ref.memcpy_one, ref.memcpy_all, base.c_str(), ref.write_one, ref.write_all, ref.read_one,
		    ref.read_all, static_cast<double>(room) / GiB, static_cast<unsigned long long>(kBudget / MiB));
	try {
		scaling(sink, ref, room);
		chain(sink, ref, room);
	} catch (const std::exception &e) {
		std::printf("host path: %s\n", e.what());
		failures++;
	}
	fs::remove_all(sink);
	return failures ? 1 : 0;
}

} // namespace
} // namespace amdgpu

int main()
{
	return amdgpu::run();
}
