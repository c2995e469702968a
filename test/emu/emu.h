/* SPDX-License-Identifier: GPL-2.0 */
/*
 * amdgpu_emu: an emulation of the amdgpu/KFD user ABI for the test bed.
 *
 * The module presents emulated AMD GPUs to user space exactly where the real
 * driver would: a KFD topology in sysfs, /dev/kfd with the KFD ioctl ABI 1.11
 * (including the CRIU operations; up to 1.18 when built against a kernel
 * whose header has it) and one DRM render node per GPU.  Memory is
 * kernel pages, queues are state plus a heartbeat, nothing executes shaders.
 */
#ifndef AMDGPU_EMU_H
#define AMDGPU_EMU_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/idr.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/rbtree.h>
#include <linux/workqueue.h>
#include <linux/mmu_notifier.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/kfd_ioctl.h>
#include <drm/drm_gem.h>

#include "emu_compat.h"

#define EMU_NAME		"amdgpu_emu"

/*
 * The KFD interface version GET_VERSION reports: the uapi header's the module is built against,
 * but never more than the emulator implements (every command and flag up to that version, with
 * the kernel's semantics). Built against a newer kernel, the emulator is a kernel of that
 * version's interface, not a kinder one.
 */
#define EMU_KFD_MINOR_IMPLEMENTED	23
#define EMU_KFD_MINOR_VERSION \
	(KFD_IOCTL_MINOR_VERSION < EMU_KFD_MINOR_IMPLEMENTED ? KFD_IOCTL_MINOR_VERSION : \
							      EMU_KFD_MINOR_IMPLEMENTED)
#define EMU_MAX_GPUS		16	/* MAX_GPU_INSTANCE of the 6.1 CRIU blob */
#define EMU_MAX_XCC		8	/* XCCs of one KFD node (MI300X in SPX mode) */

/*
 * How KFD shares memory between processes. Up to 6.7 KFD takes a dma-buf apart itself: IMPORT_DMABUF
 * accepts only a buffer of the importing GPU, and CRIU CHECKPOINT and RESTORE export a new dma-buf
 * for every bucket each time. From 6.8 on (KFD 1.14) KFD holds its buffers through a DRM file of
 * each GPU of its own: IMPORT_DMABUF goes through PRIME like a render node's import, so a buffer of
 * another GPU becomes a buffer of the importing GPU over the same pages, and every dma-buf KFD hands
 * out for a buffer (EXPORT_DMABUF, CHECKPOINT, RESTORE) is that buffer's one dma-buf: the one it was
 * imported from, or the one made at its first export.
 */
#define EMU_KFD_IMPORTS_THROUGH_DRM	(EMU_KFD_MINOR_VERSION >= 14)

/* Process virtual address layout of a gfx9 dGPU with 4 KiB pages. */
#define EMU_LDS_BASE		(1ULL << 48)
#define EMU_SCRATCH_BASE	(2ULL << 48)
#define EMU_APERTURE_SPAN	0xFFFFFFFFULL
#define EMU_GPUVM_BASE		0x4000ULL
#define EMU_GPUVM_LIMIT		((1ULL << 47) - 1)

/* gfx9: 1024 doorbells of 8 bytes per process and GPU. */
#define EMU_DOORBELL_SLICE	8192
#define EMU_DOORBELL_PAGES	(EMU_DOORBELL_SLICE / PAGE_SIZE)
#define EMU_MAX_DOORBELLS	1024
#define EMU_MAX_QUEUES		1024

#define EMU_SIGNAL_EVENT_LIMIT	4096
#define EMU_SIGNAL_PAGE_SIZE	(EMU_SIGNAL_EVENT_LIMIT * 8)
#define EMU_SIGNAL_DEFAULT_SLOTS 256
#define EMU_UNSIGNALED_SLOT	(~0ULL)
/* Signal events use their slot as id; the others live in the upper half. */
#define EMU_FIRST_NONSIGNAL_ID	((INT_MAX >> 1) + 1)

/* mmap offsets of /dev/kfd: type in bits 63:62, gpu_id in bits 61:46. */
#define EMU_MMAP_TYPE_MASK	(3ULL << 62)
#define EMU_MMAP_TYPE_DOORBELL	(3ULL << 62)
#define EMU_MMAP_TYPE_EVENTS	(2ULL << 62)
#define EMU_MMAP_TYPE_RESERVED	(1ULL << 62)
#define EMU_MMAP_TYPE_MMIO	(0ULL << 62)
#define EMU_MMAP_GPU_ID_SHIFT	46
#define EMU_MMAP_GPU_ID_MASK	(0xFFFFULL << EMU_MMAP_GPU_ID_SHIFT)
#define EMU_MMAP_GPU_ID(id)	(((u64)(id) << EMU_MMAP_GPU_ID_SHIFT) & EMU_MMAP_GPU_ID_MASK)
#define EMU_MMAP_GET_GPU_ID(o)	((u32)(((o) & EMU_MMAP_GPU_ID_MASK) >> EMU_MMAP_GPU_ID_SHIFT))

/* Memory handles returned by ALLOC: user gpu_id in the upper half. */
#define EMU_HANDLE(gpu_id, idr)	(((u64)(gpu_id) << 32) | (u32)(idr))
#define EMU_HANDLE_GPU(h)	((u32)((h) >> 32))
#define EMU_HANDLE_IDR(h)	((u32)(h))

#define EMU_ALLOC_DOMAIN_MASK	(KFD_IOC_ALLOC_MEM_FLAGS_VRAM | \
				 KFD_IOC_ALLOC_MEM_FLAGS_GTT | \
				 KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | \
				 KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | \
				 KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)

/* Queue memory descriptor sizes per engine (gfx9 v9_mqd / v9_sdma_mqd). */
#define EMU_MQD_SIZE_COMPUTE	2048
#define EMU_MQD_SIZE_SDMA	512

/* ---- models and GPUs ------------------------------------------------- */

#define EMU_VENDOR_AMD		0x1002	/* PCI vendor id */

struct emu_cache {
	u32 level;
	u32 size_kb;
	u32 line_size;
	u32 type;		/* CRAT cache flags */
	u32 cus_per_cache;	/* 0: one per GPU */
};

struct emu_model {
	const char *asic;		/* sysfs node "name" */
	u32 device_id;
	u32 gfx_target_version;
	u32 simd_count;
	u32 simd_per_cu;
	u32 array_count;
	u32 simd_arrays_per_engine;
	u32 cu_per_simd_array;
	u32 max_waves_per_simd;
	u32 lds_size_in_kb;
	u32 gds_size_in_kb;
	u32 num_gws;
	u32 wave_front_size;
	u32 max_slots_scratch_cu;
	u32 max_engine_clk_fcompute;
	u32 fw_version;
	u32 sdma_fw_version;
	u32 capability;
	u32 num_sdma_engines;
	u32 num_sdma_xgmi_engines;
	u32 num_sdma_queues_per_engine;
	u32 num_cp_queues;
	u32 vram_mb;
	u32 vram_width;
	u32 mem_clk_max;
	u32 gb_addr_config;
	u32 num_xcc;			/* XCCs that run as one GPU (MI300 SPX: 8); 0 is 1 */
	const struct emu_cache *caches;
	unsigned int n_caches;
};

struct emu_preset {
	const char *name;
	const struct emu_model *model;
	unsigned int n_gpus;
	bool xgmi_hive;		/* all GPUs in one xGMI hive */
	u64 hive_id;
	u64 unique_id_base;
	u16 default_gpu_ids[EMU_MAX_GPUS];
	/*
	 * KFD nodes per physical GPU (an MI300X in CPX mode: 8 partitions), 0
	 * is 1.  A GPU's partitions share its unique_id and PCI location (the
	 * partition index ORed in), and reach each other over xGMI links of
	 * their own.
	 */
	unsigned int partitions;
	const char *compute_mode;	/* MI300: "SPX", "CPX" (the device's current_compute_partition) */
	const char *memory_mode;	/* MI300: "NPS1", "NPS4" (current_memory_partition) */
};

struct emu_topo_node;

struct emu_gpu {
	unsigned int index;		/* GPU order */
	unsigned int node_id;		/* topology node (CPU is 0) */
	u32 gpu_id;
	const struct emu_model *model;
	u32 fw_version;			/* the model's unless fw_version= */
	u64 vram_size;
	atomic64_t vram_used;
	u64 hive_id;
	u64 unique_id;
	u32 location_id;
	u32 domain;
	unsigned int partition;		/* its index among its physical GPU's partitions */
	struct platform_device *pdev;
	struct drm_device *drm;
	int render_minor;
	struct page *mmio_page;		/* the HDP flush page */
	atomic_t sdma_used;
	atomic_t sdma_xgmi_used;
	/* the SDMA engine behind the render node's DMA rings */
	struct workqueue_struct *sdma_wq;
	atomic_t reset_counter;		/* "GPU resets": one per SDMA fault */
	atomic64_t sdma_bytes;		/* copied or filled, for debugfs */
	atomic64_t shader_instructions;	/* wave instructions its dispatches ran, likewise */
	atomic64_t gtt_used;
};

struct emu_device {
	const struct emu_preset *preset;
	unsigned int n_gpus;
	struct emu_gpu gpus[EMU_MAX_GPUS];
	unsigned int heartbeat_ms;
	struct workqueue_struct *wq;
};

extern unsigned int emu_sdma_mbps;

extern struct emu_device emu;

struct emu_gpu *emu_gpu_by_id(u32 gpu_id);

static inline unsigned int emu_preset_partitions(const struct emu_preset *ps)
{
	return ps->partitions ?: 1;
}

/* Two partitions of one physical GPU */
static inline bool emu_gpus_share_device(const struct emu_gpu *a, const struct emu_gpu *b)
{
	return a->unique_id == b->unique_id;
}

/* The XCCs a queue of @gpu spans: each has its own MQD, control stack and save area */
static inline u32 emu_gpu_xcc_count(const struct emu_gpu *gpu)
{
	return gpu->model->num_xcc ?: 1;
}

/* ---- DRM side: BOs and per-file GPU VMs -------------------------------- */

struct emu_bo {
	struct drm_gem_object base;
	struct emu_gpu *gpu;
	u32 alloc_flags;		/* KFD_IOC_ALLOC_MEM_FLAGS_* */
	struct page **pages;		/* VRAM/GTT backing, or pinned userptr */
	unsigned long npages;
	bool vram_accounted;
	bool gtt_accounted;
	u64 gem_flags;			/* AMDGPU_GEM_CREATE_* of GEM_CREATE BOs */
	u32 domains;			/* AMDGPU_GEM_DOMAIN_* asked for */
	u64 alignment;
	atomic_t busy;			/* CS jobs in flight listing this BO */
	/* GEM_METADATA, under vmap_lock */
	u64 md_flags;
	u64 md_tiling;
	u32 md_size;
	void *md;
	/* USERPTR */
	u64 user_addr;
	bool user_pinned;		/* pages valid; set with release semantics */
	bool user_readonly;
	struct mm_struct *user_mm;	/* GEM_USERPTR: the creator's mm (grabbed) */
	/* kernel mapping, refcounted */
	struct mutex vmap_lock;
	void *vaddr;
	unsigned int vmap_count;
	/*
	 * A buffer of another GPU imported into this one (emu_bo_create_import): the dma-buf it
	 * stands for, with a reference; its pages are the exporter's.
	 */
	struct dma_buf *import_dmabuf;
	/* KFD's own import of that dma-buf on this GPU, shared by its importers (emu_memory.c) */
	struct list_head kfd_import_link;
	unsigned int kfd_import_users;
};

static inline struct emu_bo *to_emu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct emu_bo, base);
}

struct emu_va_mapping {
	struct rb_node rb;
	u64 start;			/* GPU VA, bytes */
	u64 last;			/* inclusive */
	u64 __subtree_last;
	struct emu_bo *bo;		/* holds a GEM reference */
	u64 bo_offset;
	u32 flags;			/* AMDGPU_VM_PAGE_* */
};

/*
 * One GPU VM per open render-node file, as in amdgpu: KFD's MAP_MEMORY_TO_GPU
 * and GEM_VA both edit it, the SDMA engine translates through it.
 */
struct emu_vm {
	struct mutex lock;
	struct rb_root_cached va;
	struct emu_gpu *gpu;
	void *kfd_owner;		/* emu_process that acquired it */
};

/* amdgpu's VA layout for a 48-bit GPU VM (AMDGPU_VA_RESERVED_SIZE, GMC hole) */
#define EMU_VA_RESERVED_SIZE	(2ULL << 20)
#define EMU_VM_SIZE		(1ULL << 48)
#define EMU_GMC_HOLE_START	0x0000800000000000ULL
#define EMU_GMC_HOLE_END	0xffff800000000000ULL
#define EMU_GMC_HOLE_MASK	0x0000ffffffffffffULL

/* The DMA IP as the CS layer shows it: two rings per context. */
#define EMU_SDMA_RINGS		2
#define EMU_SCHED_JOBS		32	/* amdgpu_sched_jobs: fences per ring */

struct emu_ctx {
	struct kref ref;
	u32 id;
	spinlock_t lock;		/* the sequence state below */
	wait_queue_head_t wq;		/* fences signalled */
	bool guilty;
	int reset_counter;		/* device resets seen at creation */
	int reset_counter_query;	/* ... at the last QUERY_STATE */
	u64 next_seq[EMU_SDMA_RINGS];	/* per ring, from 1 */
	u64 signaled[EMU_SDMA_RINGS];
	u64 bad_seq[EMU_SDMA_RINGS];	/* the faulting job (-ETIME) */
	u64 cancel_from[EMU_SDMA_RINGS];	/* skipped from here (-ECANCELED) */
};

struct emu_bo_list {
	struct kref ref;
	unsigned int n;
	struct emu_bo *bos[];		/* GEM references */
};

/* Per open render-node file: its VM, contexts and BO lists. */
struct emu_drm_file {
	struct kref ref;		/* the file and every job in flight */
	struct emu_gpu *gpu;
	struct emu_vm vm;
	struct mutex lock;		/* the idrs */
	struct idr ctxs;
	struct idr bo_lists;
};

int emu_drm_init(void);
void emu_drm_fini(void);
int emu_drm_register_gpu(struct emu_gpu *gpu);
void emu_drm_unregister_gpu(struct emu_gpu *gpu);
int emu_drm_reserve_minors(int render_minor_base);
void emu_drm_release_placeholders(void);

struct emu_vm *emu_vm_from_file(struct file *filp, struct drm_file **drm_priv);
struct emu_va_mapping *emu_vm_first(struct emu_vm *vm);
struct emu_va_mapping *emu_vm_next(struct emu_va_mapping *m);
int emu_vm_map(struct emu_vm *vm, struct emu_bo *bo, u64 va, u64 bo_offset,
	       u64 size, u32 flags);
int emu_vm_unmap_at(struct emu_vm *vm, struct emu_bo *bo, u64 va);
void emu_vm_clear(struct emu_vm *vm, u64 va, u64 size);
bool emu_vm_bo_is_mapped(struct emu_vm *vm, struct emu_bo *bo);

/* a stretch of one BO behind a GPU VA range, with a GEM reference */
struct emu_vm_seg {
	struct emu_bo *bo;
	u64 offset;			/* in the BO */
	u64 len;			/* bytes left in this mapping */
};

int emu_vm_resolve(struct emu_vm *vm, u64 va, bool write, struct emu_vm_seg *seg);
void emu_drm_file_put(struct emu_drm_file *ef);
void emu_ctx_put(struct emu_ctx *ctx);
struct emu_ctx *emu_ctx_get(struct emu_drm_file *ef, u32 id);
void emu_bo_list_put(struct emu_bo_list *list);
int emu_bo_list_from_user(struct drm_file *file, u64 ptr, u32 n, u32 entry_size,
			  struct emu_bo_list **out);
struct emu_bo_list *emu_bo_list_lookup(struct emu_drm_file *ef, u32 handle);
bool emu_bo_has_pages(struct emu_bo *bo);
struct emu_bo *emu_bo_create_userptr(struct emu_gpu *gpu, u64 addr, u64 size,
				     bool readonly);
int emu_bo_pin_gem_userptr(struct emu_bo *bo);

/* amdgpu driver ioctls (emu_amdgpu.c, emu_sdma.c) */
int emu_amdgpu_info_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_gem_create_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_gem_userptr_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_gem_va_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_gem_op_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_gem_list_handles_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_gem_metadata_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_ctx_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_bo_list_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_cs_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_wait_cs_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_amdgpu_gem_wait_idle_ioctl(struct drm_device *dev, void *data, struct drm_file *file);
int emu_sdma_init(struct emu_gpu *gpu);

/*
 * What the SDMA engine executes packets against: a GPU VM, with throughput
 * and fault accounting.  For a user-mode queue @p is the process whose KFD
 * events a TRAP raises; kernel IBs have none.
 */
struct emu_sdma_ctx {
	struct emu_gpu *gpu;
	struct emu_vm *vm;
	struct emu_process *p;
	ktime_t start;
	u64 bytes;
	u64 throttled;
	u32 polls;			/* failed polls of the current POLL_REGMEM */
	u64 fault_va;
	const char *fault;
};

int emu_sdma_exec(struct emu_sdma_ctx *x, const u32 *buf, u32 ndw, u64 va,
		  u32 *done, u64 budget);
int emu_sdma_access(struct emu_sdma_ctx *x, u64 va, void *buf, u64 len,
		    bool to_gpu, u32 pattern);
int emu_sdma_fault(struct emu_sdma_ctx *x, u64 va, const char *what);
int emu_gpu_atomic_add64(struct emu_sdma_ctx *x, u64 va, s64 delta);
u64 emu_gpu_clock_counter(void);
void emu_sdma_fini(struct emu_gpu *gpu);

struct emu_bo *emu_bo_create(struct emu_gpu *gpu, u64 size, u32 alloc_flags,
			     u64 user_addr);
struct emu_bo *emu_bo_create_import(struct emu_gpu *gpu, struct dma_buf *dmabuf,
				    struct emu_bo *src);
struct emu_bo *emu_bo_from_dmabuf(struct dma_buf *dmabuf);
void emu_bo_put(struct emu_bo *bo);
int emu_bo_pin_user(struct emu_bo *bo, struct mm_struct *mm, bool remote);
void *emu_bo_kmap(struct emu_bo *bo);
void emu_bo_kunmap(struct emu_bo *bo);
u64 emu_bo_mmap_offset(struct emu_bo *bo);
bool emu_vma_is_bo(struct vm_area_struct *vma);
struct page *emu_vma_bo_page(struct vm_area_struct *vma, unsigned long addr);

/* ---- KFD process model ------------------------------------------------- */

struct emu_process;

struct emu_kfd_mem {
	struct emu_bo *bo;
	struct emu_pdd *pdd;
	int handle;			/* idr id in pdd->mem_idr */
	u64 va;
	u64 size;			/* bytes as reported to CRIU */
	u32 flags;
	bool imported;			/* IMPORT_DMABUF: not counted as usage */
	struct dma_buf *dmabuf;		/* its dma-buf once KFD handed one out (emu_mem_get_dmabuf) */
	unsigned long mapped;		/* bitmap of pdd indices */
};

/* A GPU's entries in its process' sysfs directory (emu_procfs.c) */
struct emu_pdd_procfs {
	struct kobj_attribute vram, sdma, evicted_ms, cu_occupancy;
	char vram_name[16], sdma_name[16], stats_name[16];
	struct kobject *stats;
	u64 sdma_past_bytes;		/* of its destroyed SDMA queues; under p->lock */
};

struct emu_pdd {
	struct emu_process *p;
	struct emu_gpu *gpu;
	unsigned int index;
	u32 user_gpu_id;
	struct file *drm_file;		/* reference from ACQUIRE_VM/RESTORE */
	struct drm_file *drm_priv;
	struct emu_vm *vm;
	struct idr mem_idr;
	u64 vram_usage;
	struct page *doorbells[EMU_DOORBELL_PAGES];
	DECLARE_BITMAP(doorbell_ids, EMU_MAX_DOORBELLS);
	u64 scratch_va;
	u64 tba_addr, tma_addr;
	u32 default_policy, alt_policy;
	u64 alt_base, alt_size;
	struct emu_pdd_procfs procfs;
};

/* What the packet processor makes of a compute AQL queue */
enum emu_aql_kind {
	EMU_AQL_RUNTIME = 1,		/* has an amd_queue_t: its packets run */
	EMU_AQL_BARE,			/* bare pointers: the heartbeat's */
};

struct emu_queue {
	struct list_head link;
	struct emu_pdd *pdd;
	u32 id;
	u32 doorbell_id;
	u32 type;			/* KFD_IOC_QUEUE_TYPE_* */
	u64 ring_base;
	u32 ring_size;
	u64 rptr;
	u64 wptr;
	u32 percentage;
	u32 priority;
	u64 eop_addr;
	u64 eop_size;
	u64 ctx_save_addr;
	u32 ctx_save_size;		/* per XCC: XCC x saves at ctx_save_addr + x * ctx_save_size */
	u32 ctl_stack_size;		/* per XCC */
	u32 n_xcc;			/* XCCs of its GPU: one MQD and control stack each */
	u32 sdma_id;			/* engine = sdma_id % engines of its kind */
	bool engine_named;		/* SDMA_BY_ENG_ID: sdma_id is the caller's engine */
	bool gws;
	u32 cu_mask_count;
	u32 *cu_mask;
	u64 heartbeats;
	/* the engine's state for a user-mode SDMA queue (emu_sdma_queue.c) */
	bool executing;			/* its write pointer has moved at least once */
	u64 exec_rptr;			/* bytes consumed, monotonic */
	u32 polls;			/* failed polls of the packet it waits on */
	u64 sdma_bytes;
	/* an AQL queue's packet processor (emu_aql_queue.c); exec_rptr counts its bytes */
	u8 aql_kind;			/* EMU_AQL_*: 0 until its first pass */
	u64 aql_packets;
	u64 aql_instructions;		/* wave instructions of its finished dispatches */
	struct emu_dispatch *dispatch;	/* the kernel dispatch in flight (emu_dispatch.c) */
	const char *fault;		/* stopped for good */
	bool dbg_suspended;		/* by a debugger: DBG_TRAP SUSPEND_QUEUES (emu_debug.c) */
	u64 fault_va;
	u32 mqd_size;			/* every XCC's */
	void *mqd;			/* n_xcc slices of mqd_size / n_xcc */
	void *ctl_stack;		/* n_xcc slices of ctl_stack_size */
	struct kobject *procfs;		/* queues/<id> of its process' directory */
};

struct emu_event {
	struct kref ref;
	u32 id;
	u32 type;
	bool auto_reset;
	bool signaled;
	bool destroyed;
	struct list_head waiters;	/* under p->ev_lock */
	struct kfd_hsa_memory_exception_data mem_data;
	struct kfd_hsa_hw_exception_data hw_data;
	u64 age;			/* signals so far, from 1 (KFD 1.14) */
};

/* A process' directory in /sys/class/kfd/kfd/proc (emu_procfs.c) */
struct emu_process_procfs {
	struct kobject *dir;		/* proc/<pid>, or 7.3's context_<id>; under p->lock */
	struct kobject *queues;		/* under p->lock */
	struct kobj_attribute pasid;
	u32 pasid_value;
	bool made;			/* a primary's, under emu_open_mutex */
};

struct emu_process {
	struct mmu_notifier mn;		/* mn.mm is the key */
	struct kref ref;
	struct list_head link;		/* emu_processes */
	struct mm_struct *mm;
	struct task_struct *lead_thread;
	unsigned int n_files;		/* under emu_open_mutex */
	struct mutex lock;		/* everything below */
	bool torn_down;
	bool mm_gone;

	unsigned int n_pdds;
	struct emu_pdd pdds[EMU_MAX_GPUS];

	bool xnack;
	/* RUNTIME_ENABLE (KFD 1.13): ROCr's runtime announced itself */
	bool runtime_enabled;
	bool runtime_ttmp_setup;
	u64 runtime_r_debug;
	/* DBG_TRAP ENABLE (KFD 1.13): a debug session on this process; under emu_dbg_lock */
	struct file *dbg_ev_file;
	const struct emu_process *debugger;	/* compared, never followed */
	bool queues_paused;		/* CRIU PROCESS_INFO .. UNPAUSE */
	bool restore_pending;		/* CRIU RESTORE .. RESUME */
	unsigned int evict_count;
	u64 evict_start;		/* jiffies when evict_count left 0 */
	u64 evicted_jiffies;		/* of the evictions that ended */
	struct emu_process_procfs procfs;

	struct list_head queues;
	unsigned int n_queues;
	DECLARE_BITMAP(queue_ids, EMU_MAX_QUEUES);
	struct delayed_work heartbeat;
	bool hb_stopping;

	struct idr event_idr;
	unsigned int n_signal_events;
	unsigned int n_events;
	spinlock_t ev_lock;		/* event signal state and waiters */
	/* signal page: a user GTT BO (dGPU) or kernel pages; under page_lock */
	struct mutex page_lock;		/* innermost; also taken under mmap_lock */
	u64 *signal_slots;
	struct emu_kfd_mem *signal_mem;
	u64 signal_handle;
	unsigned long signal_kpages;	/* __get_free_pages address */
	size_t signal_mapped_size;
#ifdef AMDKFD_IOC_CREATE_PROCESS
	/* KFD 1.19: the contexts of one mm (emu_context.c); under emu_open_mutex */
	u16 context_id;			/* EMU_CONTEXT_ID_PRIMARY or a secondary's */
	struct emu_process *primary;	/* a secondary's, with a reference */
	struct ida context_ids;		/* a primary's: the ids of its secondaries */
	unsigned int n_secondaries;	/* a primary's, alive */
#endif
};

extern const struct file_operations emu_kfd_fops;

int emu_kfd_init(void);
void emu_kfd_fini(void);
struct emu_process *emu_process_get_by_mm(struct mm_struct *mm);
/* DBG_TRAP's debug sessions (emu_debug.c); the fields they use are under emu_dbg_lock */
extern spinlock_t emu_dbg_lock;
struct file *emu_dbg_trap_end(struct emu_process *target);
void emu_dbg_trap_release(struct emu_process *p);
u32 emu_gpu_capability(const struct emu_gpu *gpu);
#if EMU_KFD_MINOR_VERSION >= 13
int emu_ioctl_dbg_trap(struct file *filp, struct emu_process *p, void *data);
u64 emu_gpu_debug_prop(const struct emu_gpu *gpu);
#endif
void emu_process_put(struct emu_process *p);
struct emu_pdd *emu_pdd_by_user_id(struct emu_process *p, u32 user_gpu_id);
/* the GPU's apertures in the process's address space, as GET_PROCESS_APERTURES(_NEW) give them */
void emu_fill_apertures(const struct emu_pdd *pdd, struct kfd_process_device_apertures *ap);
struct emu_pdd *emu_pdd_by_gpu(struct emu_process *p, struct emu_gpu *gpu);
int emu_pdd_bind(struct emu_pdd *pdd);
struct emu_pdd *emu_pdd_bound(struct emu_process *p, u32 user_gpu_id);
int emu_pdd_acquire_vm(struct emu_pdd *pdd, struct file *drm_file);
int emu_pdd_doorbells(struct emu_pdd *pdd);
void emu_process_reset(struct emu_process *p);
bool emu_process_queues_active(struct emu_process *p);
void emu_process_evict(struct emu_process *p);
void emu_process_restore(struct emu_process *p);

typedef int (*emu_ioctl_fn)(struct file *filp, struct emu_process *p, void *data);

/* memory */
int emu_ioctl_alloc_memory(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_free_memory(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_map_memory(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_unmap_memory(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_available_memory(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_get_dmabuf_info(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_import_dmabuf(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_export_dmabuf(struct file *filp, struct emu_process *p, void *data);
struct emu_kfd_mem *emu_mem_create(struct emu_pdd *pdd, u64 va, u64 size,
				   u32 flags, u64 user_addr, int handle);
void emu_mem_destroy(struct emu_kfd_mem *mem);
int emu_mem_map(struct emu_kfd_mem *mem, struct emu_pdd *peer);
struct dma_buf *emu_mem_get_dmabuf(struct emu_kfd_mem *mem);
void emu_mem_unmap_all(struct emu_kfd_mem *mem);
u64 emu_mem_offset(struct emu_kfd_mem *mem, u32 gpu_id_for_type);
void emu_pdd_free_memory(struct emu_pdd *pdd);

/* queues */
int emu_ioctl_create_queue(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_destroy_queue(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_update_queue(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_set_cu_mask(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_get_queue_wave_state(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_alloc_queue_gws(struct file *filp, struct emu_process *p, void *data);
struct emu_queue *emu_queue_find(struct emu_process *p, u32 id);
int emu_queue_add(struct emu_process *p, struct emu_queue *q, bool fixed_id);
void emu_queue_free(struct emu_process *p, struct emu_queue *q);
void emu_queues_destroy_all(struct emu_process *p);
u32 emu_queue_mqd_size(u32 type);
void *emu_queue_mqd_record(struct emu_queue *q, u32 xcc);
int emu_queue_alloc_state(struct emu_queue *q, u32 n_xcc, u32 ctl_stack_size, const void *mqd,
			  const void *ctl_stack);
void emu_queue_fill_mqd(struct emu_queue *q);
void emu_queue_load_mqd(struct emu_queue *q);
void emu_heartbeat_work(struct work_struct *work);
bool emu_queue_is_active(struct emu_queue *q);
bool emu_sdma_queues_run(struct emu_process *p);
u64 emu_sdma_queue_pending(struct emu_queue *q);
bool emu_aql_queues_run(struct emu_process *p);
void emu_aql_queue_preempt(struct emu_process *p, struct emu_queue *q);
void emu_aql_queue_resume(struct emu_process *p, struct emu_queue *q);

/* the dispatcher (emu_dispatch.c) */
struct emu_dispatch;
enum emu_dispatch_status { EMU_DISPATCH_RUNNING, EMU_DISPATCH_DONE, EMU_DISPATCH_FAULT };
struct emu_dispatch_fault {
	int state;			/* enum emu_wave_state: ILLEGAL or MEMVIOL */
	u64 pc;
	u64 addr;
};
struct emu_dispatch *emu_dispatch_begin(struct emu_queue *q, const u64 *pkt, u64 va, u64 dispatch_id,
					 u64 amd_queue, const char **why);
enum emu_dispatch_status emu_dispatch_run(struct emu_dispatch *d, struct emu_queue *q, u64 budget,
					  struct emu_dispatch_fault *fault);
void emu_dispatch_free(struct emu_dispatch *d);
u64 emu_dispatch_instructions(struct emu_dispatch *d);
u64 emu_dispatch_start_ts(const struct emu_dispatch *d);
u64 emu_dispatch_completion_signal(const struct emu_dispatch *d);
size_t emu_dispatch_record_size(void);
void emu_dispatch_save_record(const struct emu_dispatch *d, u32 xcc, void *buf);
int emu_dispatch_preempt(struct emu_queue *q, const char **why);
int emu_dispatch_resume(struct emu_queue *q, const char **why);
void emu_dispatch_show(struct seq_file *m, const struct emu_dispatch *d);
void emu_dispatch_wave_state(struct emu_queue *q, u32 xcc, u32 *cntl_stack_offset, u32 *wg_state_offset);
void emu_aql_queues_preempt(struct emu_process *p);
void emu_aql_queues_resume(struct emu_process *p);
bool emu_aql_queue_runs(struct emu_queue *q);
u64 emu_aql_queue_pending(struct emu_queue *q);
void emu_heartbeat_kick(struct emu_process *p);

/* events */
int emu_ioctl_create_event(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_destroy_event(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_set_event(struct file *filp, struct emu_process *p, void *data);
int emu_event_set_by_id(struct emu_process *p, u32 id);
int emu_ioctl_reset_event(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_wait_events(struct file *filp, struct emu_process *p, void *data);
int emu_event_set_signal_page(struct emu_process *p, u64 handle);
void emu_event_signal_interrupt(struct emu_process *p, u32 partial_id, unsigned int valid_bits);
int emu_event_restore(struct emu_process *p, u32 id, u32 type, bool auto_reset,
		      bool signaled, const void *exception_data);
void emu_events_destroy_all(struct emu_process *p);
int emu_event_mmap(struct emu_process *p, struct vm_area_struct *vma);

#ifdef AMDKFD_IOC_CREATE_PROCESS
/* KFD 1.19 secondary contexts and the 1.23 profiler ioctl (emu_context.c) */
#define EMU_CONTEXT_ID_PRIMARY	0xFFFF
struct mmu_notifier;
extern struct mutex emu_open_mutex;
struct emu_process *emu_process_alloc(struct mm_struct *mm);
void emu_process_list(struct emu_process *p);
void emu_process_unlist(struct emu_process *p);
void emu_process_teardown(struct emu_process *p);
int emu_ioctl_create_process(struct file *filp, struct emu_process *p, void *data);
int emu_ioctl_profiler(struct file *filp, struct emu_process *p, void *data);
void emu_context_release(struct emu_process *p);
void emu_context_teardown(struct emu_process *p);
void emu_context_profiler_release(struct emu_process *p);
void emu_context_free(struct emu_process *p);
static inline bool emu_process_is_secondary(const struct emu_process *p)
{
	return p->context_id != EMU_CONTEXT_ID_PRIMARY;
}
#else
static inline bool emu_process_is_secondary(const struct emu_process *p)
{
	return false;
}
#endif

/* /sys/class/kfd/kfd/proc (emu_procfs.c) */
int emu_procfs_init(struct device *kfd_dev);
void emu_procfs_fini(void);
void emu_procfs_add(struct emu_process *p);
#ifdef AMDKFD_IOC_CREATE_PROCESS
void emu_procfs_add_context(struct emu_process *s, struct emu_process *primary);
#endif
void emu_procfs_remove(struct emu_process *p);
void emu_procfs_add_queue(struct emu_process *p, struct emu_queue *q);
void emu_procfs_del_queue(struct emu_queue *q);

/* CRIU */
int emu_ioctl_criu_op(struct file *filp, struct emu_process *p, void *data);

/* topology */
int emu_topology_init(struct device *kfd_dev);
void emu_topology_fini(void);

/* GPU access by cgroup (the device cgroup as KFD sees it) */
bool emu_gpu_visible(const struct emu_gpu *gpu);
int emu_access_parse(char *buf);
void emu_access_show(struct seq_file *m);
void emu_access_fini(void);

/* fault injection */
int emu_fault_init(const char *spec);
void emu_fault_fini(void);
enum emu_fault_kind { EMU_FAULT_IOCTL, EMU_FAULT_CRIU, EMU_FAULT_DRM };
/* 0, or the -errno an armed fault for this call returns; counts the call. */
int emu_fault_check(enum emu_fault_kind kind, unsigned int nr);
void emu_fault_calls_show(struct seq_file *m);
void emu_fault_calls_reset(void);
/* Waits as an armed criu-stall says (0), or -EINTR if a fatal signal ended the wait. */
int emu_fault_stall_criu(unsigned int op);
u32 emu_fault_take_rptr_skew(void);
int emu_fault_parse(const char *buf, size_t len);
void emu_fault_show(struct seq_file *m);

/* debugfs */
void emu_debugfs_init(void);
void emu_debugfs_fini(void);
void emu_process_show_all(struct seq_file *m);

#endif /* AMDGPU_EMU_H */
