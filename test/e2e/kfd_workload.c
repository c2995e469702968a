// SPDX-License-Identifier: GPL-2.0-only
/*
 * kfd_workload: a ROCm-like GPU process built from raw KFD ioctls, for the
 * end-to-end checkpoint/restore scenarios (contract: README.md).
 *
 * It lays out its GPU state the way the ROCm thunk (libhsakmt 5.2.3) does on
 * a gfx9 dGPU (Documentation/kfd-interface.md §3): VAs reserved with PROT_NONE anonymous mmaps
 * inside the GPUVM aperture, VRAM and GTT CPU-mapped through the render node
 * at the BO's VA, userptr memory registered from anonymous pages, a doorbell
 * and an MMIO-remap page mapped from /dev/kfd, a GTT signal page, and one
 * compute queue per GPU whose emulated heartbeat counts at its read pointer.
 *
 * On SIGHUP it rewrites a share of its VRAM and GTT contents (--rewrite-pct),
 * so that a chain of checkpoints sees memory that changes between them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/kfd_ioctl.h>

#include "workload.h"

/* §1.5: /dev/kfd mmap offsets (kernel-private, de-facto ABI) */
#define MMAP_TYPE_DOORBELL (0x3ULL << 62)
#define MMAP_GPU_ID(id)	   (((uint64_t)(id) << 46) & (0xffffULL << 46))
/* §1.5/§3.5: gfx9 process doorbell slice: 1024 doorbells of 8 bytes */
#define DOORBELL_SLICE 8192ULL
/* §1.6: the signal page holds 4096 slots of 8 bytes */
#define EVENT_PAGE_SIZE (KFD_SIGNAL_EVENT_LIMIT * 8ULL)

#define RING_SIZE	     (16 * 1024ULL)
#define EOP_SIZE	     4096ULL
#define QCTL_SIZE	     4096ULL
#define QCTL_RPTR	     0x00
#define QCTL_WPTR	     0x40
#define GTT_CONTENT_SIZE     (1024 * 1024ULL + 12 * 1024)
#define USERPTR_CONTENT_SIZE (1024 * 1024ULL + 20 * 1024)
#define QUEUE_PRIORITY	     7

#define F_VRAM	   KFD_IOC_ALLOC_MEM_FLAGS_VRAM
#define F_GTT	   KFD_IOC_ALLOC_MEM_FLAGS_GTT
#define F_USERPTR  KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
#define F_DOORBELL KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
#define F_MMIO	   KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP
#define F_WRITABLE KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
#define F_EXEC	   KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE
#define F_PUBLIC   KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC
#define F_NO_SUBST KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
#define F_COHERENT KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
#define F_UNCACHED KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED

enum bo_kind {
	BO_VRAM,	/* VRAM with host access: render node, rw-s */
	BO_VRAM_NOHOST, /* VRAM without: render node, ---p */
	BO_GTT,
	BO_USERPTR,
	BO_RING,   /* queue ring, GTT */
	BO_EOP,	   /* queue EOP buffer, VRAM without host access */
	BO_CWSR,   /* context save area, userptr */
	BO_QCTL,   /* read/write pointers, userptr */
	BO_EVENTS, /* signal page, GTT */
	BO_DOORBELL,
	BO_MMIO,
};

struct kind_info {
	const char *name;
	bool content;	/* filled with the pattern and verified byte by byte */
	bool rewritten; /* content a rewrite changes: the VRAM and GTT contents, not queue memory */
	enum wl_backing backing;
	const char *perms;
};

static const struct kind_info kinds[] = {
	[BO_VRAM] = { "vram", true, true, WL_BACK_RENDER, "rw-s" },
	[BO_VRAM_NOHOST] = { "vram-nohost", true, true, WL_BACK_RENDER, "---p" },
	[BO_GTT] = { "gtt", true, true, WL_BACK_RENDER, "rw-s" },
	[BO_USERPTR] = { "userptr", true, false, WL_BACK_ANON, "rw-p" },
	[BO_RING] = { "ring", true, false, WL_BACK_RENDER, "rw-s" },
	/* the CP writes EOP and CWSR areas on real hardware: not compared */
	[BO_EOP] = { "eop", false, false, WL_BACK_RENDER, "---p" },
	[BO_CWSR] = { "cwsr", false, false, WL_BACK_ANON, "rw-p" },
	[BO_QCTL] = { "qctl", false, false, WL_BACK_ANON, "rw-p" },
	[BO_EVENTS] = { "events", false, false, WL_BACK_RENDER, "rw-s" },
	[BO_DOORBELL] = { "doorbell", false, false, WL_BACK_KFD, "rw-s" },
	[BO_MMIO] = { "mmio", false, false, WL_BACK_KFD, "rw-s" },
};

struct bo {
	enum bo_kind kind;
	unsigned int gpu; /* index of the owning GPU */
	uint64_t va, size, handle, offset;
	uint32_t flags;
	uint32_t mapped;     /* GPU indices it is mapped to */
	uint32_t generation; /* of its pattern: the rewrites that gave it a new one */
};

struct gpu {
	struct wl_gpu_node n;
	int render_fd;
	uint64_t gpuvm_base, gpuvm_limit;
	uint32_t queue_id;
	uint64_t doorbell_offset;
	int ring, eop, cwsr, qctl, doorbell, mmio; /* BO indices */
	uint32_t ctx_save_size, ctl_stack_size;
	char hb_name[64];
};

struct ctx {
	struct wl_opts o;
	int kfd;
	unsigned int n_nodes; /* topology nodes, CPUs included */
	unsigned int n_gpus;
	struct gpu gpu[WL_MAX_GPUS];
	struct bo *bos;
	unsigned int n_bos, cap_bos;
	uint64_t seed;
	uint64_t va_lo, va_hi; /* the GPUVM aperture all GPUs share */
	uint32_t ev_auto, ev_manual, ev_signaled;
	struct wl_heartbeat hb[WL_MAX_GPUS]; /* each GPU's queue */
	int events;
	/*
	 * Rewrites: the BO the next one starts at, and how many were served. In
	 * the process's own memory, as the BOs' generations are, so that a
	 * restored process knows what its memory holds.
	 */
	unsigned int rewrite_next, rewrites;
};

static int kfd_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	/* like the thunk: retry what a signal or a busy driver interrupted */
	do {
		ret = ioctl(fd, req, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN));
	return ret == -1 ? -errno : ret;
}

static uint32_t all_gpus(const struct ctx *c)
{
	return c->n_gpus >= 32 ? ~0u : (1u << c->n_gpus) - 1;
}

/* ---- setup ------------------------------------------------------------- */

static int open_kfd(struct ctx *c)
{
	struct kfd_ioctl_get_version_args ver = { 0 };
	int ret;

	c->kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (c->kfd < 0) {
		wl_err("cannot open /dev/kfd: %s", strerror(errno));
		return WL_EXIT_SKIP;
	}
	ret = kfd_ioctl(c->kfd, AMDKFD_IOC_GET_VERSION, &ver);
	if (ret || ver.major_version != 1) {
		wl_err("GET_VERSION: %s, version %u.%u", strerror(-ret), ver.major_version, ver.minor_version);
		return WL_EXIT_SETUP;
	}
	return 0;
}

/*
 * /dev/kfd first, then one render node per GPU, as the thunk does; with
 * --render-first the other way round, so that the render fds get the lower
 * numbers (criu restores a task's files in fd order).
 */
static int open_devices(struct ctx *c)
{
	struct wl_gpu_node nodes[WL_MAX_GPUS];
	unsigned int n_nodes, i;
	int ret;

	if (!c->o.render_first) {
		ret = open_kfd(c);
		if (ret)
			return ret;
	}

	ret = wl_pick_gpus(&c->o, nodes, &c->n_gpus, &n_nodes);
	if (ret)
		return ret;

	for (i = 0; i < c->n_gpus; i++) {
		struct gpu *g = &c->gpu[i];
		char path[64];

		g->n = nodes[i];
		snprintf(path, sizeof(path), "/dev/dri/renderD%u", g->n.render_minor);
		g->render_fd = open(path, O_RDWR | O_CLOEXEC);
		if (g->render_fd < 0) {
			wl_err("cannot open '%s' for gpu 0x%x: %s", path, g->n.gpu_id, strerror(errno));
			return WL_EXIT_SETUP;
		}
		snprintf(g->hb_name, sizeof(g->hb_name), "queue on gpu 0x%x", g->n.gpu_id);
	}
	c->n_nodes = n_nodes;
	return c->o.render_first ? open_kfd(c) : 0;
}

/* GET_PROCESS_APERTURES_NEW, then bind each GPU's VM to our render file (§3.2). */
static int acquire_vms(struct ctx *c)
{
	struct kfd_process_device_apertures ap[WL_MAX_GPUS + 1];
	struct kfd_ioctl_get_process_apertures_new_args args = {
		.kfd_process_device_apertures_ptr = (uintptr_t)ap,
		.num_of_nodes = c->n_nodes,
	};
	unsigned int i, j;
	int ret;

	if (c->n_nodes > WL_MAX_GPUS + 1)
		args.num_of_nodes = WL_MAX_GPUS + 1;
	memset(ap, 0, sizeof(ap));
	ret = kfd_ioctl(c->kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &args);
	if (ret) {
		wl_err("GET_PROCESS_APERTURES_NEW(%u nodes): %s", c->n_nodes, strerror(-ret));
		return WL_EXIT_SETUP;
	}

	c->va_lo = 0;
	c->va_hi = UINT64_MAX;
	for (i = 0; i < c->n_gpus; i++) {
		struct gpu *g = &c->gpu[i];
		struct kfd_ioctl_acquire_vm_args acq = {
			.drm_fd = (uint32_t)g->render_fd,
			.gpu_id = g->n.gpu_id,
		};
		struct kfd_ioctl_set_memory_policy_args pol;

		for (j = 0; j < args.num_of_nodes; j++)
			if (ap[j].gpu_id == g->n.gpu_id)
				break;
		if (j == args.num_of_nodes) {
			wl_err("GET_PROCESS_APERTURES_NEW has no entry for gpu 0x%x", g->n.gpu_id);
			return WL_EXIT_SETUP;
		}
		g->gpuvm_base = ap[j].gpuvm_base;
		g->gpuvm_limit = ap[j].gpuvm_limit;
		if (g->gpuvm_base > c->va_lo)
			c->va_lo = g->gpuvm_base;
		if (g->gpuvm_limit < c->va_hi)
			c->va_hi = g->gpuvm_limit;

		ret = kfd_ioctl(c->kfd, AMDKFD_IOC_ACQUIRE_VM, &acq);
		if (ret) {
			wl_err("ACQUIRE_VM(gpu 0x%x, renderD%u): %s", g->n.gpu_id, g->n.render_minor, strerror(-ret));
			return WL_EXIT_SETUP;
		}
		/* as the thunk: non-coherent by default, the SVM aperture coherent */
		pol = (struct kfd_ioctl_set_memory_policy_args) {
			.alternate_aperture_base = g->gpuvm_base,
			.alternate_aperture_size = g->gpuvm_limit - g->gpuvm_base + 1,
			.gpu_id = g->n.gpu_id,
			.default_policy = KFD_IOC_CACHE_POLICY_NONCOHERENT,
			.alternate_policy = KFD_IOC_CACHE_POLICY_COHERENT,
		};
		ret = kfd_ioctl(c->kfd, AMDKFD_IOC_SET_MEMORY_POLICY, &pol);
		if (ret) {
			wl_err("SET_MEMORY_POLICY(gpu 0x%x): %s", g->n.gpu_id, strerror(-ret));
			return WL_EXIT_SETUP;
		}
	}
	return 0;
}

/*
 * A VA range for a BO: like the thunk on a 48-bit GPUVM, an anonymous
 * PROT_NONE reservation that the BO's own mapping later replaces.
 */
static uint64_t reserve_va(struct ctx *c, uint64_t size, uint64_t align)
{
	uint8_t *p, *start;

	p = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	start = (uint8_t *)(uintptr_t)wl_align((uintptr_t)p, align);
	if (start > p)
		munmap(p, (size_t)(start - p));
	if (start + size < p + size + align)
		munmap(start + size, (size_t)(p + size + align - (start + size)));
	if ((uint64_t)(uintptr_t)start < c->va_lo || (uint64_t)(uintptr_t)start + size - 1 > c->va_hi) {
		munmap(start, size);
		errno = ERANGE;
		return 0;
	}
	return (uint64_t)(uintptr_t)start;
}

static struct bo *new_bo(struct ctx *c)
{
	return wl_array_slot((void **)&c->bos, c->n_bos, &c->cap_bos, sizeof(*c->bos));
}

/*
 * Allocate a BO of @kind on GPU @gi and give it its CPU mapping at its VA the
 * way the thunk does; returns its index or -errno. The BO is not yet mapped to
 * any GPU.
 */
static int alloc_bo(struct ctx *c, unsigned int gi, enum bo_kind kind, uint64_t size, uint32_t flags)
{
	struct gpu *g = &c->gpu[gi];
	struct kfd_ioctl_alloc_memory_of_gpu_args args = { 0 };
	uint64_t align = size >= (2ULL << 20) ? (2ULL << 20) : WL_PAGE;
	struct bo *bo = new_bo(c);
	void *p = NULL;
	int ret;

	if (!bo)
		return -ENOMEM;
	bo->kind = kind;
	bo->gpu = gi;
	bo->size = size;
	bo->flags = flags;
	bo->va = reserve_va(c, size, align);
	if (!bo->va) {
		ret = -errno;
		wl_err("no VA for a %s BO of 0x%" PRIx64 " bytes in [0x%" PRIx64 ", 0x%" PRIx64 "]: %s",
		       kinds[kind].name, size, c->va_lo, c->va_hi, strerror(-ret));
		return ret;
	}

	if (flags & F_USERPTR) {
		/* user memory first; KFD pins it when the BO is created */
		p = mmap((void *)(uintptr_t)bo->va, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			wl_err("mmap of userptr memory at 0x%" PRIx64 ": %s", bo->va, strerror(-ret));
			return ret;
		}
		if (kinds[kind].content)
			wl_fill(p, size, c->seed, c->n_bos);
		else
			memset(p, 0, size);
		args.mmap_offset = bo->va;
	}

	args.va_addr = bo->va;
	args.size = size;
	args.gpu_id = g->n.gpu_id;
	args.flags = flags;
	ret = kfd_ioctl(c->kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &args);
	if (ret) {
		wl_err("ALLOC_MEMORY_OF_GPU(gpu 0x%x, %s, va 0x%" PRIx64 ", size 0x%" PRIx64 ", flags 0x%x): %s",
		       g->n.gpu_id, kinds[kind].name, bo->va, size, flags, strerror(-ret));
		return ret;
	}
	bo->handle = args.handle;
	bo->offset = args.mmap_offset;

	switch (kinds[kind].backing) {
	case WL_BACK_RENDER:
		if (!strcmp(kinds[kind].perms, "rw-s"))
			p = mmap((void *)(uintptr_t)bo->va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
				 g->render_fd, (off_t)bo->offset);
		else
			p = mmap((void *)(uintptr_t)bo->va, size, PROT_NONE, MAP_PRIVATE | MAP_FIXED, g->render_fd,
				 (off_t)bo->offset);
		break;
	case WL_BACK_KFD:
		if (kind == BO_DOORBELL)
			bo->offset = MMAP_TYPE_DOORBELL | MMAP_GPU_ID(g->n.gpu_id);
		p = mmap((void *)(uintptr_t)bo->va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, c->kfd,
			 (off_t)bo->offset);
		break;
	default:
		bo->offset = bo->va;
		break;
	}
	if (p == MAP_FAILED) {
		ret = -errno;
		wl_err("mmap of %s BO (gpu 0x%x, va 0x%" PRIx64 ", size 0x%" PRIx64 ", offset 0x%" PRIx64 "): %s",
		       kinds[kind].name, g->n.gpu_id, bo->va, size, bo->offset, strerror(-ret));
		return ret;
	}
	c->n_bos++;
	return (int)(c->n_bos - 1);
}

/*
 * MAP_MEMORY_TO_GPU or UNMAP_MEMORY_FROM_GPU (@req: one argument layout under
 * two names) of @bo on the GPUs in mask @gpus; *@n_success as KFD counts it.
 */
static int map_ioctl(struct ctx *c, unsigned long req, const struct bo *bo, uint32_t gpus, uint32_t *n_success)
{
	uint32_t ids[WL_MAX_GPUS];
	struct kfd_ioctl_map_memory_to_gpu_args args = {
		.handle = bo->handle,
		.device_ids_array_ptr = (uintptr_t)ids,
	};
	unsigned int i;
	int ret;

	_Static_assert(sizeof(args) == sizeof(struct kfd_ioctl_unmap_memory_from_gpu_args), "one layout");
	for (i = 0; i < WL_MAX_GPUS; i++)
		if (gpus & (1u << i))
			ids[args.n_devices++] = c->gpu[i].n.gpu_id;
	ret = kfd_ioctl(c->kfd, req, &args);
	*n_success = args.n_success;
	return ret;
}

static int map_bo(struct ctx *c, struct bo *bo, uint32_t gpus)
{
	uint32_t n;
	int ret = map_ioctl(c, AMDKFD_IOC_MAP_MEMORY_TO_GPU, bo, gpus, &n);

	if (!ret && n != (uint32_t)__builtin_popcount(gpus))
		ret = -EIO;
	if (!ret)
		bo->mapped |= gpus;
	return ret;
}

static int unmap_bo(struct ctx *c, struct bo *bo, uint32_t gpus, uint32_t *n_success)
{
	uint32_t n;
	int ret = map_ioctl(c, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, bo, gpus, &n);

	if (n_success)
		*n_success = n;
	if (!ret)
		bo->mapped &= ~gpus;
	return ret;
}

static int alloc_and_map(struct ctx *c, unsigned int gi, enum bo_kind kind, uint64_t size, uint32_t flags,
			 uint32_t gpus)
{
	int idx = alloc_bo(c, gi, kind, size, flags), ret;

	if (idx < 0)
		return idx;
	ret = map_bo(c, &c->bos[idx], gpus);
	if (ret) {
		wl_err("MAP_MEMORY_TO_GPU(%s BO 0x%" PRIx64 ", gpus 0x%x): %s", kinds[kind].name, c->bos[idx].handle,
		       gpus, strerror(-ret));
		return ret;
	}
	return idx;
}

/*
 * VRAM without host access is written through a temporary shared mapping of
 * the render node at the BO's current mmap offset (the emulator, like a
 * large-BAR GPU, keeps all VRAM CPU-visible).
 */
static void *map_nohost(struct ctx *c, const struct bo *bo, unsigned int minor, uint64_t offset)
{
	return wl_map_render(c->gpu[bo->gpu].render_fd, minor, offset, bo->size);
}

static int content_bos(struct ctx *c, unsigned int gi)
{
	unsigned int i, n = wl_content_bos(&c->o, gi);
	int idx;

	/* several BOs, host-visible and not, alternating; at least one of each */
	for (i = 0; i < n; i++) {
		bool nohost = i & 1;
		uint64_t size = wl_content_bo_size(&c->o, gi, i);
		uint32_t flags = F_VRAM | F_WRITABLE | F_NO_SUBST | (nohost ? F_COHERENT : F_PUBLIC | F_EXEC);
		struct bo *bo;

		idx = alloc_and_map(c, gi, nohost ? BO_VRAM_NOHOST : BO_VRAM, size, flags, all_gpus(c));
		if (idx < 0)
			return WL_EXIT_SETUP;
		bo = &c->bos[idx];
		if (nohost) {
			void *p = map_nohost(c, bo, c->gpu[gi].n.render_minor, bo->offset);

			if (!p) {
				wl_err("cannot map VRAM BO 0x%" PRIx64 " without host access through"
				       " renderD%u at 0x%" PRIx64 " to fill it: %s",
				       bo->handle, c->gpu[gi].n.render_minor, bo->offset, strerror(errno));
				return WL_EXIT_SETUP;
			}
			wl_fill(p, size, c->seed, (uint32_t)idx);
			munmap(p, size);
		} else {
			wl_fill((void *)(uintptr_t)bo->va, size, c->seed, (uint32_t)idx);
		}
	}

	idx = alloc_and_map(c, gi, BO_GTT, GTT_CONTENT_SIZE, F_GTT | F_WRITABLE | F_NO_SUBST | F_COHERENT, all_gpus(c));
	if (idx < 0)
		return WL_EXIT_SETUP;
	wl_fill((void *)(uintptr_t)c->bos[idx].va, GTT_CONTENT_SIZE, c->seed, (uint32_t)idx);

	idx = alloc_and_map(c, gi, BO_USERPTR, USERPTR_CONTENT_SIZE,
			    F_USERPTR | F_WRITABLE | F_EXEC | F_NO_SUBST | F_COHERENT, all_gpus(c));
	return idx < 0 ? WL_EXIT_SETUP : 0;
}

static int create_event(struct ctx *c, uint64_t page_handle, bool auto_reset, uint32_t *id)
{
	struct kfd_ioctl_create_event_args args = {
		.event_page_offset = page_handle,
		.event_type = KFD_IOC_EVENT_SIGNAL,
		.auto_reset = auto_reset,
	};
	int ret;

	ret = kfd_ioctl(c->kfd, AMDKFD_IOC_CREATE_EVENT, &args);
	if (ret) {
		wl_err("CREATE_EVENT(auto_reset %d, page 0x%" PRIx64 "): %s", auto_reset, page_handle, strerror(-ret));
		return ret;
	}
	*id = args.event_id;
	return 0;
}

static int set_event(struct ctx *c, uint32_t id)
{
	struct kfd_ioctl_set_event_args args = { .event_id = id };

	return kfd_ioctl(c->kfd, AMDKFD_IOC_SET_EVENT, &args);
}

static int reset_event(struct ctx *c, uint32_t id)
{
	struct kfd_ioctl_reset_event_args args = { .event_id = id };

	return kfd_ioctl(c->kfd, AMDKFD_IOC_RESET_EVENT, &args);
}

/* WAIT_EVENTS on one event; the wait result, or -errno. */
static int wait_event(struct ctx *c, uint32_t id, uint32_t timeout_ms)
{
	struct kfd_event_data ev = { .event_id = id };
	struct kfd_ioctl_wait_events_args args = {
		.events_ptr = (uintptr_t)&ev,
		.num_events = 1,
		.wait_for_all = 1,
		.timeout = timeout_ms,
	};
	int ret;

	ret = kfd_ioctl(c->kfd, AMDKFD_IOC_WAIT_EVENTS, &args);
	return ret ? ret : (int)args.wait_result;
}

/*
 * The thunk's dGPU event setup (§3.6): a 32 KiB GTT signal page on the first
 * GPU, mapped to all of them, handed to KFD with the first event.
 */
static int events_setup(struct ctx *c)
{
	int ret;

	c->events = alloc_and_map(c, 0, BO_EVENTS, EVENT_PAGE_SIZE,
				  F_GTT | F_WRITABLE | F_NO_SUBST | F_COHERENT | F_UNCACHED, all_gpus(c));
	if (c->events < 0)
		return WL_EXIT_SETUP;
	if (create_event(c, c->bos[c->events].handle, true, &c->ev_auto) || create_event(c, 0, false, &c->ev_manual) ||
	    create_event(c, 0, false, &c->ev_signaled))
		return WL_EXIT_SETUP;
	/* stays signaled for the life of the process: a manual-reset event keeps its state */
	ret = set_event(c, c->ev_signaled);
	if (ret) {
		wl_err("SET_EVENT(%u): %s", c->ev_signaled, strerror(-ret));
		return WL_EXIT_SETUP;
	}
	return 0;
}

/* §3.5: the context save area the thunk sizes for a gfx9 queue. */
static void cwsr_sizes(struct gpu *g)
{
	uint32_t cus = g->n.simd_per_cu ? g->n.simd_count / g->n.simd_per_cu : 0;
	uint32_t vgpr = (g->n.gfx_target_version == 90008 || g->n.gfx_target_version == 90010) ? 0x80000 : 0x40000;
	uint32_t per_cu = vgpr + 0x4000 + 0x10000 + 0x1000;
	uint32_t se = g->n.simd_arrays_per_engine ? g->n.array_count / g->n.simd_arrays_per_engine : 1;
	uint32_t waves;

	if (!cus)
		cus = 1;
	waves = cus * 40;
	if (se && se * 512 < waves)
		waves = se * 512;
	g->ctl_stack_size = (uint32_t)wl_align(waves * 8 + 8, WL_PAGE);
	g->ctx_save_size = g->ctl_stack_size + (uint32_t)wl_align((uint64_t)cus * per_cu, WL_PAGE);
}

static int queue_setup(struct ctx *c, unsigned int gi)
{
	struct gpu *g = &c->gpu[gi];
	uint32_t own = 1u << gi;
	struct kfd_ioctl_create_queue_args args = { 0 };
	int ret;

	cwsr_sizes(g);
	g->ring = alloc_and_map(c, gi, BO_RING, RING_SIZE, F_GTT | F_WRITABLE | F_EXEC | F_NO_SUBST | F_COHERENT, own);
	if (g->ring < 0)
		return WL_EXIT_SETUP;
	wl_fill((void *)(uintptr_t)c->bos[g->ring].va, RING_SIZE, c->seed, (uint32_t)g->ring);
	g->qctl = alloc_and_map(c, gi, BO_QCTL, QCTL_SIZE, F_USERPTR | F_WRITABLE | F_NO_SUBST | F_COHERENT, own);
	g->eop = alloc_and_map(c, gi, BO_EOP, EOP_SIZE, F_VRAM | F_WRITABLE | F_EXEC | F_NO_SUBST | F_COHERENT, own);
	g->cwsr = alloc_and_map(c, gi, BO_CWSR,
				wl_align(g->ctx_save_size + (uint64_t)(g->ctl_stack_size / 8) * 32, WL_PAGE),
				F_USERPTR | F_WRITABLE | F_EXEC | F_NO_SUBST | F_COHERENT, own);
	if (g->qctl < 0 || g->eop < 0 || g->cwsr < 0)
		return WL_EXIT_SETUP;
	c->hb[gi].name = g->hb_name;
	c->hb[gi].rptr = (volatile uint64_t *)(uintptr_t)(c->bos[g->qctl].va + QCTL_RPTR);

	args.ring_base_address = c->bos[g->ring].va;
	args.ring_size = RING_SIZE;
	args.read_pointer_address = c->bos[g->qctl].va + QCTL_RPTR;
	args.write_pointer_address = c->bos[g->qctl].va + QCTL_WPTR;
	args.gpu_id = g->n.gpu_id;
	args.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE;
	args.queue_percentage = 100;
	args.queue_priority = QUEUE_PRIORITY;
	args.eop_buffer_address = c->bos[g->eop].va;
	args.eop_buffer_size = EOP_SIZE;
	args.ctx_save_restore_address = c->bos[g->cwsr].va;
	args.ctx_save_restore_size = g->ctx_save_size;
	args.ctl_stack_size = g->ctl_stack_size;
	ret = kfd_ioctl(c->kfd, AMDKFD_IOC_CREATE_QUEUE, &args);
	if (ret) {
		wl_err("CREATE_QUEUE(gpu 0x%x): %s", g->n.gpu_id, strerror(-ret));
		return WL_EXIT_SETUP;
	}
	g->queue_id = args.queue_id;
	g->doorbell_offset = args.doorbell_offset;

	/* the process' doorbell slice of this GPU, as a BO at a GPU VA (§3.5) */
	g->doorbell = alloc_and_map(c, gi, BO_DOORBELL, DOORBELL_SLICE,
				    F_DOORBELL | F_WRITABLE | F_NO_SUBST | F_COHERENT, own);
	if (g->doorbell < 0)
		return WL_EXIT_SETUP;
	if ((c->bos[g->doorbell].offset & ~(DOORBELL_SLICE - 1)) != (g->doorbell_offset & ~(DOORBELL_SLICE - 1))) {
		wl_err("CREATE_QUEUE returned doorbell offset 0x%" PRIx64 ", outside the slice at 0x%" PRIx64,
		       g->doorbell_offset, c->bos[g->doorbell].offset);
		return WL_EXIT_SETUP;
	}
	return 0;
}

static int mmio_setup(struct ctx *c, unsigned int gi)
{
	c->gpu[gi].mmio =
		alloc_and_map(c, gi, BO_MMIO, WL_PAGE, F_MMIO | F_WRITABLE | F_NO_SUBST | F_COHERENT, 1u << gi);
	return c->gpu[gi].mmio < 0 ? WL_EXIT_SETUP : 0;
}

static int write_state(struct ctx *c)
{
	char tmp[4200];
	unsigned int i;
	FILE *f;
	int ret;

	f = wl_state_begin(c->o.state, tmp, sizeof(tmp));
	if (!f) {
		wl_err("cannot create '%s': %s", tmp, strerror(errno));
		return WL_EXIT_SETUP;
	}
	fprintf(f, "workload kfd\npid %d\nseed 0x%016" PRIx64 "\ngpus %u\n", (int)getpid(), c->seed, c->n_gpus);
	for (i = 0; i < c->n_gpus; i++)
		fprintf(f, "gpu %u node %u gpu_id 0x%x render_minor %u\n", i, c->gpu[i].n.node, c->gpu[i].n.gpu_id,
			c->gpu[i].n.render_minor);
	for (i = 0; i < c->n_bos; i++) {
		const struct bo *bo = &c->bos[i];

		fprintf(f,
			"bo %u gpu 0x%x kind %s va 0x%" PRIx64 " size 0x%" PRIx64 " flags 0x%x handle 0x%" PRIx64
			" offset 0x%" PRIx64 " content %d mapped 0x%x\n",
			i, c->gpu[bo->gpu].n.gpu_id, kinds[bo->kind].name, bo->va, bo->size, bo->flags, bo->handle,
			bo->offset, kinds[bo->kind].content, bo->mapped);
	}
	for (i = 0; i < c->n_gpus; i++) {
		const struct gpu *g = &c->gpu[i];

		fprintf(f,
			"queue %u gpu 0x%x id %u type compute rptr 0x%" PRIx64 " wptr 0x%" PRIx64 " ring 0x%" PRIx64
			" ring_size 0x%llx"
			" doorbell_offset 0x%" PRIx64 "\n",
			i, g->n.gpu_id, g->queue_id, c->bos[g->qctl].va + QCTL_RPTR, c->bos[g->qctl].va + QCTL_WPTR,
			c->bos[g->ring].va, RING_SIZE, g->doorbell_offset);
	}
	fprintf(f, "event %u type signal auto_reset 1 signaled 0\n", c->ev_auto);
	fprintf(f, "event %u type signal auto_reset 0 signaled 0\n", c->ev_manual);
	fprintf(f, "event %u type signal auto_reset 0 signaled 1\n", c->ev_signaled);
	wl_host_state(f);
	fprintf(f, "ready\n");
	ret = wl_state_commit(f, tmp, c->o.state);
	if (ret) {
		wl_err("cannot write '%s': %s", c->o.state, strerror(-ret));
		return WL_EXIT_SETUP;
	}
	return 0;
}

static int setup(struct ctx *c)
{
	unsigned int i;
	int ret;

	ret = open_devices(c);
	if (!ret)
		ret = acquire_vms(c);
	for (i = 0; !ret && i < c->n_gpus; i++)
		ret = mmio_setup(c, i);
	for (i = 0; !ret && i < c->n_gpus; i++)
		ret = content_bos(c, i);
	if (!ret)
		ret = events_setup(c);
	for (i = 0; !ret && i < c->n_gpus; i++)
		ret = queue_setup(c, i);
	if (!ret)
		ret = write_state(c);
	return ret;
}

/* ---- verification -------------------------------------------------------- */

/* "bo 3 (vram, gpu 0xc1e6, va 0x..., size 0x...)", and the generation of its pattern once rewritten */
static void bo_name(const struct ctx *c, unsigned int i, char *buf, size_t len)
{
	const struct bo *bo = &c->bos[i];
	int n;

	n = snprintf(buf, len, "bo %u (%s, gpu 0x%x, va 0x%" PRIx64 ", size 0x%" PRIx64, i, kinds[bo->kind].name,
		     c->gpu[bo->gpu].n.gpu_id, bo->va, bo->size);
	if (n < 0 || (size_t)n >= len)
		return;
	if (bo->generation)
		snprintf(buf + n, len - (size_t)n, ", generation %u)", bo->generation);
	else
		snprintf(buf + n, len - (size_t)n, ")");
}

static struct wl_bo_view bo_view(const struct ctx *c, unsigned int i, const char *name)
{
	const struct bo *bo = &c->bos[i];
	const struct kind_info *k = &kinds[bo->kind];

	return (struct wl_bo_view) {
		.name = name,
		.va = bo->va,
		.size = bo->size,
		.backing = k->backing,
		.perms = k->perms,
		.content = k->content,
		.index = i,
		.seed = c->seed,
		.generation = bo->generation,
		.render_fd = c->gpu[bo->gpu].render_fd,
	};
}

static void verify_bo(struct ctx *c, unsigned int i, struct wl_report *r)
{
	struct wl_bo_view view;
	char name[192];

	bo_name(c, i, name, sizeof(name));
	view = bo_view(c, i, name);
	wl_check_bo(r, &view);
}

/* The saved handle still names the BO: unmapping and mapping it again works. */
static void verify_handle(struct ctx *c, unsigned int i, struct wl_report *r)
{
	struct bo *bo = &c->bos[i];
	uint32_t gpus = bo->mapped, n = 0;
	char name[192];
	int ret;

	bo_name(c, i, name, sizeof(name));
	ret = unmap_bo(c, bo, gpus, &n);
	if (ret) {
		wl_fail(r,
			"%s: UNMAP_MEMORY_FROM_GPU(handle 0x%" PRIx64 ", gpus 0x%x): expected"
			" success, got %s (n_success %u)",
			name, bo->handle, gpus, strerror(-ret), n);
		return;
	}
	ret = map_bo(c, bo, gpus);
	if (ret) {
		wl_fail(r,
			"%s: MAP_MEMORY_TO_GPU(handle 0x%" PRIx64 ", gpus 0x%x) after unmap:"
			" expected success, got %s",
			name, bo->handle, gpus, strerror(-ret));
		bo->mapped = gpus; /* keep trying the next time */
		return;
	}
	wl_pass(r);
}

static const char *wait_result_name(int res)
{
	switch (res) {
	case KFD_IOC_WAIT_RESULT_COMPLETE:
		return "complete";
	case KFD_IOC_WAIT_RESULT_TIMEOUT:
		return "timeout";
	case KFD_IOC_WAIT_RESULT_FAIL:
		return "fail";
	default:
		return res < 0 ? strerror(-res) : "?";
	}
}

static bool expect_wait(struct ctx *c, struct wl_report *r, const char *what, uint32_t id, uint32_t timeout, int want)
{
	int res = wait_event(c, id, timeout);

	if (res == want) {
		wl_pass(r);
		return true;
	}
	wl_fail(r, "event %u: %s: WAIT_EVENTS(timeout %u ms) expected %s, got %s", id, what, timeout,
		wait_result_name(want), wait_result_name(res));
	return false;
}

static bool expect_ok(struct wl_report *r, const char *what, uint32_t id, int ret)
{
	if (!ret) {
		wl_pass(r);
		return true;
	}
	wl_fail(r, "event %u: %s: expected success, got %s", id, what, strerror(-ret));
	return false;
}

static void verify_events(struct ctx *c, struct wl_report *r)
{
	const int done = KFD_IOC_WAIT_RESULT_COMPLETE, timeout = KFD_IOC_WAIT_RESULT_TIMEOUT;
	uint32_t a = c->ev_auto, m = c->ev_manual, s = c->ev_signaled;

	/* auto-reset: a SET wakes one wait and is consumed by it */
	if (expect_wait(c, r, "auto-reset, not set", a, 0, timeout) && expect_ok(r, "SET_EVENT", a, set_event(c, a)) &&
	    expect_wait(c, r, "auto-reset, set", a, 1000, done))
		expect_wait(c, r, "auto-reset, after a completed wait", a, 0, timeout);

	/* manual reset: signaled until RESET_EVENT */
	if (expect_wait(c, r, "manual-reset, not set", m, 0, timeout) &&
	    expect_ok(r, "SET_EVENT", m, set_event(c, m)) && expect_wait(c, r, "manual-reset, set", m, 1000, done) &&
	    expect_wait(c, r, "manual-reset, waited once", m, 0, done) &&
	    expect_ok(r, "RESET_EVENT", m, reset_event(c, m)))
		expect_wait(c, r, "manual-reset, after RESET_EVENT", m, 0, timeout);

	/* set once at start-up, never reset */
	expect_wait(c, r, "manual-reset, signaled since start-up", s, 0, done);
}

/* The queue ids are still ours: an UPDATE_QUEUE with the same properties works. */
static void verify_queues(struct ctx *c, struct wl_report *r)
{
	unsigned int i;

	for (i = 0; i < c->n_gpus; i++) {
		const struct gpu *g = &c->gpu[i];
		struct kfd_ioctl_update_queue_args args = {
			.ring_base_address = c->bos[g->ring].va,
			.queue_id = g->queue_id,
			.ring_size = RING_SIZE,
			.queue_percentage = 100,
			.queue_priority = QUEUE_PRIORITY,
		};
		int ret = kfd_ioctl(c->kfd, AMDKFD_IOC_UPDATE_QUEUE, &args);

		if (ret)
			wl_fail(r,
				"queue %u (gpu 0x%x): UPDATE_QUEUE with its own properties:"
				" expected success, got %s",
				g->queue_id, g->n.gpu_id, strerror(-ret));
		else
			wl_pass(r);
	}
}

static void heartbeat(void *arg, struct wl_report *r)
{
	struct ctx *c = arg;

	wl_check_heartbeats(r, c->hb, c->n_gpus, c->o.hb_timeout_ms);
}

static void verify(void *arg, struct wl_report *r)
{
	struct ctx *c = arg;
	unsigned int i;

	for (i = 0; i < c->n_bos; i++)
		verify_bo(c, i, r);
	for (i = 0; i < c->n_bos; i++)
		if (kinds[c->bos[i].kind].content)
			verify_handle(c, i, r);
	verify_events(c, r);
	verify_queues(c, r);
}

/* ---- rewrite ------------------------------------------------------------- */

/* Give BO @i the next generation of its pattern; on a failure it keeps the generation it had. */
static bool rewrite_bo(struct ctx *c, unsigned int i, struct wl_report *r)
{
	struct bo *bo = &c->bos[i];
	struct wl_bo_view view;
	char name[192];

	bo_name(c, i, name, sizeof(name));
	view = bo_view(c, i, name);
	view.generation++;
	if (!wl_rewrite_bo(r, &view))
		return false;
	bo->generation = view.generation;
	return true;
}

/*
 * The next rewritten-kind BOs in index order, from where the last rewrite
 * stopped and wrapping around, until at least @pct % of their bytes are
 * rewritten: one pass at most, so a BO is rewritten once per request.
 */
static void rewrite(void *arg, unsigned int pct, struct wl_rewrite *w, struct wl_report *r)
{
	struct ctx *c = arg;
	uint64_t want;
	unsigned int i, seen;

	for (i = 0; i < c->n_bos; i++)
		if (kinds[c->bos[i].kind].rewritten)
			w->total += c->bos[i].size;
	want = (w->total * pct + 99) / 100;
	w->n = ++c->rewrites;

	i = c->rewrite_next % c->n_bos;
	for (seen = 0; w->bytes < want && seen < c->n_bos; seen++, i = (i + 1) % c->n_bos) {
		if (!kinds[c->bos[i].kind].rewritten)
			continue;
		if (!rewrite_bo(c, i, r))
			break;
		w->bos++;
		w->bytes += c->bos[i].size;
		c->rewrite_next = (i + 1) % c->n_bos;
	}
}

static void teardown(void *arg)
{
	struct ctx *c = arg;
	unsigned int i;

	for (i = 0; i < c->n_gpus; i++) {
		struct kfd_ioctl_destroy_queue_args q = { .queue_id = c->gpu[i].queue_id };

		kfd_ioctl(c->kfd, AMDKFD_IOC_DESTROY_QUEUE, &q);
	}
	for (i = 0; i < c->n_bos; i++) {
		struct bo *bo = &c->bos[i];
		struct kfd_ioctl_free_memory_of_gpu_args f = { .handle = bo->handle };

		if (bo->mapped)
			unmap_bo(c, bo, bo->mapped, NULL);
		/* KFD keeps the signal page until the process goes */
		if ((int)i != c->events)
			kfd_ioctl(c->kfd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f);
		munmap((void *)(uintptr_t)bo->va, bo->size);
	}
	for (i = 0; i < c->n_gpus; i++)
		close(c->gpu[i].render_fd);
	close(c->kfd);
	free(c->bos);
}

int main(int argc, char **argv)
{
	static struct ctx c;
	static const struct wl_ops ops = {
		.verify = verify,
		.heartbeat = heartbeat,
		.teardown = teardown,
		.rewrite = rewrite,
	};
	int ret;

	wl_parse_opts(argc, argv, &c.o);
	wl_signals_block();
	c.seed = wl_seed();
	c.kfd = -1;
	c.events = -1;

	ret = wl_host_setup(&c.o);
	if (!ret)
		ret = setup(&c);
	if (ret)
		return ret;
	wl_info("%u GPU(s), %u BOs, %u queues, 3 events; seed 0x%016" PRIx64, c.n_gpus, c.n_bos, c.n_gpus, c.seed);
	return wl_serve(&c.o, &ops, &c);
}
