// SPDX-License-Identifier: GPL-2.0-only
//
// The plugin's image files under criu's image directory: upstream's names and framing. Every
// file is an 8-byte host-endian payload size followed by the payload (no magic). Readers check
// the frame against the file before trusting it, so a truncated, padded or garbage file is an
// error naming the file, never a crash or an absurd allocation.
#pragma once

#include "images/sparse_pages.hpp"
#include "support/unique_fd.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

class IoBatch; // copy/io_pool.hpp

inline constexpr size_t kFrameHeaderSize = 8;

// Time spent in the kernel reading or writing an image, added to from any thread.
class IoTime {
public:
	IoTime() = default;
	IoTime(IoTime &&other) noexcept : ns_(other.ns_.load()) {}
	IoTime &operator=(IoTime &&) = delete;
	void add(uint64_t ns) { ns_ += ns; }
	double seconds() const { return static_cast<double>(ns_.load()) / 1e9; }

private:
	std::atomic<uint64_t> ns_ { 0 };
};

std::string kfd_image_name(uint32_t id);		    // amdgpu-kfd-<id>.img
std::string pages_image_name(uint32_t id, uint32_t gpu_id); // amdgpu-pages-<id>-<gpuid %04x>.img
std::string render_image_name(uint32_t id);		    // amdgpu-renderD-<id>.img
std::string dmabuf_image_name(uint32_t id);		    // amdgpu-dmabuf_<id>.img (upstream's underscore)
std::string sums_image_name(uint32_t id);		    // amdgpu-sums-<id>.img (ours: image_checksums.hpp)
// The ids of the amdgpu-kfd-<id>.img in a directory (images of processes with GPU state), sorted.
std::vector<uint32_t> kfd_image_ids(int dirfd);
std::vector<uint32_t> sums_image_ids(int dirfd);   // the same of amdgpu-sums-<id>.img
std::vector<uint32_t> render_image_ids(int dirfd); // and of amdgpu-renderD-<id>.img

// Where the plugin's images go and come from. Normally files in criu's image directory. With
// `criu --stream`, criu's image streamer: each image is a pipe handed out once, read or written
// front to back, and restore gets the images in the order it asks for them, so the plugin must
// ask for each exactly once, in the order the dump wrote them.
class ImageDir {
public:
	enum class Stream { none, capture, serve };
	// Asks criu's streamer for an image: returns an fd, -ENOENT if a served stream lacks it,
	// another negative value on failure. `write` is true for capture.
	using StreamOpen = std::function<int(const std::string &name, bool write)>;

	static ImageDir files(int dirfd) { return ImageDir(dirfd, Stream::none, nullptr); }
	static ImageDir streamed(int dirfd, Stream direction, StreamOpen open)
	{
		return ImageDir(dirfd, direction, std::move(open));
	}

	bool streamed() const { return stream_ != Stream::none; }
	int dirfd() const { return dirfd_; }

	unique_fd create(const std::string &name) const;
	// An empty unique_fd if the image does not exist.
	unique_fd open_if_exists(const std::string &name) const;
	// Removes the image file if there is one (best effort, for a dump that failed); a stream has
	// nothing to take back.
	void remove(const std::string &name) const noexcept;

private:
	ImageDir(int dirfd, Stream stream, StreamOpen open) : dirfd_(dirfd), stream_(stream), open_(std::move(open)) {}

	int dirfd_;
	Stream stream_;
	StreamOpen open_;
};

// Streams one framed image: the header is written first, then payload bytes in any number of
// pieces; finish() verifies that exactly the announced size was written.
class ImageWriter {
public:
	// `exact`: the payload is `payload_size` bytes. `at_most`: it is up to `payload_size` bytes, and
	// finish() writes the header again with the bytes written (a regular file only: a stream
	// cannot go back; an incremental pages image, whose size is known only at its end).
	enum class Sizing { exact, at_most };
	ImageWriter(const ImageDir &dir, std::string name, uint64_t payload_size, Sizing sizing = Sizing::exact);
	void write(std::span<const uint8_t> bytes);
	// Like write(), but into a regular file the blocks of zeros become holes (sparse_pages.hpp);
	// a stream gets every byte.
	void write_sparse(std::span<const uint8_t> bytes);
	// write_sparse() for a caller that already cut `bytes` into zero_runs(bytes, written()). Given
	// `io`, a regular file's data extents are written by tasks posted to it, and the caller keeps
	// `bytes` until the batch is waited for, and waits before finish().
	void write_runs(std::span<const uint8_t> bytes, std::span<const Extent> runs, IoBatch *io = nullptr);
	// Everything before payload offset `to` is in the file (its writes done): it starts on its way
	// to the disk, and what lies more than kWriteBehind before it leaves the page cache once it is
	// there. A dump then holds at most twice that of an image in the page cache, not the node's
	// memory's worth of dirty pages. No-op for a stream and on tmpfs.
	void written_before(uint64_t to);
	static constexpr uint64_t kWriteBehind = 64ull << 20;
	void finish();
	const std::string &name() const { return name_; }
	uint64_t written() const { return written_; } // payload bytes so far, holes included
	uint64_t stored() const { return stored_; }   // payload bytes actually written
	uint64_t holes() const { return written_ - stored_; }
	double io_seconds() const { return io_time_.seconds(); } // in the kernel, writing the payload

private:
	void check_room(size_t bytes) const; // fails if `bytes` more would pass the announced size

	unique_fd fd_;
	std::string name_;
	uint64_t size_;
	Sizing sizing_;
	uint64_t written_ = 0; // payload bytes accounted for, holes included
	uint64_t stored_ = 0;
	bool regular_ = false;
	IoTime io_time_;
	uint64_t flushing_from_ = 0; // payload: writeback started before it
	uint64_t dropped_to_ = 0;    // payload: on the disk and out of the cache before it
};

// Reads one framed image. Opening validates the header against the file size (a stream has
// none) and `max_size`; read() fails on a short file.
class ImageReader {
public:
	ImageReader(const ImageDir &dir, std::string name, uint64_t max_size);
	// Without the image: nothing, where the constructor would throw.
	static std::optional<ImageReader> open_if_exists(const ImageDir &dir, std::string name, uint64_t max_size);
	uint64_t payload_size() const { return size_; }
	void read(std::span<uint8_t> bytes);
	// Where the payload of a regular file has holes (none for a stream).
	HoleMap holes() const;
	// Moves past `n` payload bytes of a hole without reading them (a stream has none: holes()).
	void skip(uint64_t n);
	// Reads at a payload offset, wherever the reader stands (a regular file only), from any thread.
	void read_at(uint64_t offset, std::span<uint8_t> bytes) const;
	// After read_once(): everything before payload offset `to` was read, and leaves the page
	// cache (read() does this itself; a caller of read_at() from several threads says when).
	void drop_before(uint64_t to) const;
	const std::string &name() const { return name_; }
	double io_seconds() const { return io_time_.seconds(); } // in the kernel, reading the payload
	// A regular file: read_at() works, from any thread.
	bool positional() const { return regular_; }
	// The payload is read once (a pages image): the kernel is told to read ahead, and the pages
	// read leave the page cache, which would otherwise fill a node's memory with images nobody
	// reads again while the task being restored needs it. No-op for a stream and on tmpfs.
	void read_once();

private:
	ImageReader(unique_fd fd, std::string name, uint64_t max_size);

	unique_fd fd_;
	std::string name_;
	uint64_t size_;
	uint64_t consumed_ = 0;
	bool regular_ = false;
	mutable IoTime io_time_;
	bool once_ = false;
};

void write_image(const ImageDir &dir, const std::string &name, std::span<const uint8_t> payload);
std::vector<uint8_t> read_image(const ImageDir &dir, const std::string &name, uint64_t max_size);
std::vector<uint8_t> read_payload(ImageReader &reader);

} // namespace amdgpu
