// SPDX-License-Identifier: GPL-2.0-only
/*
 * hip_workload: a GPU process written against HIP's host API (libamdhip64,
 * built against ROCm 6.4.3 or 7.2.4), with copies always in flight.
 *
 * Only what runs without a shader: device enumeration, hipMalloc,
 * hipHostMalloc, streams and host<->device copies, which HIP 6.x and 7.x move
 * on the SDMA engines.  No kernels, no hipMemset, and no device->device copy
 * (HIP may run those as a blit kernel): this workload checkpoints copies on
 * the copy engines alone.  Kernels, which the emulated GPU's shader core runs
 * where it covers their instructions, are hip_kernel_workload's business.
 *
 * Every copy goes on one of two streams per GPU, one per direction, never on
 * the null stream: the upload stream takes every host->device copy, the
 * readback stream every device->host one.  HIP 7.2 ties a stream to one SDMA
 * engine when the stream makes its first copy; a stream that began with a
 * host->device copy gets SDMA0, and on gfx90a ROCr does not let SDMA0 copy
 * device->host.  HIP then moves that copy with its copy kernel
 * (__amd_rocclr_copyBuffer) instead, a kernel on the GPU's shader core, which
 * is what this workload keeps out of its copies.  A stream whose
 * copies all go one way keeps an engine that may move them.  Applications
 * that overlap uploads with read-backs keep a copy stream per direction
 * anyway, so that each direction has an engine of its own and the two run
 * side by side.
 *
 * Per GPU (the first --gpus of the topology's GPU nodes; each HIP device is
 * found by the PCI address its node reports):
 *
 *   content buffers   hipMalloc, --vram-mb split by --bo-mb, filled with the
 *                     pattern through host->device copies
 *   pinned buffer     hipHostMalloc, PINNED_BYTES of the pattern
 *   two streams       non-blocking: upload and readback
 *   a thread          round trips host->device on the upload stream, then,
 *                     once that stream is synchronised, device->host on the
 *                     readback stream (hipMemcpyAsync, hipStreamSynchronize),
 *                     ROUND_MIN..ROUND_MAX bytes, the pattern of the round's
 *                     number, every byte checked
 *
 * The threads run on across a checkpoint: criu freezes and restores the
 * whole process, and a round that was in flight must complete afterwards.
 *
 * The contract with the scenarios is the other workloads' (test/e2e/README.md):
 * READY, SIGUSR1 -> <state>.verify (every content buffer read back
 * device->host and every byte compared, the pinned buffer's bytes,
 * no failed round, hipGetDeviceCount unchanged, then the heartbeat), SIGUSR2
 * -> <state>.heartbeat (each GPU completes two rounds within --hb-timeout-ms).
 */
#include "workload.h"

#include <hip/hip_runtime_api.h>

#include "hip_device.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUND_MIN    (256u << 10)
#define ROUND_STEPS  4 /* a round moves ROUND_MIN * (1 + round % ROUND_STEPS) bytes */
#define ROUND_MAX    (ROUND_MIN * ROUND_STEPS)
#define PINNED_BYTES (1u << 20)
#define JOIN_SECONDS 10

/* Pattern numbers beyond the content buffers' (those count from 0 over all GPUs). */
#define PINNED_BO(g) (0x10000u + (g))
#define ROUND_BO(g)  (0x20000u + (g))

struct gpu {
	unsigned int index;
	struct wl_gpu_node node;
	int dev;      /* HIP device */
	char pci[32]; /* as HIP reports it: hipDeviceGetPCIBusId */
	char arch[256];
	char name[256];
	hipStream_t upload;   /* every host->device copy */
	hipStream_t readback; /* every device->host copy */

	unsigned int n_bufs, first_bo; /* content buffers: pattern numbers first_bo.. */
	void **bufs;
	uint64_t *sizes;
	void *pinned;

	void *round_dev, *round_src, *round_back;
	pthread_t thread;
	bool started;
	atomic_uint_fast64_t round;    /* the round in progress */
	atomic_uint_fast64_t rounds;   /* completed: the copies came back and were checked */
	atomic_uint_fast64_t failures; /* rounds that failed: a HIP call, or a byte */
	atomic_uint_fast64_t busy_since_ms;
	_Atomic(const char *) doing; /* where the current round is, for a stall */
	pthread_mutex_t lock;
	char failure[512]; /* the first failed round */
};

struct workload {
	struct wl_opts opts;
	uint64_t seed;
	int devices; /* hipGetDeviceCount at set-up */
	struct gpu gpus[WL_MAX_GPUS];
	unsigned int n_gpus;
	void *scratch; /* where verification reads a content buffer back */
	uint64_t scratch_size;
	atomic_bool stop;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "gpu 0 (node 1, gpu_id 0xc1e6, HIP device 0 0000:03:00.0)" */
static const char *gpu_name(const struct gpu *g, char *buf, size_t len)
{
	snprintf(buf, len, "gpu %u (node %u, gpu_id 0x%x, HIP device %d %s)", g->index, g->node.node, g->node.gpu_id,
		 g->dev, g->pci);
	return buf;
}

static void round_fail(struct gpu *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void round_fail(struct gpu *g, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&g->lock);
	if (!atomic_load(&g->failures)) {
		va_start(ap, fmt);
		vsnprintf(g->failure, sizeof(g->failure), fmt, ap);
		va_end(ap);
	}
	atomic_fetch_add(&g->failures, 1);
	pthread_mutex_unlock(&g->lock);
}

static uint64_t round_bytes(uint64_t round)
{
	return (uint64_t)ROUND_MIN * (1 + round % ROUND_STEPS);
}

static uint64_t round_seed(const struct workload *w, uint64_t round)
{
	return w->seed ^ (round + 1) * 0x9e3779b97f4a7c15ULL;
}

/* A host->device copy on the GPU's upload stream, complete when it returns. */
static hipError_t upload(struct gpu *g, void *dev, const void *host, uint64_t bytes)
{
	hipError_t e = hipMemcpyAsync(dev, host, bytes, hipMemcpyHostToDevice, g->upload);

	return e == hipSuccess ? hipStreamSynchronize(g->upload) : e;
}

/* A device->host copy on the GPU's readback stream, complete when it returns. */
static hipError_t readback(struct gpu *g, void *host, const void *dev, uint64_t bytes)
{
	hipError_t e = hipMemcpyAsync(host, dev, bytes, hipMemcpyDeviceToHost, g->readback);

	return e == hipSuccess ? hipStreamSynchronize(g->readback) : e;
}

/*
 * One round trip host->device->host; false if a HIP call failed.  The upload
 * stream is synchronised before the read-back is queued on the other stream:
 * nothing else orders the two.
 */
static bool round_trip(struct workload *w, struct gpu *g, uint64_t round)
{
	const uint64_t bytes = round_bytes(round), seed = round_seed(w, round);
	char name[128];
	struct wl_report r;
	hipError_t e;

	atomic_store(&g->busy_since_ms, now_ms());
	atomic_store(&g->doing, "filling the source");
	wl_fill(g->round_src, bytes, seed, ROUND_BO(g->index));
	memset(g->round_back, 0, bytes);
	atomic_store(&g->doing, "hipMemcpyAsync host->device on the upload stream");
	e = hipMemcpyAsync(g->round_dev, g->round_src, bytes, hipMemcpyHostToDevice, g->upload);
	if (e == hipSuccess) {
		atomic_store(&g->doing, "hipStreamSynchronize of the upload stream");
		e = hipStreamSynchronize(g->upload);
	}
	if (e == hipSuccess) {
		atomic_store(&g->doing, "hipMemcpyAsync device->host on the readback stream");
		e = hipMemcpyAsync(g->round_back, g->round_dev, bytes, hipMemcpyDeviceToHost, g->readback);
	}
	if (e == hipSuccess) {
		atomic_store(&g->doing, "hipStreamSynchronize of the readback stream");
		e = hipStreamSynchronize(g->readback);
	}
	if (e != hipSuccess) {
		round_fail(g, "%s round %" PRIu64 " (0x%" PRIx64 " bytes): %s: %s", gpu_name(g, name, sizeof(name)),
			   round, bytes, atomic_load(&g->doing), hipGetErrorString(e));
		/* a copy that was queued must not see the next round's bytes */
		hipStreamSynchronize(g->upload);
		hipStreamSynchronize(g->readback);
		return false;
	}
	atomic_store(&g->doing, "checking the bytes back");
	wl_report_init(&r);
	if (!wl_check_pattern(&r, "copied back", g->round_back, bytes, seed, ROUND_BO(g->index)))
		round_fail(g, "%s round %" PRIu64 ": %s", gpu_name(g, name, sizeof(name)), round, r.first);
	wl_report_free(&r);
	return true;
}

struct round_arg {
	struct workload *w;
	struct gpu *g;
};

static void *rounds_main(void *p)
{
	struct round_arg *a = p;
	struct workload *w = a->w;
	struct gpu *g = a->g;
	char name[128];
	hipError_t e;

	free(a);
	/* the current device is the calling thread's */
	e = hipSetDevice(g->dev);
	if (e != hipSuccess) {
		round_fail(g, "%s: hipSetDevice in its round thread: %s", gpu_name(g, name, sizeof(name)),
			   hipGetErrorString(e));
		return NULL;
	}
	for (uint64_t round = 0; !atomic_load(&w->stop); round++) {
		atomic_store(&g->round, round);
		if (round_trip(w, g, round)) {
			atomic_fetch_add(&g->rounds, 1);
			continue;
		}
		atomic_store(&g->doing, "pausing after a failed round");
		usleep(100 * 1000);
	}
	atomic_store(&g->doing, "stopped");
	return NULL;
}

static void verify(void *ctx, struct wl_report *r)
{
	struct workload *w = ctx;
	char name[128], what[256];
	int devices = 0;
	hipError_t e;

	for (unsigned int i = 0; i < w->n_gpus; i++) {
		struct gpu *g = &w->gpus[i];

		gpu_name(g, name, sizeof(name));
		e = hipSetDevice(g->dev);
		if (e != hipSuccess) {
			wl_fail(r, "%s: hipSetDevice: %s", name, hipGetErrorString(e));
			continue;
		}
		for (unsigned int b = 0; b < g->n_bufs; b++) {
			snprintf(what, sizeof(what), "%s buffer %u (device %p, 0x%" PRIx64 " bytes)", name,
				 g->first_bo + b, g->bufs[b], g->sizes[b]);
			/* a copy that moves nothing must not find the pattern waiting */
			memset(w->scratch, 0, g->sizes[b]);
			e = readback(g, w->scratch, g->bufs[b], g->sizes[b]);
			if (e != hipSuccess) {
				wl_fail(r, "%s: hipMemcpyAsync device->host on the readback stream: %s", what,
					hipGetErrorString(e));
				continue;
			}
			wl_check_pattern(r, what, w->scratch, g->sizes[b], w->seed, g->first_bo + b);
		}
		snprintf(what, sizeof(what), "%s pinned buffer (host %p, 0x%x bytes)", name, g->pinned, PINNED_BYTES);
		wl_check_pattern(r, what, g->pinned, PINNED_BYTES, w->seed, PINNED_BO(i));
		pthread_mutex_lock(&g->lock);
		if (atomic_load(&g->failures))
			wl_fail(r, "%" PRIu64 " round trips failed (%" PRIu64 " completed); the first: %s",
				(uint64_t)atomic_load(&g->failures), (uint64_t)atomic_load(&g->rounds), g->failure);
		else
			wl_pass(r);
		pthread_mutex_unlock(&g->lock);
	}
	e = hipGetDeviceCount(&devices);
	if (e != hipSuccess)
		wl_fail(r, "hipGetDeviceCount: %s", hipGetErrorString(e));
	else if (devices != w->devices)
		wl_fail(r, "hipGetDeviceCount: %d devices, %d at set-up", devices, w->devices);
	else
		wl_pass(r);
}

/* Each GPU completes two more round trips within --hb-timeout-ms. */
static void heartbeat(void *ctx, struct wl_report *r)
{
	struct workload *w = ctx;
	uint64_t base[WL_MAX_GPUS], t0 = now_ms(), waited;
	bool pending;
	char name[128];

	for (unsigned int i = 0; i < w->n_gpus; i++)
		base[i] = atomic_load(&w->gpus[i].rounds);
	do {
		usleep(5000);
		pending = false;
		for (unsigned int i = 0; i < w->n_gpus; i++)
			if (atomic_load(&w->gpus[i].rounds) - base[i] < 2)
				pending = true;
		waited = now_ms() - t0;
	} while (pending && waited < w->opts.hb_timeout_ms);

	for (unsigned int i = 0; i < w->n_gpus; i++) {
		struct gpu *g = &w->gpus[i];
		uint64_t done = atomic_load(&g->rounds);

		if (done - base[i] >= 2) {
			wl_pass(r);
			continue;
		}
		wl_fail(r,
			"%s: round trips stalled: %" PRIu64 " of 2 in %" PRIu64 " ms (%" PRIu64
			" completed in all); round %" PRIu64 ": %s, for %" PRIu64 " ms",
			gpu_name(g, name, sizeof(name)), done - base[i], waited, done, (uint64_t)atomic_load(&g->round),
			atomic_load(&g->doing), now_ms() - atomic_load(&g->busy_since_ms));
	}
}

static void teardown(void *ctx)
{
	struct workload *w = ctx;
	char name[128];

	atomic_store(&w->stop, true);
	for (unsigned int i = 0; i < w->n_gpus; i++) {
		struct gpu *g = &w->gpus[i];

		if (g->started) {
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += JOIN_SECONDS;
			if (pthread_timedjoin_np(g->thread, NULL, &until)) {
				/* its streams are busy: freeing under it would be worse than exiting */
				wl_err("%s: its round thread is still %s after %d s; not freeing its memory",
				       gpu_name(g, name, sizeof(name)), atomic_load(&g->doing), JOIN_SECONDS);
				continue;
			}
		}
		hipSetDevice(g->dev);
		if (g->upload)
			hipStreamDestroy(g->upload);
		if (g->readback)
			hipStreamDestroy(g->readback);
		for (unsigned int b = 0; b < g->n_bufs; b++)
			hipFree(g->bufs[b]);
		hipFree(g->round_dev);
		hipHostFree(g->pinned);
		hipHostFree(g->round_src);
		hipHostFree(g->round_back);
		free(g->bufs);
		free(g->sizes);
	}
	free(w->scratch);
}

/* The HIP device of GPU node @g (hip_device.h) */
static int find_device(struct workload *w, struct gpu *g, const bool *taken)
{
	const struct hip_device out = { &g->dev, g->pci, sizeof(g->pci), g->arch, sizeof(g->arch), g->name, sizeof(g->name) };

	return hip_find_device(&g->node, w->devices, taken, &out);
}

/* A GPU's content buffers: allocated, and filled with the pattern through host->device copies. */
static int setup_content(struct workload *w, struct gpu *g, unsigned int *next_bo)
{
	char name[128];
	void *fill;

	g->n_bufs = wl_content_bos(&w->opts, g->index);
	g->first_bo = *next_bo;
	*next_bo += g->n_bufs;
	g->bufs = calloc(g->n_bufs, sizeof(*g->bufs));
	g->sizes = calloc(g->n_bufs, sizeof(*g->sizes));
	if (!g->bufs || !g->sizes) {
		wl_err("out of memory for %u buffers", g->n_bufs);
		return WL_EXIT_SETUP;
	}
	gpu_name(g, name, sizeof(name));
	for (unsigned int b = 0; b < g->n_bufs; b++) {
		g->sizes[b] = wl_content_bo_size(&w->opts, g->index, b);
		HIP_SETUP_CHECK(hipMalloc(&g->bufs[b], g->sizes[b]), "%s: hipMalloc(0x%" PRIx64 ") for buffer %u", name,
			    g->sizes[b], g->first_bo + b);
		/* verification reads each back into one buffer of the largest size */
		if (g->sizes[b] > w->scratch_size) {
			free(w->scratch);
			w->scratch_size = g->sizes[b];
			w->scratch = malloc(w->scratch_size);
			if (!w->scratch) {
				wl_err("out of memory for 0x%" PRIx64 " bytes", w->scratch_size);
				return WL_EXIT_SETUP;
			}
		}
		fill = w->scratch;
		wl_fill(fill, g->sizes[b], w->seed, g->first_bo + b);
		HIP_SETUP_CHECK(upload(g, g->bufs[b], fill, g->sizes[b]),
			    "%s: hipMemcpyAsync host->device on the upload stream of buffer %u (%p, 0x%" PRIx64
			    " bytes)",
			    name, g->first_bo + b, g->bufs[b], g->sizes[b]);
	}
	return 0;
}

static int setup_gpu(struct workload *w, struct gpu *g, unsigned int *next_bo)
{
	char name[128];
	int ret;

	HIP_SETUP_CHECK(hipSetDevice(g->dev), "hipSetDevice(%d) for GPU node %u", g->dev, g->node.node);
	gpu_name(g, name, sizeof(name));
	HIP_SETUP_CHECK(hipStreamCreateWithFlags(&g->upload, hipStreamNonBlocking),
		    "%s: hipStreamCreateWithFlags for the upload stream", name);
	HIP_SETUP_CHECK(hipStreamCreateWithFlags(&g->readback, hipStreamNonBlocking),
		    "%s: hipStreamCreateWithFlags for the readback stream", name);
	ret = setup_content(w, g, next_bo);
	if (ret)
		return ret;
	HIP_SETUP_CHECK(hipHostMalloc(&g->pinned, PINNED_BYTES, hipHostMallocDefault), "%s: hipHostMalloc(0x%x)", name,
		    PINNED_BYTES);
	wl_fill(g->pinned, PINNED_BYTES, w->seed, PINNED_BO(g->index));
	HIP_SETUP_CHECK(hipMalloc(&g->round_dev, ROUND_MAX), "%s: hipMalloc(0x%x) for the round trips", name, ROUND_MAX);
	HIP_SETUP_CHECK(hipHostMalloc(&g->round_src, ROUND_MAX, hipHostMallocDefault),
		    "%s: hipHostMalloc(0x%x) for the round trips", name, ROUND_MAX);
	HIP_SETUP_CHECK(hipHostMalloc(&g->round_back, ROUND_MAX, hipHostMallocDefault),
		    "%s: hipHostMalloc(0x%x) for the round trips", name, ROUND_MAX);
	return 0;
}

static int setup(struct workload *w)
{
	struct wl_gpu_node nodes[WL_MAX_GPUS];
	unsigned int n_nodes, n_gpus, all_gpus, next_bo = 0;
	bool taken[WL_MAX_GPUS] = { false };
	bool narrowed;
	hipError_t e;
	int ret;

	ret = wl_pick_gpus(&w->opts, nodes, &n_gpus, &n_nodes);
	if (ret)
		return ret;
	all_gpus = (unsigned int)wl_gpu_nodes(nodes, WL_MAX_GPUS, &n_nodes);
	e = hipGetDeviceCount(&w->devices);
	if (e == hipErrorNoDevice || (e == hipSuccess && !w->devices)) {
		wl_err("HIP finds no device (%s)", hipGetErrorString(e));
		return WL_EXIT_SKIP;
	}
	HIP_SETUP_CHECK(e, "hipGetDeviceCount");
	/*
	 * Every GPU node, unless the job narrowed what the runtime sees (ROCR_VISIBLE_DEVICES, as a
	 * job of one process per GPU sets it): then at least the GPUs asked for, each found below by
	 * its PCI address.
	 */
	narrowed = getenv("ROCR_VISIBLE_DEVICES") || getenv("HIP_VISIBLE_DEVICES");
	if (narrowed ? (unsigned int)w->devices < n_gpus : (unsigned int)w->devices != all_gpus) {
		wl_err("hipGetDeviceCount: %d devices, the topology has %u GPU nodes (%u asked for)", w->devices,
		       all_gpus, n_gpus);
		return WL_EXIT_SETUP;
	}
	w->seed = wl_seed();
	/* teardown frees what the GPUs counted so far hold */
	for (unsigned int i = 0; i < n_gpus; i++) {
		struct gpu *g = &w->gpus[w->n_gpus++];

		g->index = i;
		g->node = nodes[i];
		pthread_mutex_init(&g->lock, NULL);
		atomic_store(&g->doing, "not started");
		ret = find_device(w, g, taken);
		if (ret)
			return ret;
		taken[g->dev] = true;
		ret = setup_gpu(w, g, &next_bo);
		if (ret)
			return ret;
	}
	for (unsigned int i = 0; i < w->n_gpus; i++) {
		struct round_arg *a = malloc(sizeof(*a));
		int err;

		if (!a)
			return WL_EXIT_SETUP;
		*a = (struct round_arg) { w, &w->gpus[i] };
		err = pthread_create(&w->gpus[i].thread, NULL, rounds_main, a);
		if (err) {
			free(a);
			wl_err("pthread_create for gpu %u: %s", i, strerror(err));
			return WL_EXIT_SETUP;
		}
		w->gpus[i].started = true;
	}
	return 0;
}

/* The state file (test/e2e/README.md): the GPUs with their HIP devices, and every buffer. */
static void fill_state(FILE *f, void *ctx)
{
	const struct workload *w = ctx;

	fprintf(f, "workload hip\npid %d\nseed 0x%016" PRIx64 "\ngpus %u\n", (int)getpid(), w->seed, w->n_gpus);
	for (unsigned int i = 0; i < w->n_gpus; i++) {
		const struct gpu *g = &w->gpus[i];

		fprintf(f, "gpu %u node %u gpu_id 0x%x device %d pci %s arch %s name %s\n", i, g->node.node,
			g->node.gpu_id, g->dev, g->pci, g->arch, g->name);
	}
	for (unsigned int i = 0; i < w->n_gpus; i++) {
		const struct gpu *g = &w->gpus[i];

		for (unsigned int b = 0; b < g->n_bufs; b++)
			fprintf(f, "buffer %u gpu %u kind device ptr %p size 0x%" PRIx64 " content 1\n",
				g->first_bo + b, i, g->bufs[b], g->sizes[b]);
		fprintf(f, "buffer %u gpu %u kind pinned ptr %p size 0x%x content 1\n", PINNED_BO(i), i, g->pinned,
			PINNED_BYTES);
		fprintf(f, "buffer - gpu %u kind round-device ptr %p size 0x%x content 0\n", i, g->round_dev,
			ROUND_MAX);
		fprintf(f, "buffer - gpu %u kind round-pinned ptr %p size 0x%x content 0\n", i, g->round_src,
			ROUND_MAX);
		fprintf(f, "buffer - gpu %u kind round-pinned ptr %p size 0x%x content 0\n", i, g->round_back,
			ROUND_MAX);
	}
	wl_host_state(f);
	fprintf(f, "ready\n");
}

int main(int argc, char **argv)
{
	static struct workload w;
	static const struct wl_ops ops = { verify, heartbeat, teardown, NULL, NULL };
	uint64_t t0 = now_ms();
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
	wl_info("set up %u GPU(s) in %" PRIu64 " ms", w.n_gpus, now_ms() - t0);
	return wl_serve(&w.opts, &ops, &w);
}
