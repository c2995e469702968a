// SPDX-License-Identifier: GPL-2.0-only
#include "images/metadata_images.hpp"

#include "support/error.hpp"
#include "images/image_store.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace amdgpu {
namespace {

using test::TempDir;

// A small, fully specified criu_kfd: one CPU node, one GPU node, two BOs.
struct SampleKfd {
	DevIolink cpu_link = DEV_IOLINK__INIT;
	DevIolink gpu_link = DEV_IOLINK__INIT;
	DevIolink *cpu_links[1] = { &cpu_link };
	DevIolink *gpu_links[1] = { &gpu_link };
	KfdDeviceEntry cpu = KFD_DEVICE_ENTRY__INIT;
	KfdDeviceEntry gpu = KFD_DEVICE_ENTRY__INIT;
	KfdDeviceEntry *devices[2] = { &cpu, &gpu };
	KfdBoEntry vram = KFD_BO_ENTRY__INIT;
	KfdBoEntry doorbell = KFD_BO_ENTRY__INIT;
	KfdBoEntry *bos[2] = { &vram, &doorbell };
	uint8_t priv[8] = { 1, 0, 0, 0, 0, 0, 0, 0 };
	CriuKfd msg = CRIU_KFD__INIT;

	SampleKfd()
	{
		cpu_link.has_type = gpu_link.has_type = true;
		cpu_link.type = gpu_link.type = 2;
		cpu_link.has_node_to_id = gpu_link.has_node_to_id = true;
		cpu_link.node_to_id = 1;
		gpu_link.node_to_id = 0;

		cpu.has_node_id = cpu.has_gpu_id = cpu.has_cpu_cores_count = true;
		cpu.node_id = 0;
		cpu.gpu_id = 0;
		cpu.cpu_cores_count = 16;
		cpu.n_iolinks = 1;
		cpu.iolinks = cpu_links;

		gpu.has_node_id = gpu.has_gpu_id = gpu.has_device_id = gpu.has_simd_count = true;
		gpu.node_id = 1;
		gpu.gpu_id = 0x4f1e;
		gpu.device_id = 0x740f;
		gpu.simd_count = 416;
		gpu.has_vram_size = gpu.has_vram_public = gpu.has_hive_id = true;
		gpu.vram_size = 64ull << 30;
		gpu.vram_public = 1;
		gpu.hive_id = 0x1234567890abcdefull;
		gpu.n_iolinks = 1;
		gpu.iolinks = gpu_links;

		for (KfdBoEntry *bo : bos) {
			bo->has_addr = bo->has_size = bo->has_offset = bo->has_alloc_flags = bo->has_gpu_id = true;
			bo->gpu_id = 0x4f1e;
		}
		vram.addr = 0x7f0000000000;
		vram.size = 2 << 20;
		vram.offset = 0x100000000;
		vram.alloc_flags = 0x80000001;
		doorbell.addr = 0x7f0000200000;
		doorbell.size = 8192;
		doorbell.offset = 0xc000000000000000ull | (0x4f1eull << 46);
		doorbell.alloc_flags = 0x80000008;

		msg.has_pid = msg.has_num_of_gpus = msg.has_num_of_cpus = msg.has_num_of_bos = true;
		msg.pid = 4242;
		msg.num_of_gpus = 1;
		msg.num_of_cpus = 1;
		msg.n_device_entries = 2;
		msg.device_entries = devices;
		msg.num_of_bos = 2;
		msg.n_bo_entries = 2;
		msg.bo_entries = bos;
		msg.has_num_of_objects = true;
		msg.num_of_objects = 3;
		msg.has_shared_mem_size = msg.has_shared_mem_magic = true;
		msg.shared_mem_size = 4096;
		msg.shared_mem_magic = 0xa5a5a5a5;
		msg.has_priv_data = true;
		msg.priv_data.len = sizeof(priv);
		msg.priv_data.data = priv;
	}
};

std::string hex(const std::vector<uint8_t> &bytes)
{
	static const char digits[] = "0123456789abcdef";
	std::string out;
	for (uint8_t b : bytes) {
		out += digits[b >> 4];
		out += digits[b & 15];
	}
	return out;
}

TEST(MetadataImages, CriuKfdRoundTripsThroughTheImageDirectory)
{
	TempDir dir;
	SampleKfd sample;
	write_criu_kfd(ImageDir::files(dir.fd()), 5, sample.msg);
	const CriuKfdPtr back = read_criu_kfd(ImageDir::files(dir.fd()), 5);
	EXPECT_EQ(back->pid, 4242u);
	ASSERT_EQ(back->n_device_entries, 2u);
	EXPECT_EQ(back->device_entries[1]->gpu_id, 0x4f1eu);
	EXPECT_EQ(back->device_entries[1]->hive_id, 0x1234567890abcdefull);
	EXPECT_EQ(back->device_entries[1]->vram_size, 64ull << 30);
	ASSERT_EQ(back->device_entries[0]->n_iolinks, 1u);
	EXPECT_EQ(back->device_entries[0]->iolinks[0]->node_to_id, 1u);
	ASSERT_EQ(back->n_bo_entries, 2u);
	EXPECT_EQ(back->bo_entries[1]->offset, sample.doorbell.offset);
	EXPECT_EQ(back->shared_mem_magic, 0xa5a5a5a5u);
	EXPECT_EQ(std::string(reinterpret_cast<char *>(back->priv_data.data), back->priv_data.len),
		  std::string(reinterpret_cast<char *>(sample.priv), sizeof(sample.priv)));
}

// The exact bytes upstream's schema produces for SampleKfd. If this changes, images written by
// this plugin no longer match upstream's field numbers or types: fix the schema, not the test.
TEST(MetadataImages, CriuKfdWireFormatIsFrozen)
{
	SampleKfd sample;
	// clang-format off
	EXPECT_EQ(hex(pack(sample.msg)),
		  // pid 4242, one GPU, one CPU
		  "089221" "1001" "1801"
		  // CPU node 0: 16 cores, PCIe link to node 1 (field 32)
		  "220d" "0800" "1000" "1810" "820204" "08021001"
		  // GPU node 1: gpu_id 0x4f1e, 416 SIMDs, device 0x740f, hive, public 64 GiB VRAM
		  "222b" "0801" "109e9e01" "20a003" "98018fe801" "b001ef9baf8589cf959a12" "f00101"
		  "f801808080808002" "820204" "08021000"
		  // two BOs: 2 MiB of VRAM, then the doorbell page
		  "2802"
		  "321d" "088080808080e01f" "1080808001" "188080808010" "208180808008" "289e9e01"
		  "3220" "088080808180e01f" "108040" "18808080808080e0e3d301" "208880808008" "289e9e01"
		  // 3 objects, hsakmt shared memory of 4 KiB with its magic, 8 bytes of private data
		  "3803" "408020" "48a5cb96ad0a" "52080100000000000000");
	// clang-format on
}

TEST(MetadataImages, GarbageIsNotACriuKfd)
{
	TempDir dir;
	const std::string garbage = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
	dir.write("amdgpu-kfd-1.img", std::string("\x0b\0\0\0\0\0\0\0", 8) + garbage);
	try {
		read_criu_kfd(ImageDir::files(dir.fd()), 1);
		FAIL() << "garbage accepted";
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EINVAL);
		EXPECT_NE(std::string(e.what()).find("amdgpu-kfd-1.img"), std::string::npos) << e.what();
	}
}

// Why unpacking `sample` as amdgpu-kfd-9.img fails; a test failure (naming `what`) if it does not.
std::string rejection(const SampleKfd &sample, const char *what)
{
	try {
		unpack_criu_kfd(pack(sample.msg), "amdgpu-kfd-9.img");
	} catch (const Error &e) {
		EXPECT_EQ(e.err(), -EINVAL) << e.what();
		return e.what();
	}
	ADD_FAILURE() << what << " accepted";
	return {};
}

TEST(MetadataImages, InconsistentCountsAreRejected)
{
	SampleKfd sample;
	sample.msg.num_of_bos = 5;
	const std::string error = rejection(sample, "num_of_bos mismatch");
	EXPECT_NE(error.find("num_of_bos is 5 but it holds 2"), std::string::npos) << error;
}

TEST(MetadataImages, MissingRequiredFieldIsNamed)
{
	SampleKfd sample;
	sample.msg.has_priv_data = false;
	const std::string error = rejection(sample, "image without priv_data");
	EXPECT_NE(error.find("priv_data missing"), std::string::npos) << error;
}

TEST(MetadataImages, OldRenderNodeImageWithOnlyGpuIdDecodes)
{
	// v3.17..v4.2 wrote criu_render_node{gpu_id} alone.
	const std::vector<uint8_t> v42 = { 0x08, 0x9e, 0x9e, 0x01 };
	const CriuRenderNodePtr node = unpack_criu_render_node(v42, "amdgpu-renderD-3.img");
	EXPECT_EQ(node->gpu_id, 0x4f1eu);
	EXPECT_FALSE(node->has_drm_render_minor);
}

} // namespace
} // namespace amdgpu
