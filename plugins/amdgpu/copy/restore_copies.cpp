// SPDX-License-Identifier: GPL-2.0-only
#include "copy/restore_copies.hpp"

#include "support/error.hpp"
#include "support/log.hpp"
#include "support/plugin_thread.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>

namespace amdgpu {

namespace {

struct OutcomeHeader {
	uint32_t kind;
	int32_t pid;
	int32_t err;
	uint32_t error_len;
	uint32_t lines;
	uint32_t pad;
	double copy_seconds;
	double beside_seconds;
	double waited_seconds;
};

struct LineHeader {
	uint32_t level;
	uint32_t len;
};

template <typename T> void put(std::vector<uint8_t> &out, const T &value)
{
	const auto *bytes = reinterpret_cast<const uint8_t *>(&value);
	out.insert(out.end(), bytes, bytes + sizeof(value));
}

// Reads a T (or `len` bytes of text) at `at`, moving past it; throws on a short record.
template <typename T> T take(std::span<const uint8_t> in, size_t &at)
{
	if (in.size() - at < sizeof(T))
		fail(-EBADMSG, "a copy outcome from the restore guard is cut short at byte %zu", at);
	T value;
	memcpy(&value, in.data() + at, sizeof(T));
	at += sizeof(T);
	return value;
}

std::string take_text(std::span<const uint8_t> in, size_t &at, size_t len)
{
	if (in.size() - at < len)
		fail(-EBADMSG, "a copy outcome from the restore guard is cut short at byte %zu", at);
	std::string text(reinterpret_cast<const char *>(in.data() + at), len);
	at += len;
	return text;
}

// What the copy path logs on its own (a second GPU's failure, an unmap that failed) goes with the
// outcome: the guard has no criu log. One copy runs at a time.
std::mutex collected_mutex;
std::vector<LogLine> collected;

void collect(LogLevel level, const char *line)
{
	const std::lock_guard<std::mutex> lock(collected_mutex);
	collected.push_back({ level, line });
}

std::vector<LogLine> take_collected()
{
	const std::lock_guard<std::mutex> lock(collected_mutex);
	return std::exchange(collected, {});
}

} // namespace

std::vector<uint8_t> encode_outcome(uint32_t kind, pid_t pid, const CopyOutcome &o, size_t max)
{
	const std::string error = o.error.substr(0, 4096);
	std::vector<uint8_t> out;
	OutcomeHeader h = { kind,
			    pid,
			    o.err,
			    static_cast<uint32_t>(error.size()),
			    0,
			    0,
			    o.overlap.copy_seconds,
			    o.overlap.beside_seconds,
			    o.overlap.waited_seconds };
	put(out, h);
	out.insert(out.end(), error.begin(), error.end());
	for (const LogLine &line : o.log) {
		const std::string text = line.text.substr(0, 1024);
		if (out.size() + sizeof(LineHeader) + text.size() > max)
			break;
		put(out, LineHeader { static_cast<uint32_t>(line.level), static_cast<uint32_t>(text.size()) });
		out.insert(out.end(), text.begin(), text.end());
		h.lines++;
	}
	memcpy(out.data(), &h, sizeof(h));
	return out;
}

CopyOutcome decode_outcome(std::span<const uint8_t> record, uint32_t &kind, pid_t &pid)
{
	size_t at = 0;
	const auto h = take<OutcomeHeader>(record, at);
	kind = h.kind;
	pid = h.pid;
	CopyOutcome o;
	o.err = h.err;
	o.overlap = { h.copy_seconds, h.beside_seconds, h.waited_seconds };
	o.error = take_text(record, at, h.error_len);
	for (uint32_t i = 0; i < h.lines; i++) {
		const auto line = take<LineHeader>(record, at);
		if (line.level < static_cast<uint32_t>(LogLevel::error) ||
		    line.level > static_cast<uint32_t>(LogLevel::debug))
			fail(-EBADMSG, "a copy outcome from the restore guard has a line of level %u", line.level);
		o.log.push_back({ static_cast<LogLevel>(line.level), take_text(record, at, line.len) });
	}
	if (at != record.size())
		fail(-EBADMSG, "a copy outcome from the restore guard has %zu bytes beyond its end",
		     record.size() - at);
	return o;
}

struct GuardCopies::State {
	State(int dir, const CopyResources &res) : image_dir(dir), resources(res) {}

	int image_dir;
	const CopyResources &resources;
	unique_fd ready;
	mutable std::mutex mutex;
	std::condition_variable wake;
	std::deque<std::pair<pid_t, HandedContents>> queued;
	std::vector<Done> done;
	bool running = false;
	bool stop = false;

	void run();
	Done copy(pid_t pid, const HandedContents &handed);
};

GuardCopies::GuardCopies(int image_dir, const CopyResources &resources)
    : state_(std::make_shared<State>(image_dir, resources))
{
	state_->ready.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (!state_->ready)
		fail_errno(errno, "cannot make the restore guard's copy eventfd");
	redirect_log(collect);
}

GuardCopies::~GuardCopies()
{
	bool busy;
	{
		const std::lock_guard<std::mutex> lock(state_->mutex);
		state_->stop = true;
		busy = state_->running;
	}
	state_->wake.notify_all();
	if (!thread_.joinable())
		return;
	if (busy)
		thread_.detach(); // it holds the state; the guard's exit ends it
	else
		thread_.join();
}

void GuardCopies::queue(pid_t pid, HandedContents handed)
{
	{
		const std::lock_guard<std::mutex> lock(state_->mutex);
		state_->queued.emplace_back(pid, std::move(handed));
	}
	if (!thread_.joinable())
		thread_ = plugin_thread([state = state_] { state->run(); });
	state_->wake.notify_all();
}

int GuardCopies::ready_fd() const
{
	return state_->ready.get();
}

std::vector<GuardCopies::Done> GuardCopies::take_done()
{
	uint64_t count;
	if (read(state_->ready.get(), &count, sizeof(count)) < 0) {
		// nothing was signalled: the list below is empty, or about to be signalled
	}
	const std::lock_guard<std::mutex> lock(state_->mutex);
	return std::exchange(state_->done, {});
}

bool GuardCopies::idle() const
{
	const std::lock_guard<std::mutex> lock(state_->mutex);
	return state_->queued.empty() && !state_->running && state_->done.empty();
}

void GuardCopies::State::run()
{
	std::unique_lock<std::mutex> lock(mutex);
	for (;;) {
		wake.wait(lock, [&] { return stop || !queued.empty(); });
		if (stop)
			return;
		auto [pid, handed] = std::move(queued.front());
		queued.pop_front();
		running = true;
		lock.unlock();
		Done d = copy(pid, handed);
		handed.dmabufs.clear(); // the BOs are the task's again
		lock.lock();
		done.push_back(std::move(d));
		running = false;
		const uint64_t one = 1;
		if (write(ready.get(), &one, sizeof(one)) < 0) {
			// an eventfd at its limit is readable all the same
		}
	}
}

GuardCopies::Done GuardCopies::State::copy(pid_t pid, const HandedContents &handed)
{
	Done d;
	d.pid = pid;
	d.handed = Clock::now();
	take_collected();
	std::vector<LogLine> lines;
	try {
		lines = restore_handed_contents(ImageDir::files(image_dir), handed, resources);
	} catch (const Error &e) {
		d.outcome.err = e.err();
		d.outcome.error = e.what();
	} catch (const std::bad_alloc &) {
		d.outcome.err = -ENOMEM;
		d.outcome.error = "the restore guard ran out of memory in the GPU copy";
	} catch (const std::exception &e) {
		d.outcome.err = -EIO;
		d.outcome.error = strprintf("the GPU copy in the restore guard failed unexpectedly: %s", e.what());
	}
	d.outcome.log = take_collected();
	d.outcome.log.insert(d.outcome.log.end(), lines.begin(), lines.end());
	d.finished = Clock::now();
	d.outcome.overlap.copy_seconds = std::chrono::duration<double>(d.finished - d.handed).count();
	return d;
}

} // namespace amdgpu
