// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory shared between processes, as the kernel of the build shares it (6.1: KFD 1.11; 7.x:
 * KFD 1.23; KFD_SHARES_THROUGH_DRM says which):
 *
 *   E (exporter)                 I (importer)                    R (restorer)
 *   ALLOC VRAM, fills it,
 *   a dma-buf of it (7.x:
 *   EXPORT_DMABUF; 6.1: its own
 *   CHECKPOINT's fd)  ─────────▶ IMPORT_DMABUF on E's GPU or
 *                                another one, reads E's bytes,
 *                                writes its own (CPU, or the
 *                                GPU's SDMA engine for another
 *                                GPU), CHECKPOINTs itself ──────▶ RESTOREs I's blob: a private
 *   CHECKPOINTs itself                                            buffer, not E's
 *
 * The parent P compares the dma-bufs of the CHECKPOINT fds by inode: 7.x hands out the buffer's
 * one dma-buf everywhere, 6.1 a new one per bucket and call. Then a render-node buffer shared
 * through PRIME, and the ids IMPORT_DMABUF takes.
 */
#include "kfd_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <drm/amdgpu_drm.h>
#include <drm/drm.h>

#define SHARE_SIZE (64 * 1024ULL)
#define PRIV_MAX (64 * 1024)
#define MAX_BUCKETS 8
#define SDMA_WORDS 16

/* A process' checkpoint of itself; lives in the page P shares with its children. */
struct self_cp {
	struct kfd_ioctl_criu_args info;
	struct kfd_criu_device_bucket devs[MAX_GPUS];
	struct kfd_criu_bo_bucket bos[MAX_BUCKETS];
	uint8_t priv[PRIV_MAX];
};

struct share_page {
	bool same_gpu;
	uint32_t gpu_e, gpu_i;	  /* E's buffer's GPU, the GPU I imports onto */
	uint64_t va_i;		  /* where I imported it */
	uint32_t idr_i;		  /* the id IMPORT gave it */
	uint32_t sdma_words[SDMA_WORDS];
	bool import_ok;
	struct self_cp cp_i;	  /* I's checkpoint, restored by R */
	uint8_t head[4096];	  /* E's first bytes, on request */
};

/* ------------------------------------------------------------------ helpers */

static int self_checkpoint(int kfd, struct self_cp *cp)
{
	int r;

	memset(&cp->info, 0, sizeof(cp->info));
	r = criu_op(kfd, &cp->info, KFD_CRIU_OP_PROCESS_INFO);
	if (r)
		return r;
	if (cp->info.num_bos > MAX_BUCKETS || cp->info.num_devices > MAX_GPUS ||
	    cp->info.priv_data_size > PRIV_MAX) {
		criu_op(kfd, &cp->info, KFD_CRIU_OP_UNPAUSE);
		return -E2BIG;
	}
	cp->info.devices = (uint64_t)(uintptr_t)cp->devs;
	cp->info.bos = (uint64_t)(uintptr_t)cp->bos;
	cp->info.priv_data = (uint64_t)(uintptr_t)cp->priv;
	r = criu_op(kfd, &cp->info, KFD_CRIU_OP_CHECKPOINT);
	criu_op(kfd, &cp->info, KFD_CRIU_OP_UNPAUSE);
	return r;
}

static struct kfd_criu_bo_bucket *bucket_at(struct self_cp *cp, uint64_t va)
{
	for (uint32_t i = 0; i < cp->info.num_bos; i++)
		if (cp->bos[i].addr == va)
			return &cp->bos[i];
	return NULL;
}

static void close_buckets(struct self_cp *cp, int keep)
{
	for (uint32_t i = 0; i < cp->info.num_bos; i++)
		if (cp->bos[i].dmabuf_fd != KFD_INVALID_FD && (int)cp->bos[i].dmabuf_fd != keep)
			close((int)cp->bos[i].dmabuf_fd);
}

static ino_t fd_ino(int fd)
{
	struct stat st;

	return fd >= 0 && !fstat(fd, &st) ? st.st_ino : 0;
}

static int import_dmabuf(int kfd, uint32_t gpu_id, int fd, uint64_t va, uint64_t *handle)
{
	struct kfd_ioctl_import_dmabuf_args a = { .va_addr = va, .gpu_id = gpu_id,
						  .dmabuf_fd = (uint32_t)fd };
	int r = kfd_ioctl(kfd, AMDKFD_IOC_IMPORT_DMABUF, &a);

	*handle = r ? 0 : a.handle;
	return r;
}

#if KFD_IOCTL_MINOR_VERSION >= 12
static int export_dmabuf(int kfd, uint64_t handle)
{
	struct kfd_ioctl_export_dmabuf_args a = { .handle = handle, .flags = O_CLOEXEC };
	int r = kfd_ioctl(kfd, AMDKFD_IOC_EXPORT_DMABUF, &a);

	return r ? r : (int)a.dmabuf_fd;
}
#endif

/* Whether touching @p (a mapping this process has) kills a child with SIGBUS. */
static bool touch_sigbuses(volatile uint8_t *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		signal(SIGBUS, SIG_DFL);
		(void)p[0];
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return false;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
}

/*
 * @n dwords written at GPU VA @dst by @gpu_id's SDMA engine: one WRITE_LINEAR packet on a user-mode
 * SDMA queue whose ring and pointers live in a GTT buffer mapped at one VA for the CPU and the GPU.
 */
static bool sdma_write(struct ctx *ctx, int kfd, int rfd, uint32_t gpu_id, uint64_t dst,
		       const uint32_t *data, uint32_t n)
{
	struct kfd_ioctl_create_queue_args q = { 0 };
	struct kfd_ioctl_destroy_queue_args dq = { 0 };
	uint64_t va = va_alloc(ctx, 8192);
	volatile uint64_t *rptr, *wptr;
	uint32_t *ring, ns = 0;
	struct bo bo;
	bool done;

	if (bo_alloc(kfd, &bo, gpu_id, va, 8192, ALLOC_GTT | ALLOC_WRITABLE | ALLOC_EXEC, 0) ||
	    bo_map(kfd, bo.handle, &gpu_id, 1, &ns))
		return false;
	ring = mmap((void *)(uintptr_t)va, 8192, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, rfd,
		    (off_t)bo.mmap_offset);
	if (ring == MAP_FAILED)
		return false;
	rptr = (volatile uint64_t *)((uint8_t *)ring + 4096);
	wptr = rptr + 1;
	q.gpu_id = gpu_id;
	q.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
	q.ring_base_address = va;
	q.ring_size = 4096;
	q.read_pointer_address = va + 4096;
	q.write_pointer_address = va + 4096 + 8;
	q.queue_percentage = 100;
	q.queue_priority = 7;
	if (kfd_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q))
		return false;

	ring[0] = 2;			/* WRITE, LINEAR */
	ring[1] = (uint32_t)dst;
	ring[2] = (uint32_t)(dst >> 32);
	ring[3] = n - 1;		/* dwords - 1 */
	memcpy(&ring[4], data, n * 4);
	__atomic_store_n(wptr, (4 + n) * 4ULL, __ATOMIC_RELEASE);
	for (int i = 0; i < 200 && *rptr != *wptr; i++)
		sleep_ms(10);
	done = *rptr == *wptr;

	dq.queue_id = q.queue_id;
	kfd_ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq);
	munmap(ring, 8192);
	mmap((void *)(uintptr_t)va, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	bo_unmap(kfd, bo.handle, &gpu_id, 1, &(uint32_t){ 0 });
	bo_free(kfd, bo.handle);
	return done;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* ---------------------------------------------------------------- E, I, R */

struct share_arg {
	struct share_page *pg;
	int sock;		/* to P */
};

/*
 * E: a VRAM buffer filled with seed 0x5100 and a dma-buf of it sent to P; then on P's word:
 * 'C' checkpoints itself and sends its bucket's fd, 'H' copies its first page to pg->head,
 * 'X' ends.
 */
static void exporter(struct ctx *ctx, void *arg)
{
	struct share_arg *a = arg;
	struct share_page *pg = a->pg;
	static struct self_cp cp;
	const struct gpu *g = gpu_by_id(ctx, pg->gpu_e);
	int kfd = open_kfd(), rfd[MAX_GPUS], fd = -1;
	struct kfd_criu_bo_bucket *b;
	uint8_t *cpu;
	struct bo bo;
	char c;

	if (kfd < 0 || acquire_all(ctx, kfd, rfd) ||
	    bo_alloc(kfd, &bo, g->id, va_alloc(ctx, SHARE_SIZE), SHARE_SIZE,
		     ALLOC_VRAM | ALLOC_WRITABLE | ALLOC_EXEC | ALLOC_PUBLIC, 0))
		_exit(2);
	cpu = bo_cpu_map(rfd[g - ctx->gpu], bo.mmap_offset, SHARE_SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED);
	if (cpu == MAP_FAILED)
		_exit(3);
	fill_pattern(cpu, SHARE_SIZE, 0x5100);
#if KFD_IOCTL_MINOR_VERSION >= 12
	fd = export_dmabuf(kfd, bo.handle);	/* ROCm's IPC export */
#else
	/* 6.1 has no EXPORT_DMABUF: a dma-buf of a KFD buffer comes from CRIU CHECKPOINT */
	if (!self_checkpoint(kfd, &cp) && (b = bucket_at(&cp, bo.va))) {
		fd = (int)b->dmabuf_fd;
		close_buckets(&cp, fd);
	}
#endif
	if (fd < 0 || send_fd(a->sock, fd))
		_exit(4);
	close(fd);

	while (read(a->sock, &c, 1) == 1 && c != 'X') {
		fd = -1;
		if (c == 'C' && !self_checkpoint(kfd, &cp) && (b = bucket_at(&cp, bo.va))) {
			fd = (int)b->dmabuf_fd;
			close_buckets(&cp, fd);
		}
		if (c == 'C' && (fd < 0 || send_fd(a->sock, fd)))
			_exit(5);
		if (c == 'C')
			close(fd);
		if (c == 'H') {
			memcpy(pg->head, cpu, sizeof(pg->head));
			if (write(a->sock, "h", 1) != 1)
				_exit(6);
		}
	}
	_exit(0);
}

/* I: imports the dma-buf P sends, checks and writes it, checkpoints itself; reports TAP itself. */
static void importer(struct ctx *ctx, void *arg)
{
	struct share_arg *a = arg;
	struct share_page *pg = a->pg;
	const char *where = pg->same_gpu ? "the same GPU" : "another GPU";
	const struct gpu *gi = gpu_by_id(ctx, pg->gpu_i);
	const struct gpu *ge = gpu_by_id(ctx, pg->gpu_e);
	struct kfd_ioctl_get_dmabuf_info_args info = { 0 };
	int kfd = open_kfd(), rfd[MAX_GPUS], fd, r;
	struct kfd_criu_bo_bucket *b;
	uint64_t handle, goff = 0;
	uint32_t gh = 0, ns = 0;
	uint8_t *m;
	char c;

	if (kfd < 0 || acquire_all(ctx, kfd, rfd) || (fd = recv_fd(a->sock)) < 0)
		_exit(2);

	info.dmabuf_fd = (uint32_t)fd;
	r = kfd_ioctl(kfd, AMDKFD_IOC_GET_DMABUF_INFO, &info);
	if (!tap_ok(!r && info.gpu_id == ge->id && info.size == SHARE_SIZE &&
			    info.flags == (ALLOC_VRAM | ALLOC_PUBLIC),
		    "GET_DMABUF_INFO in another process: the exporter's GPU, the size, flags VRAM|PUBLIC only"))
		tap_diag("ret %d gpu 0x%x size %llu flags 0x%x", r, info.gpu_id,
			 (unsigned long long)info.size, info.flags);

	pg->va_i = va_alloc(ctx, SHARE_SIZE);
	r = import_dmabuf(kfd, gi->id, fd, pg->va_i, &handle);
	if (!pg->same_gpu && !KFD_SHARES_THROUGH_DRM) {
		tap_errno(r, EINVAL, "IMPORT_DMABUF of another GPU's buffer -> EINVAL (6.1)");
		_exit(0);
	}
	pg->import_ok = tap_errno(r, 0, "IMPORT_DMABUF of another process' KFD buffer onto %s",
				  where);
	if (!pg->import_ok)
		_exit(0);
	pg->idr_i = HANDLE_IDR(handle);
	tap_ok(HANDLE_GPU(handle) == gi->id, "IMPORT_DMABUF's handle carries the gpu_id it was given");

	if (pg->same_gpu) {
		/* one GEM object: a render file of that GPU maps the exporter's pages */
		m = dmabuf_map(rfd[gi - ctx->gpu], fd, SHARE_SIZE, PROT_READ | PROT_WRITE, &goff, &gh);
		tap_ok(m != MAP_FAILED && check_pattern(m, SHARE_SIZE, 0x5100, NULL),
		       "the importer reads the exporter's bytes through the dma-buf (same GPU)");
		if (m != MAP_FAILED) {
			fill_pattern(m, SHARE_SIZE, 0x5200);
			dmabuf_unmap(rfd[gi - ctx->gpu], m, SHARE_SIZE, gh);
		}
	} else {
		/* another GPU's buffer is a buffer of this GPU over the same pages */
		m = dmabuf_map(rfd[gi - ctx->gpu], fd, SHARE_SIZE, PROT_READ, &goff, &gh);
		tap_ok(m != MAP_FAILED && touch_sigbuses(m),
		       "another GPU's buffer imported into a render file maps, but the CPU cannot "
		       "touch it (SIGBUS: TTM faults in no imported pages)");
		if (m != MAP_FAILED)
			dmabuf_unmap(rfd[gi - ctx->gpu], m, SHARE_SIZE, gh);
		for (uint32_t i = 0; i < SDMA_WORDS; i++)
			pg->sdma_words[i] = 0xa11ce000 + i;
		tap_ok(!bo_map(kfd, handle, &gi->id, 1, &ns) &&
			       sdma_write(ctx, kfd, rfd[gi - ctx->gpu], gi->id, pg->va_i,
					  pg->sdma_words, SDMA_WORDS),
		       "the importing GPU's SDMA engine writes into the imported buffer");
	}

#if KFD_IOCTL_MINOR_VERSION >= 12
	r = export_dmabuf(kfd, handle);
	if (KFD_SHARES_THROUGH_DRM)
		tap_ok(r >= 0 && fd_ino(r) == fd_ino(fd),
		       "EXPORT_DMABUF of an imported buffer hands out the dma-buf it came from (7.x)");
	if (r >= 0)
		close(r);
#endif

	r = self_checkpoint(kfd, &pg->cp_i);
	b = r ? NULL : bucket_at(&pg->cp_i, pg->va_i);
	if (!tap_ok(b && b->gpu_id == gi->id && b->size == SHARE_SIZE &&
			    b->alloc_flags == (uint32_t)((pg->same_gpu ? ALLOC_VRAM : ALLOC_GTT) |
							 ALLOC_WRITABLE | ALLOC_EXEC),
		    "CHECKPOINT of the importer: the imported buffer's bucket, %s|WRITABLE|EXECUTABLE",
		    pg->same_gpu ? "VRAM" : "GTT"))
		tap_diag("checkpoint %d; bucket gpu 0x%x size %llu flags 0x%x", r, b ? b->gpu_id : 0,
			 b ? (unsigned long long)b->size : 0ULL, b ? b->alloc_flags : 0);
	if (!b || send_fd(a->sock, (int)b->dmabuf_fd) || send_fd(a->sock, fd))
		_exit(3);
	close_buckets(&pg->cp_i, -1);
	close(fd);
	if (read(a->sock, &c, 1) != 1)
		_exit(4);
	_exit(0);
}

/* R: restores I's checkpoint in a fresh process and looks at the imported bucket. */
static void restorer(struct ctx *ctx, void *arg)
{
	struct share_arg *a = arg;
	struct share_page *pg = a->pg;
	struct self_cp *cp = &pg->cp_i;
	const struct gpu *gi = gpu_by_id(ctx, pg->gpu_i);
	struct kfd_ioctl_get_available_memory_args av = { .gpu_id = pg->gpu_i };
	int kfd = open_kfd(), rfd[MAX_GPUS], orig = recv_fd(a->sock), r;
	struct kfd_criu_bo_bucket *b;
	uint64_t goff, before;
	uint32_t gh;
	uint8_t *m;

	if (kfd < 0 || orig < 0)
		_exit(2);
	for (unsigned int i = 0; i < ctx->n_gpus; i++)
		if ((rfd[i] = open_render(&ctx->gpu[i])) < 0)
			_exit(3);
	for (uint32_t i = 0; i < cp->info.num_devices; i++)
		cp->devs[i].drm_fd = (uint32_t)rfd[gpu_by_id(ctx, cp->devs[i].actual_gpu_id) - ctx->gpu];
	for (uint32_t i = 0; i < cp->info.num_bos; i++)
		cp->bos[i].dmabuf_fd = KFD_INVALID_FD;
	kfd_ioctl(kfd, AMDKFD_IOC_AVAILABLE_MEMORY, &av);
	before = av.available;

	r = criu_op(kfd, &cp->info, KFD_CRIU_OP_RESTORE);
	b = bucket_at(cp, pg->va_i);
	if (!tap_errno(r, 0, "RESTORE of the importer's checkpoint") || !b)
		_exit(0);
	tap_ok(fd_ino((int)b->dmabuf_fd) && fd_ino((int)b->dmabuf_fd) != fd_ino(orig),
	       "RESTORE of an imported bucket: its dma-buf is a new one, not the exporter's");
	av.available = 0;
	kfd_ioctl(kfd, AMDKFD_IOC_AVAILABLE_MEMORY, &av);
	if (pg->same_gpu &&
	    !tap_ok(before - av.available >= SHARE_SIZE,
		    "RESTORE of an imported VRAM bucket allocates VRAM of its own"))
		tap_diag("available %llu -> %llu", (unsigned long long)before,
			 (unsigned long long)av.available);
	m = dmabuf_map(rfd[gi - ctx->gpu], (int)b->dmabuf_fd, SHARE_SIZE, PROT_READ | PROT_WRITE,
		       &goff, &gh);
	tap_ok(m != MAP_FAILED && all_zero(m, SHARE_SIZE),
	       "the restored imported bucket is a private buffer: none of the exporter's bytes");
	if (m != MAP_FAILED) {
		fill_pattern(m, SHARE_SIZE, 0x5300);	/* must not reach E */
		dmabuf_unmap(rfd[gi - ctx->gpu], m, SHARE_SIZE, gh);
	}
#if KFD_IOCTL_MINOR_VERSION >= 12
	r = export_dmabuf(kfd, ((uint64_t)gi->id << 32) | pg->idr_i);
	tap_ok(r >= 0, "RESTORE gives the restored bucket exactly its saved id");
	if (KFD_SHARES_THROUGH_DRM)
		tap_ok(r >= 0 && fd_ino(r) == fd_ino((int)b->dmabuf_fd),
		       "EXPORT_DMABUF after RESTORE hands out the dma-buf RESTORE gave (7.x)");
	if (r >= 0)
		close(r);
#endif
	_exit(0);
}

static int child_socket(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ? -errno : 0;
}

static int recv_fd_of(int sock, char cmd)
{
	if (write(sock, &cmd, 1) != 1)
		return -EIO;
	return recv_fd(sock);
}

static bool exporter_head(int sock)
{
	char c = 'H';

	return write(sock, &c, 1) == 1 && read(sock, &c, 1) == 1;
}

/* E on @gpu_e, I importing onto @gpu_i, R restoring I: the checks of the file's header. */
static void share_between_processes(struct ctx *ctx, uint32_t gpu_e, uint32_t gpu_i)
{
	struct share_page *pg;
	struct share_arg ea, ia, ra;
	int se[2], si[2], sr[2], d = -1, fe = -1, fi = -1, d2 = -1;
	pid_t pe, pi, pr;
	char x = 'X';

	pg = mmap(NULL, sizeof(*pg), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (pg == MAP_FAILED || child_socket(se)) {
		tap_ok(false, "sharing test set-up");
		return;
	}
	memset(pg, 0, sizeof(*pg));
	pg->same_gpu = gpu_e == gpu_i;
	pg->gpu_e = gpu_e;
	pg->gpu_i = gpu_i;

	/* each child gets its end of its own socket only, so that its exit is an EOF here */
	ea = (struct share_arg){ .pg = pg, .sock = se[1] };
	pe = run_child("exporter", exporter, ctx, &ea);
	close(se[1]);
	d = recv_fd(se[0]);
	if (d < 0 || child_socket(si)) {
		tap_ok(false, "the exporter's dma-buf");
		goto out;
	}
	ia = (struct share_arg){ .pg = pg, .sock = si[1] };
	pi = run_child("importer", importer, ctx, &ia);
	close(si[1]);
	if (send_fd(si[0], d) || (fi = recv_fd(si[0])) < 0 || (d2 = recv_fd(si[0])) < 0) {
		wait_child(pi, "importer");
		close(si[0]);
		goto out;
	}
	fe = recv_fd_of(se[0], 'C');
	if (KFD_SHARES_THROUGH_DRM) {
		if (!tap_ok(fd_ino(fe) && fd_ino(fe) == fd_ino(fi) && fd_ino(fi) == fd_ino(d),
			    "CHECKPOINT fds of one shared buffer in exporter and importer (%s) are "
			    "one dma-buf, the exported one (7.x: same st_ino)",
			    pg->same_gpu ? "same GPU" : "other GPU"))
			tap_diag("inodes: export %lu, exporter %lu, importer %lu",
				 (unsigned long)fd_ino(d), (unsigned long)fd_ino(fe),
				 (unsigned long)fd_ino(fi));
	} else {
		tap_ok(fd_ino(fe) && fd_ino(fi) && fd_ino(fe) != fd_ino(fi) && fd_ino(fe) != fd_ino(d),
		       "CHECKPOINT fds of one shared buffer in two processes are two new dma-bufs "
		       "(6.1: a new export per bucket and call)");
	}
	/* what I wrote, seen by E */
	if (exporter_head(se[0])) {
		bool seen;

		if (pg->same_gpu)
			seen = check_pattern(pg->head, sizeof(pg->head), 0x5200, NULL);
		else
			seen = !memcmp(pg->head, pg->sdma_words, sizeof(pg->sdma_words));
		tap_ok(seen, "the exporter sees what the importer wrote (%s)",
		       pg->same_gpu ? "CPU, same GPU" : "SDMA of the other GPU");
	}

	if (!child_socket(sr)) {
		ra = (struct share_arg){ .pg = pg, .sock = sr[1] };
		pr = run_child("restorer", restorer, ctx, &ra);
		close(sr[1]);
		send_fd(sr[0], d);
		wait_child(pr, "restorer");
		close(sr[0]);
	}
	if (exporter_head(se[0]))
		tap_ok(pg->same_gpu ? check_pattern(pg->head, sizeof(pg->head), 0x5200, NULL) :
				      !memcmp(pg->head, pg->sdma_words, sizeof(pg->sdma_words)),
		       "writes into the restored buffer do not reach the exporter's");

	if (write(si[0], &x, 1) != 1)
		tap_diag("importer went away");
	wait_child(pi, "importer");
	close(si[0]);
out:
	if (write(se[0], &x, 1) != 1)
		tap_diag("exporter went away");
	wait_child(pe, "exporter");
	close(se[0]);
	if (d >= 0)
		close(d);
	if (fe >= 0)
		close(fe);
	if (fi >= 0)
		close(fi);
	if (d2 >= 0)
		close(d2);
	munmap(pg, sizeof(*pg));
}

/* --------------------------------------------------------- render-node PRIME */

struct gem_arg {
	int sock;
	volatile uint32_t *seen;	/* in a MAP_SHARED page: the seed E found at 'H' */
};

static int gem_create(int rfd, uint64_t size, uint32_t domain, uint64_t flags, uint32_t *handle)
{
	union drm_amdgpu_gem_create c = { .in = { .bo_size = size, .alignment = 4096,
						  .domains = domain, .domain_flags = flags } };
	int r = kfd_ioctl(rfd, DRM_IOCTL_AMDGPU_GEM_CREATE, &c);

	*handle = c.out.handle;
	return r;
}

static uint64_t gem_offset(int rfd, uint32_t handle)
{
	union drm_amdgpu_gem_mmap m = { .in = { .handle = handle } };

	return kfd_ioctl(rfd, DRM_IOCTL_AMDGPU_GEM_MMAP, &m) ? 0 : m.out.addr_ptr;
}

static int prime_export(int rfd, uint32_t handle)
{
	struct drm_prime_handle p = { .handle = handle, .flags = DRM_CLOEXEC | DRM_RDWR };
	int r = kfd_ioctl(rfd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);

	return r ? r : p.fd;
}

static int prime_import(int rfd, int fd, uint32_t *handle)
{
	struct drm_prime_handle p = { .fd = fd };
	int r = kfd_ioctl(rfd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &p);

	*handle = p.handle;
	return r;
}

/* E: a render buffer of GPU 0, filled, exported through PRIME; reports what it holds at 'H'. */
static void gem_exporter(struct ctx *ctx, void *arg)
{
	struct gem_arg *a = arg;
	int rfd = open_render(&ctx->gpu[0]), fd, fd2;
	uint32_t h;
	uint8_t *cpu;
	char c;

	if (rfd < 0 || gem_create(rfd, SHARE_SIZE, AMDGPU_GEM_DOMAIN_VRAM,
				  AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED, &h))
		_exit(2);
	cpu = bo_cpu_map(rfd, gem_offset(rfd, h), SHARE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (cpu == MAP_FAILED)
		_exit(3);
	fill_pattern(cpu, SHARE_SIZE, 0x6100);
	fd = prime_export(rfd, h);
	fd2 = prime_export(rfd, h);
	tap_ok(fd >= 0 && fd_ino(fd) == fd_ino(fd2),
	       "PRIME_HANDLE_TO_FD twice: two fds of the object's one dma-buf");
	if (fd < 0 || send_fd(a->sock, fd))
		_exit(4);
	while (read(a->sock, &c, 1) == 1 && c != 'X') {
		*a->seen = check_pattern(cpu, SHARE_SIZE, 0x6200, NULL) ? 0x6200 : 0;
		if (write(a->sock, "h", 1) != 1)
			_exit(5);
	}
	_exit(0);
}

/* I: the render buffer of another process, through its render files and its KFD. */
static void gem_importer(struct ctx *ctx, void *arg)
{
	struct gem_arg *a = arg;
	static struct self_cp cp;
	const struct gpu *g0 = &ctx->gpu[0];
	int kfd = open_kfd(), rfd[MAX_GPUS], fd = recv_fd(a->sock), r;
	uint32_t h1, h1b, h2;
	uint64_t handle, va = va_alloc(ctx, SHARE_SIZE), goff = 0;
	struct kfd_criu_bo_bucket *b;
	uint8_t *m;

	if (kfd < 0 || fd < 0 || acquire_all(ctx, kfd, rfd))
		_exit(2);

	r = prime_import(rfd[0], fd, &h1);
	tap_errno(r, 0, "PRIME_FD_TO_HANDLE of another process' render buffer, same GPU");
	tap_ok(!prime_import(rfd[0], fd, &h1b) && h1b == h1,
	       "PRIME_FD_TO_HANDLE of the same dma-buf again: the same handle");
	goff = gem_offset(rfd[0], h1);
	m = bo_cpu_map(rfd[0], goff, SHARE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	tap_ok(m != MAP_FAILED && check_pattern(m, SHARE_SIZE, 0x6100, NULL),
	       "the imported render buffer is the exporter's GEM object: its bytes");
	if (m != MAP_FAILED) {
		fill_pattern(m, SHARE_SIZE, 0x6200);
		munmap(m, SHARE_SIZE);
	}

	r = import_dmabuf(kfd, g0->id, fd, va, &handle);
	tap_errno(r, 0, "IMPORT_DMABUF of a render buffer into KFD, same GPU");
	r = r ? r : self_checkpoint(kfd, &cp);
	b = r ? NULL : bucket_at(&cp, va);
	tap_ok(b && b->alloc_flags == (uint32_t)(ALLOC_VRAM | ALLOC_WRITABLE | ALLOC_EXEC) &&
		       b->offset == goff,
	       "its bucket: VRAM|WRITABLE|EXECUTABLE, the render buffer's own mmap offset");
	if (KFD_SHARES_THROUGH_DRM)
		tap_ok(b && fd_ino((int)b->dmabuf_fd) == fd_ino(fd),
		       "its CHECKPOINT fd is the render node's dma-buf (7.x: same st_ino)");
	else
		tap_ok(b && fd_ino((int)b->dmabuf_fd) && fd_ino((int)b->dmabuf_fd) != fd_ino(fd),
		       "its CHECKPOINT fd is a new dma-buf of the buffer (6.1)");
	close_buckets(&cp, -1);

	if (ctx->n_gpus < 2) {
		tap_skip("one GPU only", "another GPU's render buffer through PRIME and KFD");
		_exit(0);
	}
	r = prime_import(rfd[1], fd, &h2);
	tap_errno(r, 0, "PRIME_FD_TO_HANDLE of another GPU's render buffer makes a buffer there");
	if (!r) {
		struct drm_amdgpu_gem_create_in info = { 0 };
		struct drm_amdgpu_gem_op op = { .handle = h2,
						.op = AMDGPU_GEM_OP_GET_GEM_CREATE_INFO,
						.value = (uint64_t)(uintptr_t)&info };
		uint64_t off2 = gem_offset(rfd[1], h2);

		tap_ok(!kfd_ioctl(rfd[1], DRM_IOCTL_AMDGPU_GEM_OP, &op) &&
			       info.domains == AMDGPU_GEM_DOMAIN_GTT && info.bo_size == SHARE_SIZE,
		       "that buffer is GTT-domain, of the exporter's size");
		m = bo_cpu_map(rfd[1], off2, SHARE_SIZE, PROT_READ, MAP_SHARED);
		tap_ok(off2 && off2 != goff && m != MAP_FAILED && touch_sigbuses(m),
		       "it has its own mmap offset; the CPU cannot touch it (SIGBUS)");
		if (m != MAP_FAILED)
			munmap(m, SHARE_SIZE);
		op = (struct drm_amdgpu_gem_op){ .handle = h2, .op = AMDGPU_GEM_OP_SET_PLACEMENT,
						 .value = AMDGPU_GEM_DOMAIN_VRAM };
		tap_errno(kfd_ioctl(rfd[1], DRM_IOCTL_AMDGPU_GEM_OP, &op), EINVAL,
			  "SET_PLACEMENT VRAM of another GPU's buffer -> EINVAL");
	}
	r = import_dmabuf(kfd, ctx->gpu[1].id, fd, va_alloc(ctx, SHARE_SIZE), &handle);
	if (KFD_SHARES_THROUGH_DRM)
		tap_errno(r, 0, "IMPORT_DMABUF of another GPU's render buffer (7.x: through PRIME)");
	else
		tap_errno(r, EINVAL, "IMPORT_DMABUF of another GPU's render buffer -> EINVAL (6.1)");
	_exit(0);
}

static void share_render_buffer(struct ctx *ctx)
{
	uint32_t *seen = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct gem_arg ea, ia;
	int se[2], si[2], d;
	pid_t pe, pi;
	char c = 'H';

	if (seen == MAP_FAILED || child_socket(se)) {
		tap_ok(false, "render sharing set-up");
		return;
	}
	*seen = 0;
	ea = (struct gem_arg){ .sock = se[1], .seen = seen };
	pe = run_child("render exporter", gem_exporter, ctx, &ea);
	close(se[1]);
	d = recv_fd(se[0]);
	if (d >= 0 && !child_socket(si)) {
		ia = (struct gem_arg){ .sock = si[1], .seen = seen };
		pi = run_child("render importer", gem_importer, ctx, &ia);
		close(si[1]);
		if (!send_fd(si[0], d)) {
			wait_child(pi, "render importer");
			tap_ok(write(se[0], &c, 1) == 1 && read(se[0], &c, 1) == 1 &&
				       *seen == 0x6200,
			       "the render buffer's exporter sees the importer's bytes");
		}
		close(si[0]);
	}
	c = 'X';
	if (write(se[0], &c, 1) != 1)
		tap_diag("render exporter went away");
	wait_child(pe, "render exporter");
	close(se[0]);
	if (d >= 0)
		close(d);
	munmap(seen, 4096);
}

/* ------------------------------------------------------------- idr handles */

/* kfd_process_device_create_obj_handle: ALLOC and IMPORT take the lowest free id, from 0. */
static void lowest_free_id(struct ctx *ctx, void *unused)
{
	const struct gpu *g = &ctx->gpu[0];
	int kfd = open_kfd(), rfd = open_render(g), fd;
	uint64_t handle;
	struct bo bo[4];
	uint32_t h;

	(void)unused;
	if (kfd < 0 || rfd < 0 || acquire_vm(kfd, rfd, g->id))
		_exit(2);
	for (int i = 0; i < 3; i++)
		if (bo_alloc(kfd, &bo[i], g->id, va_alloc(ctx, 4096), 4096, ALLOC_GTT | ALLOC_WRITABLE,
			     0))
			_exit(3);
	tap_ok(HANDLE_IDR(bo[0].handle) == 0 && HANDLE_IDR(bo[1].handle) == 1 &&
		       HANDLE_IDR(bo[2].handle) == 2,
	       "ALLOC in a fresh process takes ids 0, 1, 2 (the idr starts at 0)");
	bo_free(kfd, bo[1].handle);
	if (gem_create(rfd, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, &h) || (fd = prime_export(rfd, h)) < 0)
		_exit(4);
	tap_ok(!import_dmabuf(kfd, g->id, fd, va_alloc(ctx, 4096), &handle) && HANDLE_IDR(handle) == 1,
	       "IMPORT_DMABUF takes the lowest free id (1, freed before)");
	tap_ok(!bo_alloc(kfd, &bo[3], g->id, va_alloc(ctx, 4096), 4096, ALLOC_GTT, 0) &&
		       HANDLE_IDR(bo[3].handle) == 3,
	       "the next ALLOC takes the next free id (3)");
	_exit(0);
}

void test_sharing(struct ctx *ctx)
{
	wait_child(run_child("lowest free id", lowest_free_id, ctx, NULL), "lowest free id");
	share_between_processes(ctx, ctx->gpu[0].id, ctx->gpu[0].id);
	if (ctx->n_gpus > 1)
		share_between_processes(ctx, ctx->gpu[0].id, ctx->gpu[1].id);
	else
		tap_skip("one GPU only", "sharing a buffer onto another GPU");
	share_render_buffer(ctx);
}
