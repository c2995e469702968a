// SPDX-License-Identifier: GPL-2.0-only
#include "guard/restore_guard.hpp"

#include "support/error.hpp"
#include "guard/guard_process.hpp"
#include "support/log.hpp"
#include "copy/restore_copies.hpp"
#include "support/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace amdgpu {

namespace {

enum Kind : uint32_t {
	kEnlist = 1,
	kResumed = 2,
	kOffer = 3,
	kTake = 4,
	kBuffer = 5,
	kCopy = 6,    // task -> guard: a copy request comes on the socket alongside
	kHeld = 7,    // guard -> task: it holds the request and every dma-buf (value: their count)
	kJoinAll = 8, // criu -> guard: criu's own restore is done; every outcome, once every copy ended
	kCopied = 9,  // guard -> criu: one task's outcome (restore_copies.hpp)
	kJoined = 10, // guard -> criu: no more outcomes
};

// The guard's descriptors (guard_process.hpp renumbers them from 3).
constexpr int kChannel = 3;
constexpr int kCriu = 4;
constexpr int kEnlistSocket = 5;
constexpr int kImageDir = 6;

// How long the guard waits for a task it killed to be gone before it says it could not.
constexpr int kKillWaitMs = 10000;
// How long a task waits for the guard to say it holds a copy request; the guard's loop reads a
// request at once, so only a guard that is stuck or gone makes it wait that long.
constexpr int kHandOverMs = 10000;
// How long the guard waits for each part of a copy request the task is sending.
constexpr int kRequestPartMs = 5000;

struct Context {
	pid_t criu_pid;
	char socket_name[64];
	const CopyResources *copy;
};

struct Enlisted {
	pid_t pid; // in criu's pid namespace
	unique_fd pidfd;
	bool resumed = false;
};

struct GuardState {
	explicit GuardState(const CopyResources &copy) : copies(kImageDir, copy) {}

	std::vector<Enlisted> tasks;
	GuardCopies copies;
	std::vector<GuardCopies::Done> copied;
	std::optional<GuardCopies::Clock::time_point> join_asked; // criu waits for every outcome
	std::map<uint32_t, unique_fd> offered;			  // shared buffers' dma-bufs, by number
	std::multimap<uint32_t, unique_fd> takers;		  // waiting for an offer: where to answer
	bool channel_open = true;
	bool released = false;
	bool any_resumed = false;

	bool all_resumed() const
	{
		return std::all_of(tasks.begin(), tasks.end(), [](const Enlisted &t) { return t.resumed; });
	}
};

// Answers a taker of buffer `number` (a taker that is gone is nobody's loss).
void hand_buffer(int taker, uint32_t number, int dmabuf)
{
	guard::send_message(taker, { kBuffer, 0, number }, dmabuf);
}

// The next record of a copy request the task is sending, or -errno.
int request_part(int sock, std::vector<uint8_t> &bytes, size_t max, std::vector<unique_fd> &fds)
{
	pollfd p = { sock, POLLIN, 0 };
	int ret;
	while ((ret = poll(&p, 1, kRequestPartMs)) < 0 && errno == EINTR)
		;
	if (ret <= 0)
		return ret ? -errno : -ETIMEDOUT;
	ret = guard::receive_record(sock, bytes, max, fds, false);
	return ret > 0 ? 0 : ret ? ret : -EPIPE;
}

// A task's copy request on `sock` (restore_copies.hpp): read whole, then acknowledged, so that the
// task may close its fds. A request that does not add up is refused: the task's restore fails.
void take_copy_request(GuardState &s, int sock)
{
	ucred peer = {};
	socklen_t len = sizeof(peer);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &peer, &len) || peer.pid <= 0)
		return; // no answer: the task's restore fails
	std::vector<uint8_t> bytes;
	std::vector<unique_fd> fds;
	CopyRequestHeader h;
	int ret = request_part(sock, bytes, sizeof(h) + kMaxHandedGpus * 8, fds);
	if (!ret && (bytes.size() < sizeof(h) || !fds.empty()))
		ret = -EBADMSG;
	if (!ret)
		memcpy(&h, bytes.data(), sizeof(h));
	if (!ret && (h.gpus > kMaxHandedGpus || h.buckets > kMaxHandedBuckets || h.fds > h.buckets ||
		     bytes.size() != sizeof(h) + h.gpus * 8ul))
		ret = -EBADMSG;
	HandedContents handed;
	if (!ret) {
		handed.kfd_id = h.kfd_id;
		handed.max_buffer_size = h.max_buffer_size;
		handed.dmabufs.resize(h.buckets);
		for (uint32_t i = 0; i < h.gpus; i++) {
			uint32_t pair[2];
			memcpy(pair, bytes.data() + sizeof(h) + i * 8ul, sizeof(pair));
			handed.gpu_ids[pair[0]] = pair[1];
		}
	}
	for (uint32_t got = 0; !ret && got < h.fds;) {
		fds.clear();
		ret = request_part(sock, bytes, guard::kMaxFds * sizeof(uint32_t), fds);
		if (!ret && (fds.empty() || bytes.size() != fds.size() * sizeof(uint32_t)))
			ret = -EBADMSG;
		for (size_t i = 0; !ret && i < fds.size(); i++) {
			uint32_t index;
			memcpy(&index, bytes.data() + i * sizeof(index), sizeof(index));
			if (index >= h.buckets || handed.dmabufs[index])
				ret = -EBADMSG;
			else
				handed.dmabufs[index] = std::move(fds[i]);
		}
		got += static_cast<uint32_t>(fds.size());
	}
	if (ret) {
		guard::send_message(sock, { kHeld, ret, 0 }, -1); // a refusal: the errno
		return;
	}
	s.copies.queue(peer.pid, std::move(handed));
	guard::send_message(sock, { kHeld, peer.pid, h.fds }, -1);
}

void read_enlisted(GuardState &s)
{
	for (;;) {
		guard::Message m;
		unique_fd fd;
		if (guard::receive_message(kEnlistSocket, m, fd, false) <= 0)
			return;
		if (!fd)
			continue;
		if (m.kind == kEnlist) {
			if (const auto pid = guard::pidfd_pid(fd.get()))
				s.tasks.push_back({ *pid, std::move(fd) });
		} else if (m.kind == kOffer) {
			const auto [first, last] = s.takers.equal_range(m.value);
			for (auto it = first; it != last; ++it)
				hand_buffer(it->second.get(), m.value, fd.get());
			s.takers.erase(first, last);
			s.offered[m.value] = std::move(fd);
		} else if (m.kind == kTake) {
			const auto it = s.offered.find(m.value);
			if (it != s.offered.end())
				hand_buffer(fd.get(), m.value, it->second.get());
			else
				s.takers.emplace(m.value, std::move(fd));
		} else if (m.kind == kCopy) {
			take_copy_request(s, fd.get());
		}
	}
}

void read_channel(GuardState &s)
{
	for (;;) {
		guard::Message m;
		unique_fd unused;
		const int n = guard::receive_message(kChannel, m, unused, false);
		if (n == 0)
			s.channel_open = false;
		if (n <= 0)
			return;
		if (m.kind == guard::kRelease)
			s.released = true;
		if (m.kind == kJoinAll)
			s.join_asked = GuardCopies::Clock::now();
		if (m.kind != kResumed)
			continue;
		s.any_resumed = true;
		for (Enlisted &t : s.tasks)
			if (t.pid == m.pid)
				t.resumed = true;
	}
}

// Once criu asked and every copy handed so far ended: every outcome, then the end.
void answer_join(GuardState &s)
{
	for (GuardCopies::Done &d : s.copies.take_done())
		s.copied.push_back(std::move(d));
	if (!s.join_asked || !s.copies.idle())
		return;
	const auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
	for (GuardCopies::Done &d : s.copied) {
		d.outcome.overlap.beside_seconds = std::max(0.0, seconds(*s.join_asked - d.handed));
		d.outcome.overlap.waited_seconds = std::max(0.0, seconds(d.finished - *s.join_asked));
		guard::send_record(kChannel, encode_outcome(kCopied, d.pid, d.outcome));
	}
	s.copied.clear();
	guard::send_message(kChannel, { kJoined, 0, 0 });
	s.join_asked.reset();
}

// The task, and before it every process it forked while criu restored it: its children criu was
// restoring, and criu's own helpers (criu 4.3 forks an "async" daemon from each task it restores,
// which waits for work forever once criu is gone). Such a helper shares the task's session and
// process group, and so keeps the task's pid in use: every later restore of the same images would
// fail with "Can't fork for PID: File exists".
void end_half_restored(const guard::Journal &journal, Enlisted &t)
{
	(void)guard::pidfd_send_signal(t.pidfd.get(), SIGSTOP); // so that it forks nothing more
	const std::vector<unique_fd> forked = guard::descendants(t.pid);
	int killed = 0;
	for (const unique_fd &child : forked)
		if (guard::pidfd_send_signal(child.get(), SIGKILL) == 0 &&
		    guard::pidfd_wait_exit(child.get(), kKillWaitMs))
			killed++;
	const std::string also = killed ? " and " + std::to_string(killed) + " process(es) it had forked" : "";
	if (const int ret = guard::pidfd_send_signal(t.pidfd.get(), SIGKILL)) {
		if (ret != -ESRCH)
			journal.line("criu died while it restored pid %d, and the task cannot be killed: %s", t.pid,
				     strerror(-ret));
		return;
	}
	if (guard::pidfd_wait_exit(t.pidfd.get(), kKillWaitMs))
		journal.line("criu died while it restored pid %d: killed the half-restored task%s", t.pid,
			     also.c_str());
	else
		journal.line("criu died while it restored pid %d: sent it SIGKILL, and it is still there after %d ms",
			     t.pid, kKillWaitMs);
}

// Follows criu and the enlisted tasks until every task resumed, criu let go, or criu died
// (returns true then).
bool watch_until_done(GuardState &s)
{
	while (!s.released) {
		pollfd p[4] = { { kCriu, POLLIN, 0 },
				{ kEnlistSocket, POLLIN, 0 },
				{ s.copies.ready_fd(), POLLIN, 0 },
				{ kChannel, POLLIN, 0 } };
		if (poll(p, s.channel_open ? 4 : 3, -1) < 0 && errno != EINTR)
			return false;
		// Tasks enlist before criu's stage that resumes them: read them first.
		read_enlisted(s);
		read_channel(s);
		answer_join(s);
		if (p[0].revents)
			return true;
		if (s.any_resumed && s.all_resumed()) {
			read_enlisted(s); // nothing can still be on its way, but look
			if (s.all_resumed())
				return false;
		}
	}
	return false;
}

int guard_main(void *arg)
{
	const Context &ctx = *static_cast<const Context *>(arg);
	const guard::Journal journal(kImageDir, ctx.criu_pid);
	GuardState s(*ctx.copy);
	if (watch_until_done(s) && !s.released) {
		read_enlisted(s);
		read_channel(s);
		if (!s.released)
			for (Enlisted &t : s.tasks)
				if (!t.resumed)
					end_half_restored(journal, t);
	}
	unlinkat(kImageDir, ctx.socket_name, 0);
	return 0;
}

} // namespace

namespace {

// The guard's socket in the image directory, removed again unless the guard took it over.
class BoundSocket {
public:
	BoundSocket(int image_dir, const std::string &name) : image_dir_(image_dir), name_(name)
	{
		fd_.reset(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
		if (!fd_)
			fail_errno(errno, "cannot make the restore guard's socket");
		sockaddr_un addr = {};
		addr.sun_family = AF_UNIX;
		snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/%s", image_dir, name.c_str());
		unlinkat(image_dir, name.c_str(), 0); // left by an earlier criu with this pid
		if (bind(fd_.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)))
			fail_errno(errno, "cannot create the restore guard's socket %s in the image directory",
				   name.c_str());
		bound_ = true;
	}
	~BoundSocket()
	{
		if (bound_)
			unlinkat(image_dir_, name_.c_str(), 0);
	}
	BoundSocket(const BoundSocket &) = delete;
	BoundSocket &operator=(const BoundSocket &) = delete;

	int fd() const { return fd_.get(); }
	// The guard owns the name now: it removes it when it ends.
	void hand_over() { bound_ = false; }

private:
	int image_dir_;
	std::string name_;
	unique_fd fd_;
	bool bound_ = false;
};

} // namespace

RestoreGuard::RestoreGuard(int image_dir, CopyResources copy) : copy_(std::move(copy))
{
	const pid_t criu_pid = getpid();
	socket_name_ = strprintf("amdgpu-guard-%d.sock", criu_pid);
	BoundSocket listen(image_dir, socket_name_);

	int pair[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair))
		fail_errno(errno, "cannot make the restore guard's channel");
	unique_fd channel(pair[0]), guard_end(pair[1]);
	unique_fd criu = guard::pidfd_open(criu_pid);
	if (!criu)
		fail_errno(errno, "cannot open a pidfd of criu (pid %d) for the restore guard", criu_pid);

	Context ctx = { criu_pid, {}, &copy_ };
	snprintf(ctx.socket_name, sizeof(ctx.socket_name), "%s", socket_name_.c_str());
	const int keep[] = { guard_end.get(), criu.get(), listen.fd(), image_dir };
	const pid_t guard_pid = guard::spawn(keep, guard_main, &ctx);
	listen.hand_over();
	link_.emplace(std::move(channel), guard_pid);
	pr_info("restore guard started (pid %d): it copies GPU contents beside criu's restore, and kills "
		"half-restored GPU tasks if criu dies",
		guard_pid);
}

RestoreGuard::~RestoreGuard()
{
	if (!link_->owned())
		link_->abandon(); // criu closed it in this task; the number may be a restored file now
}

// A socket connected to the guard's, from a task being restored: a relative name from the image
// directory reaches it whatever mount namespace and root the task has by now; the working
// directory is put back at once (criu sets the task's own later). -errno on failure.
int RestoreGuard::connect_to_guard(int image_dir, unique_fd &sock) const
{
	sock.reset(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (!sock)
		return -errno;
	sockaddr_un addr = {};
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_name_.c_str());
	const unique_fd cwd(open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
	int ret = -ENOENT;
	if (cwd && !fchdir(image_dir)) {
		ret = connect(sock.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)) ? -errno : 0;
		if (fchdir(cwd.get()))
			pr_warn("cannot return to the working directory after reaching the restore guard: %s",
				strerror(errno));
	}
	return ret;
}

void RestoreGuard::enlist_this_task(int image_dir) const
{
	unique_fd sock;
	const unique_fd self = guard::pidfd_open(getpid());
	if (!self) {
		pr_warn("pid %d cannot enlist with the restore guard: %s; should criu die before the task is "
			"restored, the task would be left half-restored",
			getpid(), strerror(errno));
		return;
	}
	int ret = connect_to_guard(image_dir, sock);
	if (!ret)
		ret = guard::send_message(sock.get(), { kEnlist, getpid() }, self.get());
	if (ret)
		pr_warn("pid %d cannot enlist with the restore guard through %s: %s; should criu die before the "
			"task is restored, the task would be left half-restored",
			getpid(), socket_name_.c_str(), strerror(-ret));
	else
		pr_debug("pid %d enlisted with the restore guard", getpid());
}

void RestoreGuard::offer_buffer(int image_dir, uint32_t number, int dmabuf_fd) const
{
	unique_fd sock;
	int ret = connect_to_guard(image_dir, sock);
	if (!ret)
		ret = guard::send_message(sock.get(), { kOffer, getpid(), number }, dmabuf_fd);
	if (ret)
		fail_errno(ret, "cannot offer shared buffer %u to the other tasks through the restore guard (%s)",
			   number, socket_name_.c_str());
}

// A conversation of its own with the guard: a SEQPACKET pair whose other end goes to the guard
// with the request (kind, this task, value); the guard's copy of it is the only one left once sent.
int RestoreGuard::open_channel(int image_dir, uint32_t kind, uint32_t value, unique_fd &mine) const
{
	unique_fd sock;
	int pair[2];
	int ret = connect_to_guard(image_dir, sock);
	if (!ret && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair))
		ret = -errno;
	if (ret)
		return ret;
	mine.reset(pair[0]);
	const unique_fd theirs(pair[1]);
	return guard::send_message(sock.get(), { kind, getpid(), value }, theirs.get());
}

namespace {

// The guard's answer on a channel, waiting up to `timeout_ms`: receive_message()'s result, or 0
// when none came.
int await_answer(int channel, int timeout_ms, guard::Message &m, unique_fd &fd)
{
	pollfd p = { channel, POLLIN, 0 };
	int ret;
	while ((ret = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	return ret > 0 ? guard::receive_message(channel, m, fd, false) : ret;
}

} // namespace

unique_fd RestoreGuard::take_buffer(int image_dir, uint32_t number, int timeout_ms) const
{
	unique_fd answer;
	if (const int ret = open_channel(image_dir, kTake, number, answer))
		fail_errno(ret, "cannot ask the restore guard (%s) for shared buffer %u", socket_name_.c_str(), number);
	guard::Message m;
	unique_fd dmabuf;
	const int ret = await_answer(answer.get(), timeout_ms, m, dmabuf);
	if (ret <= 0 || m.kind != kBuffer || m.value != number || !dmabuf)
		return unique_fd();
	return dmabuf;
}

void RestoreGuard::hand_copy(int image_dir, uint32_t kfd_id, const std::map<uint32_t, uint32_t> &gpu_ids,
			     std::span<const int> dmabufs, uint64_t max_buffer_size) const
{
	if (gpu_ids.size() > kMaxHandedGpus || dmabufs.size() > kMaxHandedBuckets)
		fail(-E2BIG, "%zu GPUs and %zu BOs: more than the restore guard takes (%u, %u)", gpu_ids.size(),
		     dmabufs.size(), kMaxHandedGpus, kMaxHandedBuckets);
	std::vector<uint32_t> indices;
	std::vector<int> fds;
	for (size_t i = 0; i < dmabufs.size(); i++)
		if (dmabufs[i] >= 0) {
			indices.push_back(static_cast<uint32_t>(i));
			fds.push_back(dmabufs[i]);
		}
	const CopyRequestHeader h = { kfd_id, static_cast<uint32_t>(gpu_ids.size()),
				      static_cast<uint32_t>(dmabufs.size()), static_cast<uint32_t>(fds.size()),
				      max_buffer_size };
	std::vector<uint8_t> first(reinterpret_cast<const uint8_t *>(&h), reinterpret_cast<const uint8_t *>(&h + 1));
	for (const auto &[user, actual] : gpu_ids) {
		const uint32_t pair[2] = { user, actual };
		first.insert(first.end(), reinterpret_cast<const uint8_t *>(pair),
			     reinterpret_cast<const uint8_t *>(pair + 2));
	}

	unique_fd mine;
	int ret = open_channel(image_dir, kCopy, kfd_id, mine);
	// The guard reads the rest as it comes: no socket buffer bounds the number of BOs.
	if (!ret)
		ret = guard::send_record(mine.get(), first);
	for (size_t at = 0; !ret && at < fds.size(); at += guard::kMaxFds) {
		const size_t n = std::min(guard::kMaxFds, fds.size() - at);
		const auto *bytes = reinterpret_cast<const uint8_t *>(indices.data() + at);
		ret = guard::send_record(mine.get(), { bytes, n * sizeof(uint32_t) }, { fds.data() + at, n });
	}
	if (ret)
		fail_errno(ret, "cannot hand the GPU copy of %s to the restore guard (%s)",
			   kfd_image_name(kfd_id).c_str(), socket_name_.c_str());
	guard::Message m;
	unique_fd unused;
	ret = await_answer(mine.get(), kHandOverMs, m, unused);
	if (ret <= 0 || m.kind != kHeld || m.pid <= 0 || m.value != fds.size())
		fail(-EPROTO,
		     "the restore guard (%s) did not take the GPU copy of %s (%zu dma-bufs) within %d ms: it refused "
		     "the request, or it is gone",
		     socket_name_.c_str(), kfd_image_name(kfd_id).c_str(), fds.size(), kHandOverMs);
}

namespace {

// Two copies of one task as one: the first failure stands, every line is kept.
void merge_outcome(CopyOutcome &into, CopyOutcome &&more)
{
	if (!into.err && more.err) {
		into.err = more.err;
		into.error = std::move(more.error);
	}
	into.log.insert(into.log.end(), std::make_move_iterator(more.log.begin()),
			std::make_move_iterator(more.log.end()));
	into.overlap.copy_seconds += more.overlap.copy_seconds;
	into.overlap.beside_seconds = std::max(into.overlap.beside_seconds, more.overlap.beside_seconds);
	into.overlap.waited_seconds = std::max(into.overlap.waited_seconds, more.overlap.waited_seconds);
}

} // namespace

void RestoreGuard::join_all()
{
	joined_ = true;
	const pid_t guard_pid = link_->guard_pid();
	int ret = link_->send(kJoinAll, 0);
	std::vector<uint8_t> record;
	while (!ret) {
		ret = link_->receive(record, kMaxOutcomeRecord);
		if (ret <= 0)
			break;
		uint32_t kind = 0;
		pid_t pid = 0;
		if (record.size() == sizeof(guard::Message)) {
			guard::Message m;
			memcpy(&m, record.data(), sizeof(m));
			if (m.kind == kJoined)
				return;
			ret = -EBADMSG;
			break;
		}
		try {
			CopyOutcome outcome = decode_outcome(record, kind, pid);
			if (kind != kCopied) {
				ret = -EBADMSG;
				break;
			}
			// a task may hand several copies (its kfd file's, its render nodes'): one outcome
			const auto [it, first] = outcomes_.try_emplace(pid, std::move(outcome));
			if (!first)
				merge_outcome(it->second, std::move(outcome));
			ret = 0;
		} catch (const Error &e) {
			ret = e.err();
		}
	}
	// A guard that died closed its end: the link reads nothing more, or a send finds the peer
	// gone, depending on when it died. Either way it is gone, and said so.
	const bool gone = !ret || ret == -EPIPE || ret == -ECONNRESET;
	join_error_ = strprintf("the restore guard (pid %d) cannot say whether the GPU copies it was handed are "
				"complete: %s",
				guard_pid, gone ? "it is gone" : strerror(-ret));
	join_err_ = ret ? ret : -EPIPE;
}

std::optional<CopyOutcome> RestoreGuard::join_copy(pid_t pid)
{
	if (!joined_)
		join_all();
	if (join_err_)
		throw Error(join_err_, join_error_);
	const auto it = outcomes_.find(pid);
	if (it == outcomes_.end())
		return std::nullopt;
	CopyOutcome outcome = std::move(it->second);
	outcomes_.erase(it);
	return outcome;
}

void RestoreGuard::resumed(pid_t pid)
{
	link_->send(kResumed, pid);
}

void RestoreGuard::release()
{
	link_->release();
}

} // namespace amdgpu
