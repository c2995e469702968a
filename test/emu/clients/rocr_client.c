// SPDX-License-Identifier: GPL-2.0-only
/*
 * rocr_client: ROCm's runtime (libhsa-runtime64, unmodified) moving data
 * through the emulated GPUs' SDMA engines, as a TAP stream.
 *
 * For every GPU agent: a VRAM and a system buffer, then host->VRAM->host
 * copies with hsa_amd_memory_async_copy, each completing through an interrupt
 * signal waited on in blocked mode (the SDMA engine decrements the signal and
 * raises the KFD event behind it); a second copy that depends on the first's
 * signal (the engine polls it); VRAM->VRAM copies on one GPU in chunks below
 * ROCr's SDMA threshold and, with two GPUs, from one GPU's VRAM to the other's;
 * every byte compared.
 *
 * Then AQL queues of the GPU's packet processor: barrier-AND and barrier-OR
 * packets wait for their dependency signals and complete through interrupt
 * signals (a blocked waiter wakes within a second of a 20 s limit), an AMD
 * barrier-value packet waits for its signal's masked value, a chain of
 * barriers runs in order.  Kernel dispatches run on the emulated GPU's shader
 * core: a kernel assembled here stores every work-item's global id over a grid
 * whose last workgroup is partial, and each slot is checked; a kernel that
 * starts with an MFMA (which MI100 and MI200 execute, the emulator's shader
 * core never) and a dispatch whose kernel descriptor is not mapped each reach
 * the queue's error callback, as an illegal instruction and as a memory
 * aperture violation, instead of leaving their waiters hanging.
 *
 * Every wait has a time limit, so a queue that never runs fails with a
 * message naming the step, never hangs.
 *
 *   rocr_client [--mib N]
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "client_tap.h"
#include "hand_kernels.h"
#include "hsa_aql.h"

#include <inttypes.h>
#include <stdarg.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 8
#define WAIT_NS (20ull * 1000 * 1000 * 1000)
#define SETTLE_NS (200ull * 1000 * 1000)
#define CHUNK (512u << 10) /* below ROCr's HSA_FORCE_SDMA_SIZE: same-GPU copies stay on SDMA */
#define CHAIN 100

struct gpu {
	hsa_agent_t agent;
	hsa_amd_memory_pool_t vram;
	int has_vram;
	char name[64];
	uint32_t id; /* KFD topology node */
};

static struct gpu gpus[MAX_GPUS];
static int n_gpus;
static hsa_agent_t cpu;
static hsa_amd_memory_pool_t sys_pool;
static int has_cpu, has_sys;

static const char *status_text(hsa_status_t s)
{
	const char *text = NULL;

	if (hsa_status_string(s, &text) != HSA_STATUS_SUCCESS || !text)
		return "unknown status";
	return text;
}

static hsa_status_t vram_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct gpu *g = data;
	hsa_amd_segment_t seg;

	if (hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) == HSA_STATUS_SUCCESS &&
	    seg == HSA_AMD_SEGMENT_GLOBAL && !g->has_vram) {
		g->vram = pool;
		g->has_vram = 1;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t system_pool(hsa_amd_memory_pool_t pool, void *data)
{
	hsa_amd_segment_t seg;
	uint32_t flags = 0;

	(void)data;
	if (hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) != HSA_STATUS_SUCCESS ||
	    seg != HSA_AMD_SEGMENT_GLOBAL)
		return HSA_STATUS_SUCCESS;
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	if (!has_sys && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)) {
		sys_pool = pool;
		has_sys = 1;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t agent(hsa_agent_t a, void *data)
{
	hsa_device_type_t type;

	(void)data;
	if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS)
		return HSA_STATUS_SUCCESS;
	if (type == HSA_DEVICE_TYPE_CPU && !has_cpu) {
		cpu = a;
		has_cpu = 1;
	} else if (type == HSA_DEVICE_TYPE_GPU && n_gpus < MAX_GPUS) {
		struct gpu *g = &gpus[n_gpus++];

		g->agent = a;
		hsa_agent_get_info(a, HSA_AGENT_INFO_NAME, g->name);
		hsa_agent_get_info(a, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DRIVER_NODE_ID, &g->id);
		hsa_amd_agent_iterate_memory_pools(a, vram_pool, g);
	}
	return HSA_STATUS_SUCCESS;
}

/* Waits for @sig to drop below 1; 0 on time, else the value it is stuck at. */
static hsa_signal_value_t wait_done(hsa_signal_t sig)
{
	return hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_LT, 1, WAIT_NS, HSA_WAIT_STATE_BLOCKED);
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		p[i] = (uint8_t)(x >> 24);
	}
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* @bytes from @src to @dst in CHUNK pieces, each after the previous one; 0 once all arrived */
static hsa_signal_value_t copy_chunked(void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
				       size_t bytes)
{
	hsa_signal_t done;
	hsa_signal_value_t v = 0;

	hsa_signal_create(1, 0, NULL, &done);
	for (size_t at = 0; at < bytes && v == 0; at += CHUNK) {
		size_t n = bytes - at < CHUNK ? bytes - at : CHUNK;

		hsa_signal_store_screlease(done, 1);
		if (hsa_amd_memory_async_copy((char *)dst + at, dst_agent, (const char *)src + at, src_agent, n, 0,
					      NULL, done) != HSA_STATUS_SUCCESS)
			v = -1;
		else
			v = wait_done(done);
	}
	hsa_signal_destroy(done);
	return v;
}

static void check_gpu(struct gpu *g, size_t bytes)
{
	hsa_agent_t both[2] = { g->agent, cpu };
	void *src = NULL, *vram = NULL, *back = NULL, *vram2 = NULL;
	hsa_signal_t first, second;
	hsa_signal_value_t v;
	hsa_status_t s;

	if (!g->has_vram) {
		ok(0, "GPU node %u (%s): has a VRAM pool", g->id, g->name);
		return;
	}
	s = hsa_amd_memory_pool_allocate(sys_pool, bytes, 0, &src);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_memory_pool_allocate(sys_pool, bytes, 0, &back);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_memory_pool_allocate(g->vram, bytes, 0, &vram);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_memory_pool_allocate(g->vram, bytes, 0, &vram2);
	ok(s == HSA_STATUS_SUCCESS, "GPU node %u: allocate %zu KiB of VRAM and system memory: %s", g->id,
	   bytes >> 10, status_text(s));
	if (s != HSA_STATUS_SUCCESS)
		return;
	hsa_amd_agents_allow_access(2, both, NULL, src);
	hsa_amd_agents_allow_access(2, both, NULL, back);
	fill(src, bytes, g->id);
	memset(back, 0, bytes);

	hsa_signal_create(1, 0, NULL, &first);
	hsa_signal_create(1, 0, NULL, &second);
	s = hsa_amd_memory_async_copy(vram, g->agent, src, cpu, bytes, 0, NULL, first);
	v = s == HSA_STATUS_SUCCESS ? wait_done(first) : 1;
	ok(s == HSA_STATUS_SUCCESS && v == 0,
	   "GPU node %u: host->VRAM copy completes, its interrupt signal wakes the waiter (%s, signal %" PRId64 ")",
	   g->id, status_text(s), (int64_t)v);

	/* VRAM->host, held back by a signal the SDMA engine polls until the host sets it */
	hsa_signal_store_screlease(first, 1);
	s = hsa_amd_memory_async_copy(back, cpu, vram, g->agent, bytes, 1, &first, second);
	v = hsa_signal_wait_scacquire(second, HSA_SIGNAL_CONDITION_LT, 1, 200ull * 1000 * 1000,
				      HSA_WAIT_STATE_BLOCKED);
	ok(s == HSA_STATUS_SUCCESS && v == 1, "GPU node %u: a copy waits for its dependency signal (%s, signal %" PRId64 ")",
	   g->id, status_text(s), (int64_t)v);
	hsa_signal_store_screlease(first, 0);
	v = wait_done(second);
	ok(v == 0, "GPU node %u: ... and runs once the dependency is met (signal %" PRId64 ")", g->id, (int64_t)v);
	ok(v == 0 && !memcmp(src, back, bytes), "GPU node %u: host->VRAM->host: every byte back", g->id);

	memset(back, 0, bytes);
	v = copy_chunked(vram2, g->agent, vram, g->agent, bytes);
	v = v ? v : copy_chunked(back, cpu, vram2, g->agent, bytes);
	ok(v == 0 && !memcmp(src, back, bytes), "GPU node %u: VRAM->VRAM in %u KiB copies, then to the host: every byte (%" PRId64 ")",
	   g->id, CHUNK >> 10, (int64_t)v);

	hsa_signal_destroy(first);
	hsa_signal_destroy(second);
	hsa_amd_memory_pool_free(src);
	hsa_amd_memory_pool_free(back);
	hsa_amd_memory_pool_free(vram);
	hsa_amd_memory_pool_free(vram2);
}

/* GPU @a's VRAM to GPU @b's, then to the host. */
static void check_peer(struct gpu *a, struct gpu *b, size_t bytes)
{
	void *src = NULL, *va = NULL, *vb = NULL, *back = NULL;
	hsa_agent_t both[2] = { a->agent, b->agent };
	hsa_agent_t all[3] = { a->agent, b->agent, cpu };
	hsa_signal_value_t v;
	hsa_status_t s;

	s = hsa_amd_memory_pool_allocate(sys_pool, bytes, 0, &src);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_memory_pool_allocate(sys_pool, bytes, 0, &back);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_memory_pool_allocate(a->vram, bytes, 0, &va);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_memory_pool_allocate(b->vram, bytes, 0, &vb);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_agents_allow_access(2, both, NULL, va);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_agents_allow_access(2, both, NULL, vb);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_agents_allow_access(3, all, NULL, src);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_agents_allow_access(3, all, NULL, back);
	ok(s == HSA_STATUS_SUCCESS, "GPU nodes %u and %u: VRAM on both, each visible to the other: %s", a->id, b->id,
	   status_text(s));
	if (s == HSA_STATUS_SUCCESS) {
		fill(src, bytes, a->id * 31 + b->id);
		memset(back, 0, bytes);
		v = copy_chunked(va, a->agent, src, cpu, bytes);
		v = v ? v : copy_chunked(vb, b->agent, va, a->agent, bytes);
		v = v ? v : copy_chunked(back, cpu, vb, b->agent, bytes);
		ok(v == 0 && !memcmp(src, back, bytes),
		   "GPU node %u VRAM -> GPU node %u VRAM -> host: every byte (%" PRId64 ")", a->id, b->id, (int64_t)v);
	}
	hsa_amd_memory_pool_free(src);
	hsa_amd_memory_pool_free(back);
	hsa_amd_memory_pool_free(va);
	hsa_amd_memory_pool_free(vb);
}

/* ---- AQL queues ---------------------------------------------------------------------------- */

struct queue_error {
	volatile int seen;
	volatile hsa_status_t status;
};

static void on_queue_error(hsa_status_t status, hsa_queue_t *q, void *data)
{
	struct queue_error *e = data;

	(void)q;
	e->status = status;
	__atomic_store_n(&e->seen, 1, __ATOMIC_RELEASE);
}

static void check_barriers(struct gpu *g, hsa_queue_t *q)
{
	hsa_signal_t dep[2], done, chain[CHAIN];
	hsa_signal_value_t v;
	uint64_t index;
	double t;
	int bad = 0;

	hsa_signal_create(1, 0, NULL, &dep[0]);
	hsa_signal_create(1, 0, NULL, &dep[1]);
	hsa_signal_create(1, 0, NULL, &done);

	index = aql_submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, dep, 2, done);
	v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, SETTLE_NS, HSA_WAIT_STATE_BLOCKED);
	hsa_signal_store_screlease(dep[0], 0);
	v += hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, SETTLE_NS, HSA_WAIT_STATE_BLOCKED);
	ok(v == 2 && hsa_queue_load_read_index_scacquire(q) == index,
	   "GPU node %u: a barrier-AND waits while one of its two dependencies is still set (read index %" PRIu64 ")",
	   g->id, hsa_queue_load_read_index_scacquire(q));
	t = now_s();
	hsa_signal_store_screlease(dep[1], 0);
	v = wait_done(done);
	t = now_s() - t;
	ok(v == 0 && t < 2, "GPU node %u: ... completes once both are 0; its interrupt signal wakes the blocked waiter in %.3f s",
	   g->id, t);
	ok(hsa_queue_load_read_index_scacquire(q) == index + 1, "GPU node %u: ... and the read index moves past it (%" PRIu64 ")",
	   g->id, hsa_queue_load_read_index_scacquire(q));

	hsa_signal_store_screlease(dep[0], 1);
	hsa_signal_store_screlease(dep[1], 1);
	hsa_signal_store_screlease(done, 1);
	aql_submit_barrier(q, HSA_PACKET_TYPE_BARRIER_OR, dep, 2, done);
	v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, SETTLE_NS, HSA_WAIT_STATE_BLOCKED);
	hsa_signal_store_screlease(dep[1], 0);
	v += wait_done(done);
	ok(v == 1, "GPU node %u: a barrier-OR waits for either dependency and completes on the second", g->id);

	/* 0x301 & 0xff is 1: not yet; 0x302 & 0xff is 2: the condition holds */
	hsa_signal_store_screlease(dep[0], 0x301);
	hsa_signal_store_screlease(done, 1);
	aql_submit_barrier_value(q, dep[0], 2, 0xff, HSA_SIGNAL_CONDITION_EQ, done);
	v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, SETTLE_NS, HSA_WAIT_STATE_BLOCKED);
	hsa_signal_store_screlease(dep[0], 0x302);
	v += wait_done(done);
	ok(v == 1, "GPU node %u: an AMD barrier-value packet waits until its signal's masked value equals its value", g->id);

	for (int i = 0; i < CHAIN; i++) {
		hsa_signal_create(1, 0, NULL, &chain[i]);
		aql_submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, i ? &chain[i - 1] : NULL, i ? 1 : 0, chain[i]);
	}
	v = wait_done(chain[CHAIN - 1]);
	for (int i = 0; i < CHAIN; i++) {
		bad += hsa_signal_load_scacquire(chain[i]) != 0;
		hsa_signal_destroy(chain[i]);
	}
	ok(v == 0 && !bad, "GPU node %u: a chain of %d barriers, each on the one before, completes in order (%d left)",
	   g->id, CHAIN, bad);

	hsa_signal_destroy(dep[0]);
	hsa_signal_destroy(dep[1]);
	hsa_signal_destroy(done);
}

/* ---- Kernel dispatches (test/common/hand_kernels.h) ----------------------------------------- */

#define STORE_IDS_GRID 1000 /* four workgroups of 256, the last one of 232 */

/* Below the GPUVM aperture KFD reports (from 0x4000, as on a gfx9 dGPU): nothing is mapped there */
#define UNMAPPED_KERNEL_OBJECT 0x1000

/* Offsets in the buffer that holds the two kernels, the kernarg and the output */
#define AT_STORE_IDS 0
#define AT_MFMA 1024
#define AT_KERNARG 2048
#define AT_OUT 4096
#define OUT_SLOTS 1024 /* past the grid: must stay as filled */
#define KERNEL_BUFFER (AT_OUT + OUT_SLOTS * sizeof(uint32_t))
#define SENTINEL 0xdeadbeefu

/*
 * Dispatches @kernel_object over a 1D grid of @grid work-items in workgroups of @wg and waits
 * until its signal reaches 0 or the queue reports an error, within the time limit.  Returns the
 * signal's last value (0: completed); *secs how long it took.
 */
static hsa_signal_value_t dispatch(hsa_queue_t *q, struct queue_error *e, uint64_t kernel_object, void *kernarg,
				   uint32_t grid, uint16_t wg, double *secs)
{
	hsa_kernel_dispatch_packet_t d = { 0 };
	hsa_signal_value_t v = 1;
	hsa_signal_t done;
	double t0 = now_s();

	hsa_signal_create(1, 0, NULL, &done);
	d.workgroup_size_x = wg;
	d.workgroup_size_y = d.workgroup_size_z = 1;
	d.grid_size_x = grid;
	d.grid_size_y = d.grid_size_z = 1;
	d.kernel_object = kernel_object;
	d.kernarg_address = kernarg;
	d.completion_signal = done;
	aql_submit(q, &d, aql_header(HSA_PACKET_TYPE_KERNEL_DISPATCH), 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
	while (v && !__atomic_load_n(&e->seen, __ATOMIC_ACQUIRE) && now_s() - t0 < WAIT_NS / 1e9)
		v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, 10ull * 1000 * 1000,
					      HSA_WAIT_STATE_BLOCKED);
	*secs = now_s() - t0;
	hsa_signal_destroy(done);
	return v;
}

/* The kernel runs: every work-item's store arrives, and nothing past the grid is written. */
static void check_kernel_runs(struct gpu *g, hsa_queue_t *q, struct queue_error *e, uint8_t *buf)
{
	uint32_t *out = (uint32_t *)(buf + AT_OUT);
	uint64_t out_va = (uint64_t)(uintptr_t)out;
	hsa_signal_value_t v;
	int wrong = 0, first = -1;
	double t;

	memcpy(buf + AT_KERNARG, &out_va, sizeof(out_va));
	for (int i = 0; i < OUT_SLOTS; i++)
		out[i] = SENTINEL;
	v = dispatch(q, e, (uint64_t)(uintptr_t)(buf + AT_STORE_IDS), buf + AT_KERNARG, STORE_IDS_GRID, STORE_IDS_WG,
		     &t);
	ok(v == 0 && !e->seen,
	   "GPU node %u: a kernel of %d work-items in workgroups of %d (the last one partial) runs to completion in %.3f s (signal %" PRId64 ", %s)",
	   g->id, STORE_IDS_GRID, STORE_IDS_WG, t, (int64_t)v, e->seen ? status_text(e->status) : "no queue error");
	for (int i = 0; i < OUT_SLOTS; i++) {
		uint32_t want = i < STORE_IDS_GRID ? (uint32_t)i : SENTINEL;

		if (out[i] != want) {
			wrong++;
			first = first < 0 ? i : first;
		}
	}
	if (wrong)
		diag("GPU node %u: out[%d] is 0x%x, expected 0x%x", g->id, first, out[first],
		     first < STORE_IDS_GRID ? (uint32_t)first : SENTINEL);
	ok(v == 0 && !wrong,
	   "GPU node %u: ... each work-item stored workgroup id * %d + its id in the group at its global id, past the grid nothing (%d of %d slots wrong)",
	   g->id, STORE_IDS_WG, wrong, OUT_SLOTS);
}

/*
 * A dispatch the GPU cannot carry out reaches the queue's error callback as @want (what ROCr's
 * queue error handler makes of the emulated GPU's queue error), and its completion signal is
 * left alone.
 */
static void check_dispatch_fails(struct gpu *g, hsa_queue_t *q, struct queue_error *e, uint64_t kernel_object,
				 hsa_status_t want, const char *what)
{
	hsa_signal_value_t v;
	double t;

	v = dispatch(q, e, kernel_object, NULL, 64, 64, &t);
	ok(e->seen && e->status == want, "GPU node %u: %s: the queue's error callback gets %s (%s after %.3f s)", g->id,
	   what, status_text(want), e->seen ? status_text(e->status) : "no callback", t);
	ok(v == 1, "GPU node %u: ... and the dispatch's completion signal is left alone (%" PRId64 ")", g->id, (int64_t)v);
}

static void check_kernels(struct gpu *g, hsa_queue_t *q, struct queue_error *e, hsa_queue_t *q2,
			  struct queue_error *e2, hsa_queue_t *q3, struct queue_error *e3)
{
	hsa_agent_t both[2] = { g->agent, cpu };
	uint8_t *buf = NULL;
	hsa_status_t s;

	s = hsa_amd_memory_pool_allocate(sys_pool, KERNEL_BUFFER, 0, (void **)&buf);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_agents_allow_access(2, both, NULL, buf);
	ok(s == HSA_STATUS_SUCCESS, "GPU node %u: system memory the GPU reads kernels from: %s", g->id, status_text(s));
	if (s != HSA_STATUS_SUCCESS)
		return;
	hand_kernel_write(buf + AT_STORE_IDS, store_ids_code, sizeof(store_ids_code));
	hand_kernel_write(buf + AT_MFMA, mfma_code, sizeof(mfma_code));

	check_kernel_runs(g, q, e, buf);
	check_dispatch_fails(g, q2, e2, (uint64_t)(uintptr_t)(buf + AT_MFMA),
			     (hsa_status_t)HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
			     "a kernel whose first instruction is an MFMA (real MI100/MI200 run it; the emulated shader core does not)");
	check_dispatch_fails(g, q3, e3, UNMAPPED_KERNEL_OBJECT, (hsa_status_t)HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
			     "a dispatch whose kernel descriptor is at an address the GPU VM does not map (queue error 0x20000000)");
	hsa_amd_memory_pool_free(buf);
}

static void check_aql(struct gpu *g)
{
	struct queue_error e[3] = { 0 };
	hsa_queue_t *q[3] = { NULL };
	hsa_status_t s = HSA_STATUS_SUCCESS;

	for (int i = 0; i < 3 && s == HSA_STATUS_SUCCESS; i++)
		s = hsa_queue_create(g->agent, 1024, HSA_QUEUE_TYPE_SINGLE, on_queue_error, &e[i], UINT32_MAX,
				     UINT32_MAX, &q[i]);
	ok(s == HSA_STATUS_SUCCESS, "GPU node %u: three AQL queues created: %s", g->id, status_text(s));
	if (s == HSA_STATUS_SUCCESS) {
		check_barriers(g, q[0]);
		ok(!e[0].seen, "GPU node %u: ... with no queue error", g->id);
		/* a queue error stops its queue: each failing dispatch gets one of its own */
		check_kernels(g, q[0], &e[0], q[1], &e[1], q[2], &e[2]);
	}
	for (int i = 0; i < 3; i++)
		if (q[i])
			hsa_queue_destroy(q[i]);
}

int main(int argc, char **argv)
{
	size_t mib = 4;
	hsa_status_t s;

	if (argc == 3 && !strcmp(argv[1], "--mib"))
		mib = strtoul(argv[2], NULL, 0);
	s = hsa_init();
	ok(s == HSA_STATUS_SUCCESS, "hsa_init: %s", status_text(s));
	if (s != HSA_STATUS_SUCCESS)
		goto out;
	hsa_iterate_agents(agent, NULL);
	if (has_cpu)
		hsa_amd_agent_iterate_memory_pools(cpu, system_pool, NULL);
	ok(n_gpus > 0 && has_cpu && has_sys, "agents: %d GPUs, a CPU with a fine-grained system pool", n_gpus);
	for (int i = 0; i < n_gpus && has_sys; i++)
		check_gpu(&gpus[i], mib << 20);
	for (int i = 1; i < n_gpus && has_sys; i++)
		check_peer(&gpus[0], &gpus[i], mib << 20);
	for (int i = 0; i < n_gpus; i++)
		check_aql(&gpus[i]);
	s = hsa_shut_down();
	ok(s == HSA_STATUS_SUCCESS, "hsa_shut_down: %s", status_text(s));
out:
	return tap_done();
}
