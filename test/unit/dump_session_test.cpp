// SPDX-License-Identifier: GPL-2.0-only
//
// The dump of one /dev/kfd file, walked on the host with a fake kernel and copy engine: a dump
// that succeeds leaves the kfd image and one pages image per GPU; a dump that fails at any step
// leaves the task's queues resumed, no image of the file, no fd of the plugin's, and gives criu
// the errno and a message naming the step that failed.
#include "sessions/dump_session.hpp"

#include "support/error.hpp"
#include "images/metadata_images.hpp"
#include "render/render_image.hpp"
#include "sessions/options.hpp"
#include "support/fake_gpu.hpp"
#include "support/sleeping_child.hpp"
#include "support/temp_dir.hpp"
#include "topology_fixtures.hpp"

#include <gtest/gtest.h>

#include <amdgpu_drm.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

namespace amdgpu {
namespace {

using test::FakeGpu;
using test::Op;

constexpr uint32_t kFileId = 11;

std::vector<std::string> image_files(const std::filesystem::path &dir)
{
	std::vector<std::string> names;
	for (const auto &e : std::filesystem::directory_iterator(dir))
		names.push_back(e.path().filename().string());
	std::sort(names.begin(), names.end());
	return names;
}

class DumpSessionTest : public ::testing::Test {
protected:
	DumpSessionTest()
	    : topology_dir(test::topology_fixture("mi210-2gpu-pcie")), topology(parse_topology(topology_dir)),
	      gpu(topology)
	{
		gpu.pid = 4242;
	}

	// Dumps a task's /dev/kfd file (an eventfd stands for it) in a session that ends as criu's
	// exit hook ends it; returns the error the hook would give criu, if any.
	std::optional<Error> dump()
	{
		const std::set<int> before = test::open_fds();
		std::optional<Error> error;
		{
			DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
			const int task_fd = eventfd(0, EFD_CLOEXEC);
			try {
				session.dump_kfd(task_fd, kFileId);
			} catch (const Error &e) {
				error = e;
				dmabufs_left = gpu.still_open(Op::checkpoint);
			}
			close(task_fd);
			session.finish();
		}
		fds_leaked = test::open_fds() != before;
		return error;
	}

	Options options;
	test::TempDir images;
	std::filesystem::path topology_dir;
	Topology topology;
	FakeGpu gpu;
	std::vector<int> dmabufs_left;
	bool fds_leaked = false;
};

TEST_F(DumpSessionTest, SavesTheKfdImageOnePagesImagePerGpuTheirSumsAndResumesTheQueues)
{
	ASSERT_FALSE(dump());
	std::vector<std::string> expected { kfd_image_name(kFileId), sums_image_name(kFileId) };
	for (const Node *g : topology.gpus())
		expected.push_back(pages_image_name(kFileId, g->gpu_id));
	std::sort(expected.begin(), expected.end());
	EXPECT_EQ(image_files(images.path()), expected);

	const CriuKfdPtr msg = read_criu_kfd(ImageDir::files(images.fd()), kFileId);
	EXPECT_EQ(msg->pid, gpu.pid);
	EXPECT_EQ(msg->num_of_gpus, topology.gpus().size());
	EXPECT_EQ(msg->n_bo_entries, 2 * topology.gpus().size() + 1);
	EXPECT_EQ(msg->num_of_objects, 3u);
	EXPECT_EQ(msg->priv_data.len, 64u);
	EXPECT_TRUE(gpu.called(Op::unpause, gpu.paused_fd()));
	EXPECT_EQ(gpu.count(Op::unpause), 1);
	ASSERT_EQ(gpu.jobs.size(), topology.gpus().size());
	for (const GpuCopyJob &job : gpu.jobs) {
		EXPECT_EQ(job.sizes.size(), 2u);
		EXPECT_GE(job.render_fd, 0);
	}
	EXPECT_FALSE(fds_leaked);
}

struct DumpFault {
	Op op;
	int nth;
	const char *cause; // what the message criu logs must say
	bool paused;	   // the queues were paused when it failed
};

void PrintTo(const DumpFault &f, std::ostream *os)
{
	*os << test::to_string(f.op) << "#" << f.nth;
}

class DumpFailsAt : public DumpSessionTest, public ::testing::WithParamInterface<DumpFault> {};

TEST_P(DumpFailsAt, LeavesTheQueuesRunningNoImageAndNoFdAndNamesTheCause)
{
	const DumpFault &f = GetParam();
	gpu.fail(f.op, -EIO, f.nth);
	const std::optional<Error> error = dump();
	ASSERT_TRUE(error) << "the dump succeeded";
	EXPECT_EQ(error->err(), -EIO);
	EXPECT_NE(std::string(error->what()).find(f.cause), std::string::npos) << error->what();

	if (f.paused)
		EXPECT_TRUE(gpu.called(Op::unpause, gpu.paused_fd())) << "the queues stay paused";
	else
		EXPECT_EQ(gpu.count(Op::unpause), 0) << "UNPAUSE of queues KFD never paused";
	EXPECT_EQ(image_files(images.path()), std::vector<std::string>()) << "a failed dump left images";
	EXPECT_FALSE(fds_leaked);
	// What KFD installed for the copy (the dma-bufs) goes as soon as the dump fails; the
	// session's own fds wait for criu's exit hook.
	EXPECT_EQ(dmabufs_left, std::vector<int>());
}

INSTANTIATE_TEST_SUITE_P(EveryStep, DumpFailsAt,
			 ::testing::Values(DumpFault { Op::open_kfd, 0, "cannot open /dev/kfd", false },
					   DumpFault { Op::get_version, 0, "KFD GET_VERSION failed", false },
					   DumpFault { Op::process_info, 0, "KFD PROCESS_INFO failed", false },
					   DumpFault { Op::checkpoint, 0, "KFD CHECKPOINT failed for pid 4242", true },
					   DumpFault { Op::open_render_node, 0, "cannot open /dev/dri/renderD", true },
					   DumpFault { Op::open_render_node, 1, "cannot open /dev/dri/renderD", true },
					   DumpFault { Op::copy, 0, "the copy engine failed", true },
					   DumpFault { Op::copy, 1, "the copy engine failed", true }),
			 [](const auto &info) {
				 return std::string(test::to_string(info.param.op)) + std::to_string(info.param.nth);
			 });

TEST_F(DumpSessionTest, ImplausibleSizesFromProcessInfoFailTheDumpAndResumeTheQueues)
{
	gpu.pid = 7;
	FakeGpu empty(Topology {});
	empty.pid = 7;
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, empty, empty);
		const int task_fd = eventfd(0, EFD_CLOEXEC);
		try {
			session.dump_kfd(task_fd, kFileId);
			ADD_FAILURE() << "a process with no GPU was dumped";
		} catch (const Error &e) {
			EXPECT_EQ(e.err(), -EINVAL);
			EXPECT_NE(std::string(e.what()).find("implausible sizes (0 GPUs"), std::string::npos)
				<< e.what();
		}
		close(task_fd);
	}
	EXPECT_TRUE(empty.called(Op::unpause, empty.paused_fd()));
}

// Linux 7.3 checkpoints a secondary context through its own /dev/kfd file and refuses none; the
// plugin refuses the process instead, since nothing could restore the contexts as they were.
TEST_F(DumpSessionTest, AProcessWithSecondaryKfdContextsIsRefusedAndLeftRunning)
{
	gpu.contexts = { 0, 3 };
	const std::optional<Error> error = dump();
	ASSERT_TRUE(error) << "a process with secondary KFD contexts was dumped";
	EXPECT_EQ(error->err(), -EINVAL);
	const std::string what = error->what();
	EXPECT_NE(what.find("pid 4242 has 2 secondary KFD context(s) (context_0, context_3 in "
			    "/sys/class/kfd/kfd/proc/4242)"),
		  std::string::npos)
		<< what;
	EXPECT_NE(what.find("AMDKFD_IOC_CREATE_PROCESS"), std::string::npos) << what;
	EXPECT_EQ(gpu.contexts_asked_for, 4242);
	EXPECT_EQ(gpu.count(Op::checkpoint), 0) << "the refused process was checkpointed";
	EXPECT_TRUE(gpu.called(Op::unpause, gpu.paused_fd())) << "the queues stay paused";
	EXPECT_EQ(image_files(images.path()), std::vector<std::string>()) << "a refused dump left images";
	EXPECT_FALSE(fds_leaked);
}

TEST_F(DumpSessionTest, AProcessWithoutSecondaryKfdContextsIsAskedAboutThemAndDumped)
{
	ASSERT_FALSE(dump());
	EXPECT_EQ(gpu.contexts_asked_for, 4242);
	EXPECT_EQ(gpu.count(Op::checkpoint), 1);
}

// KFD's CRIU leaves out ROCm's runtime registration (RUNTIME_ENABLE, KFD 1.13): without it a
// restored runtime never hears of a GPU error again, so the dump reads it and saves it.
TEST_F(DumpSessionTest, OnKfd113TheRuntimeRegistrationIsReadWhilePausedAndSaved)
{
	gpu.version = kfd::kRuntimeEnableSince;
	gpu.runtime = { kfd::RuntimeState::enabled, 0x7f00dead1000, true };
	ASSERT_FALSE(dump());
	EXPECT_EQ(gpu.runtime_asked_for, 4242);
	EXPECT_LT(gpu.first_call(Op::process_info), gpu.first_call(Op::runtime_info))
		<< "read while the task's queues could run";
	const CriuKfdPtr msg = read_criu_kfd(ImageDir::files(images.fd()), kFileId);
	const std::optional<kfd::RuntimeInfo> saved = kfd_runtime(*msg, "kfd image");
	ASSERT_TRUE(saved) << "the image does not say how the runtime was registered";
	EXPECT_EQ(saved->state, kfd::RuntimeState::enabled);
	EXPECT_EQ(saved->r_debug, 0x7f00dead1000u);
	EXPECT_TRUE(saved->ttmp_setup);
}

TEST_F(DumpSessionTest, BeforeKfd113NoRuntimeCanRegisterAndTheImageSaysNothingOfIt)
{
	gpu.version = { 1, 11 };
	ASSERT_FALSE(dump());
	EXPECT_EQ(gpu.count(Op::runtime_info), 0);
	const CriuKfdPtr msg = read_criu_kfd(ImageDir::files(images.fd()), kFileId);
	EXPECT_FALSE(kfd_runtime(*msg, "kfd image"));
}

TEST_F(DumpSessionTest, AProcessUnderAGpuDebuggerIsRefusedAndLeftRunning)
{
	gpu.version = kfd::kRuntimeEnableSince;
	gpu.fail(Op::runtime_info, -EALREADY);
	const std::optional<Error> error = dump();
	ASSERT_TRUE(error) << "a process under a GPU debugger was dumped";
	EXPECT_EQ(error->err(), -EALREADY);
	EXPECT_NE(std::string(error->what()).find("pid 4242 has a GPU debug session open"), std::string::npos)
		<< error->what();
	EXPECT_TRUE(gpu.called(Op::unpause, gpu.paused_fd())) << "the queues stay paused";
	EXPECT_EQ(image_files(images.path()), std::vector<std::string>()) << "a refused dump left images";
	EXPECT_FALSE(fds_leaked);
}

TEST_F(DumpSessionTest, ARuntimeRegistrationThatCannotBeReadRefusesTheDumpNamingIt)
{
	gpu.version = kfd::kRuntimeEnableSince;
	gpu.fail(Op::runtime_info, -EPERM);
	const std::optional<Error> error = dump();
	ASSERT_TRUE(error) << "a process whose runtime registration is unknown was dumped";
	EXPECT_EQ(error->err(), -EPERM);
	EXPECT_NE(std::string(error->what()).find("cannot read how pid 4242 registered ROCm's runtime"),
		  std::string::npos)
		<< error->what();
	EXPECT_TRUE(gpu.called(Op::unpause, gpu.paused_fd()));
	EXPECT_EQ(image_files(images.path()), std::vector<std::string>());
}

TEST_F(DumpSessionTest, ARuntimeWaitingForADebuggerIsRefused)
{
	gpu.version = kfd::kRuntimeEnableSince;
	gpu.runtime = { kfd::RuntimeState::enabled_busy, 0x1000, false };
	const std::optional<Error> error = dump();
	ASSERT_TRUE(error) << "a runtime stuck in RUNTIME_ENABLE was dumped";
	EXPECT_EQ(error->err(), -EBUSY);
	EXPECT_NE(std::string(error->what()).find("waiting for a GPU debugger"), std::string::npos) << error->what();
	EXPECT_TRUE(gpu.called(Op::unpause, gpu.paused_fd()));
	EXPECT_EQ(image_files(images.path()), std::vector<std::string>());
}

TEST_F(DumpSessionTest, AFailedUnpauseIsTriedAgainThenLoggedNotThrown)
{
	gpu.fail(Op::unpause, -EIO, FakeGpu::kEveryCall);
	EXPECT_FALSE(dump());
	EXPECT_EQ(gpu.count(Op::unpause), 3);
}

TEST_F(DumpSessionTest, ATransientUnpauseFailureIsTriedAgain)
{
	gpu.fail(Op::unpause, -EIO);
	EXPECT_FALSE(dump());
	EXPECT_EQ(gpu.count(Op::unpause), 2);
}

TEST_F(DumpSessionTest, MemoryOfAnotherGpuAProcessImportedRefusesTheDumpWhereCriuHandsTheFilesOneByOne)
{
	gpu.imported_bos = { 1 };
	const std::optional<Error> error = dump();
	ASSERT_TRUE(error) << "a process holding imported memory was dumped apart from its owner";
	EXPECT_EQ(error->err(), -EBUSY);
	const std::string msg = error->what();
	EXPECT_NE(msg.find("holds GPU memory it imported from another process"), std::string::npos) << msg;
	EXPECT_NE(msg.find("other GPUs' buffers: pid 4242 (VRAM on GPU"), std::string::npos) << msg;
	EXPECT_TRUE(gpu.called(Op::unpause, gpu.paused_fd())) << "the queues stay paused";
	EXPECT_EQ(image_files(images.path()), std::vector<std::string>());
	EXPECT_FALSE(fds_leaked);
}

// criu 4.3 calls a hook after its memory dump that can still fail the dump: the copy runs beside
// criu's work from the kfd file's hook to that one (join_copies()).
class DumpBesideCriuTest : public DumpSessionTest {
protected:
	std::vector<std::string> all_images() const
	{
		std::vector<std::string> expected { kfd_image_name(kFileId), sums_image_name(kFileId) };
		for (const Node *g : topology.gpus())
			expected.push_back(pages_image_name(kFileId, g->gpu_id));
		std::sort(expected.begin(), expected.end());
		return expected;
	}
	size_t index_of(Op op) const
	{
		const auto &calls = gpu.calls();
		return static_cast<size_t>(
			std::find_if(calls.begin(), calls.end(), [&](const auto &c) { return c.op == op; }) -
			calls.begin());
	}
};

TEST_F(DumpBesideCriuTest, TheCopyGoesOnAfterTheFileHookAndEndsAtTheJoinWithTheSameImages)
{
	std::promise<void> go;
	std::shared_future<void> gate = go.get_future().share();
	gpu.while_copying = [gate] { gate.wait_for(std::chrono::seconds(5)); };
	const int task_fd = eventfd(0, EFD_CLOEXEC);
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		session.plan_copies(true, "4.3");
		session.dump_kfd(task_fd, kFileId); // returns while the copy waits at the gate
		EXPECT_EQ(image_files(images.path()), std::vector<std::string> { kfd_image_name(kFileId) })
			<< "the pages were written before criu went on";
		go.set_value();
		session.join_copies();
		EXPECT_EQ(image_files(images.path()), all_images());
		EXPECT_EQ(gpu.count(Op::unpause), 0) << "queues resumed while criu still dumps";
		session.finish();
	}
	close(task_fd);
	EXPECT_EQ(gpu.count(Op::unpause), 1);
	EXPECT_EQ(gpu.jobs.size(), topology.gpus().size());
}

TEST_F(DumpBesideCriuTest, ACopyThatFailsBesideCriuFailsTheJoinRemovesTheImagesAndResumesTheQueues)
{
	gpu.fail(Op::copy, -EIO);
	const std::set<int> before = test::open_fds();
	const int task_fd = eventfd(0, EFD_CLOEXEC);
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		session.plan_copies(true, "4.3");
		session.dump_kfd(task_fd, kFileId);
		try {
			session.join_copies();
			ADD_FAILURE() << "a failed copy did not fail the dump";
		} catch (const Error &e) {
			EXPECT_EQ(e.err(), -EIO);
			EXPECT_NE(std::string(e.what()).find("the copy engine failed"), std::string::npos) << e.what();
		}
		EXPECT_EQ(image_files(images.path()), std::vector<std::string>()) << "a failed copy left images";
		EXPECT_EQ(gpu.still_open(Op::checkpoint), std::vector<int>()) << "the copy's dma-bufs stay open";
		session.finish();
	}
	close(task_fd);
	EXPECT_TRUE(gpu.called(Op::unpause, gpu.paused_fd()));
	EXPECT_EQ(test::open_fds(), before);
}

TEST_F(DumpBesideCriuTest, ADumpThatFailsBeforeTheJoinWaitsForTheCopyRemovesItsImagesThenResumes)
{
	const int task_fd = eventfd(0, EFD_CLOEXEC);
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		session.plan_copies(true, "4.3");
		session.dump_kfd(task_fd, kFileId);
		session.finish(); // criu failed after the file: its exit hook comes with no join
		EXPECT_EQ(image_files(images.path()), std::vector<std::string>()) << "an unjoined copy left images";
	}
	close(task_fd);
	EXPECT_EQ(gpu.count(Op::copy), static_cast<int>(topology.gpus().size()));
	EXPECT_LT(index_of(Op::copy), index_of(Op::unpause)) << "the queues ran again before the copy ended";
	EXPECT_EQ(gpu.count(Op::unpause), 1);
}

TEST_F(DumpBesideCriuTest, WithoutALateHookOrWithOverlapOffTheCopyEndsWithinTheFileHook)
{
	for (const bool late_hook : { false, true }) {
		options.overlap_copy = late_hook ? false : true;
		test::TempDir dir;
		const int task_fd = eventfd(0, EFD_CLOEXEC);
		{
			DumpSession session(options, ImageDir::files(dir.fd()), topology_dir, gpu, gpu);
			session.plan_copies(late_hook, "4.2");
			session.dump_kfd(task_fd, kFileId);
			EXPECT_EQ(image_files(dir.path()), all_images()) << "late hook " << late_hook;
			session.finish();
		}
		close(task_fd);
	}
}

// criu 4.1+ hands every task of the frozen tree to checkpoint_task() before anything is dumped.
class DumpTreeTest : public DumpSessionTest {
protected:
	~DumpTreeTest() override
	{
		for (const pid_t t : tasks) {
			kill(t, SIGKILL);
			waitpid(t, nullptr, 0);
		}
		for (const int fd : task_fds)
			close(fd);
	}

	// A task of the tree with a /dev/kfd file (an eventfd stands for it).
	pid_t task()
	{
		tasks.push_back(test::sleeping_child());
		task_fds.push_back(eventfd(0, EFD_CLOEXEC));
		return tasks.back();
	}
	TaskGpuFiles files_of(size_t i)
	{
		TaskGpuFiles files;
		files.kfd.emplace_back(fcntl(task_fds[i], F_DUPFD_CLOEXEC, 0));
		return files;
	}

	// The tree of one task taken (checkpoint_task) and judged whole (close_census) in a session
	// that then ends: the error the dump would give criu, if any.
	std::optional<Error> take_one_task()
	{
		std::optional<Error> error;
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		session.checkpoint_task(tasks[0], files_of(0));
		try {
			session.close_census();
		} catch (const Error &e) {
			error = e;
		}
		session.finish();
		return error;
	}

	std::vector<pid_t> tasks;
	std::vector<int> task_fds;
};

TEST_F(DumpTreeTest, TakesEachTaskOnceBeforeAnythingIsWrittenAndWritesItWhenCriuHandsTheFile)
{
	task();
	task();
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		session.checkpoint_task(tasks[0], files_of(0));
		session.checkpoint_task(tasks[1], files_of(1));
		EXPECT_EQ(gpu.count(Op::checkpoint), 2);
		EXPECT_EQ(image_files(images.path()), std::vector<std::string>()) << "written before the tree was seen";
		session.close_census();
		session.dump_kfd(task_fds[1], kFileId + 1);
		session.dump_kfd(task_fds[0], kFileId);
		EXPECT_EQ(gpu.count(Op::process_info), 2) << "a task taken before was paused again";
		EXPECT_EQ(gpu.count(Op::checkpoint), 2) << "a task taken before was checkpointed again";
		EXPECT_EQ(gpu.count(Op::unpause), 0) << "queues resumed while criu still dumps";
		session.finish();
	}
	EXPECT_EQ(gpu.count(Op::unpause), 2);
	EXPECT_TRUE(read_criu_kfd(ImageDir::files(images.fd()), kFileId));
	EXPECT_TRUE(read_criu_kfd(ImageDir::files(images.fd()), kFileId + 1));
}

TEST_F(DumpTreeTest, AKfdFileTwoTasksHoldIsTakenOnceWithTheFirst)
{
	task();
	task();
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		session.checkpoint_task(tasks[0], files_of(0));
		session.checkpoint_task(tasks[1], files_of(0)); // inherited over fork
		EXPECT_EQ(gpu.count(Op::process_info), 1) << "one KFD process paused twice";
		EXPECT_EQ(gpu.count(Op::checkpoint), 1);
		session.close_census();
		session.dump_kfd(task_fds[0], kFileId);
		session.finish();
	}
	EXPECT_EQ(gpu.count(Op::unpause), 1);
	const CriuKfdPtr msg = read_criu_kfd(ImageDir::files(images.fd()), kFileId);
	for (const BoShare &s : bo_shares(*msg, "img"))
		EXPECT_EQ(s.role, ShareRole::none) << "its buffers taken as shared with itself";
}

TEST_F(DumpTreeTest, ABufferTwoTasksShareIsSavedOnceAndEachImageSaysWhoRestoresIt)
{
	gpu.shared_bos = { 0 }; // the first VRAM BO of the first GPU is one buffer in both tasks
	task();
	task();
	std::vector<size_t> first_gpu_bos; // per dump_kfd, the BOs of the first GPU's pages image
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		session.checkpoint_task(tasks[0], files_of(0));
		session.checkpoint_task(tasks[1], files_of(1));
		session.close_census();
		session.dump_kfd(task_fds[1], kFileId + 1); // criu's order needs not be the tree's
		first_gpu_bos.push_back(gpu.jobs.at(0).sizes.size());
		session.dump_kfd(task_fds[0], kFileId);
		first_gpu_bos.push_back(gpu.jobs.at(0).sizes.size());
		session.finish();
	}
	const CriuKfdPtr restorer = read_criu_kfd(ImageDir::files(images.fd()), kFileId);
	const CriuKfdPtr taker = read_criu_kfd(ImageDir::files(images.fd()), kFileId + 1);
	EXPECT_EQ(bo_shares(*restorer, "r")[0].role, ShareRole::restorer);
	EXPECT_EQ(bo_shares(*taker, "t")[0].role, ShareRole::taker);
	EXPECT_EQ(restorer->bo_entries[0]->handle, taker->bo_entries[0]->handle) << "the buffer has one number";
	EXPECT_EQ(taker->bo_entries[0]->handle, 1u);
	for (size_t i = 1; i < taker->n_bo_entries; i++) {
		EXPECT_EQ(bo_shares(*taker, "t")[i].role, ShareRole::none) << "BO " << i;
		EXPECT_EQ(taker->bo_entries[i]->handle, 0xffffffffu) << "BO " << i;
	}
	// the restorer's pages hold the buffer's bytes, the taker's have no place for them
	EXPECT_EQ(first_gpu_bos, (std::vector<size_t> { 1, 2 }));
	EXPECT_EQ(gpu.count(Op::unpause), 2);
}

TEST_F(DumpSessionTest, ABufferTwoProcessesShareRefusesTheDumpWhereCriuHandsTheFilesOneByOne)
{
	gpu.shared_bos = { 0 };
	std::optional<Error> error;
	const int a = eventfd(0, EFD_CLOEXEC), b = eventfd(0, EFD_CLOEXEC);
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		session.dump_kfd(a, kFileId);
		try {
			session.dump_kfd(b, kFileId + 1);
		} catch (const Error &e) {
			error = e;
		}
		session.finish();
	}
	close(a);
	close(b);
	ASSERT_TRUE(error) << "two processes sharing a buffer were dumped apart";
	EXPECT_EQ(error->err(), -EBUSY);
	const std::string msg = error->what();
	EXPECT_NE(msg.find("a GPU buffer of 64 KiB (65536 bytes) is shared"), std::string::npos) << msg;
	EXPECT_NE(msg.find("(4.1 or newer)"), std::string::npos) << msg;
	EXPECT_NE(msg.find("the processes run on"), std::string::npos) << msg;
	EXPECT_EQ(gpu.count(Op::unpause), 2) << "a process's queues stay paused";
}

TEST_F(DumpTreeTest, ADmabufFdATaskHoldsOfItsOwnBufferMakesTheBufferShared)
{
	gpu.shared_bos = { 0 };
	task();
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		TaskGpuFiles files = files_of(0);
		files.dmabufs.push_back({ .fd = 9, .dev = 1, .ino = 0, .size = 1 << 16 }); // FakeGpu's key of BO 0
		session.checkpoint_task(tasks[0], std::move(files));
		session.close_census();
		session.dump_kfd(task_fds[0], kFileId);
		session.finish();
	}
	// the task restores the buffer, and offers it to its own dma-buf fd
	const CriuKfdPtr msg = read_criu_kfd(ImageDir::files(images.fd()), kFileId);
	EXPECT_EQ(bo_shares(*msg, "img")[0].role, ShareRole::restorer);
	EXPECT_EQ(msg->bo_entries[0]->handle, 1u);
	EXPECT_EQ(bo_shares(*msg, "img")[1].role, ShareRole::none);
}

TEST_F(DumpTreeTest, ADmabufFdOfMemoryNoTaskHoldsRefusesTheDumpNamingTheFd)
{
	task();
	std::optional<Error> error;
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		TaskGpuFiles files = files_of(0);
		files.dmabufs.push_back({ .fd = 9, .dev = 7, .ino = 7, .size = 8192 }); // no bucket's
		try {
			session.checkpoint_task(tasks[0], std::move(files));
		} catch (const Error &e) {
			error = e;
		}
		session.finish();
	}
	ASSERT_TRUE(error);
	const std::string msg = error->what();
	EXPECT_NE(msg.find(strprintf("a GPU buffer of 8 KiB (8192 bytes) is shared: pid %d (dma-buf fd 9)", tasks[0])),
		  std::string::npos)
		<< msg;
	EXPECT_NE(msg.find("memory of no GPU process of the dump"), std::string::npos) << msg;
	EXPECT_EQ(gpu.count(Op::unpause), 1);
}

TEST_F(DumpTreeTest, VramNoTaskOfTheTreeWasChargedForRefusesTheDumpAsImportedFromOutside)
{
	gpu.vram_charge = 0; // KFD charged the task nothing: every VRAM buffer of it was imported
	task();
	const std::optional<Error> error = take_one_task();
	ASSERT_TRUE(error);
	const std::string msg = error->what();
	EXPECT_NE(msg.find("256 KiB (262144 bytes) of VRAM that none of them allocated"), std::string::npos) << msg;
	EXPECT_NE(msg.find("they imported it, from a process outside the dump"), std::string::npos) << msg;
	EXPECT_EQ(gpu.count(Op::unpause), 1);
	EXPECT_EQ(image_files(images.path()), std::vector<std::string>());
}

TEST_F(DumpTreeTest, ABufferOfAnotherGpuWhoseOwnerIsNotDumpedRefusesTheDump)
{
	gpu.imported_bos = { 1 }; // KFD says the second BO is another GPU's memory
	task();
	const std::optional<Error> error = take_one_task();
	ASSERT_TRUE(error);
	const std::string msg = error->what();
	EXPECT_NE(msg.find("is another GPU's memory, imported by pid"), std::string::npos) << msg;
	EXPECT_NE(msg.find("a process outside the dump does"), std::string::npos) << msg;
	EXPECT_EQ(gpu.count(Op::unpause), 1);
	EXPECT_EQ(image_files(images.path()), std::vector<std::string>());
}

TEST_F(DumpTreeTest, VramEveryTaskWasChargedForIsNoObstacle)
{
	gpu.vram_charge = 2 << 16; // each GPU: its two VRAM BOs
	task();
	const std::optional<Error> error = take_one_task();
	EXPECT_FALSE(error) << error->what();
}

// A process's render-node file (the render node of the first GPU), dumped after its /dev/kfd
// file in one session as criu hands them; the error the render file's hook would give criu.
class RenderNodeDumpTest : public DumpSessionTest {
protected:
	std::optional<Error> dump_with_render_file()
	{
		std::optional<Error> error;
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, gpu, gpu);
		const int kfd_fd = eventfd(0, EFD_CLOEXEC);
		const int render_fd = eventfd(0, EFD_CLOEXEC);
		try {
			session.dump_kfd(kfd_fd, kFileId);
			session.dump_render_node(render_fd, kRenderId, topology.gpus().front()->props.drm_render_minor);
		} catch (const Error &e) {
			error = e;
		}
		close(render_fd);
		close(kfd_fd);
		session.finish();
		return error;
	}
	static constexpr uint32_t kRenderId = 12;
	// Two buffers and a gap in the handles, as libdrm_amdgpu leaves them after a free.
	const std::vector<gem::Object> two_buffers { { 1, 0, 1 << 20, 4, 0, 1 }, { 3, 0, 3 << 20, 2, 0, 1 } };
};

TEST_F(RenderNodeDumpTest, AFileWithoutGemObjectsIsSaved)
{
	ASSERT_FALSE(dump_with_render_file());
	EXPECT_TRUE(std::filesystem::exists(images.path() / render_image_name(kRenderId)));
	EXPECT_EQ(gpu.count(Op::gem_list), 1);
	EXPECT_EQ(gpu.count(Op::gem_probe), 0);
}

TEST_F(RenderNodeDumpTest, GemObjectsTheKernelListsAreSavedBesideTheKfdFile)
{
	gpu.gem_objects = two_buffers;
	ASSERT_FALSE(dump_with_render_file());
	EXPECT_TRUE(std::filesystem::exists(images.path() / render_image_name(kRenderId)));
	EXPECT_TRUE(std::filesystem::exists(images.path() / sums_image_name(kRenderId)));
	EXPECT_EQ(gpu.count(Op::unpause), 1);
}

TEST_F(RenderNodeDumpTest, AKfdBufferTheFileHoldsIsSavedOnceWithTheBuffer)
{
	gpu.shared_bos = { 0 };
	gpu.gem_objects = two_buffers;
	gpu.gem_objects.push_back({ 7, 0, 1 << 16, AMDGPU_GEM_DOMAIN_VRAM, 0, 1 });
	gpu.gem_kfd_bos = { { 7, 0 } };
	ASSERT_FALSE(dump_with_render_file());
	const CriuRenderNodePtr msg = read_criu_render_node(ImageDir::files(images.fd()), kRenderId);
	const std::vector<GemEntry> entries = gem_entries(*msg, "image");
	ASSERT_EQ(entries.size(), 3u);
	ASSERT_TRUE(entries[2].kfd_addr);
	EXPECT_EQ(*entries[2].kfd_addr, 0x7f0000000000u) << "the fake's first BO";
	EXPECT_EQ(msg->bo_entries[2]->is_import, 1u) << "upstream's reader takes it as an import";
	EXPECT_EQ(gpu.jobs.back().sizes, (std::vector<uint64_t> { 1 << 20, 3 << 20 }))
		<< "the pages hold the two objects of the file's own, not the KFD buffer";
}

TEST_F(RenderNodeDumpTest, AnObjectItCannotSaveRefusesTheDumpAndTheQueuesRunAgain)
{
	gpu.gem_objects = two_buffers;
	gpu.gem_busy = { 3 };
	const std::optional<Error> error = dump_with_render_file();
	ASSERT_TRUE(error);
	EXPECT_NE(std::string(error->what()).find("GEM handle 3 (3145728 bytes) is still in use by the GPU"),
		  std::string::npos)
		<< error->what();
	EXPECT_FALSE(std::filesystem::exists(images.path() / render_image_name(kRenderId)));
	EXPECT_EQ(gpu.count(Op::unpause), 1);
}

TEST_F(RenderNodeDumpTest, OnAKernelThatCannotListThemProbedObjectsRefuseTheDumpToo)
{
	gpu.gem_listing = false;
	gpu.gem_objects = two_buffers;
	const std::optional<Error> error = dump_with_render_file();
	ASSERT_TRUE(error);
	EXPECT_NE(std::string(error->what())
			  .find("holds 2 GEM buffer object(s) of 4194304 bytes (handles 1, 3; found "
				"by their handles, as this kernel cannot list them)"),
		  std::string::npos)
		<< error->what();
	EXPECT_EQ(gpu.count(Op::gem_probe), 1);
	EXPECT_EQ(gpu.count(Op::unpause), 1);
}

TEST_F(RenderNodeDumpTest, AListingThatFailsRefusesTheDumpNamingTheIoctl)
{
	gpu.fail(Op::gem_list, -EIO);
	const std::optional<Error> error = dump_with_render_file();
	ASSERT_TRUE(error);
	EXPECT_NE(std::string(error->what()).find("GEM_LIST_HANDLES Input/output error"), std::string::npos)
		<< error->what();
	EXPECT_EQ(gpu.count(Op::unpause), 1);
}

TEST_F(RenderNodeDumpTest, ManyObjectsAreNamedByTheirFirstHandles)
{
	gpu.gem_listing = false;
	for (uint32_t h = 1; h <= 40; h++)
		gpu.gem_objects.push_back({ h, 0, 4096, 2, 0, 1 });
	const std::optional<Error> error = dump_with_render_file();
	ASSERT_TRUE(error);
	const std::string msg = error->what();
	EXPECT_NE(msg.find("holds 40 GEM buffer object(s) of 163840 bytes (handles 1, 2,"), std::string::npos) << msg;
	EXPECT_NE(msg.find(", ...; found by their handles"), std::string::npos) << msg;
}

} // namespace
} // namespace amdgpu
