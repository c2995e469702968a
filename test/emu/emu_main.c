// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: module parameters, GPU presets, init and exit.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mmu_notifier.h>
#include <linux/mm.h>
#include <linux/string.h>

#include "emu.h"

static char *preset = "2xmi210";
module_param(preset, charp, 0444);
MODULE_PARM_DESC(preset, "GPU set: mi100, mi210, 2xmi210, 4xmi210, mi250x, 2xmi300x, 8xmi300x, cpx8, cpx8-nps4 (default 2xmi210)");

static unsigned int vram_mb;
module_param(vram_mb, uint, 0444);
MODULE_PARM_DESC(vram_mb, "Advertised VRAM per GPU in MiB (default: the model's)");

static unsigned int gpu_ids[EMU_MAX_GPUS];
static int n_gpu_ids;
module_param_array(gpu_ids, uint, &n_gpu_ids, 0444);
MODULE_PARM_DESC(gpu_ids, "KFD gpu_id of each GPU in order (non-zero, < 0x10000)");

static int render_minor_base;
module_param(render_minor_base, int, 0444);
MODULE_PARM_DESC(render_minor_base, "Lowest render minor for the first GPU (128..191; 0: next free)");

static unsigned int fw_version;
module_param(fw_version, uint, 0444);
MODULE_PARM_DESC(fw_version, "MEC firmware version of every GPU (default 0: the model's)");

static unsigned int heartbeat_ms = 10;
module_param(heartbeat_ms, uint, 0444);
MODULE_PARM_DESC(heartbeat_ms, "Period of the queue heartbeat in ms (default 10)");

module_param_named(sdma_mbps, emu_sdma_mbps, uint, 0644);
MODULE_PARM_DESC(sdma_mbps, "SDMA bandwidth limit in MB/s per GPU (default 0: unlimited; writable)");

static char *fault;
module_param(fault, charp, 0444);
MODULE_PARM_DESC(fault, "Fault to arm at load: 'ioctl <nr> <nth> <errno>' or 'criu <op> <nth> <errno>'");

struct emu_device emu;

/*
 * CRAT cache flags as KFD reports them in "type": data 1, instruction 2,
 * CPU 4, SIMD/CU 8.  Per-CU L1, per-two-CU scalar and instruction caches, one
 * L2 per GPU (or partition), as the gfx9 cache tables describe them.
 */
static const struct emu_cache gfx9_caches[] = {
	{ .level = 1, .size_kb = 16, .line_size = 64, .type = 9, .cus_per_cache = 1 },
	{ .level = 1, .size_kb = 16, .line_size = 64, .type = 9, .cus_per_cache = 2 },
	{ .level = 1, .size_kb = 32, .line_size = 64, .type = 10, .cus_per_cache = 2 },
	{ .level = 2, .size_kb = 8192, .line_size = 128, .type = 9, .cus_per_cache = 0 },
};

/*
 * gfx942: one L2 per KFD node whatever its XCCs, and the Infinity Cache (the
 * MALL, 256 MiB per GPU) as one L3 entry per node, divided by the NPS mode
 * (kfd_crat.c's gfx9.4.3 cache filling).
 */
#define GFX942_CACHES(l3_kb) {								\
	{ .level = 1, .size_kb = 16, .line_size = 128, .type = 9, .cus_per_cache = 1 },	\
	{ .level = 1, .size_kb = 16, .line_size = 64, .type = 9, .cus_per_cache = 2 },	\
	{ .level = 1, .size_kb = 64, .line_size = 64, .type = 10, .cus_per_cache = 2 },	\
	{ .level = 2, .size_kb = 4096, .line_size = 128, .type = 9, .cus_per_cache = 0 },	\
	{ .level = 3, .size_kb = (l3_kb), .line_size = 64, .type = 9, .cus_per_cache = 0 },	\
}

static const struct emu_cache gfx942_nps1_caches[] = GFX942_CACHES(262144);
static const struct emu_cache gfx942_nps4_caches[] = GFX942_CACHES(65536);

/*
 * Capability bits: watch points (0x80, 2 address bits << 8), 64-bit
 * doorbells (2 << 12), AQL double map (0x4000), SRAM/HBM ECC and RAS
 * notification (0x80000 | 0x100000 | 0x200000).  SVM is not advertised.
 */
#define EMU_CAP_GFX9	(0x80 | (2 << 8) | (2 << 12) | 0x4000 | 0x80000 | 0x100000 | 0x200000)

/*
 * The models' values are the real parts' (public specs, and the KFD topology
 * of such machines): MI100 120 CUs, MI210 104, an MI250X GCD 110, an MI300X
 * XCD in CPX mode 38; L2 8 MiB per die (4 MiB per MI300X XCD).  The runtime's
 * per-queue context save area grows with the CU count (about 600 KiB per CU
 * on gfx90a), as on those machines.
 *
 * SDMA engines as KFD splits them: a part that can join an xGMI hive (MI100,
 * MI200, MI300; bridge or not) keeps two engines for PCIe copies and lists
 * the rest as xGMI engines, so the MI100's eight are 2 + 6 and the MI210's
 * five 2 + 3.  fw_version is the MEC firmware's, sdma_fw_version the SDMA
 * firmware's: they depend on the firmware files installed, not on the part.
 *
 * The unit fixtures (test/unit/topology_fixtures.cpp) describe the same parts;
 * a unit test (GpuModels.*) reads this table and fails where they disagree.
 */
static const struct emu_model model_mi100 = {
	.asic = "arcturus", .device_id = 0x738c, .gfx_target_version = 90008,
	.simd_count = 480, .simd_per_cu = 4, .array_count = 8,
	.simd_arrays_per_engine = 1, .cu_per_simd_array = 16,
	.max_waves_per_simd = 10, .lds_size_in_kb = 64, .gds_size_in_kb = 64,
	.num_gws = 64, .wave_front_size = 64, .max_slots_scratch_cu = 32,
	.max_engine_clk_fcompute = 1502, .fw_version = 65, .sdma_fw_version = 18,
	.capability = EMU_CAP_GFX9,
	.num_sdma_engines = 2, .num_sdma_xgmi_engines = 6,
	.num_sdma_queues_per_engine = 8, .num_cp_queues = 24,
	.vram_mb = 32768, .vram_width = 4096, .mem_clk_max = 1200,
	.gb_addr_config = 0x2a114042,
	.caches = gfx9_caches, .n_caches = ARRAY_SIZE(gfx9_caches),
};

static const struct emu_model model_mi210 = {
	.asic = "aldebaran", .device_id = 0x740f, .gfx_target_version = 90010,
	.simd_count = 416, .simd_per_cu = 4, .array_count = 8,
	.simd_arrays_per_engine = 1, .cu_per_simd_array = 16,
	.max_waves_per_simd = 8, .lds_size_in_kb = 64, .gds_size_in_kb = 0,
	.num_gws = 64, .wave_front_size = 64, .max_slots_scratch_cu = 32,
	.max_engine_clk_fcompute = 1700, .fw_version = 78, .sdma_fw_version = 8,
	.capability = EMU_CAP_GFX9,
	.num_sdma_engines = 2, .num_sdma_xgmi_engines = 3,
	.num_sdma_queues_per_engine = 8, .num_cp_queues = 24,
	.vram_mb = 65536, .vram_width = 4096, .mem_clk_max = 1600,
	.gb_addr_config = 0x2a114042,
	.caches = gfx9_caches, .n_caches = ARRAY_SIZE(gfx9_caches),
};

static const struct emu_model model_mi250x = {
	.asic = "aldebaran", .device_id = 0x740c, .gfx_target_version = 90010,
	.simd_count = 440, .simd_per_cu = 4, .array_count = 8,
	.simd_arrays_per_engine = 1, .cu_per_simd_array = 16,
	.max_waves_per_simd = 8, .lds_size_in_kb = 64, .gds_size_in_kb = 0,
	.num_gws = 64, .wave_front_size = 64, .max_slots_scratch_cu = 32,
	.max_engine_clk_fcompute = 1700, .fw_version = 78, .sdma_fw_version = 8,
	.capability = EMU_CAP_GFX9,
	.num_sdma_engines = 2, .num_sdma_xgmi_engines = 3,
	.num_sdma_queues_per_engine = 8, .num_cp_queues = 24,
	.vram_mb = 65536, .vram_width = 4096, .mem_clk_max = 1600,
	.gb_addr_config = 0x2a114042,
	.caches = gfx9_caches, .n_caches = ARRAY_SIZE(gfx9_caches),
};

/*
 * MI300X (gfx942, GC 9.4.3): eight XCDs of 38 active CUs (40 slots, 4
 * shader engines of one array each), 192 GB of HBM3 in 8 stacks, 16 SDMA
 * engines, 256 MiB Infinity Cache.  Its compute partition mode (amdgpu's
 * current_compute_partition) makes one KFD node of all eight XCCs (SPX) or
 * one node per XCC (CPX; DPX and QPX halve and quarter); its memory mode
 * (current_memory_partition) one memory partition of all HBM (NPS1) or four
 * (NPS4, which needs CPX or QPX).  What KFD reports per node, from amdkfd's
 * topology and CRAT code (kfd_topology.c node_show, kfd_crat.c) and from
 * the topology of real MI300X nodes in each mode:
 *  - simd_count 4 per CU of the device's 304, divided evenly by the nodes:
 *    SPX 1216, CPX 152; array_count 4 per XCC times the node's XCCs (SPX
 *    32, CPX 4); num_xcc 8 or 1; cu_per_simd_array 10 (the slots);
 *  - SDMA: 2 engines for PCIe, the device's other 14 for xGMI in SPX, none
 *    for a CPX partition; 8 queues per engine; 24 CP queues in every mode;
 *  - memory: the node's memory partition, shared evenly by the nodes in it:
 *    SPX+NPS1 192 GiB, CPX+NPS1 and CPX+NPS4 24 GiB (like the other models,
 *    before what the driver reserves for itself);
 *  - the L3 entry: 256 MiB divided by the NPS mode.
 * The CWSR sizes follow (kfd_queue.c): the thunk sizes each XCC's save area
 * for 38 CUs and allocates one per XCC.
 */
static const struct emu_model model_mi300x_spx = {
	.asic = "ip discovery", .device_id = 0x74a1, .gfx_target_version = 90402,
	.simd_count = 1216, .simd_per_cu = 4, .array_count = 32,
	.simd_arrays_per_engine = 1, .cu_per_simd_array = 10,
	.max_waves_per_simd = 8, .lds_size_in_kb = 64, .gds_size_in_kb = 0,
	.num_gws = 64, .wave_front_size = 64, .max_slots_scratch_cu = 32,
	.max_engine_clk_fcompute = 2100, .fw_version = 166, .sdma_fw_version = 22,
	.capability = EMU_CAP_GFX9,
	.num_sdma_engines = 2, .num_sdma_xgmi_engines = 14,
	.num_sdma_queues_per_engine = 8, .num_cp_queues = 24,
	.vram_mb = 196608, .vram_width = 8192, .mem_clk_max = 1300,
	.gb_addr_config = 0x2a114042, .num_xcc = 8,
	.caches = gfx942_nps1_caches, .n_caches = ARRAY_SIZE(gfx942_nps1_caches),
};

static const struct emu_model model_mi300x_cpx = {
	.asic = "ip discovery", .device_id = 0x74a1, .gfx_target_version = 90402,
	.simd_count = 152, .simd_per_cu = 4, .array_count = 4,
	.simd_arrays_per_engine = 1, .cu_per_simd_array = 10,
	.max_waves_per_simd = 8, .lds_size_in_kb = 64, .gds_size_in_kb = 0,
	.num_gws = 64, .wave_front_size = 64, .max_slots_scratch_cu = 32,
	.max_engine_clk_fcompute = 2100, .fw_version = 166, .sdma_fw_version = 22,
	.capability = EMU_CAP_GFX9,
	.num_sdma_engines = 2, .num_sdma_xgmi_engines = 0,
	.num_sdma_queues_per_engine = 8, .num_cp_queues = 24,
	.vram_mb = 24576, .vram_width = 8192, .mem_clk_max = 1300,
	.gb_addr_config = 0x2a114042, .num_xcc = 1,
	.caches = gfx942_nps1_caches, .n_caches = ARRAY_SIZE(gfx942_nps1_caches),
};

static const struct emu_model model_mi300x_cpx_nps4 = {
	.asic = "ip discovery", .device_id = 0x74a1, .gfx_target_version = 90402,
	.simd_count = 152, .simd_per_cu = 4, .array_count = 4,
	.simd_arrays_per_engine = 1, .cu_per_simd_array = 10,
	.max_waves_per_simd = 8, .lds_size_in_kb = 64, .gds_size_in_kb = 0,
	.num_gws = 64, .wave_front_size = 64, .max_slots_scratch_cu = 32,
	.max_engine_clk_fcompute = 2100, .fw_version = 166, .sdma_fw_version = 22,
	.capability = EMU_CAP_GFX9,
	.num_sdma_engines = 2, .num_sdma_xgmi_engines = 0,
	.num_sdma_queues_per_engine = 8, .num_cp_queues = 24,
	.vram_mb = 24576, .vram_width = 8192, .mem_clk_max = 1300,
	.gb_addr_config = 0x2a114042, .num_xcc = 1,
	.caches = gfx942_nps4_caches, .n_caches = ARRAY_SIZE(gfx942_nps4_caches),
};

static const struct emu_preset presets[] = {
	{
		.name = "mi100", .model = &model_mi100, .n_gpus = 1,
		.unique_id_base = 0x3c0e1a2b4d5f6071ULL,
		.default_gpu_ids = { 0x4f1e },
	}, {
		/* a node with one MI210 */
		.name = "mi210", .model = &model_mi210, .n_gpus = 1,
		.unique_id_base = 0x5a6b7c8d9eaf2d30ULL,
		.default_gpu_ids = { 0x58d2 },
	}, {
		.name = "2xmi210", .model = &model_mi210, .n_gpus = 2,
		.unique_id_base = 0x5a6b7c8d9eaf0b12ULL,
		.default_gpu_ids = { 0xc1e6, 0x2b8c },
	}, {
		/* a larger PCIe node of the same GPUs: every GPU property as in 2xmi210 */
		.name = "4xmi210", .model = &model_mi210, .n_gpus = 4,
		.unique_id_base = 0x5a6b7c8d9eaf1c20ULL,
		.default_gpu_ids = { 0x6d3a, 0xa47f, 0x3e91, 0xf258 },
	}, {
		.name = "mi250x", .model = &model_mi250x, .n_gpus = 4,
		.xgmi_hive = true, .hive_id = 0x9b1d3c5e7f810a2cULL,
		.unique_id_base = 0x7d3e2f1a0b9c8d40ULL,
		.default_gpu_ids = { 0x8a21, 0x7d4e, 0x1c93, 0xe5b2 },
	}, {
		/* two MI300X in SPX+NPS1 mode, one xGMI hive */
		.name = "2xmi300x", .model = &model_mi300x_spx, .n_gpus = 2,
		.xgmi_hive = true, .hive_id = 0x4c7e1a93d05b2f68ULL,
		.unique_id_base = 0x3b9d5e7f1a2c4e80ULL,
		.default_gpu_ids = { 0xd71a, 0x62c5 },
		.compute_mode = "SPX", .memory_mode = "NPS1",
	}, {
		/* an eight-GPU MI300X node (a platform of one hive) in SPX+NPS1 */
		.name = "8xmi300x", .model = &model_mi300x_spx, .n_gpus = 8,
		.xgmi_hive = true, .hive_id = 0x5d8f2ba4e16c3079ULL,
		.unique_id_base = 0x4cae6f802b3d5f90ULL,
		.default_gpu_ids = { 0xa3f1, 0x18d6, 0xc94b, 0x7e20,
				     0x35b8, 0xe06d, 0x5a93, 0x8c47 },
		.compute_mode = "SPX", .memory_mode = "NPS1",
	}, {
		/* one MI300X in CPX+NPS1 mode: eight partitions of one XCC */
		.name = "cpx8", .model = &model_mi300x_cpx, .n_gpus = 8, .partitions = 8,
		.xgmi_hive = true, .hive_id = 0x2e4f6a8c0b1d3f57ULL,
		.unique_id_base = 0x61c2a3b4d5e6f780ULL,
		.default_gpu_ids = { 0x91c4, 0x5e07, 0x2fd3, 0xb468,
				     0x7a1d, 0xd3e9, 0x46b2, 0xe85f },
		.compute_mode = "CPX", .memory_mode = "NPS1",
	}, {
		/* the same in CPX+NPS4: two partitions per memory partition */
		.name = "cpx8-nps4", .model = &model_mi300x_cpx_nps4, .n_gpus = 8, .partitions = 8,
		.xgmi_hive = true, .hive_id = 0x2e4f6a8c0b1d3f57ULL,
		.unique_id_base = 0x61c2a3b4d5e6f780ULL,
		.default_gpu_ids = { 0x93c2, 0x5c17, 0x2ed1, 0xb648,
				     0x781f, 0xd1eb, 0x44b0, 0xe65d },
		.compute_mode = "CPX", .memory_mode = "NPS4",
	},
};

struct emu_gpu *emu_gpu_by_id(u32 gpu_id)
{
	unsigned int i;

	if (!gpu_id)
		return NULL;
	for (i = 0; i < emu.n_gpus; i++)
		if (emu.gpus[i].gpu_id == gpu_id)
			return &emu.gpus[i];
	return NULL;
}

static int emu_setup_gpus(void)
{
	const struct emu_preset *ps = NULL;
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(presets); i++)
		if (preset && !strcmp(preset, presets[i].name))
			ps = &presets[i];
	if (!ps) {
		pr_err(EMU_NAME ": unknown preset '%s'\n", preset ? preset : "");
		return -EINVAL;
	}
	if (n_gpu_ids > ps->n_gpus) {
		pr_err(EMU_NAME ": %d gpu_ids given for %u GPUs of preset %s\n",
		       n_gpu_ids, ps->n_gpus, ps->name);
		return -EINVAL;
	}

	emu.preset = ps;
	emu.n_gpus = ps->n_gpus;
	emu.heartbeat_ms = heartbeat_ms ? heartbeat_ms : 1;

	for (i = 0; i < emu.n_gpus; i++) {
		struct emu_gpu *gpu = &emu.gpus[i];

		gpu->index = i;
		gpu->node_id = i + 1;
		gpu->model = ps->model;
		gpu->fw_version = fw_version ? fw_version : ps->model->fw_version;
		gpu->gpu_id = i < n_gpu_ids ? gpu_ids[i] : ps->default_gpu_ids[i];
		if (!gpu->gpu_id || gpu->gpu_id >= 0x10000) {
			pr_err(EMU_NAME ": gpu_id 0x%x of GPU %u is not a non-zero 16-bit value\n",
			       gpu->gpu_id, i);
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			if (emu.gpus[j].gpu_id == gpu->gpu_id) {
				pr_err(EMU_NAME ": gpu_id 0x%x used twice\n", gpu->gpu_id);
				return -EINVAL;
			}
		}
		gpu->vram_size = (u64)(vram_mb ? vram_mb : ps->model->vram_mb) << 20;
		atomic64_set(&gpu->vram_used, 0);
		gpu->hive_id = ps->xgmi_hive ? ps->hive_id : 0;
		/* a physical GPU's partitions: one unique_id, one PCI device, the partition ORed in */
		gpu->partition = i % emu_preset_partitions(ps);
		gpu->unique_id = ps->unique_id_base + i / emu_preset_partitions(ps);
		/* PCI bus of each GPU: 0x03, 0x23, 0x43, ... devfn 0 */
		gpu->location_id = (0x03 + 0x20 * (i / emu_preset_partitions(ps))) << 8 | gpu->partition;
		gpu->domain = 0;
		gpu->render_minor = -1;
		gpu->mmio_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!gpu->mmio_page)
			return -ENOMEM;
	}
	return 0;
}

static void emu_free_gpus(void)
{
	unsigned int i;

	for (i = 0; i < emu.n_gpus; i++) {
		if (emu.gpus[i].mmio_page)
			__free_page(emu.gpus[i].mmio_page);
		emu.gpus[i].mmio_page = NULL;
	}
}

static int __init emu_init(void)
{
	unsigned int i;
	int ret;

	ret = emu_setup_gpus();
	if (ret)
		goto err_gpus;

	emu.wq = alloc_workqueue(EMU_NAME, WQ_UNBOUND, 0);
	if (!emu.wq) {
		ret = -ENOMEM;
		goto err_gpus;
	}

	ret = emu_fault_init(fault);
	if (ret)
		goto err_wq;

	ret = emu_drm_init();
	if (ret)
		goto err_fault;

	ret = emu_drm_reserve_minors(render_minor_base);
	if (ret)
		goto err_drm;

	for (i = 0; i < emu.n_gpus; i++) {
		ret = emu_sdma_init(&emu.gpus[i]);
		if (!ret)
			ret = emu_drm_register_gpu(&emu.gpus[i]);
		if (ret) {
			emu_sdma_fini(&emu.gpus[i]);
			goto err_unregister;
		}
	}
	emu_drm_release_placeholders();

	ret = emu_kfd_init();
	if (ret)
		goto err_unregister;

	emu_debugfs_init();

	pr_info(EMU_NAME ": preset %s, %u GPU(s), VRAM %llu MiB each\n",
		emu.preset->name, emu.n_gpus, emu.gpus[0].vram_size >> 20);
	for (i = 0; i < emu.n_gpus; i++)
		pr_info(EMU_NAME ": GPU %u: gpu_id 0x%x, node %u, renderD%d\n",
			i, emu.gpus[i].gpu_id, emu.gpus[i].node_id,
			emu.gpus[i].render_minor);
	return 0;

err_unregister:
	emu_drm_release_placeholders();
	while (i--) {
		emu_drm_unregister_gpu(&emu.gpus[i]);
		emu_sdma_fini(&emu.gpus[i]);
	}
err_drm:
	emu_drm_fini();
err_fault:
	emu_fault_fini();
err_wq:
	destroy_workqueue(emu.wq);
err_gpus:
	emu_free_gpus();
	return ret;
}

static void __exit emu_exit(void)
{
	unsigned int i;

	emu_debugfs_fini();
	emu_access_fini();
	emu_kfd_fini();
	/* process structures are freed from SRCU callbacks and our workqueue */
	mmu_notifier_synchronize();
	flush_workqueue(emu.wq);
	for (i = emu.n_gpus; i--; ) {
		/* jobs still queued finish first: they hold files and BOs */
		emu_sdma_fini(&emu.gpus[i]);
		emu_drm_unregister_gpu(&emu.gpus[i]);
	}
	emu_drm_fini();
	emu_fault_fini();
	destroy_workqueue(emu.wq);
	emu_free_gpus();
	pr_info(EMU_NAME ": unloaded\n");
}

module_init(emu_init);
module_exit(emu_exit);

MODULE_DESCRIPTION("Emulated amdgpu/KFD user ABI for the criu-amdgpu-plugin test bed");
MODULE_AUTHOR("criu-amdgpu-plugin developers");
MODULE_LICENSE("GPL");
EMU_IMPORT_NS_DMA_BUF();
