// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: the KFD topology under /sys/devices/virtual/kfd/kfd/topology.
 *
 * Node 0 is the CPU, nodes 1..N the GPUs in preset order.  Every property key
 * the 6.1 driver prints is printed, in the driver's order; values depend only
 * on the preset and parameters, so they survive a reload unchanged except for
 * gpu_id and drm_render_minor.
 */
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/cpumask.h>
#include <linux/device.h>

#include <linux/kfd_sysfs.h>
#include "emu.h"

#define EMU_CPU_CLK_MHZ		2400
#define EMU_IOLINK_TYPE_PCIE	2
#define EMU_IOLINK_TYPE_XGMI	11
#define EMU_PCIE_WEIGHT		20
#define EMU_XGMI_WEIGHT		15
#define EMU_XGMI_PARTITION_WEIGHT 13	/* between partitions of one MI300 (kfd_topology.c) */
#define EMU_CPU_CACHE_TYPE	5	/* data | CPU */
#define EMU_HEAP_SYSTEM		0
#define EMU_HEAP_FB_PUBLIC	1

enum emu_kobj_kind {
	EMU_KOBJ_DIR,
	EMU_KOBJ_TOPOLOGY,
	EMU_KOBJ_NODE,
	EMU_KOBJ_MEM_BANK,
	EMU_KOBJ_CACHE,
	EMU_KOBJ_IO_LINK,
};

struct emu_kobj {
	struct kobject kobj;
	struct list_head link;
	enum emu_kobj_kind kind;
	unsigned int node;
	unsigned int idx;
};

static LIST_HEAD(emu_kobjs);

static inline struct emu_kobj *to_emu_kobj(struct kobject *kobj)
{
	return container_of(kobj, struct emu_kobj, kobj);
}

static struct emu_gpu *node_gpu(unsigned int node)
{
	return node ? &emu.gpus[node - 1] : NULL;
}

static unsigned int gpu_cus(const struct emu_model *m)
{
	return m->simd_count / m->simd_per_cu;
}

static unsigned int cache_instances(const struct emu_model *m,
				    const struct emu_cache *c)
{
	return c->cus_per_cache ? DIV_ROUND_UP(gpu_cus(m), c->cus_per_cache) : 1;
}

static unsigned int node_caches(unsigned int node)
{
	struct emu_gpu *gpu = node_gpu(node);
	unsigned int i, n = 0;

	if (!gpu)
		return 1;
	for (i = 0; i < gpu->model->n_caches; i++)
		n += cache_instances(gpu->model, &gpu->model->caches[i]);
	return n;
}

/* GPU nodes: the PCIe link to the CPU, then xGMI to each hive peer. */
static unsigned int node_io_links(unsigned int node)
{
	if (!node)
		return emu.n_gpus;
	return 1 + (emu.preset->xgmi_hive ? emu.n_gpus - 1 : 0);
}

static u32 gpu_simd_id_base(struct emu_gpu *gpu)
{
	return 0x80001000 + gpu->index * 0x1000;
}

#define P(key, val) (off += sysfs_emit_at(buf, off, "%s %llu\n", key, (u64)(val)))

/*
 * The capability word as the kernel the module is built for publishes it. From 6.5 (KFD 1.13)
 * a gfx9 GPU also announces trap debugging (trap override and launch modes; precise memory
 * operations from gfx90a on) and whether its MEC firmware can handle debug exceptions: gfx908
 * from firmware 60, gfx90a from 51, later parts always. ROCr's runtime calls RUNTIME_ENABLE only
 * when every GPU says its firmware can. The SRAM ECC bit moved then, its old place left 0.
 */
u32 emu_gpu_capability(const struct emu_gpu *gpu)
{
	u32 cap = gpu->model->capability;
#if EMU_KFD_MINOR_VERSION >= 13
	u32 gfx = gpu->model->gfx_target_version;
	bool fw_ok = true;

	if (cap & HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED)
		cap = (cap & ~HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED) | HSA_CAP_SRAM_EDCSUPPORTED;
	cap |= HSA_CAP_TRAP_DEBUG_SUPPORT | HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED |
	       HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED;
	if (gfx >= 90010)
		cap |= HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED;
	if (gfx == 90008)
		fw_ok = gpu->fw_version >= 60;
	else if (gfx == 90010)
		fw_ok = gpu->fw_version >= 51;
	if (fw_ok)
		cap |= HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED;
#endif
	return cap;
}

#if EMU_KFD_MINOR_VERSION >= 13
/*
 * watch-point address mask bits of gfx9 (lowest bit 6, highest 29); gfx942:
 * 7 and 30, and its dispatch info is always valid (0x400)
 */
u64 emu_gpu_debug_prop(const struct emu_gpu *gpu)
{
	if (gpu->model->gfx_target_version >= 90402)
		return 7 | (30 << HSA_DBG_WATCH_ADDR_MASK_HI_BIT_SHIFT) | HSA_DBG_DISPATCH_INFO_ALWAYS_VALID;
	return 6 | (29 << HSA_DBG_WATCH_ADDR_MASK_HI_BIT_SHIFT);
}
#endif

static ssize_t show_node_properties(unsigned int node, char *buf)
{
	struct emu_gpu *gpu = node_gpu(node);
	const struct emu_model *m = gpu ? gpu->model : NULL;
	ssize_t off = 0;

	P("cpu_cores_count", gpu ? 0 : num_possible_cpus());
	P("simd_count", m ? m->simd_count : 0);
	P("mem_banks_count", 1);
	P("caches_count", node_caches(node));
	P("io_links_count", node_io_links(node));
	P("p2p_links_count", 0);
	P("cpu_core_id_base", 0);
	P("simd_id_base", gpu ? gpu_simd_id_base(gpu) : 0);
	P("max_waves_per_simd", m ? m->max_waves_per_simd : 0);
	P("lds_size_in_kb", m ? m->lds_size_in_kb : 0);
	P("gds_size_in_kb", m ? m->gds_size_in_kb : 0);
	P("num_gws", m ? m->num_gws : 0);
	P("wave_front_size", m ? m->wave_front_size : 0);
	P("array_count", m ? m->array_count : 0);
	P("simd_arrays_per_engine", m ? m->simd_arrays_per_engine : 0);
	P("cu_per_simd_array", m ? m->cu_per_simd_array : 0);
	P("simd_per_cu", m ? m->simd_per_cu : 0);
	P("max_slots_scratch_cu", m ? m->max_slots_scratch_cu : 0);
	P("gfx_target_version", m ? m->gfx_target_version : 0);
	P("vendor_id", gpu ? EMU_VENDOR_AMD : 0);
	P("device_id", m ? m->device_id : 0);
	P("location_id", gpu ? gpu->location_id : 0);
	P("domain", gpu ? gpu->domain : 0);
	P("drm_render_minor", gpu ? gpu->render_minor : 0);
	P("hive_id", gpu ? gpu->hive_id : 0);
	P("num_sdma_engines", m ? m->num_sdma_engines : 0);
	P("num_sdma_xgmi_engines", m ? m->num_sdma_xgmi_engines : 0);
	P("num_sdma_queues_per_engine", m ? m->num_sdma_queues_per_engine : 0);
	P("num_cp_queues", m ? m->num_cp_queues : 0);
	if (gpu) {
		P("max_engine_clk_fcompute", m->max_engine_clk_fcompute);
		/* 6.1 always prints 0 here; the size is in mem_banks */
		P("local_mem_size", 0);
		P("fw_version", gpu->fw_version);
		P("capability", emu_gpu_capability(gpu));
#if EMU_KFD_MINOR_VERSION >= 13
		P("debug_prop", emu_gpu_debug_prop(gpu));
#endif
		P("sdma_fw_version", m->sdma_fw_version);
		P("unique_id", gpu->unique_id);
#if EMU_KFD_MINOR_VERSION >= 13
		/* 6.5 and newer: the XCCs the node runs as one GPU */
		P("num_xcc", emu_gpu_xcc_count(gpu));
#endif
	}
	P("max_engine_clk_ccompute", EMU_CPU_CLK_MHZ);
	return off;
}

static ssize_t show_mem_bank(unsigned int node, char *buf)
{
	struct emu_gpu *gpu = node_gpu(node);
	ssize_t off = 0;

	P("heap_type", gpu ? EMU_HEAP_FB_PUBLIC : EMU_HEAP_SYSTEM);
	P("size_in_bytes", gpu ? gpu->vram_size : (u64)totalram_pages() << PAGE_SHIFT);
	P("flags", 0);
	P("width", gpu ? gpu->model->vram_width : 64);
	P("mem_clk_max", gpu ? gpu->model->mem_clk_max : 0);
	return off;
}

static ssize_t show_cache(unsigned int node, unsigned int idx, char *buf)
{
	struct emu_gpu *gpu = node_gpu(node);
	const struct emu_model *m;
	const struct emu_cache *c = NULL;
	unsigned int i, k, n_units, first = 0, span = 1;
	ssize_t off = 0;

	if (!gpu) {
		n_units = num_possible_cpus();
		P("processor_id_low", 0);
		P("level", 1);
		P("size", 32);
		P("cache_line_size", 64);
		P("cache_lines_per_tag", 1);
		P("association", 8);
		P("latency", 1);
		P("type", EMU_CPU_CACHE_TYPE);
	} else {
		m = gpu->model;
		n_units = gpu_cus(m);
		for (i = 0; i < m->n_caches; i++) {
			unsigned int inst = cache_instances(m, &m->caches[i]);

			if (idx < inst) {
				c = &m->caches[i];
				break;
			}
			idx -= inst;
		}
		if (!c)
			return -EINVAL;
		span = c->cus_per_cache ? c->cus_per_cache : n_units;
		first = idx * span;
		P("processor_id_low", gpu_simd_id_base(gpu) + first);
		P("level", c->level);
		P("size", c->size_kb);
		P("cache_line_size", c->line_size);
		P("cache_lines_per_tag", 1);
		P("association", c->level == 2 ? 16 : 0);
		P("latency", 0);
		P("type", c->type);
	}

	/* one flag per CPU / CU sharing this cache, in whole bytes */
	off += sysfs_emit_at(buf, off, "sibling_map ");
	for (k = 0; k < round_up(n_units, 8); k++)
		off += sysfs_emit_at(buf, off, "%d,",
				     gpu ? (k >= first && k < first + span) : 1);
	buf[off - 1] = '\n';
	return off;
}

static ssize_t show_io_link(unsigned int node, unsigned int idx, char *buf)
{
	struct emu_gpu *gpu = node_gpu(node);
	unsigned int to, type, weight;
	u32 min_bw, max_bw;
	ssize_t off = 0;

	if (!gpu) {
		to = idx + 1;
		type = EMU_IOLINK_TYPE_PCIE;
	} else if (idx == 0) {
		to = 0;
		type = EMU_IOLINK_TYPE_PCIE;
	} else {
		/* the idx-th other member of the hive */
		to = idx < node ? idx : idx + 1;
		type = EMU_IOLINK_TYPE_XGMI;
	}
	if (type == EMU_IOLINK_TYPE_XGMI && emu_gpus_share_device(gpu, node_gpu(to))) {
		/* partitions of one GPU: the device's own fabric */
		weight = EMU_XGMI_PARTITION_WEIGHT;
		min_bw = 819200;
		max_bw = 819200;
	} else if (type == EMU_IOLINK_TYPE_XGMI) {
		weight = EMU_XGMI_WEIGHT;
		min_bw = 50000;
		max_bw = 50000;
	} else {
		weight = EMU_PCIE_WEIGHT;
		min_bw = 0;
		max_bw = 32000;
	}

	P("type", type);
	P("version_major", 0);
	P("version_minor", 0);
	P("node_from", node);
	P("node_to", to);
	P("weight", weight);
	P("min_latency", 0);
	P("max_latency", 0);
	P("min_bandwidth", min_bw);
	P("max_bandwidth", max_bw);
	P("recommended_transfer_size", 0);
	P("flags", 1);
	return off;
}

#undef P

static ssize_t emu_kobj_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	struct emu_kobj *ek = to_emu_kobj(kobj);
	struct emu_gpu *gpu = NULL;
	ssize_t off = 0;

	/* KFD refuses a hidden GPU's own attributes: node, banks, caches, links */
	if (ek->kind != EMU_KOBJ_TOPOLOGY) {
		gpu = node_gpu(ek->node);
		if (gpu && !emu_gpu_visible(gpu))
			return -EPERM;
	}

	switch (ek->kind) {
	case EMU_KOBJ_TOPOLOGY:
		if (!strcmp(attr->name, "generation_id"))
			return sysfs_emit(buf, "%u\n", emu.n_gpus);
		off += sysfs_emit_at(buf, off, "platform_oem 0\n");
		off += sysfs_emit_at(buf, off, "platform_id 0\n");
		off += sysfs_emit_at(buf, off, "platform_rev 0\n");
		return off;
	case EMU_KOBJ_NODE:
		if (!strcmp(attr->name, "gpu_id"))
			return sysfs_emit(buf, "%u\n", gpu ? gpu->gpu_id : 0);
		if (!strcmp(attr->name, "name"))
			return sysfs_emit(buf, "%s\n", gpu ? gpu->model->asic : "");
		return show_node_properties(ek->node, buf);
	case EMU_KOBJ_MEM_BANK:
		return show_mem_bank(ek->node, buf);
	case EMU_KOBJ_CACHE:
		return show_cache(ek->node, ek->idx, buf);
	case EMU_KOBJ_IO_LINK:
		return show_io_link(ek->node, ek->idx, buf);
	default:
		return -EINVAL;
	}
}

static const struct sysfs_ops emu_kobj_ops = {
	.show = emu_kobj_show,
};

static void emu_kobj_release(struct kobject *kobj)
{
	kfree(to_emu_kobj(kobj));
}

static struct attribute attr_generation_id = { .name = "generation_id", .mode = 0444 };
static struct attribute attr_system_properties = { .name = "system_properties", .mode = 0444 };
static struct attribute attr_gpu_id = { .name = "gpu_id", .mode = 0444 };
static struct attribute attr_name = { .name = "name", .mode = 0444 };
static struct attribute attr_properties = { .name = "properties", .mode = 0444 };

static struct attribute *topology_attrs[] = {
	&attr_generation_id, &attr_system_properties, NULL
};
ATTRIBUTE_GROUPS(topology);

static struct attribute *node_attrs[] = {
	&attr_gpu_id, &attr_name, &attr_properties, NULL
};
ATTRIBUTE_GROUPS(node);

static struct attribute *leaf_attrs[] = {
	&attr_properties, NULL
};
ATTRIBUTE_GROUPS(leaf);

static const struct kobj_type emu_dir_ktype = {
	.release = emu_kobj_release,
	.sysfs_ops = &emu_kobj_ops,
};

static const struct kobj_type emu_topology_ktype = {
	.release = emu_kobj_release,
	.sysfs_ops = &emu_kobj_ops,
	.default_groups = topology_groups,
};

static const struct kobj_type emu_node_ktype = {
	.release = emu_kobj_release,
	.sysfs_ops = &emu_kobj_ops,
	.default_groups = node_groups,
};

static const struct kobj_type emu_leaf_ktype = {
	.release = emu_kobj_release,
	.sysfs_ops = &emu_kobj_ops,
	.default_groups = leaf_groups,
};

static struct kobject *emu_kobj_add(struct kobject *parent, enum emu_kobj_kind kind,
				    unsigned int node, unsigned int idx,
				    const char *fmt, unsigned int n)
{
	const struct kobj_type *kt;
	struct emu_kobj *ek;
	int ret;

	ek = kzalloc(sizeof(*ek), GFP_KERNEL);
	if (!ek)
		return NULL;
	ek->kind = kind;
	ek->node = node;
	ek->idx = idx;
	switch (kind) {
	case EMU_KOBJ_TOPOLOGY:
		kt = &emu_topology_ktype;
		break;
	case EMU_KOBJ_NODE:
		kt = &emu_node_ktype;
		break;
	case EMU_KOBJ_DIR:
		kt = &emu_dir_ktype;
		break;
	default:
		kt = &emu_leaf_ktype;
		break;
	}
	ret = kobject_init_and_add(&ek->kobj, kt, parent, fmt, n);
	if (ret) {
		kobject_put(&ek->kobj);
		return NULL;
	}
	list_add(&ek->link, &emu_kobjs);	/* newest first: removal order */
	return &ek->kobj;
}

/* Directory @name of node @node's directory @kn, with entries 0 .. @n - 1 of @kind. */
static int emu_kobj_add_list(struct kobject *kn, const char *name, enum emu_kobj_kind kind,
			     unsigned int node, unsigned int n)
{
	struct kobject *dir;
	unsigned int i;

	dir = emu_kobj_add(kn, EMU_KOBJ_DIR, node, 0, name, 0);
	if (!dir)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (!emu_kobj_add(dir, kind, node, i, "%u", i))
			return -ENOMEM;
	return 0;
}

static int emu_topology_add_node(struct kobject *nodes, unsigned int node)
{
	struct kobject *kn;
	int ret;

	kn = emu_kobj_add(nodes, EMU_KOBJ_NODE, node, 0, "%u", node);
	if (!kn)
		return -ENOMEM;

	ret = emu_kobj_add_list(kn, "mem_banks", EMU_KOBJ_MEM_BANK, node, 1);
	if (!ret)
		ret = emu_kobj_add_list(kn, "caches", EMU_KOBJ_CACHE, node, node_caches(node));
	if (!ret)
		ret = emu_kobj_add_list(kn, "io_links", EMU_KOBJ_IO_LINK, node, node_io_links(node));
	if (!ret)
		ret = emu_kobj_add_list(kn, "p2p_links", EMU_KOBJ_DIR, node, 0);
	return ret;
}

int emu_topology_init(struct device *kfd_dev)
{
	struct kobject *topo, *nodes;
	unsigned int node;
	int ret = -ENOMEM;

	topo = emu_kobj_add(&kfd_dev->kobj, EMU_KOBJ_TOPOLOGY, 0, 0, "topology", 0);
	if (!topo)
		goto err;
	nodes = emu_kobj_add(topo, EMU_KOBJ_DIR, 0, 0, "nodes", 0);
	if (!nodes)
		goto err;
	for (node = 0; node <= emu.n_gpus; node++) {
		ret = emu_topology_add_node(nodes, node);
		if (ret)
			goto err;
	}
	return 0;

err:
	emu_topology_fini();
	return ret;
}

void emu_topology_fini(void)
{
	struct emu_kobj *ek, *tmp;

	list_for_each_entry_safe(ek, tmp, &emu_kobjs, link) {
		list_del(&ek->link);
		kobject_del(&ek->kobj);
		kobject_put(&ek->kobj);
	}
}
