// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: command submission to the DMA IP and the SDMA 4.x engine that
 * executes it.
 *
 * AMDGPU_CS validates the chunks as amdgpu_cs.c does, gives the job the next
 * sequence number of its (context, ring) and queues it on the GPU's ordered
 * workqueue, so submissions run asynchronously and in order, one at a time,
 * like on one SDMA engine.  The worker reads each IB through the submitting
 * file's GPU VM and executes its packets on the CPU, page by page with
 * kmap_local_page.  An unmapped address, a missing permission or a packet the
 * engine does not know is a fault: the job ends with -ETIME (the timeout a
 * hung engine would give), the context becomes guilty, later jobs of it are
 * skipped (-ECANCELED) and new CS on it fail with -ECANCELED.  Jobs hold
 * references to their file (and so its VM), context, BO list and every BO
 * they touch while touching it.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/uaccess.h>
#include <linux/ktime.h>
#include <linux/delay.h>
#include <linux/sched.h>
#include <linux/wait.h>
#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/amdgpu_drm.h>

#include "emu.h"

/* SDMA 4.x packet opcodes and fields (the header is op 7:0, sub_op 15:8) */
#define SDMA_OP_NOP		0
#define SDMA_OP_COPY		1
#define SDMA_OP_WRITE		2
#define SDMA_OP_FENCE		5
#define SDMA_OP_TRAP		6
#define SDMA_OP_CONST_FILL	11
#define SDMA_SUBOP_COPY_LINEAR	0
#define SDMA_SUBOP_WRITE_LINEAR	0
#define SDMA_COPY_BROADCAST	BIT(27)
#define SDMA_NOP_COUNT(h)	(((h) >> 16) & 0x3fff)
#define SDMA_COUNT_22(d)	((d) & 0x3fffff)
#define SDMA_COUNT_20(d)	((d) & 0xfffff)
#define SDMA_IB_MAX_DW		0xfffff		/* the IB packet's size field */
#define SDMA_IB_ADDR_MASK	(~0x1fULL)	/* IBs start 32-byte aligned */

#define EMU_SDMA_THROTTLE_STEP	(256 << 10)

unsigned int emu_sdma_mbps;

static DECLARE_WAIT_QUEUE_HEAD(emu_bo_idle_wq);

struct emu_ib {
	u64 va;
	u32 bytes;
};

struct emu_job {
	struct work_struct work;
	struct emu_gpu *gpu;
	struct emu_drm_file *ef;
	struct emu_ctx *ctx;
	struct emu_bo_list *list;
	struct emu_bo *uf_bo;		/* user fence, optional */
	u64 uf_offset;
	unsigned int ring;
	u64 seq;
	/* execution state */
	ktime_t start;
	u64 bytes;
	u64 throttled;
	u64 fault_va;
	const char *fault;
	unsigned int n_ibs;
	struct emu_ib ibs[];
};

/* ---- the engine ----------------------------------------------------------- */

static int emu_job_fault(struct emu_job *job, u64 va, const char *what)
{
	job->fault_va = va;
	job->fault = what;
	return -EFAULT;
}

/* Honour sdma_mbps, and give the CPU away now and then. */
static void emu_job_account(struct emu_job *job, u64 n)
{
	unsigned int mbps = READ_ONCE(emu_sdma_mbps);
	s64 ahead_us;

	job->bytes += n;
	atomic64_add(n, &job->gpu->sdma_bytes);
	if (job->bytes - job->throttled < EMU_SDMA_THROTTLE_STEP)
		return;
	job->throttled = job->bytes;
	if (mbps) {
		/* MB/s is bytes per microsecond */
		ahead_us = div_u64(job->bytes, mbps) -
			ktime_us_delta(ktime_get(), job->start);
		if (ahead_us > 20000)
			msleep(div_u64(ahead_us, 1000));
		else if (ahead_us > 10)
			usleep_range(ahead_us, ahead_us + 50);
	}
	cond_resched();
}

static void emu_seg_put(struct emu_vm_seg *seg)
{
	if (seg->bo)
		emu_bo_put(seg->bo);
	seg->bo = NULL;
	seg->len = 0;
}

/* Make @seg cover @va, resolving it anew once the previous stretch ran out. */
static int emu_seg_at(struct emu_job *job, struct emu_vm_seg *seg, u64 va, bool write)
{
	if (seg->len)
		return 0;
	emu_seg_put(seg);
	if (emu_vm_resolve(&job->ef->vm, va, write, seg))
		return emu_job_fault(job, va, write ? "write" : "read");
	return 0;
}

static void *emu_seg_map(struct emu_vm_seg *seg, unsigned int *room)
{
	unsigned int in_page = offset_in_page(seg->offset);

	*room = min_t(u64, PAGE_SIZE - in_page, seg->len);
	return kmap_local_page(seg->bo->pages[seg->offset >> PAGE_SHIFT]) + in_page;
}

static void emu_seg_advance(struct emu_vm_seg *seg, unsigned int n)
{
	seg->offset += n;
	seg->len -= n;
}

/* COPY_LINEAR: GPU VA to GPU VA. */
static int emu_sdma_copy(struct emu_job *job, u64 dst, u64 src, u64 len)
{
	struct emu_vm_seg s = {}, d = {};
	unsigned int sroom, droom, n;
	void *sp, *dp;
	int ret = 0;

	while (len) {
		ret = emu_seg_at(job, &s, src, false);
		if (!ret)
			ret = emu_seg_at(job, &d, dst, true);
		if (ret)
			break;
		sp = emu_seg_map(&s, &sroom);
		dp = emu_seg_map(&d, &droom);
		n = min3((u64)sroom, (u64)droom, len);
		memmove(dp, sp, n);
		kunmap_local(dp);
		kunmap_local(sp);
		emu_seg_advance(&s, n);
		emu_seg_advance(&d, n);
		src += n;
		dst += n;
		len -= n;
		emu_job_account(job, n);
	}
	emu_seg_put(&s);
	emu_seg_put(&d);
	return ret;
}

/*
 * Move @len bytes between a kernel buffer and GPU VAs: @to_gpu writes @buf
 * to @va, otherwise @buf is filled from @va.  A NULL @buf with @to_gpu fills
 * with the 32-bit @pattern, aligned to the destination address.
 */
static int emu_sdma_access(struct emu_job *job, u64 va, void *buf, u64 len,
			   bool to_gpu, u32 pattern)
{
	struct emu_vm_seg seg = {};
	unsigned int room, n, i;
	u8 *p;
	int ret = 0;

	while (len) {
		ret = emu_seg_at(job, &seg, va, to_gpu);
		if (ret)
			break;
		p = emu_seg_map(&seg, &room);
		n = min_t(u64, room, len);
		if (!to_gpu) {
			memcpy(buf, p, n);
		} else if (buf) {
			memcpy(p, buf, n);
		} else if (!pattern) {
			memset(p, 0, n);
		} else {
			for (i = 0; i < n; i++)
				p[i] = pattern >> (8 * ((va + i) & 3));
		}
		kunmap_local(p);
		if (buf)
			buf += n;
		emu_seg_advance(&seg, n);
		va += n;
		len -= n;
		if (!buf)
			emu_job_account(job, n);
	}
	emu_seg_put(&seg);
	return ret;
}

static u64 emu_pkt_addr(const u32 *dw)
{
	return ((u64)dw[1] << 32 | dw[0]) & EMU_GMC_HOLE_MASK;
}

/* Execute the packets of one IB; -EFAULT on a VM fault or an illegal packet. */
static int emu_sdma_exec(struct emu_job *job, const u32 *ib, u32 ndw, u64 ib_va)
{
	u32 i = 0, hdr, op, sub, n;
	int ret = 0;

	while (i < ndw && !ret) {
		hdr = ib[i];
		op = hdr & 0xff;
		sub = (hdr >> 8) & 0xff;
		switch (op) {
		case SDMA_OP_NOP:
			i += 1 + SDMA_NOP_COUNT(hdr);
			continue;
		case SDMA_OP_COPY:
			if (sub != SDMA_SUBOP_COPY_LINEAR || (hdr & SDMA_COPY_BROADCAST))
				break;
			if (ndw - i < 7)
				break;
			/* SDMA 4.x: the count field is bytes - 1 */
			ret = emu_sdma_copy(job, emu_pkt_addr(&ib[i + 5]),
					    emu_pkt_addr(&ib[i + 3]),
					    (u64)SDMA_COUNT_22(ib[i + 1]) + 1);
			i += 7;
			continue;
		case SDMA_OP_WRITE:
			if (sub != SDMA_SUBOP_WRITE_LINEAR || ndw - i < 4)
				break;
			n = SDMA_COUNT_20(ib[i + 3]) + 1;
			if (ndw - i - 4 < n)
				break;
			ret = emu_sdma_access(job, emu_pkt_addr(&ib[i + 1]) & ~3ULL,
					      (void *)&ib[i + 4], n * 4ULL, true, 0);
			i += 4 + n;
			continue;
		case SDMA_OP_FENCE:
			if (ndw - i < 4)
				break;
			ret = emu_sdma_access(job, emu_pkt_addr(&ib[i + 1]) & ~3ULL,
					      (void *)&ib[i + 3], 4, true, 0);
			i += 4;
			continue;
		case SDMA_OP_TRAP:
			/* an interrupt the driver only uses for its own fences */
			if (ndw - i < 2)
				break;
			i += 2;
			continue;
		case SDMA_OP_CONST_FILL:
			if (ndw - i < 5)
				break;
			ret = emu_sdma_access(job, emu_pkt_addr(&ib[i + 1]), NULL,
					      (u64)SDMA_COUNT_22(ib[i + 4]) + 1, true,
					      ib[i + 3]);
			i += 5;
			continue;
		default:
			break;
		}
		/* an unknown packet or one cut off by the end of the IB */
		return emu_job_fault(job, ib_va + i * 4ULL, "illegal packet");
	}
	return ret;
}

static int emu_sdma_run_ib(struct emu_job *job, const struct emu_ib *ib)
{
	u32 ndw = ib->bytes / 4;
	u64 va = ib->va & SDMA_IB_ADDR_MASK & EMU_GMC_HOLE_MASK;
	u32 *buf;
	int ret;

	if (!ndw)
		return 0;
	if (ndw > SDMA_IB_MAX_DW)
		return emu_job_fault(job, va, "IB too large");
	buf = kvmalloc_array(ndw, sizeof(u32), GFP_KERNEL);
	if (!buf)
		return emu_job_fault(job, va, "IB fetch (out of memory)");
	ret = emu_sdma_access(job, va, buf, ndw * 4ULL, false, 0);
	if (!ret)
		ret = emu_sdma_exec(job, buf, ndw, va);
	kvfree(buf);
	return ret;
}

static void emu_job_free(struct emu_job *job)
{
	unsigned int i;

	if (job->list) {
		for (i = 0; i < job->list->n; i++)
			atomic_dec(&job->list->bos[i]->busy);
		wake_up_all(&emu_bo_idle_wq);
		emu_bo_list_put(job->list);
	}
	if (job->uf_bo)
		emu_bo_put(job->uf_bo);
	if (job->ctx)
		emu_ctx_put(job->ctx);
	if (job->ef)
		emu_drm_file_put(job->ef);
	kfree(job);
}

static void emu_job_work(struct work_struct *work)
{
	struct emu_job *job = container_of(work, struct emu_job, work);
	struct emu_ctx *ctx = job->ctx;
	unsigned int i;
	int ret = 0;
	u64 seq = job->seq;

	job->start = ktime_get();
	if (READ_ONCE(ctx->guilty))
		ret = -ECANCELED;
	for (i = 0; i < job->n_ibs && !ret; i++)
		ret = emu_sdma_run_ib(job, &job->ibs[i]);

	if (ret == -EFAULT) {
		pr_warn_ratelimited(EMU_NAME ": [sdma] GPU %u: %s fault at 0x%llx, ctx %u ring %u seq %llu; context guilty\n",
				    job->gpu->index, job->fault, job->fault_va,
				    ctx->id, job->ring, seq);
		atomic_inc(&job->gpu->reset_counter);
	} else if (!ret && job->uf_bo) {
		if (emu_bo_has_pages(job->uf_bo)) {
			u64 off = job->uf_offset;
			void *p = kmap_local_page(job->uf_bo->pages[off >> PAGE_SHIFT]);

			memcpy(p + offset_in_page(off), &seq, sizeof(seq));
			kunmap_local(p);
		}
	}

	spin_lock(&ctx->lock);
	if (ret == -EFAULT) {
		ctx->guilty = true;
		ctx->bad_seq[job->ring] = seq;
	} else if (ret == -ECANCELED && !ctx->cancel_from[job->ring]) {
		ctx->cancel_from[job->ring] = seq;
	}
	ctx->signaled[job->ring] = seq;
	spin_unlock(&ctx->lock);
	wake_up_all(&ctx->wq);
	emu_job_free(job);
}

/* ---- AMDGPU_CS --------------------------------------------------------------- */

/* amdgpu_ctx_get_entity: only the DMA IP has rings here. */
static int emu_check_entity(u32 ip_type, u32 ip_instance, u32 ring)
{
	if (ip_type >= AMDGPU_HW_IP_NUM || ip_instance)
		return -EINVAL;
	if (ip_type != AMDGPU_HW_IP_DMA || ring >= EMU_SDMA_RINGS)
		return -EINVAL;
	return 0;
}

static int emu_cs_user_fence(struct emu_job *job, struct drm_file *file,
			     const struct drm_amdgpu_cs_chunk_fence *f)
{
	struct drm_gem_object *obj;
	struct emu_bo *bo;

	obj = drm_gem_object_lookup(file, f->handle);
	if (!obj)
		return -EINVAL;
	bo = to_emu_bo(obj);
	if ((bo->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) ||
	    (u64)f->offset + 8 > obj->size || (f->offset & 7)) {
		emu_bo_put(bo);
		return -EINVAL;
	}
	if (job->uf_bo)
		emu_bo_put(job->uf_bo);
	job->uf_bo = bo;
	job->uf_offset = f->offset;
	return 0;
}

static int emu_cs_dependencies(struct emu_drm_file *ef, void *data, u32 size)
{
	struct drm_amdgpu_cs_chunk_dep *deps = data;
	unsigned int i, n = size / sizeof(*deps);
	struct emu_ctx *ctx;

	/* one ordered engine per GPU: earlier work of this device is done first */
	for (i = 0; i < n; i++) {
		ctx = emu_ctx_get(ef, deps[i].ctx_id);
		if (!ctx)
			return -EINVAL;
		emu_ctx_put(ctx);
		if (emu_check_entity(deps[i].ip_type, deps[i].ip_instance, deps[i].ring))
			return -EINVAL;
	}
	return 0;
}

/* Parse the chunks into @job (IBs, user fence, BO handles, dependencies). */
static int emu_cs_parse(struct emu_job *job, struct drm_file *file,
			const union drm_amdgpu_cs *cs, struct emu_bo_list **handles)
{
	struct emu_drm_file *ef = file->driver_priv;
	u64 __user *uchunks = u64_to_user_ptr(cs->in.chunks);
	struct drm_amdgpu_cs_chunk chunk;
	bool have_entity = false;
	void *kdata = NULL;
	u32 i, size;
	u64 ptr;
	int ret = 0;

	for (i = 0; i < cs->in.num_chunks && !ret; i++) {
		kvfree(kdata);
		kdata = NULL;
		if (get_user(ptr, uchunks + i) ||
		    copy_from_user(&chunk, u64_to_user_ptr(ptr), sizeof(chunk)))
			return -EFAULT;
		size = chunk.length_dw * 4;
		if (chunk.length_dw > (64U << 20) / 4)
			return -ENOMEM;
		kdata = kvmalloc(max(size, 1U), GFP_KERNEL);
		if (!kdata)
			return -ENOMEM;
		if (copy_from_user(kdata, u64_to_user_ptr(chunk.chunk_data), size)) {
			ret = -EFAULT;
			break;
		}

		switch (chunk.chunk_id) {
		case AMDGPU_CHUNK_ID_IB: {
			struct drm_amdgpu_cs_chunk_ib *ib = kdata;

			if (size < sizeof(*ib)) {
				ret = -EINVAL;
				break;
			}
			ret = emu_check_entity(ib->ip_type, ib->ip_instance, ib->ring);
			if (ret)
				break;
			/* one entity per submission */
			if (have_entity && ib->ring != job->ring) {
				ret = -EINVAL;
				break;
			}
			have_entity = true;
			job->ring = ib->ring;
			job->ibs[job->n_ibs].va = ib->va_start;
			job->ibs[job->n_ibs].bytes = ib->ib_bytes;
			job->n_ibs++;
			break;
		}
		case AMDGPU_CHUNK_ID_FENCE:
			if (size < sizeof(struct drm_amdgpu_cs_chunk_fence))
				ret = -EINVAL;
			else
				ret = emu_cs_user_fence(job, file, kdata);
			break;
		case AMDGPU_CHUNK_ID_BO_HANDLES: {
			struct drm_amdgpu_bo_list_in *in = kdata;

			if (size < sizeof(*in)) {
				ret = -EINVAL;
				break;
			}
			if (*handles) {
				emu_bo_list_put(*handles);
				*handles = NULL;
			}
			ret = emu_bo_list_from_user(file, in->bo_info_ptr, in->bo_number,
						    in->bo_info_size, handles);
			break;
		}
		case AMDGPU_CHUNK_ID_DEPENDENCIES:
		case AMDGPU_CHUNK_ID_SCHEDULED_DEPENDENCIES:
			ret = emu_cs_dependencies(ef, kdata, size);
			break;
		default:
			/* syncobjs are not emulated */
			ret = -EINVAL;
			break;
		}
	}
	kvfree(kdata);
	if (!ret && !job->n_ibs)
		ret = -EINVAL;
	return ret;
}

int emu_amdgpu_cs_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_cs *cs = data;
	struct emu_drm_file *ef = file->driver_priv;
	struct emu_bo_list *handles = NULL;
	struct emu_ctx *ctx;
	struct emu_job *job;
	unsigned int i;
	int ret;

	ctx = emu_ctx_get(ef, cs->in.ctx_id);
	if (!ctx)
		return -EINVAL;
	if (READ_ONCE(ctx->guilty)) {
		emu_ctx_put(ctx);
		return -ECANCELED;
	}
	if (!cs->in.num_chunks || cs->in.num_chunks > 4096) {
		emu_ctx_put(ctx);
		return cs->in.num_chunks ? -ENOMEM : -EINVAL;
	}

	job = kzalloc(struct_size(job, ibs, cs->in.num_chunks), GFP_KERNEL);
	if (!job) {
		emu_ctx_put(ctx);
		return -ENOMEM;
	}
	INIT_WORK(&job->work, emu_job_work);
	job->gpu = ef->gpu;
	job->ctx = ctx;

	ret = emu_cs_parse(job, file, cs, &handles);
	if (ret)
		goto err;

	if (cs->in.bo_list_handle) {
		if (handles) {
			ret = -EINVAL;
			goto err;
		}
		handles = emu_bo_list_lookup(ef, cs->in.bo_list_handle);
		if (!handles) {
			ret = -ENOENT;
			goto err;
		}
	}
	/* amdgpu gets the pages of the userptr BOs a submission lists */
	for (i = 0; handles && i < handles->n; i++) {
		if (!(handles->bos[i]->alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) ||
		    !handles->bos[i]->user_mm)
			continue;
		ret = emu_bo_pin_gem_userptr(handles->bos[i]);
		if (ret)
			goto err;
	}

	/* at most amdgpu_sched_jobs submissions in flight per ring */
	ret = wait_event_interruptible(ctx->wq,
				       READ_ONCE(ctx->next_seq[job->ring]) - 1 -
				       READ_ONCE(ctx->signaled[job->ring]) < EMU_SCHED_JOBS);
	if (ret)
		goto err;

	job->list = handles;
	handles = NULL;
	for (i = 0; job->list && i < job->list->n; i++)
		atomic_inc(&job->list->bos[i]->busy);
	kref_get(&ef->ref);
	job->ef = ef;

	spin_lock(&ctx->lock);
	if (ctx->guilty) {
		spin_unlock(&ctx->lock);
		emu_job_free(job);
		return -ECANCELED;
	}
	job->seq = ctx->next_seq[job->ring]++;
	cs->out.handle = job->seq;
	queue_work(job->gpu->sdma_wq, &job->work);
	spin_unlock(&ctx->lock);
	return 0;

err:
	if (handles)
		emu_bo_list_put(handles);
	emu_job_free(job);
	return ret;
}

/* ---- waiting ----------------------------------------------------------------- */

/* amdgpu_gem_timeout: an absolute CLOCK_MONOTONIC time in ns to jiffies. */
static long emu_gem_timeout(u64 timeout_ns)
{
	s64 left;
	unsigned long j;

	if ((s64)timeout_ns < 0)
		return MAX_SCHEDULE_TIMEOUT;
	left = (s64)timeout_ns - ktime_get_ns();
	if (left < 0)
		return 0;
	j = nsecs_to_jiffies(left);
	if (j >= MAX_SCHEDULE_TIMEOUT)
		return MAX_SCHEDULE_TIMEOUT - 1;
	return j;
}

int emu_amdgpu_wait_cs_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_wait_cs *wait = data;
	struct emu_drm_file *ef = file->driver_priv;
	long timeout = emu_gem_timeout(wait->in.timeout);
	u32 ring = wait->in.ring;
	u64 seq = wait->in.handle;
	struct emu_ctx *ctx;
	long r;

	ctx = emu_ctx_get(ef, wait->in.ctx_id);
	if (!ctx)
		return -EINVAL;
	r = emu_check_entity(wait->in.ip_type, wait->in.ip_instance, ring);
	if (r)
		goto out;

	spin_lock(&ctx->lock);
	if (seq == ~0ULL)
		seq = ctx->next_seq[ring] - 1;
	if (seq >= ctx->next_seq[ring])
		r = -EINVAL;
	spin_unlock(&ctx->lock);
	if (r)
		goto out;

	r = wait_event_interruptible_timeout(ctx->wq,
					     READ_ONCE(ctx->signaled[ring]) >= seq,
					     timeout);
	if (r > 0) {
		spin_lock(&ctx->lock);
		if (seq && seq == ctx->bad_seq[ring])
			r = -ETIME;
		else if (ctx->cancel_from[ring] && seq >= ctx->cancel_from[ring])
			r = -ECANCELED;
		spin_unlock(&ctx->lock);
	}
	if (r >= 0) {
		memset(wait, 0, sizeof(*wait));
		wait->out.status = r == 0;
		r = 0;
	}
out:
	emu_ctx_put(ctx);
	return r;
}

int emu_amdgpu_gem_wait_idle_ioctl(struct drm_device *dev, void *data, struct drm_file *file)
{
	union drm_amdgpu_gem_wait_idle *args = data;
	long timeout = emu_gem_timeout(args->in.timeout);
	struct drm_gem_object *obj;
	struct emu_bo *bo;
	long r;

	obj = drm_gem_object_lookup(file, args->in.handle);
	if (!obj)
		return -ENOENT;
	bo = to_emu_bo(obj);
	r = wait_event_interruptible_timeout(emu_bo_idle_wq, !atomic_read(&bo->busy),
					     timeout);
	drm_gem_object_put(obj);
	if (r < 0)
		return r;
	memset(args, 0, sizeof(*args));
	args->out.status = r == 0;
	return 0;
}

/* ---- setup ------------------------------------------------------------------- */

int emu_sdma_init(struct emu_gpu *gpu)
{
	gpu->sdma_wq = alloc_ordered_workqueue(EMU_NAME "_sdma%u", 0, gpu->index);
	return gpu->sdma_wq ? 0 : -ENOMEM;
}

void emu_sdma_fini(struct emu_gpu *gpu)
{
	if (gpu->sdma_wq)
		destroy_workqueue(gpu->sdma_wq);
	gpu->sdma_wq = NULL;
}
