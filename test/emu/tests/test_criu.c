// SPDX-License-Identifier: GPL-2.0-only
/*
 * AMDKFD_IOC_CRIU_OP, played the way criu and the plugin play it
 * (Documentation/kfd-interface.md §2; §N.N below: its sections):
 *
 *   P (this process)           T (target child)            R (restore child)
 *                              opens /dev/kfd, builds
 *                              BOs, a queue, events,
 *                              sends its kfd fd  ────────▶ P
 *   PTRACE_SEIZE T
 *   PROCESS_INFO / CHECKPOINT / UNPAUSE on T's fd
 *                                                          fresh /dev/kfd,
 *                                                          RESTORE T's blob
 *   RESUME(R's pid) on P's own fd
 *
 * T's queue read pointer lives in a MAP_SHARED page made before any fork, so P
 * can watch the emulator's heartbeat; R inherits the same page at the same
 * address, so its restored queue beats into the same word.
 */
#include "kfd_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TBOS 48

struct tbo {
	struct bo bo;
	bool counted;	 /* va > gpuvm_base: CRIU reports it (§2.1) */
	uint32_t seed;	 /* content pattern, 0 if none */
	uint32_t n_mapped;
	uint32_t mapped[MAX_GPUS];
};

/* Lives in a MAP_SHARED page: written by T, read by P and R. */
struct target_info {
	volatile uint64_t rptr;
	int setup_ok;
	uint32_t n_bos, n_counted;
	struct tbo bos[MAX_TBOS];
	uint32_t queue_id;
	uint32_t ev_auto, ev_manual;
	int restore_ok; /* set by R */
};

struct criu_state {
	struct ctx *ctx;
	struct target_info *ti;
	struct queue_mem qm; /* made before the forks: same VAs in T and R */
	void *userptr_mem;
	int sock[2];
	pid_t tpid;
	int tkfd;
	bool traced;
	struct kfd_ioctl_criu_args info;
	struct kfd_criu_device_bucket *devs;
	struct kfd_criu_bo_bucket *bos;
	uint8_t *priv;
	bool checkpointed;
};

/* ---------------------------------------------------------------- target T */

static bool t_add(struct criu_state *st, int kfd, const int *rfd, unsigned int gi, uint64_t va,
		  uint64_t size, uint32_t flags, uint64_t userptr, uint32_t seed,
		  const uint32_t *map, uint32_t n_map)
{
	struct target_info *ti = st->ti;
	struct tbo *t = &ti->bos[ti->n_bos];
	uint32_t ns = 0;
	int r;

	r = bo_alloc(kfd, &t->bo, st->ctx->gpu[gi].id, va, size, flags, userptr);
	if (r) {
		tap_diag("target: ALLOC flags 0x%x size %llu on gpu 0x%x: %s", flags,
			 (unsigned long long)size, st->ctx->gpu[gi].id, errname(-r));
		return false;
	}
	if (seed) {
		void *p = bo_cpu_map(rfd[gi], t->bo.mmap_offset, size, PROT_READ | PROT_WRITE,
				     MAP_SHARED);

		if (p == MAP_FAILED) {
			tap_diag("target: mmap of BO: %s", strerror(errno));
			return false;
		}
		fill_pattern(p, size, seed);
		munmap(p, size);
	}
	if (n_map) {
		r = bo_map(kfd, t->bo.handle, map, n_map, &ns);
		if (r) {
			tap_diag("target: MAP: %s", errname(-r));
			return false;
		}
		memcpy(t->mapped, map, n_map * sizeof(*map));
	}
	t->n_mapped = n_map;
	t->seed = seed;
	t->counted = va > GPUVM_BASE;
	ti->n_bos++;
	ti->n_counted += t->counted;
	return true;
}

static bool target_setup(struct criu_state *st, int kfd, int *rfd)
{
	struct ctx *ctx = st->ctx;
	struct target_info *ti = st->ti;
	const uint32_t W = ALLOC_WRITABLE, NS = ALLOC_NO_SUBST;
	uint32_t all[MAX_GPUS], n = ctx_gpu_ids(ctx, all);
	struct kfd_ioctl_create_queue_args q;
	struct kfd_ioctl_create_event_args e;
	uint64_t page_handle;
	int r;

	r = acquire_all(ctx, kfd, rfd);
	if (r) {
		tap_diag("target: ACQUIRE_VM: %s", errname(-r));
		return false;
	}
	if (!t_add(st, kfd, rfd, 0, va_alloc(ctx, 65536), 65536,
		   ALLOC_VRAM | W | ALLOC_EXEC | ALLOC_PUBLIC | NS, 0, 0x10001, all, n))
		return false;
	/* Not WRITABLE: CHECKPOINT must export it read-only (§2.2). */
	if (!t_add(st, kfd, rfd, 0, va_alloc(ctx, 16384), 16384, ALLOC_VRAM | ALLOC_PUBLIC | NS,
		   0, 0, all, 1))
		return false;
	/* The signal page; its handle rides in the first event (§1.3). */
	if (!t_add(st, kfd, rfd, 0, va_alloc(ctx, EVENT_PAGE_SIZE), EVENT_PAGE_SIZE,
		   ALLOC_GTT | W | ALLOC_COHERENT | ALLOC_UNCACHED | NS, 0, 0, all, n))
		return false;
	page_handle = ti->bos[ti->n_bos - 1].bo.handle;
	if (!t_add(st, kfd, rfd, 0, va_alloc(ctx, 8192), 8192, ALLOC_GTT | W | NS, 0, 0x30003,
		   NULL, 0))
		return false;
	if (!t_add(st, kfd, rfd, 0, (uint64_t)(uintptr_t)st->userptr_mem, 16384,
		   ALLOC_USERPTR | W | NS, (uint64_t)(uintptr_t)st->userptr_mem, 0, all, 1))
		return false;
	for (unsigned int i = 0; i < n; i++) {
		if (!t_add(st, kfd, rfd, i, va_alloc(ctx, DOORBELL_SLICE), DOORBELL_SLICE,
			   ALLOC_DOORBELL | W | ALLOC_COHERENT | NS, 0, 0, &all[i], 1))
			return false;
		if (!t_add(st, kfd, rfd, i, va_alloc(ctx, PAGE_SZ), PAGE_SZ,
			   ALLOC_MMIO | W | ALLOC_COHERENT | NS, 0, 0, &all[i], 1))
			return false;
		if (i && !t_add(st, kfd, rfd, i, va_alloc(ctx, 65536), 65536,
				ALLOC_VRAM | W | ALLOC_PUBLIC | NS, 0, 0x50000 + i, &all[i], 1))
			return false;
	}
	/* VA 0 is allowed, but CRIU ignores BOs at or below gpuvm_base (§1.7, §2.1). */
	if (!t_add(st, kfd, rfd, 0, 0, PAGE_SZ, ALLOC_VRAM | W | ALLOC_PUBLIC | NS, 0, 0, NULL, 0))
		return false;

	queue_args_init(&q, all[0], &st->qm, &ti->rptr);
	r = kfd_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q);
	if (r) {
		tap_diag("target: CREATE_QUEUE: %s", errname(-r));
		return false;
	}
	ti->queue_id = q.queue_id;

	memset(&e, 0, sizeof(e));
	e.event_type = KFD_IOC_EVENT_SIGNAL;
	e.auto_reset = 1;
	e.event_page_offset = page_handle;
	r = kfd_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e);
	ti->ev_auto = e.event_id;
	memset(&e, 0, sizeof(e));
	e.event_type = KFD_IOC_EVENT_SIGNAL;
	r = r ?: kfd_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &e);
	ti->ev_manual = e.event_id;
	if (!r) {
		/* A signalled manual event: RESTORE must bring the state back (§2.4). */
		struct kfd_ioctl_set_event_args s = { .event_id = ti->ev_manual };

		r = kfd_ioctl(kfd, AMDKFD_IOC_SET_EVENT, &s);
	}
	if (r) {
		tap_diag("target: events: %s", errname(-r));
		return false;
	}
	return true;
}

/* T: owns the kfd state; obeys one-byte commands until told to exit. */
static void target_main(struct criu_state *st)
{
	int rfd[MAX_GPUS];
	int kfd = open_kfd();
	char cmd;

	close(st->sock[0]);
	st->ti->setup_ok = kfd >= 0 && target_setup(st, kfd, rfd);
	if (send_fd(st->sock[1], kfd >= 0 ? kfd : 0))
		_exit(1);
	while (read(st->sock[1], &cmd, 1) == 1) {
		if (cmd == 'Q') {
			struct kfd_ioctl_destroy_queue_args d = { .queue_id = st->ti->queue_id };
			char ok = kfd_ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &d) ? 'n' : 'y';

			if (write(st->sock[1], &ok, 1) != 1)
				break;
		} else {
			break;
		}
	}
	_exit(0);
}

static bool target_spawn(struct criu_state *st)
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, st->sock))
		return false;
	st->tpid = fork();
	if (st->tpid < 0)
		return false;
	if (st->tpid == 0)
		target_main(st);
	close(st->sock[1]);
	st->tkfd = recv_fd(st->sock[0]);
	return tap_ok(st->tkfd >= 0 && st->ti->setup_ok,
		      "target process built its kfd state and passed its /dev/kfd fd (SCM_RIGHTS)");
}

static bool target_cmd(struct criu_state *st, char cmd)
{
	char reply;

	if (write(st->sock[0], &cmd, 1) != 1)
		return false;
	return read(st->sock[0], &reply, 1) == 1 && reply == 'y';
}

static void target_finish(struct criu_state *st)
{
	int status;

	close(st->sock[0]); /* EOF: T exits */
	if (st->tkfd >= 0)
		close(st->tkfd);
	waitpid(st->tpid, &status, 0);
}

/* ------------------------------------------------------- gatekeeping (§2.0) */

static void caps_child(struct ctx *ctx, void *arg)
{
	struct kfd_ioctl_get_version_args v;
	struct kfd_ioctl_criu_args a;
	int kfd = open_kfd(), r;

	(void)ctx;
	(void)arg;
	if (!tap_ok(kfd >= 0, "caps child opens /dev/kfd"))
		return;
	r = drop_criu_caps();
	if (!tap_errno(r, 0, "caps child drops CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE"))
		return;
	/* Checked before the arguments are even read, for every op (§2.0 item 3). */
	for (uint32_t op = KFD_CRIU_OP_PROCESS_INFO; op <= KFD_CRIU_OP_RESUME + 1; op++) {
		memset(&a, 0, sizeof(a));
		a.pid = (uint32_t)getpid();
		r = criu_op(kfd, &a, op);
		tap_errno(r, EACCES, "CRIU op %u by the owner without the capabilities -> EACCES (§2.6)",
			  op);
	}
	r = kfd_ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v);
	tap_errno(r, 0, "non-CRIU ioctls need no capability");
	close(kfd);
}

static void test_gatekeeping(struct ctx *ctx)
{
	struct kfd_ioctl_criu_args a;

	memset(&a, 0, sizeof(a));
	tap_errno(criu_op(ctx->kfd, &a, 5), EINVAL, "CRIU op 5 (unknown) -> EINVAL (§2.6)");
	memset(&a, 0, sizeof(a));
	tap_errno(criu_op(ctx->kfd, &a, 0xffffffffu), EINVAL,
		  "CRIU op 0xffffffff (unknown) -> EINVAL (§2.6)");
	wait_child(run_child("caps", caps_child, ctx, NULL), "caps");
}

/* ------------------------------------------------------------- dump side */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void heartbeat_paused(struct criu_state *st, const char *name)
{
	uint64_t a, b;

	if (!tap_ok(stays_still(&st->ti->rptr, 200, &a, &b), "%s", name))
		tap_diag("read pointer moved %llu -> %llu", (unsigned long long)a,
			 (unsigned long long)b);
}

static void heartbeat_running(struct criu_state *st, const char *name)
{
	tap_ok(wait_changes(&st->ti->rptr, 3000), "%s", name);
}

static void fill_checkpoint_args(struct criu_state *st, struct kfd_ioctl_criu_args *a)
{
	memset(a, 0, sizeof(*a));
	a->devices = (uint64_t)(uintptr_t)st->devs;
	a->bos = (uint64_t)(uintptr_t)st->bos;
	a->priv_data = (uint64_t)(uintptr_t)st->priv;
	a->priv_data_size = st->info.priv_data_size;
	a->num_devices = st->info.num_devices;
	a->num_bos = st->info.num_bos;
	a->num_objects = st->info.num_objects;
}

static bool process_info(struct criu_state *st)
{
	struct target_info *ti = st->ti;
	struct kfd_ioctl_criu_args a;
	int r;

	memset(&a, 0, sizeof(a));
	r = criu_op(st->tkfd, &a, KFD_CRIU_OP_PROCESS_INFO);
	if (!tap_errno(r, 0, "PROCESS_INFO by the ptrace parent on the target's fd (§2.0)"))
		return false;
	st->info = a;
	tap_eq(a.num_devices, st->ctx->n_gpus, "PROCESS_INFO num_devices = every GPU (§2.1)");
	tap_eq(a.num_bos, ti->n_counted,
	       "PROCESS_INFO num_bos counts BOs with va > 0x4000 only (§2.1)");
	tap_eq(a.num_objects, 3, "PROCESS_INFO num_objects = 1 queue + 2 events (§2.1)");
	tap_eq(a.pid, (uint32_t)st->tpid, "PROCESS_INFO pid = the target's pid (§2.1)");
	if (!tap_ok(a.priv_data_size > 0 && a.priv_data_size < (64u << 20),
		    "PROCESS_INFO priv_data_size is positive and sane"))
		tap_diag("priv_data_size %llu", (unsigned long long)a.priv_data_size);
	else
		tap_diag("priv_data_size %llu (6.1 layout: %llu + queue MQD/ctl stack)",
			 (unsigned long long)a.priv_data_size,
			 (unsigned long long)(8 + 8 * a.num_devices + 80 * a.num_bos + 120 +
					      64 * 2));

	free(st->devs);
	free(st->bos);
	free(st->priv);
	st->devs = calloc(a.num_devices + 1, sizeof(*st->devs));
	st->bos = calloc(a.num_bos + 1, sizeof(*st->bos));
	st->priv = calloc(1, a.priv_data_size + 64);
	return st->devs && st->bos && st->priv && a.priv_data_size < (64u << 20);
}

static void check_checkpoint_failures(struct criu_state *st)
{
	struct kfd_ioctl_criu_args a;
	int fds = count_fds();

	fill_checkpoint_args(st, &a);
	a.devices = 0;
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL,
		  "CHECKPOINT with devices NULL -> EINVAL (§2.2)");
	fill_checkpoint_args(st, &a);
	a.bos = 0;
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL,
		  "CHECKPOINT with bos NULL -> EINVAL (§2.2)");
	fill_checkpoint_args(st, &a);
	a.priv_data = 0;
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL,
		  "CHECKPOINT with priv_data NULL -> EINVAL (§2.2)");
	fill_checkpoint_args(st, &a);
	a.num_devices++;
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL,
		  "CHECKPOINT with num_devices + 1 -> EINVAL (§2.2)");
	fill_checkpoint_args(st, &a);
	a.num_bos--;
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL,
		  "CHECKPOINT with num_bos - 1 -> EINVAL (§2.2)");
	fill_checkpoint_args(st, &a);
	a.num_objects++;
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL,
		  "CHECKPOINT with num_objects + 1 -> EINVAL (§2.2)");
	fill_checkpoint_args(st, &a);
	a.priv_data_size += 8;
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL,
		  "CHECKPOINT with priv_data_size + 8 -> EINVAL (§2.2)");
	tap_eq((uint64_t)count_fds(), (uint64_t)fds, "failed CHECKPOINTs leave no fds behind (§2.2)");
}

static const struct kfd_criu_bo_bucket *find_bucket(const struct criu_state *st,
						    const struct tbo *t)
{
	for (uint32_t i = 0; i < st->info.num_bos; i++)
		if (st->bos[i].addr == t->bo.va && st->bos[i].gpu_id == t->bo.gpu_id)
			return &st->bos[i];
	return NULL;
}

/* A dma-buf fd as §2.2/§2.4 describe it: open, the BO's size, the right mode. */
static bool dmabuf_fd_ok(uint32_t fd, uint64_t size, int accmode, const char *what)
{
	int fl = fcntl((int)fd, F_GETFL), fdfl = fcntl((int)fd, F_GETFD);
	off_t end;

	if (fd == KFD_INVALID_FD || fl < 0) {
		tap_diag("%s: dmabuf_fd %d is not an open fd", what, (int)fd);
		return false;
	}
	end = lseek((int)fd, 0, SEEK_END);
	lseek((int)fd, 0, SEEK_SET);
	if ((uint64_t)end != size || (fl & O_ACCMODE) != accmode || (fdfl & FD_CLOEXEC)) {
		tap_diag("%s: fd %d size %lld (want %llu) mode %d (want %d) cloexec %d", what,
			 (int)fd, (long long)end, (unsigned long long)size, fl & O_ACCMODE, accmode,
			 !!(fdfl & FD_CLOEXEC));
		return false;
	}
	return true;
}

static size_t blob_bo_priv(const struct criu_state *st, uint32_t k);
static bool blob_has_61_layout(const struct criu_state *st);

/*
 * The queue object of a 6.1-layout blob (kfd_criu_queue_priv_data) carries one MQD and one
 * control stack per XCC of its GPU, all the MQDs first (amdkfd's multi-XCC checkpoint): mqd_size
 * @112 is 2048 per XCC, ctl_stack_size @108 the queue's per-XCC size times the XCCs, and the
 * save area's size @104 one XCC's.
 */
static void check_queue_per_xcc(struct criu_state *st)
{
	const struct gpu *g = &st->ctx->gpu[0];
	uint32_t type, ctx_size, ctl, mqd;
	size_t at = blob_bo_priv(st, st->info.num_bos);

	if (at + 120 > st->info.priv_data_size)
		return;
	memcpy(&type, st->priv + at, 4);
	memcpy(&ctx_size, st->priv + at + 104, 4);
	memcpy(&ctl, st->priv + at + 108, 4);
	memcpy(&mqd, st->priv + at + 112, 4);
	if (!tap_ok(type == 0 && mqd == 2048 * g->num_xcc && ctl == 4096 * g->num_xcc && ctx_size == 64 * 1024,
		    "CHECKPOINT: the queue carries an MQD and a control stack for each of its GPU's %u XCC(s) (§2.2)",
		    g->num_xcc))
		tap_diag("object type %u, mqd_size %u, ctl_stack_size %u, ctx_save_restore_area_size %u", type, mqd,
			 ctl, ctx_size);
}

static void check_checkpoint_result(struct criu_state *st)
{
	struct ctx *ctx = st->ctx;
	struct target_info *ti = st->ti;
	bool devs_ok = true, found = true, meta = true, offs = true, fds = true, content = true;
	bool same_obj = true;

	for (uint32_t i = 0; i < st->info.num_devices; i++) {
		const struct kfd_criu_device_bucket *d = &st->devs[i];

		if (!gpu_by_id(ctx, d->actual_gpu_id) || d->user_gpu_id != d->actual_gpu_id) {
			tap_diag("device bucket %u: user 0x%x actual 0x%x", i, d->user_gpu_id,
				 d->actual_gpu_id);
			devs_ok = false;
		}
		for (uint32_t j = 0; j < i; j++)
			devs_ok &= st->devs[j].actual_gpu_id != d->actual_gpu_id;
	}
	tap_ok(devs_ok, "CHECKPOINT device buckets: one per GPU, user id == actual id (§2.2)");

	for (uint32_t k = 0; k < ti->n_bos; k++) {
		const struct tbo *t = &ti->bos[k];
		const struct kfd_criu_bo_bucket *b = find_bucket(st, t);
		const struct gpu *g = gpu_by_id(ctx, t->bo.gpu_id);
		uint32_t f = t->bo.flags;
		bool off_ok;

		if (!t->counted) {
			if (b) {
				tap_diag("BO at va 0x%llx (<= gpuvm_base) was dumped",
					 (unsigned long long)t->bo.va);
				found = false;
			}
			continue;
		}
		if (!b) {
			tap_diag("no bucket for BO va 0x%llx gpu 0x%x", (unsigned long long)t->bo.va,
				 t->bo.gpu_id);
			found = false;
			continue;
		}
		if (b->size != t->bo.size || b->alloc_flags != f) {
			tap_diag("va 0x%llx: size %llu flags 0x%x, want %llu 0x%x",
				 (unsigned long long)b->addr, (unsigned long long)b->size,
				 b->alloc_flags, (unsigned long long)t->bo.size, f);
			meta = false;
		}
		if (f & ALLOC_DOORBELL) {
			off_ok = b->offset == (MMAP_TYPE_DOORBELL | MMAP_GPU_ID(g->id));
			fds &= b->dmabuf_fd == KFD_INVALID_FD;
		} else if (f & ALLOC_MMIO) {
			off_ok = b->offset == (MMAP_TYPE_MMIO | MMAP_GPU_ID(g->id));
			fds &= b->dmabuf_fd == KFD_INVALID_FD;
		} else if (f & (ALLOC_VRAM | ALLOC_GTT)) {
			off_ok = b->offset == t->bo.mmap_offset;
			fds &= dmabuf_fd_ok(b->dmabuf_fd, b->size,
					    (f & ALLOC_WRITABLE) ? O_RDWR : O_RDONLY, "CHECKPOINT");
		} else {
			off_ok = true; /* a userptr BO's GEM offset is not visible to user space */
			fds &= b->dmabuf_fd == KFD_INVALID_FD;
		}
		if (!off_ok)
			tap_diag("va 0x%llx flags 0x%x: offset 0x%llx", (unsigned long long)b->addr, f,
				 (unsigned long long)b->offset);
		offs &= off_ok;

		if (t->seed && b->dmabuf_fd != KFD_INVALID_FD) {
			uint64_t goff = 0;
			uint32_t gh = 0;
			void *p = dmabuf_map(g->render_fd, (int)b->dmabuf_fd, b->size, PROT_READ,
					     &goff, &gh);
			size_t bad;

			if (p == MAP_FAILED) {
				tap_diag("import/map of dmabuf for va 0x%llx: %s",
					 (unsigned long long)b->addr, strerror(errno));
				content = false;
				continue;
			}
			same_obj &= goff == t->bo.mmap_offset;
			if (!check_pattern(p, b->size, t->seed, &bad)) {
				tap_diag("va 0x%llx: content differs at byte %zu",
					 (unsigned long long)b->addr, bad);
				content = false;
			}
			dmabuf_unmap(g->render_fd, p, b->size, gh);
		}
	}
	tap_ok(found, "CHECKPOINT BO buckets: every BO above gpuvm_base, none below (§2.1)");
	tap_ok(meta, "CHECKPOINT BO buckets: addr, size, alloc_flags, gpu_id as allocated (§2.2)");
	tap_ok(offs, "CHECKPOINT offsets: render offset / TYPE_DOORBELL|GPU_ID / TYPE_MMIO|GPU_ID (§2.2)");
	tap_ok(fds, "CHECKPOINT dmabuf_fd: real fds for VRAM/GTT (size, RDWR iff WRITABLE), "
		    "0xffffffff otherwise (§2.2)");
	tap_ok(same_obj, "CHECKPOINT dma-buf imports as the BO's own GEM object (same offset, §4.4)");
	tap_ok(content, "CHECKPOINT dma-buf shows the target's BO contents (§2.2, §4.4)");
}

static uint64_t vram_bucket_bytes(const struct kfd_criu_bo_bucket *bos, uint32_t n, uint32_t gpu_id)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++)
		if (bos[i].gpu_id == gpu_id && (bos[i].alloc_flags & ALLOC_VRAM))
			sum += bos[i].size;
	return sum;
}

/*
 * proc/<pid>/vram_<gpu_id> (6.1/7.3 kfd_process.c) counts every VRAM buffer the process
 * allocated, in whole pages: the checkpoint's VRAM buckets, and the buffer at VA 0 that
 * CHECKPOINT leaves out.
 */
static void check_target_vram(struct criu_state *st)
{
	struct ctx *ctx = st->ctx;
	bool ok = true;

	for (unsigned int i = 0; i < ctx->n_gpus; i++) {
		uint32_t id = ctx->gpu[i].id;
		uint64_t want = vram_bucket_bytes(st->bos, st->info.num_bos, id), got = 0;

		for (uint32_t k = 0; k < st->ti->n_bos; k++) {
			const struct bo *b = &st->ti->bos[k].bo;

			if (!st->ti->bos[k].counted && b->gpu_id == id && (b->flags & ALLOC_VRAM))
				want += (b->size + PAGE_SZ - 1) & ~(PAGE_SZ - 1);
		}
		if (kfd_proc_vram(st->tpid, id, &got) || got != want) {
			tap_diag("vram_%u of the target: %llu, want %llu", id,
				 (unsigned long long)got, (unsigned long long)want);
			ok = false;
		}
	}
	tap_ok(ok, "the target's vram_<gpu_id>: its VRAM buckets plus the VRAM at VA 0 that "
		   "CHECKPOINT skips (6.1/7.3)");
}

static void close_checkpoint_fds(struct criu_state *st)
{
	for (uint32_t i = 0; i < st->info.num_bos; i++)
		if (st->bos[i].dmabuf_fd != KFD_INVALID_FD)
			close((int)st->bos[i].dmabuf_fd);
}

static bool dump_target(struct criu_state *st)
{
	struct kfd_ioctl_criu_args a;
	int r;

	heartbeat_running(st, "heartbeat: the target's queue runs before any CRIU op");

	memset(&a, 0, sizeof(a));
	r = criu_op(st->tkfd, &a, KFD_CRIU_OP_PROCESS_INFO);
	tap_errno(r, EBADF, "PROCESS_INFO by the parent before it traces the target -> EBADF (§2.6)");

	r = ptrace(PTRACE_SEIZE, st->tpid, NULL, NULL) ? -errno : 0;
	if (!tap_errno(r, 0, "PTRACE_SEIZE the target"))
		return false;
	st->traced = true;

	memset(&a, 0, sizeof(a));
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_UNPAUSE), EINVAL,
		  "UNPAUSE before PROCESS_INFO -> EINVAL (§2.3)");

	if (!process_info(st))
		return false;
	heartbeat_paused(st, "heartbeat: PROCESS_INFO evicts the target's queues (§2.1)");

	memset(&a, 0, sizeof(a));
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_UNPAUSE), 0, "UNPAUSE after PROCESS_INFO");
	heartbeat_running(st, "heartbeat: UNPAUSE restarts the queues (§2.3)");
	{
		char rel[32];
		uint64_t ms = 0;

		snprintf(rel, sizeof(rel), "stats_%u/evicted_ms", st->ctx->gpu[0].id);
		tap_ok(!kfd_proc_number(st->tpid, rel, &ms) && ms > 0,
		       "the target's %s counts the time PROCESS_INFO kept it evicted (6.1/7.3)",
		       rel);
	}
	memset(&a, 0, sizeof(a));
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_UNPAUSE), EINVAL,
		  "UNPAUSE when not paused -> EINVAL (§2.3)");

	fill_checkpoint_args(st, &a);
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_CHECKPOINT), EINVAL,
		  "CHECKPOINT without a preceding PROCESS_INFO (not paused) -> EINVAL (§2.2)");

	if (!process_info(st))
		return false;
	check_checkpoint_failures(st);

	fill_checkpoint_args(st, &a);
	r = criu_op(st->tkfd, &a, KFD_CRIU_OP_CHECKPOINT);
	if (!tap_errno(r, 0, "CHECKPOINT succeeds"))
		return false;
	st->checkpointed = true;
	check_checkpoint_result(st);
	if (blob_has_61_layout(st))
		check_queue_per_xcc(st);
	check_target_vram(st);
	heartbeat_paused(st, "heartbeat: queues stay evicted after CHECKPOINT (§2.2)");

	memset(&a, 0, sizeof(a));
	tap_errno(criu_op(st->tkfd, &a, KFD_CRIU_OP_UNPAUSE), 0, "UNPAUSE after CHECKPOINT");
	heartbeat_running(st, "heartbeat: the dumped target runs on after UNPAUSE (§2.3)");
	close_checkpoint_fds(st);
	return true;
}

/* ----------------------------------------------------------- restore side */

enum mutation {
	MUT_NONE,
	MUT_NULL_DEVICES,
	MUT_NULL_PRIV,
	MUT_ZERO_PRIV_SIZE,
	MUT_ZERO_NUM_DEVICES,
	MUT_NULL_BOS,
	MUT_EXTRA_DEVICE,
	MUT_USER_ID_ZERO,
	MUT_ACTUAL_UNKNOWN,
	MUT_DRM_FD_CLOSED,
	MUT_DRM_FD_DEVNULL,
	MUT_DRM_FD_COMPUTE_VM,
	MUT_ALREADY_ACQUIRED,
	MUT_TRUNCATED,
	MUT_GARBAGE,
	MUT_TRAILING,
	MUT_BO_GPU_UNKNOWN,
	/* These edit fields inside the blob and need the 6.1 layout (§1.3). */
	MUT_VERSION,
	MUT_XNACK,
	MUT_IDR_TAKEN,
	MUT_OBJECT_TYPE,
	MUT_ROTATE, /* success, with actual gpu ids rotated */
};

struct restore_case {
	enum mutation mut;
	int expect;
	const char *name;
};

static const struct restore_case restore_cases[] = {
	{ MUT_NULL_DEVICES, EINVAL, "RESTORE with devices NULL -> EINVAL (§2.4)" },
	{ MUT_NULL_PRIV, EINVAL, "RESTORE with priv_data NULL -> EINVAL (§2.4)" },
	{ MUT_ZERO_PRIV_SIZE, EINVAL, "RESTORE with priv_data_size 0 -> EINVAL (§2.4)" },
	{ MUT_ZERO_NUM_DEVICES, EINVAL, "RESTORE with num_devices 0 -> EINVAL (§2.4)" },
	{ MUT_NULL_BOS, EINVAL, "RESTORE with num_bos > 0 and bos NULL -> EINVAL (§2.4)" },
	{ MUT_EXTRA_DEVICE, EINVAL, "RESTORE with num_devices != the process' GPUs -> EINVAL (§2.4)" },
	{ MUT_USER_ID_ZERO, EINVAL, "RESTORE with a device bucket user_gpu_id 0 -> EINVAL (§2.4)" },
	{ MUT_ACTUAL_UNKNOWN, EINVAL, "RESTORE with an unknown actual_gpu_id -> EINVAL (§2.4)" },
	{ MUT_DRM_FD_CLOSED, EINVAL, "RESTORE with a closed drm_fd -> EINVAL (§2.4)" },
	{ MUT_DRM_FD_DEVNULL, EINVAL, "RESTORE with drm_fd = /dev/null -> EINVAL (§2.4)" },
	{ MUT_DRM_FD_COMPUTE_VM, EINVAL,
	  "RESTORE with render files already bound to another process' VM -> EINVAL (§2.4)" },
	{ MUT_ALREADY_ACQUIRED, EINVAL,
	  "RESTORE into a process that already did ACQUIRE_VM -> EINVAL (§2.4)" },
	{ MUT_TRUNCATED, EINVAL, "RESTORE with priv_data_size - 8 (truncated blob) -> EINVAL (§2.4)" },
	{ MUT_GARBAGE, EINVAL, "RESTORE with a garbage (0xa5) blob -> EINVAL (§2.4)" },
	{ MUT_TRAILING, EINVAL, "RESTORE with 16 trailing bytes -> EINVAL (§2.4)" },
	{ MUT_BO_GPU_UNKNOWN, ENODEV, "RESTORE with a BO gpu_id that is no user gpu id -> ENODEV (§2.4)" },
	{ MUT_VERSION, EINVAL, "RESTORE with blob version 2 -> EINVAL (§2.4)" },
	{ MUT_XNACK, EPERM, "RESTORE with xnack_mode 1 on GPUs without XNACK -> EPERM (§2.4)" },
	{ MUT_IDR_TAKEN, ENOMEM, "RESTORE with two BOs claiming one idr handle -> ENOMEM (§2.4)" },
	{ MUT_OBJECT_TYPE, EINVAL, "RESTORE with an unknown object type -> EINVAL (§2.4)" },
};

/*
 * The blob is opaque to user space and an emulator may choose its own format;
 * the in-blob mutations run only if it is the 6.1 one: process priv
 * {version 1, xnack 0}, 8 bytes per device, then 80-byte BO records whose
 * idr_handle (@8) matches the dumped handles, then the queue object (type 0).
 */
static size_t blob_bo_priv(const struct criu_state *st, uint32_t k)
{
	return 8 + 8 * (size_t)st->info.num_devices + 80 * (size_t)k;
}

static bool blob_has_61_layout(const struct criu_state *st)
{
	const uint8_t *p = st->priv;
	uint32_t v[2], idr, type;
	size_t objs = blob_bo_priv(st, st->info.num_bos);

	if (objs + 4 > st->info.priv_data_size)
		return false;
	memcpy(v, p, sizeof(v));
	if (v[0] != 1 || v[1] != 0)
		return false;
	for (uint32_t k = 0; k < st->info.num_bos; k++) {
		const struct kfd_criu_bo_bucket *b = &st->bos[k];
		bool match = false;

		memcpy(&idr, p + blob_bo_priv(st, k) + 8, 4);
		for (uint32_t t = 0; t < st->ti->n_bos; t++)
			match |= st->ti->bos[t].bo.va == b->addr &&
				 st->ti->bos[t].bo.gpu_id == b->gpu_id &&
				 HANDLE_IDR(st->ti->bos[t].bo.handle) == idr;
		if (!match)
			return false;
	}
	memcpy(&type, p + objs, 4);
	return type == 0; /* queues come first among the objects */
}

struct restore_buf {
	struct kfd_ioctl_criu_args a;
	struct kfd_criu_device_bucket devs[MAX_GPUS + 1];
	struct kfd_criu_bo_bucket *bos;
	uint8_t *priv;
	int rfd[MAX_GPUS]; /* this process' render fds, index = ctx->gpu[] */
};

static int gpu_index(const struct ctx *ctx, uint32_t id)
{
	for (unsigned int i = 0; i < ctx->n_gpus; i++)
		if (ctx->gpu[i].id == id)
			return (int)i;
	return -1;
}

/* What the plugin hands RESTORE: the dumped blob, buckets, and its own render fds. */
static int build_restore(struct criu_state *st, struct restore_buf *rb, bool rotate)
{
	struct ctx *ctx = st->ctx;
	uint32_t nd = st->info.num_devices;

	for (unsigned int i = 0; i < ctx->n_gpus; i++) {
		rb->rfd[i] = open_render(&ctx->gpu[i]);
		if (rb->rfd[i] < 0)
			return rb->rfd[i];
	}
	for (uint32_t i = 0; i < nd; i++) {
		int gi;

		rb->devs[i] = st->devs[i];
		if (rotate)
			rb->devs[i].actual_gpu_id = st->devs[(i + 1) % nd].actual_gpu_id;
		gi = gpu_index(ctx, rb->devs[i].actual_gpu_id);
		rb->devs[i].drm_fd = gi >= 0 ? (uint32_t)rb->rfd[gi] : 0;
	}
	rb->devs[nd] = rb->devs[0];
	rb->bos = calloc(st->info.num_bos + 1, sizeof(*rb->bos));
	rb->priv = calloc(1, st->info.priv_data_size + 64);
	if (!rb->bos || !rb->priv)
		return -ENOMEM;
	memcpy(rb->bos, st->bos, st->info.num_bos * sizeof(*rb->bos));
	for (uint32_t i = 0; i < st->info.num_bos; i++) {
		rb->bos[i].restored_offset = 0;
		rb->bos[i].dmabuf_fd = KFD_INVALID_FD;
	}
	memcpy(rb->priv, st->priv, st->info.priv_data_size);

	memset(&rb->a, 0, sizeof(rb->a));
	rb->a.devices = (uint64_t)(uintptr_t)rb->devs;
	rb->a.bos = (uint64_t)(uintptr_t)rb->bos;
	rb->a.priv_data = (uint64_t)(uintptr_t)rb->priv;
	rb->a.priv_data_size = st->info.priv_data_size;
	rb->a.num_devices = nd;
	rb->a.num_bos = st->info.num_bos;
	rb->a.num_objects = st->info.num_objects;
	return 0;
}

static void mutate(struct criu_state *st, struct restore_buf *rb, enum mutation m, int kfd)
{
	struct ctx *ctx = st->ctx;

	switch (m) {
	case MUT_NULL_DEVICES:
		rb->a.devices = 0;
		break;
	case MUT_NULL_PRIV:
		rb->a.priv_data = 0;
		break;
	case MUT_ZERO_PRIV_SIZE:
		rb->a.priv_data_size = 0;
		break;
	case MUT_ZERO_NUM_DEVICES:
		rb->a.num_devices = 0;
		break;
	case MUT_NULL_BOS:
		rb->a.bos = 0;
		break;
	case MUT_EXTRA_DEVICE:
		rb->a.num_devices++;
		break;
	case MUT_USER_ID_ZERO:
		rb->devs[0].user_gpu_id = 0;
		break;
	case MUT_ACTUAL_UNKNOWN:
		rb->devs[0].actual_gpu_id = ctx->bogus_gpu_id;
		break;
	case MUT_DRM_FD_CLOSED:
		rb->devs[0].drm_fd = 1000;
		close(1000);
		break;
	case MUT_DRM_FD_DEVNULL:
		rb->devs[0].drm_fd = (uint32_t)open("/dev/null", O_RDWR);
		break;
	case MUT_DRM_FD_COMPUTE_VM:
		/* The parent's render files, inherited: already P's compute VMs. */
		for (uint32_t i = 0; i < rb->a.num_devices; i++)
			rb->devs[i].drm_fd =
				(uint32_t)ctx->gpu[gpu_index(ctx, rb->devs[i].actual_gpu_id)].render_fd;
		break;
	case MUT_ALREADY_ACQUIRED: {
		int other = open_render(&ctx->gpu[0]);

		acquire_vm(kfd, other, ctx->gpu[0].id);
		break;
	}
	case MUT_TRUNCATED:
		rb->a.priv_data_size -= 8;
		break;
	case MUT_GARBAGE:
		memset(rb->priv, 0xa5, st->info.priv_data_size);
		break;
	case MUT_TRAILING:
		rb->a.priv_data_size += 16;
		break;
	case MUT_BO_GPU_UNKNOWN:
		rb->bos[0].gpu_id = ctx->bogus_gpu_id;
		break;
	case MUT_VERSION:
		rb->priv[0] = 2;
		break;
	case MUT_XNACK:
		rb->priv[4] = 1;
		break;
	case MUT_IDR_TAKEN:
		/* Buckets 0 and 1 are gpu 0's first two BOs (pdd order, then idr order). */
		memcpy(rb->priv + blob_bo_priv(st, 1) + 8, rb->priv + blob_bo_priv(st, 0) + 8, 4);
		break;
	case MUT_OBJECT_TYPE:
		rb->priv[blob_bo_priv(st, st->info.num_bos)] = 9;
		break;
	case MUT_NONE:
	case MUT_ROTATE:
		break;
	}
}


struct child_arg {
	struct criu_state *st;
	const struct restore_case *rc;
	int sock; /* R <-> P, success path only */
};

/* Each failing RESTORE runs in its own fresh process: a failure may leave VMs bound. */
static void restore_bad_child(struct ctx *ctx, void *arg)
{
	struct child_arg *ca = arg;
	struct restore_buf rb;
	int kfd = open_kfd(), r;

	(void)ctx;
	if (kfd < 0 || build_restore(ca->st, &rb, false)) {
		tap_ok(false, "%s (setup)", ca->rc->name);
		return;
	}
	mutate(ca->st, &rb, ca->rc->mut, kfd);
	r = criu_op(kfd, &rb.a, KFD_CRIU_OP_RESTORE);
	tap_errno(r, ca->rc->expect, "%s", ca->rc->name);
}

static uint32_t actual_of(const struct restore_buf *rb, uint32_t user_id)
{
	for (uint32_t i = 0; i < rb->a.num_devices; i++)
		if (rb->devs[i].user_gpu_id == user_id)
			return rb->devs[i].actual_gpu_id;
	return 0;
}

/* §2.4: what RESTORE hands back in the bucket array. */
static void check_restored_buckets(struct criu_state *st, struct restore_buf *rb, const char *pfx)
{
	struct ctx *ctx = st->ctx;
	bool fds = true, offs = true, kfd_offs = true, none = true, uptr = true;
	bool maps = true, same = true, content = true;

	for (uint32_t i = 0; i < rb->a.num_bos; i++) {
		const struct kfd_criu_bo_bucket *b = &rb->bos[i], *old = &st->bos[i];
		uint32_t actual = actual_of(rb, b->gpu_id), f = b->alloc_flags;
		int gi = gpu_index(ctx, actual);

		if (f & ALLOC_DOORBELL) {
			kfd_offs &= b->restored_offset == (MMAP_TYPE_DOORBELL | MMAP_GPU_ID(actual));
			none &= b->dmabuf_fd == KFD_INVALID_FD;
		} else if (f & ALLOC_MMIO) {
			kfd_offs &= b->restored_offset == (MMAP_TYPE_MMIO | MMAP_GPU_ID(actual));
			none &= b->dmabuf_fd == KFD_INVALID_FD;
		} else if (f & (ALLOC_VRAM | ALLOC_GTT)) {
			uint64_t goff = 0;
			uint32_t gh = 0, seed = 0x7700 + i;
			size_t bad;
			void *p;

			/* 6.1 exports a new read-write dma-buf; 6.8+ the BO's own, read-write iff WRITABLE */
			fds &= dmabuf_fd_ok(b->dmabuf_fd, b->size,
					    KFD_SHARES_THROUGH_DRM && !(f & ALLOC_WRITABLE) ? O_RDONLY :
											    O_RDWR,
					    pfx);
			/* The old BOs still exist in the target: new offsets must differ. */
			if (!b->restored_offset || (b->restored_offset & (PAGE_SZ - 1)) ||
			    b->restored_offset == old->offset) {
				tap_diag("%s: va 0x%llx restored_offset 0x%llx (dumped 0x%llx)", pfx,
					 (unsigned long long)b->addr,
					 (unsigned long long)b->restored_offset,
					 (unsigned long long)old->offset);
				offs = false;
				continue;
			}
			/* Leave the signal page alone: the restored events live in it. */
			if (gi < 0 || b->dmabuf_fd == KFD_INVALID_FD || b->addr == st->ti->bos[2].bo.va)
				continue;
			p = bo_cpu_map(rb->rfd[gi], b->restored_offset, b->size,
				       PROT_READ | PROT_WRITE, MAP_SHARED);
			if (p == MAP_FAILED) {
				tap_diag("%s: mmap restored_offset 0x%llx via the bucket's drm_fd: %s",
					 pfx, (unsigned long long)b->restored_offset, strerror(errno));
				maps = false;
				continue;
			}
			fill_pattern(p, b->size, seed);
			munmap(p, b->size);
			p = dmabuf_map(rb->rfd[gi], (int)b->dmabuf_fd, b->size, PROT_READ, &goff, &gh);
			if (p == MAP_FAILED) {
				tap_diag("%s: dma-buf import/map: %s", pfx, strerror(errno));
				content = false;
				continue;
			}
			same &= goff == b->restored_offset;
			if (!check_pattern(p, b->size, seed, &bad)) {
				tap_diag("%s: va 0x%llx differs at byte %zu", pfx,
					 (unsigned long long)b->addr, bad);
				content = false;
			}
			dmabuf_unmap(rb->rfd[gi], p, b->size, gh);
		} else {
			none &= b->dmabuf_fd == KFD_INVALID_FD;
			uptr &= b->restored_offset == 0;
		}
	}
	tap_ok(fds, KFD_SHARES_THROUGH_DRM ?
			    "%s: VRAM/GTT buckets get dma-buf fds of the BO size, O_RDWR iff WRITABLE "
			    "(6.8+: the BO's own dma-buf)" :
			    "%s: VRAM/GTT buckets get O_RDWR dma-buf fds of the BO size (§2.4)",
	       pfx);
	tap_ok(offs, "%s: VRAM/GTT get new page-aligned render offsets (§2.4)", pfx);
	tap_ok(kfd_offs, "%s: DOORBELL/MMIO restored_offset = TYPE | GPU_ID(actual id) (§2.4)", pfx);
	tap_ok(none, "%s: DOORBELL/MMIO/USERPTR buckets get dmabuf_fd 0xffffffff (§2.4)", pfx);
	tap_ok(uptr, "%s: USERPTR restored_offset is left as passed in (§2.4)", pfx);
	tap_ok(maps, "%s: restored_offset maps through the bucket's drm_fd (§2.4, §5.1)", pfx);
	tap_ok(same, "%s: the dma-buf is the restored BO's GEM object (§4.4)", pfx);
	tap_ok(content, "%s: bytes written via the render mapping read back via the dma-buf", pfx);
}

/* 6.1/7.3 criu_restore_memory_of_gpu: each VRAM bucket recreated counts, by actual gpu_id. */
static void check_restored_vram(const struct restore_buf *rb)
{
	bool ok = true;

	for (uint32_t i = 0; i < rb->a.num_devices; i++) {
		const struct kfd_criu_device_bucket *d = &rb->devs[i];
		uint64_t want = vram_bucket_bytes(rb->bos, rb->a.num_bos, d->user_gpu_id), got = 0;

		if (kfd_proc_vram(getpid(), d->actual_gpu_id, &got) || got != want) {
			tap_diag("vram_%u of the restored process: %llu, want %llu",
				 d->actual_gpu_id, (unsigned long long)got, (unsigned long long)want);
			ok = false;
		}
	}
	tap_ok(ok, "RESTORE: the restored process' vram_<gpu_id> counts its VRAM buckets (6.1/7.3)");
}

static void restore_events_check(struct criu_state *st, int kfd)
{
	struct target_info *ti = st->ti;
	struct kfd_event_data ev;
	struct kfd_ioctl_wait_events_args w = {
		.events_ptr = (uint64_t)(uintptr_t)&ev,
		.num_events = 1,
	};
	struct kfd_ioctl_set_event_args s = { .event_id = ti->ev_auto };
	int r;

	memset(&ev, 0, sizeof(ev));
	ev.event_id = ti->ev_manual;
	r = kfd_ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w);
	tap_ok(r == 0 && w.wait_result == KFD_IOC_WAIT_RESULT_COMPLETE,
	       "restored manual event keeps its id and signalled state (§2.4)");
	ev.event_id = ti->ev_auto;
	r = kfd_ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w);
	tap_ok(r == 0 && w.wait_result == KFD_IOC_WAIT_RESULT_TIMEOUT,
	       "restored auto-reset event is unsignalled (§2.4)");
	r = kfd_ioctl(kfd, AMDKFD_IOC_SET_EVENT, &s);
	w.timeout = 1000;
	r = r ?: kfd_ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w);
	tap_ok(r == 0 && w.wait_result == KFD_IOC_WAIT_RESULT_COMPLETE,
	       "restored event id works with SET_EVENT/WAIT_EVENTS");
}

/* After RESUME: the dumped handles and queue id must name the restored objects. */
static void restore_post_resume(struct criu_state *st, int kfd)
{
	struct target_info *ti = st->ti;
	const struct tbo *vram = &ti->bos[0], *gtt = &ti->bos[3];
	struct kfd_ioctl_destroy_queue_args d = { .queue_id = ti->queue_id };
	uint32_t ns = 0;
	int r;

	r = bo_unmap(kfd, vram->bo.handle, vram->mapped, vram->n_mapped, &ns);
	tap_errno(r, 0, "restored process: UNMAP with the dumped handle from the dumped GPUs "
			"(same handle, mappings restored, §2.4)");
	ns = 0;
	r = bo_map(kfd, vram->bo.handle, vram->mapped, vram->n_mapped, &ns);
	tap_errno(r, 0, "restored process: MAP it again");
	tap_errno(bo_free(kfd, gtt->bo.handle), 0,
		  "restored process: FREE with the dumped handle of an unmapped GTT BO");
	tap_errno(kfd_ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &d), 0,
		  "restored process: DESTROY_QUEUE with the dumped queue id (§2.4)");
}

static void restore_good_child(struct ctx *ctx, void *arg)
{
	struct child_arg *ca = arg;
	struct criu_state *st = ca->st;
	struct restore_buf rb;
	int kfd = open_kfd(), r;
	char go = 0;

	(void)ctx;
	if (kfd < 0 || build_restore(st, &rb, false)) {
		tap_ok(false, "RESTORE setup");
	} else {
		r = criu_op(kfd, &rb.a, KFD_CRIU_OP_RESTORE);
		st->ti->restore_ok =
			tap_errno(r, 0, "RESTORE of the target's checkpoint into a fresh process (§2.4)");
		if (st->ti->restore_ok) {
			check_restored_buckets(st, &rb, "RESTORE");
			restore_events_check(st, kfd);
			check_restored_vram(&rb);
		}
	}
	if (write(ca->sock, "R", 1) != 1 || read(ca->sock, &go, 1) != 1)
		go = 0;
	if (go == 'G' && st->ti->restore_ok)
		restore_post_resume(st, kfd);
}

struct bo_priv61 {
	uint64_t user_addr;
	uint32_t idr;
	uint32_t mapped[16];
};

static void bo_priv_at(const uint8_t *priv, size_t off, struct bo_priv61 *bp)
{
	memcpy(&bp->user_addr, priv + off, 8);
	memcpy(&bp->idr, priv + off + 8, 4);
	memcpy(bp->mapped, priv + off + 12, sizeof(bp->mapped));
}

/* Same set of mapped user gpu ids; the order follows pdd order, which a remap changes. */
static bool same_mapped_set(const uint32_t *a, const uint32_t *b)
{
	unsigned int na = 0, nb = 0;

	while (na < 16 && a[na])
		na++;
	while (nb < 16 && b[nb])
		nb++;
	if (na != nb)
		return false;
	for (unsigned int i = 0; i < na; i++) {
		bool hit = false;

		for (unsigned int j = 0; j < nb; j++)
			hit |= a[i] == b[j];
		if (!hit)
			return false;
	}
	return true;
}

/*
 * Dumps the restored process again (it owns its fd and runs as root): the
 * result must describe the same BOs - VA, size, flags, user gpu id, and in the
 * 6.1 blob the same idr handles, userptr addresses and mapped GPUs (§2.4).
 */
static void redump_check(struct criu_state *st, struct restore_buf *rb, int kfd, const char *pfx)
{
	struct kfd_ioctl_criu_args a;
	struct kfd_criu_device_bucket *devs;
	struct kfd_criu_bo_bucket *bos;
	uint8_t *priv;
	bool dev_ok = true, bo_ok = true, off_ok = true, priv_ok = true;
	int r;

	memset(&a, 0, sizeof(a));
	r = criu_op(kfd, &a, KFD_CRIU_OP_PROCESS_INFO);
	if (!tap_errno(r, 0, "%s: PROCESS_INFO of the restored process on its own fd", pfx))
		return;
	if (!tap_ok(a.num_devices == st->info.num_devices && a.num_bos == st->info.num_bos &&
			    a.num_objects == st->info.num_objects &&
			    a.priv_data_size == st->info.priv_data_size,
		    "%s: re-dump counts and blob size equal the original dump", pfx)) {
		tap_diag("devices %u bos %u objects %u priv %llu", a.num_devices, a.num_bos,
			 a.num_objects, (unsigned long long)a.priv_data_size);
		goto unpause;
	}
	devs = calloc(a.num_devices, sizeof(*devs));
	bos = calloc(a.num_bos, sizeof(*bos));
	priv = calloc(1, a.priv_data_size);
	a.devices = (uint64_t)(uintptr_t)devs;
	a.bos = (uint64_t)(uintptr_t)bos;
	a.priv_data = (uint64_t)(uintptr_t)priv;
	r = criu_op(kfd, &a, KFD_CRIU_OP_CHECKPOINT);
	if (!tap_errno(r, 0, "%s: CHECKPOINT of the restored process", pfx))
		goto unpause;

	for (uint32_t i = 0; i < rb->a.num_devices; i++) {
		bool hit = false;

		for (uint32_t j = 0; j < a.num_devices; j++)
			hit |= devs[j].user_gpu_id == rb->devs[i].user_gpu_id &&
			       devs[j].actual_gpu_id == rb->devs[i].actual_gpu_id;
		dev_ok &= hit;
	}
	tap_ok(dev_ok, "%s: re-dump device buckets pair each user gpu id with its new actual id",
	       pfx);

	for (uint32_t k = 0; k < a.num_bos; k++) {
		const struct kfd_criu_bo_bucket *n = &bos[k];
		uint32_t j, actual = actual_of(rb, n->gpu_id);

		for (j = 0; j < st->info.num_bos; j++)
			if (st->bos[j].addr == n->addr && st->bos[j].gpu_id == n->gpu_id)
				break;
		if (j == st->info.num_bos || st->bos[j].size != n->size ||
		    st->bos[j].alloc_flags != n->alloc_flags) {
			tap_diag("%s: re-dumped BO va 0x%llx gpu 0x%x has no twin in the dump", pfx,
				 (unsigned long long)n->addr, n->gpu_id);
			bo_ok = false;
			continue;
		}
		if (n->alloc_flags & ALLOC_DOORBELL)
			off_ok &= n->offset == (MMAP_TYPE_DOORBELL | MMAP_GPU_ID(actual));
		else if (n->alloc_flags & ALLOC_MMIO)
			off_ok &= n->offset == (MMAP_TYPE_MMIO | MMAP_GPU_ID(actual));
		else if (n->alloc_flags & (ALLOC_VRAM | ALLOC_GTT))
			off_ok &= n->offset == rb->bos[j].restored_offset;
		if (n->dmabuf_fd != KFD_INVALID_FD)
			close((int)n->dmabuf_fd);

		if (blob_has_61_layout(st)) {
			struct bo_priv61 o, m;

			bo_priv_at(st->priv, blob_bo_priv(st, j), &o);
			bo_priv_at(priv, blob_bo_priv(st, k), &m);
			if (o.user_addr != m.user_addr || o.idr != m.idr ||
			    !same_mapped_set(o.mapped, m.mapped)) {
				tap_diag("%s: va 0x%llx: idr %u/%u user_addr 0x%llx/0x%llx", pfx,
					 (unsigned long long)n->addr, o.idr, m.idr,
					 (unsigned long long)o.user_addr,
					 (unsigned long long)m.user_addr);
				priv_ok = false;
			}
		}
	}
	tap_ok(bo_ok, "%s: re-dump has every BO at the same VA, size, flags and user gpu id", pfx);
	tap_ok(off_ok, "%s: re-dump offsets are the restored ones (render / TYPE|GPU_ID(actual))",
	       pfx);
	if (blob_has_61_layout(st))
		tap_ok(priv_ok, "%s: re-dump keeps idr handles, userptr addresses, mapped GPUs (§2.4)",
		       pfx);
	else
		tap_skip("blob not in the 6.1 layout", "%s: re-dump keeps idr handles", pfx);
unpause:
	memset(&a, 0, sizeof(a));
	criu_op(kfd, &a, KFD_CRIU_OP_UNPAUSE);
}

/*
 * The plugin's cross-node case - same GPU models, other gpu ids (§2.4) -
 * when there are two GPUs to swap, then a re-dump of the restored process.
 */
static void restore_redump_child(struct ctx *ctx, void *arg)
{
	struct child_arg *ca = arg;
	bool rotate = ctx->n_gpus >= 2;
	const char *pfx = rotate ? "RESTORE rotated" : "RESTORE again";
	struct restore_buf rb;
	int kfd = open_kfd(), r;

	if (kfd < 0 || build_restore(ca->st, &rb, rotate)) {
		tap_ok(false, "%s setup", pfx);
		return;
	}
	r = criu_op(kfd, &rb.a, KFD_CRIU_OP_RESTORE);
	if (!tap_errno(r, 0, "%s: RESTORE into another fresh process%s (§2.4)", pfx,
		       rotate ? " with actual_gpu_id != user_gpu_id" : ""))
		return;
	if (rotate)
		check_restored_buckets(ca->st, &rb, pfx);
	redump_check(ca->st, &rb, kfd, pfx);
}

static pid_t unused_pid(void)
{
	for (pid_t pid = 4194000; pid > 1000; pid--)
		if (kill(pid, 0) && errno == ESRCH)
			return pid;
	return 0x7ffffff0;
}

static void resume_checks(struct criu_state *st, pid_t rpid)
{
	struct ctx *ctx = st->ctx;
	struct kfd_ioctl_criu_args a;
	int idle[2];
	pid_t ipid;
	char c;

	memset(&a, 0, sizeof(a));
	a.pid = (uint32_t)unused_pid();
	tap_errno(criu_op(ctx->kfd, &a, KFD_CRIU_OP_RESUME), ESRCH,
		  "RESUME of a pid that does not exist -> ESRCH (§2.5)");

	if (!pipe(idle)) {
		ipid = fork();
		if (ipid == 0) {
			close(idle[1]);
			while (read(idle[0], &c, 1) > 0)
				;
			_exit(0);
		}
		close(idle[0]);
		memset(&a, 0, sizeof(a));
		a.pid = (uint32_t)ipid;
		tap_errno(criu_op(ctx->kfd, &a, KFD_CRIU_OP_RESUME), ESRCH,
			  "RESUME of a live process without kfd state -> ESRCH (§2.5)");
		close(idle[1]);
		waitpid(ipid, NULL, 0);
	}

	memset(&a, 0, sizeof(a));
	a.pid = (uint32_t)st->tpid;
	tap_errno(criu_op(ctx->kfd, &a, KFD_CRIU_OP_RESUME), EINVAL,
		  "RESUME of a kfd process with no restore pending -> EINVAL (§2.5)");

	heartbeat_paused(st, "heartbeat: the restored queue stays evicted until RESUME (§2.4)");
	memset(&a, 0, sizeof(a));
	a.pid = (uint32_t)rpid;
	tap_errno(criu_op(ctx->kfd, &a, KFD_CRIU_OP_RESUME), 0,
		  "RESUME of the restored process, by pid, on another process' fd (§2.5)");
	heartbeat_running(st, "heartbeat: the restored queue runs after RESUME (§2.5)");
	memset(&a, 0, sizeof(a));
	a.pid = (uint32_t)rpid;
	tap_errno(criu_op(ctx->kfd, &a, KFD_CRIU_OP_RESUME), EINVAL,
		  "RESUME a second time -> EINVAL (no restore pending, §2.5)");
}

static void restore_target(struct criu_state *st)
{
	struct ctx *ctx = st->ctx;
	struct child_arg ca = { .st = st };
	uint64_t a, b;
	int sp[2];
	pid_t pid;
	char c = 0;

	bool layout = blob_has_61_layout(st);

	for (size_t i = 0; i < sizeof(restore_cases) / sizeof(restore_cases[0]); i++) {
		ca.rc = &restore_cases[i];
		if (ca.rc->mut >= MUT_VERSION && !layout) {
			tap_skip("the emulator's blob is not in the 6.1 layout", "%s", ca.rc->name);
			continue;
		}
		wait_child(run_child(ca.rc->name, restore_bad_child, ctx, &ca), ca.rc->name);
	}

	/* Free the heartbeat word for the restored copy of the queue. */
	tap_ok(target_cmd(st, 'Q'), "target destroys its queue");
	if (!tap_ok(stays_still(&st->ti->rptr, 150, &a, &b),
		    "heartbeat: the target's destroyed queue stops"))
		tap_diag("read pointer %llu -> %llu", (unsigned long long)a, (unsigned long long)b);

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp)) {
		tap_ok(false, "socketpair");
		return;
	}
	ca.sock = sp[1];
	pid = run_child("restore", restore_good_child, ctx, &ca);
	close(sp[1]);
	if (read(sp[0], &c, 1) == 1 && st->ti->restore_ok)
		resume_checks(st, pid);
	if (write(sp[0], "G", 1) != 1)
		tap_diag("restore child went away");
	wait_child(pid, "restore");
	close(sp[0]);

	if (ctx->n_gpus < 2)
		tap_skip("one GPU only", "RESTORE with actual_gpu_id != user_gpu_id");
	wait_child(run_child("restore-redump", restore_redump_child, ctx, &ca), "restore-redump");
}

void test_criu(struct ctx *ctx)
{
	static struct criu_state st;

	test_gatekeeping(ctx);

	st.ctx = ctx;
	st.tkfd = -1;
	st.ti = mmap(NULL, sizeof(*st.ti), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	st.userptr_mem = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0);
	if (st.ti == MAP_FAILED || st.userptr_mem == MAP_FAILED || queue_mem_init(&st.qm)) {
		tap_ok(false, "CRIU test memory");
		return;
	}
	memset(st.userptr_mem, 0x3c, 16384);
	memset((void *)st.ti, 0, sizeof(*st.ti));

	if (target_spawn(&st) && dump_target(&st))
		restore_target(&st);
	if (st.tpid > 0)
		target_finish(&st);
}
