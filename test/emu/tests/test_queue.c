// SPDX-License-Identifier: GPL-2.0-only
/*
 * User queues: CREATE/UPDATE/DESTROY_QUEUE, SET_CU_MASK and the heartbeat.
 * §N.N: sections of Documentation/kfd-interface.md.
 */
#include "kfd_test.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static volatile uint64_t rptr[4];

static int create(struct ctx *ctx, struct kfd_ioctl_create_queue_args *a)
{
	return kfd_ioctl(ctx->kfd, AMDKFD_IOC_CREATE_QUEUE, a);
}

static int destroy(struct ctx *ctx, uint32_t qid)
{
	struct kfd_ioctl_destroy_queue_args d = { .queue_id = qid };

	return kfd_ioctl(ctx->kfd, AMDKFD_IOC_DESTROY_QUEUE, &d);
}

/* §3.5: TYPE_DOORBELL | GPU_ID | byte offset of an 8-byte doorbell in the 8 KiB slice. */
static bool doorbell_offset_ok(uint64_t off, uint32_t gpu_id)
{
	uint64_t in_slice = off & (DOORBELL_SLICE - 1);

	if ((off & ~(DOORBELL_SLICE - 1)) == (MMAP_TYPE_DOORBELL | MMAP_GPU_ID(gpu_id)) &&
	    in_slice % 8 == 0)
		return true;
	tap_diag("doorbell_offset 0x%llx, expected 0x%llx | in-slice multiple of 8",
		 (unsigned long long)off,
		 (unsigned long long)(MMAP_TYPE_DOORBELL | MMAP_GPU_ID(gpu_id)));
	return false;
}

void test_queues(struct ctx *ctx)
{
	struct kfd_ioctl_create_queue_args q1, q2, q3, bad;
	struct kfd_ioctl_update_queue_args u;
	struct kfd_ioctl_set_cu_mask_args cm;
	struct queue_mem m1, m2, m3;
	uint32_t gpu = ctx->gpu[0].id, mask[2] = { 0xffffffff, 0 };
	bool have1, have2, have3;
	int r;

	if (queue_mem_init(&m1) || queue_mem_init(&m2) || queue_mem_init(&m3)) {
		tap_ok(false, "queue memory");
		return;
	}

	queue_args_init(&q1, gpu, &m1, &rptr[0]);
	r = create(ctx, &q1);
	have1 = tap_errno(r, 0, "CREATE_QUEUE compute AQL, 4 KiB ring");
	if (have1) {
		tap_ok(doorbell_offset_ok(q1.doorbell_offset, gpu),
		       "CREATE_QUEUE doorbell_offset = TYPE_DOORBELL | GPU_ID | in-slice (§3.5)");
		tap_ok(q1.queue_id < 1024, "CREATE_QUEUE returns a queue id below 1024");
	}

	queue_args_init(&q2, gpu, &m2, &rptr[1]);
	q2.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE;
	q2.ring_size = 1024;
	r = create(ctx, &q2);
	have2 = tap_errno(r, 0, "CREATE_QUEUE compute PM4, 1 KiB ring");
	if (have1 && have2) {
		tap_ok(q2.queue_id != q1.queue_id, "queue ids are unique per process");
		tap_ok(doorbell_offset_ok(q2.doorbell_offset, gpu) &&
			       q2.doorbell_offset != q1.doorbell_offset,
		       "each queue gets its own doorbell in the slice (§3.5)");
	}

	queue_args_init(&q3, gpu, &m3, &rptr[2]);
	q3.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
	r = create(ctx, &q3);
	have3 = tap_errno(r, 0, "CREATE_QUEUE SDMA");
	if (have3)
		tap_ok(doorbell_offset_ok(q3.doorbell_offset, gpu),
		       "SDMA queue doorbell_offset encoding (§3.5)");

	/* Validation (§1.2, §3.5). Each one leaves no queue behind. */
	queue_args_init(&bad, gpu, &m3, &rptr[3]);
	bad.queue_percentage = 101;
	tap_errno(create(ctx, &bad), EINVAL, "CREATE_QUEUE percentage 101 -> EINVAL (§3.5)");
	queue_args_init(&bad, gpu, &m3, &rptr[3]);
	bad.queue_priority = 16;
	tap_errno(create(ctx, &bad), EINVAL, "CREATE_QUEUE priority 16 -> EINVAL (§3.5)");
	queue_args_init(&bad, gpu, &m3, &rptr[3]);
	bad.ring_size = 3000;
	tap_errno(create(ctx, &bad), EINVAL, "CREATE_QUEUE ring size 3000 (not 2^n) -> EINVAL (§3.5)");
	queue_args_init(&bad, ctx->bogus_gpu_id, &m3, &rptr[3]);
	tap_errno(create(ctx, &bad), EINVAL, "CREATE_QUEUE on an unknown gpu_id -> EINVAL (6.1)");
	queue_args_init(&bad, gpu, &m3, &rptr[3]);
	bad.queue_type = 7;
	r = create(ctx, &bad);
	tap_ok(r < 0, "CREATE_QUEUE with an unknown queue type fails (6.1: ENOTSUPP)");
	if (r >= 0)
		destroy(ctx, bad.queue_id);

	/* Rings below 1024 bytes are clamped up, not refused (§1.2). */
	queue_args_init(&bad, gpu, &m3, &rptr[3]);
	bad.ring_size = 512;
	r = create(ctx, &bad);
	if (tap_errno(r, 0, "CREATE_QUEUE with a 512-byte ring is accepted (clamped, §1.2)"))
		destroy(ctx, bad.queue_id);

	/* The emulator's heartbeat stands in for a running queue (§5.4; test/emu/README.md, "heartbeat"). */
	if (have1)
		tap_ok(wait_changes(&rptr[0], 2000),
		       "heartbeat: an active queue's read pointer advances");

	if (have1) {
		memset(&u, 0, sizeof(u));
		u.queue_id = q1.queue_id;
		u.ring_base_address = q1.ring_base_address;
		u.ring_size = q1.ring_size;
		u.queue_percentage = 100;
		u.queue_priority = 9;
		tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_UPDATE_QUEUE, &u), 0, "UPDATE_QUEUE succeeds");
		u.queue_percentage = 101;
		tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_UPDATE_QUEUE, &u), EINVAL,
			  "UPDATE_QUEUE percentage 101 -> EINVAL (6.1)");
		u.queue_percentage = 100;
		u.queue_priority = 16;
		tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_UPDATE_QUEUE, &u), EINVAL,
			  "UPDATE_QUEUE priority 16 -> EINVAL (6.1)");
		u.queue_priority = 9;
		u.ring_size = 3000;
		tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_UPDATE_QUEUE, &u), EINVAL,
			  "UPDATE_QUEUE ring size 3000 -> EINVAL (6.1)");
		u.ring_size = q1.ring_size;
		u.queue_id = 1000;
		tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_UPDATE_QUEUE, &u), EFAULT,
			  "UPDATE_QUEUE of an unknown queue id -> EFAULT (6.1 pqm)");

		memset(&cm, 0, sizeof(cm));
		cm.queue_id = q1.queue_id;
		cm.num_cu_mask = 32;
		cm.cu_mask_ptr = (uint64_t)(uintptr_t)mask;
		tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_SET_CU_MASK, &cm), 0,
			  "SET_CU_MASK with 32 bits succeeds (§5.2)");
		cm.num_cu_mask = 0;
		tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_SET_CU_MASK, &cm), EINVAL,
			  "SET_CU_MASK with 0 bits -> EINVAL (6.1)");
	}

	if (have2) {
		tap_errno(destroy(ctx, q2.queue_id), 0, "DESTROY_QUEUE succeeds");
		tap_errno(destroy(ctx, q2.queue_id), EINVAL, "DESTROY_QUEUE of a destroyed id -> EINVAL (6.1)");
	}
	tap_errno(destroy(ctx, 1000), EINVAL, "DESTROY_QUEUE of an unknown id -> EINVAL (6.1)");
	if (have3)
		tap_errno(destroy(ctx, q3.queue_id), 0, "DESTROY_QUEUE SDMA");
	if (have1) {
		uint64_t before, after;

		tap_errno(destroy(ctx, q1.queue_id), 0, "DESTROY_QUEUE AQL");
		if (!tap_ok(stays_still(&rptr[0], 150, &before, &after),
			    "heartbeat: a destroyed queue's read pointer no longer moves"))
			tap_diag("read pointer %llu -> %llu", (unsigned long long)before,
				 (unsigned long long)after);
	}
	queue_mem_free(&m1);
	queue_mem_free(&m2);
	queue_mem_free(&m3);
}
