// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: user-mode SDMA queues (KFD queue types SDMA and SDMA_XGMI) run
 * on the emulated SDMA 4.x engine of their GPU.
 *
 * The runtime writes packets into its ring, stores the new write pointer (a
 * monotonic 64-bit byte offset: ROCr's and amdgpu's convention on SDMA 4) at
 * the queue's write pointer address, then rings the doorbell with the same
 * value.  Like the hardware with write-pointer polling enabled in the MQD
 * (kfd_mqd_manager_v9.c programs the poll address), the engine takes the write
 * pointer from memory: a queue CRIU restored, whose doorbell page is new,
 * carries on from what its memory says.  Every pass of the process's queue
 * worker (each heartbeat_ms, at once while a queue has more) fetches the
 * packets between the engine's read pointer and the write pointer through the
 * process's GPU VM, executes them (emu_sdma_exec) and writes the read pointer
 * back, in bytes, to the queue's read pointer address.  A POLL_REGMEM whose
 * condition does not hold yet keeps the queue on that packet until a later
 * pass.  A fault (ring or data not mapped, an illegal packet, a write pointer
 * more than a ring ahead) stops the queue for good; the kernel log and
 * debugfs name it.
 *
 * Unlike compute queues, SDMA queues get no heartbeat: like the hardware, an
 * idle one leaves its read pointer alone.  Passes run under the process lock, so no queue is mid-packet when CRIU or an
 * eviction stops the process's queues, and the engine's read pointer travels
 * in the MQD image through checkpoint and restore.
 */
#include <linux/slab.h>
#include <linux/mm.h>

#include "emu.h"

/* Data one queue may move in one pass before the others get their turn. */
#define EMU_SDMA_PASS_BYTES	(8ULL << 20)

static bool emu_sdma_queue_type(u32 type)
{
	return type == KFD_IOC_QUEUE_TYPE_SDMA || type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI;
}

static void emu_sdma_queue_fault(struct emu_process *p, struct emu_queue *q,
				 const char *what, u64 va)
{
	q->fault = what;
	q->fault_va = va;
	pr_warn_ratelimited(EMU_NAME ": [sdma] pid %d queue %u (GPU %u): %s at 0x%llx; the queue stops\n",
			    p->lead_thread ? task_pid_nr(p->lead_thread) : -1, q->id,
			    q->pdd->gpu->index, what, va);
}

/* One pass over @q; true if it stopped with work left. Caller holds p->lock. */
static bool emu_sdma_queue_pass(struct emu_process *p, struct emu_queue *q)
{
	struct emu_sdma_ctx x = {
		.gpu = q->pdd->gpu, .vm = q->pdd->vm, .p = p, .start = ktime_get(),
		.polls = q->polls,
	};
	u64 wptr, pending, at, first;
	u32 *buf, done;
	int ret;

	if (!x.vm || emu_sdma_access(&x, q->wptr, &wptr, sizeof(wptr), false, 0)) {
		if (q->executing)
			emu_sdma_queue_fault(p, q, "write pointer not readable", q->wptr);
		return false;
	}
	if (wptr == q->exec_rptr)
		return false;
	q->executing = true;
	pending = wptr - q->exec_rptr;
	if (wptr < q->exec_rptr || pending > q->ring_size || (pending & 3)) {
		emu_sdma_queue_fault(p, q, "write pointer not within one ring of the read pointer", wptr);
		return false;
	}

	buf = kvmalloc(pending, GFP_KERNEL);
	if (!buf) {
		emu_sdma_queue_fault(p, q, "ring contents too large to fetch", q->ring_base);
		return false;
	}
	at = q->exec_rptr & (q->ring_size - 1);
	first = min(pending, q->ring_size - at);
	ret = emu_sdma_access(&x, q->ring_base + at, buf, first, false, 0);
	if (!ret && first < pending)
		ret = emu_sdma_access(&x, q->ring_base, (u8 *)buf + first, pending - first, false, 0);
	done = 0;
	if (!ret)
		ret = emu_sdma_exec(&x, buf, pending / 4, q->ring_base + at, &done, EMU_SDMA_PASS_BYTES);
	kvfree(buf);

	q->exec_rptr += done * 4ULL;
	q->polls = x.polls;
	q->sdma_bytes += x.bytes;
	if (emu_sdma_access(&x, q->rptr, &q->exec_rptr, sizeof(q->exec_rptr), true, 0)) {
		emu_sdma_queue_fault(p, q, "read pointer not writable", q->rptr);
		return false;
	}
	if (ret == -EFAULT)
		emu_sdma_queue_fault(p, q, x.fault ? x.fault : "read pointer not writable",
				     x.fault ? x.fault_va : q->rptr);
	return ret == -ENOSPC;
}

/* Bytes of packets @q holds that its engine has not executed; 0 if none or unknown. */
u64 emu_sdma_queue_pending(struct emu_queue *q)
{
	struct emu_sdma_ctx x = { .gpu = q->pdd->gpu, .vm = q->pdd->vm };
	u64 wptr;

	if (!emu_sdma_queue_type(q->type) || !x.vm ||
	    emu_sdma_access(&x, q->wptr, &wptr, sizeof(wptr), false, 0) || wptr < q->exec_rptr)
		return 0;
	return wptr - q->exec_rptr;
}

/*
 * Run every SDMA queue of @p that has work; true if one stopped with more to
 * do.  Caller holds p->lock and has checked that the queues are active.
 */
bool emu_sdma_queues_run(struct emu_process *p)
{
	struct emu_queue *q;
	bool more = false;

	list_for_each_entry(q, &p->queues, link) {
		if (!emu_sdma_queue_type(q->type) || q->fault || !emu_queue_is_active(q))
			continue;
		more |= emu_sdma_queue_pass(p, q);
	}
	return more;
}
