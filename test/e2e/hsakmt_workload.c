// SPDX-License-Identifier: GPL-2.0-only
/*
 * hsakmt_workload: the same workload as kfd_workload (contract: README.md),
 * built on ROCm's own thunk, libhsakmt 5.2.3, unmodified. What the thunk
 * keeps private (KFD handles, its MMIO page, doorbells, signal page, EOP and
 * context save areas) it creates itself, as it would for ROCr; the workload
 * owns VRAM with and without host access, GTT and userptr memory, an AQL
 * queue per GPU and three signal events.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* libhsakmt 6.x names KFD debugger structures in its prototypes without declaring them */
#include <linux/kfd_ioctl.h>
#include <hsakmt.h>

#include "workload.h"

#define RING_SIZE	     (64 * 1024ULL)
#define QCTL_SIZE	     4096ULL
#define QCTL_RPTR	     0x00
#define QCTL_WPTR	     0x40
#define GTT_CONTENT_SIZE     (1024 * 1024ULL + 12 * 1024)
#define USERPTR_CONTENT_SIZE (1024 * 1024ULL + 20 * 1024)

enum bo_kind {
	BO_VRAM,	/* GPU node, NonPaged, HostAccess */
	BO_VRAM_NOHOST, /* GPU node, NonPaged, no HostAccess */
	BO_GTT,		/* system, NonPaged: GTT on the first GPU */
	BO_USERPTR,	/* system, paged: anonymous memory + userptr BO */
	BO_RING,	/* AQL ring, paged system memory */
	BO_QCTL,	/* read/write pointers, paged system memory */
};

struct kind_info {
	const char *name;
	bool content;
	enum wl_backing backing;
	const char *perms;
};

static const struct kind_info kinds[] = {
	[BO_VRAM] = { "vram", true, WL_BACK_RENDER, "rw-s" },
	/* a PROT_NONE reservation: private from libhsakmt 5.x, shared from the 6.x thunk */
	[BO_VRAM_NOHOST] = { "vram-nohost", true, WL_BACK_RENDER, "---p|---s" },
	[BO_GTT] = { "gtt", true, WL_BACK_RENDER, "rw-s" },
	[BO_USERPTR] = { "userptr", true, WL_BACK_ANON, "rw-p|rwxp" },
	[BO_RING] = { "ring", true, WL_BACK_ANON, "rw-p|rwxp" },
	[BO_QCTL] = { "qctl", false, WL_BACK_ANON, "rw-p|rwxp" },
};

struct bo {
	enum bo_kind kind;
	unsigned int gpu; /* index of the GPU it belongs to */
	uint32_t node;	  /* hsaKmt node it was allocated on */
	void *va;
	uint64_t size;
	HsaMemFlags flags;
	bool own_gpu_only; /* mapped to its GPU, not to all used */
	uint32_t n_mapped; /* nodes it is mapped to */
	bool mapped;
};

struct gpu {
	struct wl_gpu_node n;
	HsaQueueResource q;
	int ring, qctl; /* BO indices */
	char hb_name[64];
};

struct ctx {
	struct wl_opts o;
	unsigned int n_gpus;
	struct gpu gpu[WL_MAX_GPUS];
	HSAuint32 nodes[WL_MAX_GPUS]; /* hsaKmt node ids of the GPUs used */
	struct bo *bos;
	unsigned int n_bos, cap_bos;
	uint64_t seed;
	HsaEvent *ev_auto, *ev_manual, *ev_signaled;
	struct wl_heartbeat hb[WL_MAX_GPUS]; /* each GPU's AQL queue */
	bool opened;
};

static const char *status_name(HSAKMT_STATUS s)
{
	switch (s) {
	case HSAKMT_STATUS_SUCCESS:
		return "success";
	case HSAKMT_STATUS_ERROR:
		return "error";
	case HSAKMT_STATUS_DRIVER_MISMATCH:
		return "driver mismatch";
	case HSAKMT_STATUS_INVALID_PARAMETER:
		return "invalid parameter";
	case HSAKMT_STATUS_INVALID_HANDLE:
		return "invalid handle";
	case HSAKMT_STATUS_INVALID_NODE_UNIT:
		return "invalid node";
	case HSAKMT_STATUS_NO_MEMORY:
		return "no memory";
	case HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED:
		return "kfd not opened";
	case HSAKMT_STATUS_WAIT_TIMEOUT:
		return "wait timeout";
	case HSAKMT_STATUS_WAIT_FAILURE:
		return "wait failure";
	case HSAKMT_STATUS_NOT_SUPPORTED:
		return "not supported";
	default:
		return "other";
	}
}

/* ---- setup ------------------------------------------------------------- */

static int open_kfd(struct ctx *c)
{
	struct wl_gpu_node nodes[WL_MAX_GPUS];
	HsaSystemProperties sys;
	HSAKMT_STATUS s;
	unsigned int n_nodes, i, node;
	int ret;

	ret = wl_pick_gpus(&c->o, nodes, &c->n_gpus, &n_nodes);
	if (ret)
		return ret;

	s = hsaKmtOpenKFD();
	if (s != HSAKMT_STATUS_SUCCESS) {
		wl_err("hsaKmtOpenKFD: %s (%d)", status_name(s), s);
		return WL_EXIT_SETUP;
	}
	c->opened = true;
	s = hsaKmtAcquireSystemProperties(&sys);
	if (s != HSAKMT_STATUS_SUCCESS) {
		wl_err("hsaKmtAcquireSystemProperties: %s (%d)", status_name(s), s);
		return WL_EXIT_SETUP;
	}

	for (i = 0; i < c->n_gpus; i++) {
		struct gpu *g = &c->gpu[i];
		HsaNodeProperties props;

		g->n = nodes[i];
		g->ring = g->qctl = -1;
		/* the thunk numbers only the nodes it may use: in a container given a subset of the
		 * GPUs its node ids are not sysfs's, so find the GPU by its render minor (this thunk's
		 * node properties have no gpu_id) */
		for (node = 0; node < sys.NumNodes; node++) {
			s = hsaKmtGetNodeProperties(node, &props);
			if (s == HSAKMT_STATUS_SUCCESS && props.DrmRenderMinor == (HSAint32)g->n.render_minor)
				break;
		}
		if (node == sys.NumNodes) {
			wl_err("gpu 0x%x (sysfs node %u) is none of the %u nodes the thunk sees", g->n.gpu_id,
			       g->n.node, sys.NumNodes);
			return WL_EXIT_SETUP;
		}
		g->n.node = node;
		if (!props.NumFComputeCores) {
			wl_err("hsaKmtGetNodeProperties(%u): no SIMDs for gpu 0x%x", node, g->n.gpu_id);
			return WL_EXIT_SETUP;
		}
		c->nodes[i] = g->n.node;
		snprintf(g->hb_name, sizeof(g->hb_name), "AQL queue on gpu 0x%x", g->n.gpu_id);
	}
	return 0;
}

static struct bo *new_bo(struct ctx *c)
{
	return wl_array_slot((void **)&c->bos, c->n_bos, &c->cap_bos, sizeof(*c->bos));
}

static HSAKMT_STATUS map_bo(struct ctx *c, struct bo *bo)
{
	HsaMemMapFlags mf = { .Value = 0 };
	HSAuint32 *nodes = bo->own_gpu_only ? &c->nodes[bo->gpu] : c->nodes;
	uint32_t n_nodes = bo->own_gpu_only ? 1 : c->n_gpus;
	HSAuint64 gpu_va = 0;
	HSAKMT_STATUS s;

	s = hsaKmtMapMemoryToGPUNodes(bo->va, bo->size, &gpu_va, mf, n_nodes, nodes);
	if (s == HSAKMT_STATUS_SUCCESS) {
		bo->mapped = true;
		bo->n_mapped = n_nodes;
	}
	return s;
}

/*
 * hsaKmtAllocMemory on @node with @flags, then map it to GPU @gi only
 * (@own_gpu_only) or to every GPU used. Returns its index.
 */
static int alloc_bo(struct ctx *c, unsigned int gi, enum bo_kind kind, uint32_t node, uint64_t size, HsaMemFlags flags,
		    bool own_gpu_only)
{
	struct bo *bo = new_bo(c);
	HSAKMT_STATUS s;

	if (!bo)
		return -ENOMEM;
	bo->kind = kind;
	bo->gpu = gi;
	bo->node = node;
	bo->size = size;
	bo->flags = flags;
	bo->own_gpu_only = own_gpu_only;
	s = hsaKmtAllocMemory(node, size, flags, &bo->va);
	if (s != HSAKMT_STATUS_SUCCESS) {
		wl_err("hsaKmtAllocMemory(node %u, %s, size 0x%" PRIx64 ", flags 0x%x): %s (%d)", node,
		       kinds[kind].name, size, flags.Value, status_name(s), s);
		return -ENOMEM;
	}
	s = map_bo(c, bo);
	if (s != HSAKMT_STATUS_SUCCESS) {
		wl_err("hsaKmtMapMemoryToGPUNodes(%s at %p, own gpu only %d): %s (%d)", kinds[kind].name, bo->va,
		       own_gpu_only, status_name(s), s);
		return -EIO;
	}
	c->n_bos++;
	return (int)(c->n_bos - 1);
}

/* The render-node offset the thunk mapped VRAM/GTT at, from /proc/self/maps. */
static bool current_offset(const struct bo *bo, uint64_t *offset)
{
	struct wl_vma v;

	if (!wl_find_vma((uint64_t)(uintptr_t)bo->va, &v) || strncmp(v.path, "/dev/dri/renderD", 16))
		return false;
	*offset = wl_vma_offset(&v, (uint64_t)(uintptr_t)bo->va);
	return true;
}

/*
 * The thunk gives no host access to such VRAM and no way to its mmap offset;
 * the offset is the one its PROT_NONE placeholder mapping uses, and the
 * render file KFD accepts it through is the thunk's own, among our fds.
 */
static void *map_nohost(const struct bo *bo, unsigned int minor, uint64_t offset)
{
	return wl_map_render(-1, minor, offset, bo->size);
}

static int content_bos(struct ctx *c, unsigned int gi)
{
	unsigned int i, n = wl_content_bos(&c->o, gi);
	struct gpu *g = &c->gpu[gi];
	uint64_t offset;
	HsaMemFlags f;
	int idx;

	for (i = 0; i < n; i++) {
		bool nohost = i & 1;
		uint64_t size = wl_content_bo_size(&c->o, gi, i);
		struct bo *bo;

		f.Value = 0;
		f.ui32.NonPaged = 1;
		f.ui32.HostAccess = !nohost;
		f.ui32.NoSubstitute = 1;
		f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
		f.ui32.CoarseGrain = !nohost;
		idx = alloc_bo(c, gi, nohost ? BO_VRAM_NOHOST : BO_VRAM, g->n.node, size, f, false);
		if (idx < 0)
			return WL_EXIT_SETUP;
		bo = &c->bos[idx];
		if (nohost) {
			void *p = NULL;

			if (current_offset(bo, &offset))
				p = map_nohost(bo, g->n.render_minor, offset);
			if (!p) {
				wl_err("cannot map VRAM at %p without host access through renderD%u"
				       " to fill it: %s",
				       bo->va, g->n.render_minor, strerror(errno));
				return WL_EXIT_SETUP;
			}
			wl_fill(p, size, c->seed, (uint32_t)idx);
			munmap(p, size);
		} else {
			wl_fill(bo->va, size, c->seed, (uint32_t)idx);
		}
	}

	/* system memory: node 0; the thunk puts GTT on the first GPU */
	f.Value = 0;
	f.ui32.NonPaged = 1;
	f.ui32.HostAccess = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	idx = alloc_bo(c, gi, BO_GTT, 0, GTT_CONTENT_SIZE, f, false);
	if (idx < 0)
		return WL_EXIT_SETUP;
	wl_fill(c->bos[idx].va, GTT_CONTENT_SIZE, c->seed, (uint32_t)idx);

	f.ui32.NonPaged = 0;
	idx = alloc_bo(c, gi, BO_USERPTR, 0, USERPTR_CONTENT_SIZE, f, false);
	if (idx < 0)
		return WL_EXIT_SETUP;
	wl_fill(c->bos[idx].va, USERPTR_CONTENT_SIZE, c->seed, (uint32_t)idx);
	return 0;
}

static int create_event(struct ctx *c, bool manual_reset, bool signaled, HsaEvent **ev)
{
	HsaEventDescriptor desc = {
		.EventType = HSA_EVENTTYPE_SIGNAL,
		.NodeId = c->gpu[0].n.node,
	};
	HSAKMT_STATUS s;

	s = hsaKmtCreateEvent(&desc, manual_reset, signaled, ev);
	if (s != HSAKMT_STATUS_SUCCESS) {
		wl_err("hsaKmtCreateEvent(manual reset %d, signaled %d): %s (%d)", manual_reset, signaled,
		       status_name(s), s);
		return WL_EXIT_SETUP;
	}
	return 0;
}

static int events_setup(struct ctx *c)
{
	/* the first one makes the thunk set up its GTT signal page (Documentation/kfd-interface.md §3.6) */
	if (create_event(c, false, false, &c->ev_auto) || create_event(c, true, false, &c->ev_manual) ||
	    create_event(c, true, true, &c->ev_signaled))
		return WL_EXIT_SETUP;
	return 0;
}

static int queue_setup(struct ctx *c, unsigned int gi)
{
	struct gpu *g = &c->gpu[gi];
	HsaMemFlags f = { .Value = 0 };
	HSAKMT_STATUS s;

	/* ring and pointers in system memory, as ROCr keeps them, on this GPU only */
	f.ui32.HostAccess = 1;
	f.ui32.ExecuteAccess = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	g->ring = alloc_bo(c, gi, BO_RING, 0, RING_SIZE, f, true);
	g->qctl = g->ring < 0 ? -1 : alloc_bo(c, gi, BO_QCTL, 0, QCTL_SIZE, f, true);
	if (g->ring < 0 || g->qctl < 0)
		return WL_EXIT_SETUP;
	wl_fill(c->bos[g->ring].va, RING_SIZE, c->seed, (uint32_t)g->ring);

	memset(&g->q, 0, sizeof(g->q));
	g->q.QueueRptrValue = (uintptr_t)c->bos[g->qctl].va + QCTL_RPTR;
	g->q.QueueWptrValue = (uintptr_t)c->bos[g->qctl].va + QCTL_WPTR;
	s = hsaKmtCreateQueue(g->n.node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, c->bos[g->ring].va,
			      RING_SIZE, NULL, &g->q);
	if (s != HSAKMT_STATUS_SUCCESS) {
		wl_err("hsaKmtCreateQueue(node %u, AQL): %s (%d)", g->n.node, status_name(s), s);
		return WL_EXIT_SETUP;
	}
	c->hb[gi].name = g->hb_name;
	c->hb[gi].rptr = (volatile uint64_t *)(uintptr_t)g->q.QueueRptrValue;
	return 0;
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
	fprintf(f, "workload hsakmt\npid %d\nseed 0x%016" PRIx64 "\ngpus %u\n", (int)getpid(), c->seed, c->n_gpus);
	for (i = 0; i < c->n_gpus; i++)
		fprintf(f, "gpu %u node %u gpu_id 0x%x render_minor %u\n", i, c->gpu[i].n.node, c->gpu[i].n.gpu_id,
			c->gpu[i].n.render_minor);
	for (i = 0; i < c->n_bos; i++) {
		const struct bo *bo = &c->bos[i];
		uint64_t offset = (uint64_t)(uintptr_t)bo->va;

		/* KFD handles stay inside the thunk; the offset is what it mapped */
		if (kinds[bo->kind].backing == WL_BACK_RENDER)
			current_offset(bo, &offset);
		fprintf(f,
			"bo %u gpu 0x%x kind %s va 0x%" PRIx64 " size 0x%" PRIx64
			" flags 0x%x handle - offset 0x%" PRIx64 " content %d mapped %u\n",
			i, c->gpu[bo->gpu].n.gpu_id, kinds[bo->kind].name, (uint64_t)(uintptr_t)bo->va, bo->size,
			bo->flags.Value, offset, kinds[bo->kind].content, bo->n_mapped);
	}
	for (i = 0; i < c->n_gpus; i++) {
		const struct gpu *g = &c->gpu[i];

		fprintf(f,
			"queue %u gpu 0x%x id 0x%" PRIx64 " type compute-aql rptr 0x%" PRIx64 " wptr 0x%" PRIx64
			" ring 0x%" PRIx64 " ring_size 0x%llx"
			" doorbell 0x%" PRIx64 "\n",
			i, g->n.gpu_id, (uint64_t)g->q.QueueId, (uint64_t)g->q.QueueRptrValue,
			(uint64_t)g->q.QueueWptrValue, (uint64_t)(uintptr_t)c->bos[g->ring].va, RING_SIZE,
			(uint64_t)g->q.QueueDoorBell);
	}
	fprintf(f, "event %u type signal auto_reset 1 signaled 0\n", c->ev_auto->EventId);
	fprintf(f, "event %u type signal auto_reset 0 signaled 0\n", c->ev_manual->EventId);
	fprintf(f, "event %u type signal auto_reset 0 signaled 1\n", c->ev_signaled->EventId);
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

	ret = open_kfd(c);
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

static void bo_name(const struct ctx *c, unsigned int i, char *buf, size_t len)
{
	const struct bo *bo = &c->bos[i];

	snprintf(buf, len, "bo %u (%s, gpu 0x%x, va %p, size 0x%" PRIx64 ")", i, kinds[bo->kind].name,
		 c->gpu[bo->gpu].n.gpu_id, bo->va, bo->size);
}

static void verify_bo(struct ctx *c, unsigned int i, struct wl_report *r)
{
	const struct bo *bo = &c->bos[i];
	const struct kind_info *k = &kinds[bo->kind];
	char name[160];
	const struct wl_bo_view view = {
		.name = name,
		.va = (uint64_t)(uintptr_t)bo->va,
		.size = bo->size,
		.backing = k->backing,
		.perms = k->perms,
		.content = k->content,
		.index = i,
		.seed = c->seed,
		.render_fd = -1, /* the thunk's own render file is among our fds */
	};

	bo_name(c, i, name, sizeof(name));
	wl_check_bo(r, &view);
}

/*
 * The thunk still knows the allocation, and the KFD handle it keeps for it
 * still works: unmapping and mapping it again succeeds.
 */
static void verify_handle(struct ctx *c, unsigned int i, struct wl_report *r)
{
	struct bo *bo = &c->bos[i];
	HsaPointerInfo info;
	HSAKMT_STATUS s;
	char name[160];

	bo_name(c, i, name, sizeof(name));
	s = hsaKmtQueryPointerInfo(bo->va, &info);
	if (s != HSAKMT_STATUS_SUCCESS || info.Type != HSA_POINTER_ALLOCATED || info.SizeInBytes != bo->size ||
	    info.NMappedNodes != bo->n_mapped) {
		wl_fail(r,
			"%s: hsaKmtQueryPointerInfo: expected an allocation of 0x%" PRIx64
			" bytes mapped to %u nodes, got %s, type %d, 0x%" PRIx64 " bytes,"
			" %u nodes",
			name, bo->size, bo->n_mapped, status_name(s), info.Type, (uint64_t)info.SizeInBytes,
			info.NMappedNodes);
		return;
	}
	s = hsaKmtUnmapMemoryToGPU(bo->va);
	if (s != HSAKMT_STATUS_SUCCESS) {
		wl_fail(r, "%s: hsaKmtUnmapMemoryToGPU: expected success, got %s (%d)", name, status_name(s), s);
		return;
	}
	bo->mapped = false;
	s = map_bo(c, bo);
	if (s != HSAKMT_STATUS_SUCCESS) {
		wl_fail(r,
			"%s: hsaKmtMapMemoryToGPUNodes after unmapping: expected success, got"
			" %s (%d)",
			name, status_name(s), s);
		return;
	}
	wl_pass(r);
}

static bool expect_status(struct wl_report *r, const HsaEvent *ev, const char *what, HSAKMT_STATUS got,
			  HSAKMT_STATUS want)
{
	if (got == want) {
		wl_pass(r);
		return true;
	}
	wl_fail(r, "event %u: %s: expected %s, got %s (%d)", ev->EventId, what, status_name(want), status_name(got),
		got);
	return false;
}

static void verify_events(struct ctx *c, struct wl_report *r)
{
	const HSAKMT_STATUS ok = HSAKMT_STATUS_SUCCESS, timeout = HSAKMT_STATUS_WAIT_TIMEOUT;
	HsaEvent *a = c->ev_auto, *m = c->ev_manual, *s = c->ev_signaled;

	if (expect_status(r, a, "auto-reset, not set: wait", hsaKmtWaitOnEvent(a, 0), timeout) &&
	    expect_status(r, a, "hsaKmtSetEvent", hsaKmtSetEvent(a), ok) &&
	    expect_status(r, a, "auto-reset, set: wait", hsaKmtWaitOnEvent(a, 1000), ok))
		expect_status(r, a, "auto-reset, after a completed wait: wait", hsaKmtWaitOnEvent(a, 0), timeout);

	if (expect_status(r, m, "manual-reset, not set: wait", hsaKmtWaitOnEvent(m, 0), timeout) &&
	    expect_status(r, m, "hsaKmtSetEvent", hsaKmtSetEvent(m), ok) &&
	    expect_status(r, m, "manual-reset, set: wait", hsaKmtWaitOnEvent(m, 1000), ok) &&
	    expect_status(r, m, "manual-reset, waited once: wait", hsaKmtWaitOnEvent(m, 0), ok) &&
	    expect_status(r, m, "hsaKmtResetEvent", hsaKmtResetEvent(m), ok))
		expect_status(r, m, "manual-reset, after reset: wait", hsaKmtWaitOnEvent(m, 0), timeout);

	expect_status(r, s, "manual-reset, signaled since creation: wait", hsaKmtWaitOnEvent(s, 0), ok);
}

/* Each queue's doorbell is still mapped from /dev/kfd where the thunk put it. */
static void verify_queues(struct ctx *c, struct wl_report *r)
{
	unsigned int i;

	for (i = 0; i < c->n_gpus; i++) {
		const struct gpu *g = &c->gpu[i];

		if (wl_check_mapping(r, g->hb_name, (uint64_t)g->q.QueueDoorBell, 8, WL_BACK_KFD, "rw-s", NULL))
			wl_probe_read(r, g->hb_name, (const volatile void *)(uintptr_t)g->q.QueueDoorBell, NULL);
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

static void teardown(void *arg)
{
	struct ctx *c = arg;
	HsaEvent *events[] = { c->ev_auto, c->ev_manual, c->ev_signaled };
	unsigned int i;

	for (i = 0; i < c->n_gpus; i++)
		if (c->gpu[i].q.QueueId)
			hsaKmtDestroyQueue(c->gpu[i].q.QueueId);
	for (i = 0; i < 3; i++)
		if (events[i])
			hsaKmtDestroyEvent(events[i]);
	for (i = 0; i < c->n_bos; i++) {
		if (c->bos[i].mapped)
			hsaKmtUnmapMemoryToGPU(c->bos[i].va);
		hsaKmtFreeMemory(c->bos[i].va, c->bos[i].size);
	}
	if (c->opened)
		hsaKmtCloseKFD();
	free(c->bos);
}

int main(int argc, char **argv)
{
	static struct ctx c;
	static const struct wl_ops ops = {
		.verify = verify,
		.heartbeat = heartbeat,
		.teardown = teardown,
	};
	int ret;

	wl_parse_opts(argc, argv, &c.o);
	if (c.o.render_first) {
		wl_err("--render-first: the thunk opens /dev/kfd and the render nodes itself");
		return WL_EXIT_USAGE;
	}
	wl_signals_block();
	c.seed = wl_seed();

	ret = wl_host_setup(&c.o);
	if (!ret)
		ret = setup(&c);
	if (ret)
		return ret;
	wl_info("%u GPU(s), %u BOs of ours, %u AQL queues, 3 events; seed 0x%016" PRIx64, c.n_gpus, c.n_bos, c.n_gpus,
		c.seed);
	return wl_serve(&c.o, &ops, &c);
}
