// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: the five CRIU operations of AMDKFD_IOC_CRIU_OP.
 *
 * The private blob has the layout and sizes of the 6.1 driver's:
 *   [process][device x num_devices][bo x num_bos][queue objects][event objects]
 * Its contents are ours (the MQD image is emulator state), which is allowed:
 * user space stores the blob and hands it back unchanged.
 *
 * CHECKPOINT and RESTORE are transactional: dma-buf fds are only installed
 * once everything else succeeded, and a failed RESTORE leaves the process as
 * fresh as it was.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/file.h>
#include <linux/fcntl.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/dma-buf.h>
#include <linux/uaccess.h>
#include <drm/drm_prime.h>

#include "emu.h"

#define EMU_CRIU_PRIV_VERSION	1
#define EMU_CRIU_MAX_PRIV_SIZE	(256UL << 20)

enum emu_criu_object_type {
	EMU_CRIU_OBJ_QUEUE = 0,
	EMU_CRIU_OBJ_EVENT = 1,
	EMU_CRIU_OBJ_SVM_RANGE = 2,
};

struct emu_criu_process_priv {
	u32 version;
	u32 xnack_mode;
};

struct emu_criu_device_priv {
	u64 reserved;
};

struct emu_criu_bo_priv {
	u64 user_addr;
	u32 idr_handle;
	u32 mapped_gpuids[EMU_MAX_GPUS];
};

struct emu_criu_queue_priv {
	u32 object_type;
	u64 q_address;
	u64 q_size;
	u64 read_ptr_addr;
	u64 write_ptr_addr;
	u64 doorbell_off;
	u64 eop_ring_buffer_address;
	u64 ctx_save_restore_area_address;
	u32 gpu_id;
	u32 type;
	u32 format;
	u32 q_id;
	u32 priority;
	u32 q_percent;
	u32 doorbell_id;
	u32 gws;
	u32 sdma_id;
	u32 eop_ring_buffer_size;
	u32 ctx_save_restore_area_size;
	u32 ctl_stack_size;
	u32 mqd_size;
};

struct emu_criu_event_priv {
	u32 object_type;
	u64 user_handle;
	u32 event_id;
	u32 auto_reset;
	u32 type;
	u32 signaled;
	union {
		struct kfd_hsa_memory_exception_data memory_exception_data;
		struct kfd_hsa_hw_exception_data hw_exception_data;
	};
};

static_assert(sizeof(struct emu_criu_process_priv) == 8);
static_assert(sizeof(struct emu_criu_device_priv) == 8);
static_assert(sizeof(struct emu_criu_bo_priv) == 80);
static_assert(sizeof(struct emu_criu_queue_priv) == 120);
static_assert(sizeof(struct emu_criu_event_priv) == 64);
static_assert(sizeof(struct kfd_ioctl_criu_args) == 56);
static_assert(sizeof(struct kfd_criu_device_bucket) == 16);
static_assert(sizeof(struct kfd_criu_bo_bucket) == 48);

/* dma-buf fds reserved during an operation, installed only on success */
struct emu_fd_list {
	unsigned int n;
	int *fds;
	struct dma_buf **bufs;
};

static int emu_fd_list_init(struct emu_fd_list *l, unsigned int max)
{
	l->n = 0;
	l->fds = kvcalloc(max ? max : 1, sizeof(*l->fds), GFP_KERNEL);
	l->bufs = kvcalloc(max ? max : 1, sizeof(*l->bufs), GFP_KERNEL);
	if (!l->fds || !l->bufs) {
		kvfree(l->fds);
		kvfree(l->bufs);
		return -ENOMEM;
	}
	return 0;
}

/*
 * The dma-buf of a VRAM/GTT bucket: up to 6.7 a new one at every CHECKPOINT and RESTORE
 * (amdgpu_gem_prime_export of the object's BO, read-write on RESTORE, read-write on CHECKPOINT only
 * if WRITABLE); from 6.8 on the object's own (emu_mem_get_dmabuf, the one EXPORT_DMABUF hands
 * out): two processes sharing a buffer get the same dma-buf, and a restored object's is read-write
 * only if WRITABLE.
 */
static struct dma_buf *emu_criu_bucket_dmabuf(struct emu_kfd_mem *mem, bool restore)
{
	int mode = restore || (mem->flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) ? O_RDWR : O_RDONLY;

	if (EMU_KFD_IMPORTS_THROUGH_DRM)
		return emu_mem_get_dmabuf(mem);
	return drm_gem_prime_export(&mem->bo->base, mode);
}

/* Reserve an fd in the caller's table for the dma-buf of @mem's bucket. */
static int emu_fd_list_export(struct emu_fd_list *l, struct emu_kfd_mem *mem, bool restore)
{
	struct dma_buf *buf;
	int fd;

	buf = emu_criu_bucket_dmabuf(mem, restore);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	fd = get_unused_fd_flags(0);
	if (fd < 0) {
		dma_buf_put(buf);
		return fd;
	}
	l->fds[l->n] = fd;
	l->bufs[l->n] = buf;
	l->n++;
	return fd;
}

static void emu_fd_list_finish(struct emu_fd_list *l, bool install)
{
	unsigned int i;

	for (i = 0; i < l->n; i++) {
		if (install) {
			fd_install(l->fds[i], l->bufs[i]->file);
		} else {
			put_unused_fd(l->fds[i]);
			dma_buf_put(l->bufs[i]);
		}
	}
	kvfree(l->fds);
	kvfree(l->bufs);
}

static bool emu_mem_is_checkpointed(struct emu_kfd_mem *mem)
{
	return mem->va > EMU_GPUVM_BASE;
}

static bool emu_mem_has_pages(u32 flags)
{
	return flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT);
}

/* the control stacks a queue's checkpoint carries: every XCC's, whole, after all the MQDs */
static u32 emu_queue_saved_ctl_stack(struct emu_queue *q)
{
	return (q->type == KFD_IOC_QUEUE_TYPE_COMPUTE ||
		q->type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL) ? q->ctl_stack_size * q->n_xcc : 0;
}

struct emu_criu_counts {
	u32 num_devices;
	u32 num_bos;
	u32 num_objects;
	u64 priv_data_size;
};

static void emu_criu_count(struct emu_process *p, struct emu_criu_counts *c)
{
	struct emu_kfd_mem *mem;
	struct emu_queue *q;
	unsigned int i;
	int id;

	c->num_devices = p->n_pdds;
	c->num_bos = 0;
	for (i = 0; i < p->n_pdds; i++)
		idr_for_each_entry(&p->pdds[i].mem_idr, mem, id)
			if (emu_mem_is_checkpointed(mem))
				c->num_bos++;
	c->num_objects = p->n_queues + p->n_events;

	c->priv_data_size = sizeof(struct emu_criu_process_priv) +
		(u64)c->num_devices * sizeof(struct emu_criu_device_priv) +
		(u64)c->num_bos * sizeof(struct emu_criu_bo_priv) +
		(u64)p->n_events * sizeof(struct emu_criu_event_priv);
	list_for_each_entry(q, &p->queues, link)
		c->priv_data_size += sizeof(struct emu_criu_queue_priv) +
				     q->mqd_size + emu_queue_saved_ctl_stack(q);
}

/* ---- PROCESS_INFO ------------------------------------------------------- */

static int emu_criu_process_info(struct emu_process *p, struct kfd_ioctl_criu_args *args)
{
	struct emu_criu_counts c;

	mutex_lock(&p->lock);
	if (!p->n_pdds) {
		mutex_unlock(&p->lock);
		return -ENODEV;
	}
	/* nothing may run on the GPU while CRIU looks at the process */
	emu_process_evict(p);
	p->queues_paused = true;

	emu_criu_count(p, &c);
	args->pid = task_pid_nr_ns(p->lead_thread, task_active_pid_ns(p->lead_thread));
	args->num_devices = c.num_devices;
	args->num_bos = c.num_bos;
	args->num_objects = c.num_objects;
	args->priv_data_size = c.priv_data_size;
	mutex_unlock(&p->lock);
	return 0;
}

/* ---- CHECKPOINT --------------------------------------------------------- */

static size_t emu_criu_save_queue(struct emu_queue *q, void *buf)
{
	struct emu_criu_queue_priv *qp = buf;
	u32 ctl = emu_queue_saved_ctl_stack(q);
	u64 pending = emu_sdma_queue_pending(q);
	u64 packets = emu_aql_queue_pending(q);

	/* what a test of "checkpointed with work in flight" looks for */
	if (pending)
		pr_info(EMU_NAME ": [criu] CHECKPOINT: queue %u (GPU 0x%x) holds %llu bytes of packets not yet executed\n",
			q->id, q->pdd->user_gpu_id, pending);
	if (packets)
		pr_info(EMU_NAME ": [criu] CHECKPOINT: queue %u (GPU 0x%x) holds %llu AQL packets not yet processed\n",
			q->id, q->pdd->user_gpu_id, packets);
	qp->object_type = EMU_CRIU_OBJ_QUEUE;
	qp->q_address = q->ring_base;
	qp->q_size = q->ring_size;
	qp->read_ptr_addr = q->rptr;
	qp->write_ptr_addr = q->wptr;
	qp->doorbell_off = (u64)q->doorbell_id * sizeof(u64);
	qp->eop_ring_buffer_address = q->eop_addr;
	qp->ctx_save_restore_area_address = q->ctx_save_addr;
	qp->gpu_id = q->pdd->user_gpu_id;
	qp->type = q->type;
	qp->format = q->type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
	qp->q_id = q->id;
	qp->priority = q->priority;
	qp->q_percent = q->percentage;
	qp->doorbell_id = q->doorbell_id;
	qp->gws = q->gws;
	qp->sdma_id = q->sdma_id;
	qp->eop_ring_buffer_size = q->eop_size;
	qp->ctx_save_restore_area_size = q->ctx_save_size;	/* one XCC's */
	qp->ctl_stack_size = ctl;				/* every XCC's */
	qp->mqd_size = q->mqd_size;

	emu_queue_fill_mqd(q);
	memcpy(qp + 1, q->mqd, q->mqd_size);
	if (ctl && q->ctl_stack)
		memcpy((u8 *)(qp + 1) + q->mqd_size, q->ctl_stack, ctl);
	return sizeof(*qp) + q->mqd_size + ctl;
}

static int emu_criu_checkpoint(struct emu_process *p, struct kfd_ioctl_criu_args *args)
{
	struct kfd_criu_device_bucket *devs = NULL;
	struct kfd_criu_bo_bucket *bos = NULL;
	struct emu_criu_bo_priv *bo_privs;
	struct emu_criu_process_priv *pp;
	struct emu_criu_counts c;
	struct emu_fd_list fds = { 0 };
	struct emu_kfd_mem *mem;
	struct emu_queue *q;
	struct emu_event *ev;
	bool first_event = true;
	unsigned int i, b = 0;
	u8 *priv = NULL;
	size_t off;
	int id, ret;

	if (!args->devices || !args->bos || !args->priv_data)
		return -EINVAL;

	mutex_lock(&p->lock);
	if (!p->n_pdds) {
		ret = -ENODEV;
		goto out_unlock;
	}
	if (!p->queues_paused) {
		ret = -EINVAL;
		goto out_unlock;
	}
	emu_criu_count(p, &c);
	if (c.num_devices != args->num_devices || c.num_bos != args->num_bos ||
	    c.num_objects != args->num_objects ||
	    c.priv_data_size != args->priv_data_size) {
		ret = -EINVAL;
		goto out_unlock;
	}

	ret = -ENOMEM;
	priv = kvzalloc(c.priv_data_size, GFP_KERNEL);
	devs = kvcalloc(c.num_devices, sizeof(*devs), GFP_KERNEL);
	bos = kvcalloc(max(c.num_bos, 1U), sizeof(*bos), GFP_KERNEL);
	if (!priv || !devs || !bos || emu_fd_list_init(&fds, c.num_bos))
		goto out_free;

	pp = (void *)priv;
	pp->version = EMU_CRIU_PRIV_VERSION;
	pp->xnack_mode = p->xnack;
	off = sizeof(*pp);

	for (i = 0; i < p->n_pdds; i++) {
		devs[i].user_gpu_id = p->pdds[i].user_gpu_id;
		devs[i].actual_gpu_id = p->pdds[i].gpu->gpu_id;
	}
	off += c.num_devices * sizeof(struct emu_criu_device_priv);

	bo_privs = (void *)(priv + off);
	off += c.num_bos * sizeof(*bo_privs);

	list_for_each_entry(q, &p->queues, link)
		off += emu_criu_save_queue(q, priv + off);

	idr_for_each_entry(&p->event_idr, ev, id) {
		struct emu_criu_event_priv *ep = (void *)(priv + off);

		ep->object_type = EMU_CRIU_OBJ_EVENT;
		/* the first event carries the signal page for RESTORE */
		if (first_event && p->signal_mem)
			ep->user_handle = p->signal_handle;
		first_event = false;
		ep->event_id = ev->id;
		ep->auto_reset = ev->auto_reset;
		ep->type = ev->type;
		ep->signaled = ev->signaled;
		if (ev->type == KFD_IOC_EVENT_MEMORY)
			ep->memory_exception_data = ev->mem_data;
		else if (ev->type == KFD_IOC_EVENT_HW_EXCEPTION)
			ep->hw_exception_data = ev->hw_data;
		off += sizeof(*ep);
	}

	/* BOs last: the dma-buf fds are what has to be undone on failure */
	for (i = 0; i < p->n_pdds; i++) {
		struct emu_pdd *pdd = &p->pdds[i];

		idr_for_each_entry(&pdd->mem_idr, mem, id) {
			struct kfd_criu_bo_bucket *bk = &bos[b];
			struct emu_criu_bo_priv *bp = &bo_privs[b];
			unsigned int j, n = 0;

			if (!emu_mem_is_checkpointed(mem))
				continue;
			bk->gpu_id = pdd->user_gpu_id;
			bk->addr = mem->va;
			bk->size = mem->size;
			bk->offset = emu_mem_offset(mem, pdd->gpu->gpu_id);
			bk->alloc_flags = mem->flags;
			bk->dmabuf_fd = KFD_INVALID_FD;
			if (emu_mem_has_pages(mem->flags)) {
				ret = emu_fd_list_export(&fds, mem, false);
				if (ret < 0)
					goto out_free;
				bk->dmabuf_fd = ret;
			}
			bp->idr_handle = id;
			if (mem->flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
				bp->user_addr = mem->bo->user_addr;
			for (j = 0; j < p->n_pdds; j++)
				if (test_bit(j, &mem->mapped))
					bp->mapped_gpuids[n++] = p->pdds[j].user_gpu_id;
			b++;
		}
	}
	WARN_ON(off != c.priv_data_size || b != c.num_bos);

	ret = -EFAULT;
	if (copy_to_user(u64_to_user_ptr(args->devices), devs, c.num_devices * sizeof(*devs)) ||
	    copy_to_user(u64_to_user_ptr(args->bos), bos, c.num_bos * sizeof(*bos)) ||
	    copy_to_user(u64_to_user_ptr(args->priv_data), priv, c.priv_data_size))
		goto out_free;
	ret = 0;

out_free:
	if (fds.fds)
		emu_fd_list_finish(&fds, ret == 0);
	kvfree(bos);
	kvfree(devs);
	kvfree(priv);
out_unlock:
	mutex_unlock(&p->lock);
	return ret;
}

/* ---- UNPAUSE ------------------------------------------------------------ */

static int emu_criu_unpause(struct emu_process *p)
{
	int ret = 0;

	mutex_lock(&p->lock);
	if (!p->queues_paused) {
		ret = -EINVAL;
	} else {
		p->queues_paused = false;
		emu_process_restore(p);
	}
	mutex_unlock(&p->lock);
	return ret;
}

/* ---- RESTORE ------------------------------------------------------------ */

struct emu_blob {
	const u8 *data;
	u64 size;
	u64 off;
};

/* The next @len bytes of the blob, or NULL if they are not all there. */
static const void *emu_blob_take(struct emu_blob *bl, u64 len)
{
	const void *ptr;

	if (len > bl->size || bl->off > bl->size - len)
		return NULL;
	ptr = bl->data + bl->off;
	bl->off += len;
	return ptr;
}

static int emu_restore_devices(struct emu_process *p, struct kfd_ioctl_criu_args *args,
			       struct emu_blob *bl)
{
	struct kfd_criu_device_bucket *devs;
	unsigned int i;
	int ret = 0;

	if (args->num_devices != p->n_pdds)
		return -EINVAL;
	devs = kvcalloc(args->num_devices, sizeof(*devs), GFP_KERNEL);
	if (!devs)
		return -ENOMEM;
	if (copy_from_user(devs, u64_to_user_ptr(args->devices),
			   args->num_devices * sizeof(*devs))) {
		ret = -EFAULT;
		goto out;
	}

	for (i = 0; i < args->num_devices && !ret; i++) {
		struct emu_gpu *gpu = emu_gpu_by_id(devs[i].actual_gpu_id);
		struct emu_pdd *pdd = gpu ? emu_pdd_by_gpu(p, gpu) : NULL;
		struct file *drm_file;

		if (!devs[i].user_gpu_id || !pdd || pdd->drm_file) {
			ret = -EINVAL;
			break;
		}
		/* the application keeps the gpu_id it knew */
		pdd->user_gpu_id = devs[i].user_gpu_id;
		drm_file = fget(devs[i].drm_fd);
		if (!drm_file) {
			ret = -EINVAL;
			break;
		}
		if (emu_pdd_acquire_vm(pdd, drm_file))
			ret = -EINVAL;
		fput(drm_file);
		if (!ret)
			ret = emu_pdd_doorbells(pdd);
	}
	if (!ret && !emu_blob_take(bl, args->num_devices * sizeof(struct emu_criu_device_priv)))
		ret = -EINVAL;
out:
	kvfree(devs);
	return ret;
}

static int emu_restore_bo(struct emu_process *p, struct kfd_criu_bo_bucket *bk,
			  const struct emu_criu_bo_priv *bp, struct emu_fd_list *fds)
{
	struct emu_kfd_mem *mem;
	struct emu_pdd *pdd, *peer;
	u32 flags = bk->alloc_flags;
	u64 size = bk->size;
	unsigned int j;
	int ret;

	pdd = emu_pdd_by_user_id(p, bk->gpu_id);
	if (!pdd)
		return -ENODEV;
	if (bp->idr_handle > INT_MAX)
		return -EINVAL;
	if ((flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) && size != EMU_DOORBELL_SLICE)
		return -EINVAL;
	if ((flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) && size != PAGE_SIZE)
		return -EINVAL;
	if (!size || !(flags & EMU_ALLOC_DOMAIN_MASK))
		return -EINVAL;
	/* the bucket holds the backing size; AQL memory is mapped twice that */
	if (flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM)
		size <<= 1;

	mem = emu_mem_create(pdd, bk->addr, size, flags,
			     (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) ? bp->user_addr : 0,
			     bp->idr_handle);
	if (IS_ERR(mem))
		return PTR_ERR(mem);

	if (flags & (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP |
		     KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT))
		bk->restored_offset = emu_mem_offset(mem, pdd->gpu->gpu_id);

	for (j = 0; j < EMU_MAX_GPUS && bp->mapped_gpuids[j]; j++) {
		peer = emu_pdd_by_user_id(p, bp->mapped_gpuids[j]);
		if (!peer || emu_pdd_bind(peer))
			return -EINVAL;
		ret = emu_mem_map(mem, peer);
		if (ret)
			return ret;
	}

	bk->dmabuf_fd = KFD_INVALID_FD;
	if (emu_mem_has_pages(flags)) {
		ret = emu_fd_list_export(fds, mem, true);
		if (ret < 0)
			return ret;
		bk->dmabuf_fd = ret;
	}
	return 0;
}

static int emu_restore_bos(struct emu_process *p, struct kfd_ioctl_criu_args *args,
			   struct emu_blob *bl, struct kfd_criu_bo_bucket **bos_out,
			   struct emu_fd_list *fds)
{
	const struct emu_criu_bo_priv *bps;
	struct kfd_criu_bo_bucket *bos;
	unsigned int i;
	int ret = 0;

	bos = kvcalloc(max(args->num_bos, 1U), sizeof(*bos), GFP_KERNEL);
	if (!bos)
		return -ENOMEM;
	*bos_out = bos;
	if (args->num_bos &&
	    copy_from_user(bos, u64_to_user_ptr(args->bos), args->num_bos * sizeof(*bos)))
		return -EFAULT;
	bps = emu_blob_take(bl, (u64)args->num_bos * sizeof(*bps));
	if (!bps)
		return -EINVAL;

	for (i = 0; i < args->num_bos && !ret; i++)
		ret = emu_restore_bo(p, &bos[i], &bps[i], fds);
	return ret;
}

static int emu_restore_queue(struct emu_process *p, struct emu_blob *bl)
{
	const struct emu_criu_queue_priv *qp;
	const u8 *tail;
	struct emu_queue *q;
	struct emu_pdd *pdd;
	u32 n_xcc;
	int ret;

	qp = emu_blob_take(bl, sizeof(*qp));
	if (!qp)
		return -EINVAL;
	tail = emu_blob_take(bl, (u64)qp->mqd_size + qp->ctl_stack_size);
	if (!tail)
		return -EINVAL;
	pdd = emu_pdd_by_user_id(p, qp->gpu_id);
	if (!pdd || !emu_queue_mqd_size(qp->type))
		return -EINVAL;
	/*
	 * One MQD and control stack per XCC of the GPU restored on.  amdkfd
	 * divides the control stacks by the XCCs of the whole device where it
	 * sizes the MQD buffer and by the partition's where it copies them;
	 * here both are the partition's, which is what the copy needs.
	 */
	n_xcc = emu_gpu_xcc_count(pdd->gpu);
	if (qp->mqd_size != emu_queue_mqd_size(qp->type) * n_xcc || qp->ctl_stack_size % n_xcc)
		return -EINVAL;

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	q->type = qp->type;
	ret = emu_queue_alloc_state(q, n_xcc, qp->ctl_stack_size / n_xcc, tail,
				    qp->ctl_stack_size ? tail + qp->mqd_size : NULL);
	if (ret)
		goto err;

	q->pdd = pdd;
	q->id = qp->q_id;
	q->doorbell_id = qp->doorbell_id;
	q->ring_base = qp->q_address;
	q->ring_size = qp->q_size;
	q->rptr = qp->read_ptr_addr;
	q->wptr = qp->write_ptr_addr;
	q->percentage = qp->q_percent;
	q->priority = qp->priority;
	q->eop_addr = qp->eop_ring_buffer_address;
	q->eop_size = qp->eop_ring_buffer_size;
	q->ctx_save_addr = qp->ctx_save_restore_area_address;
	q->ctx_save_size = qp->ctx_save_restore_area_size;
	q->sdma_id = qp->sdma_id;
	q->gws = qp->gws;
	emu_queue_load_mqd(q);

	ret = emu_queue_add(p, q, true);
	if (ret) {
		ret = -EINVAL;
		goto err;
	}
	return 0;
err:
	kfree(q->mqd);
	kvfree(q->ctl_stack);
	kfree(q);
	return ret;
}

static int emu_restore_event(struct emu_process *p, struct emu_blob *bl)
{
	const struct emu_criu_event_priv *ep;
	int ret;

	ep = emu_blob_take(bl, sizeof(*ep));
	if (!ep)
		return -EINVAL;
	if (ep->event_id > INT_MAX)
		return -EINVAL;
	if (ep->user_handle) {
		ret = emu_event_set_signal_page(p, ep->user_handle);
		if (ret)
			return ret;
	}
	return emu_event_restore(p, ep->event_id, ep->type, ep->auto_reset,
				 ep->signaled, &ep->memory_exception_data);
}

static int emu_restore_objects(struct emu_process *p, u32 num_objects, struct emu_blob *bl)
{
	const u32 skew = emu_fault_take_rptr_skew();
	struct emu_queue *q;
	const u32 *type;
	u32 i;
	int ret = 0;

	for (i = 0; i < num_objects && !ret; i++) {
		type = (const u32 *)(bl->data + bl->off);
		if (bl->off + sizeof(*type) > bl->size)
			return -EINVAL;
		switch (*type) {
		case EMU_CRIU_OBJ_QUEUE:
			ret = emu_restore_queue(p, bl);
			break;
		case EMU_CRIU_OBJ_EVENT:
			ret = emu_restore_event(p, bl);
			break;
		default:
			/* including SVM ranges: this kernel has no SVM */
			ret = -EINVAL;
		}
	}
	if (skew && !ret)
		list_for_each_entry(q, &p->queues, link)
			if (q->executing)
				q->exec_rptr += skew;
	return ret;
}

static int emu_criu_restore(struct emu_process *p, struct kfd_ioctl_criu_args *args)
{
	const struct emu_criu_process_priv *pp;
	struct kfd_criu_bo_bucket *bos = NULL;
	struct emu_fd_list fds = { 0 };
	struct emu_blob bl = { 0 };
	u8 *blob = NULL;
	int ret;

	if ((args->num_bos && !args->bos) || !args->devices || !args->priv_data ||
	    !args->priv_data_size || !args->num_devices)
		return -EINVAL;
	if (args->priv_data_size > EMU_CRIU_MAX_PRIV_SIZE)
		return -EINVAL;

	blob = kvmalloc(args->priv_data_size, GFP_KERNEL);
	if (!blob)
		return -ENOMEM;
	if (copy_from_user(blob, u64_to_user_ptr(args->priv_data), args->priv_data_size)) {
		kvfree(blob);
		return -EFAULT;
	}
	bl.data = blob;
	bl.size = args->priv_data_size;

	ret = emu_fd_list_init(&fds, args->num_bos);
	if (ret) {
		kvfree(blob);
		return ret;
	}

	mutex_lock(&p->lock);
	/* nothing may run before CRIU has put the memory back */
	emu_process_evict(p);

	pp = emu_blob_take(&bl, sizeof(*pp));
	if (!pp || pp->version != EMU_CRIU_PRIV_VERSION) {
		ret = -EINVAL;
		goto fail;
	}
	if (pp->xnack_mode) {
		ret = -EPERM;
		goto fail;
	}

	ret = emu_restore_devices(p, args, &bl);
	if (ret)
		goto fail;
	ret = emu_restore_bos(p, args, &bl, &bos, &fds);
	if (ret)
		goto fail;
	ret = emu_restore_objects(p, args->num_objects, &bl);
	if (ret)
		goto fail;
	if (bl.off != bl.size) {
		ret = -EINVAL;
		goto fail;
	}
	if (args->num_bos &&
	    copy_to_user(u64_to_user_ptr(args->bos), bos, args->num_bos * sizeof(*bos))) {
		ret = -EFAULT;
		goto fail;
	}

	p->restore_pending = true;
	mutex_unlock(&p->lock);
	emu_fd_list_finish(&fds, true);
	kvfree(bos);
	kvfree(blob);
	return 0;

fail:
	/* the process was fresh; make it so again */
	emu_process_reset(p);
	mutex_unlock(&p->lock);
	emu_fd_list_finish(&fds, false);
	kvfree(bos);
	kvfree(blob);
	return ret;
}

/* ---- RESUME ------------------------------------------------------------- */

static int emu_criu_resume(struct kfd_ioctl_criu_args *args)
{
	struct task_struct *task;
	struct emu_process *target;
	struct emu_kfd_mem *mem;
	struct mm_struct *mm;
	struct pid *pid;
	unsigned int i;
	int id, ret = 0;

	pid = find_get_pid(args->pid);
	if (!pid)
		return -ESRCH;
	task = get_pid_task(pid, PIDTYPE_PID);
	put_pid(pid);
	if (!task)
		return -ESRCH;
	mm = get_task_mm(task);
	put_task_struct(task);
	if (!mm)
		return -ESRCH;
	target = emu_process_get_by_mm(mm);
	if (!target) {
		mmput(mm);
		return -ESRCH;
	}

	mutex_lock(&target->lock);
	if (!target->restore_pending) {
		ret = -EINVAL;
		goto out;
	}
	/* the task's memory is back now: user pages can be pinned */
	for (i = 0; i < target->n_pdds && !ret; i++) {
		idr_for_each_entry(&target->pdds[i].mem_idr, mem, id) {
			if (!(mem->flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR))
				continue;
			ret = emu_bo_pin_user(mem->bo, mm, true);
			if (ret)
				break;
		}
	}
	if (!ret) {
		target->restore_pending = false;
		emu_process_restore(target);
	}
out:
	mutex_unlock(&target->lock);
	mmput(mm);
	emu_process_put(target);
	return ret;
}

int emu_ioctl_criu_op(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_criu_args *args = data;

	switch (args->op) {
	case KFD_CRIU_OP_PROCESS_INFO:
		return emu_criu_process_info(p, args);
	case KFD_CRIU_OP_CHECKPOINT:
		return emu_criu_checkpoint(p, args);
	case KFD_CRIU_OP_UNPAUSE:
		return emu_criu_unpause(p);
	case KFD_CRIU_OP_RESTORE:
		return emu_criu_restore(p, args);
	case KFD_CRIU_OP_RESUME:
		return emu_criu_resume(args);
	default:
		return -EINVAL;
	}
}
