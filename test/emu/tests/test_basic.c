// SPDX-License-Identifier: GPL-2.0-only
/*
 * Process-level ioctls: version and dispatch, apertures, ACQUIRE_VM, memory
 * policy, XNACK, clocks, scratch/trap/tile config, and the owner rule.
 * §N.N: sections of Documentation/kfd-interface.md.
 */
#include "kfd_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

void test_version_and_dispatch(struct ctx *ctx)
{
	struct kfd_ioctl_get_version_args v = { 0 };
	uint64_t scratch[4] = { 0 };
	int r;

	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_VERSION, &v);
	tap_errno(r, 0, "GET_VERSION succeeds");
	/* The plugin needs 1.8+ (CRIU with GTT BOs); 6.1 reports 1.11 (§1.1). */
	if (!tap_ok(v.major_version == 1 && v.minor_version >= 8,
		    "GET_VERSION reports 1.x with x >= 8 (§1.1)"))
		tap_diag("got %u.%u", v.major_version, v.minor_version);
	else if (v.minor_version != KFD_IOCTL_MINOR_VERSION)
		tap_diag("note: minor %u, the 6.1 header says %u", v.minor_version,
			 KFD_IOCTL_MINOR_VERSION);

	/*
	 * kfd_ioctl() starts with retcode = -EINVAL and jumps straight out for an
	 * nr outside [AMDKFD_COMMAND_START, AMDKFD_COMMAND_END), so the syscall
	 * returns EINVAL, not ENOTTY (§1.2).
	 */
	r = kfd_ioctl(ctx->kfd, _IOWR('K', AMDKFD_COMMAND_END, uint64_t[2]), scratch);
	tap_errno(r, EINVAL, "ioctl nr 0x%x (one past the table) -> EINVAL (6.1 kfd_ioctl)",
		  AMDKFD_COMMAND_END);
	r = kfd_ioctl(ctx->kfd, _IOWR('K', 0x00, uint64_t[2]), scratch);
	tap_errno(r, EINVAL, "ioctl nr 0x00 -> EINVAL (6.1 kfd_ioctl)");
	/* ROCm-DKMS-only numbers the 5.2.3 thunk knows (IPC import at 0x80). */
	r = kfd_ioctl(ctx->kfd, _IOWR('K', 0x80, uint64_t[4]), scratch);
	tap_errno(r, EINVAL, "ROCm-DKMS ioctl nr 0x80 -> EINVAL (6.1 kfd_ioctl)");

	/* The old debugger ioctls are stubs returning -EPERM in 6.1 (§1.2). */
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_DBG_REGISTER_DEPRECATED, scratch);
	tap_errno(r, EPERM, "DBG_REGISTER_DEPRECATED -> EPERM (§1.2)");
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, scratch);
	tap_errno(r, EPERM, "DBG_WAVE_CONTROL_DEPRECATED -> EPERM (§1.2)");
}

/* §1.7: what kfd_init_apertures_v9 gives every gfx9 dGPU with a 48-bit VM. */
static bool aperture_ok(const struct kfd_process_device_apertures *a)
{
	const uint64_t lds = 1ULL << 48, scratch = 2ULL << 48;

	if (a->lds_base == lds && a->lds_limit == (lds | 0xffffffffULL) &&
	    a->scratch_base == scratch && a->scratch_limit == (scratch | 0xffffffffULL) &&
	    a->gpuvm_base == GPUVM_BASE && a->gpuvm_limit == 0x7fffffffffffULL)
		return true;
	tap_diag("gpu 0x%x: lds %llx-%llx scratch %llx-%llx gpuvm %llx-%llx", a->gpu_id,
		 (unsigned long long)a->lds_base, (unsigned long long)a->lds_limit,
		 (unsigned long long)a->scratch_base, (unsigned long long)a->scratch_limit,
		 (unsigned long long)a->gpuvm_base, (unsigned long long)a->gpuvm_limit);
	tap_diag("expected lds 1000000000000-10000ffffffff scratch 2000000000000-20000ffffffff "
		 "gpuvm 4000-7fffffffffff");
	return false;
}

static bool apertures_match_gpus(const struct ctx *ctx,
				 const struct kfd_process_device_apertures *a, unsigned int n)
{
	bool ok = true;

	for (unsigned int i = 0; i < n; i++) {
		if (!gpu_by_id(ctx, a[i].gpu_id)) {
			tap_diag("entry %u: gpu_id 0x%x is not in the topology", i, a[i].gpu_id);
			ok = false;
		}
		for (unsigned int j = 0; j < i; j++)
			if (a[j].gpu_id == a[i].gpu_id) {
				tap_diag("gpu_id 0x%x listed twice", a[i].gpu_id);
				ok = false;
			}
		if (!aperture_ok(&a[i]))
			ok = false;
	}
	return ok;
}

void test_apertures(struct ctx *ctx)
{
	struct kfd_ioctl_get_process_apertures_args old;
	struct kfd_ioctl_get_process_apertures_new_args nw;
	struct kfd_process_device_apertures pa[MAX_GPUS + 8];
	unsigned int expect_old = ctx->n_gpus < NUM_OF_SUPPORTED_GPUS ? ctx->n_gpus
								      : NUM_OF_SUPPORTED_GPUS;
	int r;

	memset(&old, 0, sizeof(old));
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_PROCESS_APERTURES, &old);
	tap_errno(r, 0, "GET_PROCESS_APERTURES succeeds");
	tap_eq(old.num_of_nodes, expect_old,
	       "GET_PROCESS_APERTURES: one entry per GPU, at most 7 (§1.2)");
	tap_ok(apertures_match_gpus(ctx, old.process_apertures,
				    old.num_of_nodes <= 7 ? old.num_of_nodes : 7),
	       "GET_PROCESS_APERTURES: gpu ids and aperture values (§1.7)");

	/* num_of_nodes 0 asks only for the count (§3.2). */
	memset(&nw, 0, sizeof(nw));
	nw.kfd_process_device_apertures_ptr = (uint64_t)(uintptr_t)pa;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &nw);
	tap_errno(r, 0, "GET_PROCESS_APERTURES_NEW with num_of_nodes 0 succeeds");
	tap_eq(nw.num_of_nodes, ctx->n_gpus,
	       "GET_PROCESS_APERTURES_NEW(0) returns the GPU (pdd) count (§3.2)");

	/* The thunk asks with the sysfs node count (CPU nodes included). */
	memset(pa, 0, sizeof(pa));
	nw.num_of_nodes = ctx->n_nodes;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &nw);
	tap_errno(r, 0, "GET_PROCESS_APERTURES_NEW(num_of_nodes = %u topology nodes) succeeds",
		  ctx->n_nodes);
	tap_eq(nw.num_of_nodes, ctx->n_gpus,
	       "GET_PROCESS_APERTURES_NEW fills min(pdds, num_of_nodes) entries (§3.2)");
	tap_ok(apertures_match_gpus(ctx, pa, nw.num_of_nodes <= MAX_GPUS ? nw.num_of_nodes : 0),
	       "GET_PROCESS_APERTURES_NEW: gpu ids and aperture values (§1.7)");

	if (ctx->n_gpus >= 2) {
		nw.num_of_nodes = 1;
		r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &nw);
		tap_ok(r == 0 && nw.num_of_nodes == 1,
		       "GET_PROCESS_APERTURES_NEW(1) fills exactly one entry (§3.2)");
	}

	nw.num_of_nodes = ctx->n_nodes + 1;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &nw);
	tap_errno(r, EINVAL, "GET_PROCESS_APERTURES_NEW(topology nodes + 1) -> EINVAL (§3.2)");
}

/* Resource ioctls need a VM first: kfd_bind_process_to_device fails (§2.0 item 6). */
void test_before_acquire(struct ctx *ctx)
{
	struct kfd_ioctl_create_queue_args q;
	struct queue_mem qm;
	static volatile uint64_t rptr;
	struct bo bo;
	int r;

	r = bo_alloc(ctx->kfd, &bo, ctx->gpu[0].id, va_alloc(ctx, 65536), 65536,
		     ALLOC_VRAM | ALLOC_WRITABLE | ALLOC_PUBLIC | ALLOC_NO_SUBST, 0);
	tap_errno(r, ENODEV, "ALLOC_MEMORY_OF_GPU before ACQUIRE_VM -> ENODEV (§2.0)");

	if (queue_mem_init(&qm)) {
		tap_ok(false, "queue memory");
		return;
	}
	queue_args_init(&q, ctx->gpu[0].id, &qm, &rptr);
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_CREATE_QUEUE, &q);
	tap_errno(r, ESRCH, "CREATE_QUEUE before ACQUIRE_VM -> ESRCH (§2.0)");
	queue_mem_free(&qm);
}

void test_acquire_vm(struct ctx *ctx)
{
	const struct gpu *g0 = &ctx->gpu[0];
	int devnull, other, r;

	/* Each error case runs before GPU 0 has a VM: once bound, any other file is EBUSY. */
	r = acquire_vm(ctx->kfd, -1, g0->id);
	tap_errno(r, EINVAL, "ACQUIRE_VM with a closed fd -> EINVAL (§3.2)");

	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	r = acquire_vm(ctx->kfd, devnull, g0->id);
	tap_errno(r, EINVAL, "ACQUIRE_VM with a non-DRM file (/dev/null) -> EINVAL (§3.2)");
	close(devnull);

	r = acquire_vm(ctx->kfd, g0->render_fd, ctx->bogus_gpu_id);
	tap_errno(r, EINVAL, "ACQUIRE_VM with an unknown gpu_id -> EINVAL (§3.2)");

	for (unsigned int i = 0; i < ctx->n_gpus; i++) {
		r = acquire_vm(ctx->kfd, ctx->gpu[i].render_fd, ctx->gpu[i].id);
		tap_errno(r, 0, "ACQUIRE_VM gpu 0x%x with its render node", ctx->gpu[i].id);
	}

	r = acquire_vm(ctx->kfd, g0->render_fd, g0->id);
	tap_errno(r, 0, "ACQUIRE_VM again with the same file -> 0 (§3.2)");

	/* A dup shares the open file description, hence the same drm_file. */
	other = dup(g0->render_fd);
	r = acquire_vm(ctx->kfd, other, g0->id);
	tap_errno(r, 0, "ACQUIRE_VM with a dup of the same file -> 0 (same struct file)");
	close(other);

	other = open_render(g0);
	r = acquire_vm(ctx->kfd, other, g0->id);
	tap_errno(r, EBUSY, "ACQUIRE_VM with a second render file for the same GPU -> EBUSY (§3.2)");
	close(other);
}

void test_memory_policy(struct ctx *ctx)
{
	struct kfd_ioctl_set_memory_policy_args a;
	int r;

	/* What the thunk sets up per GPU (§3.2); a zero alternate size disables APE1. */
	for (unsigned int i = 0; i < ctx->n_gpus; i++) {
		memset(&a, 0, sizeof(a));
		a.gpu_id = ctx->gpu[i].id;
		a.default_policy = KFD_IOC_CACHE_POLICY_NONCOHERENT;
		a.alternate_policy = KFD_IOC_CACHE_POLICY_COHERENT;
		r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_SET_MEMORY_POLICY, &a);
		tap_errno(r, 0, "SET_MEMORY_POLICY gpu 0x%x", ctx->gpu[i].id);
	}

	memset(&a, 0, sizeof(a));
	a.gpu_id = ctx->gpu[0].id;
	a.default_policy = 2;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_SET_MEMORY_POLICY, &a);
	tap_errno(r, EINVAL, "SET_MEMORY_POLICY with an unknown policy -> EINVAL (6.1)");

	a.default_policy = KFD_IOC_CACHE_POLICY_COHERENT;
	a.gpu_id = ctx->bogus_gpu_id;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_SET_MEMORY_POLICY, &a);
	tap_errno(r, EINVAL, "SET_MEMORY_POLICY with an unknown gpu_id -> EINVAL (6.1)");
}

/* Runs while the process has no queue: 6.1 refuses mode changes with queues (EBUSY). */
void test_xnack(struct ctx *ctx)
{
	struct kfd_ioctl_set_xnack_mode_args x = { .xnack_enabled = -1 };
	int r;

	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_SET_XNACK_MODE, &x);
	tap_errno(r, 0, "SET_XNACK_MODE(-1) queries");
	tap_eq((uint32_t)x.xnack_enabled, 0, "SET_XNACK_MODE query reports 0 (§5.4)");

	x.xnack_enabled = 0;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_SET_XNACK_MODE, &x);
	tap_errno(r, 0, "SET_XNACK_MODE(0) is accepted");

	x.xnack_enabled = 1;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_SET_XNACK_MODE, &x);
	tap_errno(r, EPERM, "SET_XNACK_MODE(1) -> EPERM (no XNACK in the emulator, §5.4)");
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void test_clock_counters(struct ctx *ctx)
{
	struct kfd_ioctl_get_clock_counters_args c1, c2;
	uint64_t raw0, boot0, raw1, boot1;
	int r;

	memset(&c1, 0, sizeof(c1));
	c1.gpu_id = ctx->gpu[0].id;
	raw0 = now_ns(CLOCK_MONOTONIC_RAW);
	boot0 = now_ns(CLOCK_BOOTTIME);
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_CLOCK_COUNTERS, &c1);
	raw1 = now_ns(CLOCK_MONOTONIC_RAW);
	boot1 = now_ns(CLOCK_BOOTTIME);
	tap_errno(r, 0, "GET_CLOCK_COUNTERS succeeds");
	tap_eq(c1.system_clock_freq, 1000000000ULL, "GET_CLOCK_COUNTERS: freq is 1 GHz (§1.2)");
	if (!tap_ok(c1.cpu_clock_counter >= raw0 && c1.cpu_clock_counter <= raw1,
		    "GET_CLOCK_COUNTERS: cpu counter is CLOCK_MONOTONIC_RAW ns (§1.2)"))
		tap_diag("%llu not in [%llu, %llu]", (unsigned long long)c1.cpu_clock_counter,
			 (unsigned long long)raw0, (unsigned long long)raw1);
	if (!tap_ok(c1.system_clock_counter >= boot0 && c1.system_clock_counter <= boot1,
		    "GET_CLOCK_COUNTERS: system counter is CLOCK_BOOTTIME ns (§1.2)"))
		tap_diag("%llu not in [%llu, %llu]", (unsigned long long)c1.system_clock_counter,
			 (unsigned long long)boot0, (unsigned long long)boot1);
	tap_ok(c1.gpu_clock_counter != 0, "GET_CLOCK_COUNTERS: gpu counter is running");

	memset(&c2, 0, sizeof(c2));
	c2.gpu_id = ctx->gpu[0].id;
	sleep_ms(2);
	kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_CLOCK_COUNTERS, &c2);
	tap_ok(c2.gpu_clock_counter > c1.gpu_clock_counter &&
		       c2.cpu_clock_counter > c1.cpu_clock_counter,
	       "GET_CLOCK_COUNTERS: counters are monotonic");

	/* A node without a GPU gets gpu counter 0 but still succeeds (§1.2). */
	memset(&c2, 0, sizeof(c2));
	c2.gpu_id = ctx->bogus_gpu_id;
	c2.gpu_clock_counter = 42;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_CLOCK_COUNTERS, &c2);
	tap_ok(r == 0 && c2.gpu_clock_counter == 0 && c2.system_clock_freq == 1000000000ULL,
	       "GET_CLOCK_COUNTERS with an unknown gpu_id -> 0, gpu counter 0 (§1.2)");
}

/*
 * @req with @args on the first GPU, then on an unknown gpu_id (@gpu_id points
 * into @args): it succeeds, then fails with EINVAL, as in 6.1.
 */
static void gpu_id_checked(struct ctx *ctx, unsigned long req, void *args, uint32_t *gpu_id,
			   const char *name)
{
	*gpu_id = ctx->gpu[0].id;
	tap_errno(kfd_ioctl(ctx->kfd, req, args), 0, "%s succeeds", name);
	*gpu_id = ctx->bogus_gpu_id;
	tap_errno(kfd_ioctl(ctx->kfd, req, args), EINVAL,
		  "%s with an unknown gpu_id -> EINVAL (6.1)", name);
}

void test_misc(struct ctx *ctx)
{
	struct kfd_ioctl_set_scratch_backing_va_args s;
	struct kfd_ioctl_set_trap_handler_args t;
	struct kfd_ioctl_get_tile_config_args tc;
	uint32_t tiles[64], macro[64];
	int r;

	test_clock_counters(ctx);

	memset(&s, 0, sizeof(s));
	s.va_addr = va_alloc(ctx, 1 << 20);
	gpu_id_checked(ctx, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &s, &s.gpu_id, "SET_SCRATCH_BACKING_VA");

	memset(&t, 0, sizeof(t));
	t.tba_addr = va_alloc(ctx, 8192);
	t.tma_addr = t.tba_addr + 4096;
	gpu_id_checked(ctx, AMDKFD_IOC_SET_TRAP_HANDLER, &t, &t.gpu_id, "SET_TRAP_HANDLER");

	memset(&tc, 0, sizeof(tc));
	tc.gpu_id = ctx->gpu[0].id;
	tc.tile_config_ptr = (uint64_t)(uintptr_t)tiles;
	tc.macro_tile_config_ptr = (uint64_t)(uintptr_t)macro;
	tc.num_tile_configs = 64;
	tc.num_macro_tile_configs = 64;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_TILE_CONFIG, &tc);
	tap_errno(r, 0, "GET_TILE_CONFIG succeeds");
	/* The kernel clamps the counts to its own table sizes. */
	if (!tap_ok(tc.num_tile_configs <= 64 && tc.num_macro_tile_configs <= 64 &&
			    tc.gb_addr_config != 0,
		    "GET_TILE_CONFIG: counts clamped, gb_addr_config set"))
		tap_diag("tiles %u macro %u gb_addr_config 0x%x", tc.num_tile_configs,
			 tc.num_macro_tile_configs, tc.gb_addr_config);
	tc.gpu_id = ctx->bogus_gpu_id;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_TILE_CONFIG, &tc);
	tap_errno(r, EINVAL, "GET_TILE_CONFIG with an unknown gpu_id -> EINVAL (6.1)");
}

/*
 * A /dev/kfd fd belongs to the process that opened it; a forked child must
 * open its own (§2.0 item 2) - the thunk treats EBADF as exactly that.
 */
static void non_owner_child(struct ctx *ctx, void *arg)
{
	struct kfd_ioctl_get_version_args v = { 0 };
	struct kfd_ioctl_get_process_apertures_new_args nw = { 0 };
	struct kfd_ioctl_criu_args c;
	struct bo bo;
	int kfd, r;

	(void)arg;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_VERSION, &v);
	tap_errno(r, EBADF, "child using the parent's fd: GET_VERSION -> EBADF (§2.0)");
	r = bo_alloc(ctx->kfd, &bo, ctx->gpu[0].id, va_alloc(ctx, 4096), 4096, ALLOC_GTT, 0);
	tap_errno(r, EBADF, "child using the parent's fd: ALLOC_MEMORY_OF_GPU -> EBADF (§2.0)");
	memset(&c, 0, sizeof(c));
	r = criu_op(ctx->kfd, &c, KFD_CRIU_OP_PROCESS_INFO);
	tap_errno(r, EBADF,
		  "child (not a tracer) using the parent's fd: CRIU PROCESS_INFO -> EBADF (§2.6)");

	kfd = open_kfd();
	if (!tap_ok(kfd >= 0, "child opens its own /dev/kfd"))
		return;
	r = kfd_ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v);
	tap_errno(r, 0, "child: GET_VERSION on its own fd");
	r = kfd_ioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &nw);
	tap_ok(r == 0 && nw.num_of_nodes == ctx->n_gpus,
	       "child: a fresh process gets a pdd for every GPU (§2.0 item 5)");
	/* A fresh process has no VM yet, whatever its parent did. */
	r = bo_alloc(kfd, &bo, ctx->gpu[0].id, va_alloc(ctx, 4096), 4096, ALLOC_GTT, 0);
	tap_errno(r, ENODEV, "child: ALLOC before its own ACQUIRE_VM -> ENODEV (§2.0)");
	close(kfd);
}

void test_non_owner(struct ctx *ctx)
{
	wait_child(run_child("non-owner", non_owner_child, ctx, NULL), "non-owner");
}
