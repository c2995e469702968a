// SPDX-License-Identifier: GPL-2.0-only
//
// A stand-in for criu-image-streamer (not packaged by Debian), speaking the protocol criu uses with
// `--stream` (test/streamer/README.md names the sources):
//
//   criu connects to DIR/streamer-capture.sock (dump) or DIR/streamer-serve.sock (restore). For
//   each image file it sends a request: a native-endian u32 length and an img_streamer_request_entry
//   protobuf {1: filename}. At restore the streamer answers with a u32 length and an
//   img_streamer_reply_entry {1: exists}; for a missing file that is all. Then criu passes one end
//   of a pipe (one data byte, the fd in SCM_RIGHTS): the read end at dump, which the streamer reads
//   to EOF; the write end at restore, into which the streamer writes the file and closes it.
//
// `capture` writes every file it received to stdout as one stream, in the order criu asked for
// them; `serve` reads such a stream from stdin and serves each file once. Files are moved one
// thread per pipe, so criu may keep several open at once (it does: pagemap and pages images). A
// file asked for twice at restore is refused and counted: a real streamer cannot seek back.
//
// Stream format (ours): per file, u32 name length, the name, u64 size, the bytes.

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "image-streamer: %s: %s\n", what, std::strerror(errno));
	std::exit(2);
}

// Moves exactly len bytes with read() or write(); false on EOF or error.
template <typename Buf, typename Io> bool transfer_full(int fd, Buf *buf, size_t len, Io io)
{
	auto *p = reinterpret_cast<std::conditional_t<std::is_const_v<Buf>, const char, char> *>(buf);
	while (len) {
		const ssize_t n = io(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= static_cast<size_t>(n);
	}
	return true;
}

bool read_full(int fd, void *buf, size_t len)
{
	return transfer_full(fd, buf, len, ::read);
}

bool write_full(int fd, const void *buf, size_t len)
{
	return transfer_full(fd, buf, len, ::write);
}

// The one string field (number 1, wire type 2) of img_streamer_request_entry.
std::optional<std::string> parse_request(const std::string &msg)
{
	size_t i = 0;
	while (i < msg.size()) {
		const auto tag = static_cast<uint8_t>(msg[i++]);
		uint64_t len = 0;
		for (int shift = 0; i < msg.size(); shift += 7) {
			const auto b = static_cast<uint8_t>(msg[i++]);
			len |= static_cast<uint64_t>(b & 0x7f) << shift;
			if (!(b & 0x80))
				break;
		}
		if ((tag & 7) != 2 || len > msg.size() - i)
			return std::nullopt;
		if (tag >> 3 == 1)
			return msg.substr(i, len);
		i += len;
	}
	return std::nullopt;
}

// Next request on the control connection; nullopt at EOF.
std::optional<std::string> next_request(int sock)
{
	uint32_t len;
	if (!read_full(sock, &len, sizeof(len)))
		return std::nullopt;
	std::string msg(len, '\0');
	if (!read_full(sock, msg.data(), len))
		die("short request");
	std::optional<std::string> name = parse_request(msg);
	if (!name)
		die("malformed img_streamer_request_entry");
	return name;
}

void send_reply(int sock, bool exists)
{
	const uint8_t msg[] = { 0x08, static_cast<uint8_t>(exists ? 1 : 0) }; // {1: exists}
	const uint32_t len = sizeof(msg);
	if (!write_full(sock, &len, sizeof(len)) || !write_full(sock, msg, sizeof(msg)))
		die("cannot answer criu");
}

int receive_fd(int sock)
{
	char byte;
	iovec iov = { &byte, 1 };
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
	msghdr msg = {};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		die("no pipe from criu");
	const cmsghdr *c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
		die("criu's message carries no fd");
	int fd;
	std::memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

struct File {
	std::string name;
	std::string data;
	bool served = false;
};

int listen_on(const std::string &path)
{
	const int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		die("socket");
	sockaddr_un addr = {};
	addr.sun_family = AF_UNIX;
	if (path.size() >= sizeof(addr.sun_path))
		die("socket path too long");
	std::memcpy(addr.sun_path, path.c_str(), path.size());
	unlink(path.c_str());
	if (bind(sock, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) || listen(sock, 4))
		die(path.c_str());
	return sock;
}

int capture(const std::string &dir)
{
	const std::string path = dir + "/streamer-capture.sock";
	const int sock = listen_on(path);
	std::fprintf(stderr, "image-streamer: capturing on %s\n", path.c_str());
	const int conn = accept4(sock, nullptr, nullptr, SOCK_CLOEXEC);
	if (conn < 0)
		die("accept");
	// Each file goes to the stream as it arrives, in records of up to 1 MiB, the first of them
	// empty (so that empty files exist too); several files may be on the way at once.
	std::mutex out;
	uint64_t total = 0;
	size_t nfiles = 0;
	auto record = [&](const std::string &name, const char *bytes, uint64_t size) {
		const uint32_t len = static_cast<uint32_t>(name.size());
		std::lock_guard lock(out);
		if (!write_full(1, &len, sizeof(len)) || !write_full(1, name.data(), len) ||
		    !write_full(1, &size, sizeof(size)) || !write_full(1, bytes, size))
			die("cannot write the stream");
		total += size;
	};
	std::vector<std::thread> movers;
	while (std::optional<std::string> name = next_request(conn)) {
		std::fprintf(stderr, "image-streamer: capture %s\n", name->c_str());
		record(*name, nullptr, 0);
		nfiles++;
		const int pipe_rd = receive_fd(conn);
		movers.emplace_back([pipe_rd, name = *name, &record] {
			std::vector<char> buf(1 << 20);
			ssize_t n;
			while ((n = read(pipe_rd, buf.data(), buf.size())) > 0 || (n < 0 && errno == EINTR))
				if (n > 0)
					record(name, buf.data(), static_cast<uint64_t>(n));
			close(pipe_rd);
		});
	}
	for (std::thread &t : movers)
		t.join();
	unlink(path.c_str());
	std::fprintf(stderr, "image-streamer: captured %zu files, %llu bytes\n", nfiles,
		     static_cast<unsigned long long>(total));
	return 0;
}

int serve(const std::string &dir)
{
	std::map<std::string, File> files;
	for (;;) {
		uint32_t len;
		if (!read_full(0, &len, sizeof(len)))
			break;
		std::string name(len, '\0');
		uint64_t size;
		if (!read_full(0, name.data(), len) || !read_full(0, &size, sizeof(size)))
			die("truncated stream");
		File &f = files[name];
		f.name = name;
		const size_t at = f.data.size();
		f.data.resize(at + size);
		if (!read_full(0, f.data.data() + at, size))
			die("truncated stream");
	}
	const std::string path = dir + "/streamer-serve.sock";
	const int sock = listen_on(path);
	std::fprintf(stderr, "image-streamer: serving %zu files on %s\n", files.size(), path.c_str());
	const int conn = accept4(sock, nullptr, nullptr, SOCK_CLOEXEC);
	if (conn < 0)
		die("accept");
	std::vector<std::thread> movers;
	unsigned served = 0, again = 0;
	while (std::optional<std::string> name = next_request(conn)) {
		auto it = files.find(*name);
		const bool ok = it != files.end() && !it->second.served;
		if (it != files.end() && it->second.served) {
			std::fprintf(stderr, "image-streamer: %s asked for again: a stream cannot go back\n",
				     name->c_str());
			again++;
		}
		send_reply(conn, ok);
		std::fprintf(stderr, "image-streamer: %s %s\n", ok ? "serve" : "lacks", name->c_str());
		if (!ok)
			continue;
		it->second.served = true;
		served++;
		const int pipe_wr = receive_fd(conn);
		movers.emplace_back([pipe_wr, f = &it->second] {
			if (!write_full(pipe_wr, f->data.data(), f->data.size()))
				std::fprintf(stderr, "image-streamer: criu did not read all of %s\n", f->name.c_str());
			close(pipe_wr);
		});
	}
	for (std::thread &t : movers)
		t.join();
	unlink(path.c_str());
	std::fprintf(stderr, "image-streamer: served %u of %zu files, %u asked for again\n", served, files.size(),
		     again);
	return again ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 4 || std::strcmp(argv[1], "--images-dir")) {
		std::fprintf(stderr,
			     "usage: %s --images-dir DIR capture >STREAM\n"
			     "       %s --images-dir DIR serve <STREAM\n",
			     argv[0], argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	const std::string dir = argv[2];
	if (!std::strcmp(argv[3], "capture"))
		return capture(dir);
	if (!std::strcmp(argv[3], "serve"))
		return serve(dir);
	std::fprintf(stderr, "image-streamer: unknown mode %s\n", argv[3]);
	return 2;
}
