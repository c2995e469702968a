// SPDX-License-Identifier: GPL-2.0-only
/*
 * ipc_workload: a job of several processes that share GPU memory, the shape of
 * distributed training and serving (one process per GPU, each writing into
 * and reading from its peers' buffers), written against ROCm's runtime (the
 * HSA API of ROCr 6.4 and newer: built in the ROCm userland roots,
 * test/vm/rocm-build.sh).
 *
 * The process tree.  The started process is the launcher, as torchrun's agent
 * is: it opens no GPU, forks the ranks (--gpus N, default 2) and is their
 * rendezvous: the ranks' handles go to it and from it to every rank, over one
 * socketpair per rank.  A rank cannot be forked from a process that already
 * started ROCr (a KFD process is its opener's alone), so every rank starts its
 * own; the launcher keeps the workload contract (the signals, the state file)
 * and is the root of the tree criu dumps.  Rank r uses the r-th GPU node of
 * the topology, picked by the agent's node id, with every GPU visible, as a
 * rank of a real job sees its peers' GPUs.  A rank dies with the launcher
 * (PR_SET_PDEATHSIG).
 *
 * The sharing.  Each rank allocates its shared buffer (--vram-mb MiB of its
 * GPU's VRAM, a pattern) and exports it with hsa_amd_ipc_memory_create; every
 * rank attaches every peer's with hsa_amd_ipc_memory_attach, mapped for its
 * own GPU.  On KFD 1.12 and newer (the trixie guest's 7.3 kernel: 1.23), ROCr
 * 6.4 exports the buffer's KFD BO as a dma-buf (EXPORT_DMABUF) and hands the
 * fd over an abstract Unix socket ("xhsa<pid>") that a thread of the exporter
 * serves; the importer asks the dma-buf's GPU and size (GET_DMABUF_INFO),
 * imports it into its own KFD process on the exporter's GPU (IMPORT_DMABUF)
 * and maps it for its own GPU (MAP_MEMORY_TO_GPU).  Both processes then hold
 * one BO.  ROCr 6.4 takes that path only when HSA_ENABLE_IPC_MODE_LEGACY=0:
 * by default it shares through the IPC ioctls of AMD's own packaged driver
 * (AMDKFD_IOC_IPC_EXPORT_HANDLE), which upstream kernels never had, and
 * hsa_amd_ipc_memory_create fails there with HSA_STATUS_ERROR_INVALID_ARGUMENT
 * (ROCr 7.2 takes the dma-buf path by default).  A rank sets it to 0 unless
 * the job set it, as a job on an upstream kernel must.
 *
 * Rank 0 also keeps a dma-buf fd in its fd table: a buffer of --bo-mb MiB of
 * its own, exported with hsa_amd_portable_export_dmabuf and never closed (as a
 * job that registers GPU memory with a NIC over dma-buf does).  --no-ipc: none
 * of this, each rank has only its own buffer (the same job without sharing,
 * whose images a scenario compares); --no-dmabuf-fd: no held dma-buf fd.
 *
 * Why ROCr and not HIP: hipIpcGetMemHandle and hipIpcOpenMemHandle are these
 * two ROCr calls; going to ROCr directly chooses the agent and the engine of
 * every copy: host->device and device->host on the SDMA engines of the rank's
 * own GPU.  HIP picks an engine per stream and on gfx90a falls back to its
 * copy kernel for a direction the stream's engine does not take
 * (hip_workload.c), and the emulated GPU runs no shader.
 *
 * A shared buffer of S bytes in a job of N ranks is laid out in slots of
 * S / 4N bytes (whole pages):
 *
 *   verify slot k      (k < N)   written by rank k at each verification
 *   heartbeat slot k   (k < N)   rank k's round trips (into the next rank's buffer)
 *   the rest                     the pattern written at set-up, never written again
 *
 * Verification (SIGUSR1) proves sharing, not only contents: generation g, with
 * a seed made of g and the wall-clock time of the request.  First every rank
 * writes its verify slot of every buffer, its own and each peer's through its
 * attachment, with a host->device copy of its GPU (the pattern of generation
 * g, writer and owner); when all have written, every rank reads every buffer
 * back device->host through its own GPU and checks each verify slot: in its
 * own buffer, that every peer's write arrived; in each peer's buffer, that
 * the owner's write and every other rank's are seen there.  A slot that still
 * holds the previous generation is said so: buffers restored as a private copy
 * per process fail here.  Also: the rest of each buffer holds its set-up
 * pattern, rank 0's held buffer too and its dma-buf fd is still open, and no
 * round trip failed.  Each check is one line on stdout ("# verify g: rank r
 * ... in rank o's buffer: rank w's write of generation g is there").
 *
 * Heartbeat: a thread per rank does round trips, host->device into its
 * heartbeat slot of the next rank's buffer and back (its own buffer with one
 * rank or --no-ipc), every byte checked; SIGUSR2: every rank completes two
 * within --hb-timeout-ms.  SIGUSR1 runs it after the verification.
 *
 * The contract with the scenarios is the other workloads' (test/e2e/README.md):
 * READY <launcher pid> once every rank attached every peer, the state file
 * (fill_state), SIGUSR1 -> <state>.verify, SIGUSR2 -> <state>.heartbeat,
 * SIGTERM -> the ranks end, then the launcher.
 */
#include "workload.h"

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_RANKS  2
#define WAIT_SLICE_NS  (1000ull * 1000 * 1000) /* one wait of a copy */
#define SETUP_WAIT_MS  300000		       /* hsa_init and the fills, under TCG */
#define ANSWER_WAIT_MS 45000
#define EXIT_WAIT_MS   10000
#define ROUND_PAUSE_MS 20
#define TEXT_MAX       600

/* Pattern numbers: the set-up pattern of a buffer is its owner's rank. */
#define VERIFY_BO(writer, owner) (0x1000u + (writer)*WL_MAX_GPUS + (owner))
#define HEARTBEAT_BO(rank)	 (0x2000u + (rank))
#define HELD_BO			 0x3000u

/* ---- what the launcher and the ranks say to each other ---------------------- */

enum msg_type {
	MSG_HELLO = 1, /* rank: set up; its info (handle, buffer) */
	MSG_PEERS,     /* launcher: every rank's info */
	MSG_ATTACHED,  /* rank: attached every peer; its info with peer_va */
	MSG_WRITE,     /* launcher: write your verify slots (gen, seed) */
	MSG_READ,      /* launcher: read every buffer back (gen, seed, prev_seed) */
	MSG_HEARTBEAT, /* launcher: two round trips within timeout_ms */
	MSG_EXIT,      /* launcher: end */
	MSG_LINE,      /* rank: one check (ok) or a set-up failure (text) */
	MSG_END,       /* rank: the answer is complete */
};

struct rank_info {
	int32_t pid;
	uint32_t node, gpu_id;
	uint64_t buf, size, bo_size; /* the shared buffer; the KFD BO behind it (0: not asked) */
	hsa_amd_ipc_memory_t handle;
	int32_t held_fd; /* rank 0: the dma-buf fd it keeps, or -1 */
	uint64_t held, held_size, held_bo_size, held_offset;
	uint64_t peer_va[WL_MAX_GPUS]; /* where it attached each peer's buffer */
};

struct msg {
	uint32_t type;
	uint32_t ok;	     /* MSG_LINE: the check passed */
	int32_t exit_code;   /* MSG_LINE of a failed set-up */
	uint32_t timeout_ms; /* MSG_HEARTBEAT */
	uint64_t gen, seed, prev_seed;
	union {
		struct rank_info info;		     /* HELLO, ATTACHED */
		struct rank_info peers[WL_MAX_GPUS]; /* PEERS */
		char text[TEXT_MAX];		     /* LINE */
	};
};

static int send_msg(int fd, const struct msg *m)
{
	return send(fd, m, sizeof(*m), MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0 : -errno;
}

/* 1: a message; 0: the other end closed; -ETIMEDOUT or -errno. */
static int recv_msg(int fd, struct msg *m, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int ret;

	do
		ret = poll(&p, 1, timeout_ms);
	while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	if (!ret)
		return -ETIMEDOUT;
	do
		n = recv(fd, m, sizeof(*m), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (!n)
		return 0;
	return n == (ssize_t)sizeof(*m) ? 1 : -EPROTO;
}

static int send_line(int fd, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int send_line(int fd, bool ok, const char *fmt, ...)
{
	struct msg m = { .type = MSG_LINE, .ok = ok };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.text, sizeof(m.text), fmt, ap);
	va_end(ap);
	return send_msg(fd, &m);
}

/* ---- a shared buffer's layout ----------------------------------------------------- */

static uint64_t slot_bytes(uint64_t size, unsigned int n)
{
	uint64_t s = size / (4 * n) & ~(WL_PAGE - 1);

	return s ? s : WL_PAGE;
}

static uint64_t verify_slot(uint64_t size, unsigned int n, unsigned int k)
{
	return k * slot_bytes(size, n);
}

static uint64_t heartbeat_slot(uint64_t size, unsigned int n, unsigned int k)
{
	return (n + k) * slot_bytes(size, n);
}

static uint64_t rest_offset(uint64_t size, unsigned int n)
{
	return 2 * n * slot_bytes(size, n);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- a rank ------------------------------------------------------------------------- */

struct rank {
	unsigned int index, n;
	bool ipc, hold;
	uint64_t seed; /* the set-up pattern's */
	int fd;	       /* its end of the socketpair to the launcher */
	struct wl_gpu_node node;
	struct rank_info info;
	struct rank_info peers[WL_MAX_GPUS];

	hsa_agent_t cpu, gpu;
	hsa_amd_memory_pool_t sys, vram;
	bool has_cpu, has_gpu, has_sys, has_vram;
	void *buf;		 /* its shared buffer */
	void *view[WL_MAX_GPUS]; /* rank r's buffer as this rank reaches it: its own, or attached */
	uint64_t sizes[WL_MAX_GPUS];
	void *held;  /* rank 0: the buffer whose dma-buf fd it keeps */
	void *stage; /* host memory the copies go through, as large as the largest buffer */
	uint64_t stage_size;
	hsa_signal_t done; /* the control thread's copies */

	pthread_t thread;
	bool started;
	void *hb_src, *hb_back;
	hsa_signal_t hb_done;
	atomic_bool stop;
	atomic_uint_fast64_t rounds, failures;
	_Atomic(const char *) doing;
	pthread_mutex_t lock;
	char failure[TEXT_MAX];
};

static const char *status_text(hsa_status_t s)
{
	const char *text = NULL;

	if (hsa_status_string(s, &text) != HSA_STATUS_SUCCESS || !text)
		return "unknown status";
	return text;
}

/* "rank 0 (pid 123, GPU node 1, gpu_id 0xc1e6)" */
static const char *rank_name(const struct rank_info *i, unsigned int index, char *buf, size_t len)
{
	snprintf(buf, len, "rank %u (pid %d, GPU node %u, gpu_id 0x%x)", index, i->pid, i->node, i->gpu_id);
	return buf;
}

static bool global_pool(hsa_amd_memory_pool_t pool)
{
	hsa_amd_segment_t seg;

	return hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) == HSA_STATUS_SUCCESS &&
	       seg == HSA_AMD_SEGMENT_GLOBAL;
}

static hsa_status_t vram_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct rank *k = data;

	if (!k->has_vram && global_pool(pool)) {
		k->vram = pool;
		k->has_vram = true;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t system_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct rank *k = data;
	uint32_t flags = 0;

	if (k->has_sys || !global_pool(pool))
		return HSA_STATUS_SUCCESS;
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) {
		k->sys = pool;
		k->has_sys = true;
	}
	return HSA_STATUS_SUCCESS;
}

/* The CPU agent, and the GPU agent of this rank's topology node. */
static hsa_status_t find_agent(hsa_agent_t a, void *data)
{
	struct rank *k = data;
	hsa_device_type_t type;
	uint32_t node = UINT32_MAX;

	if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS)
		return HSA_STATUS_SUCCESS;
	if (type == HSA_DEVICE_TYPE_CPU && !k->has_cpu) {
		k->cpu = a;
		k->has_cpu = true;
	} else if (type == HSA_DEVICE_TYPE_GPU && !k->has_gpu) {
		hsa_agent_get_info(a, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DRIVER_NODE_ID, &node);
		if (node == k->node.node) {
			k->gpu = a;
			k->has_gpu = true;
		}
	}
	return HSA_STATUS_SUCCESS;
}

/*
 * One copy by this rank's GPU, complete when it returns; false with the reason in @err. Device
 * memory (its own buffer or an attached one) goes with the GPU's agent, staging memory with the
 * CPU's: ROCr then moves it on the GPU's host->device or device->host SDMA engine. A copy that
 * takes long is waited for as long as the rank runs: a checkpoint may hold the queues paused for
 * minutes, and the heartbeat check is what reports a queue that stalls.
 */
static bool gpu_copy(struct rank *k, hsa_signal_t done, void *dst, hsa_agent_t dst_agent, const void *src,
		     hsa_agent_t src_agent, uint64_t bytes, char *err, size_t errlen)
{
	hsa_signal_value_t v;
	hsa_status_t st;

	hsa_signal_store_screlease(done, 1);
	st = hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, bytes, 0, NULL, done);
	if (st != HSA_STATUS_SUCCESS) {
		snprintf(err, errlen, "hsa_amd_memory_async_copy(%p <- %p, 0x%" PRIx64 " bytes): %s", dst, src, bytes,
			 status_text(st));
		return false;
	}
	do
		v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, WAIT_SLICE_NS, HSA_WAIT_STATE_BLOCKED);
	while (v && !atomic_load(&k->stop));
	if (v) {
		snprintf(err, errlen, "the copy %p <- %p (0x%" PRIx64 " bytes) had not completed when the rank ended",
			 dst, src, bytes);
		return false;
	}
	return true;
}

static bool to_device(struct rank *k, hsa_signal_t done, void *dev, const void *host, uint64_t bytes, char *err,
		      size_t errlen)
{
	return gpu_copy(k, done, dev, k->gpu, host, k->cpu, bytes, err, errlen);
}

static bool to_host(struct rank *k, hsa_signal_t done, void *host, const void *dev, uint64_t bytes, char *err,
		    size_t errlen)
{
	return gpu_copy(k, done, host, k->cpu, dev, k->gpu, bytes, err, errlen);
}

/* A shared buffer's set-up content: every slot and the rest, the pattern of generation 0. */
static void fill_layout(void *p, uint64_t size, unsigned int n, unsigned int owner, uint64_t seed)
{
	const uint64_t slot = slot_bytes(size, n), rest = rest_offset(size, n);
	char *b = p;

	for (unsigned int j = 0; j < n; j++) {
		wl_fill(b + verify_slot(size, n, j), slot, seed, VERIFY_BO(j, owner));
		wl_fill(b + heartbeat_slot(size, n, j), slot, seed, HEARTBEAT_BO(j));
	}
	wl_fill(b + rest, size - rest, seed, owner);
}

/* The size of the dma-buf behind @fd: the whole KFD BO, which may hold more than the buffer. */
static uint64_t dmabuf_size(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);

	return end < 0 ? 0 : (uint64_t)end;
}

/* The rank's heartbeat goes into the next rank's buffer, or its own. */
static unsigned int heartbeat_target(const struct rank *k)
{
	return k->ipc && k->n > 1 ? (k->index + 1) % k->n : k->index;
}

static void round_fail(struct rank *k, uint64_t round, const char *what)
{
	char name[128];

	pthread_mutex_lock(&k->lock);
	if (!atomic_load(&k->failures))
		snprintf(k->failure, sizeof(k->failure), "%s round trip %" PRIu64 ": %s",
			 rank_name(&k->info, k->index, name, sizeof(name)), round, what);
	atomic_fetch_add(&k->failures, 1);
	pthread_mutex_unlock(&k->lock);
}

/* Round trips host -> the heartbeat slot -> host, every byte checked. */
static void *rounds_main(void *p)
{
	struct rank *k = p;
	const unsigned int t = heartbeat_target(k);
	const uint64_t bytes = slot_bytes(k->sizes[t], k->n);
	char *dst = (char *)k->view[t] + heartbeat_slot(k->sizes[t], k->n, k->index);
	char err[TEXT_MAX];

	for (uint64_t round = 0; !atomic_load(&k->stop); round++) {
		const uint64_t seed = k->seed ^ (round + 1) * 0x9e3779b97f4a7c15ULL;
		struct wl_report r;

		atomic_store(&k->doing, "filling the source");
		wl_fill(k->hb_src, bytes, seed, HEARTBEAT_BO(k->index));
		memset(k->hb_back, 0, bytes);
		atomic_store(&k->doing, "copying host->device");
		if (!to_device(k, k->hb_done, dst, k->hb_src, bytes, err, sizeof(err))) {
			round_fail(k, round, err);
			usleep(100 * 1000);
			continue;
		}
		atomic_store(&k->doing, "copying device->host");
		if (!to_host(k, k->hb_done, k->hb_back, dst, bytes, err, sizeof(err))) {
			round_fail(k, round, err);
			usleep(100 * 1000);
			continue;
		}
		wl_report_init(&r);
		if (wl_check_pattern(&r, "copied back", k->hb_back, bytes, seed, HEARTBEAT_BO(k->index)))
			atomic_fetch_add(&k->rounds, 1);
		else
			round_fail(k, round, r.first);
		wl_report_free(&r);
		atomic_store(&k->doing, "pausing between rounds");
		usleep(ROUND_PAUSE_MS * 1000);
	}
	atomic_store(&k->doing, "stopped");
	return NULL;
}

/* A set-up step failed: said to the launcher, which ends the job; the rank's exit code. */
static int rank_fail(struct rank *k, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rank_fail(struct rank *k, int code, const char *fmt, ...)
{
	struct msg m = { .type = MSG_LINE, .exit_code = code };
	char name[128];
	int at;
	va_list ap;

	at = snprintf(m.text, sizeof(m.text), "%s: ", rank_name(&k->info, k->index, name, sizeof(name)));
	va_start(ap, fmt);
	vsnprintf(m.text + at, sizeof(m.text) - (size_t)at, fmt, ap);
	va_end(ap);
	send_msg(k->fd, &m);
	return code;
}

#define RANK_CHECK(call, ...)                                                                                          \
	do {                                                                                                           \
		hsa_status_t st_ = (call);                                                                             \
		if (st_ != HSA_STATUS_SUCCESS) {                                                                       \
			char what_[TEXT_MAX];                                                                          \
			snprintf(what_, sizeof(what_), __VA_ARGS__);                                                   \
			return rank_fail(k, WL_EXIT_SETUP, "%s: %s", what_, status_text(st_));                         \
		}                                                                                                      \
	} while (0)

/* Host memory the rank's GPU copies from and to. */
static hsa_status_t staging(struct rank *k, uint64_t bytes, void **p)
{
	hsa_agent_t both[2] = { k->gpu, k->cpu };
	hsa_status_t st = hsa_amd_memory_pool_allocate(k->sys, bytes, 0, p);

	return st == HSA_STATUS_SUCCESS ? hsa_amd_agents_allow_access(2, both, NULL, *p) : st;
}

/* ROCr, the shared buffer with its content, its IPC handle, rank 0's held dma-buf. */
static int rank_setup(struct rank *k, const struct wl_opts *o)
{
	const unsigned int t = heartbeat_target(k);
	uint64_t held_size = (uint64_t)o->bo_mb << 20, offset;
	char err[TEXT_MAX];
	int fd;

	k->info.pid = getpid();
	k->info.node = k->node.node;
	k->info.gpu_id = k->node.gpu_id;
	k->info.held_fd = -1;
	for (unsigned int r = 0; r < k->n; r++) {
		k->sizes[r] = (uint64_t)o->vram_mb[r] << 20;
		if (k->sizes[r] > k->stage_size)
			k->stage_size = k->sizes[r];
	}
	if (k->hold && held_size > k->stage_size)
		k->stage_size = held_size;

	/* dma-buf IPC, the only kind upstream kernels have (see the top of the file) */
	setenv("HSA_ENABLE_IPC_MODE_LEGACY", "0", 0);
	RANK_CHECK(hsa_init(), "hsa_init");
	hsa_iterate_agents(find_agent, k);
	if (!k->has_gpu)
		return rank_fail(k, WL_EXIT_SKIP, "ROCr has no GPU agent of topology node %u", k->node.node);
	if (!k->has_cpu)
		return rank_fail(k, WL_EXIT_SETUP, "ROCr has no CPU agent");
	hsa_amd_agent_iterate_memory_pools(k->cpu, system_pool, k);
	hsa_amd_agent_iterate_memory_pools(k->gpu, vram_pool, k);
	if (!k->has_sys || !k->has_vram)
		return rank_fail(k, WL_EXIT_SETUP, "no %s pool", k->has_sys ? "VRAM" : "fine-grained system memory");

	RANK_CHECK(staging(k, k->stage_size, &k->stage), "staging memory of 0x%" PRIx64 " bytes", k->stage_size);
	RANK_CHECK(staging(k, slot_bytes(k->sizes[t], k->n), &k->hb_src), "heartbeat source");
	RANK_CHECK(staging(k, slot_bytes(k->sizes[t], k->n), &k->hb_back), "heartbeat read-back");
	RANK_CHECK(hsa_signal_create(1, 0, NULL, &k->done), "hsa_signal_create");
	RANK_CHECK(hsa_signal_create(1, 0, NULL, &k->hb_done), "hsa_signal_create");

	RANK_CHECK(hsa_amd_memory_pool_allocate(k->vram, k->sizes[k->index], 0, &k->buf),
		   "the shared buffer of 0x%" PRIx64 " bytes", k->sizes[k->index]);
	k->view[k->index] = k->buf;
	k->info.buf = (uintptr_t)k->buf;
	k->info.size = k->sizes[k->index];
	fill_layout(k->stage, k->info.size, k->n, k->index, k->seed);
	if (!to_device(k, k->done, k->buf, k->stage, k->info.size, err, sizeof(err)))
		return rank_fail(k, WL_EXIT_SETUP, "filling the shared buffer: %s", err);

	if (k->ipc) {
		RANK_CHECK(hsa_amd_ipc_memory_create(k->buf, k->info.size, &k->info.handle),
			   "hsa_amd_ipc_memory_create(%p, 0x%" PRIx64 ")", k->buf, k->info.size);
		/* the KFD BO behind it, which is what a checkpoint sees: its size, by a dma-buf of it */
		RANK_CHECK(hsa_amd_portable_export_dmabuf(k->buf, k->info.size, &fd, &offset),
			   "hsa_amd_portable_export_dmabuf(%p, 0x%" PRIx64 ")", k->buf, k->info.size);
		k->info.bo_size = dmabuf_size(fd);
		hsa_amd_portable_close_dmabuf(fd);
	}
	if (k->hold) {
		RANK_CHECK(hsa_amd_memory_pool_allocate(k->vram, held_size, 0, &k->held),
			   "the held buffer of 0x%" PRIx64 " bytes", held_size);
		wl_fill(k->stage, held_size, k->seed, HELD_BO);
		if (!to_device(k, k->done, k->held, k->stage, held_size, err, sizeof(err)))
			return rank_fail(k, WL_EXIT_SETUP, "filling the held buffer: %s", err);
		RANK_CHECK(hsa_amd_portable_export_dmabuf(k->held, held_size, &k->info.held_fd, &k->info.held_offset),
			   "hsa_amd_portable_export_dmabuf(%p, 0x%" PRIx64 ")", k->held, held_size);
		k->info.held = (uintptr_t)k->held;
		k->info.held_size = held_size;
		k->info.held_bo_size = dmabuf_size(k->info.held_fd);
	}
	return 0;
}

/* Every peer's buffer, attached for this rank's GPU. */
static int rank_attach(struct rank *k)
{
	char name[128];

	for (unsigned int p = 0; p < k->n; p++) {
		void *va = NULL;

		if (p == k->index || !k->ipc)
			continue;
		RANK_CHECK(hsa_amd_ipc_memory_attach(&k->peers[p].handle, k->peers[p].size, 1, &k->gpu, &va),
			   "hsa_amd_ipc_memory_attach of %s's buffer (0x%" PRIx64 " bytes)",
			   rank_name(&k->peers[p], p, name, sizeof(name)), k->peers[p].size);
		k->view[p] = va;
		k->info.peer_va[p] = (uintptr_t)va;
	}
	return 0;
}

/* "its own buffer" or "rank 1's buffer (attached at 0x...)" */
static const char *buffer_name(const struct rank *k, unsigned int owner, char *buf, size_t len)
{
	if (owner == k->index)
		snprintf(buf, len, "its own buffer");
	else
		snprintf(buf, len, "rank %u's buffer (attached at %p)", owner, k->view[owner]);
	return buf;
}

/* Phase one of a verification: this rank's verify slot of every buffer it reaches. */
static void rank_write(struct rank *k, const struct msg *m)
{
	char name[128], where[128], err[TEXT_MAX];

	rank_name(&k->info, k->index, name, sizeof(name));
	for (unsigned int r = 0; r < k->n; r++) {
		const uint64_t bytes = slot_bytes(k->sizes[r], k->n), at = verify_slot(k->sizes[r], k->n, k->index);

		if (!k->view[r])
			continue;
		buffer_name(k, r, where, sizeof(where));
		wl_fill(k->stage, bytes, m->seed, VERIFY_BO(k->index, r));
		if (to_device(k, k->done, (char *)k->view[r] + at, k->stage, bytes, err, sizeof(err)))
			send_line(k->fd, true,
				  "%s wrote generation %" PRIu64 " into %s (0x%" PRIx64 " bytes at 0x%" PRIx64 ")",
				  name, m->gen, where, bytes, at);
		else
			send_line(k->fd, false, "%s cannot write generation %" PRIu64 " into %s: %s", name, m->gen,
				  where, err);
	}
}

/* One verify slot of a buffer read back: the writer's pattern of this generation. */
static void check_slot(struct rank *k, const struct msg *m, unsigned int owner, unsigned int writer, const char *name,
		       const char *where)
{
	const uint64_t bytes = slot_bytes(k->sizes[owner], k->n);
	const char *p = (const char *)k->stage + verify_slot(k->sizes[owner], k->n, writer);
	/* without IPC, a rank writes its own buffer only: the others keep the set-up pattern */
	const bool written = k->ipc || writer == owner;
	const uint64_t seed = written ? m->seed : k->seed, prev = written ? m->prev_seed : k->seed;
	struct wl_report r, stale;
	const char *note = "";
	char who[32];

	if (writer == k->index)
		snprintf(who, sizeof(who), "its own");
	else
		snprintf(who, sizeof(who), "rank %u's", writer);
	wl_report_init(&r);
	if (wl_check_pattern(&r, "slot", p, bytes, seed, VERIFY_BO(writer, owner))) {
		if (written)
			send_line(k->fd, true, "%s in %s: %s write of generation %" PRIu64 " is there", name, where,
				  who, m->gen);
		else
			send_line(k->fd, true, "%s in %s: rank %u's slot keeps its set-up pattern", name, where,
				  writer);
		wl_report_free(&r);
		return;
	}
	/* what is there instead: the previous generation means the write went to another copy */
	wl_report_init(&stale);
	if (written && wl_check_pattern(&stale, "slot", p, bytes, prev, VERIFY_BO(writer, owner)))
		note = ", the slot still holds the previous generation (the write went to another copy of the buffer)";
	send_line(k->fd, false, "%s in %s: %s write of generation %" PRIu64 " is NOT there%s: %s", name, where, who,
		  m->gen, note, r.first);
	wl_report_free(&stale);
	wl_report_free(&r);
}

/*
 * Whether the held fd is a dma-buf of the held buffer's BO, not of another one of the same size:
 * KFD keeps one dma-buf per buffer and hands it out at every export (the source of Linux 6.11 and
 * later, the test bed's 7.3), so a fresh export of the buffer is the same file (inode) as the held
 * fd. 1: the same, 0: another (err says), -1: not to be told here (err says why).
 */
static int held_fd_is_of_buffer(struct rank *k, char *err, size_t errlen)
{
	struct stat held, fresh;
	uint64_t offset;
	int fd = -1, same;

	if (hsa_amd_portable_export_dmabuf(k->held, k->info.held_size, &fd, &offset) != HSA_STATUS_SUCCESS) {
		/* KFD's EXPORT_DMABUF finds the GPU by the id in the buffer's handle, the id the process
		 * knows, among the node's actual ones: after a restore onto other gpu_ids it fails */
		snprintf(err, errlen,
			 "not compared: its buffer cannot be exported again (after a restore onto other "
			 "gpu_ids, KFD's export does not find the GPU the process knows)");
		return -1;
	}
	same = !fstat(k->info.held_fd, &held) && !fstat(fd, &fresh) && held.st_dev == fresh.st_dev &&
	       held.st_ino == fresh.st_ino;
	if (!same)
		snprintf(err, errlen, "is another dma-buf (inode %lu) than its buffer's (inode %lu)",
			 (unsigned long)held.st_ino, (unsigned long)fresh.st_ino);
	hsa_amd_portable_close_dmabuf(fd);
	return same;
}

/* Rank 0's held buffer: its content, and its dma-buf fd still open on a dma-buf of its BO. */
static void check_held(struct rank *k, const char *name)
{
	char link[64], target[256] = "", err[TEXT_MAX];
	struct wl_report r;
	ssize_t n;
	int same;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", k->info.held_fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n > 0)
		target[n] = '\0';
	if (n <= 0 || !strstr(target, "dmabuf"))
		send_line(k->fd, false, "%s: its dma-buf fd %d is %s, expected a dma-buf", name, k->info.held_fd,
			  n > 0 ? target : "not open");
	else if (dmabuf_size(k->info.held_fd) != k->info.held_bo_size)
		send_line(k->fd, false, "%s: its dma-buf fd %d (%s) is of 0x%" PRIx64 " bytes, 0x%" PRIx64 " at set-up",
			  name, k->info.held_fd, target, dmabuf_size(k->info.held_fd), k->info.held_bo_size);
	else if ((same = held_fd_is_of_buffer(k, err, sizeof(err))) == 0)
		send_line(k->fd, false, "%s: its dma-buf fd %d (%s) %s", name, k->info.held_fd, target, err);
	else if (same < 0)
		send_line(k->fd, true, "%s holds dma-buf fd %d (%s, 0x%" PRIx64 " bytes) of a buffer of its size (%s)",
			  name, k->info.held_fd, target, k->info.held_bo_size, err);
	else
		send_line(k->fd, true, "%s holds dma-buf fd %d (%s, 0x%" PRIx64 " bytes) of its buffer at %p", name,
			  k->info.held_fd, target, k->info.held_bo_size, k->held);

	memset(k->stage, 0, k->info.held_size);
	if (!to_host(k, k->done, k->stage, k->held, k->info.held_size, err, sizeof(err))) {
		send_line(k->fd, false, "%s: reading its held buffer back: %s", name, err);
		return;
	}
	wl_report_init(&r);
	if (wl_check_pattern(&r, "the held buffer", k->stage, k->info.held_size, k->seed, HELD_BO))
		send_line(k->fd, true, "%s: its held buffer (0x%" PRIx64 " bytes) holds its pattern", name,
			  k->info.held_size);
	else
		send_line(k->fd, false, "%s: %s", name, r.first);
	wl_report_free(&r);
}

/* Phase two: every buffer this rank reaches, read back through its GPU and checked. */
static void rank_read(struct rank *k, const struct msg *m)
{
	char name[128], where[128], err[TEXT_MAX];
	struct wl_report r;

	rank_name(&k->info, k->index, name, sizeof(name));
	for (unsigned int o = 0; o < k->n; o++) {
		const uint64_t size = k->sizes[o], rest = rest_offset(size, k->n);

		if (!k->view[o])
			continue;
		buffer_name(k, o, where, sizeof(where));
		/* a copy that moves nothing must not find the pattern waiting */
		memset(k->stage, 0, size);
		if (!to_host(k, k->done, k->stage, k->view[o], size, err, sizeof(err))) {
			send_line(k->fd, false, "%s cannot read %s back: %s", name, where, err);
			continue;
		}
		for (unsigned int w = 0; w < k->n; w++)
			check_slot(k, m, o, w, name, where);
		wl_report_init(&r);
		if (wl_check_pattern(&r, "the rest", (const char *)k->stage + rest, size - rest, k->seed, o))
			send_line(k->fd, true, "%s in %s: the rest (0x%" PRIx64 " bytes) keeps its set-up pattern",
				  name, where, size - rest);
		else
			send_line(k->fd, false, "%s in %s: %s", name, where, r.first);
		wl_report_free(&r);
	}
	if (k->held)
		check_held(k, name);
	pthread_mutex_lock(&k->lock);
	if (atomic_load(&k->failures))
		send_line(k->fd, false, "%" PRIu64 " round trips failed (%" PRIu64 " completed); the first: %s",
			  (uint64_t)atomic_load(&k->failures), (uint64_t)atomic_load(&k->rounds), k->failure);
	else
		send_line(k->fd, true, "%s: %" PRIu64 " round trips, none failed", name,
			  (uint64_t)atomic_load(&k->rounds));
	pthread_mutex_unlock(&k->lock);
}

/* Two more round trips within @timeout_ms. */
static void rank_heartbeat(struct rank *k, uint32_t timeout_ms)
{
	const uint64_t base = atomic_load(&k->rounds), t0 = now_ms();
	uint64_t done;
	char name[128];

	rank_name(&k->info, k->index, name, sizeof(name));
	while (atomic_load(&k->rounds) - base < 2 && now_ms() - t0 < timeout_ms)
		usleep(5000);
	done = atomic_load(&k->rounds) - base;
	if (done >= 2)
		send_line(k->fd, true, "%s: round trips into %s run", name,
			  heartbeat_target(k) == k->index ? "its own buffer" : "the next rank's buffer");
	else
		send_line(k->fd, false, "%s: round trips stalled: %" PRIu64 " of 2 in %" PRIu64 " ms, %s", name, done,
			  now_ms() - t0, atomic_load(&k->doing));
}

static void rank_teardown(struct rank *k)
{
	atomic_store(&k->stop, true);
	if (k->started) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += EXIT_WAIT_MS / 1000;
		/* a copy still in flight: exiting frees it all at once, freeing under it would not */
		if (pthread_timedjoin_np(k->thread, NULL, &until))
			return;
	}
	for (unsigned int p = 0; p < k->n; p++)
		if (p != k->index && k->view[p])
			hsa_amd_ipc_memory_detach(k->view[p]);
	if (k->info.held_fd >= 0)
		hsa_amd_portable_close_dmabuf(k->info.held_fd);
	hsa_shut_down();
}

/* A rank's life: set up, rendezvous, then answer the launcher until it says to end. */
static int rank_main(struct rank *k, const struct wl_opts *o)
{
	struct msg m = { .type = MSG_HELLO };
	char name[128];
	int ret;

	ret = rank_setup(k, o);
	if (ret)
		return ret;
	m.info = k->info;
	if (send_msg(k->fd, &m) || recv_msg(k->fd, &m, SETUP_WAIT_MS) != 1 || m.type != MSG_PEERS)
		return WL_EXIT_SETUP; /* the launcher is gone or said nothing: it reports that */
	memcpy(k->peers, m.peers, sizeof(k->peers));
	ret = rank_attach(k);
	if (ret)
		return ret;
	ret = pthread_create(&k->thread, NULL, rounds_main, k);
	if (ret)
		return rank_fail(k, WL_EXIT_SETUP, "pthread_create: %s", strerror(ret));
	k->started = true;
	m = (struct msg) { .type = MSG_ATTACHED, .info = k->info };
	if (send_msg(k->fd, &m))
		return WL_EXIT_SETUP;
	wl_info("%s: shared buffer at %p, 0x%" PRIx64 " bytes (a KFD BO of 0x%" PRIx64 ")%s",
		rank_name(&k->info, k->index, name, sizeof(name)), k->buf, k->info.size, k->info.bo_size,
		k->ipc ? ", exported; every peer's attached" : "");

	for (;;) {
		ret = recv_msg(k->fd, &m, -1);
		if (ret <= 0 || m.type == MSG_EXIT)
			break;
		if (m.type == MSG_WRITE)
			rank_write(k, &m);
		else if (m.type == MSG_READ)
			rank_read(k, &m);
		else if (m.type == MSG_HEARTBEAT)
			rank_heartbeat(k, m.timeout_ms);
		m = (struct msg) { .type = MSG_END };
		if (send_msg(k->fd, &m))
			break;
	}
	rank_teardown(k);
	return WL_EXIT_OK;
}

/* ---- the launcher --------------------------------------------------------------------- */

struct member {
	pid_t pid;
	int fd; /* the launcher's end of the socketpair */
	struct rank_info info;
	bool gone;
};

struct launcher {
	struct wl_opts opts;
	bool ipc, hold;
	uint64_t seed; /* the set-up pattern's: generation 0 */
	unsigned int n;
	struct wl_gpu_node nodes[WL_MAX_GPUS];
	struct member ranks[WL_MAX_GPUS];
	uint64_t generation, last_seed;
};

/* The options of this workload alone, taken out of argv before the common ones are parsed. */
static void own_options(int *argc, char **argv, struct launcher *l)
{
	int out = 1;

	l->ipc = true;
	l->hold = true;
	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--no-ipc"))
			l->ipc = false;
		else if (!strcmp(argv[i], "--no-dmabuf-fd"))
			l->hold = false;
		else
			argv[out++] = argv[i];
	}
	argv[out] = NULL;
	*argc = out;
	l->hold &= l->ipc;
}

/* Forks rank @r; in the child, runs it and never returns. */
static int spawn_rank(struct launcher *l, unsigned int r)
{
	const pid_t launcher = getpid();
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		wl_err("socketpair for rank %u: %s", r, strerror(errno));
		return WL_EXIT_SETUP;
	}
	pid = fork();
	if (pid < 0) {
		wl_err("fork of rank %u: %s", r, strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return WL_EXIT_SETUP;
	}
	if (!pid) {
		static struct rank k;
		sigset_t all;

		/* the job ends with its launcher, as a rank of a real job does with its agent */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != launcher)
			_exit(WL_EXIT_SETUP);
		signal(SIGUSR1, SIG_IGN);
		signal(SIGUSR2, SIG_IGN);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		close(sv[0]);
		for (unsigned int i = 0; i < r; i++)
			close(l->ranks[i].fd);
		k.index = r;
		k.n = l->n;
		k.ipc = l->ipc;
		k.hold = l->hold && r == 0;
		k.seed = l->seed;
		k.fd = sv[1];
		k.node = l->nodes[r];
		pthread_mutex_init(&k.lock, NULL);
		atomic_store(&k.doing, "not started");
		_exit(rank_main(&k, &l->opts));
	}
	close(sv[1]);
	l->ranks[r].pid = pid;
	l->ranks[r].fd = sv[0];
	return 0;
}

/* Why rank @r said nothing: its exit status if it ended, and its exit code for ours. */
static int rank_silent(struct launcher *l, unsigned int r, int ret, const char *waiting_for)
{
	int status = 0, code = WL_EXIT_SETUP;

	if (ret == 0 && waitpid(l->ranks[r].pid, &status, 0) == l->ranks[r].pid) {
		l->ranks[r].gone = true;
		if (WIFEXITED(status)) {
			code = WEXITSTATUS(status) == WL_EXIT_SKIP ? WL_EXIT_SKIP : WL_EXIT_SETUP;
			wl_err("rank %u (pid %d) exited with status %d before %s", r, l->ranks[r].pid,
			       WEXITSTATUS(status), waiting_for);
		} else {
			wl_err("rank %u (pid %d) was killed by %s before %s", r, l->ranks[r].pid,
			       strsignal(WTERMSIG(status)), waiting_for);
		}
		return code;
	}
	wl_err("rank %u (pid %d): no %s: %s", r, l->ranks[r].pid, waiting_for,
	       ret == -ETIMEDOUT ? "timed out" : strerror(-ret));
	return code;
}

/* The next set-up message of rank @r, which must be of @type; 0, or the job's exit code. */
static int setup_answer(struct launcher *l, unsigned int r, uint32_t type, const char *what)
{
	struct msg m;
	int ret = recv_msg(l->ranks[r].fd, &m, SETUP_WAIT_MS);

	if (ret != 1)
		return rank_silent(l, r, ret, what);
	if (m.type == MSG_LINE) {
		wl_err("%s", m.text);
		return m.exit_code ? m.exit_code : WL_EXIT_SETUP;
	}
	if (m.type != type) {
		wl_err("rank %u (pid %d) sent message %u, expected %s", r, l->ranks[r].pid, m.type, what);
		return WL_EXIT_SETUP;
	}
	l->ranks[r].info = m.info;
	return 0;
}

static int launcher_setup(struct launcher *l)
{
	unsigned int n_nodes;
	struct msg m = { .type = MSG_PEERS };
	int ret;

	l->n = l->opts.gpus ? l->opts.gpus : DEFAULT_RANKS;
	l->opts.gpus = l->n;
	ret = wl_pick_gpus(&l->opts, l->nodes, &l->n, &n_nodes);
	if (ret)
		return ret;
	l->seed = l->last_seed = wl_seed();
	for (unsigned int r = 0; r < l->n; r++) {
		ret = spawn_rank(l, r);
		if (ret)
			return ret;
	}
	for (unsigned int r = 0; r < l->n; r++) {
		ret = setup_answer(l, r, MSG_HELLO, "its set-up");
		if (ret)
			return ret;
		m.peers[r] = l->ranks[r].info;
	}
	/* the rendezvous: every rank learns every handle */
	for (unsigned int r = 0; r < l->n; r++) {
		if (send_msg(l->ranks[r].fd, &m)) {
			wl_err("rank %u (pid %d): sending the peers: %s", r, l->ranks[r].pid, strerror(errno));
			return WL_EXIT_SETUP;
		}
	}
	for (unsigned int r = 0; r < l->n; r++) {
		ret = setup_answer(l, r, MSG_ATTACHED, "attaching its peers");
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The answer of every rank to @m: each line said on stdout after @label and counted in @rep. A
 * rank that does not answer within @timeout_ms fails.
 */
static void ask_ranks(struct launcher *l, const struct msg *m, const char *label, int timeout_ms, struct wl_report *rep)
{
	bool asked[WL_MAX_GPUS] = { false };
	struct msg a;

	for (unsigned int r = 0; r < l->n; r++) {
		struct member *k = &l->ranks[r];

		if (k->gone)
			wl_fail(rep, "rank %u (pid %d) is gone", r, k->pid);
		else if (send_msg(k->fd, m))
			wl_fail(rep, "rank %u (pid %d) cannot be asked: %s", r, k->pid, strerror(errno));
		else
			asked[r] = true;
	}
	for (unsigned int r = 0; r < l->n; r++) {
		struct member *k = &l->ranks[r];
		int ret;

		if (!asked[r])
			continue;
		while ((ret = recv_msg(k->fd, &a, timeout_ms)) == 1 && a.type == MSG_LINE) {
			wl_info("%s: %s", label, a.text);
			if (a.ok)
				wl_pass(rep);
			else
				wl_fail(rep, "%s", a.text);
		}
		if (ret == 1 && a.type == MSG_END)
			continue;
		if (ret == 0)
			k->gone = true;
		wl_fail(rep, "rank %u (pid %d) did not answer (%s): %s", r, k->pid, label,
			ret == 0   ? "it is gone"
			: ret == 1 ? "unexpected message"
				   : strerror(-ret));
	}
}

/* Write, then read: see the top of the file. */
static void verify(void *ctx, struct wl_report *r)
{
	struct launcher *l = ctx;
	struct timespec ts;
	struct msg m = { .type = MSG_WRITE };
	char label[64];

	clock_gettime(CLOCK_REALTIME, &ts);
	m.gen = ++l->generation;
	m.seed = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ m.gen * 0x9e3779b97f4a7c15ULL;
	m.prev_seed = l->last_seed;
	snprintf(label, sizeof(label), "verify %" PRIu64, m.gen);
	ask_ranks(l, &m, label, ANSWER_WAIT_MS, r);
	m.type = MSG_READ;
	ask_ranks(l, &m, label, ANSWER_WAIT_MS, r);
	l->last_seed = m.seed;
}

static void heartbeat(void *ctx, struct wl_report *r)
{
	struct launcher *l = ctx;
	struct msg m = { .type = MSG_HEARTBEAT, .timeout_ms = l->opts.hb_timeout_ms };

	ask_ranks(l, &m, "heartbeat", (int)l->opts.hb_timeout_ms + ANSWER_WAIT_MS, r);
}

/* Each rank is told to end, and killed if it has not within EXIT_WAIT_MS. */
static void teardown(void *ctx)
{
	struct launcher *l = ctx;
	const struct msg m = { .type = MSG_EXIT };
	uint64_t until;

	for (unsigned int r = 0; r < l->n; r++)
		if (l->ranks[r].pid > 0 && !l->ranks[r].gone)
			send_msg(l->ranks[r].fd, &m);
	until = now_ms() + EXIT_WAIT_MS;
	for (unsigned int r = 0; r < l->n; r++) {
		struct member *k = &l->ranks[r];

		if (k->pid <= 0 || k->gone)
			continue;
		while (waitpid(k->pid, NULL, WNOHANG) == 0) {
			if (now_ms() >= until) {
				wl_err("rank %u (pid %d) did not end in %d s: killing it", r, k->pid,
				       EXIT_WAIT_MS / 1000);
				kill(k->pid, SIGKILL);
				waitpid(k->pid, NULL, 0);
				break;
			}
			usleep(10000);
		}
		k->gone = true;
	}
}

/* The state file (test/e2e/README.md): the ranks, their GPUs, buffers and attachments. */
static void fill_state(FILE *f, void *ctx)
{
	const struct launcher *l = ctx;

	fprintf(f, "workload ipc\npid %d\nseed 0x%016" PRIx64 "\nranks %u\nipc %d\n", (int)getpid(), l->seed, l->n,
		l->ipc);
	for (unsigned int r = 0; r < l->n; r++)
		fprintf(f, "gpu %u node %u gpu_id 0x%x\n", r, l->ranks[r].info.node, l->ranks[r].info.gpu_id);
	for (unsigned int r = 0; r < l->n; r++) {
		const struct rank_info *i = &l->ranks[r].info;

		fprintf(f,
			"rank %u pid %d node %u gpu_id 0x%x buffer 0x%" PRIx64 " size 0x%" PRIx64 " bo_size 0x%" PRIx64
			" slot 0x%" PRIx64 "\n",
			r, i->pid, i->node, i->gpu_id, i->buf, i->size, i->bo_size, slot_bytes(i->size, l->n));
	}
	for (unsigned int r = 0; r < l->n; r++)
		for (unsigned int p = 0; p < l->n; p++)
			if (l->ranks[r].info.peer_va[p])
				fprintf(f, "attach rank %u peer %u va 0x%" PRIx64 " size 0x%" PRIx64 "\n", r, p,
					l->ranks[r].info.peer_va[p], l->ranks[p].info.size);
	for (unsigned int r = 0; r < l->n; r++) {
		const struct rank_info *i = &l->ranks[r].info;

		if (i->held_fd >= 0)
			fprintf(f,
				"dmabuf rank %u pid %d fd %d buffer 0x%" PRIx64 " size 0x%" PRIx64 " bo_size 0x%" PRIx64
				" offset 0x%" PRIx64 "\n",
				r, i->pid, i->held_fd, i->held, i->held_size, i->held_bo_size, i->held_offset);
	}
	wl_host_state(f);
	fprintf(f, "ready\n");
}

int main(int argc, char **argv)
{
	static struct launcher l;
	static const struct wl_ops ops = { verify, heartbeat, teardown, NULL, NULL };
	uint64_t t0 = now_ms();
	int ret;

	own_options(&argc, argv, &l);
	wl_parse_opts(argc, argv, &l.opts);
	wl_guard_init();
	wl_signals_block();
	ret = launcher_setup(&l);
	/* after the ranks are forked: the launcher's alone */
	if (!ret)
		ret = wl_host_setup(&l.opts);
	if (!ret)
		ret = wl_state_write(l.opts.state, fill_state, &l);
	if (ret) {
		teardown(&l);
		return ret;
	}
	wl_info("%u ranks set up in %" PRIu64 " ms%s", l.n, now_ms() - t0,
		l.ipc ? ", each attached to every peer's buffer" : " (no IPC)");
	return wl_serve(&l.opts, &ops, &l);
}
