// SPDX-License-Identifier: GPL-2.0-only
/*
 * Events: CREATE/DESTROY/SET/RESET_EVENT and WAIT_EVENTS (§1.6, §3.6).
 * §N.N: sections of Documentation/kfd-interface.md.
 */
#include "kfd_test.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define UNUSED_EVENT_ID 4094

static int create_event(int kfd, uint32_t type, bool auto_reset, uint64_t page_handle,
			struct kfd_ioctl_create_event_args *out)
{
	memset(out, 0, sizeof(*out));
	out->event_type = type;
	out->auto_reset = auto_reset;
	out->event_page_offset = page_handle;
	return kfd_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, out);
}

static int event_op(int kfd, unsigned long req, uint32_t id)
{
	struct kfd_ioctl_set_event_args a = { .event_id = id }; /* same layout for all three */

	return kfd_ioctl(kfd, req, &a);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Returns the ioctl result; *result gets wait_result, *ms the time spent. */
static int wait_events(int kfd, const uint32_t *ids, uint32_t n, bool all, uint32_t timeout_ms,
		       uint32_t *result, uint64_t *ms)
{
	struct kfd_event_data data[4];
	struct kfd_ioctl_wait_events_args w = {
		.events_ptr = (uint64_t)(uintptr_t)data,
		.num_events = n,
		.wait_for_all = all,
		.timeout = timeout_ms,
		.wait_result = 0xdead,
	};
	uint64_t t0 = mono_ms();
	int r;

	memset(data, 0, sizeof(data));
	for (uint32_t i = 0; i < n; i++)
		data[i].event_id = ids[i];
	r = kfd_ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &w);
	*result = w.wait_result;
	if (ms)
		*ms = mono_ms() - t0;
	return r;
}

static bool wait_is(int kfd, const uint32_t *ids, uint32_t n, bool all, uint32_t timeout,
		    uint32_t want, const char *name)
{
	uint32_t res;
	uint64_t ms;
	int r = wait_events(kfd, ids, n, all, timeout, &res, &ms);

	if (tap_ok(r == 0 && res == want, "%s", name))
		return true;
	tap_diag("ret %s, wait_result %u (want %u), %llu ms", errname(-r), res, want,
		 (unsigned long long)ms);
	return false;
}

struct setter {
	int kfd;
	uint32_t id;
	int delay_ms;
};

static void *set_later(void *arg)
{
	struct setter *s = arg;

	sleep_ms(s->delay_ms);
	event_op(s->kfd, AMDKFD_IOC_SET_EVENT, s->id);
	return NULL;
}

void test_events(struct ctx *ctx)
{
	const struct gpu *g0 = &ctx->gpu[0];
	struct kfd_ioctl_create_event_args ea, eb, ec, ehw, emem;
	struct bo page, small, uptr;
	uint32_t ids[2], res, all_ids[MAX_GPUS];
	uint64_t *slots = MAP_FAILED, ms;
	void *ucpu;
	bool have_a, have_b, have_c;
	int r;

	/* The page must be a >= 32 KiB GTT BO (§3.6); try the wrong ones first. */
	r = bo_alloc(ctx->kfd, &small, g0->id, va_alloc(ctx, PAGE_SZ), PAGE_SZ,
		     ALLOC_GTT | ALLOC_WRITABLE | ALLOC_NO_SUBST, 0);
	if (!r) {
		r = create_event(ctx->kfd, KFD_IOC_EVENT_SIGNAL, true, small.handle, &ea);
		tap_errno(r, EINVAL, "CREATE_EVENT with a 4 KiB GTT page BO -> EINVAL (§3.6)");
		bo_free(ctx->kfd, small.handle);
	}
	ucpu = mmap(NULL, EVENT_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	r = bo_alloc(ctx->kfd, &uptr, g0->id, (uint64_t)(uintptr_t)ucpu, EVENT_PAGE_SIZE,
		     ALLOC_USERPTR | ALLOC_WRITABLE, (uint64_t)(uintptr_t)ucpu);
	if (!r) {
		r = create_event(ctx->kfd, KFD_IOC_EVENT_SIGNAL, true, uptr.handle, &ea);
		tap_errno(r, EINVAL, "CREATE_EVENT with a USERPTR page BO -> EINVAL (§3.6)");
		bo_free(ctx->kfd, uptr.handle);
	}
	r = create_event(ctx->kfd, KFD_IOC_EVENT_SIGNAL, true, (uint64_t)g0->id << 32 | 0x7fff, &ea);
	tap_errno(r, EINVAL, "CREATE_EVENT with an unknown page handle -> EINVAL (6.1)");

	/* What the thunk does on a dGPU: a 32 KiB uncached GTT BO, mapped to all GPUs. */
	r = bo_alloc(ctx->kfd, &page, g0->id, va_alloc(ctx, EVENT_PAGE_SIZE), EVENT_PAGE_SIZE,
		     ALLOC_GTT | ALLOC_WRITABLE | ALLOC_COHERENT | ALLOC_UNCACHED | ALLOC_NO_SUBST,
		     0);
	if (!tap_errno(r, 0, "ALLOC the 32 KiB GTT signal page"))
		return;
	{
		uint32_t ns = 0;

		bo_map(ctx->kfd, page.handle, all_ids, ctx_gpu_ids(ctx, all_ids), &ns);
	}
	slots = bo_cpu_map(g0->render_fd, page.mmap_offset, EVENT_PAGE_SIZE,
			   PROT_READ | PROT_WRITE, MAP_SHARED);
	if (slots != MAP_FAILED)
		memset(slots, 0, EVENT_PAGE_SIZE);

	r = create_event(ctx->kfd, KFD_IOC_EVENT_SIGNAL, true, page.handle, &ea);
	have_a = tap_errno(r, 0, "CREATE_EVENT signal, auto-reset, with the signal page");
	if (have_a) {
		tap_eq(ea.event_page_offset, MMAP_TYPE_EVENTS,
		       "CREATE_EVENT returns event_page_offset = TYPE_EVENTS (§3.6)");
		tap_ok(ea.event_id < KFD_SIGNAL_EVENT_LIMIT && ea.event_slot_index == ea.event_id &&
			       ea.event_trigger_data == ea.event_id,
		       "signal event: id < 4096, slot index == trigger data == id (§1.6, §3.6)");
		if (slots != MAP_FAILED) {
			bool all_ff = true;

			for (unsigned int i = 0; i < KFD_SIGNAL_EVENT_LIMIT; i++)
				all_ff &= slots[i] == UNSIGNALED_SLOT;
			tap_ok(all_ff, "the kernel filled the signal page with 0xff (unsignaled, §3.6)");
		}
	}

	r = create_event(ctx->kfd, KFD_IOC_EVENT_SIGNAL, true, page.handle, &eb);
	tap_errno(r, EINVAL, "CREATE_EVENT with a second signal page -> EINVAL (§3.6)");
	tap_errno(bo_free(ctx->kfd, page.handle), EPERM,
		  "FREE_MEMORY_OF_GPU of the signal page -> EPERM (§3.4)");

	r = create_event(ctx->kfd, KFD_IOC_EVENT_SIGNAL, false, 0, &eb);
	have_b = tap_errno(r, 0, "CREATE_EVENT signal, manual reset");
	r = create_event(ctx->kfd, KFD_IOC_EVENT_SIGNAL, false, 0, &ec);
	have_c = tap_errno(r, 0, "CREATE_EVENT another manual-reset signal event");
	if (have_a && have_b && have_c)
		tap_ok(ea.event_id != eb.event_id && eb.event_id != ec.event_id &&
			       ea.event_id != ec.event_id,
		       "event ids are unique");

	r = create_event(ctx->kfd, KFD_IOC_EVENT_HW_EXCEPTION, false, 0, &ehw);
	tap_errno(r, 0, "CREATE_EVENT HW_EXCEPTION (ROCr creates one)");
	if (!r)
		tap_errno(event_op(ctx->kfd, AMDKFD_IOC_SET_EVENT, ehw.event_id), EINVAL,
			  "SET_EVENT on a non-signal event -> EINVAL (6.1: not CPU-signalable)");
	r = create_event(ctx->kfd, KFD_IOC_EVENT_MEMORY, false, 0, &emem);
	tap_errno(r, 0, "CREATE_EVENT MEMORY (ROCr creates one)");

	if (have_a) {
		ids[0] = ea.event_id;
		if (wait_is(ctx->kfd, ids, 1, false, 100, KFD_IOC_WAIT_RESULT_TIMEOUT,
			    "WAIT on an unsignaled event times out (§3.6)")) {
			wait_events(ctx->kfd, ids, 1, false, 200, &res, &ms);
			if (!tap_ok(ms >= 150, "WAIT honours its timeout (200 ms)"))
				tap_diag("returned after %llu ms", (unsigned long long)ms);
		}
		tap_ok(wait_events(ctx->kfd, ids, 1, false, 0, &res, NULL) == 0 &&
			       res == KFD_IOC_WAIT_RESULT_TIMEOUT,
		       "WAIT with timeout 0 polls: unsignaled -> TIMEOUT");
		tap_errno(event_op(ctx->kfd, AMDKFD_IOC_SET_EVENT, ea.event_id), 0, "SET_EVENT");
		wait_is(ctx->kfd, ids, 1, false, 1000, KFD_IOC_WAIT_RESULT_COMPLETE,
			"WAIT on a signalled event completes");
		wait_is(ctx->kfd, ids, 1, false, 50, KFD_IOC_WAIT_RESULT_TIMEOUT,
			"auto-reset: the completed wait consumed the signal");

		{
			struct setter s = { .kfd = ctx->kfd, .id = ea.event_id, .delay_ms = 100 };
			pthread_t t;

			pthread_create(&t, NULL, set_later, &s);
			r = wait_events(ctx->kfd, ids, 1, false, 10000, &res, &ms);
			pthread_join(t, NULL);
			if (!tap_ok(r == 0 && res == KFD_IOC_WAIT_RESULT_COMPLETE && ms < 5000,
				    "SET_EVENT from another thread wakes a blocked WAIT (§3.6)"))
				tap_diag("ret %s result %u after %llu ms", errname(-r), res,
					 (unsigned long long)ms);
		}
	}

	if (have_b) {
		ids[0] = eb.event_id;
		event_op(ctx->kfd, AMDKFD_IOC_SET_EVENT, eb.event_id);
		wait_is(ctx->kfd, ids, 1, false, 100, KFD_IOC_WAIT_RESULT_COMPLETE,
			"manual reset: WAIT completes");
		wait_is(ctx->kfd, ids, 1, false, 100, KFD_IOC_WAIT_RESULT_COMPLETE,
			"manual reset: stays signalled for the next WAIT");
		tap_errno(event_op(ctx->kfd, AMDKFD_IOC_RESET_EVENT, eb.event_id), 0, "RESET_EVENT");
		wait_is(ctx->kfd, ids, 1, false, 50, KFD_IOC_WAIT_RESULT_TIMEOUT,
			"after RESET_EVENT a WAIT times out");
	}

	if (have_b && have_c) {
		ids[0] = eb.event_id;
		ids[1] = ec.event_id;
		event_op(ctx->kfd, AMDKFD_IOC_SET_EVENT, eb.event_id);
		wait_is(ctx->kfd, ids, 2, true, 50, KFD_IOC_WAIT_RESULT_TIMEOUT,
			"wait_for_all with one of two signalled -> TIMEOUT");
		wait_is(ctx->kfd, ids, 2, false, 50, KFD_IOC_WAIT_RESULT_COMPLETE,
			"wait for any with one of two signalled -> COMPLETE");
		event_op(ctx->kfd, AMDKFD_IOC_SET_EVENT, ec.event_id);
		wait_is(ctx->kfd, ids, 2, true, 50, KFD_IOC_WAIT_RESULT_COMPLETE,
			"wait_for_all with both signalled -> COMPLETE");
		event_op(ctx->kfd, AMDKFD_IOC_RESET_EVENT, eb.event_id);
		event_op(ctx->kfd, AMDKFD_IOC_RESET_EVENT, ec.event_id);
	}

	/*
	 * A waiter that an event satisfies at once does not queue on it (6.1 and 7.3
	 * init_event_waiter): another SET while that waiter still sleeps on a second event
	 * stays pending for the next wait instead of being consumed.
	 */
	if (have_a) {
		struct kfd_ioctl_create_event_args ed;

		if (tap_errno(create_event(ctx->kfd, KFD_IOC_EVENT_SIGNAL, true, 0, &ed), 0,
			      "CREATE_EVENT a second auto-reset signal event")) {
			struct setter again = { .kfd = ctx->kfd, .id = ea.event_id, .delay_ms = 100 };
			struct setter last = { .kfd = ctx->kfd, .id = ed.event_id, .delay_ms = 300 };
			pthread_t t1, t2;

			ids[0] = ea.event_id;
			ids[1] = ed.event_id;
			event_op(ctx->kfd, AMDKFD_IOC_SET_EVENT, ea.event_id);
			pthread_create(&t1, NULL, set_later, &again);
			pthread_create(&t2, NULL, set_later, &last);
			r = wait_events(ctx->kfd, ids, 2, true, 10000, &res, &ms);
			pthread_join(t1, NULL);
			pthread_join(t2, NULL);
			if (!tap_ok(r == 0 && res == KFD_IOC_WAIT_RESULT_COMPLETE,
				    "wait_for_all: one auto-reset event signalled, the other set later -> COMPLETE"))
				tap_diag("ret %s result %u after %llu ms", errname(-r), res,
					 (unsigned long long)ms);
			wait_is(ctx->kfd, ids, 1, false, 0, KFD_IOC_WAIT_RESULT_COMPLETE,
				"a SET during that wait of the event it found signalled stays pending (6.1, 7.3)");
			event_op(ctx->kfd, AMDKFD_IOC_DESTROY_EVENT, ed.event_id);
		}
	}

	/* Unknown ids (6.1 kfd_events.c: lookup fails -> EINVAL). */
	tap_errno(event_op(ctx->kfd, AMDKFD_IOC_SET_EVENT, UNUSED_EVENT_ID), EINVAL,
		  "SET_EVENT of an unknown id -> EINVAL (6.1)");
	tap_errno(event_op(ctx->kfd, AMDKFD_IOC_RESET_EVENT, UNUSED_EVENT_ID), EINVAL,
		  "RESET_EVENT of an unknown id -> EINVAL (6.1)");
	ids[0] = UNUSED_EVENT_ID;
	r = wait_events(ctx->kfd, ids, 1, false, 10, &res, NULL);
	tap_ok(r == -EINVAL && res == KFD_IOC_WAIT_RESULT_FAIL,
	       "WAIT on an unknown id -> EINVAL, wait_result FAIL (6.1)");
	tap_errno(event_op(ctx->kfd, AMDKFD_IOC_DESTROY_EVENT, UNUSED_EVENT_ID), EINVAL,
		  "DESTROY_EVENT of an unknown id -> EINVAL (6.1)");

	if (have_b) {
		tap_errno(event_op(ctx->kfd, AMDKFD_IOC_DESTROY_EVENT, eb.event_id), 0, "DESTROY_EVENT");
		tap_errno(event_op(ctx->kfd, AMDKFD_IOC_DESTROY_EVENT, eb.event_id), EINVAL,
			  "DESTROY_EVENT twice -> EINVAL (6.1)");
		ids[0] = eb.event_id;
		r = wait_events(ctx->kfd, ids, 1, false, 10, &res, NULL);
		tap_errno(r, EINVAL, "WAIT on a destroyed event -> EINVAL");
	}
	if (have_a)
		event_op(ctx->kfd, AMDKFD_IOC_DESTROY_EVENT, ea.event_id);
	if (have_c)
		event_op(ctx->kfd, AMDKFD_IOC_DESTROY_EVENT, ec.event_id);
	event_op(ctx->kfd, AMDKFD_IOC_DESTROY_EVENT, ehw.event_id);
	event_op(ctx->kfd, AMDKFD_IOC_DESTROY_EVENT, emem.event_id);
	if (slots != MAP_FAILED)
		munmap(slots, EVENT_PAGE_SIZE);
}
