// SPDX-License-Identifier: GPL-2.0-only
/*
 * rocr_workload: a GPU process written against ROCm's runtime (the HSA API of
 * Debian's libhsa-runtime64 5.2.3), with copies always in flight.
 *
 * Per GPU, two streams, each on a thread of its own with an AQL queue of its
 * own, run round after round, everything of a round submitted at once:
 *
 *   host -> VRAM            one copy                          signal to_gpu
 *   VRAM -> VRAM            CHUNK-sized copies after to_gpu   signal on_gpu (one count per chunk)
 *   barrier-AND packet      on the AQL queue: on_gpu and gate signal checked
 *   VRAM -> host            one copy after checked            signal to_host
 *
 * The host opens the gate GATE_MS later: for most of a round the AQL queue
 * holds the barrier and the runtime's SDMA queue holds the last copy behind a
 * POLL_REGMEM.  The VRAM->VRAM chunks stay below ROCr's HSA_FORCE_SDMA_SIZE
 * (1 MiB), so the runtime puts them on SDMA rather than on a blit kernel the
 * emulated GPU cannot run.  The host waits in blocked mode (an interrupt
 * signal: KFD event) and checks every byte.  A checkpoint therefore finds
 * queues with work queued, and after a restore that work must complete and
 * new rounds run.
 *
 * The contract with the scenarios is the other workloads' (test/e2e/README.md):
 * READY, SIGUSR1 -> <state>.verify (every stream completes two more rounds
 * within 30 s, or --hb-timeout-ms if longer: large --vram-mb behind a slow
 * engine; every byte of every round so far matched), SIGUSR2 ->
 * <state>.heartbeat (every stream completes a round within --hb-timeout-ms).
 * --vram-mb sets each GPU's bytes in flight (split between its streams).
 *
 * --gem: the process also holds GEM handles on the first GPU's render node, as a
 * ROCm program that drives the render node through libdrm_amdgpu does: the
 * first stream's VRAM buffer, exported by the runtime as a dma-buf
 * (hsa_amd_portable_export_dmabuf, ROCm 5.6 and newer) and imported there, and a
 * GTT buffer of the render node's own holding a pattern. Verify then also
 * checks that the import is still that buffer (its pattern read through the
 * handle's CPU mapping; a word written there is what the runtime copies out of
 * the buffer), and that the other handle still names its buffer, its pattern
 * intact. The runtime's export happens once, before any checkpoint: KFD's
 * EXPORT_DMABUF finds the GPU by the gpu_id in the buffer's handle, without the
 * translation a restore onto other gpu_ids sets up, and fails there.
 */
#include "workload.h"

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "hand_kernels.h"
#include "hsa_aql.h"

#include <amdgpu.h>
#include <amdgpu_drm.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <xf86drm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STREAMS_PER_GPU 2
#define ROUND_WAIT_NS	(20ull * 1000 * 1000 * 1000)
#define VERIFY_ROUNDS	2
#define VERIFY_WAIT_MS	30000
#define GATE_MS		100
#define CHUNK		(512u << 10)	/* VRAM->VRAM copies stay on SDMA below 1 MiB */
#define QUEUE_PACKETS	64

struct gpu {
	hsa_agent_t agent;
	hsa_amd_memory_pool_t vram;
	bool has_vram;
	uint32_t node;
};

struct stream {
	unsigned int index;
	struct gpu *gpu;
	size_t bytes;
	void *src, *vram, *vram2, *back;
	hsa_queue_t *queue;
	hsa_signal_t to_gpu, on_gpu, gate, checked, to_host;
	pthread_t thread;
	bool started;
	atomic_uint_fast64_t rounds; /* completed and checked */
	atomic_bool failed;
	char failure[512];
	/*
	 * A wait that ran out of time: not a failure by itself (a checkpoint may
	 * freeze the process mid-wait), only the reason a stream stopped.
	 */
	pthread_mutex_t stall_lock;
	char stall[512];
};

/* --gem: the handles the process holds on the first GPU's render node */
struct gem_part {
	int fd;
	amdgpu_device_handle dev;
	amdgpu_bo_handle kfd_bo, own_bo;
	uint32_t kfd_handle, own_handle;
	void *kfd_ptr; /* the KFD buffer it is: VRAM of its own, which the streams leave alone */
	void *host;    /* a host buffer the runtime copies it to and from */
	void *own_cpu;
	uint64_t seed;
};

#define GEM_OWN_BYTES (1u << 20)
#define GEM_KFD_BYTES (64u << 10)

struct workload {
	struct wl_opts opts;
	struct gem_part gem;
	hsa_agent_t cpu;
	hsa_amd_memory_pool_t sys;
	bool has_cpu, has_sys;
	struct gpu gpus[WL_MAX_GPUS];
	unsigned int n_gpus;
	struct stream streams[WL_MAX_GPUS * STREAMS_PER_GPU];
	unsigned int n_streams;
	atomic_bool stop;
};

static const char *status_text(hsa_status_t s)
{
	const char *text = NULL;

	if (hsa_status_string(s, &text) != HSA_STATUS_SUCCESS || !text)
		return "unknown status";
	return text;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool global_pool(hsa_amd_memory_pool_t pool)
{
	hsa_amd_segment_t seg;

	return hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) == HSA_STATUS_SUCCESS &&
	       seg == HSA_AMD_SEGMENT_GLOBAL;
}

/* A GPU's VRAM: its first global pool. */
static hsa_status_t vram_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct gpu *g = data;

	if (!g->has_vram && global_pool(pool)) {
		g->vram = pool;
		g->has_vram = true;
	}
	return HSA_STATUS_SUCCESS;
}

/* System memory: the CPU's first fine-grained global pool. */
static hsa_status_t system_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct workload *w = data;
	uint32_t flags = 0;

	if (w->has_sys || !global_pool(pool))
		return HSA_STATUS_SUCCESS;
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) {
		w->sys = pool;
		w->has_sys = true;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t agent(hsa_agent_t a, void *data)
{
	struct workload *w = data;
	hsa_device_type_t type;

	if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS)
		return HSA_STATUS_SUCCESS;
	if (type == HSA_DEVICE_TYPE_CPU && !w->has_cpu) {
		w->cpu = a;
		w->has_cpu = true;
	} else if (type == HSA_DEVICE_TYPE_GPU && w->n_gpus < WL_MAX_GPUS &&
		   (!w->opts.gpus || w->n_gpus < w->opts.gpus)) {
		struct gpu *g = &w->gpus[w->n_gpus++];

		g->agent = a;
		hsa_agent_get_info(a, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DRIVER_NODE_ID, &g->node);
		hsa_amd_agent_iterate_memory_pools(a, vram_pool, g);
	}
	return HSA_STATUS_SUCCESS;
}

static void stream_fail(struct stream *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void stream_fail(struct stream *s, const char *fmt, ...)
{
	va_list ap;

	if (atomic_load(&s->failed))
		return;
	va_start(ap, fmt);
	vsnprintf(s->failure, sizeof(s->failure), fmt, ap);
	va_end(ap);
	atomic_store(&s->failed, true);
}

/* Where a round that does not finish is stuck, for the stall message. */
static void describe_stall(struct stream *s, uint64_t round, hsa_signal_value_t to_host)
{
	pthread_mutex_lock(&s->stall_lock);
	snprintf(s->stall, sizeof(s->stall),
		 "round %llu not done after %llu s: host->VRAM signal %lld, VRAM->VRAM chunks left %lld, barrier signal "
		 "%lld (AQL queue %" PRIu64 ", read index %" PRIu64 " of %" PRIu64 "), VRAM->host signal %lld (a queue "
		 "does not run)",
		 (unsigned long long)round, ROUND_WAIT_NS / 1000000000ull, (long long)hsa_signal_load_relaxed(s->to_gpu),
		 (long long)hsa_signal_load_relaxed(s->on_gpu), (long long)hsa_signal_load_relaxed(s->checked),
		 s->queue->id, hsa_queue_load_read_index_relaxed(s->queue), hsa_queue_load_write_index_relaxed(s->queue),
		 (long long)to_host);
	pthread_mutex_unlock(&s->stall_lock);
}

/* Submits the copies and the barrier of a round; the first failure, or HSA_STATUS_SUCCESS. */
static hsa_status_t submit_round(struct workload *w, struct stream *s, const char **what)
{
	const size_t chunks = (s->bytes + CHUNK - 1) / CHUNK;
	hsa_signal_t gated[2] = { s->on_gpu, s->gate };
	hsa_status_t st;

	hsa_signal_store_screlease(s->to_gpu, 1);
	hsa_signal_store_screlease(s->on_gpu, (hsa_signal_value_t)chunks);
	hsa_signal_store_screlease(s->gate, 1);
	hsa_signal_store_screlease(s->checked, 1);
	hsa_signal_store_screlease(s->to_host, 1);
	*what = "host->VRAM copy";
	st = hsa_amd_memory_async_copy(s->vram, s->gpu->agent, s->src, w->cpu, s->bytes, 0, NULL, s->to_gpu);
	*what = "VRAM->VRAM copy";
	for (size_t at = 0; at < s->bytes && st == HSA_STATUS_SUCCESS; at += CHUNK)
		st = hsa_amd_memory_async_copy((char *)s->vram2 + at, s->gpu->agent, (char *)s->vram + at,
					       s->gpu->agent, s->bytes - at < CHUNK ? s->bytes - at : CHUNK, 1,
					       &s->to_gpu, s->on_gpu);
	if (st != HSA_STATUS_SUCCESS)
		return st;
	aql_submit_barrier(s->queue, HSA_PACKET_TYPE_BARRIER_AND, gated, 2, s->checked);
	*what = "VRAM->host copy";
	return hsa_amd_memory_async_copy(s->back, w->cpu, s->vram2, s->gpu->agent, s->bytes, 1, &s->checked,
					 s->to_host);
}

/* One round: pattern host->VRAM->VRAM->host, see the top of the file. */
static void stream_round(struct workload *w, struct stream *s, uint64_t round)
{
	const uint64_t seed = round + 1;
	hsa_signal_value_t v;
	const char *what;
	hsa_status_t st;
	struct wl_report r;

	wl_fill(s->src, s->bytes, seed, s->index);
	memset(s->back, 0, s->bytes);
	st = submit_round(w, s, &what);
	if (st != HSA_STATUS_SUCCESS) {
		stream_fail(s, "stream %u (GPU node %u) round %llu: %s: %s", s->index, s->gpu->node,
			    (unsigned long long)round, what, status_text(st));
		sleep(1);
		return;
	}
	usleep(GATE_MS * 1000);
	hsa_signal_store_screlease(s->gate, 0);
	while ((v = hsa_signal_wait_scacquire(s->to_host, HSA_SIGNAL_CONDITION_LT, 1, ROUND_WAIT_NS,
					      HSA_WAIT_STATE_BLOCKED)) != 0) {
		describe_stall(s, round, v);
		if (atomic_load(&w->stop))
			return;
	}
	pthread_mutex_lock(&s->stall_lock);
	s->stall[0] = 0;
	pthread_mutex_unlock(&s->stall_lock);
	wl_report_init(&r);
	if (!wl_check_pattern(&r, "copied back", s->back, s->bytes, seed, s->index))
		stream_fail(s, "stream %u (GPU node %u) round %llu: %s", s->index, s->gpu->node,
			    (unsigned long long)round, r.first);
	wl_report_free(&r);
	atomic_fetch_add(&s->rounds, 1);
}

/* The runtime's report of a queue error (here: a packet the emulated GPU cannot run). */
static void on_queue_error(hsa_status_t status, hsa_queue_t *q, void *data)
{
	struct stream *s = data;

	stream_fail(s, "stream %u (GPU node %u): AQL queue %" PRIu64 " error: %s", s->index, s->gpu->node, q->id,
		    status_text(status));
}

struct stream_arg {
	struct workload *w;
	struct stream *s;
};

static void *stream_main(void *p)
{
	struct stream_arg *a = p;
	struct workload *w = a->w;
	struct stream *s = a->s;

	free(a);
	for (uint64_t round = 0; !atomic_load(&w->stop); round++)
		stream_round(w, s, round);
	return NULL;
}

/* Waits until every stream completed @more rounds beyond those done now, up to @timeout_ms. */
static void await_rounds(struct workload *w, struct wl_report *r, uint64_t more, unsigned int timeout_ms,
			 const char *why)
{
	const uint64_t end = now_ms() + timeout_ms;
	uint64_t base[WL_MAX_GPUS * STREAMS_PER_GPU];

	for (unsigned int i = 0; i < w->n_streams; i++)
		base[i] = atomic_load(&w->streams[i].rounds);
	for (unsigned int i = 0; i < w->n_streams; i++) {
		struct stream *s = &w->streams[i];

		while (atomic_load(&s->rounds) < base[i] + more && now_ms() < end)
			usleep(10000);
		if (atomic_load(&s->rounds) >= base[i] + more) {
			wl_pass(r);
			continue;
		}
		pthread_mutex_lock(&s->stall_lock);
		wl_fail(r, "stream %u (GPU node %u): %s: %llu of %llu rounds in %u ms%s%s", s->index, s->gpu->node,
			why, (unsigned long long)(atomic_load(&s->rounds) - base[i]), (unsigned long long)more,
			timeout_ms, s->stall[0] ? "; " : "", s->stall);
		pthread_mutex_unlock(&s->stall_lock);
	}
}

/* ROCm 5.6 and newer; looked up so that the workload builds against older runtimes too */
typedef hsa_status_t (*export_dmabuf_fn)(const void *ptr, size_t size, int *dmabuf, uint64_t *offset);

/* A runtime copy between the GEM part's VRAM buffer and its host buffer, waited for. */
static hsa_status_t gem_copy(struct workload *w, bool to_gpu, size_t bytes)
{
	struct gem_part *g = &w->gem;
	hsa_signal_t done;
	hsa_status_t st = hsa_signal_create(1, 0, NULL, &done);

	if (st != HSA_STATUS_SUCCESS)
		return st;
	st = to_gpu ? hsa_amd_memory_async_copy(g->kfd_ptr, w->gpus[0].agent, g->host, w->cpu, bytes, 0, NULL, done)
		    : hsa_amd_memory_async_copy(g->host, w->cpu, g->kfd_ptr, w->gpus[0].agent, bytes, 0, NULL, done);
	if (st == HSA_STATUS_SUCCESS &&
	    hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, ROUND_WAIT_NS, HSA_WAIT_STATE_BLOCKED) != 0)
		st = HSA_STATUS_ERROR;
	hsa_signal_destroy(done);
	return st;
}

static int gem_setup(struct workload *w)
{
	struct gem_part *g = &w->gem;
	struct wl_gpu_node nodes[WL_MAX_GPUS];
	unsigned int n_nodes, minor = 0;
	struct amdgpu_bo_import_result imported = { 0 };
	struct amdgpu_bo_alloc_request req = {
		.alloc_size = GEM_OWN_BYTES,
		.phys_alignment = 4096,
		.preferred_heap = AMDGPU_GEM_DOMAIN_GTT,
		.flags = AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED,
	};
	export_dmabuf_fn export = (export_dmabuf_fn)dlsym(RTLD_DEFAULT, "hsa_amd_portable_export_dmabuf");
	hsa_agent_t both[2] = { w->gpus[0].agent, w->cpu };
	uint32_t major_v, minor_v;
	uint64_t offset = 0;
	char path[64];
	int n = wl_gpu_nodes(nodes, WL_MAX_GPUS, &n_nodes), dmabuf = -1, r;
	hsa_status_t st;

	if (!export) {
		wl_info("--gem: this runtime cannot export its buffers as dma-bufs");
		return WL_EXIT_SKIP;
	}
	for (int i = 0; i < n; i++)
		if (nodes[i].node == w->gpus[0].node)
			minor = nodes[i].render_minor;
	if (!minor) {
		wl_err("--gem: no render node for GPU node %u", w->gpus[0].node);
		return WL_EXIT_SETUP;
	}
	snprintf(path, sizeof(path), "/dev/dri/renderD%u", minor);
	g->fd = open(path, O_RDWR | O_CLOEXEC);
	if (g->fd < 0 || amdgpu_device_initialize(g->fd, &major_v, &minor_v, &g->dev)) {
		wl_err("--gem: %s: %s", path, strerror(errno));
		return WL_EXIT_SETUP;
	}
	g->seed = wl_seed();
	st = hsa_amd_memory_pool_allocate(w->gpus[0].vram, GEM_KFD_BYTES, 0, &g->kfd_ptr);
	if (st == HSA_STATUS_SUCCESS)
		st = hsa_amd_memory_pool_allocate(w->sys, GEM_KFD_BYTES, 0, &g->host);
	if (st == HSA_STATUS_SUCCESS)
		st = hsa_amd_agents_allow_access(2, both, NULL, g->host);
	if (st == HSA_STATUS_SUCCESS) {
		wl_fill(g->host, GEM_KFD_BYTES, g->seed, 8);
		st = gem_copy(w, true, GEM_KFD_BYTES);
	}
	if (st == HSA_STATUS_SUCCESS)
		st = export(g->kfd_ptr, GEM_KFD_BYTES, &dmabuf, &offset);
	if (st != HSA_STATUS_SUCCESS || offset) {
		wl_err("--gem: the runtime's VRAM buffer as a dma-buf: %s", status_text(st));
		return WL_EXIT_SETUP;
	}
	r = amdgpu_bo_import(g->dev, amdgpu_bo_handle_type_dma_buf_fd, (uint32_t)dmabuf, &imported);
	close(dmabuf);
	g->kfd_bo = imported.buf_handle;
	if (!r)
		r = amdgpu_bo_export(g->kfd_bo, amdgpu_bo_handle_type_kms, &g->kfd_handle);
	if (!r)
		r = amdgpu_bo_alloc(g->dev, &req, &g->own_bo);
	if (!r)
		r = amdgpu_bo_export(g->own_bo, amdgpu_bo_handle_type_kms, &g->own_handle);
	if (!r)
		r = amdgpu_bo_cpu_map(g->own_bo, &g->own_cpu);
	if (r) {
		wl_err("--gem: the GEM handles: %s", strerror(r < 0 ? -r : EIO));
		return WL_EXIT_SETUP;
	}
	wl_fill(g->own_cpu, GEM_OWN_BYTES, g->seed, 7);
	return 0;
}

/*
 * The handles still name their buffers: the import is the runtime's VRAM buffer (its pattern,
 * and a word written through the handle is what the runtime copies out), the other holds its
 * pattern.
 */
static void gem_verify(struct workload *w, struct wl_report *r)
{
	struct gem_part *g = &w->gem;
	struct drm_amdgpu_gem_create_in info = { 0 };
	struct drm_amdgpu_gem_op op = {
		.handle = g->own_handle,
		.op = AMDGPU_GEM_OP_GET_GEM_CREATE_INFO,
		.value = (uint64_t)(uintptr_t)&info,
	};
	volatile uint64_t *through = NULL;
	void *cpu = NULL;
	int ret = amdgpu_bo_cpu_map(g->kfd_bo, &cpu);

	if (ret) {
		wl_fail(r, "GEM handle %u cannot be mapped: %s", g->kfd_handle, strerror(-ret));
	} else if (wl_check_pattern(r, "the runtime's VRAM buffer through GEM handle", cpu, GEM_KFD_BYTES, g->seed,
				    8)) {
		through = cpu;
		const uint64_t old = through[0];

		through[0] = ~old;
		__sync_synchronize();
		if (gem_copy(w, false, 4096) != HSA_STATUS_SUCCESS)
			wl_fail(r, "the runtime cannot copy its VRAM buffer at %p out", g->kfd_ptr);
		else if (((volatile uint64_t *)g->host)[0] != ~old)
			wl_fail(r, "a word written through GEM handle %u is not in the runtime's buffer at %p: they are "
				"not one buffer",
				g->kfd_handle, g->kfd_ptr);
		else
			wl_pass(r);
		through[0] = old;
		__sync_synchronize();
	}
	if (cpu)
		amdgpu_bo_cpu_unmap(g->kfd_bo);
	if (drmCommandWriteRead(amdgpu_device_get_fd(g->dev), DRM_AMDGPU_GEM_OP, &op, sizeof(op)) ||
	    info.bo_size != GEM_OWN_BYTES)
		wl_fail(r, "GEM handle %u names no buffer of %u bytes any more (%s)", g->own_handle, GEM_OWN_BYTES,
			strerror(errno));
	else
		wl_check_pattern(r, "the render node's own GEM buffer", g->own_cpu, GEM_OWN_BYTES, g->seed, 7);
}

static void verify(void *ctx, struct wl_report *r)
{
	struct workload *w = ctx;

	await_rounds(w, r, VERIFY_ROUNDS, w->opts.hb_timeout_ms > VERIFY_WAIT_MS ? w->opts.hb_timeout_ms : VERIFY_WAIT_MS,
		     "copy rounds complete");
	for (unsigned int i = 0; i < w->n_streams; i++) {
		struct stream *s = &w->streams[i];

		if (atomic_load(&s->failed))
			wl_fail(r, "%s", s->failure);
		else
			wl_pass(r);
	}
	if (w->opts.gem)
		gem_verify(w, r);
}

static void heartbeat(void *ctx, struct wl_report *r)
{
	struct workload *w = ctx;

	await_rounds(w, r, 1, w->opts.hb_timeout_ms, "copy rounds run");
}

/*
 * A fault on request (SIGRTMIN+1, +2): a kernel that faults, dispatched on an AQL queue of its own on the
 * first GPU, so that the streams run on. "illegal": its first instruction is an MFMA, which the
 * emulated GPU does not execute (HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION); "memory": its kernel
 * descriptor is at an address the GPU VM does not map (HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION).
 * The runtime must call the queue's error callback with that status within WL_FAULT_REPORT_MS:
 * a process that never hears of its GPU's error would wait forever.
 */
#define UNMAPPED_KERNEL_OBJECT 0x1000 /* below the GPUVM aperture: nothing is mapped there */

struct fault_report {
	atomic_bool seen;
	_Atomic hsa_status_t status;
};

static void on_fault_error(hsa_status_t status, hsa_queue_t *q, void *data)
{
	struct fault_report *f = data;

	(void)q;
	atomic_store(&f->status, status);
	atomic_store(&f->seen, true);
}

static void fault(void *ctx, const char *kind, unsigned int *ms, struct wl_report *r)
{
	struct workload *w = ctx;
	const bool illegal = !strcmp(kind, "illegal");
	const hsa_status_t want = illegal ? (hsa_status_t)HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION :
					    (hsa_status_t)HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION;
	hsa_agent_t both[2] = { w->gpus[0].agent, w->cpu };
	struct fault_report report = { 0 };
	hsa_kernel_dispatch_packet_t d = { 0 };
	hsa_queue_t *q = NULL;
	uint8_t *code = NULL;
	uint64_t start, end;
	hsa_status_t st;

	if (!illegal && strcmp(kind, "memory")) {
		wl_fail(r, "unknown fault kind '%s' (memory or illegal)", kind);
		return;
	}
	st = hsa_amd_memory_pool_allocate(w->sys, KERNEL_ENTRY + sizeof(mfma_code), 0, (void **)&code);
	if (st == HSA_STATUS_SUCCESS)
		st = hsa_amd_agents_allow_access(2, both, NULL, code);
	if (st == HSA_STATUS_SUCCESS)
		st = hsa_queue_create(w->gpus[0].agent, QUEUE_PACKETS, HSA_QUEUE_TYPE_SINGLE, on_fault_error, &report,
				      UINT32_MAX, UINT32_MAX, &q);
	if (st != HSA_STATUS_SUCCESS) {
		wl_fail(r, "GPU node %u: the faulting kernel's memory and queue: %s", w->gpus[0].node, status_text(st));
		goto out;
	}
	hand_kernel_write(code, mfma_code, sizeof(mfma_code));
	d.workgroup_size_x = 64;
	d.workgroup_size_y = d.workgroup_size_z = 1;
	d.grid_size_x = 64;
	d.grid_size_y = d.grid_size_z = 1;
	d.kernel_object = illegal ? (uint64_t)(uintptr_t)code : UNMAPPED_KERNEL_OBJECT;
	start = now_ms();
	end = start + WL_FAULT_REPORT_MS;
	aql_submit(q, &d, aql_header(HSA_PACKET_TYPE_KERNEL_DISPATCH), 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
	while (!atomic_load(&report.seen) && now_ms() < end)
		usleep(1000);
	*ms = (unsigned int)(now_ms() - start);
	if (!atomic_load(&report.seen))
		wl_fail(r, "GPU node %u: the runtime reported no error for the %s fault within %u ms: the process would "
			"wait forever", w->gpus[0].node, kind, WL_FAULT_REPORT_MS);
	else if (atomic_load(&report.status) != want)
		wl_fail(r, "GPU node %u: the runtime reported %s (0x%x) for the %s fault, not %s", w->gpus[0].node,
			status_text(atomic_load(&report.status)), (unsigned int)atomic_load(&report.status), kind,
			status_text(want));
	else
		wl_pass(r);
out:
	if (q)
		hsa_queue_destroy(q);
	if (code)
		hsa_amd_memory_pool_free(code);
}

static void teardown(void *ctx)
{
	struct workload *w = ctx;

	atomic_store(&w->stop, true);
	for (unsigned int i = 0; i < w->n_streams; i++) {
		struct stream *s = &w->streams[i];

		if (s->started)
			pthread_join(s->thread, NULL);
		if (s->queue)
			hsa_queue_destroy(s->queue);
		hsa_signal_destroy(s->to_gpu);
		hsa_signal_destroy(s->on_gpu);
		hsa_signal_destroy(s->gate);
		hsa_signal_destroy(s->checked);
		hsa_signal_destroy(s->to_host);
		hsa_amd_memory_pool_free(s->src);
		hsa_amd_memory_pool_free(s->back);
		hsa_amd_memory_pool_free(s->vram);
		hsa_amd_memory_pool_free(s->vram2);
	}
	if (w->gem.own_bo) {
		if (w->gem.own_cpu)
			amdgpu_bo_cpu_unmap(w->gem.own_bo);
		amdgpu_bo_free(w->gem.own_bo);
	}
	if (w->gem.kfd_bo)
		amdgpu_bo_free(w->gem.kfd_bo);
	if (w->gem.kfd_ptr)
		hsa_amd_memory_pool_free(w->gem.kfd_ptr);
	if (w->gem.host)
		hsa_amd_memory_pool_free(w->gem.host);
	if (w->gem.dev)
		amdgpu_device_deinitialize(w->gem.dev);
	if (w->gem.fd > 0)
		close(w->gem.fd);
	hsa_shut_down();
}

static int setup(struct workload *w)
{
	hsa_status_t st = hsa_init();

	if (st != HSA_STATUS_SUCCESS) {
		wl_err("hsa_init: %s", status_text(st));
		return WL_EXIT_SETUP;
	}
	hsa_iterate_agents(agent, w);
	if (w->has_cpu)
		hsa_amd_agent_iterate_memory_pools(w->cpu, system_pool, w);
	if (!w->n_gpus || (w->opts.gpus && w->n_gpus < w->opts.gpus))
		return WL_EXIT_SKIP;
	if (!w->has_sys) {
		wl_err("the CPU agent has no fine-grained system memory pool");
		return WL_EXIT_SETUP;
	}
	for (unsigned int g = 0; g < w->n_gpus; g++) {
		const size_t per_stream = wl_align((uint64_t)w->opts.vram_mb[g] * 1048576 / STREAMS_PER_GPU, WL_PAGE);

		if (!w->gpus[g].has_vram) {
			wl_err("GPU node %u has no VRAM pool", w->gpus[g].node);
			return WL_EXIT_SETUP;
		}
		for (unsigned int k = 0; k < STREAMS_PER_GPU; k++) {
			struct stream *s = &w->streams[w->n_streams];
			hsa_agent_t both[2] = { w->gpus[g].agent, w->cpu };

			s->index = w->n_streams++;
			pthread_mutex_init(&s->stall_lock, NULL);
			s->gpu = &w->gpus[g];
			s->bytes = per_stream;
			st = hsa_amd_memory_pool_allocate(w->sys, s->bytes, 0, &s->src);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_amd_memory_pool_allocate(w->sys, s->bytes, 0, &s->back);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_amd_memory_pool_allocate(w->gpus[g].vram, s->bytes, 0, &s->vram);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_amd_memory_pool_allocate(w->gpus[g].vram, s->bytes, 0, &s->vram2);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_amd_agents_allow_access(2, both, NULL, s->src);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_amd_agents_allow_access(2, both, NULL, s->back);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_signal_create(1, 0, NULL, &s->to_gpu);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_signal_create(1, 0, NULL, &s->on_gpu);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_signal_create(1, 0, NULL, &s->gate);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_signal_create(1, 0, NULL, &s->checked);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_signal_create(1, 0, NULL, &s->to_host);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_queue_create(s->gpu->agent, QUEUE_PACKETS, HSA_QUEUE_TYPE_SINGLE, on_queue_error, s,
						      UINT32_MAX, UINT32_MAX, &s->queue);
			if (st != HSA_STATUS_SUCCESS) {
				wl_err("stream %u (GPU node %u, %zu bytes): %s", s->index, s->gpu->node, s->bytes,
				       status_text(st));
				return WL_EXIT_SETUP;
			}
		}
	}
	if (w->opts.gem) {
		int ret = gem_setup(w);

		if (ret)
			return ret;
	}
	for (unsigned int i = 0; i < w->n_streams; i++) {
		struct stream_arg *a = malloc(sizeof(*a));
		int err;

		if (!a)
			return WL_EXIT_SETUP;
		*a = (struct stream_arg){ w, &w->streams[i] };
		err = pthread_create(&w->streams[i].thread, NULL, stream_main, a);
		if (err) {
			free(a);
			wl_err("pthread_create for stream %u: %s", i, strerror(err));
			return WL_EXIT_SETUP;
		}
		w->streams[i].started = true;
	}
	return 0;
}

/* The state file (test/e2e/README.md): the GPUs by topology node, and the streams. */
static void fill_state(FILE *f, void *ctx)
{
	const struct workload *w = ctx;

	fprintf(f, "workload rocr\npid %d\ngpus %u\n", (int)getpid(), w->n_gpus);
	for (unsigned int g = 0; g < w->n_gpus; g++)
		fprintf(f, "gpu %u node %u\n", g, w->gpus[g].node);
	for (unsigned int i = 0; i < w->n_streams; i++) {
		const struct stream *s = &w->streams[i];

		fprintf(f, "stream %u node %u bytes 0x%zx src %p vram %p vram2 %p back %p queue %" PRIu64 "\n",
			s->index, s->gpu->node, s->bytes, s->src, s->vram, s->vram2, s->back, s->queue->id);
	}
	if (w->opts.gem)
		fprintf(f, "gem kfd-handle %u own-handle %u\n", w->gem.kfd_handle, w->gem.own_handle);
	wl_host_state(f);
	fprintf(f, "ready\n");
}

int main(int argc, char **argv)
{
	static struct workload w;
	static const struct wl_ops ops = { verify, heartbeat, teardown, NULL, fault };
	int ret;

	wl_parse_opts(argc, argv, &w.opts);
	wl_guard_init();
	wl_signals_block();
	ret = setup(&w);
	if (!ret)
		ret = wl_host_setup(&w.opts);
	if (!ret)
		ret = wl_state_write(w.opts.state, fill_state, &w);
	if (ret) {
		if (ret != WL_EXIT_SKIP)
			teardown(&w);
		return ret;
	}
	return wl_serve(&w.opts, &ops, &w);
}
