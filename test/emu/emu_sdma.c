// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: command submission to the DMA IP and the SDMA 4.x engine that
 * executes it (kernel IBs here, user-mode SDMA queues in emu_sdma_queue.c).
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
#define SDMA_OP_POLL_REGMEM	8
#define SDMA_OP_ATOMIC		10
#define SDMA_OP_CONST_FILL	11
#define SDMA_OP_TIMESTAMP	13
#define SDMA_SUBOP_COPY_LINEAR	0
#define SDMA_SUBOP_WRITE_LINEAR	0
#define SDMA_COPY_BROADCAST	BIT(27)
#define SDMA_NOP_COUNT(h)	(((h) >> 16) & 0x3fff)
#define SDMA_COUNT_22(d)	((d) & 0x3fffff)
#define SDMA_COUNT_30(d)	((d) & 0x3fffffff)
#define SDMA_COUNT_20(d)	((d) & 0xfffff)
#define SDMA_IB_MAX_DW		0xfffff		/* the IB packet's size field */
#define SDMA_IB_ADDR_MASK	(~0x1fULL)	/* IBs start 32-byte aligned */
#define SDMA_FILL_SIZE(h)	(((h) >> 30) & 0x3)	/* log2 bytes of the fill unit */
#define SDMA_POLL_MEM		BIT(31)		/* else two register offsets */
#define SDMA_POLL_FUNC(h)	(((h) >> 28) & 0x7)
#define SDMA_POLL_INTERVAL(d)	((d) & 0xffff)
#define SDMA_POLL_RETRY(d)	(((d) >> 16) & 0xfff)
#define SDMA_POLL_FOREVER	0xfff
#define SDMA_ATOMIC_OP(h)	(((h) >> 25) & 0x7f)
#define SDMA_TIMESTAMP_SET	0
#define SDMA_TIMESTAMP_GET	1
#define SDMA_TIMESTAMP_GLOBAL	2
#define SDMA_TRAP_CONTEXT(d)	((d) & 0x0fffffff)

/* The TC atomic opcodes of the ATOMIC packet, 64-bit forms (with and without return) */
#define TC_OP_SWAP_RTN_64	0x27
#define TC_OP_CMPSWAP_RTN_64	0x28
#define TC_OP_ADD_RTN_64	0x2f
#define TC_OP_SUB_RTN_64	0x30
#define TC_OP_SWAP_64		0x67
#define TC_OP_CMPSWAP_64	0x68
#define TC_OP_ADD_64		0x6f
#define TC_OP_SUB_64		0x70

/* An IB's POLL_REGMEM: how long the engine polls before the job faults. */
#define EMU_IB_POLL_TIMEOUT_MS	2000

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
	struct emu_sdma_ctx exec;
	unsigned int n_ibs;
	struct emu_ib ibs[];
};

/* ---- the engine ----------------------------------------------------------- */

int emu_sdma_fault(struct emu_sdma_ctx *x, u64 va, const char *what)
{
	x->fault_va = va;
	x->fault = what;
	return -EFAULT;
}

/* Honour sdma_mbps, and give the CPU away now and then. */
static void emu_sdma_account(struct emu_sdma_ctx *x, u64 n)
{
	unsigned int mbps = READ_ONCE(emu_sdma_mbps);
	s64 ahead_us;

	x->bytes += n;
	atomic64_add(n, &x->gpu->sdma_bytes);
	if (x->bytes - x->throttled < EMU_SDMA_THROTTLE_STEP)
		return;
	x->throttled = x->bytes;
	if (mbps) {
		/* MB/s is bytes per microsecond */
		ahead_us = div_u64(x->bytes, mbps) -
			ktime_us_delta(ktime_get(), x->start);
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
static int emu_seg_at(struct emu_sdma_ctx *x, struct emu_vm_seg *seg, u64 va, bool write)
{
	if (seg->len)
		return 0;
	emu_seg_put(seg);
	if (emu_vm_resolve(x->vm, va, write, seg))
		return emu_sdma_fault(x, va, write ? "write" : "read");
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

/*
 * The byte count (minus one) of a COPY_LINEAR packet.  SDMA 4.0 to 4.2 (gfx9
 * up to MI100's gfx908) read 22 bits of its second dword, at most 4 MiB per
 * packet; the SDMA 4.4 engines of gfx90a (MI210, MI250X) and gfx94x (MI300)
 * read 30 bits.  ROCr 6.x relies on the wider field on gfx90a: its copies
 * there are single packets of up to 1 GiB - 1, where 5.x split them at 4 MiB.
 * Bits the engine does not read are reserved and written as zero.
 */
static u64 emu_sdma_copy_count(const struct emu_sdma_ctx *x, u32 dw)
{
	if (x->gpu && x->gpu->model->gfx_target_version >= 90010)
		return SDMA_COUNT_30(dw);
	return SDMA_COUNT_22(dw);
}

/* COPY_LINEAR: GPU VA to GPU VA. */
static int emu_sdma_copy(struct emu_sdma_ctx *x, u64 dst, u64 src, u64 len)
{
	struct emu_vm_seg s = {}, d = {};
	unsigned int sroom, droom, n;
	void *sp, *dp;
	int ret = 0;

	while (len) {
		ret = emu_seg_at(x, &s, src, false);
		if (!ret)
			ret = emu_seg_at(x, &d, dst, true);
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
		emu_sdma_account(x, n);
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
int emu_sdma_access(struct emu_sdma_ctx *x, u64 va, void *buf, u64 len,
		    bool to_gpu, u32 pattern)
{
	struct emu_vm_seg seg = {};
	unsigned int room, n, i;
	u8 *p;
	int ret = 0;

	while (len) {
		ret = emu_seg_at(x, &seg, va, to_gpu);
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
			emu_sdma_account(x, n);
	}
	emu_seg_put(&seg);
	return ret;
}

static u64 emu_pkt_addr(const u32 *dw)
{
	return ((u64)dw[1] << 32 | dw[0]) & EMU_GMC_HOLE_MASK;
}

/*
 * Map the naturally aligned 64-bit word at @va for an atomic or a timestamp;
 * the caller kunmap_local()s the pointer and puts @seg.
 */
static u64 *emu_sdma_map_u64(struct emu_sdma_ctx *x, u64 va, bool write,
			     struct emu_vm_seg *seg)
{
	unsigned int room;

	if (va & 7) {
		emu_sdma_fault(x, va, "unaligned 64-bit access");
		return NULL;
	}
	if (emu_seg_at(x, seg, va, write))
		return NULL;
	return emu_seg_map(seg, &room);
}

/* POLL_REGMEM's compare functions */
static bool emu_poll_true(u32 func, u32 value, u32 ref)
{
	switch (func) {
	case 0: return true;
	case 1: return value < ref;
	case 2: return value <= ref;
	case 3: return value == ref;
	case 4: return value != ref;
	case 5: return value >= ref;
	case 6: return value > ref;
	default: return false;
	}
}

/*
 * POLL_REGMEM: 0 when the condition holds, -EAGAIN while it does not (the
 * engine stays on the packet), -EFAULT once a finite retry count ran out.
 * Register polls are the HDP flush: memory here is coherent, so they pass.
 */
static int emu_sdma_poll(struct emu_sdma_ctx *x, const u32 *pkt, u64 pkt_va)
{
	u32 value;
	int ret;

	if (!(pkt[0] & SDMA_POLL_MEM))
		return 0;
	ret = emu_sdma_access(x, emu_pkt_addr(&pkt[1]) & ~3ULL, &value, 4, false, 0);
	if (ret)
		return ret;
	if (emu_poll_true(SDMA_POLL_FUNC(pkt[0]), value & pkt[4], pkt[3])) {
		x->polls = 0;
		return 0;
	}
	if (SDMA_POLL_RETRY(pkt[5]) != SDMA_POLL_FOREVER &&
	    ++x->polls > SDMA_POLL_RETRY(pkt[5]))
		return emu_sdma_fault(x, pkt_va, "POLL_REGMEM out of retries");
	return -EAGAIN;
}

static int emu_sdma_atomic(struct emu_sdma_ctx *x, const u32 *pkt)
{
	struct emu_vm_seg seg = {};
	u64 src = (u64)pkt[4] << 32 | pkt[3];
	u64 cmp = (u64)pkt[6] << 32 | pkt[5];
	u64 va = emu_pkt_addr(&pkt[1]);
	atomic64_t *v;
	int ret = 0;

	v = (atomic64_t *)emu_sdma_map_u64(x, va, true, &seg);
	if (!v) {
		emu_seg_put(&seg);
		return -EFAULT;
	}
	switch (SDMA_ATOMIC_OP(pkt[0])) {
	case TC_OP_ADD_RTN_64:
	case TC_OP_ADD_64:
		atomic64_add(src, v);
		break;
	case TC_OP_SUB_RTN_64:
	case TC_OP_SUB_64:
		atomic64_sub(src, v);
		break;
	case TC_OP_SWAP_RTN_64:
	case TC_OP_SWAP_64:
		atomic64_xchg(v, src);
		break;
	case TC_OP_CMPSWAP_RTN_64:
	case TC_OP_CMPSWAP_64:
		atomic64_cmpxchg(v, cmp, src);
		break;
	default:
		ret = emu_sdma_fault(x, va, "unsupported ATOMIC operation");
	}
	kunmap_local(v);
	emu_seg_put(&seg);
	return ret;
}

/* A 64-bit atomic add at @va, as the command processor decrements a signal. */
int emu_gpu_atomic_add64(struct emu_sdma_ctx *x, u64 va, s64 delta)
{
	struct emu_vm_seg seg = {};
	atomic64_t *v;

	v = (atomic64_t *)emu_sdma_map_u64(x, va, true, &seg);
	if (v) {
		atomic64_add(delta, v);
		kunmap_local(v);
	}
	emu_seg_put(&seg);
	return v ? 0 : -EFAULT;
}

/* TIMESTAMP GET and GET_GLOBAL: the GPU clock KFD's GET_CLOCK_COUNTERS reports. */
static int emu_sdma_timestamp(struct emu_sdma_ctx *x, const u32 *pkt)
{
	struct emu_vm_seg seg = {};
	u64 *ts;

	ts = emu_sdma_map_u64(x, emu_pkt_addr(&pkt[1]), true, &seg);
	if (ts) {
		WRITE_ONCE(*ts, emu_gpu_clock_counter());
		kunmap_local(ts);
	}
	emu_seg_put(&seg);
	return ts ? 0 : -EFAULT;
}

/*
 * Execute SDMA 4.x packets from @buf, fetched from GPU VA @va, until the end
 * or the first packet that cannot complete.  *@done is the number of dwords
 * consumed, always a packet boundary.  Returns 0, -EAGAIN when a POLL_REGMEM
 * waits (*@done is that packet), -EFAULT on a VM fault or an illegal or
 * truncated packet (x->fault says which), or -ENOSPC once @budget bytes were
 * moved (the caller comes back for the rest).
 */
int emu_sdma_exec(struct emu_sdma_ctx *x, const u32 *buf, u32 ndw, u64 va,
		  u32 *done, u64 budget)
{
	const u64 from = x->bytes;
	u32 i = 0, hdr, op, sub, n, len;
	int ret = 0;

	while (i < ndw) {
		if (x->bytes - from >= budget) {
			ret = -ENOSPC;
			break;
		}
		hdr = buf[i];
		op = hdr & 0xff;
		sub = (hdr >> 8) & 0xff;
		len = 0;
		switch (op) {
		case SDMA_OP_NOP:
			len = 1 + SDMA_NOP_COUNT(hdr);
			if (ndw - i < len)
				len = 0;
			break;
		case SDMA_OP_COPY:
			if (sub != SDMA_SUBOP_COPY_LINEAR || (hdr & SDMA_COPY_BROADCAST) ||
			    ndw - i < 7)
				break;
			len = 7;
			/* SDMA 4.x: the count field is bytes - 1 */
			ret = emu_sdma_copy(x, emu_pkt_addr(&buf[i + 5]),
					    emu_pkt_addr(&buf[i + 3]),
					    emu_sdma_copy_count(x, buf[i + 1]) + 1);
			break;
		case SDMA_OP_WRITE:
			if (sub != SDMA_SUBOP_WRITE_LINEAR || ndw - i < 4)
				break;
			n = SDMA_COUNT_20(buf[i + 3]) + 1;
			if (ndw - i - 4 < n)
				break;
			len = 4 + n;
			ret = emu_sdma_access(x, emu_pkt_addr(&buf[i + 1]) & ~3ULL,
					      (void *)&buf[i + 4], n * 4ULL, true, 0);
			break;
		case SDMA_OP_FENCE:
			if (ndw - i < 4)
				break;
			len = 4;
			ret = emu_sdma_access(x, emu_pkt_addr(&buf[i + 1]) & ~3ULL,
					      (void *)&buf[i + 3], 4, true, 0);
			break;
		case SDMA_OP_TRAP:
			if (ndw - i < 2)
				break;
			len = 2;
			/* kernel IBs' traps only drive the driver's own fences */
			if (x->p)
				emu_event_signal_interrupt(x->p, SDMA_TRAP_CONTEXT(buf[i + 1]), 28);
			break;
		case SDMA_OP_POLL_REGMEM:
			if (ndw - i < 6)
				break;
			len = 6;
			ret = emu_sdma_poll(x, &buf[i], va + i * 4ULL);
			break;
		case SDMA_OP_ATOMIC:
			if (ndw - i < 8)
				break;
			len = 8;
			ret = emu_sdma_atomic(x, &buf[i]);
			break;
		case SDMA_OP_TIMESTAMP:
			if (ndw - i < 3 || sub > SDMA_TIMESTAMP_GLOBAL)
				break;
			len = 3;
			if (sub != SDMA_TIMESTAMP_SET)
				ret = emu_sdma_timestamp(x, &buf[i]);
			break;
		case SDMA_OP_CONST_FILL:
			if (ndw - i < 5)
				break;
			len = 5;
			/*
			 * count is bytes - 1; a fill of dwords covers whole
			 * dwords (ROCr counts (dwords - 1) * 4, amdgpu bytes - 1)
			 */
			ret = emu_sdma_access(x, emu_pkt_addr(&buf[i + 1]), NULL,
					      round_up((u64)SDMA_COUNT_22(buf[i + 4]) + 1,
						       1u << SDMA_FILL_SIZE(hdr)),
					      true, buf[i + 3]);
			break;
		default:
			break;
		}
		if (!len) {
			/* an unknown packet or one cut off by the end of the buffer */
			ret = emu_sdma_fault(x, va + i * 4ULL, "illegal packet");
			break;
		}
		if (ret)
			break;
		i += len;
	}
	*done = i;
	return ret;
}

static int emu_sdma_run_ib(struct emu_job *job, const struct emu_ib *ib)
{
	struct emu_sdma_ctx *x = &job->exec;
	u32 ndw = ib->bytes / 4;
	u64 va = ib->va & SDMA_IB_ADDR_MASK & EMU_GMC_HOLE_MASK;
	unsigned long poll_end = jiffies + msecs_to_jiffies(EMU_IB_POLL_TIMEOUT_MS);
	u32 *buf, at = 0, done;
	int ret;

	if (!ndw)
		return 0;
	if (ndw > SDMA_IB_MAX_DW)
		return emu_sdma_fault(x, va, "IB too large");
	buf = kvmalloc_array(ndw, sizeof(u32), GFP_KERNEL);
	if (!buf)
		return emu_sdma_fault(x, va, "IB fetch (out of memory)");
	ret = emu_sdma_access(x, va, buf, ndw * 4ULL, false, 0);
	while (!ret && at < ndw) {
		ret = emu_sdma_exec(x, buf + at, ndw - at, va + at * 4ULL, &done, U64_MAX);
		at += done;
		if (ret != -EAGAIN)
			break;
		/* a POLL_REGMEM waiting for memory: poll again a little later */
		if (time_after(jiffies, poll_end)) {
			ret = emu_sdma_fault(x, va + at * 4ULL, "POLL_REGMEM timed out");
			break;
		}
		usleep_range(50, 100);
		ret = 0;
	}
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

	job->exec.start = ktime_get();
	if (READ_ONCE(ctx->guilty))
		ret = -ECANCELED;
	for (i = 0; i < job->n_ibs && !ret; i++)
		ret = emu_sdma_run_ib(job, &job->ibs[i]);

	if (ret == -EFAULT) {
		pr_warn_ratelimited(EMU_NAME ": [sdma] GPU %u: %s fault at 0x%llx, ctx %u ring %u seq %llu; context guilty\n",
				    job->gpu->index, job->exec.fault, job->exec.fault_va,
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
	job->exec.gpu = job->gpu;
	job->exec.vm = &ef->vm;

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
