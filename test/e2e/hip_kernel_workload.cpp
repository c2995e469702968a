// SPDX-License-Identifier: GPL-2.0-only
/*
 * hip_kernel_workload: a HIP program whose GPUs run kernels all the time, so
 * that a checkpoint finds a kernel in flight.  Built with hipcc (Debian's 7.0.2)
 * against HIP 6.4.3 for every gfx target the emulator's presets present, run in
 * the ROCm 6.4 root (test/vm/rocm-build.sh).
 *
 * Per GPU (the first --gpus of the topology's GPU nodes; each HIP device found
 * by the PCI address its node reports, as hip_workload does), a thread runs
 * rounds, each on the GPU's work stream:
 *
 *   iterate    the long kernel: every work-item takes one element (x, y) of
 *              two --kernel-kib arrays and applies, --kernel-iters times,
 *              y = a * x + y; x = c * x + d (32-bit integers, wrapping), with
 *              a, c, d new each round.  Several seconds per launch on an
 *              emulated GPU at --kernel-iters of a few hundred.  The host
 *              keeps its own copy of both arrays: k steps of that map are one
 *              affine map in x (coefficients computed once per launch), so
 *              the host checks every element exactly, in O(1) each.
 *   reduce     a shared-memory tree reduction (LDS, barriers) of the low
 *              byte of every y into one float per block (exact: a block's
 *              sum stays below 2^24), each block's sum added to a 64-bit
 *              total with a global atomic; compared with the host's sum.
 *   blits      hipMemcpy host->device of a pattern into buffer B, then
 *              hipMemsetD32 and hipMemsetD8 of buffer A, device->device
 *              copies A -> B (one 16-byte aligned, which HIP moves with its
 *              copy kernel's 16-byte path, one at 4-byte aligned offsets
 *              with a length that is no multiple of 4: the dword path and
 *              its byte tail), B read back device->host and compared.
 *
 * HIP runs hipMemset and device->device copies as kernels of its own
 * (__amd_rocclr_fillBufferAligned, __amd_rocclr_copyBuffer): every round
 * runs five different kernels on each GPU.
 *
 * The contract with the scenarios is the other workloads' (README.md):
 * READY, then SIGUSR1 -> <state>.verify: the content buffers (--vram-mb,
 * filled host->device at set-up) read back and compared, the arrays read back
 * and compared with the host's copy, no failed round, hipGetDeviceCount
 * unchanged, then one new round per GPU with a short iterate launch (the
 * restored process runs new kernels of each kind), then the heartbeat;
 * SIGUSR2 -> <state>.heartbeat: each GPU completes a short kernel on a
 * stream of its own (another hardware queue than the work stream's) within
 * --hb-timeout-ms, while the long kernel may be running.
 *
 * A kernel that ends in an error: HIP 6.4 aborts the process from its
 * queue-error callback ("Callback: Queue ... aborting with error : <HSA
 * status>", then abort()): a SIGABRT handler then says on stderr what each GPU
 * was doing.  Errors HIP returns instead go into the round's failure, which
 * verify reports.
 *
 * --illegal-instruction[=KIND] runs nothing of the above: a child process
 * launches one kernel holding an instruction the emulated GPU does not
 * execute, and the parent expects it to be reported to the application as
 * an illegal instruction (see illegal_main).
 */
extern "C" {
#include "workload.h"
}

#include <hip/hip_runtime.h>

#include "hip_device.h"

#include <atomic>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOCK		    256 /* work-items per block of iterate and reduce */
#define DEFAULT_ITERS	    256
#define DEFAULT_KERNEL_KIB  1024 /* each of x and y */
#define VERIFY_ITERS	    8 /* verify's own launch: new kernels, quickly */
#define BLIT_BYTES	    (256u << 10)
#define JOIN_SECONDS	    30
#define ILLEGAL_TIMEOUT_S   120

/* Pattern numbers beyond the content buffers' (those count from 0 over all GPUs). */
#define BLIT_BO(g) (0x30000u + (g))

/* ---- device code --------------------------------------------------------------- */

/*
 * The long kernel.  The multiplier c is a kernel argument, so the compiler
 * cannot fold the loop into a closed form: each iteration is executed.
 */
__global__ void iterate_kernel(uint32_t *x, uint32_t *y, uint32_t n, uint32_t iters, uint32_t a, uint32_t c, uint32_t d)
{
	const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	uint32_t xv = x[i], yv = y[i];
	for (uint32_t k = 0; k < iters; k++) {
		yv = a * xv + yv;
		xv = c * xv + d;
	}
	x[i] = xv;
	y[i] = yv;
}

/* Sum of the low bytes of y: a tree in shared memory per block, then one atomic per block. */
__global__ void reduce_kernel(const uint32_t *y, uint32_t n, unsigned long long *total)
{
	__shared__ float part[BLOCK];
	const uint32_t t = threadIdx.x, i = blockIdx.x * BLOCK + t;

	part[t] = i < n ? (float)(y[i] & 0xff) : 0.0f;
	__syncthreads();
	for (uint32_t s = BLOCK / 2; s > 0; s >>= 1) {
		if (t < s)
			part[t] += part[t + s];
		__syncthreads();
	}
	if (!t)
		atomicAdd(total, (unsigned long long)part[0]);
}

/* The heartbeat: one wave, one increment. */
__global__ void beat_kernel(uint32_t *count)
{
	if (!threadIdx.x)
		*count += 1;
}

/*
 * Kernels with an instruction the emulated GPU does not execute.  mfma: a
 * matrix instruction (gfx908 and later have them; the emulator's shader core
 * has no matrix unit).  invalid: a word that is no gfx9 instruction (SOP1
 * with opcode 0xff), which a real GPU reports as an illegal instruction too.
 * trap: s_trap 2, what __builtin_trap() compiles to.
 */
typedef float float4_t __attribute__((ext_vector_type(4)));

__global__ void illegal_mfma(float *out)
{
	float4_t acc = { 0.0f, 0.0f, 0.0f, 0.0f };

	acc = __builtin_amdgcn_mfma_f32_4x4x1f32(1.0f, (float)threadIdx.x, acc, 0, 0, 0);
	out[threadIdx.x] = acc[0];
}

__global__ void illegal_invalid(float *out)
{
	asm volatile(".long 0xbe80ff80" ::: "memory");
	out[threadIdx.x] = 1.0f;
}

__global__ void illegal_trap(float *out)
{
	asm volatile("s_trap 2" ::: "memory");
	out[threadIdx.x] = 1.0f;
}

/*
 * A store through a wild pointer: @out is an address the GPU VM does not map
 * (below the GPUVM aperture), a memory violation.
 */
__global__ void wild_store(float *out)
{
	out[threadIdx.x] = 1.0f;
}

/* ---- host side ------------------------------------------------------------------ */

struct gpu {
	unsigned int index;
	struct wl_gpu_node node;
	int dev;
	char pci[32];
	char arch[256];
	char name[256];
	hipStream_t work; /* every round */
	hipStream_t beat_stream; /* the heartbeat's kernel and its read-back */

	unsigned int n_bufs, first_bo; /* content buffers, pattern numbers first_bo.. */
	void **bufs;
	uint64_t *sizes;

	uint32_t n;		/* elements of x and y */
	uint32_t *x, *y;	/* device */
	uint32_t *hx, *hy;	/* the host's copy: what x and y hold after the last round */
	uint32_t *back;		/* pinned: x and y read back */
	unsigned long long *total, *total_back; /* device; pinned */
	uint8_t *blit_a, *blit_b; /* device */
	uint8_t *blit_src, *blit_back, *blit_want; /* pinned, pinned, malloc (A and B as they should be) */
	uint32_t *beats, *beats_back; /* device; pinned */
	uint32_t beats_sent;
	hipEvent_t beat_done;
	bool beat_pending;

	pthread_t thread;
	bool started;
	/* held for a whole round: verify runs its checks between two rounds */
	pthread_mutex_t round_lock;
	std::atomic<bool> verify_waits{ false }; /* the thread leaves the lock to verify */
	std::atomic<uint64_t> round{ 0 };    /* the round in progress */
	std::atomic<uint64_t> rounds{ 0 };   /* completed and checked */
	std::atomic<uint64_t> launches{ 0 }; /* kernels completed, HIP's blits not counted */
	std::atomic<uint64_t> failures{ 0 };
	std::atomic<uint64_t> busy_since_ms{ 0 };
	std::atomic<const char *> doing{ "not started" };
	pthread_mutex_t lock;
	char failure[512]; /* the first failed round */
};

struct workload {
	struct wl_opts opts;
	unsigned int iters, kernel_kib;
	uint64_t seed;
	int devices;
	struct gpu gpus[WL_MAX_GPUS];
	unsigned int n_gpus;
	void *scratch;
	uint64_t scratch_size;
	std::atomic<bool> stop{ false };
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *gpu_name(const struct gpu *g, char *buf, size_t len)
{
	snprintf(buf, len, "gpu %u (node %u, gpu_id 0x%x, HIP device %d %s %s)", g->index, g->node.node,
		 g->node.gpu_id, g->dev, g->pci, g->arch);
	return buf;
}

static uint64_t mix(uint64_t v)
{
	v ^= v >> 31;
	v *= 0x7fb5d329728ea185ULL;
	v ^= v >> 27;
	v *= 0x81dadef4bc2dd44dULL;
	return v ^ (v >> 33);
}

/* A round's constants: new for every round and GPU, the multipliers odd. */
struct round_args {
	uint32_t a, c, d, iters;
	uint32_t memset_word;
	uint8_t memset_byte;
};

static struct round_args round_args(const struct workload *w, const struct gpu *g, uint64_t round,
				    uint32_t iters)
{
	const uint64_t r = mix(w->seed ^ mix(round * 0x100 + g->index));
	struct round_args ra;

	ra.a = (uint32_t)r | 1;
	ra.c = (uint32_t)(r >> 32) | 1;
	ra.d = (uint32_t)mix(r);
	ra.iters = iters;
	ra.memset_word = (uint32_t)(mix(r + 1) >> 7);
	ra.memset_byte = (uint8_t)(mix(r + 2) | 1);
	return ra;
}

/*
 * k steps of x' = c x + d, y' = a x + y as one map: x_k = C x + D and
 * y_k = y + a (S x + T), with C = c^k, D = sum c^j d, S = sum c^j, T = sum D_j
 * (j < k), all modulo 2^32.
 */
struct affine {
	uint32_t C, D, S, T;
};

static struct affine compose(const struct round_args *ra)
{
	struct affine f = { 1, 0, 0, 0 };

	for (uint32_t k = 0; k < ra->iters; k++) {
		f.S += f.C;
		f.T += f.D;
		f.C *= ra->c;
		f.D = ra->c * f.D + ra->d;
	}
	return f;
}

static void round_fail(struct gpu *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void round_fail(struct gpu *g, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&g->lock);
	if (!g->failures.load()) {
		va_start(ap, fmt);
		vsnprintf(g->failure, sizeof(g->failure), fmt, ap);
		va_end(ap);
	}
	g->failures++;
	pthread_mutex_unlock(&g->lock);
}

/*
 * Where a round's problem goes: verify's report when verify runs the round,
 * else the GPU's failure record.
 */
struct sink {
	struct gpu *g;
	struct wl_report *r;
	bool failed;
};

static void sink_fail(struct sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sink_fail(struct sink *s, const char *fmt, ...)
{
	char msg[512], name[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gpu_name(s->g, name, sizeof(name));
	if (s->r)
		wl_fail(s->r, "%s round %" PRIu64 ": %s", name, s->g->round.load(), msg);
	else
		round_fail(s->g, "%s round %" PRIu64 ": %s", name, s->g->round.load(), msg);
	s->failed = true;
}

/* A HIP call of a round; false (and the failure said) if it failed. */
static bool hip_ok(struct sink *s, hipError_t e, const char *what)
{
	if (e == hipSuccess)
		return true;
	sink_fail(s, "%s: %s (%s)", what, hipGetErrorString(e), hipGetErrorName(e));
	if (e == hipErrorLaunchFailure || e == hipErrorIllegalAddress)
		wl_err("gpu %u: a kernel ended in an error: %s: %s", s->g->index, what, hipGetErrorName(e));
	return false;
}

/* The stream's work so far, then the kernels' own launch errors. */
static bool work_sync(struct sink *s, const char *what)
{
	struct gpu *g = s->g;

	g->doing.store(what);
	if (!hip_ok(s, hipStreamSynchronize(g->work), what))
		return false;
	return hip_ok(s, hipGetLastError(), what);
}

/*
 * x and y read back and compared with the host's copy; @after names what
 * should have made them so.  On a mismatch the host's copy takes the GPU's
 * words, so that one fault is reported once.
 */
static bool check_arrays(struct sink *s, const char *after)
{
	struct gpu *g = s->g;
	uint32_t bad = 0, first = 0;

	g->doing.store("reading x and y back");
	memset(g->back, 0, (size_t)g->n * 8);
	if (!hip_ok(s, hipMemcpyAsync(g->back, g->x, (size_t)g->n * 4, hipMemcpyDeviceToHost, g->work),
		    "hipMemcpyAsync x device->host") ||
	    !hip_ok(s, hipMemcpyAsync(g->back + g->n, g->y, (size_t)g->n * 4, hipMemcpyDeviceToHost, g->work),
		    "hipMemcpyAsync y device->host") ||
	    !work_sync(s, "reading x and y back"))
		return false;
	for (uint32_t i = 0; i < 2 * g->n; i++) {
		const uint32_t want = i < g->n ? g->hx[i] : g->hy[i - g->n];

		if (g->back[i] != want && !bad++)
			first = i;
	}
	if (!bad)
		return true;
	const bool in_x = first < g->n;
	const uint32_t i = in_x ? first : first - g->n;

	sink_fail(s, "x and y %s: %u of %u words wrong; the first: %c[%u] (device %p) 0x%08x, expected 0x%08x",
		  after, bad, 2 * g->n, in_x ? 'x' : 'y', i, (void *)((in_x ? g->x : g->y) + i), g->back[first],
		  in_x ? g->hx[i] : g->hy[i]);
	memcpy(g->hx, g->back, (size_t)g->n * 4);
	memcpy(g->hy, g->back + g->n, (size_t)g->n * 4);
	return false;
}

/* iterate: one launch; the host moves its copy on by the same map, then compares. */
static bool round_iterate(struct sink *s, const struct round_args *ra)
{
	struct gpu *g = s->g;
	const struct affine f = compose(ra);
	char after[160];

	g->doing.store("launching iterate");
	hipLaunchKernelGGL(iterate_kernel, dim3(g->n / BLOCK), dim3(BLOCK), 0, g->work, g->x, g->y, g->n,
			   ra->iters, ra->a, ra->c, ra->d);
	if (!hip_ok(s, hipGetLastError(), "launching iterate") || !work_sync(s, "iterate running"))
		return false;
	g->launches++;
	for (uint32_t i = 0; i < g->n; i++) {
		const uint32_t x = g->hx[i];

		g->hy[i] += ra->a * (f.S * x + f.T);
		g->hx[i] = f.C * x + f.D;
	}
	snprintf(after, sizeof(after), "after iterate (%u iterations, a 0x%x c 0x%x d 0x%x)", ra->iters, ra->a,
		 ra->c, ra->d);
	return check_arrays(s, after);
}

/* reduce: the total zeroed with hipMemsetAsync, one launch, the total read back. */
static bool round_reduce(struct sink *s)
{
	struct gpu *g = s->g;
	unsigned long long want = 0;

	for (uint32_t i = 0; i < g->n; i++)
		want += g->hy[i] & 0xff;
	*g->total_back = ~0ULL;
	g->doing.store("zeroing the total (hipMemsetAsync)");
	if (!hip_ok(s, hipMemsetAsync(g->total, 0, sizeof(*g->total), g->work), "hipMemsetAsync of the total"))
		return false;
	g->doing.store("launching reduce");
	hipLaunchKernelGGL(reduce_kernel, dim3(g->n / BLOCK), dim3(BLOCK), 0, g->work, g->y, g->n, g->total);
	if (!hip_ok(s, hipGetLastError(), "launching reduce") ||
	    !hip_ok(s, hipMemcpyAsync(g->total_back, g->total, sizeof(*g->total), hipMemcpyDeviceToHost, g->work),
		    "hipMemcpyAsync of the total device->host") ||
	    !work_sync(s, "reduce running"))
		return false;
	g->launches++;
	if (*g->total_back != want) {
		sink_fail(s, "reduce: total %llu, expected %llu", *g->total_back, want);
		return false;
	}
	return true;
}

/*
 * The blits.  B gets a pattern host->device; A gets a word in its first half
 * (hipMemsetD32Async) and a byte in its second (hipMemsetD8Async); the first
 * half of A goes to the first half of B (offsets 16-byte aligned), and
 * A[4 .. 4 + len) to B[half + 8 ..) with len = half - 19: offsets only 4-byte
 * aligned, a length that leaves a byte tail.  B read back device->host.
 */
static bool round_blits(struct sink *s, const struct workload *w, const struct round_args *ra)
{
	struct gpu *g = s->g;
	const size_t half = BLIT_BYTES / 2, len = half - 19;
	uint8_t *want_a = g->blit_want, *want_b = g->blit_want + BLIT_BYTES;
	size_t bad = 0, first = 0;

	for (size_t i = 0; i < half; i += 4)
		memcpy(want_a + i, &ra->memset_word, 4);
	memset(want_a + half, ra->memset_byte, half);
	wl_fill(g->blit_src, BLIT_BYTES, w->seed ^ g->round.load(), BLIT_BO(g->index));
	memcpy(want_b, g->blit_src, BLIT_BYTES);
	memcpy(want_b, want_a, half);
	memcpy(want_b + half + 8, want_a + 4, len);
	memset(g->blit_back, 0, BLIT_BYTES);

	g->doing.store("blits: host->device, hipMemsetD32Async, hipMemsetD8Async, two device->device copies");
	if (!hip_ok(s, hipMemcpyAsync(g->blit_b, g->blit_src, BLIT_BYTES, hipMemcpyHostToDevice, g->work),
		    "hipMemcpyAsync B host->device") ||
	    !hip_ok(s, hipMemsetD32Async((hipDeviceptr_t)g->blit_a, (int)ra->memset_word, half / 4, g->work),
		    "hipMemsetD32Async of A's first half") ||
	    !hip_ok(s, hipMemsetD8Async((hipDeviceptr_t)(g->blit_a + half), ra->memset_byte, half, g->work),
		    "hipMemsetD8Async of A's second half") ||
	    !hip_ok(s, hipMemcpyAsync(g->blit_b, g->blit_a, half, hipMemcpyDeviceToDevice, g->work),
		    "hipMemcpyAsync device->device, 16-byte aligned") ||
	    !hip_ok(s, hipMemcpyAsync(g->blit_b + half + 8, g->blit_a + 4, len, hipMemcpyDeviceToDevice, g->work),
		    "hipMemcpyAsync device->device, 4-byte aligned with a byte tail") ||
	    !hip_ok(s, hipMemcpyAsync(g->blit_back, g->blit_b, BLIT_BYTES, hipMemcpyDeviceToHost, g->work),
		    "hipMemcpyAsync B device->host") ||
	    !work_sync(s, "blits running"))
		return false;
	for (size_t i = 0; i < BLIT_BYTES; i++)
		if (g->blit_back[i] != want_b[i] && !bad++)
			first = i;
	if (bad) {
		sink_fail(s, "blits: %zu of %u bytes of B wrong; the first at offset %zu: 0x%02x, expected 0x%02x",
			  bad, BLIT_BYTES, first, g->blit_back[first], want_b[first]);
		return false;
	}
	return true;
}

/* One round on GPU @g: iterate, reduce, blits.  True when all of it was right. */
static bool run_round(struct workload *w, struct gpu *g, uint32_t iters, struct wl_report *r)
{
	struct sink s = { g, r, false };
	const struct round_args ra = round_args(w, g, g->round.load(), iters);

	g->busy_since_ms.store(now_ms());
	if (round_iterate(&s, &ra) && round_reduce(&s))
		round_blits(&s, w, &ra);
	if (!s.failed)
		g->rounds++;
	g->round++;
	return !s.failed;
}

struct thread_arg {
	struct workload *w;
	struct gpu *g;
};

static void *rounds_main(void *p)
{
	struct thread_arg *a = (struct thread_arg *)p;
	struct workload *w = a->w;
	struct gpu *g = a->g;
	char name[160];
	hipError_t e;

	free(a);
	e = hipSetDevice(g->dev);
	if (e != hipSuccess) {
		round_fail(g, "%s: hipSetDevice in its round thread: %s", gpu_name(g, name, sizeof(name)),
			   hipGetErrorString(e));
		return NULL;
	}
	while (!w->stop.load()) {
		bool ok;

		/* a mutex is not fair: without this, the thread would take it straight back */
		if (g->verify_waits.load()) {
			usleep(1000);
			continue;
		}
		pthread_mutex_lock(&g->round_lock);
		ok = run_round(w, g, w->iters, NULL);
		pthread_mutex_unlock(&g->round_lock);
		if (!ok) {
			g->doing.store("pausing after a failed round");
			usleep(100 * 1000);
		}
	}
	g->doing.store("stopped");
	return NULL;
}

/* ---- the contract ---------------------------------------------------------------- */

static void verify(void *ctx, struct wl_report *r)
{
	struct workload *w = (struct workload *)ctx;
	char name[160], what[300];
	int devices = 0;
	hipError_t e;

	/*
	 * Between two rounds: every GPU's round in flight completes first, and none starts another
	 * until its GPU has been verified (so that verification waits for one round at most).
	 */
	for (unsigned int i = 0; i < w->n_gpus; i++)
		w->gpus[i].verify_waits.store(true);
	for (unsigned int i = 0; i < w->n_gpus; i++) {
		struct gpu *g = &w->gpus[i];
		struct sink s = { g, r, false };

		gpu_name(g, name, sizeof(name));
		e = hipSetDevice(g->dev);
		if (e != hipSuccess) {
			wl_fail(r, "%s: hipSetDevice: %s", name, hipGetErrorString(e));
			g->verify_waits.store(false);
			continue;
		}
		pthread_mutex_lock(&g->round_lock);
		for (unsigned int b = 0; b < g->n_bufs; b++) {
			snprintf(what, sizeof(what), "%s buffer %u (device %p, 0x%" PRIx64 " bytes)", name,
				 g->first_bo + b, g->bufs[b], g->sizes[b]);
			memset(w->scratch, 0, g->sizes[b]);
			if (!hip_ok(&s, hipMemcpyAsync(w->scratch, g->bufs[b], g->sizes[b], hipMemcpyDeviceToHost, g->work),
				    "hipMemcpyAsync of a content buffer device->host") ||
			    !work_sync(&s, "verify: reading a content buffer back"))
				continue;
			wl_check_pattern(r, what, w->scratch, g->sizes[b], w->seed, g->first_bo + b);
		}
		pthread_mutex_lock(&g->lock);
		if (g->failures.load())
			wl_fail(r, "%" PRIu64 " rounds failed (%" PRIu64 " right, %" PRIu64 " kernels completed); the first: %s",
				g->failures.load(), g->rounds.load(), g->launches.load(), g->failure);
		else
			/* no round may have completed yet: verify's own round below runs every kernel */
			wl_pass(r);
		pthread_mutex_unlock(&g->lock);
		/* x and y as the last round left them, then new kernels of every kind */
		if (check_arrays(&s, "as the last round left them"))
			wl_pass(r);
		if (run_round(w, g, VERIFY_ITERS, r))
			wl_pass(r);
		pthread_mutex_unlock(&g->round_lock);
		g->verify_waits.store(false);
	}
	e = hipGetDeviceCount(&devices);
	if (e != hipSuccess)
		wl_fail(r, "hipGetDeviceCount: %s", hipGetErrorString(e));
	else if (devices != w->devices)
		wl_fail(r, "hipGetDeviceCount: %d devices, %d at set-up", devices, w->devices);
	else
		wl_pass(r);
}

/*
 * Each GPU runs one short kernel on its heartbeat stream and reads its count
 * back, within --hb-timeout-ms, whatever the work stream is running.  A beat
 * that timed out earlier is waited for first, within the same time.
 */
static void heartbeat(void *ctx, struct wl_report *r)
{
	struct workload *w = (struct workload *)ctx;
	const uint64_t t0 = now_ms();
	bool launched[WL_MAX_GPUS] = { false };
	char name[160];

	for (unsigned int i = 0; i < w->n_gpus; i++) {
		struct gpu *g = &w->gpus[i];
		hipError_t e;

		gpu_name(g, name, sizeof(name));
		while (g->beat_pending && hipEventQuery(g->beat_done) == hipErrorNotReady &&
		       now_ms() - t0 < w->opts.hb_timeout_ms)
			usleep(2000);
		if (g->beat_pending && hipEventQuery(g->beat_done) == hipErrorNotReady) {
			wl_fail(r, "%s: the previous heartbeat kernel has still not completed (round %" PRIu64 ": %s)",
				name, g->round.load(), g->doing.load());
			continue;
		}
		g->beat_pending = false;
		e = hipSetDevice(g->dev);
		if (e == hipSuccess) {
			(void)hipGetLastError(); /* the previous heartbeat's event queries */
			hipLaunchKernelGGL(beat_kernel, dim3(1), dim3(64), 0, g->beat_stream, g->beats);
			e = hipGetLastError();
		}
		if (e == hipSuccess)
			e = hipMemcpyAsync(g->beats_back, g->beats, sizeof(*g->beats), hipMemcpyDeviceToHost, g->beat_stream);
		if (e == hipSuccess)
			e = hipEventRecord(g->beat_done, g->beat_stream);
		if (e != hipSuccess) {
			wl_fail(r, "%s: launching the heartbeat kernel: %s", name, hipGetErrorString(e));
			continue;
		}
		g->beats_sent++;
		g->beat_pending = true;
		launched[i] = true;
	}
	for (unsigned int i = 0; i < w->n_gpus; i++) {
		struct gpu *g = &w->gpus[i];
		hipError_t e;

		if (!launched[i])
			continue;
		gpu_name(g, name, sizeof(name));
		while ((e = hipEventQuery(g->beat_done)) == hipErrorNotReady && now_ms() - t0 < w->opts.hb_timeout_ms)
			usleep(2000);
		if (e == hipErrorNotReady) {
			wl_fail(r, "%s: the heartbeat kernel did not complete within %u ms (round %" PRIu64 ": %s, for %" PRIu64 " ms)",
				name, w->opts.hb_timeout_ms, g->round.load(), g->doing.load(),
				now_ms() - g->busy_since_ms.load());
			continue;
		}
		g->beat_pending = false;
		if (e != hipSuccess)
			wl_fail(r, "%s: the heartbeat kernel: %s", name, hipGetErrorString(e));
		else if (*g->beats_back != g->beats_sent)
			wl_fail(r, "%s: the heartbeat kernel counted %u beats, %u were sent", name, *g->beats_back,
				g->beats_sent);
		else
			wl_pass(r);
	}
}

static void teardown(void *ctx)
{
	struct workload *w = (struct workload *)ctx;
	char name[160];

	w->stop.store(true);
	for (unsigned int i = 0; i < w->n_gpus; i++) {
		struct gpu *g = &w->gpus[i];

		if (g->started) {
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += JOIN_SECONDS;
			if (pthread_timedjoin_np(g->thread, NULL, &until)) {
				wl_err("%s: its round thread is still %s after %d s; not freeing its memory",
				       gpu_name(g, name, sizeof(name)), g->doing.load(), JOIN_SECONDS);
				continue;
			}
		}
		(void)hipSetDevice(g->dev);
		if (g->beat_pending)
			(void)hipEventSynchronize(g->beat_done);
		if (g->beat_done)
			(void)hipEventDestroy(g->beat_done);
		if (g->work)
			(void)hipStreamDestroy(g->work);
		if (g->beat_stream)
			(void)hipStreamDestroy(g->beat_stream);
		for (unsigned int b = 0; b < g->n_bufs; b++)
			(void)hipFree(g->bufs[b]);
		(void)hipFree(g->x);
		(void)hipFree(g->y);
		(void)hipFree(g->total);
		(void)hipFree(g->blit_a);
		(void)hipFree(g->blit_b);
		(void)hipFree(g->beats);
		(void)hipHostFree(g->back);
		(void)hipHostFree(g->total_back);
		(void)hipHostFree(g->blit_src);
		(void)hipHostFree(g->blit_back);
		(void)hipHostFree(g->beats_back);
		free(g->blit_want);
		free(g->hx);
		free(g->hy);
		free(g->bufs);
		free(g->sizes);
	}
	free(w->scratch);
}

/* ---- set-up ------------------------------------------------------------------------- */

/* The HIP device of GPU node @g (hip_device.h) */
static int find_device(struct workload *w, struct gpu *g, const bool *taken)
{
	const struct hip_device out = { &g->dev, g->pci, sizeof(g->pci), g->arch, sizeof(g->arch), g->name, sizeof(g->name) };

	return hip_find_device(&g->node, w->devices, taken, &out);
}

template <typename T> static hipError_t dev_alloc(T **p, size_t bytes)
{
	return hipMalloc((void **)p, bytes);
}

template <typename T> static hipError_t host_alloc(T **p, size_t bytes)
{
	return hipHostMalloc((void **)p, bytes, hipHostMallocDefault);
}

static int setup_gpu(struct workload *w, struct gpu *g, unsigned int *next_bo)
{
	const size_t array = (size_t)w->kernel_kib << 10;
	char name[160];

	HIP_SETUP_CHECK(hipSetDevice(g->dev), "hipSetDevice(%d) for GPU node %u", g->dev, g->node.node);
	gpu_name(g, name, sizeof(name));
	HIP_SETUP_CHECK(hipStreamCreateWithFlags(&g->work, hipStreamNonBlocking), "%s: the work stream", name);
	HIP_SETUP_CHECK(hipStreamCreateWithFlags(&g->beat_stream, hipStreamNonBlocking), "%s: the heartbeat stream", name);
	HIP_SETUP_CHECK(hipEventCreateWithFlags(&g->beat_done, hipEventDisableTiming), "%s: the heartbeat event", name);

	g->n_bufs = wl_content_bos(&w->opts, g->index);
	g->first_bo = *next_bo;
	*next_bo += g->n_bufs;
	g->bufs = (void **)calloc(g->n_bufs, sizeof(*g->bufs));
	g->sizes = (uint64_t *)calloc(g->n_bufs, sizeof(*g->sizes));
	g->n = (uint32_t)(array / 4);
	g->hx = (uint32_t *)malloc(array);
	g->hy = (uint32_t *)malloc(array);
	g->blit_want = (uint8_t *)malloc(2 * BLIT_BYTES); /* A's expected content, then B's */
	if (!g->bufs || !g->sizes || !g->hx || !g->hy || !g->blit_want) {
		wl_err("%s: out of memory", name);
		return WL_EXIT_SETUP;
	}
	for (unsigned int b = 0; b < g->n_bufs; b++) {
		g->sizes[b] = wl_content_bo_size(&w->opts, g->index, b);
		HIP_SETUP_CHECK(hipMalloc(&g->bufs[b], g->sizes[b]), "%s: hipMalloc(0x%" PRIx64 ") for buffer %u", name,
			    g->sizes[b], g->first_bo + b);
		if (g->sizes[b] > w->scratch_size) {
			free(w->scratch);
			w->scratch_size = g->sizes[b];
			w->scratch = malloc(w->scratch_size);
			if (!w->scratch) {
				wl_err("out of memory for 0x%" PRIx64 " bytes", w->scratch_size);
				return WL_EXIT_SETUP;
			}
		}
		wl_fill(w->scratch, g->sizes[b], w->seed, g->first_bo + b);
		HIP_SETUP_CHECK(hipMemcpyAsync(g->bufs[b], w->scratch, g->sizes[b], hipMemcpyHostToDevice, g->work),
			    "%s: hipMemcpyAsync host->device of buffer %u", name, g->first_bo + b);
		HIP_SETUP_CHECK(hipStreamSynchronize(g->work), "%s: filling buffer %u", name, g->first_bo + b);
	}
	HIP_SETUP_CHECK(dev_alloc(&g->x, array), "%s: hipMalloc(0x%zx) for x", name, array);
	HIP_SETUP_CHECK(dev_alloc(&g->y, array), "%s: hipMalloc(0x%zx) for y", name, array);
	HIP_SETUP_CHECK(dev_alloc(&g->total, sizeof(*g->total)), "%s: hipMalloc for the total", name);
	HIP_SETUP_CHECK(dev_alloc(&g->blit_a, BLIT_BYTES), "%s: hipMalloc for blit buffer A", name);
	HIP_SETUP_CHECK(dev_alloc(&g->blit_b, BLIT_BYTES), "%s: hipMalloc for blit buffer B", name);
	HIP_SETUP_CHECK(dev_alloc(&g->beats, sizeof(*g->beats)), "%s: hipMalloc for the heartbeat count", name);
	HIP_SETUP_CHECK(host_alloc(&g->back, 2 * array), "%s: hipHostMalloc(0x%zx) for reading back", name, 2 * array);
	HIP_SETUP_CHECK(host_alloc(&g->total_back, sizeof(*g->total_back)), "%s: hipHostMalloc for the total", name);
	HIP_SETUP_CHECK(host_alloc(&g->blit_src, BLIT_BYTES), "%s: hipHostMalloc for the blits", name);
	HIP_SETUP_CHECK(host_alloc(&g->blit_back, BLIT_BYTES), "%s: hipHostMalloc for the blits", name);
	HIP_SETUP_CHECK(host_alloc(&g->beats_back, sizeof(*g->beats_back)), "%s: hipHostMalloc for the heartbeat", name);

	/* x and y from the pattern, uploaded; the host keeps its copy */
	wl_fill(g->back, 2 * array, w->seed, 0x40000u + g->index);
	memcpy(g->hx, g->back, array);
	memcpy(g->hy, (uint8_t *)g->back + array, array);
	HIP_SETUP_CHECK(hipMemcpyAsync(g->x, g->hx, array, hipMemcpyHostToDevice, g->work), "%s: x host->device", name);
	HIP_SETUP_CHECK(hipMemcpyAsync(g->y, g->hy, array, hipMemcpyHostToDevice, g->work), "%s: y host->device", name);
	HIP_SETUP_CHECK(hipMemsetAsync(g->beats, 0, sizeof(*g->beats), g->work), "%s: zeroing the heartbeat count", name);
	HIP_SETUP_CHECK(hipStreamSynchronize(g->work), "%s: uploading x and y", name);
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
	narrowed = getenv("ROCR_VISIBLE_DEVICES") || getenv("HIP_VISIBLE_DEVICES");
	if (narrowed ? (unsigned int)w->devices < n_gpus : (unsigned int)w->devices != all_gpus) {
		wl_err("hipGetDeviceCount: %d devices, the topology has %u GPU nodes (%u asked for)", w->devices,
		       all_gpus, n_gpus);
		return WL_EXIT_SETUP;
	}
	w->seed = wl_seed();
	for (unsigned int i = 0; i < n_gpus; i++) {
		struct gpu *g = &w->gpus[w->n_gpus++];

		g->index = i;
		g->node = nodes[i];
		pthread_mutex_init(&g->lock, NULL);
		pthread_mutex_init(&g->round_lock, NULL);
		ret = find_device(w, g, taken);
		if (ret)
			return ret;
		taken[g->dev] = true;
		ret = setup_gpu(w, g, &next_bo);
		if (ret)
			return ret;
	}
	for (unsigned int i = 0; i < w->n_gpus; i++) {
		struct thread_arg *a = (struct thread_arg *)malloc(sizeof(*a));
		int err;

		if (!a)
			return WL_EXIT_SETUP;
		*a = { w, &w->gpus[i] };
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

static void fill_state(FILE *f, void *ctx)
{
	const struct workload *w = (const struct workload *)ctx;

	fprintf(f, "workload hip_kernel\npid %d\nseed 0x%016" PRIx64 "\ngpus %u\nkernel_iters %u\nkernel_kib %u\n",
		(int)getpid(), w->seed, w->n_gpus, w->iters, w->kernel_kib);
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
		fprintf(f, "buffer - gpu %u kind x ptr %p size 0x%x content 0\n", i, (void *)g->x, g->n * 4);
		fprintf(f, "buffer - gpu %u kind y ptr %p size 0x%x content 0\n", i, (void *)g->y, g->n * 4);
		fprintf(f, "buffer - gpu %u kind blit-a ptr %p size 0x%x content 0\n", i, (void *)g->blit_a, BLIT_BYTES);
		fprintf(f, "buffer - gpu %u kind blit-b ptr %p size 0x%x content 0\n", i, (void *)g->blit_b, BLIT_BYTES);
	}
	wl_host_state(f);
	fprintf(f, "ready\n");
}

/* ---- a kernel that ends in an error --------------------------------------------------- */

static struct workload *aborting;

/*
 * HIP 6.4 calls abort() when a queue reports an error (a kernel that hit an
 * illegal instruction, a memory fault...), after printing the HSA status on
 * stderr.  Say which kernel each GPU was running, with what is safe here.
 */
static void on_abort(int sig)
{
	static const char head[] = ": HIP aborted the process (a kernel ended in an error; HIP's reason is above)\n";
	char line[512];

	if (write(2, wl_prog, strlen(wl_prog)) < 0 || write(2, head, sizeof(head) - 1) < 0)
		goto out;
	for (unsigned int i = 0; aborting && i < aborting->n_gpus; i++) {
		const struct gpu *g = &aborting->gpus[i];
		const char *doing = g->doing.load();
		int n = snprintf(line, sizeof(line), "%s: gpu %u (gpu_id 0x%x) round %llu: %s\n", wl_prog, i,
				 g->node.gpu_id, (unsigned long long)g->round.load(), doing);

		if (n > 0 && write(2, line, (size_t)n) < 0)
			break;
	}
out:
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * SIGRTMIN+1, +2: a kernel that faults on purpose, on the first GPU's heartbeat
 * stream (a hardware queue of its own, where no long kernel is in the way):
 * "memory" stores through a wild pointer, "illegal" runs an MFMA.  HIP must
 * abort the process, naming the HSA status, within WL_FAULT_REPORT_MS; should
 * the kernel end otherwise, or nothing happen by then, the result says so.
 */
#define WILD_POINTER 0x1000 /* below the GPUVM aperture: nothing is mapped there */

static void fault(void *ctx, const char *kind, unsigned int *ms, struct wl_report *r)
{
	struct workload *w = (struct workload *)ctx;
	struct gpu *g = &w->gpus[0];
	const bool illegal = !strcmp(kind, "illegal");
	const uint64_t t0 = now_ms();
	hipError_t e;

	if (!illegal && strcmp(kind, "memory")) {
		wl_fail(r, "unknown fault kind '%s' (memory or illegal)", kind);
		return;
	}
	wl_info("launching a kernel that faults (%s) on gpu 0 (gpu_id 0x%x)", kind, g->node.gpu_id);
	/* what earlier calls of this thread left: what follows the launch is the launch's own */
	(void)hipGetLastError();
	/* on a GPU that has MFMA, the illegal kind's store faults instead */
	hipLaunchKernelGGL(illegal ? illegal_mfma : wild_store, dim3(1), dim3(64), 0, g->beat_stream,
			   (float *)WILD_POINTER);
	e = hipGetLastError();
	/* until the stream says something else than "not ready", or time is up */
	while (e == hipSuccess) {
		e = hipStreamQuery(g->beat_stream);
		if (e != hipErrorNotReady || now_ms() - t0 >= WL_FAULT_REPORT_MS)
			break;
		e = hipSuccess;
		usleep(1000);
	}
	*ms = (unsigned int)(now_ms() - t0);
	if (e == hipErrorNotReady)
		wl_fail(r, "gpu 0: the %s fault was reported to nobody within %u ms: the process would wait forever", kind,
			WL_FAULT_REPORT_MS);
	else
		wl_fail(r, "gpu 0: HIP did not abort for the %s fault; the kernel ended %s (%s) after %u ms", kind,
			hipGetErrorName(e), hipGetErrorString(e), *ms);
}

/* ---- --illegal-instruction ------------------------------------------------------------- */

struct illegal_kind {
	const char *name;
	void (*kernel)(float *);
	const char *expect; /* the HSA status HIP names before it aborts */
	const char *hip_error; /* or the error a HIP that returns it gives */
};

static const struct illegal_kind illegal_kinds[] = {
	{ "mfma", illegal_mfma, "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION", "hipErrorLaunchFailure" },
	{ "invalid", illegal_invalid, "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION", "hipErrorLaunchFailure" },
	{ "trap", illegal_trap, "HSA_STATUS_ERROR_EXCEPTION", "hipErrorLaunchFailure" },
};

/* The child: one kernel on the first GPU asked for; its exit code says how it ended if HIP returns. */
static int illegal_child(struct workload *w, const struct illegal_kind *k)
{
	struct gpu *g = &w->gpus[0];
	bool taken[WL_MAX_GPUS] = { false };
	struct wl_gpu_node nodes[WL_MAX_GPUS];
	unsigned int n_gpus, n_nodes;
	float *out;
	hipError_t e;
	int ret;

	ret = wl_pick_gpus(&w->opts, nodes, &n_gpus, &n_nodes);
	if (ret)
		return ret;
	HIP_SETUP_CHECK(hipGetDeviceCount(&w->devices), "hipGetDeviceCount");
	g->node = nodes[0];
	w->n_gpus = 1;
	ret = find_device(w, g, taken);
	if (ret)
		return ret;
	HIP_SETUP_CHECK(hipSetDevice(g->dev), "hipSetDevice(%d)", g->dev);
	HIP_SETUP_CHECK(hipMalloc((void **)&out, 64 * sizeof(float)), "hipMalloc");
	printf("launching the %s kernel on HIP device %d (%s)\n", k->name, g->dev, g->arch);
	fflush(stdout);
	hipLaunchKernelGGL(k->kernel, dim3(1), dim3(64), 0, 0, out);
	e = hipGetLastError();
	if (e == hipSuccess)
		e = hipDeviceSynchronize();
	printf("the kernel ended: %s (%s)\n", hipGetErrorName(e), hipGetErrorString(e));
	fflush(stdout);
	return e == hipSuccess ? 3 : 4;
}

/*
 * The parent: the child's output (stdout and stderr together) and how it
 * ended.  Right: HIP named the expected HSA status and aborted, or returned
 * the expected error.  The result goes to <state>.illegal and stdout.
 */
static int illegal_main(struct workload *w, const struct illegal_kind *k, const char *custom)
{
	const char *expect = custom ? custom : k->expect;
	char out[8192] = "", line[600];
	size_t len = 0;
	int pipefd[2], status = 0;
	const uint64_t t0 = now_ms();
	bool timed_out = false;
	pid_t pid;
	int ret;

	if (pipe(pipefd)) {
		wl_err("pipe: %s", strerror(errno));
		return WL_EXIT_SETUP;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		wl_err("fork: %s", strerror(errno));
		return WL_EXIT_SETUP;
	}
	if (!pid) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		close(pipefd[1]);
		setvbuf(stdout, NULL, _IOLBF, 0);
		_exit(illegal_child(w, k));
	}
	close(pipefd[1]);
	for (;;) {
		struct pollfd p = { pipefd[0], POLLIN, 0 };
		ssize_t n;

		if (now_ms() - t0 > ILLEGAL_TIMEOUT_S * 1000ULL) {
			timed_out = true;
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&p, 1, 500) <= 0)
			continue;
		n = read(pipefd[0], out + len, sizeof(out) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		out[len] = '\0';
		if (len == sizeof(out) - 1) {
			/* keep the end: HIP's message is the last thing the child says */
			memmove(out, out + len / 2, len - len / 2 + 1);
			len -= len / 2;
		}
	}
	close(pipefd[0]);
	waitpid(pid, &status, 0);

	if (len && out[len - 1] != '\n' && len < sizeof(out) - 1)
		strcat(out, "\n");
	if (timed_out) {
		ret = 1;
		snprintf(line, sizeof(line), "ILLEGAL FAIL: the %s kernel neither completed nor failed within %d s",
			 k->name, ILLEGAL_TIMEOUT_S);
	} else if (WIFSIGNALED(status)) {
		ret = WTERMSIG(status) == SIGABRT && strstr(out, expect) ? 0 : 1;
		snprintf(line, sizeof(line), "ILLEGAL %s: the %s kernel: HIP %s %s and the process died of signal %d (%s)",
			 ret ? "FAIL" : "OK", k->name, strstr(out, expect) ? "named" : "did not name", expect,
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	} else if (WEXITSTATUS(status) == 4) {
		ret = strstr(out, expect) || (!custom && strstr(out, k->hip_error)) ? 0 : 1;
		snprintf(line, sizeof(line), "ILLEGAL %s: the %s kernel: HIP returned an error (below), expected %s%s%s",
			 ret ? "FAIL" : "OK", k->name, expect, custom ? "" : " or ", custom ? "" : k->hip_error);
	} else if (WEXITSTATUS(status) == 3) {
		ret = 1;
		snprintf(line, sizeof(line), "ILLEGAL FAIL: the %s kernel completed without an error, expected %s",
			 k->name, expect);
	} else {
		/* no GPU (77) or a set-up that failed: what the other workloads exit with */
		ret = WEXITSTATUS(status);
		snprintf(line, sizeof(line), "ILLEGAL %s: the child's set-up ended with exit %d (below)",
			 ret == WL_EXIT_SKIP ? "SKIP" : "FAIL", ret);
	}
	wl_publish(w->opts.state, ".illegal", line, out);
	return ret;
}

/* ---- main ---------------------------------------------------------------------------------- */

/* This workload's own options, taken out of argv before the common ones are parsed. */
static void own_options(int *argc, char **argv, struct workload *w, const struct illegal_kind **illegal,
			const char **expect)
{
	int out = 1;

	w->iters = DEFAULT_ITERS;
	w->kernel_kib = DEFAULT_KERNEL_KIB;
	for (int i = 1; i < *argc; i++) {
		const char *arg = argv[i];

		if (!strcmp(arg, "--kernel-iters") && i + 1 < *argc) {
			w->iters = wl_parse_uint(arg, argv[++i], 1, 1u << 30);
		} else if (!strcmp(arg, "--kernel-kib") && i + 1 < *argc) {
			/* 1 KiB is 256 words: one block of work-items */
			w->kernel_kib = wl_parse_uint(arg, argv[++i], 1, 1u << 20);
		} else if (!strcmp(arg, "--expect") && i + 1 < *argc) {
			*expect = argv[++i];
		} else if (!strncmp(arg, "--illegal-instruction", 21) && (!arg[21] || arg[21] == '=')) {
			const char *kind = arg[21] ? arg + 22 : "mfma";

			*illegal = NULL;
			for (const struct illegal_kind &k : illegal_kinds)
				if (!strcmp(kind, k.name))
					*illegal = &k;
			if (!*illegal) {
				wl_err("--illegal-instruction: no kind '%s' (mfma, invalid, trap)", kind);
				exit(WL_EXIT_USAGE);
			}
		} else {
			if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
				printf("%s [--kernel-iters N (default %d)] [--kernel-kib K (default %d)]\n"
				       "%s --illegal-instruction[=mfma|invalid|trap] [--expect HSA_STATUS_NAME]\n",
				       wl_prog, DEFAULT_ITERS, DEFAULT_KERNEL_KIB, wl_prog);
			argv[out++] = argv[i];
		}
	}
	argv[out] = NULL;
	*argc = out;
}

int main(int argc, char **argv)
{
	static struct workload w;
	static const struct wl_ops ops = { verify, heartbeat, teardown, NULL, fault };
	const struct illegal_kind *illegal = NULL;
	const char *expect = NULL;
	uint64_t t0 = now_ms();
	int ret;

	wl_prog = "hip_kernel_workload";
	own_options(&argc, argv, &w, &illegal, &expect);
	wl_parse_opts(argc, argv, &w.opts);
	if (illegal)
		return illegal_main(&w, illegal, expect);
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
	aborting = &w;
	signal(SIGABRT, on_abort);
	wl_info("set up %u GPU(s) in %" PRIu64 " ms; iterate: %u words, %u iterations a launch", w.n_gpus,
		now_ms() - t0, w.gpus[0].n, w.iters);
	return wl_serve(&w.opts, &ops, &w);
}
