/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel interfaces the emulator uses that changed between the two guest kernels it is built
 * for: Debian 12's 6.1 and the newest kernel Debian ships for Debian 13 (7.x). One name per
 * operation, whichever kernel the module is built against; each line says in which release the
 * interface changed.
 */
#ifndef EMU_COMPAT_H
#define EMU_COMPAT_H

#include <linux/version.h>
#include <linux/mm.h>
#include <linux/device.h>

/* 6.3: vm_flags became read-only, changed through vm_flags_set/vm_flags_clear */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void emu_vm_flags_set(struct vm_area_struct *vma, unsigned long flags)
{
	vma->vm_flags |= flags;
}

static inline void emu_vm_flags_clear(struct vm_area_struct *vma, unsigned long flags)
{
	vma->vm_flags &= ~flags;
}
#else
#define emu_vm_flags_set(vma, flags) vm_flags_set(vma, flags)
#define emu_vm_flags_clear(vma, flags) vm_flags_clear(vma, flags)
#endif

/* 6.9: is_cow_mapping(flags) gave way to vma_is_cow_mapping(vma) in the public header */
static inline bool emu_vma_is_cow(const struct vm_area_struct *vma)
{
	return (vma->vm_flags & (VM_SHARED | VM_MAYWRITE)) == VM_MAYWRITE;
}

/* 6.5: the remote page walkers lost their vmas argument */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 5, 0)
#define emu_pin_user_pages_remote(mm, start, n, flags, pages) \
	pin_user_pages_remote(mm, start, n, flags, pages, NULL, NULL)
#define emu_get_user_pages_remote(mm, start, n, flags, pages) \
	get_user_pages_remote(mm, start, n, flags, pages, NULL, NULL)
#else
#define emu_pin_user_pages_remote(mm, start, n, flags, pages) \
	pin_user_pages_remote(mm, start, n, flags, pages, NULL)
#define emu_get_user_pages_remote(mm, start, n, flags, pages) \
	get_user_pages_remote(mm, start, n, flags, pages, NULL)
#endif

/* 6.4: class_create lost its owner argument; 6.2: devnode callbacks take a const device */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
#define emu_class_create(name) class_create(THIS_MODULE, name)
#else
#define emu_class_create(name) class_create(name)
#endif
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
#define EMU_DEVNODE_DEVICE struct device
#else
#define EMU_DEVNODE_DEVICE const struct device
#endif

/* 6.13: symbol namespaces are named by a string */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define EMU_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#else
#define EMU_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
#endif

/*
 * 6.18: amdgpu lists a render-node file's GEM objects (GEM_LIST_HANDLES) and a
 * buffer's VA mappings (GEM_OP GET_MAPPING_INFO), for checkpointing.
 */
#define EMU_HAS_GEM_CHECKPOINT (LINUX_VERSION_CODE >= KERNEL_VERSION(6, 18, 0))

/*
 * 6.6: drm_driver lost gem_prime_mmap (PRIME mmap goes through the object's own functions);
 * 6.14: drm_driver lost its date.
 */
#define EMU_DRM_HAS_GEM_PRIME_MMAP (LINUX_VERSION_CODE < KERNEL_VERSION(6, 6, 0))
#define EMU_DRM_HAS_DATE (LINUX_VERSION_CODE < KERNEL_VERSION(6, 14, 0))

/*
 * 6.12: a DRM file must say that its offsets are unsigned (FOP_UNSIGNED_OFFSET in its
 * file_operations' fop_flags, tested with #ifdef where the fops are defined) or drm_open fails.
 */

#endif
