// SPDX-License-Identifier: GPL-2.0-only
//
// The restore of one /dev/kfd file inside a task, walked on the host with a fake kernel and copy
// engine, from images a (fake) dump wrote: a restore that succeeds hands criu the new /dev/kfd fd
// and knows the mappings KFD moved; a restore that fails at any step gives criu the errno and a
// message naming the step, and leaves nothing of the process: no /dev/kfd or dma-buf fd, no
// mapping to move, and (once the session is gone) no fd of the plugin's.
#include "sessions/restore_session.hpp"

#include "criu_host.hpp"
#include "sessions/dump_session.hpp"
#include "support/error.hpp"
#include "images/image_store.hpp"
#include "driver/kfd_ioctl.hpp"
#include "images/metadata_images.hpp"
#include "sessions/options.hpp"
#include "guard/restore_guard.hpp"
#include "support/fake_gpu.hpp"
#include "support/temp_dir.hpp"
#include "topology_fixtures.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

namespace amdgpu {
namespace {

using test::FakeGpu;
using test::Op;

constexpr uint32_t kFileId = 11;
constexpr uint32_t kRenderFileId = 12;
constexpr uint64_t kFirstBoAddr = 0x7f0000000000; // FakeGpu's first BO, a VRAM BO

class RestoreSessionTest : public ::testing::Test {
protected:
	RestoreSessionTest()
	    : topology_dir(test::topology_fixture("mi210-2gpu-pcie")), topology(parse_topology(topology_dir)),
	      gpu(topology)
	{
		FakeGpu dumped(topology);
		dumped.pid = static_cast<uint32_t>(getpid());
		DumpSession dump(options, ImageDir::files(images.fd()), topology_dir, dumped, dumped);
		const int task_fd = eventfd(0, EFD_CLOEXEC);
		dump.dump_kfd(task_fd, kFileId);
		const int render_fd = eventfd(0, EFD_CLOEXEC);
		dump.dump_render_node(render_fd, kRenderFileId, topology.gpus().front()->props.drm_render_minor);
		close(render_fd);
		close(task_fd);
	}

	// Restores the file in a session that ends with the test; the fd criu would get, or the
	// error it would get.
	std::variant<int, Error> restore(RestoreSession &session)
	{
		try {
			return session.restore_file(kFileId, nullptr);
		} catch (const Error &e) {
			return e;
		}
	}

	Options options;
	test::TempDir images;
	std::filesystem::path topology_dir;
	Topology topology;
	FakeGpu gpu;
};

TEST_F(RestoreSessionTest, HandsCriuTheNewKfdFdAndMovesTheMappingsKfdMoved)
{
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<int>(result)) << std::get<Error>(result).what();
	const int fd = std::get<int>(result);
	EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int> { fd });
	EXPECT_EQ(gpu.count(Op::restore), 1);
	EXPECT_EQ(gpu.count(Op::copy), static_cast<int>(topology.gpus().size()));
	EXPECT_EQ(gpu.still_open(Op::restore), std::vector<int>()) << "the dma-bufs of the copy stay open";

	uint64_t offset = 0;
	int map_fd = -2;
	EXPECT_EQ(session.update_vma(GpuFileKind::kfd, kFirstBoAddr, kFirstBoAddr >> 12, &offset, &map_fd), 1);
	EXPECT_EQ(offset, (kFirstBoAddr >> 12) + 0x1000);
	EXPECT_EQ(map_fd, -1);
	close(fd);
}

struct RestoreFault {
	Op op;
	int nth;
	int err;
	const char *cause;
};

void PrintTo(const RestoreFault &f, std::ostream *os)
{
	*os << test::to_string(f.op) << "#" << f.nth;
}

class RestoreFailsAt : public RestoreSessionTest, public ::testing::WithParamInterface<RestoreFault> {};

TEST_P(RestoreFailsAt, LeavesNothingOfTheProcessAndNamesTheCause)
{
	const RestoreFault &f = GetParam();
	const std::set<int> before = test::open_fds();
	{
		gpu.fail(f.op, f.err, f.nth);
		RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
		const auto result = restore(session);
		ASSERT_TRUE(std::holds_alternative<Error>(result)) << "the restore succeeded";
		const Error &error = std::get<Error>(result);
		EXPECT_EQ(error.err(), f.err);
		EXPECT_NE(std::string(error.what()).find(f.cause), std::string::npos) << error.what();

		EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int>()) << "the new /dev/kfd fd stays open";
		EXPECT_EQ(gpu.still_open(Op::restore), std::vector<int>()) << "dma-buf fds stay open";
		uint64_t offset = 0;
		int map_fd = -2;
		EXPECT_EQ(session.update_vma(GpuFileKind::kfd, kFirstBoAddr, kFirstBoAddr >> 12, &offset, &map_fd), 0)
			<< "a mapping of the failed restore would be moved";
	}
	EXPECT_EQ(test::open_fds(), before) << "the session left fds behind";
}

INSTANTIATE_TEST_SUITE_P(
	EveryStep, RestoreFailsAt,
	::testing::Values(RestoreFault { Op::open_kfd, 0, -EACCES, "cannot open /dev/kfd" },
			  RestoreFault { Op::get_version, 0, -EIO, "KFD GET_VERSION on /dev/kfd failed" },
			  RestoreFault { Op::open_render_node, 0, -EACCES, "(is the user in the video/render group?)" },
			  RestoreFault { Op::open_render_node, 1, -EIO, "cannot open /dev/dri/renderD" },
			  RestoreFault { Op::restore, 0, -EIO, "KFD RESTORE of amdgpu-kfd-11.img failed" },
			  RestoreFault { Op::open_render_node, 2, -EMFILE, "cannot open /dev/dri/renderD" },
			  RestoreFault { Op::copy, 0, -EIO, "the copy engine failed" },
			  RestoreFault { Op::copy, 1, -EIO, "the copy engine failed" }),
	[](const auto &info) { return std::string(test::to_string(info.param.op)) + std::to_string(info.param.nth); });

// Images of a process whose runtime registered with KFD (RUNTIME_ENABLE, KFD 1.13).
class RuntimeRestoreTest : public RestoreSessionTest {
protected:
	RuntimeRestoreTest()
	{
		FakeGpu dumped(topology);
		dumped.pid = static_cast<uint32_t>(getpid());
		dumped.version = kfd::kRuntimeEnableSince;
		dumped.runtime = { kfd::RuntimeState::enabled, 0x7f00dead1000, true };
		DumpSession dump(options, ImageDir::files(images.fd()), topology_dir, dumped, dumped);
		const int task_fd = eventfd(0, EFD_CLOEXEC);
		dump.dump_kfd(task_fd, kFileId);
		close(task_fd);
		gpu.version = kfd::kRuntimeEnableSince;
	}
};

TEST_F(RuntimeRestoreTest, TheRuntimeIsRegisteredAgainOnTheTasksKfdFileBeforeKfdRestoresItsQueues)
{
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<int>(result)) << std::get<Error>(result).what();
	const int fd = std::get<int>(result);
	ASSERT_EQ(gpu.runtime_enabled.size(), 1u);
	EXPECT_EQ(gpu.runtime_enabled[0].r_debug, 0x7f00dead1000u);
	EXPECT_TRUE(gpu.runtime_enabled[0].ttmp_setup);
	EXPECT_TRUE(gpu.called(Op::runtime_enable, fd)) << "registered through another file than the task's";
	EXPECT_LT(gpu.first_call(Op::runtime_enable), gpu.first_call(Op::restore));
	close(fd);
}

TEST_F(RuntimeRestoreTest, AKernelWithoutRuntimeEnableRefusesTheRestoreBeforeKfdCreatesAnything)
{
	gpu.version = { 1, 11 };
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result)) << "restored a runtime that would never hear of errors";
	const Error &error = std::get<Error>(result);
	EXPECT_EQ(error.err(), -EPROTONOSUPPORT);
	EXPECT_NE(std::string(error.what()).find("KFD 1.11 cannot do (1.13 or newer)"), std::string::npos)
		<< error.what();
	EXPECT_EQ(gpu.count(Op::restore), 0);
	EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int>());
}

TEST_F(RuntimeRestoreTest, AFailedRegistrationFailsTheRestoreAndLeavesNothing)
{
	const std::set<int> before = test::open_fds();
	{
		gpu.fail(Op::runtime_enable, -EBUSY);
		RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
		const auto result = restore(session);
		ASSERT_TRUE(std::holds_alternative<Error>(result)) << "the restore succeeded";
		const Error &error = std::get<Error>(result);
		EXPECT_EQ(error.err(), -EBUSY);
		EXPECT_NE(std::string(error.what()).find("KFD RUNTIME_ENABLE (r_debug 0x7f00dead1000) failed"),
			  std::string::npos)
			<< error.what();
		EXPECT_EQ(gpu.count(Op::restore), 0);
		EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int>());
	}
	EXPECT_EQ(test::open_fds(), before);
}

TEST_F(RestoreSessionTest, ImagesThatSayNothingOfTheRuntimeRegisterNone)
{
	gpu.version = kfd::kRuntimeEnableSince;
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<int>(result)) << std::get<Error>(result).what();
	EXPECT_EQ(gpu.count(Op::runtime_enable), 0);
	close(std::get<int>(result));
}

TEST_F(RestoreSessionTest, AMissingRenderNodeFailsBeforeKfdCreatesAnything)
{
	const Node *second = topology.gpus().back();
	gpu.hide_render_node(second->props.drm_render_minor);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result));
	EXPECT_EQ(std::get<Error>(result).err(), -ENOENT);
	EXPECT_NE(std::string(std::get<Error>(result).what())
			  .find(strprintf("renderD%u", second->props.drm_render_minor)),
		  std::string::npos);
	EXPECT_EQ(gpu.count(Op::restore), 0);
	EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int>());
}

TEST_F(RestoreSessionTest, AMissingRenderNodeIsNotMadeWhereNothingRestrictsTheTasksDevices)
{
	const Node *second = topology.gpus().back();
	gpu.hide_render_node(second->props.drm_render_minor);
	gpu.device_rules = 0;
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result));
	EXPECT_NE(std::string(std::get<Error>(result).what())
			  .find("nothing in its device cgroup restricts it, so which GPUs its container was given "
				"cannot be told here"),
		  std::string::npos)
		<< std::get<Error>(result).what();
	EXPECT_EQ(gpu.count(Op::make_render_node), 0);
	EXPECT_EQ(gpu.count(Op::restore), 0);
}

// A container restored on a node whose render minors differ: its /dev came back from the
// checkpoint, and the engine gave the new container its GPUs through the device cgroup.
TEST_F(RestoreSessionTest, TheRenderNodeOfAGpuTheDeviceCgroupGrantsIsMadeAndTheRestoreGoesOn)
{
	const Node *second = topology.gpus().back();
	gpu.hide_render_node(second->props.drm_render_minor);
	gpu.device_rules = 1;
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<int>(result)) << std::get<Error>(result).what();
	EXPECT_EQ(gpu.made_render_nodes, std::vector<unsigned int> { second->props.drm_render_minor });
	EXPECT_LT(gpu.first_call(Op::make_render_node), gpu.first_call(Op::restore));
	close(std::get<int>(result));
}

TEST_F(RestoreSessionTest, ARenderNodeThatCannotBeMadeFailsTheRestoreNamingItAndWhy)
{
	const Node *second = topology.gpus().back();
	gpu.hide_render_node(second->props.drm_render_minor);
	gpu.device_rules = 1;
	gpu.fail(Op::make_render_node, -EPERM);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result));
	const std::string what = std::get<Error>(result).what();
	EXPECT_NE(what.find(strprintf("/dev/dri/renderD%u (device 226:%u) cannot be made: %s",
				      second->props.drm_render_minor, second->props.drm_render_minor, strerror(EPERM))),
		  std::string::npos)
		<< what;
	EXPECT_EQ(gpu.count(Op::restore), 0);
	EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int>());
}

TEST_F(RestoreSessionTest, AMissingPagesImageFailsTheRestoreNamingIt)
{
	const std::string pages = pages_image_name(kFileId, topology.gpus().front()->gpu_id);
	std::filesystem::remove(images.path() / pages);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result));
	EXPECT_NE(std::string(std::get<Error>(result).what()).find(pages), std::string::npos)
		<< std::get<Error>(result).what();
	EXPECT_EQ(gpu.still_open(Op::restore), std::vector<int>());
}

// Flips one bit of an image's payload, `at` bytes into it.
void flip_bit(const std::filesystem::path &image, uint64_t at)
{
	const unique_fd fd(open(image.c_str(), O_RDWR | O_CLOEXEC));
	ASSERT_TRUE(fd);
	uint8_t b = 0;
	ASSERT_EQ(pread(fd.get(), &b, 1, static_cast<off_t>(kFrameHeaderSize + at)), 1);
	b ^= 0x04;
	ASSERT_EQ(pwrite(fd.get(), &b, 1, static_cast<off_t>(kFrameHeaderSize + at)), 1);
}

TEST_F(RestoreSessionTest, ABitFlippedInAPagesImageRefusesTheRestoreNamingTheBlockAndLeavesNothing)
{
	const Node *second = topology.gpus().back();
	const std::string pages = pages_image_name(kFileId, second->gpu_id);
	flip_bit(images.path() / pages, (1 << 16) + 100); // FakeGpu's second BO on the GPU
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result));
	const std::string why = std::get<Error>(result).what();
	EXPECT_EQ(std::get<Error>(result).err(), -EBADMSG);
	EXPECT_NE(why.find(strprintf("image %s is damaged: GPU 0x%04x, the BO at 0x", pages.c_str(), second->gpu_id)),
		  std::string::npos)
		<< why;
	EXPECT_NE(why.find("bytes 0x0..0x10000 (block 2 of 2)"), std::string::npos) << why;
	EXPECT_EQ(gpu.still_open(Op::restore), std::vector<int>());
	EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int>());
}

TEST_F(RestoreSessionTest, ABitFlippedInTheKfdImageIsRefusedBeforeKfdCreatesAnything)
{
	flip_bit(images.path() / kfd_image_name(kFileId), 40);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result));
	EXPECT_EQ(std::get<Error>(result).err(), -EBADMSG);
	EXPECT_NE(std::string(std::get<Error>(result).what())
			  .find(strprintf("image %s is damaged", kfd_image_name(kFileId).c_str())),
		  std::string::npos)
		<< std::get<Error>(result).what();
	EXPECT_EQ(gpu.count(Op::restore), 0);
	EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int>());
}

// Images of upstream's plugin have no sums: they restore, unverified.
TEST_F(RestoreSessionTest, ImagesWithoutSumsRestoreUnverified)
{
	std::filesystem::remove(images.path() / sums_image_name(kFileId));
	std::vector<std::string> lines;
	host::set_log_sink([&](unsigned int, const std::string &line) { lines.push_back(line); });
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	host::set_log_sink(nullptr);
	ASSERT_TRUE(std::holds_alternative<int>(result)) << std::get<Error>(result).what();
	close(std::get<int>(result));
	EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string &l) {
		return l.find("GPU contents restored unverified") != std::string::npos;
	}));
}

// From files, a render node that comes before its task's kfd file finds that image by listing the
// directory, through a new open of it: criu's directory fd keeps its offset.
TEST_F(RestoreSessionTest, ARenderNodeBeforeItsKfdFileFindsTheImageWithoutMovingCriusDirectoryFd)
{
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	ASSERT_EQ(lseek(images.fd(), 0, SEEK_CUR), 0);
	int fd = -1;
	try {
		fd = session.restore_file(kRenderFileId, nullptr);
	} catch (const Error &e) {
		FAIL() << e.what();
	}
	EXPECT_GE(fd, 0);
	EXPECT_EQ(lseek(images.fd(), 0, SEEK_CUR), 0) << "criu's image directory fd was moved";
	EXPECT_EQ(gpu.count(Op::open_render_node), 1);
	close(fd);
}

// RESUME_DEVICES_LATE: a task whose queues cannot start again must not run on as if restored.
TEST(ResumeGpuProcess, AFailedResumeKillsTheTaskAndSaysSo)
{
	FakeGpu gpu(Topology {});
	gpu.fail(Op::resume, -EIO, FakeGpu::kEveryCall);
	const pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	try {
		resume_gpu_process(child, gpu);
		ADD_FAILURE() << "the failed resume succeeded";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EIO);
		EXPECT_NE(std::string(e.what()).find("KFD RESUME of pid"), std::string::npos) << e.what();
		EXPECT_NE(std::string(e.what()).find("the task is killed"), std::string::npos) << e.what();
	}
	int status = 0;
	pid_t reaped = 0;
	for (int i = 0; i < 200 && !reaped; i++) {
		reaped = waitpid(child, &status, WNOHANG);
		if (!reaped)
			usleep(10000);
	}
	if (!reaped) {
		ADD_FAILURE() << "the task runs on";
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	EXPECT_EQ(gpu.count(Op::resume), 3) << "RESUME is tried three times";
	EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int>());
}

TEST(ResumeGpuProcess, ATransientFailureIsTriedAgain)
{
	FakeGpu gpu(Topology {});
	gpu.fail(Op::resume, -EIO);
	EXPECT_EQ(resume_gpu_process(getpid(), gpu), 0);
	EXPECT_EQ(gpu.count(Op::resume), 2);
}

TEST(ResumeGpuProcess, ATaskWithoutKfdStateIsNotTheGpuPlugins)
{
	FakeGpu gpu(Topology {});
	gpu.fail(Op::resume, -ESRCH);
	EXPECT_EQ(resume_gpu_process(1, gpu), -ENOTSUP);
	FakeGpu no_kfd(Topology {});
	no_kfd.fail(Op::open_kfd, -ENOENT);
	EXPECT_EQ(resume_gpu_process(1, no_kfd), -ENOTSUP);
	EXPECT_EQ(no_kfd.count(Op::resume), 0);
}

// A task that shared the first VRAM BO with another task whose image restores it: the image says
// it takes the buffer, and its driver state gives the BO's id and GPUs.
class TakerRestoreTest : public RestoreSessionTest {
protected:
	static constexpr uint32_t kTakenId = 3;

	TakerRestoreTest() : guard(images.fd())
	{
		options.overlap_copy = false; // the copy stays in the task, where these tests look at it
		CriuKfdPtr msg = read_criu_kfd(ImageDir::files(images.fd()), kFileId);
		msg->bo_entries[0]->has_shared = true;
		msg->bo_entries[0]->shared = static_cast<uint32_t>(ShareRole::taker);
		msg->bo_entries[0]->handle = 1;
		// 6.1's layout: process and device records, then 80 bytes per BO (16 GPUs)
		for (const Node *g : topology.gpus())
			gpus.push_back(g->gpu_id);
		priv.assign(8 + 8 * msg->num_of_gpus + 80 * msg->n_bo_entries + 16, 0);
		priv[0] = 1; // version
		uint8_t *rec = priv.data() + 8 + 8 * msg->num_of_gpus;
		for (size_t b = 0; b < msg->n_bo_entries; b++, rec += 80) {
			const uint32_t id = b == 0 ? kTakenId : static_cast<uint32_t>(b + 10);
			std::memcpy(rec + 8, &id, 4);
			std::memcpy(rec + 12, &msg->bo_entries[b]->gpu_id, 4);
		}
		std::memcpy(priv.data() + 8 + 8 * msg->num_of_gpus + 12 + 4, &gpus.back(), 4); // BO 0: both GPUs
		const ProtobufCBinaryData own = msg->priv_data; // protobuf-c frees what it unpacked
		msg->priv_data.data = priv.data();
		msg->priv_data.len = priv.size();
		write_criu_kfd(ImageDir::files(images.fd()), kFileId, *msg);
		msg->priv_data = own;
		// the taker's pages have no place for the buffer it takes: the first GPU's hold one BO
		const uint64_t bo = msg->bo_entries[1]->size;
		ImageWriter pages(ImageDir::files(images.fd()), pages_image_name(kFileId, gpus.front()), bo);
		pages.write(std::vector<uint8_t>(bo, 0xa5));
		pages.finish();
		// made by hand, the images no longer fit the dump's sums: they go, as images of a
		// plugin without checksums
		std::filesystem::remove(images.path() / sums_image_name(kFileId));
	}

	RestoreGuard guard;
	std::vector<uint8_t> priv;
	std::vector<uint32_t> gpus;
};

TEST_F(TakerRestoreTest, PutsTheOfferedBufferInPlaceOfKfdsCopyUnderTheSameIdAndGpus)
{
	const int offered = eventfd(0, EFD_CLOEXEC); // the restorer's dma-buf
	guard.offer_buffer(images.fd(), 1, offered);
	close(offered);
	gpu.import_ids = { 0, 1, kTakenId }; // ids 0 and 1 are free below the BO's: filled, then let go
	{
		RestoreSession session(options, ImageDir::files(images.fd()), &guard, topology_dir, gpu, gpu);
		const auto result = restore(session);
		ASSERT_TRUE(std::holds_alternative<int>(result)) << std::get<Error>(result).what();
		close(std::get<int>(result));

		const uint32_t g = gpus.front();
		const uint64_t own = kfd::make_handle(g, kTakenId);
		std::vector<std::pair<Op, uint64_t>> calls;
		for (const auto &c : gpu.memory_calls)
			calls.emplace_back(c.op, c.handle);
		const std::vector<std::pair<Op, uint64_t>> expected {
			{ Op::unmap_memory, own },
			{ Op::free_memory, own },
			{ Op::import_dmabuf, kfd::make_handle(g, 0) },
			{ Op::import_dmabuf, kfd::make_handle(g, 1) },
			{ Op::import_dmabuf, own },
			{ Op::free_memory, kfd::make_handle(g, 0) },
			{ Op::free_memory, kfd::make_handle(g, 1) },
			{ Op::map_memory, own },
		};
		EXPECT_EQ(calls, expected);
		EXPECT_EQ(gpu.memory_calls.front().gpus, gpus) << "unmapped from other GPUs than it was mapped on";
		EXPECT_EQ(gpu.memory_calls.back().gpus, gpus) << "mapped on other GPUs than before";
		// its bytes are the restorer's to restore: no part of the first GPU's copy
		EXPECT_EQ(gpu.jobs.at(0).sizes.size(), 1u);

		// a CPU mapping of the taken buffer cannot be moved
		uint64_t offset = 0;
		int map_fd = -2;
		try {
			session.update_vma(GpuFileKind::kfd, kFirstBoAddr, kFirstBoAddr >> 12, &offset, &map_fd);
			ADD_FAILURE() << "the mapping of a taken buffer was moved";
		} catch (const Error &e) {
			EXPECT_NE(std::string(e.what()).find("maps shared buffer 1 into its memory"), std::string::npos)
				<< e.what();
		}
	}
	guard.release();
}

TEST_F(TakerRestoreTest, ABufferNobodyOffersFailsTheRestoreNamingItAndLeavesNothing)
{
	const int other = eventfd(0, EFD_CLOEXEC); // another buffer is offered, not this one
	guard.offer_buffer(images.fd(), 2, other);
	close(other);
	{
		RestoreSession session(options, ImageDir::files(images.fd()), &guard, topology_dir, gpu, gpu);
		session.take_timeout_ms = 200;
		const auto result = restore(session);
		ASSERT_TRUE(std::holds_alternative<Error>(result)) << "restored without the buffer it shares";
		const Error &e = std::get<Error>(result);
		EXPECT_EQ(e.err(), -ETIMEDOUT);
		EXPECT_NE(std::string(e.what()).find("shared buffer 1 did not come within 200 ms"), std::string::npos)
			<< e.what();
		EXPECT_EQ(gpu.count(Op::import_dmabuf), 0);
		EXPECT_EQ(gpu.still_open(Op::open_kfd), std::vector<int>()) << "the task's KFD state stays";
		EXPECT_EQ(gpu.still_open(Op::restore), std::vector<int>()) << "dma-buf fds stay open";
	}
	guard.release();
}

TEST_F(TakerRestoreTest, ADmabufFdTheTaskHeldComesBackAsTheRestoredBuffer)
{
	constexpr uint32_t kDmabufFileId = 77;
	write_dmabuf_image(ImageDir::files(images.fd()), kDmabufFileId, 5);
	{
		RestoreSession session(options, ImageDir::files(images.fd()), &guard, topology_dir, gpu, gpu);
		// not offered yet: criu 4.3 is asked to come back, older criu would wait
		bool retry = false;
		const int placeholder = session.restore_file(kDmabufFileId, &retry);
		EXPECT_TRUE(retry) << "a buffer not restored yet was not waited for";
		EXPECT_GE(placeholder, 0);

		const int offered = eventfd(0, EFD_CLOEXEC); // the restored buffer's dma-buf
		guard.offer_buffer(images.fd(), 5, offered);
		struct stat want;
		ASSERT_EQ(fstat(offered, &want), 0);
		close(offered);
		retry = false;
		const int fd = session.restore_file(kDmabufFileId, &retry);
		EXPECT_FALSE(retry);
		struct stat got;
		ASSERT_EQ(fstat(fd, &got), 0);
		EXPECT_EQ(got.st_ino, want.st_ino) << "the task got another file than the restored buffer's dma-buf";
		close(fd);
	}
	guard.release();
}

} // namespace
} // namespace amdgpu
