// SPDX-License-Identifier: GPL-2.0-only
//
// Render-node files with GEM objects, dumped and restored on the host with the fake kernel and
// copy engine: a libdrm_amdgpu process's five buffers with a gap in their handles come back under
// the same handles and GPU addresses, on GPUs with other ids, their memory checked; whatever the
// dump cannot save refuses it by name and the task's queues run again; a damaged image or a file
// that holds a needed handle already refuses the restore.
#include "sessions/dump_session.hpp"
#include "sessions/restore_session.hpp"

#include "criu_host.hpp"
#include "images/image_checksums.hpp"
#include "images/image_store.hpp"
#include "images/metadata_images.hpp"
#include "render/render_image.hpp"
#include "support/error.hpp"
#include "support/fake_gpu.hpp"
#include "support/sleeping_child.hpp"
#include "support/temp_dir.hpp"
#include "topology_fixtures.hpp"

#include <gtest/gtest.h>

#include <amdgpu_drm.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace amdgpu {
namespace {

using test::FakeGpu;
using test::Op;

constexpr uint32_t kRenderId = 12;
constexpr uint64_t kMiB = 1 << 20;

// What render_workload makes: five buffers, handle 3 freed, the command buffer at 7 left out.
std::vector<gem::Object> workload_objects()
{
	return { { 1, 0, 4 * kMiB, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_VRAM_CLEARED, 1 },
		 { 2, 0, 2 * kMiB, AMDGPU_GEM_DOMAIN_GTT, 0, 1 },
		 { 4, 0, 3 * kMiB, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_VRAM_CLEARED, 16 },
		 { 5, 0, 1 * kMiB, AMDGPU_GEM_DOMAIN_GTT, AMDGPU_GEM_CREATE_CPU_GTT_USWC, 1 },
		 { 6, 0, 2 * kMiB, AMDGPU_GEM_DOMAIN_VRAM, 0, 1 } };
}

// Where they are mapped: the last one twice, and one in the upper half of the VM.
std::map<uint32_t, std::vector<gem::Mapping>> workload_mappings()
{
	const uint64_t rw = AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE;
	return { { 1, { { 0x100000000, 4 * kMiB, 0, rw } } },
		 { 2, { { 0x100400000, 2 * kMiB, 0, rw } } },
		 { 4, { { 0x800000000000, 3 * kMiB, 0, rw | AMDGPU_VM_PAGE_EXECUTABLE } } },
		 { 5, { { 0x100700000, 1 * kMiB, 0, rw | AMDGPU_VM_MTYPE_UC } } },
		 { 6, { { 0x100800000, 1 * kMiB, 0, rw }, { 0x100a00000, 1 * kMiB, 1 * kMiB, rw } } } };
}

uint64_t dumped_offset(uint32_t handle)
{
	return (0x100000ull + handle) << 12; // FakeGpu's GEM_MMAP
}

class RenderNodeTest : public ::testing::Test {
protected:
	RenderNodeTest()
	    : topology_dir(test::topology_fixture("mi210-2gpu-pcie")), topology(parse_topology(topology_dir)),
	      minor(topology.gpus().front()->props.drm_render_minor), dumped(topology)
	{
		dumped.gem_objects = workload_objects();
		dumped.gem_mappings_of = workload_mappings();
		// context 1 made 40 submissions to SDMA ring 0; context 2 was freed; 3 made none
		dumped.contexts_held = { { 1, 41 }, { 3, 1 } };
	}

	// Dumps a render-node file that a traced child holds, as criu's dumping process sees one.
	std::optional<Error> dump()
	{
		const int render_fd = eventfd(0, EFD_CLOEXEC);
		const pid_t child = test::sleeping_child();
		const bool traced = ptrace(PTRACE_SEIZE, child, nullptr, nullptr) == 0;
		std::optional<Error> error;
		{
			DumpSession session(options, ImageDir::files(images.fd()), topology_dir, dumped, dumped);
			try {
				session.dump_render_node(render_fd, kRenderId, minor);
			} catch (const Error &e) {
				error = e;
			}
			if (traced)
				file_named = strprintf("pid %d fd %d", static_cast<int>(child), render_fd);
		}
		kill(child, SIGKILL);
		waitpid(child, nullptr, 0);
		close(render_fd);
		return error;
	}

	CriuRenderNodePtr image() const { return read_criu_render_node(ImageDir::files(images.fd()), kRenderId); }

	// The image as this test process's own, as a restore in the dumped task reads it.
	void make_image_ours()
	{
		const ImageDir dir = ImageDir::files(images.fd());
		CriuRenderNodePtr msg = image();
		msg->has_pid = true;
		msg->pid = static_cast<uint32_t>(getpid());
		const std::vector<uint8_t> payload = pack(*msg);
		write_image(dir, render_image_name(kRenderId), payload);
		std::optional<ImageSums> sums = read_image_sums(dir, kRenderId);
		ASSERT_TRUE(sums);
		sums->kfd = digest_of(payload);
		write_image_sums(dir, kRenderId, *sums);
	}

	std::variant<int, Error> restore(RestoreSession &session, uint32_t id = kRenderId)
	{
		try {
			return session.restore_file(id, nullptr);
		} catch (const Error &e) {
			return e;
		}
	}

	Options options;
	test::TempDir images;
	std::filesystem::path topology_dir;
	Topology topology;
	unsigned int minor;
	FakeGpu dumped;
	std::string file_named = "render-node file id 12";
};

TEST_F(RenderNodeTest, EveryContextIsSavedWithTheFenceOfEachRingItUsed)
{
	ASSERT_FALSE(dump());
	const std::vector<ContextState> contexts = contexts_of(*image(), "image");
	ASSERT_EQ(contexts.size(), 2u);
	EXPECT_EQ(contexts[0].id, 1u);
	ASSERT_EQ(contexts[0].rings.size(), 1u);
	EXPECT_EQ(contexts[0].rings[0].ip_type, static_cast<uint32_t>(AMDGPU_HW_IP_DMA));
	EXPECT_EQ(contexts[0].rings[0].ring, 0u);
	EXPECT_EQ(contexts[0].rings[0].sequence, 41u);
	EXPECT_EQ(contexts[1].id, 3u);
	EXPECT_TRUE(contexts[1].rings.empty());
}

TEST_F(RenderNodeTest, EveryObjectIsSavedWithItsHandleMappingsAndMemory)
{
	ASSERT_FALSE(dump());
	const CriuRenderNodePtr msg = image();
	const std::vector<GemEntry> entries = gem_entries(*msg, "image");
	ASSERT_EQ(entries.size(), 5u);
	const auto mappings = workload_mappings();
	const std::vector<gem::Object> objects = workload_objects();
	uint64_t bytes = 0;
	for (size_t i = 0; i < entries.size(); i++) {
		const gem::Object &want = objects[i];
		EXPECT_EQ(entries[i].object.handle, want.handle);
		EXPECT_EQ(entries[i].object.size, want.size);
		EXPECT_EQ(entries[i].object.preferred_domains, want.preferred_domains);
		EXPECT_EQ(entries[i].object.alloc_flags, want.alloc_flags);
		EXPECT_EQ(entries[i].object.alignment_pages, want.alignment_pages);
		EXPECT_EQ(entries[i].mmap_offset, dumped_offset(want.handle));
		EXPECT_FALSE(entries[i].kfd_addr);
		ASSERT_EQ(entries[i].mappings.size(), mappings.at(want.handle).size());
		for (size_t j = 0; j < entries[i].mappings.size(); j++) {
			EXPECT_EQ(entries[i].mappings[j].addr, mappings.at(want.handle)[j].addr);
			EXPECT_EQ(entries[i].mappings[j].offset, mappings.at(want.handle)[j].offset);
			EXPECT_EQ(entries[i].mappings[j].flags, mappings.at(want.handle)[j].flags);
		}
		bytes += want.size;
	}
	EXPECT_EQ(msg->gpu_id, topology.gpus().front()->gpu_id);
	size_t gpus = 0;
	for (size_t i = 0; i < msg->n_device_entries; i++)
		gpus += msg->device_entries[i]->gpu_id != 0;
	EXPECT_EQ(gpus, 1u) << "the file's GPU, beside the CPU nodes";
	EXPECT_GT(msg->n_device_entries, 1u);
	EXPECT_EQ(dumped.count(Op::gem_wait_idle), 5) << "every object waited for before it is read";
	ASSERT_EQ(dumped.jobs.size(), 1u);
	EXPECT_EQ(dumped.jobs[0].sizes.size(), 5u);
	const auto pages = images.path() / pages_image_name(kRenderId, msg->gpu_id);
	ASSERT_TRUE(std::filesystem::exists(pages));
	EXPECT_TRUE(std::filesystem::exists(images.path() / sums_image_name(kRenderId)));
	const std::optional<ImageSums> sums = read_image_sums(ImageDir::files(images.fd()), kRenderId);
	ASSERT_TRUE(sums);
	ASSERT_EQ(sums->pages.size(), 1u);
	EXPECT_EQ(sums->pages[0].stored_size, bytes);
}

struct Unsaveable {
	const char *what;
	std::function<void(FakeGpu &)> make;
	int err;
	const char *says;
};

void PrintTo(const Unsaveable &u, std::ostream *os)
{
	*os << u.what;
}

class RenderNodeDumpRefuses : public RenderNodeTest, public ::testing::WithParamInterface<Unsaveable> {};

TEST_P(RenderNodeDumpRefuses, NamingTheObjectAndLeavingNoImage)
{
	GetParam().make(dumped);
	const std::optional<Error> error = dump();
	ASSERT_TRUE(error);
	EXPECT_EQ(error->err(), GetParam().err);
	const std::string msg = error->what();
	EXPECT_NE(msg.find(file_named), std::string::npos) << msg;
	EXPECT_NE(msg.find(GetParam().says), std::string::npos) << msg;
	EXPECT_NE(msg.find("the task runs on"), std::string::npos) << msg;
	for (const auto &entry : std::filesystem::directory_iterator(images.path()))
		ADD_FAILURE() << "left behind: " << entry.path();
}

INSTANTIATE_TEST_SUITE_P(
	Unsaveable, RenderNodeDumpRefuses,
	::testing::Values(
		Unsaveable { "busy", [](FakeGpu &g) { g.gem_busy = { 4 }; }, -EBUSY,
			     "GEM handle 4 (3145728 bytes) is still in use by the GPU 10000 ms after the task was "
			     "frozen" },
		Unsaveable { "userptr", [](FakeGpu &g) { g.gem_unexportable = { 5 }; }, -EPERM,
			     "GEM handle 5 (1048576 bytes, creation flags 0x4) cannot be exported as a dma-buf "
			     "(Operation not permitted)" },
		Unsaveable { "gds",
			     [](FakeGpu &g) {
				     g.gem_objects.push_back({ 8, 0, 4096, AMDGPU_GEM_DOMAIN_GDS, 0, 1 });
			     },
			     -EOPNOTSUPP, "GEM handle 8 is an object of GDS, GWS, OA or doorbell space (domains 0x8)" },
		Unsaveable { "foreign", [](FakeGpu &g) { g.gem_objects[1].flags = gem::kListImported; }, -EOPNOTSUPP,
			     "GEM handle 2 (2097152 bytes) is another device's memory" },
		Unsaveable { "guilty", [](FakeGpu &g) { g.guilty_contexts = { 3 }; }, -EOPNOTSUPP,
			     "context 3 caused a GPU hang" },
		Unsaveable { "linux-6.1", [](FakeGpu &g) { g.gem_listing = false; }, -EOPNOTSUPP,
			     "holds 5 GEM buffer object(s) of 12582912 bytes (handles 1, 2, 4, 5, 6; found by their "
			     "handles, as this kernel cannot list them): a kernel before Linux 6.18 cannot tell "
			     "where they are mapped" }));

TEST_F(RenderNodeTest, AnObjectTwoFilesHoldIsRefusedRatherThanSplit)
{
	dumped.gem_shared = { 4 };
	DumpSession session(options, ImageDir::files(images.fd()), topology_dir, dumped, dumped);
	const int a = eventfd(0, EFD_CLOEXEC), b = eventfd(0, EFD_CLOEXEC);
	session.dump_render_node(a, kRenderId, minor);
	try {
		session.dump_render_node(b, kRenderId + 1, minor);
		ADD_FAILURE() << "the second file was saved: the buffer would come back twice";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EBUSY);
		EXPECT_NE(std::string(e.what()).find(
				  "GEM handle 4 of render-node file id 13 (renderD128) (3145728 bytes) "
				  "is the same buffer as GEM handle 4 of render-node file id 12"),
			  std::string::npos)
			<< e.what();
	}
	EXPECT_FALSE(std::filesystem::exists(images.path() / render_image_name(kRenderId + 1)));
	close(a);
	close(b);
}

TEST_F(RenderNodeTest, BesideCriuTheMemoryIsCopiedAfterTheHookAndAFailedCopyLeavesNoImage)
{
	const int fd = eventfd(0, EFD_CLOEXEC);
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, dumped, dumped);
		session.plan_copies(true, "4.3");
		std::promise<void> go;
		std::shared_future<void> gate = go.get_future().share();
		dumped.while_copying = [gate] { gate.wait(); };
		session.dump_render_node(fd, kRenderId, minor); // returns while the copy waits at the gate
		EXPECT_FALSE(std::filesystem::exists(images.path() / sums_image_name(kRenderId)))
			<< "the memory was copied before criu went on";
		go.set_value();
		session.join_copies();
		EXPECT_TRUE(std::filesystem::exists(images.path() / sums_image_name(kRenderId)));
		session.finish();
	}
	for (const auto &entry : std::filesystem::directory_iterator(images.path()))
		std::filesystem::remove(entry.path());
	dumped.while_copying = nullptr;
	dumped.fail(Op::copy, -EIO, FakeGpu::kEveryCall);
	{
		DumpSession session(options, ImageDir::files(images.fd()), topology_dir, dumped, dumped);
		session.plan_copies(true, "4.3");
		session.dump_render_node(fd, kRenderId, minor);
		EXPECT_THROW(session.join_copies(), Error);
		session.finish();
	}
	for (const auto &entry : std::filesystem::directory_iterator(images.path()))
		ADD_FAILURE() << "a failed copy left " << entry.path();
	close(fd);
}

class RenderNodeRestoreTest : public RenderNodeTest {
protected:
	RenderNodeRestoreTest() { EXPECT_FALSE(dump()); }
};

TEST_F(RenderNodeRestoreTest, ObjectsComeBackUnderTheirHandlesAndAddresses)
{
	FakeGpu gpu(topology);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<int>(result)) << std::get<Error>(result).what();
	const int fd = std::get<int>(result);
	ASSERT_EQ(gpu.gem_files.size(), 1u);
	const FakeGpu::GemFile &file = gpu.gem_files.begin()->second;
	std::vector<uint32_t> handles;
	for (const auto &[h, o] : file.objects)
		handles.push_back(h);
	EXPECT_EQ(handles, (std::vector<uint32_t> { 1, 2, 4, 5, 6 })) << "the filler of handle 3 stays";
	EXPECT_EQ(file.created, 7u) << "five objects, a filler and a command buffer";
	const auto mappings = workload_mappings();
	for (const gem::Object &o : workload_objects()) {
		EXPECT_EQ(file.objects.at(o.handle).size, o.size);
		EXPECT_EQ(file.objects.at(o.handle).alloc_flags, o.alloc_flags);
		EXPECT_EQ(file.objects.at(o.handle).alignment_pages, o.alignment_pages);
		ASSERT_EQ(file.mappings.at(o.handle).size(), mappings.at(o.handle).size());
		for (size_t j = 0; j < mappings.at(o.handle).size(); j++)
			EXPECT_EQ(file.mappings.at(o.handle)[j].addr, mappings.at(o.handle)[j].addr);
	}
	EXPECT_EQ(gpu.count(Op::copy), 1);
	ASSERT_EQ(gpu.jobs.size(), 1u);
	EXPECT_EQ(gpu.jobs[0].sizes.size(), 5u);

	// the contexts under their ids, the first one's SDMA ring brought to its fence
	ASSERT_EQ(gpu.contexts_made.size(), 1u);
	const std::map<uint32_t, uint64_t> contexts = { { 1, 41 }, { 3, 1 } };
	EXPECT_EQ(gpu.contexts_made.begin()->second, contexts) << "the filler of context 2 stays";
	EXPECT_EQ(gpu.empty_submissions, 40u);
	ASSERT_EQ(gpu.gem_writes.size(), 1u);
	EXPECT_EQ(gpu.gem_writes[0], std::vector<uint8_t>(32, 0)) << "SDMA NOPs";
	EXPECT_EQ(file.closed, 2u) << "the filler of handle 3 and the command buffer of the empty submissions";

	// criu maps the objects into the task at their new offsets, through the task's file
	uint64_t offset = 0;
	int map_fd = -2;
	EXPECT_EQ(session.update_vma(GpuFileKind::render_node, 0x7f1234560000, dumped_offset(4), &offset, &map_fd), 1);
	EXPECT_EQ(offset, dumped_offset(4)) << "the fake's offsets depend on the handle alone";
	EXPECT_GE(map_fd, 0);
	EXPECT_EQ(session.update_vma(GpuFileKind::kfd, 0x7f1234560000, dumped_offset(4), &offset, &map_fd), 0)
		<< "a /dev/kfd mapping at that offset is another buffer";
	close(fd);
}

TEST_F(RenderNodeRestoreTest, AProcessWithoutKfdStateGoesToGpusWithOtherIds)
{
	make_image_ours();
	test::SysfsTree tree = test::mi210_2gpu_pcie();
	for (test::SysfsNode &n : tree.nodes)
		if (n.gpu_id)
			n.gpu_id ^= 0x5a5a;
	test::TempDir other;
	test::write_tree(tree, other.path());
	const Topology other_topology = parse_topology(other.path());
	FakeGpu gpu(other_topology);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, other.path(), gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<int>(result)) << std::get<Error>(result).what();
	ASSERT_EQ(gpu.jobs.size(), 1u);
	EXPECT_EQ(gpu.jobs[0].gpu_id, topology.gpus().front()->gpu_id ^ 0x5a5a);
	EXPECT_EQ(gpu.jobs[0].image_gpu_id, topology.gpus().front()->gpu_id);
	close(std::get<int>(result));
}

TEST_F(RenderNodeRestoreTest, AFileHoldingANeededHandleRefusesTheRestore)
{
	FakeGpu gpu(topology);
	gpu.gem_taken = { 4 };
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result));
	EXPECT_NE(std::string(std::get<Error>(result).what())
			  .find("amdgpu-renderD-12.img: the file already holds GEM handle 4, which the restored object "
				"needs"),
		  std::string::npos)
		<< std::get<Error>(result).what();
	EXPECT_EQ(gpu.count(Op::copy), 0);
}

TEST_F(RenderNodeRestoreTest, DamagedMemoryIsRefusedNamingTheBlock)
{
	const auto pages = images.path() / pages_image_name(kRenderId, topology.gpus().front()->gpu_id);
	{
		std::fstream f(pages, std::ios::in | std::ios::out | std::ios::binary);
		f.seekp(5 * kMiB + 17);
		f.put('\x5a');
	}
	FakeGpu gpu(topology);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result));
	EXPECT_EQ(std::get<Error>(result).err(), -EBADMSG);
	EXPECT_NE(std::string(std::get<Error>(result).what()).find("amdgpu-pages-12-"), std::string::npos)
		<< std::get<Error>(result).what();
}

TEST_F(RenderNodeRestoreTest, ADamagedImageIsRefusedBeforeAnyObjectIsMade)
{
	const auto path = images.path() / render_image_name(kRenderId);
	{
		std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
		f.seekp(-3, std::ios::end);
		const char c = static_cast<char>(f.peek());
		f.put(static_cast<char>(c ^ 0x01));
	}
	FakeGpu gpu(topology);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto result = restore(session);
	ASSERT_TRUE(std::holds_alternative<Error>(result));
	EXPECT_EQ(gpu.count(Op::gem_create), 0);
}

TEST_F(RenderNodeRestoreTest, ASecondFileOfTheSameGpuGetsATableOfItsOwn)
{
	std::filesystem::copy_file(images.path() / render_image_name(kRenderId), images.path() / render_image_name(13));
	std::filesystem::copy_file(images.path() / sums_image_name(kRenderId), images.path() / sums_image_name(13));
	const uint32_t gpu_id = topology.gpus().front()->gpu_id;
	std::filesystem::copy_file(images.path() / pages_image_name(kRenderId, gpu_id),
				   images.path() / pages_image_name(13, gpu_id));
	FakeGpu gpu(topology);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const auto first = restore(session);
	const auto second = restore(session, 13);
	ASSERT_TRUE(std::holds_alternative<int>(first)) << std::get<Error>(first).what();
	ASSERT_TRUE(std::holds_alternative<int>(second)) << std::get<Error>(second).what();
	EXPECT_EQ(gpu.gem_files.size(), 2u);
	for (const auto &[fd, file] : gpu.gem_files)
		EXPECT_EQ(file.objects.size(), 5u) << "fd " << fd;
	close(std::get<int>(first));
	close(std::get<int>(second));
}

// A ROCm process whose render node holds a GEM handle of one of its KFD buffers beside an object
// of its own: the handle comes back as an import of the restored buffer, after it.
class RenderNodeOfAKfdProcessTest : public ::testing::Test {
protected:
	RenderNodeOfAKfdProcessTest()
	    : topology_dir(test::topology_fixture("mi210-2gpu-pcie")), topology(parse_topology(topology_dir))
	{
		FakeGpu dumped(topology);
		dumped.pid = static_cast<uint32_t>(getpid());
		dumped.shared_bos = { 0 };
		dumped.gem_objects = { { 2, 0, 1 << 20, AMDGPU_GEM_DOMAIN_GTT, 0, 1 },
				       { 5, 0, 1 << 16, AMDGPU_GEM_DOMAIN_VRAM, 0, 1 } };
		dumped.gem_kfd_bos = { { 5, 0 } };
		DumpSession dump(options, ImageDir::files(images.fd()), topology_dir, dumped, dumped);
		const int kfd_fd = eventfd(0, EFD_CLOEXEC);
		const int render_fd = eventfd(0, EFD_CLOEXEC);
		dump.dump_kfd(kfd_fd, kKfdId);
		dump.dump_render_node(render_fd, kRenderId, topology.gpus().front()->props.drm_render_minor);
		close(render_fd);
		close(kfd_fd);
		// the image of this test process, as the restored task reads it
		const ImageDir dir = ImageDir::files(images.fd());
		CriuRenderNodePtr msg = read_criu_render_node(dir, kRenderId);
		msg->has_pid = true;
		msg->pid = static_cast<uint32_t>(getpid());
		const std::vector<uint8_t> payload = pack(*msg);
		write_image(dir, render_image_name(kRenderId), payload);
		std::optional<ImageSums> sums = read_image_sums(dir, kRenderId);
		sums->kfd = digest_of(payload);
		write_image_sums(dir, kRenderId, *sums);
	}

	static const FakeGpu::GemFile *render_file(const FakeGpu &gpu)
	{
		return gpu.gem_files.size() == 1 ? &gpu.gem_files.begin()->second : nullptr;
	}

	static constexpr uint32_t kKfdId = 11;
	Options options;
	test::TempDir images;
	std::filesystem::path topology_dir;
	Topology topology;
};

TEST_F(RenderNodeOfAKfdProcessTest, TheHandleComesBackAsTheRestoredBuffer)
{
	FakeGpu gpu(topology);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const int kfd = session.restore_file(kKfdId, nullptr);
	const int render = session.restore_file(kRenderId, nullptr);
	const FakeGpu::GemFile *file = render_file(gpu);
	ASSERT_TRUE(file);
	EXPECT_EQ(file->imported, std::set<uint32_t> { 5 });
	EXPECT_TRUE(file->objects.count(2));
	EXPECT_EQ(file->objects.size(), 2u) << "the fillers of 1, 3 and 4 are gone";
	EXPECT_EQ(gpu.count(Op::copy), 3) << "two GPUs of the kfd image, one of the render node";
	ASSERT_EQ(gpu.jobs.size(), 1u) << "the render node's copy, the last";
	EXPECT_EQ(gpu.jobs.back().sizes, std::vector<uint64_t> { 1 << 20 }) << "the KFD buffer is not filled twice";
	close(render);
	close(kfd);
}

TEST_F(RenderNodeOfAKfdProcessTest, ComingFirstItWaitsForTheKfdFileWhereCriuCanComeBack)
{
	FakeGpu gpu(topology);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	bool retry = false;
	(void)session.restore_file(kRenderId, &retry);
	EXPECT_TRUE(retry);
	EXPECT_EQ(gpu.count(Op::gem_create), 0);
	const int kfd = session.restore_file(kKfdId, nullptr);
	const int render = session.restore_file(kRenderId, nullptr);
	const FakeGpu::GemFile *file = render_file(gpu);
	ASSERT_TRUE(file);
	EXPECT_EQ(file->imported, std::set<uint32_t> { 5 });
	close(render);
	close(kfd);
}

TEST_F(RenderNodeOfAKfdProcessTest, WithoutCriusRetryTheHandleStaysFree)
{
	FakeGpu gpu(topology);
	RestoreSession session(options, ImageDir::files(images.fd()), nullptr, topology_dir, gpu, gpu);
	const int render = session.restore_file(kRenderId, nullptr);
	const FakeGpu::GemFile *file = render_file(gpu);
	ASSERT_TRUE(file);
	EXPECT_TRUE(file->imported.empty());
	EXPECT_EQ(file->objects.size(), 1u);
	close(render);
}

} // namespace
} // namespace amdgpu
