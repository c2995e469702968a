// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: the packet processor of AQL compute queues.
 *
 * An AQL queue of ROCm's runtime is a ring of 64-byte packets in the
 * process's memory, described by an amd_queue_t that the runtime allocates
 * GPU-visible: KFD gets &read_dispatch_id as the read pointer and
 * &write_dispatch_id as the write pointer (doorbell type 2, gfx9).  The
 * command processor finds the amd_queue_t the way the firmware does, from
 * read_dispatch_id_field_base_byte_offset, the word after the read pointer.
 *
 * Each pass of the process's queue worker (every heartbeat_ms, at once while
 * a queue has more) consumes the packets between the processor's position
 * and write_dispatch_id, in order, through the process's GPU VM:
 *
 *  - a packet whose header still says INVALID is not published yet: the
 *    processor waits on it, as the hardware stalls on it;
 *  - BARRIER_AND waits until every non-null dependency signal reads 0,
 *    BARRIER_OR until one does (or none is given);
 *  - KERNEL_DISPATCH starts a dispatch (emu_dispatch.c): its workgroups run
 *    on the shader core in this and the following passes, and the packets
 *    after it wait until it has completed.  A wave that reaches an
 *    instruction the core does not execute, or memory the GPU VM does not
 *    give it, ends the dispatch the way the hardware's trap handler reports
 *    it: the error code goes into the queue's queue_inactive_signal, whose
 *    event is raised, and the queue stops (with the runtime enabled, KFD
 *    1.13: a queue exception instead, see emu_aql_queue_error()).  The
 *    runtime's queue error handler suspends the queue and calls the
 *    application's error callback (HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
 *    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION).  The dispatch's own
 *    completion signal is left alone, as for a faulting dispatch;
 *  - the AMD vendor-specific BARRIER_VALUE packet (hsa_ext_amd.h; HIP from
 *    6.x puts it on its queues to order work after a signal) waits until
 *    (value of its signal & mask) compares to its value by its condition
 *    (EQ, NE, LT, GTE, signed), a null signal being satisfied;
 *  - ROCr's own PM4 indirect-buffer vendor packet runs its IB when that holds
 *    only cache maintenance (see emu_aql_pm4_ib);
 *  - AGENT_DISPATCH is a format error on a GPU queue (code 32 of the same
 *    signal), as is a BARRIER_VALUE with an unknown condition; other AMD
 *    vendor packet formats are vendor-packet errors (code 256).
 *
 * A packet that can proceed is consumed first: its slot's header becomes
 * INVALID ("processed, not yet reassigned") and read_dispatch_id moves past
 * it, so the slot is the producer's again.  Then it completes: if profiling is
 * on for the queue, the start and end timestamps go into its completion
 * signal, whose value is decremented; a signal with an event mailbox gets its
 * event id written there and the end-of-pipe interrupt raised with it, which
 * amdkfd turns into kfd_signal_event_interrupt(pasid, id, 32): that is what
 * wakes hsa_signal_wait_* in blocked mode.
 *
 * Compute queues without an amd_queue_t (the suite's raw-KFD and libhsakmt
 * workloads give KFD bare pointers) are not fed to the processor: they keep
 * the heartbeat of emu_queue.c.
 */
#include <linux/slab.h>

#include "emu.h"
#include "emu_shader.h"

#define AQL_PACKET_BYTES		64
#define AQL_PASS_PACKETS		1024	/* before the other queues get a turn */
#define AQL_DISPATCH_SLICE		20000	/* wave instructions, likewise */

#define AQL_TYPE_VENDOR_SPECIFIC	0
#define AQL_TYPE_INVALID		1
#define AQL_TYPE_KERNEL_DISPATCH	2
#define AQL_TYPE_BARRIER_AND		3
#define AQL_TYPE_AGENT_DISPATCH		4
#define AQL_TYPE_BARRIER_OR		5
#define AQL_HEADER_TYPE(h)		((h) & 0xff)
#define AQL_BARRIER_DEPS		5

/*
 * AMD vendor-specific packets: the byte after the 16-bit header names the
 * format.  BARRIER_VALUE: signal at byte 8, value 16, mask 24, condition 32
 * (a 32-bit hsa_signal_condition_t), completion signal 56.
 */
#define AQL_AMD_FORMAT(pkt0)		(((pkt0) >> 16) & 0xff)
#define AQL_AMD_PM4_IB			1	/* ROCr's own: a PM4 indirect buffer */
#define AQL_AMD_BARRIER_VALUE		2
/* PM4 type-3 packets (header: type 31:30, count 29:16 = dwords - 2, opcode 15:8) */
#define PM4_TYPE(h)			((h) >> 30)
#define PM4_COUNT(h)			(((h) >> 16) & 0x3fff)
#define PM4_OPCODE(h)			(((h) >> 8) & 0xff)
#define PM4_OP_NOP			0x10
#define PM4_OP_INDIRECT_BUFFER		0x3f
#define PM4_OP_ACQUIRE_MEM		0x58
#define PM4_IB_SIZE_MASK		0xfffff
#define PM4_IB_VALID			BIT(23)
#define PM4_IB_MAX_DW			4096	/* the emulator's; ROCr's IB is 1024 */
#define AQL_CONDITION_EQ		0
#define AQL_CONDITION_NE		1
#define AQL_CONDITION_LT		2
#define AQL_CONDITION_GTE		3

/* amd_queue_t (ROCr's amd_hsa_queue.h): byte offsets the processor reads */
#define AMD_QUEUE_BASE_ADDRESS		8
#define AMD_QUEUE_SIZE_PACKETS		24
#define AMD_QUEUE_READ_DISPATCH_ID	128
#define AMD_QUEUE_PROPERTIES		180
#define AMD_QUEUE_INACTIVE_SIGNAL	192
#define AMD_QUEUE_PROFILING		BIT(3)

/* amd_signal_t (amd_hsa_signal.h) */
#define AMD_SIGNAL_VALUE		8
#define AMD_SIGNAL_MAILBOX		16
#define AMD_SIGNAL_EVENT_ID		24
#define AMD_SIGNAL_START_TS		32
#define AMD_SIGNAL_END_TS		40

/* queue_inactive_signal error codes, as ROCr's queue error handler decodes them */
#define AQL_ERROR_INVALID_FORMAT	32
#define AQL_ERROR_VENDOR_PACKET		256
#define AQL_ERROR_MEMORY_VIOLATION	0x20000000
#define AQL_ERROR_ILLEGAL_INSTRUCTION	0x40000000

/* what became of a packet: DONE (consumed and completed), STARTED (consumed, completes later) */
enum emu_aql_step { AQL_DONE, AQL_STARTED, AQL_WAIT, AQL_ERROR };

struct emu_aql_pass {
	struct emu_sdma_ctx x;		/* the GPU VM, as the copy engine sees it */
	struct emu_process *p;
	struct emu_queue *q;
	u64 amd_queue;			/* address of the amd_queue_t */
	bool profiling;
};

static int emu_aql_read(struct emu_aql_pass *a, u64 va, void *buf, u64 len)
{
	return emu_sdma_access(&a->x, va, buf, len, false, 0);
}

static int emu_aql_write(struct emu_aql_pass *a, u64 va, const void *buf, u64 len)
{
	return emu_sdma_access(&a->x, va, (void *)buf, len, true, 0);
}

/*
 * Is @q a runtime's AQL queue?  Decided once per queue life (and again after
 * a restore): the amd_queue_t around its read pointer must describe this
 * very ring.
 */
static bool emu_aql_queue_of_runtime(struct emu_aql_pass *a)
{
	struct emu_queue *q = a->q;
	u32 field_offset, size_packets;
	u64 base, ring;

	if (q->aql_kind)
		return q->aql_kind == EMU_AQL_RUNTIME;
	q->aql_kind = EMU_AQL_BARE;
	if (q->type != KFD_IOC_QUEUE_TYPE_COMPUTE_AQL || !a->x.vm ||
	    emu_aql_read(a, q->rptr + sizeof(u64), &field_offset, sizeof(field_offset)) ||
	    field_offset != AMD_QUEUE_READ_DISPATCH_ID)
		return false;
	base = q->rptr - field_offset;
	if (emu_aql_read(a, base + AMD_QUEUE_BASE_ADDRESS, &ring, sizeof(ring)) ||
	    emu_aql_read(a, base + AMD_QUEUE_SIZE_PACKETS, &size_packets, sizeof(size_packets)) ||
	    ring != q->ring_base || (u64)size_packets * AQL_PACKET_BYTES != q->ring_size)
		return false;
	q->aql_kind = EMU_AQL_RUNTIME;
	return true;
}

static void emu_aql_log_stop(struct emu_aql_pass *a, const char *what, u64 va, u32 code)
{
	struct emu_queue *q = a->q;

	q->fault = what;
	q->fault_va = va;
	/* once per queue: it stops for good */
	pr_warn(EMU_NAME ": [aql] pid %d queue %u (GPU %u): %s at 0x%llx (packet %llu); queue error 0x%x, the queue stops\n",
			    a->p->lead_thread ? task_pid_nr(a->p->lead_thread) : -1, q->id,
			    q->pdd->gpu->index, what, va, q->exec_rptr / AQL_PACKET_BYTES, code);
}

/*
 * The end-of-pipe of a signal: the event id into the mailbox and the
 * interrupt that carries it.  Signals without a mailbox are polled by their
 * waiters.
 */
static void emu_aql_signal_event(struct emu_aql_pass *a, u64 signal)
{
	u64 mailbox;
	u32 event_id;

	if (emu_aql_read(a, signal + AMD_SIGNAL_MAILBOX, &mailbox, sizeof(mailbox)) || !mailbox ||
	    emu_aql_read(a, signal + AMD_SIGNAL_EVENT_ID, &event_id, sizeof(event_id)) ||
	    emu_aql_write(a, mailbox, &event_id, sizeof(event_id)))
		return;
	emu_event_signal_interrupt(a->p, event_id, 32);
}

static int emu_aql_complete(struct emu_aql_pass *a, u64 signal, u64 start_ts)
{
	u64 end_ts = emu_gpu_clock_counter();
	int ret;

	if (!signal)
		return 0;
	if (a->profiling &&
	    (emu_aql_write(a, signal + AMD_SIGNAL_START_TS, &start_ts, sizeof(start_ts)) ||
	     emu_aql_write(a, signal + AMD_SIGNAL_END_TS, &end_ts, sizeof(end_ts))))
		return -EFAULT;
	ret = emu_gpu_atomic_add64(&a->x, signal + AMD_SIGNAL_VALUE, -1);
	if (ret)
		return ret;
	emu_aql_signal_event(a, signal);
	return 0;
}

#if EMU_KFD_MINOR_VERSION >= 13
/* The exception code (KFD 1.13) the kernel gets for a queue error code: wave or packet */
static u64 emu_aql_exception_mask(u32 code)
{
	switch (code) {
	case AQL_ERROR_ILLEGAL_INSTRUCTION:
		return KFD_EC_MASK(EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION);
	case AQL_ERROR_MEMORY_VIOLATION:
		return KFD_EC_MASK(EC_QUEUE_WAVE_APERTURE_VIOLATION);
	case AQL_ERROR_VENDOR_PACKET:
		return KFD_EC_MASK(EC_QUEUE_PACKET_VENDOR_UNSUPPORTED);
	default:
		return KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED);
	}
}

/*
 * A queue exception of a process whose runtime is enabled, delivered as 6.5 to 7.3 deliver one
 * that no debugger subscribed to: the queue's context save area starts with a header in which
 * the thunk left the address of a 64-bit error payload and an event id; the exception's bit is
 * ORed into the payload and that event is set (as SET_EVENT would). The kernel reads the header
 * and the payload with the process's own mm; here they are reached through the GPU VM, where
 * the thunk maps the save area as it must for the CP. A queue without a save area, or with a
 * header that cannot be read, gets nothing, as in the kernel.
 */
static void emu_aql_send_exception(struct emu_aql_pass *a, u64 mask)
{
	const u64 payload_at = offsetof(struct kfd_context_save_area_header, err_payload_addr);
	const u64 event_at = offsetof(struct kfd_context_save_area_header, err_event_id);
	u64 header = a->q->ctx_save_addr, payload, value;
	u32 event_id;

	if (!header || emu_aql_read(a, header + payload_at, &payload, sizeof(payload)) ||
	    emu_aql_read(a, payload, &value, sizeof(value)))
		return;
	value |= mask;
	if (emu_aql_write(a, payload, &value, sizeof(value)) ||
	    emu_aql_read(a, header + event_at, &event_id, sizeof(event_id)))
		return;
	emu_event_set_by_id(a->p, event_id);
}
#endif

/*
 * Tell the runtime; the queue stops. A runtime that enabled itself through RUNTIME_ENABLE
 * (KFD 1.13, ROCm from 5.7) installs a trap handler that reports wave errors to the kernel,
 * and the firmware the kernel then requires reports packet errors to it too: both reach the
 * runtime as queue exceptions. Any other runtime learns the code through queue_inactive_signal,
 * as on 6.1 (its own trap handler writes that signal, the firmware does for packets).
 */
static void emu_aql_queue_error(struct emu_aql_pass *a, const char *what, u64 va, u32 code)
{
	u64 signal, value = code;

	emu_aql_log_stop(a, what, va, code);
#if EMU_KFD_MINOR_VERSION >= 13
	if (a->p->runtime_enabled) {
		emu_aql_send_exception(a, emu_aql_exception_mask(code));
		return;
	}
#endif
	if (emu_aql_read(a, a->amd_queue + AMD_QUEUE_INACTIVE_SIGNAL, &signal, sizeof(signal)) || !signal ||
	    emu_aql_write(a, signal + AMD_SIGNAL_VALUE, &value, sizeof(value)))
		return;
	emu_aql_signal_event(a, signal);
}

/* 0 if the barrier's dependencies hold, -EAGAIN if not yet, -EFAULT */
static int emu_aql_barrier_ready(struct emu_aql_pass *a, const u64 *deps, bool any)
{
	bool given = false;
	s64 value;
	int i;

	for (i = 0; i < AQL_BARRIER_DEPS; i++) {
		if (!deps[i])
			continue;
		given = true;
		if (emu_aql_read(a, deps[i] + AMD_SIGNAL_VALUE, &value, sizeof(value)))
			return -EFAULT;
		if (any && !value)
			return 0;
		if (!any && value)
			return -EAGAIN;
	}
	return any && given ? -EAGAIN : 0;
}

/* 0 if a BARRIER_VALUE's condition holds, -EAGAIN if not yet, -EFAULT, -EINVAL */
static int emu_aql_barrier_value_ready(struct emu_aql_pass *a, const u64 *pkt)
{
	s64 value, want = (s64)pkt[2], mask = (s64)pkt[3];
	bool holds;

	if ((u32)pkt[4] > AQL_CONDITION_GTE)
		return -EINVAL;
	if (!pkt[1])
		return 0;
	if (emu_aql_read(a, pkt[1] + AMD_SIGNAL_VALUE, &value, sizeof(value)))
		return -EFAULT;
	value &= mask;
	switch ((u32)pkt[4]) {
	case AQL_CONDITION_EQ:
		holds = value == want;
		break;
	case AQL_CONDITION_NE:
		holds = value != want;
		break;
	case AQL_CONDITION_LT:
		holds = value < want;
		break;
	default:
		holds = value >= want;
		break;
	}
	return holds ? 0 : -EAGAIN;
}

/*
 * ROCr's PM4 indirect-buffer packet (its AqlQueue::ExecutePM4, gfx9 and
 * newer): dwords 1 to 4 hold a PM4 INDIRECT_BUFFER command naming an IB of
 * PM4 type-3 packets in the process's memory, the completion signal is the
 * usual last 8 bytes.  ROCr 6.x sends one when code objects are loaded (HIP's
 * first kernel): an ACQUIRE_MEM that invalidates the instruction, scalar and
 * L2 caches.  The emulated GPU reads and writes memory through the CPU and
 * has no caches to invalidate or write back, so ACQUIRE_MEM and NOP complete
 * as they are; any other PM4 command is not emulated and stops the queue
 * with the vendor-packet error.
 */
static enum emu_aql_step emu_aql_pm4_ib(struct emu_aql_pass *a, const u64 *pkt, u64 va)
{
	const u32 *dw = (const u32 *)pkt;
	u64 ib = ((u64)(dw[3] & 0xffff) << 32) | (dw[2] & ~3u);
	u32 ndw = dw[4] & PM4_IB_SIZE_MASK, i, hdr, len;
	enum emu_aql_step step = AQL_DONE;
	const char *what = NULL;
	u32 *buf;

	if (PM4_TYPE(dw[1]) != 3 || PM4_OPCODE(dw[1]) != PM4_OP_INDIRECT_BUFFER || !(dw[4] & PM4_IB_VALID) ||
	    !ndw || ndw > PM4_IB_MAX_DW) {
		emu_aql_queue_error(a, "PM4 indirect-buffer packet without a valid IB", va, AQL_ERROR_VENDOR_PACKET);
		return AQL_ERROR;
	}
	buf = kmalloc_array(ndw, sizeof(*buf), GFP_KERNEL);
	if (!buf || emu_aql_read(a, ib, buf, ndw * sizeof(*buf))) {
		kfree(buf);
		emu_aql_queue_error(a, "PM4 indirect buffer not readable", ib, AQL_ERROR_MEMORY_VIOLATION);
		return AQL_ERROR;
	}
	for (i = 0; i < ndw && !what; i += len) {
		hdr = buf[i];
		len = PM4_COUNT(hdr) + 2;
		if (PM4_TYPE(hdr) != 3 || len > ndw - i)
			what = "PM4 indirect buffer: not a whole type-3 packet";
		else if (PM4_OPCODE(hdr) != PM4_OP_NOP && PM4_OPCODE(hdr) != PM4_OP_ACQUIRE_MEM)
			what = "PM4 indirect buffer: a command that is not emulated";
	}
	kfree(buf);
	if (what) {
		emu_aql_queue_error(a, what, ib + (i - len) * sizeof(u32), AQL_ERROR_VENDOR_PACKET);
		step = AQL_ERROR;
	}
	return step;
}

static enum emu_aql_step emu_aql_vendor_packet(struct emu_aql_pass *a, const u64 *pkt, u64 va)
{
	int ret;

	if (AQL_AMD_FORMAT(pkt[0]) == AQL_AMD_PM4_IB)
		return emu_aql_pm4_ib(a, pkt, va);
	if (AQL_AMD_FORMAT(pkt[0]) != AQL_AMD_BARRIER_VALUE) {
		emu_aql_queue_error(a, "vendor-specific packet of an unknown format", va, AQL_ERROR_VENDOR_PACKET);
		return AQL_ERROR;
	}
	ret = emu_aql_barrier_value_ready(a, pkt);
	if (ret == -EAGAIN)
		return AQL_WAIT;
	if (!ret)
		return AQL_DONE;
	if (ret == -EINVAL)
		emu_aql_queue_error(a, "barrier-value packet with an unknown condition", va, AQL_ERROR_INVALID_FORMAT);
	else
		emu_aql_queue_error(a, "barrier-value signal not readable", va, AQL_ERROR_MEMORY_VIOLATION);
	return AQL_ERROR;
}

/*
 * A kernel dispatch starts: the dispatcher takes the packet, which is then
 * consumed like any other, but completes only when its grid has run
 * (emu_aql_dispatch_run).  A descriptor the dispatcher cannot run is the
 * illegal instruction the hardware would meet; one it cannot read, a memory
 * violation.
 */
static enum emu_aql_step emu_aql_dispatch(struct emu_aql_pass *a, const u64 *pkt, u64 va)
{
	struct emu_queue *q = a->q;
	struct emu_dispatch *d;
	const char *why = NULL;

	d = emu_dispatch_begin(q, pkt, va, q->exec_rptr / AQL_PACKET_BYTES, a->amd_queue, &why);
	if (IS_ERR(d)) {
		/* pkt[4] is the kernel object: what the log names */
		if (PTR_ERR(d) == -EFAULT)
			emu_aql_queue_error(a, why, pkt[4], AQL_ERROR_MEMORY_VIOLATION);
		else
			emu_aql_queue_error(a, why ?: "kernel dispatch: out of memory", pkt[4],
					    AQL_ERROR_ILLEGAL_INSTRUCTION);
		return AQL_ERROR;
	}
	q->dispatch = d;
	return AQL_STARTED;
}

/*
 * Run the queue's dispatch in flight for a slice; true if it has work left.
 * A wave that stops on an instruction the shader core does not execute, or
 * on memory the VM does not give it, ends the dispatch the way the trap
 * handler reports it: the queue error, and the queue stops.
 */
static bool emu_aql_dispatch_run(struct emu_aql_pass *a)
{
	struct emu_queue *q = a->q;
	struct emu_dispatch *d = q->dispatch;
	struct emu_dispatch_fault fault = {};
	enum emu_dispatch_status status;

	status = emu_dispatch_run(d, q, AQL_DISPATCH_SLICE, &fault);
	if (status == EMU_DISPATCH_RUNNING)
		return true;
	q->dispatch = NULL;
	q->aql_instructions += emu_dispatch_instructions(d);
	if (status == EMU_DISPATCH_FAULT) {
		if (fault.state == EMU_WAVE_ILLEGAL)
			emu_aql_queue_error(a, "wave: illegal instruction", fault.pc, AQL_ERROR_ILLEGAL_INSTRUCTION);
		else
			emu_aql_queue_error(a, "wave: memory violation", fault.addr, AQL_ERROR_MEMORY_VIOLATION);
	} else if (emu_aql_complete(a, emu_dispatch_completion_signal(d), emu_dispatch_start_ts(d))) {
		emu_aql_queue_error(a, "completion signal not writable", emu_dispatch_completion_signal(d),
				    AQL_ERROR_MEMORY_VIOLATION);
	}
	emu_dispatch_free(d);
	return false;
}

/*
 * Whether the packet at @va (its 64 bytes in @pkt) can be consumed now; errors
 * are reported to the runtime here.
 */
static enum emu_aql_step emu_aql_packet(struct emu_aql_pass *a, const u64 *pkt, u64 va)
{
	u16 header = (u16)pkt[0];
	int ret;

	switch (AQL_HEADER_TYPE(header)) {
	case AQL_TYPE_INVALID:
		return AQL_WAIT;
	case AQL_TYPE_BARRIER_AND:
	case AQL_TYPE_BARRIER_OR:
		ret = emu_aql_barrier_ready(a, &pkt[1], AQL_HEADER_TYPE(header) == AQL_TYPE_BARRIER_OR);
		if (ret == -EAGAIN)
			return AQL_WAIT;
		if (!ret)
			return AQL_DONE;
		emu_aql_queue_error(a, "barrier dependency signal not readable", va, AQL_ERROR_MEMORY_VIOLATION);
		return AQL_ERROR;
	case AQL_TYPE_KERNEL_DISPATCH:
		return emu_aql_dispatch(a, pkt, va);
	case AQL_TYPE_VENDOR_SPECIFIC:
		return emu_aql_vendor_packet(a, pkt, va);
	default:
		emu_aql_queue_error(a, "packet type not supported on a GPU queue", va, AQL_ERROR_INVALID_FORMAT);
		return AQL_ERROR;
	}
}

/* One pass over @q; true if it stopped with packets left it could run. */
static bool emu_aql_queue_pass(struct emu_process *p, struct emu_queue *q)
{
	struct emu_aql_pass a = {
		.x = { .gpu = q->pdd->gpu, .vm = q->pdd->vm, .p = p },
		.p = p, .q = q,
	};
	const u16 invalid = AQL_TYPE_INVALID;
	u64 slots = q->ring_size / AQL_PACKET_BYTES;
	u64 write_index, index, va, pkt[AQL_PACKET_BYTES / sizeof(u64)];
	u32 properties, budget = AQL_PASS_PACKETS;
	u64 start_ts;
	enum emu_aql_step step = AQL_DONE;

	if (!emu_aql_queue_of_runtime(&a))
		return false;
	a.amd_queue = q->rptr - AMD_QUEUE_READ_DISPATCH_ID;
	a.profiling = !emu_aql_read(&a, a.amd_queue + AMD_QUEUE_PROPERTIES, &properties, sizeof(properties)) &&
		      (properties & AMD_QUEUE_PROFILING);
	/* a dispatch in flight holds the queue: packets after it wait for it */
	if (q->dispatch && (emu_aql_dispatch_run(&a) || q->fault))
		return !q->fault;
	if (emu_aql_read(&a, q->wptr, &write_index, sizeof(write_index)))
		return false;
	index = q->exec_rptr / AQL_PACKET_BYTES;
	if (write_index == index)
		return false;
	if (write_index < index || write_index - index > slots || q->exec_rptr % AQL_PACKET_BYTES) {
		emu_aql_queue_error(&a, "write index not within one ring of the read index", q->wptr,
				    AQL_ERROR_INVALID_FORMAT);
		return false;
	}
	q->executing = true;

	while (index < write_index && budget--) {
		va = q->ring_base + (index & (slots - 1)) * AQL_PACKET_BYTES;
		if (emu_aql_read(&a, va, pkt, sizeof(pkt))) {
			emu_aql_queue_error(&a, "ring not readable", va, AQL_ERROR_MEMORY_VIOLATION);
			return false;
		}
		start_ts = emu_gpu_clock_counter();
		step = emu_aql_packet(&a, pkt, va);
		if (step != AQL_DONE && step != AQL_STARTED)
			break;
		/* consumed: the slot goes back to the producer before the packet completes */
		index++;
		q->exec_rptr = index * AQL_PACKET_BYTES;
		q->aql_packets++;
		if (emu_aql_write(&a, va, &invalid, sizeof(invalid)) ||
		    emu_aql_write(&a, q->rptr, &index, sizeof(index))) {
			emu_aql_queue_error(&a, "read index not writable", q->rptr, AQL_ERROR_MEMORY_VIOLATION);
			return false;
		}
		/* a dispatch runs in the passes that follow */
		if (step == AQL_STARTED)
			return true;
		/* every packet type that completes keeps its completion signal in the last 8 bytes */
		if (emu_aql_complete(&a, pkt[7], start_ts)) {
			emu_aql_queue_error(&a, "completion signal not writable", pkt[7], AQL_ERROR_MEMORY_VIOLATION);
			return false;
		}
	}
	return step == AQL_DONE && index < write_index;
}

/* Packets @q holds that its processor has not consumed; 0 if none or unknown. */
u64 emu_aql_queue_pending(struct emu_queue *q)
{
	struct emu_sdma_ctx x = { .gpu = q->pdd->gpu, .vm = q->pdd->vm };
	u64 write_index, index = q->exec_rptr / AQL_PACKET_BYTES;

	if (q->dispatch)
		return 1 + (q->aql_kind == EMU_AQL_RUNTIME && x.vm &&
			    !emu_sdma_access(&x, q->wptr, &write_index, sizeof(write_index), false, 0) &&
			    write_index > index ? write_index - index : 0);
	if (q->aql_kind != EMU_AQL_RUNTIME || !x.vm ||
	    emu_sdma_access(&x, q->wptr, &write_index, sizeof(write_index), false, 0) ||
	    write_index < index)
		return 0;
	return write_index - index;
}

/* Is @q fed to the packet processor (and so gets no heartbeat)? */
bool emu_aql_queue_runs(struct emu_queue *q)
{
	return q->aql_kind == EMU_AQL_RUNTIME;
}

/*
 * Run every runtime AQL queue of @p that has work; true if one stopped with
 * more to do.  Caller holds p->lock and has checked that the queues are
 * active.
 */
bool emu_aql_queues_run(struct emu_process *p)
{
	struct emu_queue *q;
	bool more = false;

	list_for_each_entry(q, &p->queues, link) {
		if (q->type != KFD_IOC_QUEUE_TYPE_COMPUTE_AQL || q->fault || !emu_queue_is_active(q))
			continue;
		more |= emu_aql_queue_pass(p, q);
	}
	return more;
}

/*
 * A queue whose dispatch cannot keep or get back its waves faults, as a context
 * save or restore the GPU cannot carry out does: the queue error, and the
 * dispatch is gone.
 */
static void emu_aql_dispatch_lost(struct emu_process *p, struct emu_queue *q, const char *why)
{
	struct emu_aql_pass a = {
		.x = { .gpu = q->pdd->gpu, .vm = q->pdd->vm, .p = p },
		.p = p, .q = q, .amd_queue = q->rptr - AMD_QUEUE_READ_DISPATCH_ID,
	};

	emu_aql_queue_error(&a, why, q->ctx_save_addr, AQL_ERROR_MEMORY_VIOLATION);
	emu_dispatch_free(q->dispatch);
	q->dispatch = NULL;
}

/*
 * The process's queues stop (KFD evicts them, CRIU pauses them): each
 * dispatch in flight saves its waves as CWSR does (emu_dispatch_preempt).
 * Caller holds p->lock.
 */
void emu_aql_queues_preempt(struct emu_process *p)
{
	struct emu_queue *q;

	list_for_each_entry(q, &p->queues, link)
		emu_aql_queue_preempt(p, q);
}

/* One queue stops (a debugger suspends it): the same for its dispatch alone. */
void emu_aql_queue_preempt(struct emu_process *p, struct emu_queue *q)
{
	const char *why = NULL;

	if (q->dispatch && emu_dispatch_preempt(q, &why))
		emu_aql_dispatch_lost(p, q, why);
}

/*
 * They run again: the waves come back from the save areas, a restored
 * queue's dispatch from its MQD first.  Caller holds p->lock.
 */
void emu_aql_queues_resume(struct emu_process *p)
{
	struct emu_queue *q;

	list_for_each_entry(q, &p->queues, link)
		emu_aql_queue_resume(p, q);
}

/* One queue runs again, unless a debugger holds it suspended. Caller holds p->lock. */
void emu_aql_queue_resume(struct emu_process *p, struct emu_queue *q)
{
	const char *why = NULL;

	if (q->type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL && !q->fault && !q->dbg_suspended &&
	    emu_dispatch_resume(q, &why))
		emu_aql_dispatch_lost(p, q, why);
}
