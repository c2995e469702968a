// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: user mode queues and their heartbeat.
 *
 * A queue is its properties plus an MQD image.  User-mode SDMA queues run on
 * the emulated engine (emu_sdma_queue.c), a runtime's AQL queues on the
 * packet processor (emu_aql_queue.c); the process's queue worker drives both.
 * Other compute queues (bare pointers, PM4) do not execute: so that "running"
 * and "paused" can be told apart from user space, each active one of a
 * process whose queues are not evicted gets the 64-bit value at its read
 * pointer address incremented every heartbeat_ms.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include <linux/log2.h>

#include "emu.h"

#define EMU_MAX_QUEUE_PERCENTAGE	100
#define EMU_MAX_QUEUE_PRIORITY		15
#define EMU_MIN_QUEUE_RING_SIZE		1024
#define EMU_MAX_CU_MASK_BITS		1024
#define EMU_MQD_MAGIC			0x51554d45	/* "EMUQ" */

/* What our MQD image holds; the rest of the blob is zero. */
struct emu_mqd {
	u32 magic;
	u32 queue_id;
	u32 type;
	u32 doorbell_id;
	u64 ring_base;
	u64 rptr;
	u64 wptr;
	u32 ring_size;
	u32 percentage;
	u32 priority;
	u32 executing;
	u64 heartbeats;
	u64 exec_rptr;			/* where the engine is in the ring */
};

u32 emu_queue_mqd_size(u32 type)
{
	switch (type) {
	case KFD_IOC_QUEUE_TYPE_COMPUTE:
	case KFD_IOC_QUEUE_TYPE_COMPUTE_AQL:
		return EMU_MQD_SIZE_COMPUTE;
	case KFD_IOC_QUEUE_TYPE_SDMA:
	case KFD_IOC_QUEUE_TYPE_SDMA_XGMI:
		return EMU_MQD_SIZE_SDMA;
	default:
		return 0;
	}
}

/*
 * A compute queue's MQD image holds one MQD per XCC (amdkfd's multi-XCC
 * checkpoint puts them one after the other); each holds, after struct
 * emu_mqd, the record of that XCC's part of the kernel dispatch in flight
 * (emu_dispatch.c): what a restore needs besides the waves in the XCC's
 * context save area.  NULL where the MQD has no room for one (SDMA).
 */
void *emu_queue_mqd_record(struct emu_queue *q, u32 xcc)
{
	u32 per_xcc = q->n_xcc ? q->mqd_size / q->n_xcc : 0;
	size_t off = ALIGN(sizeof(struct emu_mqd), 8);

	if (!q->mqd || xcc >= q->n_xcc || per_xcc < off + emu_dispatch_record_size())
		return NULL;
	return q->mqd + (size_t)xcc * per_xcc + off;
}

void emu_queue_fill_mqd(struct emu_queue *q)
{
	struct emu_mqd *m = q->mqd;
	u32 x;

	for (x = 0; x < q->n_xcc; x++)
		if (emu_queue_mqd_record(q, x))
			emu_dispatch_save_record(q->dispatch, x, emu_queue_mqd_record(q, x));

	m->magic = EMU_MQD_MAGIC;
	m->queue_id = q->id;
	m->type = q->type;
	m->doorbell_id = q->doorbell_id;
	m->ring_base = q->ring_base;
	m->rptr = q->rptr;
	m->wptr = q->wptr;
	m->ring_size = q->ring_size;
	m->percentage = q->percentage;
	m->priority = q->priority;
	m->heartbeats = q->heartbeats;
	m->executing = q->executing;
	m->exec_rptr = q->exec_rptr;
}

/* A restored MQD image of ours carries the heartbeat count and engine state on. */
void emu_queue_load_mqd(struct emu_queue *q)
{
	struct emu_mqd *m = q->mqd;

	if (q->mqd_size >= sizeof(*m) && m->magic == EMU_MQD_MAGIC) {
		q->heartbeats = m->heartbeats;
		q->executing = m->executing;
		q->exec_rptr = m->exec_rptr;
	}
}

bool emu_queue_is_active(struct emu_queue *q)
{
	return q->ring_size && q->ring_base && q->percentage && !q->dbg_suspended;
}

struct emu_queue *emu_queue_find(struct emu_process *p, u32 id)
{
	struct emu_queue *q;

	list_for_each_entry(q, &p->queues, link)
		if (q->id == id)
			return q;
	return NULL;
}

/*
 * Enter @q into @p: a new queue gets the lowest free queue and doorbell ids,
 * a restored one (@fixed_id) keeps its own.
 */
int emu_queue_add(struct emu_process *p, struct emu_queue *q, bool fixed_id)
{
	struct emu_pdd *pdd = q->pdd;
	const struct emu_model *m = pdd->gpu->model;
	atomic_t *sdma = NULL;
	u32 sdma_max = 0;

	if (q->type == KFD_IOC_QUEUE_TYPE_SDMA) {
		sdma = &pdd->gpu->sdma_used;
		sdma_max = m->num_sdma_engines * m->num_sdma_queues_per_engine;
	} else if (q->type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI) {
		sdma = &pdd->gpu->sdma_xgmi_used;
		sdma_max = m->num_sdma_xgmi_engines * m->num_sdma_queues_per_engine;
	}

	if (fixed_id) {
		if (q->id >= EMU_MAX_QUEUES || test_bit(q->id, p->queue_ids) ||
		    q->doorbell_id >= EMU_MAX_DOORBELLS ||
		    test_bit(q->doorbell_id, pdd->doorbell_ids))
			return -EINVAL;
	} else {
		q->id = find_first_zero_bit(p->queue_ids, EMU_MAX_QUEUES);
		if (q->id >= EMU_MAX_QUEUES)
			return -ENOMEM;
		q->doorbell_id = find_first_zero_bit(pdd->doorbell_ids, EMU_MAX_DOORBELLS);
		if (q->doorbell_id >= EMU_MAX_DOORBELLS)
			return -ENOMEM;
	}
	if (sdma) {
		if (atomic_inc_return(sdma) > sdma_max) {
			atomic_dec(sdma);
			return -ENOMEM;
		}
		if (!fixed_id && !q->engine_named)
			q->sdma_id = (atomic_read(sdma) - 1) % max(m->num_sdma_engines, 1U);
	}

	set_bit(q->id, p->queue_ids);
	set_bit(q->doorbell_id, pdd->doorbell_ids);
	list_add_tail(&q->link, &p->queues);
	p->n_queues++;
	emu_procfs_add_queue(p, q);
	emu_heartbeat_kick(p);
	return 0;
}

/*
 * The MQDs and control stacks of @q, one of each per XCC of its GPU, as
 * amdkfd allocates them; @ctl_stack_size is one XCC's.  A restore passes
 * their saved contents (@mqd, @ctl_stack), a new queue none.
 */
int emu_queue_alloc_state(struct emu_queue *q, u32 n_xcc, u32 ctl_stack_size, const void *mqd,
			  const void *ctl_stack)
{
	size_t ctl_bytes = (size_t)ctl_stack_size * n_xcc;

	q->n_xcc = n_xcc;
	q->mqd_size = emu_queue_mqd_size(q->type) * n_xcc;
	q->ctl_stack_size = ctl_stack_size;
	q->mqd = mqd ? kmemdup(mqd, q->mqd_size, GFP_KERNEL) : kzalloc(q->mqd_size, GFP_KERNEL);
	if (ctl_bytes)
		q->ctl_stack = kvzalloc(ctl_bytes, GFP_KERNEL);
	if (!q->mqd || (ctl_bytes && !q->ctl_stack))
		return -ENOMEM;
	if (ctl_stack)
		memcpy(q->ctl_stack, ctl_stack, ctl_bytes);
	return 0;
}

static void emu_queue_release(struct emu_queue *q)
{
	kfree(q->cu_mask);
	emu_dispatch_free(q->dispatch);
	kfree(q->mqd);
	kvfree(q->ctl_stack);
	kfree(q);
}

void emu_queue_free(struct emu_process *p, struct emu_queue *q)
{
	struct emu_pdd *pdd = q->pdd;

	emu_procfs_del_queue(q);
	list_del(&q->link);
	p->n_queues--;
	clear_bit(q->id, p->queue_ids);
	clear_bit(q->doorbell_id, pdd->doorbell_ids);
	if (q->type == KFD_IOC_QUEUE_TYPE_SDMA)
		atomic_dec(&pdd->gpu->sdma_used);
	else if (q->type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI)
		atomic_dec(&pdd->gpu->sdma_xgmi_used);
	emu_queue_release(q);
}

void emu_queues_destroy_all(struct emu_process *p)
{
	struct emu_queue *q, *tmp;

	list_for_each_entry_safe(q, tmp, &p->queues, link)
		emu_queue_free(p, q);
}

/* SDMA_BY_ENG_ID (6.12, KFD 1.17): an SDMA queue on the engine the caller names */
static bool emu_queue_by_engine(u32 type)
{
#if EMU_KFD_MINOR_VERSION >= 17
	return type == KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID;
#else
	return false;
#endif
}

#if EMU_KFD_MINOR_VERSION >= 17
/*
 * As 6.12 does: engines are numbered PCIe ones first, then xGMI ones; a number past the last is
 * -EINVAL. The queue becomes an SDMA or SDMA_XGMI queue of that engine, which is what it is from
 * then on, in CHECKPOINT's queue data too (the engine is in its sdma_id, as for any SDMA queue).
 */
static int emu_queue_name_engine(struct emu_queue *q, const struct emu_model *m,
				 const struct kfd_ioctl_create_queue_args *args)
{
	u32 engine = args->sdma_engine_id;

	if (engine >= m->num_sdma_engines + m->num_sdma_xgmi_engines)
		return -EINVAL;
	if (engine < m->num_sdma_engines) {
		q->type = KFD_IOC_QUEUE_TYPE_SDMA;
		q->sdma_id = engine;
	} else {
		q->type = KFD_IOC_QUEUE_TYPE_SDMA_XGMI;
		q->sdma_id = engine - m->num_sdma_engines;
	}
	q->engine_named = true;
	return 0;
}
#else
static int emu_queue_name_engine(struct emu_queue *q, const struct emu_model *m,
				 const struct kfd_ioctl_create_queue_args *args)
{
	return -ENOTSUPP;
}
#endif

/* Checks shared by CREATE and the kernel's property parser. */
static int emu_queue_check_props(u32 percentage, u32 priority, u64 ring_base,
				 u32 ring_size)
{
	if ((percentage & 0xff) > EMU_MAX_QUEUE_PERCENTAGE)
		return -EINVAL;
	if (priority > EMU_MAX_QUEUE_PRIORITY)
		return -EINVAL;
	if (ring_base && !access_ok(u64_to_user_ptr(ring_base), sizeof(u64)))
		return -EFAULT;
	if (ring_size && !is_power_of_2(ring_size))
		return -EINVAL;
	return 0;
}

int emu_ioctl_create_queue(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_create_queue_args *args = data;
	struct emu_queue *q;
	struct emu_pdd *pdd;
	int ret;

	ret = emu_queue_check_props(args->queue_percentage, args->queue_priority,
				    args->ring_base_address, args->ring_size);
	if (ret)
		return ret;
#if KFD_IOCTL_MINOR_VERSION >= 22
	/* KFD 1.22 (7.3): an AQL queue's metadata ring is 0 or a power of 2 (unused here) */
	if (args->metadata_ring_size && !is_power_of_2(args->metadata_ring_size))
		return -EINVAL;
#endif
	if (!access_ok(u64_to_user_ptr(args->read_pointer_address), sizeof(u32)) ||
	    !access_ok(u64_to_user_ptr(args->write_pointer_address), sizeof(u32)))
		return -EFAULT;
	if (args->eop_buffer_address &&
	    !access_ok(u64_to_user_ptr(args->eop_buffer_address), sizeof(u32)))
		return -EFAULT;
	if (args->ctx_save_restore_address &&
	    !access_ok(u64_to_user_ptr(args->ctx_save_restore_address), sizeof(u32)))
		return -EFAULT;
	if (!emu_queue_mqd_size(args->queue_type) && !emu_queue_by_engine(args->queue_type))
		return -ENOTSUPP;

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	/* a queue on a named engine is an SDMA queue of one kind or the other */
	q->type = emu_queue_by_engine(args->queue_type) ? KFD_IOC_QUEUE_TYPE_SDMA : args->queue_type;
	q->ring_base = args->ring_base_address;
	q->ring_size = max_t(u32, args->ring_size, EMU_MIN_QUEUE_RING_SIZE);
	q->rptr = args->read_pointer_address;
	q->wptr = args->write_pointer_address;
	q->percentage = args->queue_percentage & 0xff;
	q->priority = args->queue_priority;
	q->eop_addr = args->eop_buffer_address;
	q->eop_size = args->eop_buffer_size;
	q->ctx_save_addr = args->ctx_save_restore_address;
	q->ctx_save_size = args->ctx_save_restore_size;

	mutex_lock(&p->lock);
	pdd = emu_pdd_by_user_id(p, args->gpu_id);
	if (!pdd) {
		ret = -EINVAL;
		goto err;
	}
	ret = emu_queue_alloc_state(q, emu_gpu_xcc_count(pdd->gpu), args->ctl_stack_size, NULL, NULL);
	if (ret)
		goto err;
	if (emu_pdd_bind(pdd)) {
		ret = -ESRCH;
		goto err;
	}
	if (emu_queue_by_engine(args->queue_type)) {
		ret = emu_queue_name_engine(q, pdd->gpu->model, args);
		if (ret)
			goto err;
	}
	ret = emu_pdd_doorbells(pdd);
	if (ret)
		goto err;
	q->pdd = pdd;
	ret = emu_queue_add(p, q, false);
	if (ret)
		goto err;
	emu_queue_fill_mqd(q);

	args->queue_id = q->id;
	/* /dev/kfd offset of the slice, plus the queue's doorbell within it */
	args->doorbell_offset = EMU_MMAP_TYPE_DOORBELL | EMU_MMAP_GPU_ID(args->gpu_id) |
				(u64)q->doorbell_id * sizeof(u64);
	mutex_unlock(&p->lock);
	return 0;

err:
	mutex_unlock(&p->lock);
	emu_queue_release(q);
	return ret;
}

int emu_ioctl_destroy_queue(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_destroy_queue_args *args = data;
	struct emu_queue *q;
	int ret = 0;

	mutex_lock(&p->lock);
	q = emu_queue_find(p, args->queue_id);
	if (q)
		emu_queue_free(p, q);
	else
		ret = -EINVAL;
	mutex_unlock(&p->lock);
	return ret;
}

int emu_ioctl_update_queue(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_update_queue_args *args = data;
	struct emu_queue *q;
	int ret;

	ret = emu_queue_check_props(args->queue_percentage, args->queue_priority,
				    args->ring_base_address, args->ring_size);
	if (ret)
		return ret;

	mutex_lock(&p->lock);
	q = emu_queue_find(p, args->queue_id);
	if (!q) {
		ret = -EFAULT;
	} else {
		q->ring_base = args->ring_base_address;
		q->ring_size = args->ring_size;
		q->percentage = args->queue_percentage & 0xff;
		q->priority = args->queue_priority;
		emu_queue_fill_mqd(q);
		emu_heartbeat_kick(p);
	}
	mutex_unlock(&p->lock);
	return ret;
}

int emu_ioctl_set_cu_mask(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_set_cu_mask_args *args = data;
	u32 count = args->num_cu_mask;
	struct emu_queue *q;
	u32 *mask;
	int ret = 0;

	if (!count || count % 32)
		return -EINVAL;
	count = min_t(u32, count, EMU_MAX_CU_MASK_BITS);
	mask = kzalloc(count / 8, GFP_KERNEL);
	if (!mask)
		return -ENOMEM;
	if (copy_from_user(mask, u64_to_user_ptr(args->cu_mask_ptr), count / 8)) {
		kfree(mask);
		return -EFAULT;
	}

	mutex_lock(&p->lock);
	q = emu_queue_find(p, args->queue_id);
	if (!q) {
		ret = -EFAULT;
		kfree(mask);
	} else {
		kfree(q->cu_mask);
		q->cu_mask = mask;
		q->cu_mask_count = count;
	}
	mutex_unlock(&p->lock);
	return ret;
}

/*
 * The control stack of the queue's last preemption, where the kernel puts it
 * for a debugger.  The gfx9 MQD manager of 6.1 copies the whole control stack
 * area (ctl_stack_size bytes, the used part at its end) to ctl_stack_address,
 * the start of the context save area; 6.5 and newer write there only the
 * save area header's four wave-state words (control stack offset and used
 * size, wave state end and used size) and the used part at its offset, and
 * on a queue of several XCCs do so for each XCC, into its own save area
 * (ctl_stack_address + xcc * ctx_save_restore_size), reporting XCC 0's used
 * sizes only.  User memory is written after p->lock is dropped, as
 * everywhere here.
 */
int emu_ioctl_get_queue_wave_state(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_get_queue_wave_state_args *args = data;
	u32 cntl_stack_offset[EMU_MAX_XCC] = {}, wg_state_offset[EMU_MAX_XCC] = {};
	u32 size = 0, stride = 0, n_xcc = 1, x;
	u8 *copy = NULL;
	struct emu_queue *q;
	int ret = 0;

	mutex_lock(&p->lock);
	q = emu_queue_find(p, args->queue_id);
	if (!q) {
		ret = -EFAULT;
	} else if ((q->type != KFD_IOC_QUEUE_TYPE_COMPUTE &&
		    q->type != KFD_IOC_QUEUE_TYPE_COMPUTE_AQL) ||
		   (emu_queue_is_active(q) && emu_process_queues_active(p))) {
		/* only an idle compute queue has a saved wave state */
		ret = -EINVAL;
	} else {
		size = q->ctl_stack_size;
		stride = q->ctx_save_size;
		n_xcc = min_t(u32, q->n_xcc, EMU_MAX_XCC);
		for (x = 0; x < n_xcc; x++)
			emu_dispatch_wave_state(q, x, &cntl_stack_offset[x], &wg_state_offset[x]);
		args->ctl_stack_used_size = size - cntl_stack_offset[0];
		args->save_area_used_size = wg_state_offset[0] - size;
		if (size && q->ctl_stack) {
			copy = kvmalloc((size_t)size * n_xcc, GFP_KERNEL);
			if (copy)
				memcpy(copy, q->ctl_stack, (size_t)size * n_xcc);
			ret = copy ? 0 : -ENOMEM;
		}
	}
	mutex_unlock(&p->lock);
	if (ret || !copy)
		return ret;
#if EMU_KFD_MINOR_VERSION >= 13
	for (x = 0; x < n_xcc && !ret; x++) {
		u64 slice = args->ctl_stack_address + (u64)x * stride;
		const u8 *stack = copy + (size_t)x * size;
		struct kfd_context_save_area_header h = {
			.wave_state = {
				.control_stack_offset = cntl_stack_offset[x],
				.control_stack_size = size - cntl_stack_offset[x],
				.wave_state_offset = wg_state_offset[x],
				.wave_state_size = wg_state_offset[x] - size,
			},
		};

		if (copy_to_user(u64_to_user_ptr(slice), &h.wave_state, sizeof(h.wave_state)) ||
		    copy_to_user(u64_to_user_ptr(slice + cntl_stack_offset[x]), stack + cntl_stack_offset[x],
				 size - cntl_stack_offset[x]))
			ret = -EFAULT;
	}
#else
	if (copy_to_user(u64_to_user_ptr(args->ctl_stack_address), copy, size))
		ret = -EFAULT;
#endif
	kvfree(copy);
	return ret;
}

int emu_ioctl_alloc_queue_gws(struct file *filp, struct emu_process *p, void *data)
{
	struct kfd_ioctl_alloc_queue_gws_args *args = data;
	struct emu_queue *q;
	int ret = 0;

	mutex_lock(&p->lock);
	q = emu_queue_find(p, args->queue_id);
	if (!q) {
		ret = -EINVAL;
	} else if (!q->pdd->gpu->model->num_gws) {
		ret = -ENODEV;
	} else {
		q->gws = args->num_gws != 0;
		args->first_gws = 0;
	}
	mutex_unlock(&p->lock);
	return ret;
}

/* ---- heartbeat ---------------------------------------------------------- */

void emu_heartbeat_kick(struct emu_process *p)
{
	if (!p->hb_stopping && !p->mm_gone)
		queue_delayed_work(emu.wq, &p->heartbeat,
				   msecs_to_jiffies(emu.heartbeat_ms));
}

/* Increment the u64 at @addr in @mm: anonymous memory or one of our BOs. */
static int emu_user_inc_u64(struct mm_struct *mm, u64 addr)
{
	struct vm_area_struct *vma;
	struct page *page = NULL;
	bool ours = false;
	u64 *ptr;
	long n;

	if (offset_in_page(addr) > PAGE_SIZE - sizeof(u64))
		return -EINVAL;

	mmap_read_lock(mm);
	vma = vma_lookup(mm, addr);
	if (vma && emu_vma_is_bo(vma)) {
		page = emu_vma_bo_page(vma, addr);
		ours = true;
	} else if (vma) {
		n = emu_get_user_pages_remote(mm, addr, 1, FOLL_WRITE, &page);
		if (n != 1)
			page = NULL;
	}
	if (page) {
		ptr = kmap_local_page(page) + offset_in_page(addr);
		WRITE_ONCE(*ptr, READ_ONCE(*ptr) + 1);
		kunmap_local(ptr);
		if (!ours) {
			set_page_dirty_lock(page);
			put_page(page);
		}
	}
	mmap_read_unlock(mm);
	return page ? 0 : -EFAULT;
}

struct emu_beat {
	u32 id;
	u64 addr;
	bool ok;
};

void emu_heartbeat_work(struct work_struct *work)
{
	struct emu_process *p = container_of(to_delayed_work(work),
					     struct emu_process, heartbeat);
	struct emu_beat *beats;
	struct emu_queue *q;
	unsigned int i, n = 0;
	bool more;

	mutex_lock(&p->lock);
	if (!emu_process_queues_active(p) || p->mm_gone || !p->n_queues) {
		mutex_unlock(&p->lock);
		return;
	}
	more = emu_sdma_queues_run(p);
	more |= emu_aql_queues_run(p);
	beats = kcalloc(p->n_queues, sizeof(*beats), GFP_KERNEL);
	if (beats) {
		list_for_each_entry(q, &p->queues, link) {
			/* queues that execute move their read pointer only by executing */
			if (!emu_queue_is_active(q) || !q->rptr || q->type == KFD_IOC_QUEUE_TYPE_SDMA ||
			    q->type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI || emu_aql_queue_runs(q))
				continue;
			beats[n].id = q->id;
			beats[n].addr = q->rptr;
			n++;
		}
	}
	mutex_unlock(&p->lock);

	/*
	 * Touch user memory without p->lock: mmap handlers take our locks under
	 * mmap_lock.  mmput_async because dropping the last mm user here would
	 * run exit_mmap, whose notifier cancels this very work.
	 */
	if (n && mmget_not_zero(p->mm)) {
		for (i = 0; i < n; i++)
			beats[i].ok = !emu_user_inc_u64(p->mm, beats[i].addr);
		mmput_async(p->mm);
	}

	mutex_lock(&p->lock);
	for (i = 0; i < n; i++) {
		q = beats[i].ok ? emu_queue_find(p, beats[i].id) : NULL;
		if (q)
			q->heartbeats++;
	}
	if (emu_process_queues_active(p) && more && !p->hb_stopping && !p->mm_gone)
		queue_delayed_work(emu.wq, &p->heartbeat, 0);
	else if (emu_process_queues_active(p))
		emu_heartbeat_kick(p);
	mutex_unlock(&p->lock);
	kfree(beats);
}
