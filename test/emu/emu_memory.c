// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: KFD memory objects: ALLOC/FREE/MAP/UNMAP, dma-buf info, import
 * and export, and available memory.
 *
 * A KFD memory object is an idr entry of its process-device (pdd) pointing at
 * a GEM BO of that GPU.  Mapping it to a GPU inserts it into the GPU VM of
 * the render-node file that pdd acquired, at the BO's VA.  Its idr id is the
 * lowest free one from 0 (kfd_process_device_create_obj_handle), except on a
 * CRIU restore, which takes exactly the saved id.
 *
 * Sharing between processes follows the kernel the module is built for (see
 * EMU_KFD_IMPORTS_THROUGH_DRM): an imported object points at the exporter's
 * BO when both are of one GPU; from 6.8 on, one of another GPU points at a BO
 * of the importing GPU over the exporter's pages, which all of KFD's imports
 * of that dma-buf on that GPU share, as they share one GEM handle in KFD's
 * DRM file of that GPU.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/dma-buf.h>
#include <linux/uaccess.h>
#include <drm/drm_device.h>
#include <drm/drm_prime.h>
#include <drm/drm_vma_manager.h>
#include <drm/amdgpu_drm.h>

#include "emu.h"

static int emu_mem_insert(struct emu_pdd *pdd, struct emu_kfd_mem *mem, int handle)
{
	int id;

	if (handle >= 0) {
		/* CRIU restore: exactly the old id, or nothing */
		id = idr_alloc(&pdd->mem_idr, mem, handle, handle + 1, GFP_KERNEL);
		if (id < 0)
			return -ENOMEM;
	} else {
		id = idr_alloc(&pdd->mem_idr, mem, 0, 0, GFP_KERNEL);
		if (id < 0)
			return -EFAULT;
	}
	mem->handle = id;
	return 0;
}

static struct emu_kfd_mem *emu_mem_wrap(struct emu_pdd *pdd, struct emu_bo *bo,
					u64 va, u32 flags, int handle)
{
	struct emu_kfd_mem *mem;
	int ret;

	mem = kzalloc(sizeof(*mem), GFP_KERNEL);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	mem->bo = bo;
	mem->pdd = pdd;
	mem->va = va;
	mem->size = bo->base.size;
	mem->flags = flags;

	ret = drm_vma_node_allow_once(&bo->base.vma_node, pdd->drm_priv);
	if (ret)
		goto err;
	ret = emu_mem_insert(pdd, mem, handle);
	if (ret) {
		drm_vma_node_revoke(&bo->base.vma_node, pdd->drm_priv);
		goto err;
	}
	return mem;
err:
	kfree(mem);
	return ERR_PTR(ret);
}

/*
 * Create a memory object on @pdd; @handle < 0 picks the next free id.  A
 * USERPTR object pins its pages now unless it is being restored (@handle >= 0),
 * in which case CRIU RESUME pins them once the task's memory is back.
 */
struct emu_kfd_mem *emu_mem_create(struct emu_pdd *pdd, u64 va, u64 size,
				   u32 flags, u64 user_addr, int handle)
{
	struct emu_kfd_mem *mem;
	struct emu_bo *bo;
	u64 bo_size = size;
	int ret;

	/* AQL ring buffers are allocated once and mapped twice */
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM)
		bo_size = PAGE_ALIGN(size) >> 1;
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
		if (!user_addr || offset_in_page(user_addr))
			return ERR_PTR(-EINVAL);
		if (!access_ok(u64_to_user_ptr(user_addr), PAGE_ALIGN(bo_size)))
			return ERR_PTR(-EFAULT);
	}

	bo = emu_bo_create(pdd->gpu, bo_size, flags, user_addr);
	if (IS_ERR(bo))
		return ERR_CAST(bo);

	if ((flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) && handle < 0) {
		ret = emu_bo_pin_user(bo, current->mm, false);
		if (ret)
			goto err;
	}

	mem = emu_mem_wrap(pdd, bo, va, flags, handle);
	if (IS_ERR(mem)) {
		ret = PTR_ERR(mem);
		goto err;
	}
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
		pdd->vram_usage += mem->size;
	return mem;

err:
	emu_bo_put(bo);
	return ERR_PTR(ret);
}

static void emu_kfd_import_put(struct emu_bo *bo);

void emu_mem_destroy(struct emu_kfd_mem *mem)
{
	struct emu_pdd *pdd = mem->pdd;

	emu_mem_unmap_all(mem);
	idr_remove(&pdd->mem_idr, mem->handle);
	drm_vma_node_revoke(&mem->bo->base.vma_node, pdd->drm_priv);
	if ((mem->flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) && !mem->imported)
		pdd->vram_usage -= min(pdd->vram_usage, mem->size);
	if (mem->dmabuf)
		dma_buf_put(mem->dmabuf);
	if (mem->imported && mem->bo->import_dmabuf)
		emu_kfd_import_put(mem->bo);
	emu_bo_put(mem->bo);
	kfree(mem);
}

/* The page permissions KFD gives a BO in the GPU VM (amdgpu_amdkfd_gpuvm). */
static u32 emu_mem_vm_flags(u32 flags)
{
	u32 vm_flags = AMDGPU_VM_PAGE_READABLE;

	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)
		vm_flags |= AMDGPU_VM_PAGE_WRITEABLE;
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE)
		vm_flags |= AMDGPU_VM_PAGE_EXECUTABLE;
	return vm_flags;
}

/* Map @mem into the GPU VM of @peer at its VA; mapping twice is a no-op. */
int emu_mem_map(struct emu_kfd_mem *mem, struct emu_pdd *peer)
{
	u64 size = mem->bo->base.size;
	u32 vm_flags = emu_mem_vm_flags(mem->flags);
	int ret;

	if (test_bit(peer->index, &mem->mapped))
		return 0;
	ret = emu_vm_map(peer->vm, mem->bo, mem->va, 0, size, vm_flags);
	if (!ret && (mem->flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM)) {
		ret = emu_vm_map(peer->vm, mem->bo, mem->va + size, 0, size,
				 vm_flags);
		if (ret)
			emu_vm_unmap_at(peer->vm, mem->bo, mem->va);
	}
	if (!ret)
		set_bit(peer->index, &mem->mapped);
	return ret;
}

/* Only KFD's own mappings: a GEM_VA mapping of the same BO stays. */
static void emu_mem_unmap(struct emu_kfd_mem *mem, struct emu_pdd *peer)
{
	if (!test_and_clear_bit(peer->index, &mem->mapped))
		return;
	if (!peer->vm)
		return;
	emu_vm_unmap_at(peer->vm, mem->bo, mem->va);
	if (mem->flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM)
		emu_vm_unmap_at(peer->vm, mem->bo, mem->va + mem->bo->base.size);
}

void emu_mem_unmap_all(struct emu_kfd_mem *mem)
{
	struct emu_process *p = mem->pdd->p;
	unsigned int i;

	for (i = 0; i < p->n_pdds; i++)
		emu_mem_unmap(mem, &p->pdds[i]);
}

/* The mmap offset KFD reports for @mem; /dev/kfd offsets use @gpu_id. */
u64 emu_mem_offset(struct emu_kfd_mem *mem, u32 gpu_id)
{
	if (mem->flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL)
		return EMU_MMAP_TYPE_DOORBELL | EMU_MMAP_GPU_ID(gpu_id);
	if (mem->flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
		return EMU_MMAP_TYPE_MMIO | EMU_MMAP_GPU_ID(gpu_id);
	return emu_bo_mmap_offset(mem->bo);
}

void emu_pdd_free_memory(struct emu_pdd *pdd)
{
	struct emu_kfd_mem *mem;
	int id;

	idr_for_each_entry(&pdd->mem_idr, mem, id)
		emu_mem_destroy(mem);
}

/* ---- ioctls ----------------------------------------------------------- */

int emu_ioctl_alloc_memory(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_alloc_memory_of_gpu_args *args = data;
	u32 flags = args->flags;
	struct emu_kfd_mem *mem;
	struct emu_pdd *pdd;
	u64 user_addr = 0;
	int ret;

	if (!args->size)
		return -EINVAL;
	/* KFD 1.19 (7.3): a secondary context has no user pointers */
	if (emu_process_is_secondary(p) && (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR))
		return -EOPNOTSUPP;
	if (!(flags & EMU_ALLOC_DOMAIN_MASK))
		return -EINVAL;

	mutex_lock(&p->lock);
	pdd = emu_pdd_bound(p, args->gpu_id);
	if (IS_ERR(pdd)) {
		ret = PTR_ERR(pdd);
		goto out;
	}

	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) {
		if (args->size != EMU_DOORBELL_SLICE) {
			ret = -EINVAL;
			goto out;
		}
		ret = emu_pdd_doorbells(pdd);
		if (ret)
			goto out;
	} else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) {
		if (args->size != PAGE_SIZE) {
			ret = -EINVAL;
			goto out;
		}
	} else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
		user_addr = untagged_addr(args->mmap_offset);
		if (!user_addr) {
			ret = -EINVAL;
			goto out;
		}
	}

	mem = emu_mem_create(pdd, args->va_addr, args->size, flags, user_addr, -1);
	if (IS_ERR(mem)) {
		ret = PTR_ERR(mem);
		goto out;
	}

	/* the handle and /dev/kfd offsets carry the gpu_id the caller used */
	args->handle = EMU_HANDLE(args->gpu_id, mem->handle);
	args->mmap_offset = emu_bo_mmap_offset(mem->bo);
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
		args->mmap_offset = EMU_MMAP_TYPE_MMIO | EMU_MMAP_GPU_ID(args->gpu_id);
	ret = 0;
out:
	mutex_unlock(&p->lock);
	return ret;
}

int emu_ioctl_free_memory(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_free_memory_of_gpu_args *args = data;
	struct emu_kfd_mem *mem;
	struct emu_pdd *pdd;
	int ret = 0;

	mutex_lock(&p->lock);
	if (p->signal_handle && p->signal_handle == args->handle) {
		ret = -EPERM;
		goto out;
	}
	pdd = emu_pdd_by_user_id(p, EMU_HANDLE_GPU(args->handle));
	mem = pdd ? idr_find(&pdd->mem_idr, EMU_HANDLE_IDR(args->handle)) : NULL;
	if (!mem)
		ret = -EINVAL;
	else if (mem->mapped)
		ret = -EBUSY;
	else
		emu_mem_destroy(mem);
out:
	mutex_unlock(&p->lock);
	return ret;
}

static u32 *emu_copy_device_ids(u64 ptr, u32 n)
{
	u32 *ids;

	ids = kmalloc_array(n, sizeof(*ids), GFP_KERNEL);
	if (!ids)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(ids, u64_to_user_ptr(ptr), n * sizeof(*ids))) {
		kfree(ids);
		return ERR_PTR(-EFAULT);
	}
	return ids;
}

/*
 * MAP_MEMORY_TO_GPU and UNMAP_MEMORY_FROM_GPU: the BO by @handle, then each
 * GPU of the list from *@n_success on; *@n_success counts the GPUs done, so
 * that a caller may call again after an error and go on where it stopped.
 * Mapping needs a VM on the BO's GPU and on each peer; unmapping a BO mapped
 * nowhere is -EINVAL.
 */
static int emu_mem_map_devices(struct emu_process *p, u64 handle, u64 ids_ptr, u32 n_devices, u32 *n_success,
			       bool map)
{
	struct emu_pdd *pdd, *peer;
	struct emu_kfd_mem *mem;
	u32 *ids, i;
	int ret = 0;

	if (!n_devices || *n_success > n_devices)
		return -EINVAL;
	ids = emu_copy_device_ids(ids_ptr, n_devices);
	if (IS_ERR(ids))
		return PTR_ERR(ids);

	mutex_lock(&p->lock);
	pdd = map ? emu_pdd_bound(p, EMU_HANDLE_GPU(handle)) : emu_pdd_by_user_id(p, EMU_HANDLE_GPU(handle));
	if (IS_ERR_OR_NULL(pdd)) {
		ret = pdd ? PTR_ERR(pdd) : -EINVAL;
		goto out;
	}
	mem = idr_find(&pdd->mem_idr, EMU_HANDLE_IDR(handle));
	if (!mem) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = *n_success; i < n_devices; i++) {
		peer = map ? emu_pdd_bound(p, ids[i]) : emu_pdd_by_user_id(p, ids[i]);
		if (IS_ERR_OR_NULL(peer)) {
			ret = peer ? PTR_ERR(peer) : -EINVAL;
			goto out;
		}
		if (map) {
			ret = emu_mem_map(mem, peer);
			if (ret)
				goto out;
		} else {
			if (!mem->mapped) {
				/* not mapped on any GPU at all */
				ret = -EINVAL;
				goto out;
			}
			emu_mem_unmap(mem, peer);
		}
		*n_success = i + 1;
	}
out:
	mutex_unlock(&p->lock);
	kfree(ids);
	return ret;
}

int emu_ioctl_map_memory(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_map_memory_to_gpu_args *args = data;

	return emu_mem_map_devices(p, args->handle, args->device_ids_array_ptr, args->n_devices,
				   &args->n_success, true);
}

int emu_ioctl_unmap_memory(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_unmap_memory_from_gpu_args *args = data;

	return emu_mem_map_devices(p, args->handle, args->device_ids_array_ptr, args->n_devices,
				   &args->n_success, false);
}

int emu_ioctl_available_memory(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_get_available_memory_args *args = data;
	struct emu_pdd *pdd;
	s64 avail;

	mutex_lock(&p->lock);
	pdd = emu_pdd_by_user_id(p, args->gpu_id);
	mutex_unlock(&p->lock);
	if (!pdd)
		return -EINVAL;
	avail = pdd->gpu->vram_size - atomic64_read(&pdd->gpu->vram_used);
	args->available = avail > 0 ? avail : 0;
	return 0;
}

/*
 * The KFD domain a BO is shared as (IMPORT_DMABUF's alloc_flags, GET_DMABUF_INFO's flags): VRAM if
 * its preferred domains include VRAM, else GTT if they include GTT, else 0: user pages, doorbells,
 * MMIO and system-memory buffers cannot be shared through KFD (6.1 and 7.x alike). A render
 * buffer's preferred domains are those GEM_CREATE or SET_PLACEMENT gave it; a KFD allocation
 * prefers its own kind; another GPU's buffer imported here prefers GTT.
 */
static u32 emu_bo_kfd_domain(const struct emu_bo *bo)
{
	u32 vram = bo->domains ? bo->domains & AMDGPU_GEM_DOMAIN_VRAM :
				 bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM;
	u32 gtt = bo->domains ? bo->domains & AMDGPU_GEM_DOMAIN_GTT :
				bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT;

	if (vram)
		return KFD_IOC_ALLOC_MEM_FLAGS_VRAM;
	return gtt ? KFD_IOC_ALLOC_MEM_FLAGS_GTT : 0;
}

/* Whether amdgpu made @bo with CPU_ACCESS_REQUIRED: public KFD VRAM, or a GEM buffer asking for it. */
static bool emu_bo_cpu_access_required(const struct emu_bo *bo)
{
	if (bo->domains)
		return bo->gem_flags & AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED;
	return (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) &&
	       (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC);
}

/*
 * GET_DMABUF_INFO (amdgpu_amdkfd_get_dmabuf_info, 6.1 and 7.x): the exporting GPU, the size, and
 * as flags only the domain plus PUBLIC if the buffer must be CPU-visible.
 */
int emu_ioctl_get_dmabuf_info(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_get_dmabuf_info_args *args = data;
	struct dma_buf *dmabuf;
	struct emu_bo *bo;
	u32 domain;

	dmabuf = dma_buf_get(args->dmabuf_fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	bo = emu_bo_from_dmabuf(dmabuf);
	dma_buf_put(dmabuf);
	if (!bo)
		return -EINVAL;
	domain = emu_bo_kfd_domain(bo);
	if (!domain) {
		emu_bo_put(bo);
		return -EINVAL;
	}

	args->size = bo->base.size;
	args->gpu_id = bo->gpu->gpu_id;
	args->flags = domain;
	if (emu_bo_cpu_access_required(bo))
		args->flags |= KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
	args->metadata_size = 0;	/* no metadata is ever attached */
	emu_bo_put(bo);
	return 0;
}

#if EMU_KFD_IMPORTS_THROUGH_DRM
/*
 * KFD's imports of other GPUs' dma-bufs, one BO per dma-buf and importing GPU: 7.x imports through
 * drm_gem_prime_fd_to_handle into the one DRM file KFD has per GPU, whose PRIME lookup hands every
 * later import of the same dma-buf the BO the first one made.
 */
static LIST_HEAD(emu_kfd_imports);
static DEFINE_MUTEX(emu_kfd_imports_lock);

/* @gpu's import of @dmabuf (of @src's GPU), made or found, with a reference and one more user. */
static struct emu_bo *emu_kfd_import_get(struct emu_gpu *gpu, struct dma_buf *dmabuf,
					 struct emu_bo *src)
{
	struct emu_bo *bo;

	mutex_lock(&emu_kfd_imports_lock);
	list_for_each_entry(bo, &emu_kfd_imports, kfd_import_link) {
		if (bo->gpu == gpu && bo->import_dmabuf == dmabuf) {
			drm_gem_object_get(&bo->base);
			goto found;
		}
	}
	bo = emu_bo_create_import(gpu, dmabuf, src);
	if (IS_ERR(bo))
		goto out;
	list_add(&bo->kfd_import_link, &emu_kfd_imports);
found:
	bo->kfd_import_users++;
out:
	mutex_unlock(&emu_kfd_imports_lock);
	return bo;
}

/* One user of a shared import less; the caller still drops its own reference. */
static void emu_kfd_import_put(struct emu_bo *bo)
{
	mutex_lock(&emu_kfd_imports_lock);
	if (bo->kfd_import_users && !--bo->kfd_import_users)
		list_del_init(&bo->kfd_import_link);
	mutex_unlock(&emu_kfd_imports_lock);
}
#else
static void emu_kfd_import_put(struct emu_bo *bo)
{
}
#endif

/*
 * The BO an IMPORT_DMABUF on @gpu points at, with a reference: the exporter's own when it is of
 * @gpu; up to 6.7 nothing else (amdgpu_amdkfd_gpuvm_import_dmabuf refuses another device's
 * buffer); from 6.8 on, for another GPU's buffer, @gpu's import of it (import_obj_create after
 * PRIME's import). amdgpu also imports other drivers' dma-bufs from 6.8 on; the emulator does not.
 */
static struct emu_bo *emu_kfd_import_bo(struct emu_gpu *gpu, struct dma_buf *dmabuf)
{
	struct emu_bo *src = emu_bo_from_dmabuf(dmabuf);

	if (!src)
		return ERR_PTR(-EINVAL);
	if (src->gpu == gpu)
		return src;
#if EMU_KFD_IMPORTS_THROUGH_DRM
	{
		struct emu_bo *bo = emu_kfd_import_get(gpu, dmabuf, src);

		emu_bo_put(src);
		return bo;
	}
#else
	emu_bo_put(src);
	return ERR_PTR(-EINVAL);
#endif
}

/*
 * IMPORT_DMABUF: a memory object of the caller for a buffer of a dma-buf, at @va_addr, writable
 * and executable, of the buffer's KFD domain; not counted in the process' VRAM usage. From 6.8 on
 * it keeps the dma-buf it came from: KFD hands out that one for it (emu_mem_get_dmabuf).
 */
int emu_ioctl_import_dmabuf(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_import_dmabuf_args *args = data;
	struct emu_kfd_mem *mem;
	struct dma_buf *dmabuf;
	struct emu_pdd *pdd;
	struct emu_bo *bo;
	u32 flags;
	int ret;

	mutex_lock(&p->lock);
	pdd = emu_pdd_bound(p, args->gpu_id);
	if (IS_ERR(pdd)) {
		ret = PTR_ERR(pdd);
		goto out;
	}

	dmabuf = dma_buf_get(args->dmabuf_fd);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto out;
	}
	bo = emu_kfd_import_bo(pdd->gpu, dmabuf);
	if (IS_ERR(bo)) {
		ret = PTR_ERR(bo);
		goto out_put;
	}
	flags = emu_bo_kfd_domain(bo);
	if (!flags) {
		ret = -EINVAL;
		goto out_bo;
	}
	flags |= KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
	mem = emu_mem_wrap(pdd, bo, args->va_addr, flags, -1);
	if (IS_ERR(mem)) {
		ret = PTR_ERR(mem);
		goto out_bo;
	}
	mem->imported = true;
	if (EMU_KFD_IMPORTS_THROUGH_DRM) {
		mem->dmabuf = dmabuf;
		dmabuf = NULL;
	}
	args->handle = EMU_HANDLE(args->gpu_id, mem->handle);
	ret = 0;
	goto out_put;

out_bo:
	if (bo->import_dmabuf)
		emu_kfd_import_put(bo);
	emu_bo_put(bo);
out_put:
	if (dmabuf)
		dma_buf_put(dmabuf);
out:
	mutex_unlock(&p->lock);
	return ret;
}

/*
 * The dma-buf KFD hands out for @mem, with a reference for the caller; the caller holds the
 * process lock. It is made at the first call and kept: EXPORT_DMABUF's from 6.4 on (KFD 1.12),
 * and from 6.8 on CRIU CHECKPOINT's and RESTORE's too. From 6.8 on it is the buffer's one dma-buf:
 * an imported object's is the dma-buf it was imported from; an allocation's is made through KFD's
 * GEM handle (drm_gem_prime_handle_to_dmabuf), which takes the buffer's dma-buf if a render node
 * already made one. It is read-write only if @mem is WRITABLE.
 */
struct dma_buf *emu_mem_get_dmabuf(struct emu_kfd_mem *mem)
{
	struct drm_gem_object *obj = &mem->bo->base;
	struct dma_buf *dmabuf = NULL;

	if (!mem->dmabuf) {
		if (EMU_KFD_IMPORTS_THROUGH_DRM) {
			mutex_lock(&obj->dev->object_name_lock);
			dmabuf = obj->dma_buf;
			if (dmabuf)
				get_dma_buf(dmabuf);
			mutex_unlock(&obj->dev->object_name_lock);
		}
		if (!dmabuf)
			dmabuf = obj->funcs->export(obj, mem->flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE ?
						    O_RDWR : 0);
		if (IS_ERR(dmabuf))
			return dmabuf;
		mem->dmabuf = dmabuf;
	}
	get_dma_buf(mem->dmabuf);
	return mem->dmabuf;
}

#if EMU_KFD_MINOR_VERSION >= 12
/*
 * EXPORT_DMABUF, as 6.4 (KFD 1.12) to 7.x do it: a memory object of the caller as a dma-buf fd
 * (emu_mem_get_dmabuf: every export of one object hands out another fd of the same dma-buf; from
 * 6.8 on, an imported object's is the one it came from). The handle's GPU must be one of the
 * process' (no VM needed), the handle one of its objects, else -EINVAL; user pages cannot be
 * shared (-EPERM). @flags go to the new fd as they are.
 */
int emu_ioctl_export_dmabuf(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_export_dmabuf_args *args = data;
	struct emu_kfd_mem *mem = NULL;
	struct dma_buf *dmabuf;
	struct emu_pdd *pdd;
	int fd;

	if (!emu_gpu_by_id(EMU_HANDLE_GPU(args->handle)))
		return -EINVAL;

	mutex_lock(&p->lock);
	pdd = emu_pdd_by_user_id(p, EMU_HANDLE_GPU(args->handle));
	if (pdd)
		mem = idr_find(&pdd->mem_idr, EMU_HANDLE_IDR(args->handle));
	if (!mem) {
		mutex_unlock(&p->lock);
		return -EINVAL;
	}
	dmabuf = emu_mem_get_dmabuf(mem);
	mutex_unlock(&p->lock);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);

	fd = dma_buf_fd(dmabuf, args->flags);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	args->dmabuf_fd = fd;
	return 0;
}
#endif
