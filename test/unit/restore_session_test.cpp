// SPDX-License-Identifier: GPL-2.0-only
//
// The restore of one /dev/kfd file inside a task, walked on the host with a fake kernel and copy
// engine, from images a (fake) dump wrote: a restore that succeeds hands criu the new /dev/kfd fd
// and knows the mappings KFD moved; a restore that fails at any step gives criu the errno and a
// message naming the step, and leaves nothing of the process: no /dev/kfd or dma-buf fd, no
// mapping to move, and (once the session is gone) no fd of the plugin's.
#include "restore_session.hpp"

#include "dump_session.hpp"
#include "error.hpp"
#include "options.hpp"
#include "support/fake_gpu.hpp"
#include "support/temp_dir.hpp"
#include "topology_fixtures.hpp"

#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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
		dump.dump_render_node(kRenderFileId, topology.gpus().front()->props.drm_render_minor);
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

} // namespace
} // namespace amdgpu
