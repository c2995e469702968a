// SPDX-License-Identifier: GPL-2.0-only
/*
 * Secondary KFD contexts (KFD 1.19, AMDKFD_IOC_CREATE_PROCESS) and the
 * profiler ioctl (KFD 1.23, AMDKFD_IOC_PROFILER), as Linux 7.3 has them
 * (kfd_chardev.c, kfd_process.c of 7.3.4).  Compiled only against a header
 * that has them: the 6.1 interface has neither.
 *
 * Everything runs in a child, whose primary context and secondaries go with
 * it.
 */
#include "kfd_test.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef AMDKFD_IOC_CREATE_PROCESS

static bool context_dir_exists(unsigned int id)
{
	char path[96];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d/context_%u", (int)getpid(), id);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int process_info(int kfd, struct kfd_ioctl_criu_args *a)
{
	memset(a, 0, sizeof(*a));
	return criu_op(kfd, a, KFD_CRIU_OP_PROCESS_INFO);
}

static int unpause(int kfd)
{
	struct kfd_ioctl_criu_args a;

	memset(&a, 0, sizeof(a));
	return criu_op(kfd, &a, KFD_CRIU_OP_UNPAUSE);
}

/* CHECKPOINT of the context behind @kfd, as PROCESS_INFO sized it; the number of BO buckets. */
static int checkpoint_bos(int kfd, const struct kfd_ioctl_criu_args *info, uint32_t *n_bos)
{
	struct kfd_criu_device_bucket *devs = calloc(info->num_devices, sizeof(*devs));
	struct kfd_criu_bo_bucket *bos = calloc(info->num_bos ? info->num_bos : 1, sizeof(*bos));
	void *priv = calloc(1, info->priv_data_size);
	struct kfd_ioctl_criu_args a = *info;
	uint32_t i;
	int r;

	a.devices = (uintptr_t)devs;
	a.bos = (uintptr_t)bos;
	a.priv_data = (uintptr_t)priv;
	r = criu_op(kfd, &a, KFD_CRIU_OP_CHECKPOINT);
	if (!r)
		for (i = 0; i < info->num_bos; i++)
			if (bos[i].dmabuf_fd != KFD_INVALID_FD)
				close(bos[i].dmabuf_fd);
	*n_bos = info->num_bos;
	free(devs);
	free(bos);
	free(priv);
	return r;
}

static void contexts_child(struct ctx *ctx, void *arg)
{
	const struct gpu *g = &ctx->gpu[0];
	struct kfd_ioctl_criu_args pinfo, sinfo;
	int kfd1, kfd2, kfd3, render1, render2, r;
	struct bo b1, b2, b3;
	uint32_t n_bos;

	(void)arg;
	kfd1 = open_kfd();
	kfd2 = open_kfd();
	render1 = open_render(g);
	render2 = open_render(g);
	if (!tap_ok(kfd1 >= 0 && kfd2 >= 0 && render1 >= 0 && render2 >= 0,
		    "contexts: two /dev/kfd and two render files open"))
		return;
	tap_errno(acquire_vm(kfd1, render1, g->id), 0, "contexts: primary ACQUIRE_VM");
	tap_errno(bo_alloc(kfd1, &b1, g->id, va_alloc(ctx, 1 << 20), 1 << 20, ALLOC_VRAM | ALLOC_WRITABLE, 0),
		  0, "contexts: primary allocates one VRAM BO");

	/* 7.3 kfd_ioctl_create_process(): the file becomes a new, empty context */
	tap_errno(kfd_ioctl(kfd2, AMDKFD_IOC_CREATE_PROCESS, NULL), 0,
		  "CREATE_PROCESS on a primary's file succeeds (KFD 1.19, Linux 7.3)");
	tap_errno(kfd_ioctl(kfd2, AMDKFD_IOC_CREATE_PROCESS, NULL), EINVAL,
		  "CREATE_PROCESS on a secondary's file -> EINVAL: one context per file (7.3)");
	tap_ok(context_dir_exists(0), "the first secondary is context_0 in sysfs proc/<pid>/ (7.3)");

	/* its own VM: the render file the primary acquired is taken */
	tap_errno(acquire_vm(kfd2, render1, g->id), EINVAL,
		  "secondary cannot ACQUIRE_VM the primary's render file (7.3)");
	tap_errno(acquire_vm(kfd2, render2, g->id), 0, "secondary ACQUIRE_VM of its own render file");
	tap_errno(bo_alloc(kfd2, &b2, g->id, va_alloc(ctx, 1 << 20), 1 << 20, ALLOC_VRAM | ALLOC_WRITABLE, 0),
		  0, "secondary allocates a VRAM BO");
	tap_errno(bo_alloc(kfd2, &b3, g->id, va_alloc(ctx, 1 << 20), 1 << 20, ALLOC_GTT | ALLOC_WRITABLE, 0),
		  0, "secondary allocates a GTT BO");
	{
		void *host = aligned_alloc(PAGE_SZ, PAGE_SZ);
		struct bo u;

		tap_errno(bo_alloc(kfd2, &u, g->id, va_alloc(ctx, PAGE_SZ), PAGE_SZ, ALLOC_USERPTR | ALLOC_WRITABLE,
				   (uintptr_t)host),
			  EOPNOTSUPP, "USERPTR on a secondary -> EOPNOTSUPP (7.3 alloc_memory_of_gpu)");
		free(host);
	}
	{
		struct kfd_ioctl_svm_args s = { .op = KFD_IOCTL_SVM_OP_GET_ATTR, .start_addr = 0x10000000,
						.size = PAGE_SZ };

		tap_errno(kfd_ioctl(kfd2, AMDKFD_IOC_SVM, &s), EOPNOTSUPP,
			  "SVM on a secondary -> EOPNOTSUPP (7.3 kfd_ioctl_svm)");
	}

#if KFD_IOCTL_MINOR_VERSION >= 22
	{
		/* KFD 1.22: create_queue_args.metadata_ring_size, 0 or a power of 2 */
		static volatile uint64_t rptr;
		struct kfd_ioctl_create_queue_args q;
		struct kfd_ioctl_destroy_queue_args d = { 0 };
		struct queue_mem m;

		if (tap_errno(queue_mem_init(&m), 0, "queue memory for the metadata ring checks")) {
			queue_args_init(&q, g->id, &m, &rptr);
			q.metadata_ring_size = 3;
			tap_errno(kfd_ioctl(kfd1, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL,
				  "CREATE_QUEUE with a metadata ring of 3 bytes -> EINVAL (KFD 1.22, 7.3)");
			queue_args_init(&q, g->id, &m, &rptr);
			q.metadata_ring_size = 4096;
			if (tap_errno(kfd_ioctl(kfd1, AMDKFD_IOC_CREATE_QUEUE, &q), 0,
				      "CREATE_QUEUE with a metadata ring of 4 KiB succeeds (KFD 1.22, 7.3)")) {
				d.queue_id = q.queue_id;
				tap_errno(kfd_ioctl(kfd1, AMDKFD_IOC_DESTROY_QUEUE, &d), 0, "DESTROY that queue");
			}
		}
	}
#endif

	{
		struct kfd_ioctl_dbg_trap_args d = { .pid = (uint32_t)getpid(), .op = KFD_IOC_DBG_TRAP_DISABLE };

		tap_errno(kfd_ioctl(kfd2, AMDKFD_IOC_DBG_TRAP, &d), EOPNOTSUPP,
			  "DBG_TRAP on a secondary -> EOPNOTSUPP (7.3 kfd_ioctl_set_debug_trap)");
	}

	/* 7.3's CRIU ops act on the file's context, and refuse none of them */
	r = process_info(kfd1, &pinfo);
	tap_errno(r, 0, "PROCESS_INFO on the primary's file");
	tap_eq(pinfo.num_bos, 1, "primary's PROCESS_INFO counts its own BO only (7.3 criu_process_info)");
	r = process_info(kfd2, &sinfo);
	tap_errno(r, 0, "PROCESS_INFO on the secondary's file succeeds: nothing refuses a secondary (7.3)");
	tap_eq(sinfo.num_bos, 2, "secondary's PROCESS_INFO counts its own 2 BOs (7.3)");
	tap_eq(sinfo.pid, pinfo.pid, "both contexts report the task's pid (7.3)");
	tap_errno(checkpoint_bos(kfd2, &sinfo, &n_bos), 0,
		  "CHECKPOINT of the secondary succeeds (7.3 criu_checkpoint)");
	tap_eq(n_bos, 2, "the secondary's checkpoint holds its 2 BOs");
	tap_errno(unpause(kfd2), 0, "UNPAUSE the secondary");
	tap_errno(unpause(kfd2), EINVAL, "a second UNPAUSE of the secondary -> EINVAL (not paused)");
	tap_errno(unpause(kfd1), 0, "UNPAUSE the primary: paused on its own");

	/* closing the secondary's file destroys it; its id is free again */
	close(kfd2);
	tap_ok(!context_dir_exists(0), "closing a secondary's file removes context_0 (7.3 kfd_release)");
	kfd3 = open_kfd();
	tap_errno(kfd_ioctl(kfd3, AMDKFD_IOC_CREATE_PROCESS, NULL), 0, "CREATE_PROCESS on a new file");
	tap_ok(context_dir_exists(0), "the new secondary takes the lowest free id, 0 (7.3 ida)");

	/* the primary outlives its last file while a secondary lives (7.3) */
	close(kfd1);
	kfd1 = open_kfd();
	tap_errno(process_info(kfd1, &pinfo), 0, "PROCESS_INFO on a reopened primary");
	tap_eq(pinfo.num_bos, 1, "the primary kept its BO with no file open, a secondary alive (7.3)");
	unpause(kfd1);
	close(kfd3);
	close(kfd1);
	close(render1);
	close(render2);
}

void test_contexts(struct ctx *ctx)
{
	if (!ctx->n_gpus) {
		tap_skip("no GPU", "secondary contexts");
		return;
	}
	wait_child(run_child("contexts", contexts_child, ctx, NULL), "contexts");
}

#else

void test_contexts(struct ctx *ctx)
{
	(void)ctx;
}

#endif /* AMDKFD_IOC_CREATE_PROCESS */

#ifdef AMDKFD_IOC_PROFILER

static void profiler_child(struct ctx *ctx, void *arg)
{
	const struct gpu *g = &ctx->gpu[0];
	struct kfd_ioctl_profiler_args a;
	int kfd = open_kfd(), other;

	(void)arg;
	memset(&a, 0, sizeof(a));
	a.op = KFD_IOC_PROFILER_VERSION;
	tap_errno(kfd_ioctl(kfd, AMDKFD_IOC_PROFILER, &a), 0, "PROFILER VERSION (KFD 1.23, Linux 7.3)");
	tap_eq(a.version, KFD_IOC_PROFILER_VERSION_NUM, "PROFILER VERSION reports the header's version");

	memset(&a, 0, sizeof(a));
	a.op = KFD_IOC_PROFILER_PMC;
	a.pmc.gpu_id = g->id;
	a.pmc.lock = 1;
	tap_errno(kfd_ioctl(kfd, AMDKFD_IOC_PROFILER, &a), 0, "PROFILER PMC locks a GPU (7.3, root)");
	tap_errno(kfd_ioctl(kfd, AMDKFD_IOC_PROFILER, &a), EALREADY, "PMC lock again -> EALREADY (7.3)");
	other = open_kfd();
	if (kfd_ioctl(other, AMDKFD_IOC_CREATE_PROCESS, NULL) == 0)
		tap_errno(kfd_ioctl(other, AMDKFD_IOC_PROFILER, &a), EBUSY,
			  "PMC lock by another context -> EBUSY (7.3)");
	close(other);
	a.pmc.lock = 0;
	tap_errno(kfd_ioctl(kfd, AMDKFD_IOC_PROFILER, &a), 0, "PMC unlock by the holder");
	tap_errno(kfd_ioctl(kfd, AMDKFD_IOC_PROFILER, &a), EINVAL, "PMC unlock without the lock -> EINVAL (7.3)");
	a.pmc.gpu_id = ctx->bogus_gpu_id;
	tap_errno(kfd_ioctl(kfd, AMDKFD_IOC_PROFILER, &a), EINVAL, "PMC on an unknown gpu_id -> EINVAL (7.3)");

	memset(&a, 0, sizeof(a));
	a.op = KFD_IOC_PROFILER_PTL_CONTROL;
	a.ptl.gpu_id = g->id;
	tap_errno(kfd_ioctl(kfd, AMDKFD_IOC_PROFILER, &a), EOPNOTSUPP,
		  "PTL_CONTROL on a GPU without PTL -> EOPNOTSUPP (7.3)");
	memset(&a, 0, sizeof(a));
	a.op = 1;
	tap_errno(kfd_ioctl(kfd, AMDKFD_IOC_PROFILER, &a), EINVAL, "PROFILER op 1 (none) -> EINVAL (7.3)");
	close(kfd);
}

void test_profiler(struct ctx *ctx)
{
	if (!ctx->n_gpus) {
		tap_skip("no GPU", "profiler");
		return;
	}
	wait_child(run_child("profiler", profiler_child, ctx, NULL), "profiler");
}

#else

void test_profiler(struct ctx *ctx)
{
	(void)ctx;
}

#endif /* AMDKFD_IOC_PROFILER */
