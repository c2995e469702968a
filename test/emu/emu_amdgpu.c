// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: the amdgpu driver ioctls of the render nodes that are not about
 * command submission: INFO, GEM_CREATE, GEM_USERPTR, GEM_VA, GEM_OP,
 * GEM_METADATA, CTX and BO_LIST, with the checks and error codes of the 6.1
 * amdgpu driver (amdgpu_kms.c, amdgpu_gem.c, amdgpu_ctx.c, amdgpu_bo_list.c).
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include <linux/ktime.h>
#include <linux/capability.h>
#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_auth.h>
#include <drm/amdgpu_drm.h>

#include "emu.h"

/* ---- INFO ---------------------------------------------------------------- */

#define EMU_AMDGPU_FAMILY_AI	141
#define EMU_VRAM_TYPE_HBM	6
#define EMU_MMR_GB_ADDR_CONFIG	0x263e
#define EMU_GFX_MAX_SE		4
#define EMU_GFX_MAX_SH_PER_SE	2
#define EMU_GPU_COUNTER_KHZ	100000	/* the 100 MHz reference clock */

/* What the IP discovery tables of these parts say about their SDMA. */
static u32 emu_sdma_ip_version(const struct emu_model *m)
{
	switch (m->gfx_target_version) {
	case 90008:
		return (4 << 16) | (2 << 8) | 2;
	case 90402:
		return (4 << 16) | (4 << 8) | 2;
	default:
		return 4 << 16 | 4 << 8;
	}
}

static u32 emu_external_rev(const struct emu_model *m)
{
	switch (m->gfx_target_version) {
	case 90008:
		return 0x32;	/* Arcturus range */
	case 90402:
		return 0x46;
	default:
		return 0x3c;	/* Aldebaran range */
	}
}

static unsigned int emu_sdma_instances(const struct emu_model *m)
{
	return m->num_sdma_engines + m->num_sdma_xgmi_engines;
}

static u64 emu_gtt_size(void)
{
	return (u64)totalram_pages() * PAGE_SIZE * 3 / 4;
}

static void emu_fill_dev_info(struct emu_gpu *gpu, struct drm_amdgpu_info_device *di)
{
	const struct emu_model *m = gpu->model;
	u32 se = m->array_count / m->simd_arrays_per_engine;
	u32 arrays = se * m->simd_arrays_per_engine;
	u32 cus = m->simd_count / m->simd_per_cu;
	u64 vm_size = EMU_VM_SIZE - EMU_VA_RESERVED_SIZE;
	u32 i, j, n, a, bits;

	di->device_id = m->device_id;
	di->chip_rev = 1;
	di->external_rev = emu_external_rev(m) + di->chip_rev;
	di->pci_rev = 2;
	di->family = EMU_AMDGPU_FAMILY_AI;
	di->num_shader_engines = se;
	di->num_shader_arrays_per_engine = m->simd_arrays_per_engine;
	di->gpu_counter_freq = EMU_GPU_COUNTER_KHZ;
	di->max_engine_clock = (u64)m->max_engine_clk_fcompute * 1000;
	di->max_memory_clock = (u64)m->mem_clk_max * 1000;
	di->cu_active_number = cus;
	/*
	 * The active CUs spread evenly over the shader arrays (the first ones
	 * take the remainder); like amdgpu, shader engines past the fourth land
	 * in the columns after the first: bitmap[se % 4][sh + se / 4 * arrays per
	 * engine].  Every CU is always-on (a dGPU's ao count is the CUs per array);
	 * the ao mask packs the first two engines' first two arrays, 16 and 8 bits apart.
	 */
	for (i = 0; i < se; i++) {
		for (j = 0; j < m->simd_arrays_per_engine; j++) {
			a = i * m->simd_arrays_per_engine + j;
			n = min(cus / arrays + (a < cus % arrays), m->cu_per_simd_array);
			bits = n ? GENMASK(n - 1, 0) : 0;
			if (j + i / 4 * m->simd_arrays_per_engine < 4) {
				di->cu_bitmap[i % 4][j + i / 4 * m->simd_arrays_per_engine] = bits;
				di->cu_ao_bitmap[i % 4][j + i / 4 * m->simd_arrays_per_engine] = bits;
			}
			if (i < 2 && j < 2)
				di->cu_ao_mask |= bits << (i * 16 + j * 8);
		}
	}
	di->enabled_rb_pipes_mask = 0;	/* compute only: no render backends */
	di->num_rb_pipes = 0;
	di->num_hw_gfx_contexts = 8;
	di->ids_flags = 0;		/* a dGPU, no preemption flags */
	di->virtual_address_offset = EMU_VA_RESERVED_SIZE;
	di->virtual_address_max = min(vm_size, EMU_GMC_HOLE_START);
	di->virtual_address_alignment = max_t(u32, PAGE_SIZE, 4096);
	di->pte_fragment_size = (1 << 9) * 4096;
	di->gart_page_size = max_t(u32, PAGE_SIZE, 4096);
	di->ce_ram_size = 0;
	di->vram_type = EMU_VRAM_TYPE_HBM;
	di->vram_bit_width = m->vram_width;
	di->wave_front_size = m->wave_front_size;
	di->num_shader_visible_vgprs = 512;
	di->num_cu_per_sh = m->cu_per_simd_array;
	di->num_tcc_blocks = 16;
	if (vm_size > EMU_GMC_HOLE_START) {
		di->high_va_offset = EMU_GMC_HOLE_END;
		di->high_va_max = EMU_GMC_HOLE_END | vm_size;
	}
}

static int emu_fill_hw_ip(struct emu_gpu *gpu, const struct drm_amdgpu_info *info,
			  struct drm_amdgpu_info_hw_ip *ip)
{
	unsigned int rings;

	if (info->query_hw_ip.ip_instance)
		return -EINVAL;
	switch (info->query_hw_ip.type) {
	case AMDGPU_HW_IP_DMA:
		rings = min(emu_sdma_instances(gpu->model), (unsigned int)EMU_SDMA_RINGS);
		ip->hw_ip_version_major = 4;
		ip->hw_ip_version_minor = 0;
		ip->ib_start_alignment = 256;
		ip->ib_size_alignment = 4;
		ip->available_rings = (1U << rings) - 1;
		ip->ip_discovery_version = emu_sdma_ip_version(gpu->model);
		return 0;
	case AMDGPU_HW_IP_GFX:
	case AMDGPU_HW_IP_COMPUTE:
		/* the GC block exists, but nothing executes PM4: no rings */
		ip->hw_ip_version_major = 9;
		ip->hw_ip_version_minor = 0;
		ip->ib_start_alignment = 32;
		ip->ib_size_alignment = 32;
		ip->available_rings = 0;
		ip->ip_discovery_version = gpu->model->gfx_target_version / 10000 << 16 |
			(gpu->model->gfx_target_version / 100 % 100) << 8 |
			gpu->model->gfx_target_version % 100;
		return 0;
	case AMDGPU_HW_IP_UVD:
	case AMDGPU_HW_IP_VCE:
	case AMDGPU_HW_IP_UVD_ENC:
	case AMDGPU_HW_IP_VCN_DEC:
	case AMDGPU_HW_IP_VCN_ENC:
	case AMDGPU_HW_IP_VCN_JPEG:
		return 0;	/* no such block: all zero */
	default:
		return -EINVAL;
	}
}

static int emu_info_copy(const struct drm_amdgpu_info *info, const void *val, size_t size)
{
	void __user *out = u64_to_user_ptr(info->return_pointer);

	return copy_to_user(out, val, min_t(size_t, info->return_size, size)) ? -EFAULT : 0;
}

int emu_amdgpu_info_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_amdgpu_info *info = data;
	struct emu_gpu *gpu = dev->dev_private;
	u64 vram_used = atomic64_read(&gpu->vram_used);
	u64 gtt_used = atomic64_read(&gpu->gtt_used);
	u64 u64v;
	u32 u32v;
	int ret;

	if (!info->return_size || !info->return_pointer)
		return -EINVAL;

	switch (info->query) {
	case AMDGPU_INFO_ACCEL_WORKING:
		u32v = 1;
		return emu_info_copy(info, &u32v, sizeof(u32v));
	case AMDGPU_INFO_HW_IP_INFO: {
		struct drm_amdgpu_info_hw_ip ip = {};

		ret = emu_fill_hw_ip(gpu, info, &ip);
		return ret ? ret : emu_info_copy(info, &ip, sizeof(ip));
	}
	case AMDGPU_INFO_HW_IP_COUNT:
		switch (info->query_hw_ip.type) {
		case AMDGPU_HW_IP_GFX:
		case AMDGPU_HW_IP_COMPUTE:
		case AMDGPU_HW_IP_DMA:
			u32v = 1;	/* IP blocks, not instances */
			break;
		case AMDGPU_HW_IP_UVD:
		case AMDGPU_HW_IP_VCE:
		case AMDGPU_HW_IP_UVD_ENC:
		case AMDGPU_HW_IP_VCN_DEC:
		case AMDGPU_HW_IP_VCN_ENC:
		case AMDGPU_HW_IP_VCN_JPEG:
			u32v = 0;
			break;
		default:
			return -EINVAL;
		}
		return emu_info_copy(info, &u32v, sizeof(u32v));
	case AMDGPU_INFO_TIMESTAMP:
		u64v = ktime_get_raw_ns() / (NSEC_PER_SEC / (EMU_GPU_COUNTER_KHZ * 1000ULL));
		return emu_info_copy(info, &u64v, sizeof(u64v));
	case AMDGPU_INFO_FW_VERSION: {
		struct drm_amdgpu_info_firmware fw = {};

		if (info->query_fw.fw_type == AMDGPU_INFO_FW_SDMA) {
			if (info->query_fw.index >= emu_sdma_instances(gpu->model))
				return -EINVAL;
			fw.ver = gpu->model->sdma_fw_version;
		} else if (info->query_fw.fw_type == AMDGPU_INFO_FW_GFX_MEC) {
			fw.ver = gpu->fw_version;
		}
		return emu_info_copy(info, &fw, sizeof(fw));
	}
	case AMDGPU_INFO_NUM_BYTES_MOVED:
	case AMDGPU_INFO_NUM_EVICTIONS:
	case AMDGPU_INFO_NUM_VRAM_CPU_PAGE_FAULTS:
		u64v = 0;
		return emu_info_copy(info, &u64v, sizeof(u64v));
	case AMDGPU_INFO_VRAM_USAGE:
	case AMDGPU_INFO_VIS_VRAM_USAGE:
		return emu_info_copy(info, &vram_used, sizeof(vram_used));
	case AMDGPU_INFO_GTT_USAGE:
		return emu_info_copy(info, &gtt_used, sizeof(gtt_used));
	case AMDGPU_INFO_GDS_CONFIG: {
		struct drm_amdgpu_info_gds gds = {};

		gds.gds_total_size = gpu->model->gds_size_in_kb << 10;
		gds.compute_partition_size = gds.gds_total_size;
		return emu_info_copy(info, &gds, sizeof(gds));
	}
	case AMDGPU_INFO_VRAM_GTT: {
		struct drm_amdgpu_info_vram_gtt vg = {};

		vg.vram_size = gpu->vram_size;
		vg.vram_cpu_accessible_size = gpu->vram_size;	/* large BAR */
		vg.gtt_size = emu_gtt_size();
		return emu_info_copy(info, &vg, sizeof(vg));
	}
	case AMDGPU_INFO_MEMORY: {
		struct drm_amdgpu_memory_info mem = {};

		mem.vram.total_heap_size = gpu->vram_size;
		mem.vram.usable_heap_size = gpu->vram_size;
		mem.vram.heap_usage = vram_used;
		mem.vram.max_allocation = gpu->vram_size * 3 / 4;
		mem.cpu_accessible_vram = mem.vram;
		mem.gtt.total_heap_size = emu_gtt_size();
		mem.gtt.usable_heap_size = mem.gtt.total_heap_size;
		mem.gtt.heap_usage = gtt_used;
		mem.gtt.max_allocation = mem.gtt.total_heap_size * 3 / 4;
		return emu_info_copy(info, &mem, sizeof(mem));
	}
	case AMDGPU_INFO_READ_MMR_REG: {
		u32 se = info->read_mmr_reg.instance & AMDGPU_INFO_MMR_SE_INDEX_MASK;
		u32 sh = (info->read_mmr_reg.instance >> AMDGPU_INFO_MMR_SH_INDEX_SHIFT) &
			 AMDGPU_INFO_MMR_SH_INDEX_MASK;
		u32 regs[128], i;

		if (se != AMDGPU_INFO_MMR_SE_INDEX_MASK && se >= EMU_GFX_MAX_SE)
			return -EINVAL;
		if (sh != AMDGPU_INFO_MMR_SH_INDEX_MASK && sh >= EMU_GFX_MAX_SH_PER_SE)
			return -EINVAL;
		if (info->read_mmr_reg.count > ARRAY_SIZE(regs))
			return -EINVAL;
		for (i = 0; i < info->read_mmr_reg.count; i++) {
			/* the only register on the allow list we model */
			if (info->read_mmr_reg.dword_offset + i != EMU_MMR_GB_ADDR_CONFIG)
				return -EFAULT;
			regs[i] = gpu->model->gb_addr_config;
		}
		return emu_info_copy(info, regs, info->read_mmr_reg.count * sizeof(u32));
	}
	case AMDGPU_INFO_DEV_INFO: {
		struct drm_amdgpu_info_device *di;

		di = kzalloc(sizeof(*di), GFP_KERNEL);
		if (!di)
			return -ENOMEM;
		emu_fill_dev_info(gpu, di);
		ret = emu_info_copy(info, di, sizeof(*di));
		kfree(di);
		return ret;
	}
	case AMDGPU_INFO_VRAM_LOST_COUNTER:
		u32v = 0;
		return emu_info_copy(info, &u32v, sizeof(u32v));
	case AMDGPU_INFO_RAS_ENABLED_FEATURES:
		u64v = 0;
		return emu_info_copy(info, &u64v, sizeof(u64v));
	default:
		return -EINVAL;
	}
}

/* ---- GEM objects --------------------------------------------------------- */

/* the flags GEM_CREATE takes (6.1) */
#define EMU_GEM_CREATE_FLAGS_6_1 (AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED | \
				  AMDGPU_GEM_CREATE_NO_CPU_ACCESS | \
				  AMDGPU_GEM_CREATE_CPU_GTT_USWC | \
				  AMDGPU_GEM_CREATE_VRAM_CLEARED | \
				  AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | \
				  AMDGPU_GEM_CREATE_EXPLICIT_SYNC | \
				  AMDGPU_GEM_CREATE_ENCRYPTED | \
				  AMDGPU_GEM_CREATE_DISCARDABLE)
#if EMU_HAS_GEM_CHECKPOINT
/*
 * Linux 6.18 (AMDGPU_GEM_CREATE_SETTABLE_MASK): what LIST_HANDLES reports a
 * buffer was created with can be given to GEM_CREATE again.
 */
#define EMU_GEM_CREATE_FLAGS	(EMU_GEM_CREATE_FLAGS_6_1 | \
				 AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE | \
				 AMDGPU_GEM_CREATE_COHERENT | \
				 AMDGPU_GEM_CREATE_UNCACHED | \
				 AMDGPU_GEM_CREATE_EXT_COHERENT | \
				 AMDGPU_GEM_CREATE_GFX12_DCC)
#else
#define EMU_GEM_CREATE_FLAGS	EMU_GEM_CREATE_FLAGS_6_1
#endif
#define EMU_GEM_DOMAIN_MASK	(AMDGPU_GEM_DOMAIN_CPU | AMDGPU_GEM_DOMAIN_GTT | \
				 AMDGPU_GEM_DOMAIN_VRAM | AMDGPU_GEM_DOMAIN_GDS | \
				 AMDGPU_GEM_DOMAIN_GWS | AMDGPU_GEM_DOMAIN_OA)

int emu_amdgpu_gem_create_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_gem_create *args = data;
	struct emu_gpu *gpu = dev->dev_private;
	u64 flags = args->in.domain_flags;
	u32 domains = args->in.domains;
	struct emu_bo *bo;
	u32 handle;
	int ret;

	if (flags & ~EMU_GEM_CREATE_FLAGS)
		return -EINVAL;
	if (domains & ~EMU_GEM_DOMAIN_MASK)
		return -EINVAL;
	/* no TMZ on these parts */
	if (flags & AMDGPU_GEM_CREATE_ENCRYPTED)
		return -EINVAL;
	/* GDS, GWS and OA are not emulated */
	if (domains & (AMDGPU_GEM_DOMAIN_GDS | AMDGPU_GEM_DOMAIN_GWS | AMDGPU_GEM_DOMAIN_OA))
		return -EINVAL;
	if (!args->in.bo_size)
		return -EINVAL;

	if (domains & AMDGPU_GEM_DOMAIN_VRAM) {
		bo = emu_bo_create(gpu, args->in.bo_size, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, 0);
		/* like amdgpu, a VRAM-only BO that does not fit falls back to GTT */
		if (IS_ERR(bo) && PTR_ERR(bo) == -ENOMEM)
			bo = emu_bo_create(gpu, args->in.bo_size,
					   KFD_IOC_ALLOC_MEM_FLAGS_GTT, 0);
	} else {
		bo = emu_bo_create(gpu, args->in.bo_size, KFD_IOC_ALLOC_MEM_FLAGS_GTT, 0);
	}
	if (IS_ERR(bo))
		return PTR_ERR(bo);
#if EMU_HAS_GEM_CHECKPOINT
	/* 6.18 clears every VRAM buffer it hands out, and wipes it when freed */
	flags |= AMDGPU_GEM_CREATE_VRAM_CLEARED | AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE;
#endif
	bo->gem_flags = flags;
	bo->domains = domains;
	bo->alignment = args->in.alignment;

	ret = drm_gem_handle_create(file, &bo->base, &handle);
	emu_bo_put(bo);
	if (ret)
		return ret;
	memset(args, 0, sizeof(*args));
	args->out.handle = handle;
	return 0;
}

/* A BO over user memory; its pages are pinned by emu_bo_pin_gem_userptr(). */
struct emu_bo *emu_bo_create_userptr(struct emu_gpu *gpu, u64 addr, u64 size,
				     bool readonly)
{
	struct emu_bo *bo;

	bo = emu_bo_create(gpu, size, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, addr);
	if (IS_ERR(bo))
		return bo;
	bo->user_readonly = readonly;
	bo->domains = AMDGPU_GEM_DOMAIN_CPU;
	mmgrab(current->mm);
	bo->user_mm = current->mm;
	return bo;
}

/* Pin the pages of a GEM userptr BO; the caller must own its memory. */
int emu_bo_pin_gem_userptr(struct emu_bo *bo)
{
	if (smp_load_acquire(&bo->user_pinned))
		return 0;
	if (bo->user_mm != current->mm)
		return -EPERM;
	return emu_bo_pin_user(bo, current->mm, false);
}

/* amdgpu_ttm_tt_get_user_pages looks at the VMA of the first page only. */
static int emu_userptr_check_vma(u64 addr, bool anon_only)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	int ret = 0;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, addr);
	if (!vma)
		ret = -EFAULT;
	else if (anon_only && vma->vm_file)
		ret = -EPERM;
	mmap_read_unlock(mm);
	return ret;
}

int emu_amdgpu_gem_userptr_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_amdgpu_gem_userptr *args = data;
	struct emu_bo *bo;
	u32 handle;
	int ret;

	args->addr = untagged_addr(args->addr);
	if (offset_in_page(args->addr | args->size))
		return -EINVAL;
	if (args->flags & ~(AMDGPU_GEM_USERPTR_READONLY | AMDGPU_GEM_USERPTR_ANONONLY |
			    AMDGPU_GEM_USERPTR_VALIDATE | AMDGPU_GEM_USERPTR_REGISTER))
		return -EINVAL;
	/* writing needs an MMU notifier, i.e. REGISTER */
	if (!(args->flags & AMDGPU_GEM_USERPTR_READONLY) &&
	    !(args->flags & AMDGPU_GEM_USERPTR_REGISTER))
		return -EACCES;
	if (!args->size || args->addr + args->size < args->addr)
		return -EINVAL;

	bo = emu_bo_create_userptr(dev->dev_private, args->addr, args->size,
				   args->flags & AMDGPU_GEM_USERPTR_READONLY);
	if (IS_ERR(bo))
		return PTR_ERR(bo);

	if (args->flags & AMDGPU_GEM_USERPTR_VALIDATE) {
		ret = emu_userptr_check_vma(args->addr,
					    args->flags & AMDGPU_GEM_USERPTR_ANONONLY);
		if (!ret)
			ret = emu_bo_pin_gem_userptr(bo);
		if (ret)
			goto out;
	}
	ret = drm_gem_handle_create(file, &bo->base, &handle);
	if (!ret)
		args->handle = handle;
out:
	emu_bo_put(bo);
	return ret;
}

/* The domains a buffer was created for (amdgpu: bo->preferred_domains). */
static u32 emu_bo_preferred_domains(const struct emu_bo *bo)
{
	if (bo->domains)
		return bo->domains;
	return bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM ?
		AMDGPU_GEM_DOMAIN_VRAM : AMDGPU_GEM_DOMAIN_GTT;
}

#if EMU_HAS_GEM_CHECKPOINT
/*
 * AMDGPU_GEM_OP_GET_MAPPING_INFO (6.18): the mappings of @bo in the file's VM,
 * as many as fit in the caller's array; num_entries says how many there are,
 * and nothing is copied when they do not all fit. A buffer KFD maps in this VM
 * shares its mapping list with the file's handle of it (amdgpu_gem_object_open
 * finds KFD's bo_va and takes a reference), so its KFD mappings are listed too.
 */
static int emu_gem_mapping_info(struct emu_drm_file *ef, struct emu_bo *bo,
				struct drm_amdgpu_gem_op *args)
{
	struct drm_amdgpu_gem_vm_entry *entries;
	struct emu_va_mapping *m;
	u32 count = 0;
	int ret = 0;

	if (args->num_entries > INT_MAX / sizeof(*entries))
		return -EINVAL;
	entries = kvcalloc(args->num_entries ?: 1, sizeof(*entries), GFP_KERNEL);
	if (!entries)
		return -ENOMEM;
	mutex_lock(&ef->vm.lock);
	for (m = emu_vm_first(&ef->vm); m; m = emu_vm_next(m)) {
		if (m->bo != bo)
			continue;
		if (count < args->num_entries) {
			entries[count].addr = m->start;
			entries[count].size = m->last - m->start + 1;
			entries[count].offset = m->bo_offset;
			entries[count].flags = m->flags;
		}
		count++;
	}
	mutex_unlock(&ef->vm.lock);
	if (count && count <= args->num_entries &&
	    copy_to_user(u64_to_user_ptr(args->value), entries, count * sizeof(*entries)))
		ret = -EFAULT;
	if (!ret)
		args->num_entries = count;
	kvfree(entries);
	return ret;
}
#endif

int emu_amdgpu_gem_op_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_amdgpu_gem_op *args = data;
	struct drm_amdgpu_gem_create_in info = {};
	struct drm_gem_object *obj;
	struct emu_bo *bo;
	int ret = 0;

#if EMU_HAS_GEM_CHECKPOINT
	if (args->padding)
		return -EINVAL;
#endif
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_emu_bo(obj);
	switch (args->op) {
	case AMDGPU_GEM_OP_GET_GEM_CREATE_INFO:
		info.bo_size = obj->size;
		info.alignment = bo->alignment;
		info.domains = emu_bo_preferred_domains(bo);
		info.domain_flags = bo->gem_flags;
		if (copy_to_user(u64_to_user_ptr(args->value), &info, sizeof(info)))
			ret = -EFAULT;
		break;
	case AMDGPU_GEM_OP_SET_PLACEMENT:
		if (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
			ret = -EPERM;
		/* amdgpu: another device's buffer never moves into this one's VRAM */
		else if (bo->import_dmabuf && (args->value & AMDGPU_GEM_DOMAIN_VRAM))
			ret = -EINVAL;
		else
			bo->domains = args->value & (AMDGPU_GEM_DOMAIN_VRAM |
						     AMDGPU_GEM_DOMAIN_GTT |
						     AMDGPU_GEM_DOMAIN_CPU);
		break;
#if EMU_HAS_GEM_CHECKPOINT
	case AMDGPU_GEM_OP_GET_MAPPING_INFO:
		ret = emu_gem_mapping_info(file->driver_priv, bo, args);
		break;
#endif
	default:
		ret = -EINVAL;
	}
	drm_gem_object_put(obj);
	return ret;
}

#if EMU_HAS_GEM_CHECKPOINT
/*
 * DRM_IOCTL_AMDGPU_GEM_LIST_HANDLES (6.18): every GEM object of the file, in
 * handle order. An array too small for them all gets nothing but their number;
 * objects added between the count and the walk end it with -EAGAIN.
 */
int emu_amdgpu_gem_list_handles_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_amdgpu_gem_list_handles *args = data;
	struct drm_amdgpu_gem_list_handles_entry *entries;
	struct drm_gem_object *obj;
	u32 count = 0, i = 0;
	int id, ret = 0;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, obj, id)
		count++;
	spin_unlock(&file->table_lock);
	if (args->num_entries < count || !count) {
		args->num_entries = count;
		return 0;
	}
	entries = kvcalloc(count, sizeof(*entries), GFP_KERNEL);
	if (!entries)
		return -ENOMEM;
	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, obj, id) {
		struct emu_bo *bo = to_emu_bo(obj);

		if (i >= count) {
			ret = -EAGAIN;
			break;
		}
		entries[i].gem_handle = id;
		entries[i].size = obj->size;
		entries[i].preferred_domains = emu_bo_preferred_domains(bo);
		entries[i].alloc_flags = bo->gem_flags & EMU_GEM_CREATE_FLAGS;
		/* TTM's page_alignment: pages, whatever the header says */
		entries[i].alignment = ALIGN(bo->alignment, PAGE_SIZE) >> PAGE_SHIFT;
		/* only a dma-buf of another device is an import; one of this GPU is its buffer */
		if (bo->import_dmabuf)
			entries[i].flags |= AMDGPU_GEM_LIST_HANDLES_FLAG_IS_IMPORT;
		i++;
	}
	spin_unlock(&file->table_lock);
	args->num_entries = i;
	if (!ret && copy_to_user(u64_to_user_ptr(args->entries), entries, count * sizeof(*entries)))
		ret = -EFAULT;
	kvfree(entries);
	return ret;
}
#endif

int emu_amdgpu_gem_metadata_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	struct drm_amdgpu_gem_metadata *args = data;
	struct drm_gem_object *obj;
	struct emu_bo *bo;
	void *md = NULL;
	int ret = 0;

	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_emu_bo(obj);
	if (args->op == AMDGPU_GEM_METADATA_OP_GET_METADATA) {
		mutex_lock(&bo->vmap_lock);
		args->data.flags = bo->md_flags;
		args->data.tiling_info = bo->md_tiling;
		args->data.data_size_bytes = bo->md_size;
		if (bo->md_size)
			memcpy(args->data.data, bo->md, bo->md_size);
		mutex_unlock(&bo->vmap_lock);
	} else if (args->op == AMDGPU_GEM_METADATA_OP_SET_METADATA) {
		if (args->data.data_size_bytes > sizeof(args->data.data)) {
			ret = -EINVAL;
			goto out;
		}
		if (args->data.data_size_bytes) {
			md = kmemdup(args->data.data, args->data.data_size_bytes, GFP_KERNEL);
			if (!md) {
				ret = -ENOMEM;
				goto out;
			}
		}
		mutex_lock(&bo->vmap_lock);
		swap(bo->md, md);
		bo->md_size = args->data.data_size_bytes;
		bo->md_flags = args->data.flags;
		bo->md_tiling = args->data.tiling_info;
		mutex_unlock(&bo->vmap_lock);
		kfree(md);
	} else {
		ret = -EINVAL;
	}
out:
	drm_gem_object_put(obj);
	return ret;
}

/* ---- GEM_VA ---------------------------------------------------------------- */

int emu_amdgpu_gem_va_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	const u32 valid_flags = AMDGPU_VM_DELAY_UPDATE | AMDGPU_VM_PAGE_READABLE |
		AMDGPU_VM_PAGE_WRITEABLE | AMDGPU_VM_PAGE_EXECUTABLE |
		AMDGPU_VM_MTYPE_MASK | AMDGPU_VM_PAGE_NOALLOC;
	const u32 prt_flags = AMDGPU_VM_DELAY_UPDATE | AMDGPU_VM_PAGE_PRT;
	struct drm_amdgpu_gem_va *args = data;
	struct emu_drm_file *ef = file->driver_priv;
	u64 vm_size = EMU_VM_SIZE - EMU_VA_RESERVED_SIZE;
	struct drm_gem_object *obj = NULL;
	struct emu_bo *bo = NULL;
	u64 va, size, offset;
	int ret;

	if (args->va_address < EMU_VA_RESERVED_SIZE)
		return -EINVAL;
	if (args->va_address >= EMU_GMC_HOLE_START && args->va_address < EMU_GMC_HOLE_END)
		return -EINVAL;
	args->va_address &= EMU_GMC_HOLE_MASK;
	if (args->va_address + args->map_size > vm_size)
		return -EINVAL;
	if ((args->flags & ~valid_flags) && (args->flags & ~prt_flags))
		return -EINVAL;
	switch (args->operation) {
	case AMDGPU_VA_OP_MAP:
	case AMDGPU_VA_OP_UNMAP:
	case AMDGPU_VA_OP_CLEAR:
	case AMDGPU_VA_OP_REPLACE:
		break;
	default:
		return -EINVAL;
	}
	/* partially resident textures: nothing backs them here */
	if (args->flags & AMDGPU_VM_PAGE_PRT)
		return args->operation == AMDGPU_VA_OP_CLEAR ? 0 : -EINVAL;

	if (args->operation != AMDGPU_VA_OP_CLEAR) {
		obj = drm_gem_object_lookup(file, args->handle);
		if (!obj)
			return -ENOENT;
		bo = to_emu_bo(obj);
	}

	va = args->va_address;
	size = args->map_size;
	offset = args->offset_in_bo;
	switch (args->operation) {
	case AMDGPU_VA_OP_MAP:
	case AMDGPU_VA_OP_REPLACE:
		/* amdgpu_vm_bo_map's parameter checks */
		ret = -EINVAL;
		if ((va | offset | size) & ~PAGE_MASK)
			break;
		if (va + size <= va || offset + size <= offset)
			break;
		if (offset + size > obj->size || va + size - 1 >= EMU_VM_SIZE)
			break;
		if (args->operation == AMDGPU_VA_OP_REPLACE)
			emu_vm_clear(&ef->vm, va, size);
		/* amdgpu_vm_bo_map keeps the flags as given; MAPPING_INFO hands them back */
		ret = emu_vm_map(&ef->vm, bo, va, offset, size, args->flags);
		break;
	case AMDGPU_VA_OP_UNMAP:
		ret = emu_vm_unmap_at(&ef->vm, bo, va);
		break;
	default:
		ret = 0;
		if (va + size < va || (va | size) & ~PAGE_MASK)
			ret = -EINVAL;
		else
			emu_vm_clear(&ef->vm, va, size);
		break;
	}
	if (obj)
		drm_gem_object_put(obj);
	return ret;
}

/* ---- contexts -------------------------------------------------------------- */

#define EMU_MAX_CTX		4096	/* AMDGPU_VM_MAX_NUM_CTX */

static void emu_ctx_release(struct kref *ref)
{
	kfree(container_of(ref, struct emu_ctx, ref));
}

void emu_ctx_put(struct emu_ctx *ctx)
{
	kref_put(&ctx->ref, emu_ctx_release);
}

struct emu_ctx *emu_ctx_get(struct emu_drm_file *ef, u32 id)
{
	struct emu_ctx *ctx;

	mutex_lock(&ef->lock);
	ctx = idr_find(&ef->ctxs, id);
	if (ctx)
		kref_get(&ctx->ref);
	mutex_unlock(&ef->lock);
	return ctx;
}

static bool emu_ctx_priority_valid(s32 prio)
{
	switch (prio) {
	case AMDGPU_CTX_PRIORITY_UNSET:
	case AMDGPU_CTX_PRIORITY_VERY_LOW:
	case AMDGPU_CTX_PRIORITY_LOW:
	case AMDGPU_CTX_PRIORITY_NORMAL:
	case AMDGPU_CTX_PRIORITY_HIGH:
	case AMDGPU_CTX_PRIORITY_VERY_HIGH:
		return true;
	default:
		return false;
	}
}

static int emu_ctx_alloc(struct emu_drm_file *ef, struct drm_file *file, s32 prio, u32 *id)
{
	struct emu_ctx *ctx;
	int ret;

	if (prio > AMDGPU_CTX_PRIORITY_NORMAL && !capable(CAP_SYS_NICE) &&
	    !drm_is_current_master(file))
		return -EACCES;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	kref_init(&ctx->ref);
	spin_lock_init(&ctx->lock);
	init_waitqueue_head(&ctx->wq);
	ctx->next_seq[0] = ctx->next_seq[1] = 1;
	ctx->reset_counter = atomic_read(&ef->gpu->reset_counter);
	ctx->reset_counter_query = ctx->reset_counter;

	mutex_lock(&ef->lock);
	ret = idr_alloc(&ef->ctxs, ctx, 1, EMU_MAX_CTX, GFP_KERNEL);
	mutex_unlock(&ef->lock);
	if (ret < 0) {
		kfree(ctx);
		return ret;
	}
	ctx->id = ret;
	*id = ret;
	return 0;
}

int emu_amdgpu_ctx_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_ctx *args = data;
	struct emu_drm_file *ef = file->driver_priv;
	struct emu_gpu *gpu = dev->dev_private;
	s32 prio = args->in.priority;
	u32 id = args->in.ctx_id;
	u32 op = args->in.op;		/* "out" overlays "in" */
	struct emu_ctx *ctx;
	int resets, ret;

	/* garbage in the priority field is accepted for compatibility */
	if (!emu_ctx_priority_valid(prio))
		prio = AMDGPU_CTX_PRIORITY_NORMAL;

	switch (op) {
	case AMDGPU_CTX_OP_ALLOC_CTX:
		ret = emu_ctx_alloc(ef, file, prio, &id);
		args->out.alloc.ctx_id = id;
		return ret;
	case AMDGPU_CTX_OP_FREE_CTX:
		mutex_lock(&ef->lock);
		ctx = idr_remove(&ef->ctxs, id);
		mutex_unlock(&ef->lock);
		if (!ctx)
			return -EINVAL;
		emu_ctx_put(ctx);
		return 0;
	case AMDGPU_CTX_OP_QUERY_STATE:
	case AMDGPU_CTX_OP_QUERY_STATE2:
		ctx = emu_ctx_get(ef, id);
		if (!ctx)
			return -EINVAL;
		resets = atomic_read(&gpu->reset_counter);
		args->out.state.flags = 0;
		args->out.state.hangs = 0;
		args->out.state.reset_status = AMDGPU_CTX_NO_RESET;
		spin_lock(&ctx->lock);
		if (op == AMDGPU_CTX_OP_QUERY_STATE) {
			if (ctx->reset_counter_query != resets)
				args->out.state.reset_status = AMDGPU_CTX_UNKNOWN_RESET;
			ctx->reset_counter_query = resets;
		} else {
			if (ctx->reset_counter != resets)
				args->out.state.flags |= AMDGPU_CTX_QUERY2_FLAGS_RESET;
			if (ctx->guilty)
				args->out.state.flags |= AMDGPU_CTX_QUERY2_FLAGS_GUILTY;
		}
		spin_unlock(&ctx->lock);
		emu_ctx_put(ctx);
		return 0;
	case AMDGPU_CTX_OP_GET_STABLE_PSTATE:
	case AMDGPU_CTX_OP_SET_STABLE_PSTATE:
		ctx = emu_ctx_get(ef, id);
		if (!ctx)
			return -EINVAL;
		emu_ctx_put(ctx);
		if (op == AMDGPU_CTX_OP_SET_STABLE_PSTATE)
			return (args->in.flags & AMDGPU_CTX_STABLE_PSTATE_FLAGS_MASK) >
				AMDGPU_CTX_STABLE_PSTATE_PEAK ? -EINVAL : 0;
		args->out.pstate.flags = AMDGPU_CTX_STABLE_PSTATE_NONE;
		return 0;
	default:
		return -EINVAL;
	}
}

/* ---- BO lists -------------------------------------------------------------- */

static void emu_bo_list_release(struct kref *ref)
{
	struct emu_bo_list *list = container_of(ref, struct emu_bo_list, ref);
	unsigned int i;

	for (i = 0; i < list->n; i++)
		emu_bo_put(list->bos[i]);
	kvfree(list);
}

void emu_bo_list_put(struct emu_bo_list *list)
{
	kref_put(&list->ref, emu_bo_list_release);
}

struct emu_bo_list *emu_bo_list_lookup(struct emu_drm_file *ef, u32 handle)
{
	struct emu_bo_list *list;

	mutex_lock(&ef->lock);
	list = idr_find(&ef->bo_lists, handle);
	if (list)
		kref_get(&list->ref);
	mutex_unlock(&ef->lock);
	return list;
}

/*
 * A list from @n user entries of @entry_size bytes (shorter or longer than
 * ours is fine, as in amdgpu); unknown handles are -ENOENT, userptr BOs of
 * another process -EPERM.
 */
int emu_bo_list_from_user(struct drm_file *file, u64 ptr, u32 n, u32 entry_size,
			  struct emu_bo_list **out)
{
	const u32 bytes = min_t(u32, entry_size, sizeof(struct drm_amdgpu_bo_list_entry));
	struct drm_amdgpu_bo_list_entry e;
	struct drm_gem_object *obj;
	struct emu_bo_list *list;
	void __user *uptr = u64_to_user_ptr(ptr);
	int ret = 0;
	u32 i;

	if (n > (INT_MAX - sizeof(*list)) / sizeof(list->bos[0]))
		return -ENOMEM;
	list = kvzalloc(struct_size(list, bos, n), GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	kref_init(&list->ref);
	for (i = 0; i < n; i++, uptr += entry_size) {
		memset(&e, 0, sizeof(e));
		if (copy_from_user(&e, uptr, bytes)) {
			ret = -EFAULT;
			break;
		}
		obj = drm_gem_object_lookup(file, e.bo_handle);
		if (!obj) {
			ret = -ENOENT;
			break;
		}
		list->bos[list->n++] = to_emu_bo(obj);
		if (to_emu_bo(obj)->user_mm && to_emu_bo(obj)->user_mm != current->mm) {
			ret = -EPERM;
			break;
		}
	}
	if (ret) {
		emu_bo_list_put(list);
		return ret;
	}
	*out = list;
	return 0;
}

int emu_amdgpu_bo_list_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_bo_list *args = data;
	struct emu_drm_file *ef = file->driver_priv;
	u32 handle = args->in.list_handle;
	struct emu_bo_list *list = NULL, *old;
	int ret;

	switch (args->in.operation) {
	case AMDGPU_BO_LIST_OP_CREATE:
	case AMDGPU_BO_LIST_OP_UPDATE:
		ret = emu_bo_list_from_user(file, args->in.bo_info_ptr, args->in.bo_number,
					    args->in.bo_info_size, &list);
		if (ret)
			return ret;
		mutex_lock(&ef->lock);
		if (args->in.operation == AMDGPU_BO_LIST_OP_CREATE) {
			ret = idr_alloc(&ef->bo_lists, list, 1, 0, GFP_KERNEL);
			old = NULL;
			if (ret >= 0) {
				handle = ret;
				ret = 0;
			}
		} else {
			old = idr_replace(&ef->bo_lists, list, handle);
			ret = IS_ERR(old) ? PTR_ERR(old) : 0;
		}
		mutex_unlock(&ef->lock);
		if (ret) {
			emu_bo_list_put(list);
			return ret;
		}
		if (old)
			emu_bo_list_put(old);
		break;
	case AMDGPU_BO_LIST_OP_DESTROY:
		mutex_lock(&ef->lock);
		list = idr_remove(&ef->bo_lists, handle);
		mutex_unlock(&ef->lock);
		if (list)
			emu_bo_list_put(list);
		handle = 0;
		break;
	default:
		return -EINVAL;
	}
	memset(args, 0, sizeof(*args));
	args->out.list_handle = handle;
	return 0;
}
