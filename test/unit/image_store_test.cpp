// SPDX-License-Identifier: GPL-2.0-only
#include "images/image_store.hpp"

#include "support/error.hpp"
#include "support/page_cache.hpp"
#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace amdgpu {
namespace {

using test::TempDir;

std::string framed(uint64_t announced, const std::string &payload)
{
	std::string out(8, '\0');
	std::memcpy(out.data(), &announced, 8);
	return out + payload;
}

// Runs fn, expects an Error with `err` whose message contains every string in `needles`.
template <typename Fn> void expect_error(Fn &&fn, int err, std::initializer_list<const char *> needles)
{
	try {
		fn();
		ADD_FAILURE() << "no error raised";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), err) << e.what();
		for (const char *needle : needles)
			EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
				<< "'" << needle << "' not in: " << e.what();
	}
}

TEST(ImageStore, NamesFollowUpstreamFormats)
{
	EXPECT_EQ(kfd_image_name(7), "amdgpu-kfd-7.img");
	EXPECT_EQ(pages_image_name(7, 0x4f1e), "amdgpu-pages-7-4f1e.img");
	EXPECT_EQ(pages_image_name(12, 0x1a), "amdgpu-pages-12-001a.img");
	EXPECT_EQ(render_image_name(9), "amdgpu-renderD-9.img");
}

TEST(ImageStore, ImagesWithGpuStateAreThoseWithAKfdImage)
{
	// What decides whether a restore starts its guard (criu before 4.1 lists no plugins).
	TempDir dir;
	dir.write("core-1.img", "x");
	dir.write("amdgpu-renderD-7.img", "x");
	dir.write("amdgpu-kfd-.img", "x");
	dir.write("amdgpu-kfd-3.img.bak", "x");
	EXPECT_TRUE(kfd_image_ids(dir.fd()).empty());
	dir.write("amdgpu-kfd-12.img", "x");
	dir.write("amdgpu-kfd-3.img", "x");
	EXPECT_EQ(kfd_image_ids(dir.fd()), (std::vector<uint32_t> { 3, 12 }));
	EXPECT_EQ(lseek(dir.fd(), 0, SEEK_CUR), 0) << "the caller's directory fd keeps its offset";
}

TEST(ImageStore, RoundTripWritesSizeHeaderAndPrivateMode)
{
	TempDir dir;
	const std::string payload = "criu-amdgpu payload";
	write_image(ImageDir::files(dir.fd()), "amdgpu-kfd-1.img",
		    { reinterpret_cast<const uint8_t *>(payload.data()), payload.size() });

	struct stat st;
	ASSERT_EQ(stat((dir.path() / "amdgpu-kfd-1.img").c_str(), &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0600u);
	EXPECT_EQ(static_cast<size_t>(st.st_size), 8 + payload.size());

	const auto back = read_image(ImageDir::files(dir.fd()), "amdgpu-kfd-1.img", 1024);
	EXPECT_EQ(std::string(back.begin(), back.end()), payload);
}

TEST(ImageStore, RewritingAnImageReplacesItWhole)
{
	TempDir dir;
	const std::string big(100, 'x'), small = "abc";
	write_image(ImageDir::files(dir.fd()), "a.img", { reinterpret_cast<const uint8_t *>(big.data()), big.size() });
	write_image(ImageDir::files(dir.fd()), "a.img",
		    { reinterpret_cast<const uint8_t *>(small.data()), small.size() });
	const auto back = read_image(ImageDir::files(dir.fd()), "a.img", 1024);
	EXPECT_EQ(std::string(back.begin(), back.end()), small);
}

TEST(ImageStore, TruncatedHeaderIsRejected)
{
	TempDir dir;
	dir.write("a.img", std::string("\x05\x00\x00", 3));
	expect_error([&] { read_image(ImageDir::files(dir.fd()), "a.img", 1024); }, -EINVAL, { "a.img", "truncated" });
}

TEST(ImageStore, TruncatedPayloadIsRejected)
{
	TempDir dir;
	dir.write("a.img", framed(100, "only this"));
	expect_error([&] { read_image(ImageDir::files(dir.fd()), "a.img", 1024); }, -EINVAL,
		     { "a.img", "truncated", "100" });
}

TEST(ImageStore, TrailingGarbageIsRejected)
{
	TempDir dir;
	dir.write("a.img", framed(3, "abcGARBAGE"));
	expect_error([&] { read_image(ImageDir::files(dir.fd()), "a.img", 1024); }, -EINVAL,
		     { "a.img", "7 bytes after" });
}

TEST(ImageStore, OversizedHeaderIsRejectedBeforeAllocating)
{
	TempDir dir;
	dir.write("a.img", framed(~0ull, "x"));
	expect_error([&] { read_image(ImageDir::files(dir.fd()), "a.img", 1 << 20); }, -EINVAL,
		     { "a.img", "18446744073709551615" });
}

TEST(ImageStore, MissingImageNamesTheFile)
{
	TempDir dir;
	expect_error([&] { read_image(ImageDir::files(dir.fd()), "amdgpu-kfd-3.img", 1024); }, -ENOENT,
		     { "amdgpu-kfd-3.img" });
	EXPECT_FALSE(ImageReader::open_if_exists(ImageDir::files(dir.fd()), "amdgpu-kfd-3.img", 1024));
}

TEST(ImageStore, WriterRefusesToWriteMoreOrLessThanAnnounced)
{
	TempDir dir;
	const uint8_t bytes[4] = { 1, 2, 3, 4 };
	{
		ImageWriter w(ImageDir::files(dir.fd()), "a.img", 2);
		expect_error([&] { w.write(bytes); }, -EINVAL, { "a.img" });
	}
	{
		ImageWriter w(ImageDir::files(dir.fd()), "b.img", 8);
		w.write(bytes);
		expect_error([&] { w.finish(); }, -EIO, { "b.img", "4 of 8" });
	}
}

TEST(ImageStore, ReaderStreamsInPieces)
{
	TempDir dir;
	dir.write("p.img", framed(6, "abcdef"));
	ImageReader r(ImageDir::files(dir.fd()), "p.img", 1024);
	EXPECT_EQ(r.payload_size(), 6u);
	uint8_t a[2], b[4];
	r.read(a);
	r.read(b);
	EXPECT_EQ(std::string(reinterpret_cast<char *>(b), 4), "cdef");
	uint8_t c[1];
	expect_error([&] { r.read(c); }, -EINVAL, { "p.img", "past" });
}

// criu's image streamer as the plugin sees it: every image a pipe, each served once. Captured
// images are collected when their writer closes the pipe; small images fit a pipe's buffer.
class FakeStreamer {
public:
	ImageDir capture()
	{
		return ImageDir::streamed(-1, ImageDir::Stream::capture, [this](const std::string &name, bool write) {
			EXPECT_TRUE(write);
			int fds[2];
			if (pipe(fds))
				return -1;
			pending_[name] = fds[0];
			return fds[1];
		});
	}

	ImageDir serve()
	{
		return ImageDir::streamed(-1, ImageDir::Stream::serve, [this](const std::string &name, bool write) {
			EXPECT_FALSE(write);
			requests.push_back(name);
			const auto it = images.find(name);
			if (it == images.end())
				return -ENOENT;
			int fds[2];
			if (pipe(fds))
				return -1;
			EXPECT_EQ(::write(fds[1], it->second.data(), it->second.size()),
				  static_cast<ssize_t>(it->second.size()));
			close(fds[1]);
			images.erase(it); // a stream serves an image once
			return fds[0];
		});
	}

	// Takes what the writers sent into `images`.
	void collect()
	{
		for (auto &[name, fd] : pending_) {
			char buf[4096];
			ssize_t n;
			while ((n = ::read(fd, buf, sizeof(buf))) > 0)
				images[name].append(buf, static_cast<size_t>(n));
			close(fd);
		}
		pending_.clear();
	}

	std::map<std::string, std::string> images;
	std::vector<std::string> requests;

private:
	std::map<std::string, int> pending_;
};

std::span<const uint8_t> bytes_of(const std::string &s)
{
	return { reinterpret_cast<const uint8_t *>(s.data()), s.size() };
}

TEST(ImageStore, StreamedImagesTravelFramedThroughCriusPipes)
{
	FakeStreamer streamer;
	write_image(streamer.capture(), "amdgpu-kfd-4.img", bytes_of("kfd state"));
	write_image(streamer.capture(), "amdgpu-pages-4-1234.img", bytes_of("vram"));
	streamer.collect();
	EXPECT_EQ(streamer.images["amdgpu-kfd-4.img"], framed(9, "kfd state"));

	const ImageDir served = streamer.serve();
	const auto kfd = read_image(served, "amdgpu-kfd-4.img", 1024);
	EXPECT_EQ(std::string(kfd.begin(), kfd.end()), "kfd state");
	EXPECT_EQ(streamer.requests, std::vector<std::string> { "amdgpu-kfd-4.img" });
}

TEST(ImageStore, StreamedImageTheStreamLacksIsAbsentNotAnError)
{
	FakeStreamer streamer;
	const ImageDir served = streamer.serve();
	EXPECT_FALSE(ImageReader::open_if_exists(served, "amdgpu-kfd-8.img", 1024));
	expect_error([&] { ImageReader r(served, "amdgpu-renderD-8.img", 1024); }, -ENOENT, { "amdgpu-renderD-8.img" });
}

TEST(ImageStore, StreamedImageIsCheckedLikeAFile)
{
	FakeStreamer streamer;
	streamer.images["short.img"] = framed(100, "abc");
	streamer.images["huge.img"] = framed(1 << 30, "");
	const ImageDir served = streamer.serve();
	expect_error([&] { read_image(served, "short.img", 1024); }, -EINVAL,
		     { "short.img", "truncated at payload byte 3" });
	expect_error([&] { read_image(served, "huge.img", 1024); }, -EINVAL, { "huge.img", "1073741824" });
}

TEST(ImageStore, StreamGoesOneWayAndItsFailuresNameTheImage)
{
	FakeStreamer streamer;
	expect_error([&] { ImageReader r(streamer.capture(), "a.img", 1024); }, -EINVAL, { "a.img", "dumps" });
	expect_error([&] { ImageWriter w(streamer.serve(), "b.img", 1); }, -EINVAL, { "b.img", "restores" });
	const ImageDir broken =
		ImageDir::streamed(-1, ImageDir::Stream::serve, [](const std::string &, bool) { return -1; });
	expect_error([&] { ImageReader r(broken, "c.img", 1024); }, -EIO, { "c.img", "streamer" });
}

// A restore reads a pages image once: what it read leaves the page cache (a node restoring a
// large job would otherwise fill its memory with images), front to back, and block by block as
// the copy says what it has read.
TEST(ImageReader, APagesImageReadOnceLeavesThePageCache)
{
	TempDir dir;
	if (test::on_tmpfs(dir.fd()))
		GTEST_SKIP() << "the test directory is on tmpfs, whose pages are the file itself";
	const size_t kPayload = 4 << 20;
	std::vector<uint8_t> payload(kPayload, 0x5a);
	write_image(ImageDir::files(dir.fd()), "amdgpu-pages-1-1000.img", payload);
	{
		const int fd = openat(dir.fd(), "amdgpu-pages-1-1000.img", O_RDONLY | O_CLOEXEC);
		fsync(fd); // only written-back pages can leave
		close(fd);
	}
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	ImageReader front(ImageDir::files(dir.fd()), "amdgpu-pages-1-1000.img", kPayload);
	front.read_once();
	std::vector<uint8_t> into(1 << 20);
	for (int i = 0; i < 4; i++)
		front.read(into);
	EXPECT_LE(test::cached_bytes(dir.fd(), "amdgpu-pages-1-1000.img"), page) << "read front to back";

	ImageReader blocks(ImageDir::files(dir.fd()), "amdgpu-pages-1-1000.img", kPayload);
	blocks.read_once();
	for (uint64_t at = 0; at < kPayload; at += into.size()) {
		blocks.read_at(at, into); // as the copy's I/O threads do
		blocks.drop_before(at + into.size());
	}
	EXPECT_LE(test::cached_bytes(dir.fd(), "amdgpu-pages-1-1000.img"), page) << "read block by block";
}

} // namespace
} // namespace amdgpu
