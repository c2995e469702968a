// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: one DRM device per emulated GPU, GEM buffer objects backed by
 * kernel pages, and the per-file GPU virtual address space.
 */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/interval_tree_generic.h>
#include <linux/dma-buf.h>
#include <linux/iosys-map.h>
#include <drm/drm_drv.h>
#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_prime.h>
#include <drm/drm_vma_manager.h>
#include <drm/amdgpu_drm.h>

#include "emu.h"

/* ---- GPU VM: interval tree of mappings --------------------------------- */

#define emu_va_start(m)	((m)->start)
#define emu_va_last(m)	((m)->last)
INTERVAL_TREE_DEFINE(struct emu_va_mapping, rb, u64, __subtree_last,
		     emu_va_start, emu_va_last, static, emu_va_it)

static void emu_vm_init(struct emu_vm *vm, struct emu_gpu *gpu)
{
	mutex_init(&vm->lock);
	vm->va = RB_ROOT_CACHED;
	vm->gpu = gpu;
	vm->kfd_owner = NULL;
}

static void emu_vm_fini(struct emu_vm *vm)
{
	struct emu_va_mapping *m;

	mutex_lock(&vm->lock);
	while ((m = emu_va_it_iter_first(&vm->va, 0, U64_MAX))) {
		emu_va_it_remove(m, &vm->va);
		drm_gem_object_put(&m->bo->base);
		kfree(m);
	}
	mutex_unlock(&vm->lock);
	mutex_destroy(&vm->lock);
}

int emu_vm_map(struct emu_vm *vm, struct emu_bo *bo, u64 va, u64 bo_offset,
	       u64 size, u32 flags)
{
	struct emu_va_mapping *m;

	if (!size || va + size < va)
		return -EINVAL;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	m->start = va;
	m->last = va + size - 1;
	m->bo = bo;
	m->bo_offset = bo_offset;
	m->flags = flags;

	mutex_lock(&vm->lock);
	if (emu_va_it_iter_first(&vm->va, m->start, m->last)) {
		mutex_unlock(&vm->lock);
		kfree(m);
		return -EINVAL;
	}
	drm_gem_object_get(&bo->base);
	emu_va_it_insert(m, &vm->va);
	mutex_unlock(&vm->lock);
	return 0;
}

/* The mappings of @vm in address order; the caller holds vm->lock. */
struct emu_va_mapping *emu_vm_first(struct emu_vm *vm)
{
	return emu_va_it_iter_first(&vm->va, 0, U64_MAX);
}

struct emu_va_mapping *emu_vm_next(struct emu_va_mapping *m)
{
	return emu_va_it_iter_next(m, 0, U64_MAX);
}

/* Remove the mapping of @bo that starts at @va (amdgpu_vm_bo_unmap). */
int emu_vm_unmap_at(struct emu_vm *vm, struct emu_bo *bo, u64 va)
{
	struct emu_va_mapping *m;
	int ret = -ENOENT;

	mutex_lock(&vm->lock);
	m = emu_va_it_iter_first(&vm->va, va, va);
	if (m && m->start == va && m->bo == bo) {
		emu_va_it_remove(m, &vm->va);
		drm_gem_object_put(&m->bo->base);
		kfree(m);
		ret = 0;
	}
	mutex_unlock(&vm->lock);
	return ret;
}

/*
 * Unmap whatever lies in [@va, @va + @size), cutting mappings that straddle
 * the edges (AMDGPU_VA_OP_CLEAR).
 */
void emu_vm_clear(struct emu_vm *vm, u64 va, u64 size)
{
	u64 last = va + size - 1;
	struct emu_va_mapping *m, *next, *tail;

	if (!size)
		return;
	mutex_lock(&vm->lock);
	for (m = emu_va_it_iter_first(&vm->va, va, last); m; m = next) {
		next = emu_va_it_iter_next(m, va, last);
		emu_va_it_remove(m, &vm->va);
		if (m->last > last) {
			/* keep the part above the range; GFP_NOFAIL: no undo here */
			tail = kmemdup(m, sizeof(*m), GFP_KERNEL | __GFP_NOFAIL);
			tail->bo_offset += last + 1 - m->start;
			tail->start = last + 1;
			drm_gem_object_get(&tail->bo->base);
			emu_va_it_insert(tail, &vm->va);
		}
		if (m->start < va) {
			m->last = va - 1;
			emu_va_it_insert(m, &vm->va);
		} else {
			drm_gem_object_put(&m->bo->base);
			kfree(m);
		}
	}
	mutex_unlock(&vm->lock);
}

/*
 * What the GPU reaches at @va: the BO, the offset in it and how far the
 * mapping goes on, or -EFAULT for an unmapped address, a missing permission
 * or a BO without pages (a userptr not pinned yet).
 */
int emu_vm_resolve(struct emu_vm *vm, u64 va, bool write, struct emu_vm_seg *seg)
{
	struct emu_va_mapping *m;
	u32 need = write ? AMDGPU_VM_PAGE_WRITEABLE : AMDGPU_VM_PAGE_READABLE;
	int ret = -EFAULT;

	va &= EMU_GMC_HOLE_MASK;
	mutex_lock(&vm->lock);
	m = emu_va_it_iter_first(&vm->va, va, va);
	if (m && (m->flags & need) && emu_bo_has_pages(m->bo) &&
	    !(write && m->bo->user_readonly)) {
		seg->bo = m->bo;
		seg->offset = m->bo_offset + (va - m->start);
		seg->len = m->last - va + 1;
		drm_gem_object_get(&m->bo->base);
		ret = 0;
	}
	mutex_unlock(&vm->lock);
	return ret;
}

bool emu_vm_bo_is_mapped(struct emu_vm *vm, struct emu_bo *bo)
{
	struct emu_va_mapping *m;
	bool found = false;

	mutex_lock(&vm->lock);
	for (m = emu_va_it_iter_first(&vm->va, 0, U64_MAX); m && !found;
	     m = emu_va_it_iter_next(m, 0, U64_MAX))
		found = m->bo == bo;
	mutex_unlock(&vm->lock);
	return found;
}

/* ---- GEM buffer objects ------------------------------------------------ */

static void emu_bo_release_pages(struct emu_bo *bo)
{
	unsigned long i;

	if (!bo->pages)
		return;
	if (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
		if (bo->user_pinned)
			unpin_user_pages_dirty_lock(bo->pages, bo->npages,
						    !bo->user_readonly);
		bo->user_pinned = false;
	} else if (!bo->import_dmabuf) {
		/* an import's pages are the exporter's */
		for (i = 0; i < bo->npages; i++)
			if (bo->pages[i])
				__free_page(bo->pages[i]);
	}
	kvfree(bo->pages);
	bo->pages = NULL;
}

static void emu_bo_free(struct drm_gem_object *obj)
{
	struct emu_bo *bo = to_emu_bo(obj);

	WARN_ON(bo->vmap_count);
	if (bo->vaddr)
		vunmap(bo->vaddr);
	emu_bo_release_pages(bo);
	if (bo->vram_accounted)
		atomic64_sub(obj->size, &bo->gpu->vram_used);
	if (bo->gtt_accounted)
		atomic64_sub(obj->size, &bo->gpu->gtt_used);
	if (bo->user_mm)
		mmdrop(bo->user_mm);
	if (bo->import_dmabuf)
		dma_buf_put(bo->import_dmabuf);
	kfree(bo->md);
	drm_gem_object_release(obj);
	mutex_destroy(&bo->vmap_lock);
	kfree(bo);
	/* BOs can outlive every file of ours through exported dma-bufs */
	module_put(THIS_MODULE);
}

static struct sg_table *emu_bo_get_sg_table(struct drm_gem_object *obj)
{
	struct emu_bo *bo = to_emu_bo(obj);

	if (!bo->pages)
		return ERR_PTR(-EINVAL);
	return drm_prime_pages_to_sg(obj->dev, bo->pages, bo->npages);
}

void *emu_bo_kmap(struct emu_bo *bo)
{
	void *vaddr;

	if (!bo->pages)
		return NULL;
	mutex_lock(&bo->vmap_lock);
	if (!bo->vaddr)
		bo->vaddr = vmap(bo->pages, bo->npages, VM_MAP, PAGE_KERNEL);
	if (bo->vaddr)
		bo->vmap_count++;
	vaddr = bo->vaddr;
	mutex_unlock(&bo->vmap_lock);
	return vaddr;
}

void emu_bo_kunmap(struct emu_bo *bo)
{
	mutex_lock(&bo->vmap_lock);
	if (!WARN_ON(!bo->vmap_count) && !--bo->vmap_count) {
		vunmap(bo->vaddr);
		bo->vaddr = NULL;
	}
	mutex_unlock(&bo->vmap_lock);
}

static int emu_bo_vmap(struct drm_gem_object *obj, struct iosys_map *map)
{
	void *vaddr = emu_bo_kmap(to_emu_bo(obj));

	if (!vaddr)
		return -ENOMEM;
	iosys_map_set_vaddr(map, vaddr);
	return 0;
}

static void emu_bo_vunmap(struct drm_gem_object *obj, struct iosys_map *map)
{
	emu_bo_kunmap(to_emu_bo(obj));
}

static vm_fault_t emu_bo_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct emu_bo *bo = to_emu_bo(obj);
	unsigned long pgoff;

	pgoff = vmf->pgoff - drm_vma_node_start(&obj->vma_node);
	/* like TTM, which never faults in the pages of an imported buffer */
	if (pgoff >= bo->npages || !bo->pages || bo->import_dmabuf)
		return VM_FAULT_SIGBUS;
	return vmf_insert_pfn(vma, vmf->address, page_to_pfn(bo->pages[pgoff]));
}

static const struct vm_operations_struct emu_bo_vm_ops = {
	.fault = emu_bo_fault,
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

bool emu_vma_is_bo(struct vm_area_struct *vma)
{
	return vma->vm_ops == &emu_bo_vm_ops;
}

/* The page behind a CPU address inside one of our BO mappings. */
struct page *emu_vma_bo_page(struct vm_area_struct *vma, unsigned long addr)
{
	struct drm_gem_object *obj = vma->vm_private_data;
	struct emu_bo *bo = to_emu_bo(obj);
	unsigned long pgoff;

	pgoff = vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT) -
		drm_vma_node_start(&obj->vma_node);
	if (!bo->pages || pgoff >= bo->npages || bo->import_dmabuf)
		return NULL;
	return bo->pages[pgoff];
}

static int emu_bo_mmap(struct drm_gem_object *obj, struct vm_area_struct *vma)
{
	struct emu_bo *bo = to_emu_bo(obj);

	/* like amdgpu: user pages cannot be mapped through the GPU */
	if (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
		return -EPERM;
	if (!bo->pages)
		return -EINVAL;

	/*
	 * The thunk reserves VRAM without host access with a PROT_NONE private
	 * mapping; such a mapping can never be written, so it is not COW.
	 */
	if (emu_vma_is_cow(vma) &&
	    !(vma->vm_flags & (VM_READ | VM_WRITE | VM_EXEC)))
		emu_vm_flags_clear(vma, VM_MAYWRITE);
	if (emu_vma_is_cow(vma))
		return -EINVAL;

	emu_vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot = vm_get_page_prot(vma->vm_flags);
	return 0;
}

/*
 * amdgpu refuses to share user pages through dma-buf, and a buffer that lives
 * in one file's VM alone (VM_ALWAYS_VALID: it shares the VM's reservation)
 */
static struct dma_buf *emu_bo_export(struct drm_gem_object *obj, int flags)
{
	if (to_emu_bo(obj)->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR ||
	    to_emu_bo(obj)->gem_flags & AMDGPU_GEM_CREATE_VM_ALWAYS_VALID)
		return ERR_PTR(-EPERM);
	return drm_gem_prime_export(obj, flags);
}

static const struct drm_gem_object_funcs emu_bo_funcs = {
	.free = emu_bo_free,
	.export = emu_bo_export,
	.get_sg_table = emu_bo_get_sg_table,
	.vmap = emu_bo_vmap,
	.vunmap = emu_bo_vunmap,
	.mmap = emu_bo_mmap,
	.vm_ops = &emu_bo_vm_ops,
};

/* A GEM object of @gpu without memory yet; @size is page-aligned. */
static struct emu_bo *emu_bo_alloc(struct emu_gpu *gpu, u64 size, u32 alloc_flags)
{
	struct emu_bo *bo;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return NULL;
	__module_get(THIS_MODULE);
	bo->gpu = gpu;
	bo->alloc_flags = alloc_flags;
	bo->npages = size >> PAGE_SHIFT;
	mutex_init(&bo->vmap_lock);
	INIT_LIST_HEAD(&bo->kfd_import_link);
	bo->base.funcs = &emu_bo_funcs;
	drm_gem_private_object_init(gpu->drm, &bo->base, size);
	return bo;
}

/*
 * A buffer object of @gpu.  VRAM and GTT get zeroed kernel pages now (VRAM
 * counted against the advertised size); USERPTR records @user_addr and gets
 * its pages when pinned; DOORBELL and MMIO_REMAP have no pages of their own.
 */
struct emu_bo *emu_bo_create(struct emu_gpu *gpu, u64 size, u32 alloc_flags,
			     u64 user_addr)
{
	struct emu_bo *bo;
	unsigned long i;
	int ret;

	size = PAGE_ALIGN(size);
	if (!size || size >> PAGE_SHIFT > UINT_MAX)
		return ERR_PTR(-EINVAL);

	bo = emu_bo_alloc(gpu, size, alloc_flags);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	bo->user_addr = user_addr;

	if (alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) {
		if (atomic64_add_return(size, &gpu->vram_used) > gpu->vram_size) {
			atomic64_sub(size, &gpu->vram_used);
			ret = -ENOMEM;
			goto err;
		}
		bo->vram_accounted = true;
	}
	if (alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT) {
		atomic64_add(size, &gpu->gtt_used);
		bo->gtt_accounted = true;
	}

	if (alloc_flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT)) {
		bo->pages = kvcalloc(bo->npages, sizeof(*bo->pages), GFP_KERNEL);
		if (!bo->pages) {
			ret = -ENOMEM;
			goto err;
		}
		for (i = 0; i < bo->npages; i++) {
			bo->pages[i] = alloc_page(GFP_HIGHUSER | __GFP_ZERO |
						  __GFP_NOWARN | __GFP_RETRY_MAYFAIL);
			if (!bo->pages[i]) {
				ret = -ENOMEM;
				goto err;
			}
			if (!(i & 255))
				cond_resched();
		}
	}

	ret = drm_gem_create_mmap_offset(&bo->base);
	if (ret)
		goto err;
	return bo;

err:
	drm_gem_object_put(&bo->base);
	return ERR_PTR(ret);
}

/*
 * The buffer a GPU of ours makes of another GPU's dma-buf, as amdgpu's PRIME
 * import does (amdgpu_gem_prime_import and amdgpu_dma_buf_create_obj, 6.1 and
 * 7.x alike): a new GEM object of @gpu whose preferred and allowed domain is
 * GTT, with no memory of its own.  Its pages are @src's, which the reference
 * it holds on @dmabuf keeps; the GPU reaches them through it, the CPU does not
 * (emu_bo_fault).  Like amdgpu, it keeps @src's write-combining flag.
 */
struct emu_bo *emu_bo_create_import(struct emu_gpu *gpu, struct dma_buf *dmabuf,
				    struct emu_bo *src)
{
	struct emu_bo *bo;
	int ret;

	if (!src->pages || !(src->alloc_flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM |
						 KFD_IOC_ALLOC_MEM_FLAGS_GTT)))
		return ERR_PTR(-EINVAL);
	bo = emu_bo_alloc(gpu, src->base.size, KFD_IOC_ALLOC_MEM_FLAGS_GTT);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	get_dma_buf(dmabuf);
	bo->import_dmabuf = dmabuf;
	bo->domains = AMDGPU_GEM_DOMAIN_GTT;
	bo->gem_flags = src->gem_flags & AMDGPU_GEM_CREATE_CPU_GTT_USWC;
	bo->pages = kvmalloc_array(bo->npages, sizeof(*bo->pages), GFP_KERNEL);
	if (!bo->pages) {
		ret = -ENOMEM;
		goto err;
	}
	memcpy(bo->pages, src->pages, bo->npages * sizeof(*bo->pages));
	ret = drm_gem_create_mmap_offset(&bo->base);
	if (ret)
		goto err;
	return bo;

err:
	drm_gem_object_put(&bo->base);
	return ERR_PTR(ret);
}

/*
 * The BO behind a dma-buf one of our GPUs exported, with a reference; NULL for
 * any other dma-buf.  DRM's generic import hands back the exporter's own GEM
 * object on the exporting device and refuses it on every other one.
 */
struct emu_bo *emu_bo_from_dmabuf(struct dma_buf *dmabuf)
{
	struct drm_gem_object *obj;
	unsigned int i;

	for (i = 0; i < emu.n_gpus; i++) {
		obj = drm_gem_prime_import(emu.gpus[i].drm, dmabuf);
		if (!IS_ERR(obj))
			return to_emu_bo(obj);
	}
	return NULL;
}

void emu_bo_put(struct emu_bo *bo)
{
	drm_gem_object_put(&bo->base);
}

u64 emu_bo_mmap_offset(struct emu_bo *bo)
{
	return drm_vma_node_offset_addr(&bo->base.vma_node);
}

/* Pin the user pages of a USERPTR BO, from @mm (current's, or a remote one). */
int emu_bo_pin_user(struct emu_bo *bo, struct mm_struct *mm, bool remote)
{
	unsigned int gup = FOLL_LONGTERM | (bo->user_readonly ? 0 : FOLL_WRITE);
	struct page **pages;
	unsigned long done = 0;
	long n;
	int ret = 0;

	if (bo->user_pinned)
		return 0;
	pages = kvcalloc(bo->npages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;

	if (remote)
		mmap_read_lock(mm);
	while (done < bo->npages) {
		unsigned long addr = bo->user_addr + (done << PAGE_SHIFT);

		if (remote)
			n = emu_pin_user_pages_remote(mm, addr, bo->npages - done,
						      gup, pages + done);
		else
			n = pin_user_pages_fast(addr, bo->npages - done, gup,
						pages + done);
		if (n <= 0) {
			ret = n ? n : -EFAULT;
			break;
		}
		done += n;
	}
	if (remote)
		mmap_read_unlock(mm);

	if (ret) {
		if (done)
			unpin_user_pages(pages, done);
		kvfree(pages);
		return ret;
	}
	bo->pages = pages;
	/* the SDMA worker looks at the flag without our callers' locks */
	smp_store_release(&bo->user_pinned, true);
	return 0;
}

bool emu_bo_has_pages(struct emu_bo *bo)
{
	if (bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
		return smp_load_acquire(&bo->user_pinned);
	return bo->pages;
}

/* ---- the DRM driver ---------------------------------------------------- */

static int emu_drm_open(struct drm_device *dev, struct drm_file *file)
{
	struct emu_drm_file *ef;

	/* the device cgroup refuses the render node of a hidden GPU */
	if (!emu_gpu_visible(dev->dev_private))
		return -EPERM;
	ef = kzalloc(sizeof(*ef), GFP_KERNEL);
	if (!ef)
		return -ENOMEM;
	kref_init(&ef->ref);
	ef->gpu = dev->dev_private;
	emu_vm_init(&ef->vm, dev->dev_private);
	mutex_init(&ef->lock);
	idr_init_base(&ef->ctxs, 1);
	idr_init_base(&ef->bo_lists, 1);
	file->driver_priv = ef;
	return 0;
}

static void emu_drm_file_release(struct kref *ref)
{
	struct emu_drm_file *ef = container_of(ref, struct emu_drm_file, ref);

	emu_vm_fini(&ef->vm);
	mutex_destroy(&ef->lock);
	kfree(ef);
}

/* Jobs in flight keep the VM they translate through. */
void emu_drm_file_put(struct emu_drm_file *ef)
{
	kref_put(&ef->ref, emu_drm_file_release);
}

static void emu_drm_postclose(struct drm_device *dev, struct drm_file *file)
{
	struct emu_drm_file *ef = file->driver_priv;
	struct emu_bo_list *list;
	struct emu_ctx *ctx;
	int id;

	idr_for_each_entry(&ef->ctxs, ctx, id)
		emu_ctx_put(ctx);
	idr_destroy(&ef->ctxs);
	idr_for_each_entry(&ef->bo_lists, list, id)
		emu_bo_list_put(list);
	idr_destroy(&ef->bo_lists);
	file->driver_priv = NULL;
	emu_drm_file_put(ef);
}

/*
 * AMDGPU_GEM_MMAP: the fake offset of a BO this file has a handle for (e.g.
 * an imported KFD dma-buf).  User pages cannot be CPU-mapped this way.
 */
static int emu_gem_mmap_ioctl(struct drm_device *dev, void *data,
			      struct drm_file *file)
{
	union drm_amdgpu_gem_mmap *args = data;
	struct drm_gem_object *obj;
	struct emu_bo *bo;
	int ret = 0;

	obj = drm_gem_object_lookup(file, args->in.handle);
	if (!obj)
		return -ENOENT;
	bo = to_emu_bo(obj);
	if ((bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) ||
	    (bo->gem_flags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS))
		ret = -EPERM;
	else
		args->out.addr_ptr = emu_bo_mmap_offset(bo);
	drm_gem_object_put(obj);
	return ret;
}

/*
 * PRIME import into a render file (DRM_IOCTL_PRIME_FD_TO_HANDLE; DRM's core
 * finds a dma-buf the file imported before and comes here for a new one), as
 * amdgpu_gem_prime_import does it in 6.1 and 7.x: a dma-buf of this GPU gives
 * back its own GEM object, one of another GPU a new buffer of this GPU over
 * the same pages.  amdgpu also attaches dma-bufs of other drivers; the
 * emulator refuses them.
 */
static struct drm_gem_object *emu_gem_prime_import(struct drm_device *dev,
						   struct dma_buf *dmabuf)
{
	struct emu_bo *src = emu_bo_from_dmabuf(dmabuf), *bo;

	if (!src)
		return ERR_PTR(-EINVAL);
	if (src->gpu->drm == dev)
		return &src->base;
	bo = emu_bo_create_import(dev->dev_private, dmabuf, src);
	emu_bo_put(src);
	return IS_ERR(bo) ? ERR_CAST(bo) : &bo->base;
}

#define EMU_DRM_IOCTL(name, fn) \
	DRM_IOCTL_DEF_DRV(AMDGPU_##name, fn, DRM_AUTH | DRM_RENDER_ALLOW)

/* The amdgpu driver ioctls user space needs for buffers, VMs and SDMA. */
static const struct drm_ioctl_desc emu_drm_ioctls[] = {
	EMU_DRM_IOCTL(GEM_CREATE, emu_amdgpu_gem_create_ioctl),
	EMU_DRM_IOCTL(GEM_MMAP, emu_gem_mmap_ioctl),
	EMU_DRM_IOCTL(CTX, emu_amdgpu_ctx_ioctl),
	EMU_DRM_IOCTL(BO_LIST, emu_amdgpu_bo_list_ioctl),
	EMU_DRM_IOCTL(CS, emu_amdgpu_cs_ioctl),
	EMU_DRM_IOCTL(INFO, emu_amdgpu_info_ioctl),
	EMU_DRM_IOCTL(GEM_METADATA, emu_amdgpu_gem_metadata_ioctl),
	EMU_DRM_IOCTL(GEM_WAIT_IDLE, emu_amdgpu_gem_wait_idle_ioctl),
	EMU_DRM_IOCTL(GEM_VA, emu_amdgpu_gem_va_ioctl),
	EMU_DRM_IOCTL(WAIT_CS, emu_amdgpu_wait_cs_ioctl),
	EMU_DRM_IOCTL(GEM_OP, emu_amdgpu_gem_op_ioctl),
	EMU_DRM_IOCTL(GEM_USERPTR, emu_amdgpu_gem_userptr_ioctl),
#if EMU_HAS_GEM_CHECKPOINT
	EMU_DRM_IOCTL(GEM_LIST_HANDLES, emu_amdgpu_gem_list_handles_ioctl),
#endif
};

/* Every ioctl on a render node, core and amdgpu alike, passes the fault injection first. */
static long emu_drm_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	int ret = emu_fault_check(EMU_FAULT_DRM, _IOC_NR(cmd));

	return ret ? ret : drm_ioctl(filp, cmd, arg);
}

static const struct file_operations emu_drm_fops = {
	.owner = THIS_MODULE,
	.open = drm_open,
	.release = drm_release,
	.unlocked_ioctl = emu_drm_ioctl,
	.compat_ioctl = drm_compat_ioctl,
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.mmap = drm_gem_mmap,
#ifdef FOP_UNSIGNED_OFFSET
	.fop_flags = FOP_UNSIGNED_OFFSET,
#endif
};

static const struct drm_driver emu_drm_driver = {
	.driver_features = DRIVER_GEM | DRIVER_RENDER,
	.open = emu_drm_open,
	.postclose = emu_drm_postclose,
	.ioctls = emu_drm_ioctls,
	.num_ioctls = ARRAY_SIZE(emu_drm_ioctls),
	.fops = &emu_drm_fops,
	.prime_handle_to_fd = drm_gem_prime_handle_to_fd,
	.prime_fd_to_handle = drm_gem_prime_fd_to_handle,
	.gem_prime_import = emu_gem_prime_import,
#if EMU_DRM_HAS_GEM_PRIME_MMAP
	.gem_prime_mmap = drm_gem_prime_mmap,
#endif
	.name = "amdgpu",
	.desc = "AMD GPU",
#if EMU_DRM_HAS_DATE
	.date = "20150101",
#endif
	.major = 3,
	.minor = 49,
	.patchlevel = 0,
};

/* The VM of a file, if it is an open render (or primary) node of ours. */
struct emu_vm *emu_vm_from_file(struct file *filp, struct drm_file **drm_priv)
{
	struct drm_file *df;
	struct emu_drm_file *ef;

	if (!filp || filp->f_op != &emu_drm_fops)
		return NULL;
	df = filp->private_data;
	if (!df || !df->driver_priv)
		return NULL;
	ef = df->driver_priv;
	if (drm_priv)
		*drm_priv = df;
	return &ef->vm;
}

int emu_drm_register_gpu(struct emu_gpu *gpu)
{
	struct drm_device *drm;
	int ret;

	gpu->pdev = platform_device_register_simple(EMU_NAME, gpu->index, NULL, 0);
	if (IS_ERR(gpu->pdev)) {
		ret = PTR_ERR(gpu->pdev);
		gpu->pdev = NULL;
		return ret;
	}

	drm = drm_dev_alloc(&emu_drm_driver, &gpu->pdev->dev);
	if (IS_ERR(drm)) {
		ret = PTR_ERR(drm);
		goto err_pdev;
	}
	drm->dev_private = gpu;

	ret = drm_dev_register(drm, 0);
	if (ret)
		goto err_put;
	gpu->drm = drm;
	gpu->render_minor = drm->render->index;
	return 0;

err_put:
	drm_dev_put(drm);
err_pdev:
	platform_device_unregister(gpu->pdev);
	gpu->pdev = NULL;
	return ret;
}

void emu_drm_unregister_gpu(struct emu_gpu *gpu)
{
	if (gpu->drm) {
		drm_dev_unregister(gpu->drm);
		drm_dev_put(gpu->drm);
		gpu->drm = NULL;
	}
	if (gpu->pdev) {
		platform_device_unregister(gpu->pdev);
		gpu->pdev = NULL;
	}
}

/*
 * Render minors are handed out lowest-free-first.  To present "another node"
 * after a reload, occupy the minors below render_minor_base with placeholder
 * DRM devices while the GPUs register, then let them go again.
 */
#define EMU_MAX_PLACEHOLDERS 64

static const struct file_operations emu_pad_fops = {
	.owner = THIS_MODULE,
	.open = drm_open,
	.release = drm_release,
	.unlocked_ioctl = drm_ioctl,
	.llseek = noop_llseek,
#ifdef FOP_UNSIGNED_OFFSET
	.fop_flags = FOP_UNSIGNED_OFFSET,
#endif
};

static const struct drm_driver emu_pad_driver = {
	.driver_features = DRIVER_RENDER,
	.fops = &emu_pad_fops,
	.name = "amdgpu_emu_pad",
	.desc = "minor placeholder",
#if EMU_DRM_HAS_DATE
	.date = "20240101",
#endif
	.major = 1,
};

static struct platform_device *emu_pad_pdev;
static struct drm_device *emu_pads[EMU_MAX_PLACEHOLDERS];
static unsigned int emu_n_pads;

int emu_drm_reserve_minors(int render_minor_base)
{
	struct drm_device *drm;
	int ret;

	if (render_minor_base <= 128)
		return 0;
	if (render_minor_base > 191) {
		pr_err(EMU_NAME ": render_minor_base %d is not in 128..191\n",
		       render_minor_base);
		return -EINVAL;
	}

	emu_pad_pdev = platform_device_register_simple(EMU_NAME "_pad", -1, NULL, 0);
	if (IS_ERR(emu_pad_pdev)) {
		ret = PTR_ERR(emu_pad_pdev);
		emu_pad_pdev = NULL;
		return ret;
	}

	while (emu_n_pads < EMU_MAX_PLACEHOLDERS) {
		drm = drm_dev_alloc(&emu_pad_driver, &emu_pad_pdev->dev);
		if (IS_ERR(drm)) {
			ret = PTR_ERR(drm);
			goto err;
		}
		ret = drm_dev_register(drm, 0);
		if (ret) {
			drm_dev_put(drm);
			goto err;
		}
		if (drm->render->index >= render_minor_base) {
			/* lowest free minor reached the base: give it back */
			drm_dev_unregister(drm);
			drm_dev_put(drm);
			break;
		}
		emu_pads[emu_n_pads++] = drm;
	}
	return 0;

err:
	emu_drm_release_placeholders();
	return ret;
}

void emu_drm_release_placeholders(void)
{
	while (emu_n_pads) {
		struct drm_device *drm = emu_pads[--emu_n_pads];

		drm_dev_unregister(drm);
		drm_dev_put(drm);
	}
	if (emu_pad_pdev) {
		platform_device_unregister(emu_pad_pdev);
		emu_pad_pdev = NULL;
	}
}

int emu_drm_init(void)
{
	return 0;
}

void emu_drm_fini(void)
{
	emu_drm_release_placeholders();
}
