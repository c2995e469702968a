// SPDX-License-Identifier: GPL-2.0-only
/*
 * rocr_workload: a GPU process written against ROCm's runtime (the HSA API of
 * Debian's libhsa-runtime64 5.2.3), with copies always in flight.
 *
 * Per GPU, two streams, each on a thread of its own, copy round after round:
 * a pattern host->VRAM, then VRAM->host held by the first copy's signal and by
 * a gate signal the host opens GATE_MS later, both submitted at once: for most
 * of a round the runtime's SDMA queue holds the second copy behind a
 * POLL_REGMEM.  The host waits in blocked mode (an interrupt signal: KFD
 * event) and checks every byte.  A checkpoint therefore finds queues with work
 * queued, and after a restore that work must complete and new rounds run.
 *
 * The contract with the scenarios is the other workloads' (test/e2e/README.md):
 * READY, SIGUSR1 -> <state>.verify (every stream completes two more rounds
 * within 30 s, every byte of every round so far matched), SIGUSR2 ->
 * <state>.heartbeat (every stream completes a round within --hb-timeout-ms).
 * --vram-mb sets each GPU's bytes in flight (split between its streams).
 */
#include "workload.h"

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <errno.h>
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
	void *src, *vram, *back;
	hsa_signal_t to_gpu, to_host, gate;
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

struct workload {
	struct wl_opts opts;
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

static hsa_status_t vram_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct gpu *g = data;
	hsa_amd_segment_t seg;

	if (!g->has_vram && hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) == 0 &&
	    seg == HSA_AMD_SEGMENT_GLOBAL) {
		g->vram = pool;
		g->has_vram = true;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t system_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct workload *w = data;
	hsa_amd_segment_t seg;
	uint32_t flags = 0;

	if (w->has_sys || hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) != 0 ||
	    seg != HSA_AMD_SEGMENT_GLOBAL)
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

/* One round: pattern host->VRAM->host, the second copy held by the first's signal. */
static void stream_round(struct workload *w, struct stream *s, uint64_t round)
{
	const uint64_t seed = round + 1;
	hsa_signal_value_t v;
	hsa_status_t st;
	struct wl_report r;

	wl_fill(s->src, s->bytes, seed, s->index);
	memset(s->back, 0, s->bytes);
	hsa_signal_t deps[2] = { s->to_gpu, s->gate };

	hsa_signal_store_screlease(s->to_gpu, 1);
	hsa_signal_store_screlease(s->to_host, 1);
	hsa_signal_store_screlease(s->gate, 1);
	st = hsa_amd_memory_async_copy(s->vram, s->gpu->agent, s->src, w->cpu, s->bytes, 0, NULL, s->to_gpu);
	if (st == HSA_STATUS_SUCCESS)
		st = hsa_amd_memory_async_copy(s->back, w->cpu, s->vram, s->gpu->agent, s->bytes, 2, deps,
					       s->to_host);
	if (st == HSA_STATUS_SUCCESS) {
		usleep(GATE_MS * 1000);
		hsa_signal_store_screlease(s->gate, 0);
	}
	if (st != HSA_STATUS_SUCCESS) {
		stream_fail(s, "stream %u (GPU node %u) round %llu: hsa_amd_memory_async_copy: %s", s->index,
			    s->gpu->node, (unsigned long long)round, status_text(st));
		sleep(1);
		return;
	}
	while ((v = hsa_signal_wait_scacquire(s->to_host, HSA_SIGNAL_CONDITION_LT, 1, ROUND_WAIT_NS,
					      HSA_WAIT_STATE_BLOCKED)) != 0) {
		pthread_mutex_lock(&s->stall_lock);
		snprintf(s->stall, sizeof(s->stall),
			 "round %llu not done after %llu s: host->VRAM signal %lld, VRAM->host signal %lld (its SDMA "
			 "queue does not run)",
			 (unsigned long long)round, ROUND_WAIT_NS / 1000000000ull,
			 (long long)hsa_signal_load_relaxed(s->to_gpu), (long long)v);
		pthread_mutex_unlock(&s->stall_lock);
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

/* Waits until every stream completed @more rounds beyond @base, up to @timeout_ms. */
static void await_rounds(struct workload *w, struct wl_report *r, const uint64_t *base, uint64_t more,
			 unsigned int timeout_ms, const char *why)
{
	const uint64_t end = now_ms() + timeout_ms;

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

static void verify(void *ctx, struct wl_report *r)
{
	struct workload *w = ctx;
	uint64_t base[WL_MAX_GPUS * STREAMS_PER_GPU];

	for (unsigned int i = 0; i < w->n_streams; i++)
		base[i] = atomic_load(&w->streams[i].rounds);
	await_rounds(w, r, base, VERIFY_ROUNDS, VERIFY_WAIT_MS, "copy rounds complete");
	for (unsigned int i = 0; i < w->n_streams; i++) {
		struct stream *s = &w->streams[i];

		if (atomic_load(&s->failed))
			wl_fail(r, "%s", s->failure);
		else
			wl_pass(r);
	}
}

static void heartbeat(void *ctx, struct wl_report *r)
{
	struct workload *w = ctx;
	uint64_t base[WL_MAX_GPUS * STREAMS_PER_GPU];

	for (unsigned int i = 0; i < w->n_streams; i++)
		base[i] = atomic_load(&w->streams[i].rounds);
	await_rounds(w, r, base, 1, w->opts.hb_timeout_ms, "copy rounds run");
}

static void teardown(void *ctx)
{
	struct workload *w = ctx;

	atomic_store(&w->stop, true);
	for (unsigned int i = 0; i < w->n_streams; i++) {
		struct stream *s = &w->streams[i];

		if (s->started)
			pthread_join(s->thread, NULL);
		hsa_signal_destroy(s->to_gpu);
		hsa_signal_destroy(s->to_host);
		hsa_signal_destroy(s->gate);
		hsa_amd_memory_pool_free(s->src);
		hsa_amd_memory_pool_free(s->back);
		hsa_amd_memory_pool_free(s->vram);
	}
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
				st = hsa_amd_agents_allow_access(2, both, NULL, s->src);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_amd_agents_allow_access(2, both, NULL, s->back);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_signal_create(1, 0, NULL, &s->to_gpu);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_signal_create(1, 0, NULL, &s->to_host);
			if (st == HSA_STATUS_SUCCESS)
				st = hsa_signal_create(1, 0, NULL, &s->gate);
			if (st != HSA_STATUS_SUCCESS) {
				wl_err("stream %u (GPU node %u, %zu bytes): %s", s->index, s->gpu->node, s->bytes,
				       status_text(st));
				return WL_EXIT_SETUP;
			}
		}
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
static int write_state(struct workload *w)
{
	char tmp[4200];
	FILE *f;

	f = wl_state_begin(w->opts.state, tmp, sizeof(tmp));
	if (!f) {
		wl_err("cannot create '%s': %s", tmp, strerror(errno));
		return WL_EXIT_SETUP;
	}
	fprintf(f, "workload rocr\npid %d\ngpus %u\n", (int)getpid(), w->n_gpus);
	for (unsigned int g = 0; g < w->n_gpus; g++)
		fprintf(f, "gpu %u node %u\n", g, w->gpus[g].node);
	for (unsigned int i = 0; i < w->n_streams; i++) {
		const struct stream *s = &w->streams[i];

		fprintf(f, "stream %u node %u bytes 0x%zx src %p vram %p back %p\n", s->index, s->gpu->node,
			s->bytes, s->src, s->vram, s->back);
	}
	fprintf(f, "ready\n");
	if (wl_state_commit(f, tmp, w->opts.state)) {
		wl_err("cannot write '%s': %s", w->opts.state, strerror(errno));
		return WL_EXIT_SETUP;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct workload w;
	static const struct wl_ops ops = { verify, heartbeat, teardown };
	int ret;

	wl_parse_opts(argc, argv, &w.opts);
	wl_guard_init();
	wl_signals_block();
	ret = setup(&w);
	if (!ret)
		ret = write_state(&w);
	if (ret) {
		if (ret != WL_EXIT_SKIP)
			teardown(&w);
		return ret;
	}
	return wl_serve(&w.opts, &ops, &w);
}
