// SPDX-License-Identifier: GPL-2.0-only
//
// The GPU copy of a restore in the restore guard, beside criu's own restore of the task's memory:
// the task (this process) hands the guard its BOs and goes on; criu's main process (this process
// too) joins the copy before the task's queues resume. The guard copies with a fake engine
// (FakeGpu, as the guard forked it) from images a fake dump wrote. What criu would see: the join's
// outcome and its log, or the error that fails the hook.
#include "copy/restore_copies.hpp"
#include "guard/restore_guard.hpp"
#include "sessions/restore_session.hpp"

#include "sessions/dump_session.hpp"
#include "support/error.hpp"
#include "guard/guard_process.hpp"
#include "images/image_store.hpp"
#include "sessions/options.hpp"
#include "support/fake_gpu.hpp"
#include "support/temp_dir.hpp"
#include "topology_fixtures.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace amdgpu {
namespace {

using test::FakeGpu;
using test::Op;

constexpr uint32_t kFileId = 11;

bool has_line(const std::vector<LogLine> &log, LogLevel level, const std::string &text)
{
	for (const LogLine &l : log)
		if (l.level == level && l.text.find(text) != std::string::npos)
			return true;
	return false;
}

std::string all_lines(const std::vector<LogLine> &log)
{
	std::string out;
	for (const LogLine &l : log)
		out += l.text + "\n";
	return out;
}

// A task stand-in the join may kill: reaped, and whether SIGKILL ended it.
bool killed_within(pid_t child, int ms)
{
	int status = 0;
	pid_t reaped = 0;
	for (int i = 0; i < ms / 10 && !reaped; i++) {
		reaped = waitpid(child, &status, WNOHANG);
		if (!reaped)
			usleep(10000);
	}
	if (!reaped) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		return false;
	}
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

class RestoreCopyTest : public ::testing::Test {
protected:
	RestoreCopyTest()
	    : topology_dir(test::topology_fixture("mi210-2gpu-pcie")), topology(parse_topology(topology_dir)),
	      gpu(topology), guard_gpu(topology)
	{
		FakeGpu dumped(topology);
		dumped.pid = static_cast<uint32_t>(getpid());
		DumpSession dump(options, ImageDir::files(images.fd()), topology_dir, dumped, dumped);
		const int task_fd = eventfd(0, EFD_CLOEXEC);
		dump.dump_kfd(task_fd, kFileId);
		close(task_fd);
	}
	~RestoreCopyTest() override
	{
		if (guard)
			guard->release();
	}

	// The guard forks a copy of guard_gpu: make it fail before.
	void start_guard() { guard.emplace(images.fd(), CopyResources { topology_dir, &guard_gpu, &guard_gpu }); }

	// The task's part: the fd criu would get, or the error.
	std::variant<int, Error> restore()
	{
		RestoreSession session(options, ImageDir::files(images.fd()), guard ? &*guard : nullptr, topology_dir,
				       gpu, gpu);
		try {
			return session.restore_file(kFileId, nullptr);
		} catch (const Error &e) {
			return e;
		}
	}

	void restored()
	{
		const auto result = restore();
		ASSERT_TRUE(std::holds_alternative<int>(result)) << std::get<Error>(result).what();
		close(std::get<int>(result));
	}

	std::string pages_image() const { return pages_image_name(kFileId, topology.gpus().front()->gpu_id); }

	Options options;
	test::TempDir images;
	std::filesystem::path topology_dir;
	Topology topology;
	FakeGpu gpu;	   // the task's kernel and engine
	FakeGpu guard_gpu; // the guard's
	std::optional<RestoreGuard> guard;
};

TEST_F(RestoreCopyTest, TheTaskHandsItsCopyToTheGuardAndTheJoinSaysItIsCompleteAndChecked)
{
	start_guard();
	ASSERT_NO_FATAL_FAILURE(restored());
	EXPECT_EQ(gpu.count(Op::copy), 0) << "the task copied itself";
	EXPECT_EQ(gpu.still_open(Op::restore), std::vector<int>()) << "the task kept the dma-bufs it handed over";

	const std::optional<CopyOutcome> outcome = guard->join_copy(getpid());
	ASSERT_TRUE(outcome) << "the guard knows of no copy";
	EXPECT_EQ(outcome->err, 0) << outcome->error;
	for (const Node *g : topology.gpus())
		EXPECT_TRUE(has_line(outcome->log, LogLevel::info, strprintf("restored GPU 0x%04x: ", g->gpu_id)))
			<< all_lines(outcome->log);
	EXPECT_TRUE(has_line(outcome->log, LogLevel::info, "match their checksums")) << all_lines(outcome->log);
	EXPECT_GT(outcome->overlap.copy_seconds, 0);
	EXPECT_GE(outcome->overlap.beside_seconds, 0);
	EXPECT_FALSE(guard->join_copy(getpid())) << "one outcome, joined twice";
	EXPECT_FALSE(guard->join_copy(getpid() + 1)) << "an outcome for a task that handed nothing";
}

TEST_F(RestoreCopyTest, ACopyThatFailsInTheGuardAfterTheTaskWentOnFailsTheJoinWithItsMessage)
{
	guard_gpu.fail(Op::copy, -EIO);
	start_guard();
	ASSERT_NO_FATAL_FAILURE(restored());
	const std::optional<CopyOutcome> outcome = guard->join_copy(getpid());
	ASSERT_TRUE(outcome);
	EXPECT_EQ(outcome->err, -EIO);
	EXPECT_NE(outcome->error.find("the copy engine failed"), std::string::npos) << outcome->error;
}

TEST_F(RestoreCopyTest, ADamagedPagesImageIsRefusedAtTheJoinNamingTheDamage)
{
	{
		std::fstream f(images.path() / pages_image(), std::ios::in | std::ios::out | std::ios::binary);
		f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(images.path() / pages_image()) / 2));
		f.put('\x5a');
	}
	start_guard();
	ASSERT_NO_FATAL_FAILURE(restored()); // the task reads no pages
	const std::optional<CopyOutcome> outcome = guard->join_copy(getpid());
	ASSERT_TRUE(outcome);
	EXPECT_EQ(outcome->err, -EBADMSG);
	EXPECT_NE(outcome->error.find("image " + pages_image() + " is damaged: GPU 0x"), std::string::npos)
		<< outcome->error;
}

TEST_F(RestoreCopyTest, ImagesWithoutSumsRestoreUnverifiedSayingSoAtTheJoin)
{
	std::filesystem::remove(images.path() / sums_image_name(kFileId));
	start_guard();
	ASSERT_NO_FATAL_FAILURE(restored());
	const std::optional<CopyOutcome> outcome = guard->join_copy(getpid());
	ASSERT_TRUE(outcome);
	EXPECT_EQ(outcome->err, 0) << outcome->error;
	EXPECT_TRUE(has_line(outcome->log, LogLevel::warn, "GPU contents restored unverified"))
		<< all_lines(outcome->log);
}

// A process with a kfd file and a render-node file with GEM objects hands the guard both copies;
// the join has one outcome for it, and a damaged render-node pages image fails it although the
// kfd file's copy succeeded.
class RestoreCopyOfARenderNode : public RestoreCopyTest {
protected:
	static constexpr uint32_t kRenderId = 12;
	RestoreCopyOfARenderNode()
	{
		FakeGpu dumped(topology);
		dumped.pid = static_cast<uint32_t>(getpid());
		dumped.gem_objects = { { 1, 0, 1 << 20, 4, 0, 1 }, { 3, 0, 1 << 20, 2, 0, 1 } };
		DumpSession dump(options, ImageDir::files(images.fd()), topology_dir, dumped, dumped);
		const int render_fd = eventfd(0, EFD_CLOEXEC);
		dump.dump_render_node(render_fd, kRenderId, topology.gpus().front()->props.drm_render_minor);
		close(render_fd);
	}
	std::optional<CopyOutcome> restore_both()
	{
		start_guard();
		{
			RestoreSession session(options, ImageDir::files(images.fd()), &*guard, topology_dir, gpu, gpu);
			close(session.restore_file(kFileId, nullptr));
			close(session.restore_file(kRenderId, nullptr));
		}
		EXPECT_EQ(gpu.count(Op::copy), 0) << "the task copied itself";
		std::optional<CopyOutcome> outcome = guard->join_copy(getpid());
		EXPECT_FALSE(guard->join_copy(getpid())) << "one outcome per task";
		return outcome;
	}
	std::filesystem::path render_pages() const
	{
		return images.path() / pages_image_name(kRenderId, topology.gpus().front()->gpu_id);
	}
};

TEST_F(RestoreCopyOfARenderNode, BothCopiesGoToTheGuardWithOneOutcome)
{
	const std::optional<CopyOutcome> outcome = restore_both();
	ASSERT_TRUE(outcome);
	EXPECT_EQ(outcome->err, 0) << outcome->error;
	EXPECT_TRUE(has_line(outcome->log, LogLevel::info,
			     strprintf("restored GPU 0x%04x: 2.0 MiB", topology.gpus().front()->gpu_id)))
		<< all_lines(outcome->log);
	EXPECT_TRUE(has_line(outcome->log, LogLevel::info, "amdgpu-kfd-11.img and 4 blocks"))
		<< all_lines(outcome->log);
}

TEST_F(RestoreCopyOfARenderNode, ADamagedRenderNodePageFailsTheJoin)
{
	{
		std::fstream f(render_pages(), std::ios::in | std::ios::out | std::ios::binary);
		f.seekp((1 << 20) + 100);
		f.put('\x5a');
	}
	const std::optional<CopyOutcome> outcome = restore_both();
	ASSERT_TRUE(outcome);
	EXPECT_EQ(outcome->err, -EBADMSG);
	EXPECT_NE(outcome->error.find("image " + render_pages().filename().string() + " is damaged"), std::string::npos)
		<< outcome->error;
}

TEST_F(RestoreCopyOfARenderNode, TheRenderNodesGoodCopyDoesNotHideTheKfdFilesFailure)
{
	{
		std::fstream f(images.path() / pages_image(), std::ios::in | std::ios::out | std::ios::binary);
		f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(images.path() / pages_image()) / 2));
		f.put('\x5a');
	}
	const std::optional<CopyOutcome> outcome = restore_both();
	ASSERT_TRUE(outcome);
	EXPECT_EQ(outcome->err, -EBADMSG);
	EXPECT_NE(outcome->error.find("image " + pages_image() + " is damaged"), std::string::npos) << outcome->error;
	EXPECT_TRUE(has_line(outcome->log, LogLevel::info,
			     strprintf("restored GPU 0x%04x: 2.0 MiB", topology.gpus().front()->gpu_id)))
		<< "the render node's copy is in the log too: " << all_lines(outcome->log);
}

TEST_F(RestoreCopyTest, WithoutARequestTheJoinAnswersAtOnce)
{
	start_guard();
	const auto start = std::chrono::steady_clock::now();
	EXPECT_FALSE(guard->join_copy(getpid()));
	EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(RestoreCopyTest, WithOverlapOffTheTaskCopiesAndChecksItself)
{
	options.overlap_copy = false;
	start_guard();
	ASSERT_NO_FATAL_FAILURE(restored());
	EXPECT_EQ(gpu.count(Op::copy), static_cast<int>(topology.gpus().size()));
	EXPECT_FALSE(guard->join_copy(getpid())) << "the guard copied too";
}

TEST_F(RestoreCopyTest, AGuardThatIsGoneFailsTheJoinAndTheTaskIsKilled)
{
	start_guard();
	ASSERT_NO_FATAL_FAILURE(restored());
	ASSERT_EQ(kill(guard->pid(), SIGKILL), 0);
	usleep(100 * 1000);	   // its socket closed before the join asks: the ask itself finds it gone
	const pid_t task = fork(); // stands in for the restored task: the join must not let it run
	if (task == 0) {
		for (;;)
			pause();
	}
	try {
		join_gpu_copy(task, *guard);
		ADD_FAILURE() << "the join succeeded without the guard";
	} catch (const Error &e) {
		EXPECT_NE(std::string(e.what()).find("cannot say whether the GPU copies it was handed are complete: "
						     "it is gone"),
			  std::string::npos)
			<< e.what();
		EXPECT_NE(std::string(e.what()).find("the task is killed"), std::string::npos) << e.what();
	}
	EXPECT_TRUE(killed_within(task, 2000)) << "a task whose copy is not known to be complete runs on";
	EXPECT_THROW(guard->join_copy(getpid()), Error) << "a later join took the guard's silence for none";
}

TEST_F(RestoreCopyTest, AFailedCopyFailsTheHookAndKillsTheTask)
{
	guard_gpu.fail(Op::copy, -EIO);
	start_guard();
	// the task's copy request, made as from another task, whose pid is what the guard keys it by
	int ready[2];
	ASSERT_EQ(pipe(ready), 0);
	const pid_t task = fork();
	if (task == 0) {
		close(ready[0]);
		const bool ok = std::holds_alternative<int>(restore());
		const char c = ok ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	char c = 0;
	pollfd p = { ready[0], POLLIN, 0 };
	ASSERT_EQ(poll(&p, 1, 5000), 1);
	ASSERT_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	ASSERT_EQ(c, 'y') << "the task's restore failed";
	try {
		join_gpu_copy(task, *guard);
		ADD_FAILURE() << "the failed copy was joined as complete";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EIO);
		const std::string what = e.what();
		EXPECT_NE(what.find("the GPU copy in the restore guard failed: GPU 0x"), std::string::npos) << what;
		EXPECT_NE(what.find("the copy engine failed"), std::string::npos) << what;
		EXPECT_NE(what.find("the task is killed and the restore fails"), std::string::npos) << what;
	}
	EXPECT_TRUE(killed_within(task, 2000)) << "the task whose copy failed runs on";
}

// A copy that takes long: the guard must still watch criu while it runs.
class SlowCopier : public ContentCopier {
public:
	std::vector<CopyStats> copy(CopyDirection, std::span<const GpuCopyJob>, const ImageDir &, uint32_t,
				    uint64_t) override
	{
		std::this_thread::sleep_for(std::chrono::seconds(30));
		throw Error(-EIO, "slow");
	}
};

TEST_F(RestoreCopyTest, CriuDyingMidCopyStillHasTheGuardKillTheTask)
{
	int pids[2];
	ASSERT_EQ(pipe(pids), 0);
	const pid_t criu = fork();
	if (criu == 0) {
		SlowCopier slow;
		RestoreGuard g(images.fd(), CopyResources { topology_dir, &guard_gpu, &slow });
		int ready[2];
		if (pipe(ready))
			_exit(1);
		const pid_t task = fork();
		if (task == 0) {
			g.enlist_this_task(images.fd());
			std::map<uint32_t, uint32_t> map;
			for (const Node *n : topology.gpus())
				map[n->gpu_id] = n->gpu_id;
			std::vector<unique_fd> held;
			std::vector<int> dmabufs;
			for (int i = 0; i < 5; i++) // FakeGpu's BOs: two VRAM BOs per GPU, then user memory
				dmabufs.push_back(i < 4 ? held.emplace_back(eventfd(0, EFD_CLOEXEC)).get() : -1);
			g.hand_copy(images.fd(), kFileId, map, dmabufs, 1 << 20);
			const pid_t self = getpid();
			if (write(ready[1], &self, sizeof(self)) != sizeof(self))
				_exit(1);
			for (;;)
				pause();
		}
		pid_t got = 0;
		if (read(ready[0], &got, sizeof(got)) != sizeof(got) || got != task)
			_exit(1);
		if (write(pids[1], &task, sizeof(task)) != sizeof(task))
			_exit(1);
		for (;;)
			pause();
	}
	close(pids[1]);
	struct Reaped {
		pid_t pid;
		~Reaped()
		{
			int status;
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
		}
	} criu_at_end { criu }; // whatever the test ends with: criu's death is what it is about
	pid_t task = -1;
	pollfd p = { pids[0], POLLIN, 0 };
	ASSERT_EQ(poll(&p, 1, 5000), 1) << "the task did not hand its copy to the guard";
	ASSERT_EQ(read(pids[0], &task, sizeof(task)), static_cast<ssize_t>(sizeof(task)));
	close(pids[0]);
	const unique_fd task_fd = guard::pidfd_open(task);
	ASSERT_TRUE(task_fd);
	usleep(200 * 1000); // the copy is under way
	kill(criu, SIGKILL);
	EXPECT_TRUE(guard::pidfd_wait_exit(task_fd.get(), 5000)) << "the guard, busy copying, let the task live";
	guard::pidfd_send_signal(task_fd.get(), SIGKILL);
}

TEST(CopyOutcomeRecord, CarriesTheOutcomeAndRefusesWhatItDidNotMake)
{
	CopyOutcome o;
	o.err = -EBADMSG;
	o.error = "image amdgpu-pages-11-0001.img is damaged";
	o.log = { { LogLevel::info, "pid 7: restored GPU 0x0001" }, { LogLevel::warn, "cut short" } };
	o.overlap = { 1.5, 2.5, 0.25 };
	const std::vector<uint8_t> record = encode_outcome(9, 4242, o);
	uint32_t kind = 0;
	pid_t pid = 0;
	const CopyOutcome back = decode_outcome(record, kind, pid);
	EXPECT_EQ(kind, 9u);
	EXPECT_EQ(pid, 4242);
	EXPECT_EQ(back.err, o.err);
	EXPECT_EQ(back.error, o.error);
	ASSERT_EQ(back.log.size(), 2u);
	EXPECT_EQ(back.log[1].level, LogLevel::warn);
	EXPECT_EQ(back.log[1].text, "cut short");
	EXPECT_EQ(back.overlap.beside_seconds, 2.5);
	EXPECT_THROW(decode_outcome(std::span(record).first(record.size() - 1), kind, pid), Error);
	// a log longer than a record holds is cut short, never the record
	o.log.assign(1000, { LogLevel::info, std::string(200, 'x') });
	EXPECT_LE(encode_outcome(9, 1, o).size(), kMaxOutcomeRecord);
}

} // namespace
} // namespace amdgpu
