// SPDX-License-Identifier: GPL-2.0-only
#include "images/image_store.hpp"

#include "copy/io_pool.hpp"
#include "support/error.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

namespace amdgpu {

namespace {

void write_all(int fd, const std::string &name, const uint8_t *p, size_t len)
{
	while (len) {
		const ssize_t n = ::write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_errno(errno, "failed to write image %s", name.c_str());
		p += n;
		len -= static_cast<size_t>(n);
	}
}

// The payload of a regular file is written in place, so that pieces may be written in any order,
// from any thread; what is never written stays a hole.
void pwrite_all(int fd, const std::string &name, const uint8_t *p, size_t len, uint64_t payload_offset)
{
	uint64_t at = kFrameHeaderSize + payload_offset;
	while (len) {
		const ssize_t n = ::pwrite(fd, p, len, static_cast<off_t>(at));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_errno(errno, "failed to write image %s at payload byte %llu", name.c_str(),
				   static_cast<unsigned long long>(at - kFrameHeaderSize));
		p += n;
		at += static_cast<uint64_t>(n);
		len -= static_cast<size_t>(n);
	}
}

// Reads exactly len bytes; returns how many were read before end of file.
size_t read_full(int fd, const std::string &name, uint8_t *p, size_t len)
{
	size_t done = 0;
	while (done < len) {
		const ssize_t n = ::read(fd, p + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_errno(errno, "failed to read image %s", name.c_str());
		if (n == 0)
			break;
		done += static_cast<size_t>(n);
	}
	return done;
}

// Adds the time from its making to its end to `total`: the payload's reads and writes, so that the
// copy's log line can say how much of its time the kernel took.
class IoClock {
public:
	explicit IoClock(IoTime &total) : total_(total), start_(std::chrono::steady_clock::now()) {}
	~IoClock()
	{
		total_.add(static_cast<uint64_t>(
			std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_)
				.count()));
	}
	IoClock(const IoClock &) = delete;
	IoClock &operator=(const IoClock &) = delete;

private:
	IoTime &total_;
	std::chrono::steady_clock::time_point start_;
};

// criu's streamer pipes start at the kernel's 64 KiB: a pages image would cross them in
// thousands of sleeps and wake-ups of both ends. Best effort: the image goes through either way.
unique_fd widened_pipe(int fd)
{
	constexpr int kStreamPipeSize = 1 << 20; // the default of /proc/sys/fs/pipe-max-size
	(void)fcntl(fd, F_SETPIPE_SZ, kStreamPipeSize);
	return unique_fd(fd);
}

} // namespace

std::string kfd_image_name(uint32_t id)
{
	return strprintf("amdgpu-kfd-%u.img", id);
}

namespace {

// The ids of the images named `format` (one %u, then ".img") in a directory, sorted.
std::vector<uint32_t> image_ids(int dirfd, const char *format)
{
	// A new open of the directory: the caller's fd (criu's) keeps its offset.
	const int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fail_errno(errno, "cannot list the image directory");
	std::unique_ptr<DIR, int (*)(DIR *)> dir(fdopendir(fd), closedir);
	if (!dir) {
		const int err = errno;
		close(fd);
		fail_errno(err, "cannot list the image directory");
	}
	std::vector<uint32_t> ids;
	while (const dirent *de = readdir(dir.get())) {
		unsigned int id;
		int end = 0;
		if (sscanf(de->d_name, format, &id, &end) == 1 && end && !de->d_name[end])
			ids.push_back(id);
	}
	std::sort(ids.begin(), ids.end());
	return ids;
}

} // namespace

std::vector<uint32_t> kfd_image_ids(int dirfd)
{
	return image_ids(dirfd, "amdgpu-kfd-%u.img%n");
}

std::vector<uint32_t> render_image_ids(int dirfd)
{
	return image_ids(dirfd, "amdgpu-renderD-%u.img%n");
}

std::vector<uint32_t> sums_image_ids(int dirfd)
{
	return image_ids(dirfd, "amdgpu-sums-%u.img%n");
}

std::string pages_image_name(uint32_t id, uint32_t gpu_id)
{
	return strprintf("amdgpu-pages-%u-%04x.img", id, gpu_id);
}

std::string render_image_name(uint32_t id)
{
	return strprintf("amdgpu-renderD-%u.img", id);
}

std::string dmabuf_image_name(uint32_t id)
{
	return strprintf("amdgpu-dmabuf_%u.img", id);
}

std::string sums_image_name(uint32_t id)
{
	return strprintf("amdgpu-sums-%u.img", id);
}

unique_fd ImageDir::create(const std::string &name) const
{
	if (stream_ == Stream::serve)
		fail(-EINVAL, "cannot write image %s while criu restores from its image streamer", name.c_str());
	if (stream_ == Stream::capture) {
		const int fd = open_(name, true);
		if (fd < 0)
			fail(fd == -1 ? -EIO : fd, "criu's image streamer did not take image %s", name.c_str());
		return widened_pipe(fd);
	}
	unique_fd fd(openat(dirfd_, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
	if (!fd)
		fail_errno(errno, "failed to create image %s", name.c_str());
	return fd;
}

unique_fd ImageDir::open_if_exists(const std::string &name) const
{
	if (stream_ == Stream::capture)
		fail(-EINVAL, "cannot read image %s while criu dumps into its image streamer", name.c_str());
	if (stream_ == Stream::serve) {
		const int fd = open_(name, false);
		if (fd == -ENOENT)
			return {};
		if (fd < 0)
			fail(fd == -1 ? -EIO : fd, "criu's image streamer did not serve image %s", name.c_str());
		return widened_pipe(fd);
	}
	unique_fd fd(openat(dirfd_, name.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd && errno != ENOENT)
		fail_errno(errno, "failed to open image %s", name.c_str());
	return fd;
}

void ImageDir::remove(const std::string &name) const noexcept
{
	if (stream_ == Stream::none)
		(void)unlinkat(dirfd_, name.c_str(), 0);
}

ImageWriter::ImageWriter(const ImageDir &dir, std::string name, uint64_t payload_size, Sizing sizing)
    : fd_(dir.create(name)), name_(std::move(name)), size_(payload_size), sizing_(sizing)
{
	struct stat st;
	regular_ = !fstat(fd_.get(), &st) && S_ISREG(st.st_mode);
	if (sizing_ == Sizing::at_most && !regular_)
		fail(-EINVAL, "image %s: its size is known only at its end, and a stream cannot go back to write it",
		     name_.c_str());
	uint8_t header[kFrameHeaderSize];
	static_assert(sizeof(size_) == kFrameHeaderSize);
	std::memcpy(header, &size_, sizeof(header));
	write_all(fd_.get(), name_, header, sizeof(header));
}

void ImageWriter::check_room(size_t bytes) const
{
	if (bytes > size_ - written_)
		fail(-EINVAL, "image %s: writing %zu bytes past its announced size of %llu", name_.c_str(),
		     bytes - static_cast<size_t>(size_ - written_), static_cast<unsigned long long>(size_));
}

void ImageWriter::write(std::span<const uint8_t> bytes)
{
	check_room(bytes.size());
	{
		const IoClock clock(io_time_);
		if (regular_)
			pwrite_all(fd_.get(), name_, bytes.data(), bytes.size(), written_);
		else
			write_all(fd_.get(), name_, bytes.data(), bytes.size());
	}
	written_ += bytes.size();
	stored_ += bytes.size();
}

void ImageWriter::write_sparse(std::span<const uint8_t> bytes)
{
	if (!regular_)
		return write(bytes);
	write_runs(bytes, zero_runs(bytes, written_));
}

void ImageWriter::write_runs(std::span<const uint8_t> bytes, std::span<const Extent> runs, IoBatch *io)
{
	if (!regular_)
		return write(bytes);
	check_room(bytes.size());
	for (const Extent &e : runs) {
		if (e.zero)
			continue; // a hole
		const auto at = bytes.subspan(static_cast<size_t>(e.offset - written_), static_cast<size_t>(e.len));
		stored_ += e.len;
		auto write = [this, at, offset = e.offset] {
			const IoClock clock(io_time_);
			pwrite_all(fd_.get(), name_, at.data(), at.size(), offset);
		};
		if (io)
			io->post(write);
		else
			write();
	}
	written_ += bytes.size();
}

void ImageWriter::written_before(uint64_t to)
{
	if (!regular_ || to <= flushing_from_)
		return;
	// best effort both: the bytes are in the file either way
	(void)sync_file_range(fd_.get(), static_cast<off_t>(kFrameHeaderSize + flushing_from_),
			      static_cast<off_t>(to - flushing_from_), SYNC_FILE_RANGE_WRITE);
	flushing_from_ = to;
	if (to < dropped_to_ + 2 * kWriteBehind)
		return;
	const uint64_t drop_to = to - kWriteBehind;
	const IoClock clock(io_time_); // waiting for the disk is the image's time
	(void)sync_file_range(fd_.get(), static_cast<off_t>(kFrameHeaderSize + dropped_to_),
			      static_cast<off_t>(drop_to - dropped_to_),
			      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
	(void)posix_fadvise(fd_.get(), 0, static_cast<off_t>(kFrameHeaderSize + drop_to), POSIX_FADV_DONTNEED);
	dropped_to_ = drop_to;
}

void ImageWriter::finish()
{
	if (sizing_ == Sizing::at_most && written_ != size_) {
		size_ = written_;
		uint8_t header[kFrameHeaderSize];
		std::memcpy(header, &size_, sizeof(header));
		if (pwrite(fd_.get(), header, sizeof(header), 0) != static_cast<ssize_t>(sizeof(header)))
			fail_errno(errno, "image %s: cannot write its size", name_.c_str());
	}
	if (written_ != size_)
		fail(-EIO, "image %s: %llu of %llu payload bytes written", name_.c_str(),
		     static_cast<unsigned long long>(written_), static_cast<unsigned long long>(size_));
	// a file that ends in a hole has its size only once it is set
	if (regular_ && ftruncate(fd_.get(), static_cast<off_t>(kFrameHeaderSize + size_)))
		fail_errno(errno, "image %s: cannot set its size to %llu bytes", name_.c_str(),
			   static_cast<unsigned long long>(kFrameHeaderSize + size_));
	if (::close(fd_.release()))
		fail_errno(errno, "failed to close image %s", name_.c_str());
}

ImageReader::ImageReader(const ImageDir &dir, std::string name, uint64_t max_size)
    : ImageReader(dir.open_if_exists(name), name, max_size)
{
}

std::optional<ImageReader> ImageReader::open_if_exists(const ImageDir &dir, std::string name, uint64_t max_size)
{
	unique_fd fd = dir.open_if_exists(name);
	if (!fd)
		return std::nullopt;
	return ImageReader(std::move(fd), std::move(name), max_size);
}

ImageReader::ImageReader(unique_fd fd, std::string name, uint64_t max_size) : fd_(std::move(fd)), name_(std::move(name))
{
	if (!fd_)
		fail(-ENOENT, "image %s is missing", name_.c_str());

	uint8_t header[kFrameHeaderSize];
	const size_t got = read_full(fd_.get(), name_, header, sizeof(header));
	if (got != sizeof(header))
		fail(-EINVAL, "image %s is truncated: %zu bytes, shorter than its %zu-byte size header", name_.c_str(),
		     got, kFrameHeaderSize);
	std::memcpy(&size_, header, sizeof(size_));

	if (size_ > max_size)
		fail(-EINVAL, "image %s announces %llu payload bytes, more than the %llu this image may hold",
		     name_.c_str(), static_cast<unsigned long long>(size_), static_cast<unsigned long long>(max_size));

	// A regular file must hold exactly the announced payload: fewer bytes mean truncation, more
	// mean the file is not what its header says.
	struct stat st;
	if (fstat(fd_.get(), &st))
		fail_errno(errno, "cannot stat image %s", name_.c_str());
	regular_ = S_ISREG(st.st_mode);
	if (regular_) {
		const uint64_t actual = static_cast<uint64_t>(st.st_size) - kFrameHeaderSize;
		if (actual < size_)
			fail(-EINVAL, "image %s is truncated: header announces %llu payload bytes, file has %llu",
			     name_.c_str(), static_cast<unsigned long long>(size_),
			     static_cast<unsigned long long>(actual));
		if (actual > size_)
			fail(-EINVAL, "image %s has %llu bytes after its announced %llu-byte payload", name_.c_str(),
			     static_cast<unsigned long long>(actual - size_), static_cast<unsigned long long>(size_));
	}
}

void ImageReader::read_once()
{
	if (!regular_ || once_)
		return;
	once_ = true;
	(void)posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
}

// Everything before the payload offset `to` leaves the page cache, best effort (what is cached
// stays readable either way). From the file's start each time: the kernel drops a large folio
// only when the range covers all of it, and one may straddle every read's end; the pages
// dropped before cost nothing to walk again. At the payload's end, the last page goes too.
void ImageReader::drop_before(uint64_t to) const
{
	if (!once_)
		return;
	static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
	const uint64_t file_to = to == size_ ? 0 : (kFrameHeaderSize + to) / page * page; // 0: to the end
	if (to == size_ || file_to)
		(void)posix_fadvise(fd_.get(), 0, static_cast<off_t>(file_to), POSIX_FADV_DONTNEED);
}

void ImageReader::read(std::span<uint8_t> bytes)
{
	if (bytes.size() > size_ - consumed_)
		fail(-EINVAL, "image %s: reading past its %llu-byte payload", name_.c_str(),
		     static_cast<unsigned long long>(size_));
	const IoClock clock(io_time_);
	const size_t got = read_full(fd_.get(), name_, bytes.data(), bytes.size());
	if (got != bytes.size())
		fail(-EINVAL, "image %s is truncated at payload byte %llu", name_.c_str(),
		     static_cast<unsigned long long>(consumed_ + got));
	consumed_ += got;
	drop_before(consumed_);
}

HoleMap ImageReader::holes() const
{
	return regular_ ? HoleMap::of_file(fd_.get(), kFrameHeaderSize, size_) : HoleMap();
}

void ImageReader::skip(uint64_t n)
{
	if (n > size_ - consumed_)
		fail(-EINVAL, "image %s: skipping past its %llu-byte payload", name_.c_str(),
		     static_cast<unsigned long long>(size_));
	if (!regular_)
		fail(-EINVAL, "image %s: a stream has no holes to skip", name_.c_str());
	if (lseek(fd_.get(), static_cast<off_t>(n), SEEK_CUR) < 0)
		fail_errno(errno, "image %s: cannot skip a hole at payload byte %llu", name_.c_str(),
			   static_cast<unsigned long long>(consumed_));
	consumed_ += n;
}

void ImageReader::read_at(uint64_t offset, std::span<uint8_t> bytes) const
{
	if (!regular_)
		fail(-EINVAL, "image %s: a stream is read front to back", name_.c_str());
	if (offset > size_ || bytes.size() > size_ - offset)
		fail(-EINVAL, "image %s: reading past its %llu-byte payload", name_.c_str(),
		     static_cast<unsigned long long>(size_));
	const IoClock clock(io_time_);
	size_t done = 0;
	while (done < bytes.size()) {
		const ssize_t n = pread(fd_.get(), bytes.data() + done, bytes.size() - done,
					static_cast<off_t>(kFrameHeaderSize + offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_errno(errno, "image %s: cannot read payload byte %llu", name_.c_str(),
				   static_cast<unsigned long long>(offset + done));
		if (n == 0)
			fail(-EINVAL, "image %s is truncated at payload byte %llu", name_.c_str(),
			     static_cast<unsigned long long>(offset + done));
		done += static_cast<size_t>(n);
	}
}

void write_image(const ImageDir &dir, const std::string &name, std::span<const uint8_t> payload)
{
	ImageWriter writer(dir, name, payload.size());
	writer.write(payload);
	writer.finish();
}

std::vector<uint8_t> read_payload(ImageReader &reader)
{
	std::vector<uint8_t> payload(static_cast<size_t>(reader.payload_size()));
	reader.read(payload);
	return payload;
}

std::vector<uint8_t> read_image(const ImageDir &dir, const std::string &name, uint64_t max_size)
{
	ImageReader reader(dir, name, max_size);
	return read_payload(reader);
}

} // namespace amdgpu
