// SPDX-License-Identifier: GPL-2.0-only
//
// Writes the seed corpora of the harnesses (test/fuzz/corpus/<harness>/) with the plugin's own
// writers: `make fuzz-seeds`. The seeds are small and checked in; libFuzzer grows its own copy.
#include "images/image_checksums.hpp"
#include "images/image_store.hpp"
#include "images/metadata_images.hpp"
#include "render/render_image.hpp"
#include "topology/topology.hpp"
#include "topology/topology_image.hpp"
#include "support/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace amdgpu;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = "test/unit/fixtures/topology";

void save(const fs::path &file, const std::string &bytes)
{
	fs::create_directories(file.parent_path());
	std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

std::string read(const fs::path &file)
{
	std::ifstream in(file, std::ios::binary);
	return { std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>() };
}

// An image written by the plugin's writer into a scratch directory, as bytes.
template <typename Write> std::string image_bytes(const std::string &name, Write &&write)
{
	char tmpl[] = "/tmp/amdgpu-seeds-XXXXXX";
	if (!mkdtemp(tmpl))
		throw std::runtime_error("mkdtemp");
	const unique_fd dir(open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	write(ImageDir::files(dir.get()));
	const std::string bytes = read(fs::path(tmpl) / name);
	fs::remove_all(tmpl);
	return bytes;
}

// The kfd image a process using every GPU of `topology` would have: two BOs per GPU (VRAM and a
// doorbell) and private data with one record per GPU.
std::string kfd_image(const Topology &topology)
{
	const DeviceEntries entries(topology);
	std::vector<KfdBoEntry> bos;
	uint64_t va = 0x7f0000000000;
	for (const Node *gpu : topology.gpus()) {
		for (uint32_t flags : { 0x80000001u, 0x80000008u }) {
			KfdBoEntry e = KFD_BO_ENTRY__INIT;
			e.has_addr = e.has_size = e.has_offset = e.has_alloc_flags = e.has_gpu_id = true;
			e.addr = va;
			e.size = flags == 0x80000001u ? 2 << 20 : 8192;
			e.offset = 0x100000000ull + (va & 0xffffffff);
			e.alloc_flags = flags;
			e.gpu_id = gpu->gpu_id;
			bos.push_back(e);
			va += 4 << 20;
		}
	}
	std::vector<KfdBoEntry *> bo_ptrs;
	for (KfdBoEntry &e : bos)
		bo_ptrs.push_back(&e);
	std::vector<uint8_t> priv = { 1, 0, 0, 0, 0, 0, 0, 0 };
	priv.resize(priv.size() + 8 * topology.gpus().size(), 0);

	CriuKfd msg = CRIU_KFD__INIT;
	entries.attach(msg);
	msg.has_pid = msg.has_num_of_bos = msg.has_num_of_objects = msg.has_priv_data = true;
	msg.pid = 4242;
	msg.num_of_bos = bo_ptrs.size();
	msg.n_bo_entries = bo_ptrs.size();
	msg.bo_entries = bo_ptrs.data();
	msg.priv_data.len = priv.size();
	msg.priv_data.data = priv.data();
	return image_bytes(kfd_image_name(1), [&](const ImageDir &dir) { write_criu_kfd(dir, 1, msg); });
}

std::string render_image(uint32_t gpu_id, uint32_t minor)
{
	CriuRenderNode msg = CRIU_RENDER_NODE__INIT;
	msg.has_gpu_id = msg.has_id = msg.has_drm_render_minor = msg.has_num_of_bos = true;
	msg.gpu_id = gpu_id;
	msg.id = 1;
	msg.drm_render_minor = minor;
	return image_bytes(render_image_name(1), [&](const ImageDir &dir) { write_criu_render_node(dir, 1, msg); });
}

// What render_workload's file becomes: five objects around a gap, one of them mapped twice, a
// context at fence 41 of its SDMA ring, the GPU and its CPU.
std::string render_image_with_objects(const Topology &topology)
{
	std::vector<GemObjectState> objects(3);
	objects[0].object = { 1, 0, 4 << 20, 4, 8, 1 };
	objects[0].mappings = { { 0x100000000, 4 << 20, 0, 6 } };
	objects[1].object = { 2, 0, 2 << 20, 2, 0, 16 };
	objects[1].mappings = { { 0x100400000, 1 << 20, 0, 6 }, { 0x800000000000, 1 << 20, 1 << 20, 14 } };
	objects[2].object = { 4, 0, 1 << 16, 4, 0, 1 };
	objects[2].kfd = KfdBufferRef { 1, 0x7f0000000000 };
	const std::vector<ContextState> contexts = { { 1, { { 2, 0, 41 } } }, { 3, {} } };
	const Node *gpu = topology.gpus().front();
	const std::map<uint32_t, uint32_t> ids = { { gpu->gpu_id, gpu->gpu_id } };
	const DeviceEntries devices(topology, &ids);
	const std::vector<uint8_t> payload = pack_render_image({ .id = 1,
								 .gpu_id = gpu->gpu_id,
								 .minor = gpu->props.drm_render_minor,
								 .pid = 1,
								 .devices = &devices,
								 .objects = objects,
								 .contexts = contexts });
	return image_bytes(render_image_name(1),
			   [&](const ImageDir &dir) { write_image(dir, render_image_name(1), payload); });
}

// Sums of a process on two GPUs: one with a 3 MiB BO, one without BOs; `incremental`: the BO's
// middle block is left to an earlier checkpoint.
std::string sums_image(bool incremental)
{
	ImageSums sums;
	sums.kfd = digest_of(std::vector<uint8_t>(16, 0));
	std::vector<uint8_t> data(kSumBlock, 0x5a);
	PagesSums &gpu = sums.pages.emplace_back();
	gpu.gpu_id = 0x4f1e;
	gpu.bo_sizes = { 3 * kSumBlock };
	gpu.blocks = { { true, {} }, { false, digest_of(data) }, { true, {} } };
	if (incremental)
		gpu.in_chain = { false, true, false };
	gpu.stored_size = gpu.stored_bytes();
	sums.pages.push_back({ 0x7e2a, 0, {}, {}, {} });
	return image_bytes(sums_image_name(1), [&](const ImageDir &dir) { write_image_sums(dir, 1, sums); });
}

// The files of a sysfs tree, in the order fuzz_sysfs_topology replaces them, NUL-separated.
std::string sysfs_tree(const fs::path &base)
{
	std::vector<fs::path> files;
	for (const auto &e : fs::recursive_directory_iterator(base))
		if (e.is_regular_file())
			files.push_back(fs::relative(e.path(), base));
	std::sort(files.begin(), files.end());
	std::string out;
	for (size_t i = 0; i < files.size(); i++)
		out += (i ? std::string(1, '\0') : std::string()) + read(base / files[i]);
	return out;
}

std::string nul_joined(std::initializer_list<std::string> pieces)
{
	std::string out;
	bool first = true;
	for (const std::string &p : pieces) {
		if (!first)
			out += '\0';
		out += p;
		first = false;
	}
	return out;
}

} // namespace

int main(int argc, char **argv)
{
	const fs::path out = argc > 1 ? argv[1] : "test/fuzz/corpus";
	for (const char *name : { "mi210-2gpu-pcie", "mi100-1gpu", "mi210-2gpu-cgroup-hidden", "mi250x-4card" })
		save(out / "kfd_image" / name, kfd_image(parse_topology(kFixtures / name)));
	save(out / "render_image" / "renderD128", render_image(0x4f1e, 128));
	save(out / "render_image" / "renderD128-objects",
	     render_image_with_objects(parse_topology(kFixtures / "mi210-2gpu-pcie")));
	save(out / "sums_image" / "two-gpus", sums_image(false));
	save(out / "sums_image" / "incremental", sums_image(true));
	const std::string two_gpus("\x01\0\0\0\0\0\0\0\xd1\0\0\0\0\0\0\0\xd2\0\0\0\0\0\0\0\xb0", 25);
	save(out / "priv_data" / "two-gpus-onto-four", std::string("\x02\x04", 2) + two_gpus);
	save(out / "priv_data" / "two-gpus-onto-two", std::string("\x02\x02", 2) + two_gpus);
	save(out / "sysfs_topology" / "mi210-2gpu-pcie", sysfs_tree(kFixtures / "mi210-2gpu-pcie"));
	save(out / "options" / "all-set",
	     nul_joined({ "1", "no", "yes", "0", "YES", "1", "0", "64M", "--amdgpu.KFD_NUMA_CHECK=0", "--other.x" }));
	save(out / "options" / "plugin-options-only",
	     nul_joined({ "", "", "", "", "", "", "", "", "--amdgpu.KFD_MAX_BUFFER_SIZE=1G",
			  "--amdgpu.kfd_fw_ver_check" }));
	printf("seeds written under %s\n", out.c_str());
	return 0;
}
