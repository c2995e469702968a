// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/class/kfd/kfd/proc/<pid>: the directory KFD keeps for each of its processes, as 6.1 and
 * 7.3 make it (kfd_process.c), and what its vram_<gpu_id> files count (kfd_chardev.c, the same
 * in both): ALLOC_MEMORY_OF_GPU in VRAM adds the size in whole pages (half of it for AQL queue
 * memory), FREE takes the buffer's size back, and IMPORT_DMABUF of a buffer another process
 * made adds nothing, nor does freeing it. After a CRIU RESTORE the count is that of the restored
 * VRAM buckets (test_criu.c).
 *
 * Each check runs in a child: a fresh KFD process, whose directory comes and goes with it.
 */
#include "kfd_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <drm/amdgpu_drm.h>
#include <drm/drm.h>

#define PROC_DIR "/sys/class/kfd/kfd/proc"

/* proc/<pid>/<rel> as text; false if it cannot be read. */
static bool proc_text(pid_t pid, const char *rel, char *buf, size_t size)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PROC_DIR "/%d/%s", (int)pid, rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

static bool proc_dir_exists(pid_t pid, const char *rel)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), PROC_DIR "/%d/%s", (int)pid, rel);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Bytes of VRAM that proc/<pid>/vram_<gpu_id> reports, or -1 if there is no such file. */
static int64_t vram_of(pid_t pid, uint32_t gpu_id)
{
	uint64_t bytes;

	return kfd_proc_vram(pid, gpu_id, &bytes) ? -1 : (int64_t)bytes;
}

/* The entries of proc/<pid>/@rel are exactly @want (@n names). */
static bool dir_holds(pid_t pid, const char *rel, char want[][24], unsigned int n)
{
	char path[256];
	unsigned int seen = 0;
	struct dirent *d;
	bool ok = true;
	DIR *dir;

	snprintf(path, sizeof(path), PROC_DIR "/%d/%s", (int)pid, rel);
	dir = opendir(path);
	if (!dir)
		return false;
	while ((d = readdir(dir))) {
		bool known = false;

		if (d->d_name[0] == '.')
			continue;
		for (unsigned int i = 0; i < n; i++)
			known |= !strcmp(d->d_name, want[i]);
		if (!known)
			tap_diag("unexpected entry %s/%s", path, d->d_name);
		ok &= known;
		seen++;
	}
	closedir(dir);
	return ok && seen == n;
}

/*
 * What a process' directory (@rel: "." or 7.3's "context_<id>") holds before it does anything:
 * pasid, queues/ and, for every GPU, vram_, sdma_ and stats_ with 0 in each.
 */
static void check_fresh_dir(const struct ctx *ctx, pid_t pid, const char *rel, const char *what)
{
	char want[2 + 3 * MAX_GPUS][24], path[96], text[64];
	unsigned int n = 0;
	bool zeros = true;

	snprintf(want[n++], sizeof(want[0]), "pasid");
	snprintf(want[n++], sizeof(want[0]), "queues");
	for (unsigned int i = 0; i < ctx->n_gpus; i++) {
		static const char *const files[] = { "vram_%u", "sdma_%u", "stats_%u/evicted_ms",
						     "stats_%u/cu_occupancy" };

		snprintf(want[n++], sizeof(want[0]), "vram_%u", ctx->gpu[i].id);
		snprintf(want[n++], sizeof(want[0]), "sdma_%u", ctx->gpu[i].id);
		snprintf(want[n++], sizeof(want[0]), "stats_%u", ctx->gpu[i].id);
		for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
			char name[48];

			snprintf(name, sizeof(name), files[f], ctx->gpu[i].id);
			snprintf(path, sizeof(path), "%s/%s", rel, name);
			if (!proc_text(pid, path, text, sizeof(text)) || strcmp(text, "0\n")) {
				tap_diag("%s: %s reads '%s'", what, path, text);
				zeros = false;
			}
		}
	}
	tap_ok(dir_holds(pid, rel, want, n),
	       "%s: pasid, queues/ and per GPU vram_, sdma_, stats_<gpu_id>, nothing else "
	       "(no SVM: no counters_) (6.1/7.3 kfd_process.c)", what);
	tap_ok(zeros, "%s: vram_, sdma_, stats_/evicted_ms, stats_/cu_occupancy of every GPU read "
		      "\"0\\n\"", what);
	snprintf(path, sizeof(path), "%s/queues", rel);
	tap_ok(dir_holds(pid, path, want, 0), "%s: queues/ is empty", what);
}

static void check_pasid(pid_t pid)
{
	char text[32];
	bool read = proc_text(pid, "pasid", text, sizeof(text));

#ifdef AMDKFD_IOC_CREATE_PROCESS
	tap_ok(read && !strcmp(text, "0\n"), "pasid reads 0: PASIDs are per device (7.3)");
#else
	unsigned long v = read ? strtoul(text, NULL, 10) : 0;

	tap_ok(v >= 1 && v <= 0xffff && strchr(text, '\n'),
	       "pasid reads the process' PASID, 1..0xffff (6.1)");
#endif
}

/* queues/<id>/{size,type,gpuid}: numbers without a newline, type the kernel's own number. */
static void check_queue_dir(pid_t pid, uint32_t qid, uint32_t size, unsigned int type,
			    uint32_t gpu_id, const char *what)
{
	char path[64], text[32], want[32];
	bool ok = true;

	snprintf(path, sizeof(path), "queues/%u/size", qid);
	snprintf(want, sizeof(want), "%u", size);
	ok &= proc_text(pid, path, text, sizeof(text)) && !strcmp(text, want);
	snprintf(path, sizeof(path), "queues/%u/type", qid);
	snprintf(want, sizeof(want), "%u", type);
	ok &= proc_text(pid, path, text, sizeof(text)) && !strcmp(text, want);
	snprintf(path, sizeof(path), "queues/%u/gpuid", qid);
	snprintf(want, sizeof(want), "%u", gpu_id);
	ok &= proc_text(pid, path, text, sizeof(text)) && !strcmp(text, want);
	tap_ok(ok, "%s: queues/%u holds size %u, type %u, gpuid %u", what, qid, size, type,
	       gpu_id);
}

static void check_queues(struct ctx *ctx, int kfd, uint32_t gpu_id)
{
	struct kfd_ioctl_create_queue_args aql, sdma;
	struct kfd_ioctl_destroy_queue_args d;
	static volatile uint64_t rptr[2];
	struct queue_mem m1, m2;
	pid_t pid = getpid();
	char rel[32];

	(void)ctx;
	if (queue_mem_init(&m1) || queue_mem_init(&m2)) {
		tap_ok(false, "queue memory");
		return;
	}
	queue_args_init(&aql, gpu_id, &m1, &rptr[0]);
	queue_args_init(&sdma, gpu_id, &m2, &rptr[1]);
	sdma.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
	if (kfd_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &aql) ||
	    kfd_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &sdma)) {
		tap_ok(false, "CREATE_QUEUE compute AQL and SDMA");
		return;
	}
	check_queue_dir(pid, aql.queue_id, 4096, 0, gpu_id, "a compute AQL queue");
	check_queue_dir(pid, sdma.queue_id, 4096, 1, gpu_id, "an SDMA queue");

	d = (struct kfd_ioctl_destroy_queue_args){ .queue_id = aql.queue_id };
	kfd_ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &d);
	snprintf(rel, sizeof(rel), "queues/%u", aql.queue_id);
	tap_ok(!proc_dir_exists(pid, rel) && proc_dir_exists(pid, "queues"),
	       "DESTROY_QUEUE removes queues/%u", aql.queue_id);
	d = (struct kfd_ioctl_destroy_queue_args){ .queue_id = sdma.queue_id };
	kfd_ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &d);
}

/* A buffer another process made, shared as a dma-buf fd the child inherits. */
struct shared_buf {
	int fd;
	uint64_t size;
	const char *how;
};

struct procfs_arg {
	uint32_t a, b;			/* two GPUs, or the same one twice */
	struct shared_buf shared[2];
	unsigned int n_shared;
};

static void check_import(struct ctx *ctx, int kfd, const struct procfs_arg *pa)
{
	pid_t pid = getpid();

	for (unsigned int i = 0; i < pa->n_shared; i++) {
		const struct shared_buf *s = &pa->shared[i];
		struct kfd_ioctl_import_dmabuf_args im = {
			.va_addr = va_alloc(ctx, s->size),
			.gpu_id = pa->a,
			.dmabuf_fd = (uint32_t)s->fd,
		};
		int64_t before = vram_of(pid, pa->a);
		int r = kfd_ioctl(kfd, AMDKFD_IOC_IMPORT_DMABUF, &im);

		if (!tap_errno(r, 0, "IMPORT_DMABUF of another process' VRAM buffer (%s)", s->how))
			continue;
		tap_eq((uint64_t)vram_of(pid, pa->a), (uint64_t)before,
		       "vram_%u: an imported VRAM buffer (%s) does not count (6.1/7.3)", pa->a,
		       s->how);
		tap_errno(bo_free(kfd, im.handle), 0, "FREE of the imported buffer");
		tap_eq((uint64_t)vram_of(pid, pa->a), (uint64_t)before,
		       "vram_%u: freeing the imported buffer takes nothing off (6.1/7.3)", pa->a);
	}
}

/* The child: a fresh KFD process counting its VRAM. */
static void procfs_child(struct ctx *ctx, void *arg)
{
	const struct procfs_arg *pa = arg;
	const uint32_t vram = ALLOC_VRAM | ALLOC_WRITABLE | ALLOC_PUBLIC;
	uint64_t want_a = 0, want_b = 0;
	struct bo a64k, a10k, aql, va0, gtt, b128k;
	int rfd[MAX_GPUS], kfd = open_kfd(), r;
	pid_t pid = getpid();

	if (!tap_ok(kfd >= 0 && proc_dir_exists(pid, "."),
		    "open() of /dev/kfd makes " PROC_DIR "/<pid> (6.1/7.3 kfd_create_process)"))
		return;
	check_fresh_dir(ctx, pid, ".", "a new process");
	check_pasid(pid);

	r = acquire_all(ctx, kfd, rfd);
	r = r ?: bo_alloc(kfd, &a64k, pa->a, va_alloc(ctx, 65536), 65536, vram, 0);
	r = r ?: bo_alloc(kfd, &a10k, pa->a, va_alloc(ctx, 10000), 10000, vram, 0);
	r = r ?: bo_alloc(kfd, &aql, pa->a, va_alloc(ctx, 3 * PAGE_SZ), 3 * PAGE_SZ,
			  vram | KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM, 0);
	r = r ?: bo_alloc(kfd, &va0, pa->a, 0, PAGE_SZ, vram, 0);
	r = r ?: bo_alloc(kfd, &gtt, pa->a, va_alloc(ctx, 65536), 65536, ALLOC_GTT | ALLOC_WRITABLE,
			  0);
	r = r ?: bo_alloc(kfd, &b128k, pa->b, va_alloc(ctx, 131072), 131072, vram, 0);
	if (!tap_errno(r, 0, "ACQUIRE_VM on every GPU, ALLOC of VRAM on two GPUs and of GTT"))
		return;
	/* 10000 bytes are 3 pages; AQL memory of 3 pages is 1.5, rounded up to 2 */
	want_a += 65536 + 3 * PAGE_SZ + 2 * PAGE_SZ + PAGE_SZ;
	*(pa->a == pa->b ? &want_a : &want_b) += 131072;
	tap_eq((uint64_t)vram_of(pid, pa->a), want_a,
	       "vram_%u: the VRAM allocated on it in whole pages, AQL memory half, VA 0 included, "
	       "GTT not (6.1/7.3 kfd_ioctl_alloc_memory_of_gpu)", pa->a);
	if (pa->a != pa->b)
		tap_eq((uint64_t)vram_of(pid, pa->b), want_b,
		       "vram_%u: the other GPU's file counts that GPU's VRAM only", pa->b);

	r = bo_free(kfd, a64k.handle);
	want_a -= 65536;
	tap_ok(!r && vram_of(pid, pa->a) == (int64_t)want_a,
	       "vram_%u: FREE of a 64 KiB VRAM buffer takes 64 KiB off (6.1/7.3)", pa->a);
	r = bo_free(kfd, b128k.handle);
	*(pa->a == pa->b ? &want_a : &want_b) -= 131072;
	tap_ok(!r && vram_of(pid, pa->b) == (int64_t)(pa->a == pa->b ? want_a : want_b),
	       "vram_%u: FREE on the other GPU takes its size off there", pa->b);

	check_import(ctx, kfd, pa);
	check_queues(ctx, kfd, pa->a);

	r = bo_free(kfd, a10k.handle) ?: bo_free(kfd, aql.handle) ?: bo_free(kfd, va0.handle) ?:
	    bo_free(kfd, gtt.handle);
	tap_ok(!r && vram_of(pid, pa->a) == 0 && vram_of(pid, pa->b) == 0,
	       "vram_ of both GPUs read 0 once every buffer is freed");
}

/* A VRAM buffer of the render node, exported as a dma-buf (any kernel). */
static int gem_vram_dmabuf(const struct gpu *g, uint64_t size)
{
	union drm_amdgpu_gem_create c = { .in = { .bo_size = size,
						  .alignment = PAGE_SZ,
						  .domains = AMDGPU_GEM_DOMAIN_VRAM } };
	struct drm_prime_handle pr = { .flags = DRM_CLOEXEC | DRM_RDWR };
	int r = kfd_ioctl(g->render_fd, DRM_IOCTL_AMDGPU_GEM_CREATE, &c);

	if (r)
		return r;
	pr.handle = c.out.handle;
	r = kfd_ioctl(g->render_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &pr);
	return r ?: pr.fd;
}

#ifdef AMDKFD_IOC_CREATE_PROCESS
/* 7.3: a secondary context has a directory of its own in its primary's, and its own counts. */
static void context_child(struct ctx *ctx, void *arg)
{
	const struct procfs_arg *pa = arg;
	int primary = open_kfd(), secondary = open_kfd(), rfd = open_render(gpu_by_id(ctx, pa->a));
	pid_t pid = getpid();
	struct bo bo;
	int r;

	if (primary < 0 || secondary < 0 || rfd < 0 ||
	    kfd_ioctl(secondary, AMDKFD_IOC_CREATE_PROCESS, NULL)) {
		tap_ok(false, "a primary and a secondary context");
		return;
	}
	check_fresh_dir(ctx, pid, "context_0", "a new secondary context_0 (7.3)");
	r = acquire_vm(secondary, rfd, pa->a);
	r = r ?: bo_alloc(secondary, &bo, pa->a, va_alloc(ctx, 65536), 65536,
			  ALLOC_VRAM | ALLOC_WRITABLE, 0);
	if (!tap_errno(r, 0, "the secondary allocates 64 KiB of VRAM"))
		return;
	tap_eq((uint64_t)vram_of(pid, pa->a), 0,
	       "vram_%u of the primary leaves out its secondary's buffers (7.3)", pa->a);
	{
		char rel[48], text[32];

		snprintf(rel, sizeof(rel), "context_0/vram_%u", pa->a);
		tap_ok(proc_text(pid, rel, text, sizeof(text)) && !strcmp(text, "65536\n"),
		       "context_0/vram_%u counts the secondary's 64 KiB (7.3)", pa->a);
	}
	close(secondary);
	tap_ok(!proc_dir_exists(pid, "context_0") && proc_dir_exists(pid, "."),
	       "closing the secondary's file removes context_0, the primary's directory stays");
	close(primary);
	close(rfd);
}
#endif

void test_kfd_procfs(struct ctx *ctx)
{
	const struct gpu *a = &ctx->gpu[0];
	struct procfs_arg pa = {
		.a = a->id,
		.b = ctx->gpu[ctx->n_gpus > 1 ? 1 : 0].id,
	};
	int64_t parent_before = vram_of(getpid(), a->id);
	struct bo exported = { 0 };
	bool gone = false;
	pid_t pid;
	int fd;

	tap_ok(parent_before >= 0, "this process has " PROC_DIR "/<pid>/vram_%u", a->id);
	fd = gem_vram_dmabuf(a, 1 << 20);
	if (tap_ok(fd >= 0, "a render-node VRAM buffer exported as a dma-buf (PRIME)"))
		pa.shared[pa.n_shared++] = (struct shared_buf){ fd, 1 << 20, "render node, PRIME" };
	tap_eq((uint64_t)vram_of(getpid(), a->id), (uint64_t)parent_before,
	       "vram_%u: a render-node buffer is not KFD's to count", a->id);
#if KFD_IOCTL_MINOR_VERSION >= 12
	{
		struct kfd_ioctl_export_dmabuf_args ex = { .flags = O_CLOEXEC };

		if (!bo_alloc(ctx->kfd, &exported, a->id, va_alloc(ctx, 1 << 20), 1 << 20,
			      ALLOC_VRAM | ALLOC_WRITABLE | ALLOC_PUBLIC, 0)) {
			tap_eq((uint64_t)vram_of(getpid(), a->id),
			       (uint64_t)parent_before + (1 << 20),
			       "vram_%u of the exporter counts its 1 MiB", a->id);
			ex.handle = exported.handle;
			if (tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_EXPORT_DMABUF, &ex), 0,
				      "EXPORT_DMABUF of it (KFD 1.12)"))
				pa.shared[pa.n_shared++] = (struct shared_buf){
					(int)ex.dmabuf_fd, 1 << 20, "KFD export"
				};
		}
	}
#endif

	pid = run_child("proc/<pid>", procfs_child, ctx, &pa);
	wait_child(pid, "proc/<pid>");
	/* KFD removes it once the process is gone; the emulator at its teardown */
	for (int t = 0; t < 100 && !gone; t++) {
		gone = !proc_dir_exists(pid, ".");
		if (!gone)
			sleep_ms(20);
	}
	tap_ok(gone, "the directory of a process goes when it exits");

#ifdef AMDKFD_IOC_CREATE_PROCESS
	pid = run_child("context_<id>", context_child, ctx, &pa);
	wait_child(pid, "context_<id>");
#endif
	for (unsigned int i = 0; i < pa.n_shared; i++)
		close(pa.shared[i].fd);
	if (exported.handle)
		bo_free(ctx->kfd, exported.handle);
}
