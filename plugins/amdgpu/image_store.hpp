// SPDX-License-Identifier: GPL-2.0-only
//
// The plugin's image files under criu's image directory: upstream's names and framing. Every
// file is an 8-byte host-endian payload size followed by the payload (no magic). Readers check
// the frame against the file before trusting it, so a truncated, padded or garbage file is an
// error naming the file, never a crash or an absurd allocation.
#pragma once

#include "unique_fd.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace amdgpu {

inline constexpr size_t kFrameHeaderSize = 8;

std::string kfd_image_name(uint32_t id);		    // amdgpu-kfd-<id>.img
std::string pages_image_name(uint32_t id, uint32_t gpu_id); // amdgpu-pages-<id>-<gpuid %04x>.img
std::string render_image_name(uint32_t id);		    // amdgpu-renderD-<id>.img

// True if `name` exists in `dirfd` (any other error than ENOENT throws).
bool image_exists(int dirfd, const std::string &name);

// Streams one framed image: the header is written first, then payload bytes in any number of
// pieces; finish() verifies that exactly the announced size was written.
class ImageWriter {
public:
	ImageWriter(int dirfd, std::string name, uint64_t payload_size);
	void write(std::span<const uint8_t> bytes);
	void finish();
	const std::string &name() const { return name_; }

private:
	unique_fd fd_;
	std::string name_;
	uint64_t size_;
	uint64_t written_ = 0;
};

// Reads one framed image. The constructor validates the header against the file size and
// `max_size`; read() fails on a short file.
class ImageReader {
public:
	ImageReader(int dirfd, std::string name, uint64_t max_size);
	uint64_t payload_size() const { return size_; }
	void read(std::span<uint8_t> bytes);
	const std::string &name() const { return name_; }

private:
	unique_fd fd_;
	std::string name_;
	uint64_t size_;
	uint64_t consumed_ = 0;
};

void write_image(int dirfd, const std::string &name, std::span<const uint8_t> payload);
std::vector<uint8_t> read_image(int dirfd, const std::string &name, uint64_t max_size);

} // namespace amdgpu
