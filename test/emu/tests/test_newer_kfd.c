// SPDX-License-Identifier: GPL-2.0-only
/*
 * The KFD interface of kernels after 6.1, as far as the emulator implements it: 1.12 (6.4)
 * EXPORT_DMABUF, 1.13 (6.5) RUNTIME_ENABLE and DBG_TRAP with the debug topology bits,
 * 1.14 (6.8) event ages, the EXT_COHERENT (1.13) and CONTIGUOUS (1.16, 6.11) allocation flags
 * through CRIU CHECKPOINT, 1.17 (6.12) SDMA_BY_ENG_ID queues and the grown create_queue_args.
 * Each part runs only when the header the program is built against has that version; built
 * against 6.1's header (1.11) the program asserts that those ioctl numbers answer EINVAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hand_kernels.h"
#include "kfd_test.h"

#define EMU_MINOR_IMPLEMENTED 23
#define EXPECTED_MINOR \
	(KFD_IOCTL_MINOR_VERSION < EMU_MINOR_IMPLEMENTED ? KFD_IOCTL_MINOR_VERSION : \
							     EMU_MINOR_IMPLEMENTED)

static void version(struct ctx *ctx)
{
	struct kfd_ioctl_get_version_args v = { 0 };

	kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_VERSION, &v);
	if (!tap_ok(v.minor_version == EXPECTED_MINOR,
		    "GET_VERSION reports 1.%u: the header's version, at most what is implemented",
		    EXPECTED_MINOR))
		tap_diag("got 1.%u", v.minor_version);
}

#if KFD_IOCTL_MINOR_VERSION < 12
/* 6.1 (KFD 1.11): the table ends at AVAILABLE_MEMORY; later numbers are unknown commands. */
static void later_numbers_unknown(struct ctx *ctx)
{
	uint64_t scratch[8] = { 0 };
	unsigned int nr;

	for (nr = 0x24; nr <= 0x26; nr++)
		tap_errno(kfd_ioctl(ctx->kfd, _IOWR('K', nr, uint64_t[2]), scratch), EINVAL,
			  "ioctl nr 0x%x (a 6.4+ command) -> EINVAL on a 6.1 interface", nr);
}
#endif

#if KFD_IOCTL_MINOR_VERSION >= 12
static int export_dmabuf(int kfd, uint64_t handle, uint32_t flags, int *fd)
{
	struct kfd_ioctl_export_dmabuf_args a = { .handle = handle, .flags = flags };
	int r = kfd_ioctl(kfd, AMDKFD_IOC_EXPORT_DMABUF, &a);

	*fd = r ? -1 : (int)a.dmabuf_fd;
	return r;
}

struct import_arg {
	uint32_t gpu_id;
	int dmabuf_fd;
	uint64_t size;
	uint32_t seed;
};

/* Another process imports the dma-buf through its own KFD and writes through it. */
static void import_child(struct ctx *ctx, void *p)
{
	struct import_arg *ia = p;
	const struct gpu *g = gpu_by_id(ctx, ia->gpu_id);
	struct kfd_ioctl_import_dmabuf_args im = { 0 };
	int kfd = open_kfd(), rfd = open_render(g);
	uint64_t goff;
	uint32_t gh;
	void *m;

	if (kfd < 0 || rfd < 0 || acquire_vm(kfd, rfd, ia->gpu_id))
		_exit(2);
	im.va_addr = va_alloc(ctx, ia->size);
	im.gpu_id = ia->gpu_id;
	im.dmabuf_fd = ia->dmabuf_fd;
	if (kfd_ioctl(kfd, AMDKFD_IOC_IMPORT_DMABUF, &im) || HANDLE_GPU(im.handle) != ia->gpu_id)
		_exit(3);
	m = dmabuf_map(rfd, ia->dmabuf_fd, ia->size, PROT_READ | PROT_WRITE, &goff, &gh);
	if (!m)
		_exit(4);
	if (!check_pattern(m, ia->size, ia->seed, NULL))
		_exit(5);
	fill_pattern(m, ia->size, ia->seed + 1);
	dmabuf_unmap(rfd, m, ia->size, gh);
	_exit(0);
}

/* 6.4 (KFD 1.12): EXPORT_DMABUF, following kfd_ioctl_export_dmabuf of 6.4..6.15. */
static void export(struct ctx *ctx)
{
	const struct gpu *g = &ctx->gpu[0];
	struct kfd_ioctl_get_dmabuf_info_args info = { 0 };
	struct import_arg ia;
	struct stat s1, s2;
	struct bo bo, up;
	int fd, fd2;
	void *cpu, *user;
	pid_t pid;

	tap_errno(export_dmabuf(ctx->kfd, ((uint64_t)ctx->bogus_gpu_id << 32) | 1, 0, &fd),
		  EINVAL, "EXPORT_DMABUF of a handle on no GPU -> EINVAL (6.4)");
	tap_errno(export_dmabuf(ctx->kfd, ((uint64_t)g->id << 32) | 0xfffff, 0, &fd), EINVAL,
		  "EXPORT_DMABUF of an unknown handle -> EINVAL (6.4)");

	if (bo_alloc(ctx->kfd, &bo, g->id, va_alloc(ctx, 1 << 20), 1 << 20,
		     ALLOC_VRAM | ALLOC_WRITABLE | ALLOC_PUBLIC, 0)) {
		tap_ok(false, "EXPORT_DMABUF: a VRAM BO to export");
		return;
	}
	cpu = bo_cpu_map(g->render_fd, bo.mmap_offset, bo.size, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (cpu)
		fill_pattern(cpu, bo.size, 0x1200);

	tap_errno(export_dmabuf(ctx->kfd, bo.handle, O_CLOEXEC, &fd), 0,
		  "EXPORT_DMABUF of a VRAM BO succeeds (6.4)");
	tap_ok(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC),
	       "EXPORT_DMABUF: the flags go to the new fd (O_CLOEXEC) (6.4)");
	export_dmabuf(ctx->kfd, bo.handle, 0, &fd2);
	tap_ok(fd >= 0 && fd2 >= 0 && !fstat(fd, &s1) && !fstat(fd2, &s2) && s1.st_ino == s2.st_ino,
	       "EXPORT_DMABUF twice hands out two fds of one dma-buf (6.4)");

	info.dmabuf_fd = fd;
	tap_ok(!kfd_ioctl(ctx->kfd, AMDKFD_IOC_GET_DMABUF_INFO, &info) && info.size == bo.size &&
		       info.gpu_id == g->id && (info.flags & ALLOC_VRAM),
	       "GET_DMABUF_INFO of a KFD-exported dma-buf names its size, GPU and VRAM");

	ia = (struct import_arg){ .gpu_id = g->id, .dmabuf_fd = fd, .size = bo.size,
				  .seed = 0x1200 };
	pid = run_child("EXPORT_DMABUF import", import_child, ctx, &ia);
	tap_ok(wait_child(pid, "EXPORT_DMABUF import") && cpu &&
		       check_pattern(cpu, bo.size, 0x1201, NULL),
	       "another process IMPORTs the exported dma-buf onto the same pages (6.4)");

	user = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (user != MAP_FAILED &&
	    !bo_alloc(ctx->kfd, &up, g->id, va_alloc(ctx, 1 << 16), 1 << 16,
		      ALLOC_USERPTR | ALLOC_WRITABLE, (uint64_t)(uintptr_t)user)) {
		tap_errno(export_dmabuf(ctx->kfd, up.handle, 0, &fd2), EPERM,
			  "EXPORT_DMABUF of user pages -> EPERM (amdgpu's export refuses them)");
		bo_free(ctx->kfd, up.handle);
	}
	if (cpu)
		munmap(cpu, bo.size);
	close(fd);
	bo_free(ctx->kfd, bo.handle);
}
#endif

#if KFD_IOCTL_MINOR_VERSION >= 13
static int runtime_enable(int kfd, uint32_t mode, uint64_t r_debug, uint32_t *caps)
{
	struct kfd_ioctl_runtime_enable_args a = { .r_debug = r_debug, .mode_mask = mode,
						   .capabilities_mask = *caps };
	int r = kfd_ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &a);

	*caps = a.capabilities_mask;
	return r;
}

static int dbg_trap(int kfd, uint32_t pid, uint32_t op)
{
	struct kfd_ioctl_dbg_trap_args a = { .pid = pid, .op = op };

	return kfd_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &a);
}

/* exit codes name the step that failed */
static void runtime_child(struct ctx *ctx, void *unused)
{
	const uint32_t on = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK |
			    KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK;
	const struct gpu *g = &ctx->gpu[0];
	struct kfd_ioctl_create_queue_args q;
	struct queue_mem qm;
	static uint64_t rptr;
	uint32_t caps = 0xabc;
	int kfd = open_kfd(), rfd = open_render(g);

	(void)unused;
	if (kfd < 0 || rfd < 0 || acquire_vm(kfd, rfd, g->id))
		_exit(2);
	if (runtime_enable(kfd, on, 0x7f0000001000ULL, &caps) || caps != 0xabc)
		_exit(3);	/* enabled; capabilities_mask comes back as passed */
	if (runtime_enable(kfd, on, 0x7f0000001000ULL, &caps) != -EBUSY)
		_exit(4);
	if (runtime_enable(kfd, 0, 0, &caps) || runtime_enable(kfd, 0, 0, &caps))
		_exit(5);	/* disabling always succeeds */
	if (runtime_enable(kfd, on, 0x7f0000002000ULL, &caps))
		_exit(6);
	runtime_enable(kfd, 0, 0, &caps);

	if (dbg_trap(kfd, getpid(), KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED) != -EINVAL)
		_exit(7);	/* not debug-enabled */
	if (dbg_trap(kfd, getppid(), KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT) != -EPERM)
		_exit(8);	/* another process, not traced by us */
	if (dbg_trap(kfd, 0x3fffffff, KFD_IOC_DBG_TRAP_DISABLE) != -ESRCH)
		_exit(9);
	if (dbg_trap(kfd, getpid(), 99) != -EINVAL)
		_exit(10);

	if (queue_mem_init(&qm))
		_exit(11);
	queue_args_init(&q, g->id, &qm, &rptr);
	if (kfd_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q))
		_exit(12);
	if (runtime_enable(kfd, on, 0x7f0000001000ULL, &caps) != -EEXIST)
		_exit(13);	/* queues came first */
	_exit(0);
}

/*
 * A debug session on the process itself, as ROCm's runtime opens one for a GPU core dump (and
 * criu's plugin, the task's ptracer, on a task it checkpoints): the runtime info comes out, a
 * second session is refused, the snapshots list the GPUs and the queue, a queue is suspended and
 * resumed by id (an unknown id comes back marked), and DISABLE ends it. Exit codes name the step.
 */
static void session_child(struct ctx *ctx, void *unused)
{
	const uint32_t on = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK;
	const struct gpu *g = &ctx->gpu[0];
	struct kfd_ioctl_dbg_trap_args a;
	struct kfd_runtime_info info = { 0 };
	struct kfd_dbg_device_info_entry dev[8];
	struct kfd_queue_snapshot_entry qs[4];
	struct kfd_ioctl_create_queue_args q;
	struct queue_mem qm;
	static uint64_t rptr;
	uint32_t caps = 0, ids[2];
	int kfd = open_kfd(), rfd = open_render(g), events[2];

	(void)unused;
	if (kfd < 0 || rfd < 0 || acquire_vm(kfd, rfd, g->id) || pipe(events))
		_exit(2);
	if (runtime_enable(kfd, on, 0x7f0000003000ULL, &caps))
		_exit(3);
	if (queue_mem_init(&qm))
		_exit(4);
	queue_args_init(&q, g->id, &qm, &rptr);
	if (kfd_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q))
		_exit(5);

	memset(&a, 0, sizeof(a));
	a.pid = getpid();
	a.op = KFD_IOC_DBG_TRAP_ENABLE;
	a.enable.rinfo_ptr = (uint64_t)(uintptr_t)&info;
	a.enable.rinfo_size = sizeof(info);
	a.enable.dbg_fd = events[1];
	if (kfd_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &a) || a.enable.rinfo_size != sizeof(info))
		_exit(6);
	if (info.runtime_state != DEBUG_RUNTIME_STATE_ENABLED || info.r_debug != 0x7f0000003000ULL)
		_exit(7);	/* what the runtime registered */
	if (kfd_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &a) != -EALREADY)
		_exit(8);

	memset(&a, 0, sizeof(a));
	a.pid = getpid();
	a.op = KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT;
	a.device_snapshot.snapshot_buf_ptr = (uint64_t)(uintptr_t)dev;
	a.device_snapshot.num_devices = 8;
	a.device_snapshot.entry_size = sizeof(dev[0]);
	if (kfd_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &a) || a.device_snapshot.num_devices != ctx->n_gpus ||
	    a.device_snapshot.entry_size != sizeof(dev[0]) || dev[0].gpu_id != g->id || dev[0].vendor_id != 0x1002)
		_exit(9);

	memset(&a, 0, sizeof(a));
	a.pid = getpid();
	a.op = KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT;
	a.queue_snapshot.entry_size = sizeof(qs[0]);
	if (kfd_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &a) || a.queue_snapshot.num_queues != 1)
		_exit(10);	/* how many there are, with no room given */
	a.queue_snapshot.snapshot_buf_ptr = (uint64_t)(uintptr_t)qs;
	a.queue_snapshot.num_queues = 4;
	if (kfd_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &a) || a.queue_snapshot.num_queues != 1 ||
	    qs[0].queue_id != q.queue_id || qs[0].gpu_id != g->id || qs[0].ring_size != q.ring_size)
		_exit(11);

	ids[0] = q.queue_id;
	ids[1] = q.queue_id + 100;
	memset(&a, 0, sizeof(a));
	a.pid = getpid();
	a.op = KFD_IOC_DBG_TRAP_SUSPEND_QUEUES;
	a.suspend_queues.queue_array_ptr = (uint64_t)(uintptr_t)ids;
	a.suspend_queues.num_queues = 2;
	if (kfd_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &a) != 1 || ids[0] != q.queue_id ||
	    !(ids[1] & KFD_DBG_QUEUE_INVALID_MASK))
		_exit(12);	/* one suspended, the unknown id marked */
	ids[1] = q.queue_id;
	memset(&a, 0, sizeof(a));
	a.pid = getpid();
	a.op = KFD_IOC_DBG_TRAP_RESUME_QUEUES;
	a.resume_queues.queue_array_ptr = (uint64_t)(uintptr_t)ids;
	a.resume_queues.num_queues = 1;
	if (kfd_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &a) != 1)
		_exit(13);

	if (dbg_trap(kfd, getpid(), KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE) != -EOPNOTSUPP)
		_exit(14);	/* beyond what the emulator does */
	if (dbg_trap(kfd, getpid(), KFD_IOC_DBG_TRAP_DISABLE) ||
	    dbg_trap(kfd, getpid(), KFD_IOC_DBG_TRAP_DISABLE) != -EINVAL)
		_exit(15);	/* closed; a second DISABLE finds no session */
	_exit(0);
}

static bool node_capability(const struct gpu *g, uint32_t *cap)
{
	char path[128], line[128];
	unsigned long long v;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/virtual/kfd/kfd/topology/nodes/%u/properties",
		 g->node);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "capability %llu", &v) == 1) {
			*cap = (uint32_t)v;
			found = true;
		}
	fclose(f);
	return found;
}

/* 6.5 (KFD 1.13): RUNTIME_ENABLE, and DBG_TRAP without and with a debug session. */
static void runtime(struct ctx *ctx)
{
	uint32_t cap = 0;
	unsigned int i;
	bool all = true;

	for (i = 0; i < ctx->n_gpus; i++)
		all = all && node_capability(&ctx->gpu[i], &cap) &&
		      (cap & 0x20000000u) && (cap & 0x8000u) && !(cap & 0x80000u);
	tap_ok(all, "every GPU node says trap debugging and debug-capable MEC firmware, "
		    "SRAM ECC at its new bit (6.5 topology)");

	tap_ok(wait_child(run_child("RUNTIME_ENABLE", runtime_child, ctx, NULL), "RUNTIME_ENABLE"),
	       "RUNTIME_ENABLE: enable, EBUSY twice, disable always, EEXIST after queues; "
	       "DBG_TRAP: EINVAL undebugged, EPERM untraced, ESRCH no such pid (6.5)");
	tap_ok(wait_child(run_child("DBG_TRAP session", session_child, ctx, NULL), "DBG_TRAP session"),
	       "DBG_TRAP on itself: ENABLE gives the registered runtime info, EALREADY for a second; "
	       "device and queue snapshots; a queue suspended and resumed by id, an unknown id marked; "
	       "DISABLE ends it (6.5)");
}

/*
 * One AQL queue as ROCr lays it out, in one GTT BO: an amd_queue_t (its fields at the byte
 * offsets of ROCr's amd_hsa_queue.h), the ring, the context save area header the thunk
 * writes (struct kfd_context_save_area_header) and an error payload, and an amd_signal_t as
 * queue_inactive_signal, and in the same BO a kernel (test/common/hand_kernels.h) whose
 * first instruction is an MFMA: MI100 and MI200 execute it, the emulated GPU's shader core
 * does not, so its dispatch ends as an illegal instruction; a dispatch whose kernel object is
 * not mapped ends as a memory violation. How the process hears of either depends on whether
 * its runtime was enabled.
 */
#define XQ_BO_SIZE 65536
#define XQ_RING 4096		/* offsets in the BO */
#define XQ_CSA 8192
#define XQ_PAYLOAD 12288
#define XQ_INACTIVE 16384
#define XQ_KERNEL 20480
#define AMDQ_BASE_ADDRESS 8	/* amd_queue_t */
#define AMDQ_SIZE_PACKETS 24
#define AMDQ_WRITE_DISPATCH_ID 56
#define AMDQ_READ_DISPATCH_ID 128
#define AMDQ_READ_FIELD_OFFSET 136
#define AMDQ_INACTIVE_SIGNAL 192
#define AMDSIG_VALUE 8		/* amd_signal_t */
#define AQL_DISPATCH_HEADER 2	/* HSA_PACKET_TYPE_KERNEL_DISPATCH */
#define AQL_DISPATCH_SETUP 1	/* one dimension */
#define AQL_WORKGROUP_SIZE 4	/* hsa_kernel_dispatch_packet_t: 3 x u16 */
#define AQL_GRID_SIZE 12	/* 3 x u32 */
#define AQL_KERNEL_OBJECT 32
/* queue_inactive_signal's codes */
#define QUEUE_ERROR_MEMORY_VIOLATION 0x20000000ULL
#define QUEUE_ERROR_ILLEGAL_INSTRUCTION 0x40000000ULL
/* Below the GPUVM aperture KFD reports (from 0x4000, as on a gfx9 dGPU): nothing is mapped there */
#define UNMAPPED_KERNEL_OBJECT 0x1000

/* What a dispatch runs into, and how the queue must report it with and without the runtime */
struct dispatch_fault {
	bool runtime_enabled;
	bool unmapped;			/* the kernel object is not mapped; else the MFMA kernel */
	uint64_t exception;		/* runtime enabled: the payload's bit */
	uint64_t code;			/* not enabled: queue_inactive_signal's value */
};

static uint64_t *xq_word(uint8_t *cpu, uint64_t off)
{
	return (uint64_t *)(cpu + off);
}

/* exit codes name the step that failed */
static void exception_child(struct ctx *ctx, void *arg)
{
	const struct gpu *g = &ctx->gpu[0];
	const struct dispatch_fault *f = arg;
	bool enable = f->runtime_enabled;
	uint16_t wg[3] = { 64, 1, 1 };
	uint32_t grid[3] = { 64, 1, 1 };
	struct kfd_ioctl_create_event_args ce = { .event_type = KFD_IOC_EVENT_SIGNAL,
						  .auto_reset = 1 };
	struct kfd_event_data ed = { 0 };
	struct kfd_ioctl_wait_events_args we = { .events_ptr = (uint64_t)(uintptr_t)&ed,
						 .num_events = 1, .wait_for_all = 1,
						 .timeout = 3000 };
	struct kfd_ioctl_create_queue_args q;
	struct kfd_context_save_area_header *csa;
	struct queue_mem qm;
	uint32_t caps = 0, n_ok = 0;
	struct bo bo;
	uint64_t v, *inactive;
	uint8_t *cpu;
	int kfd = open_kfd(), rfd = open_render(g), i;

	if (kfd < 0 || rfd < 0 || acquire_vm(kfd, rfd, g->id))
		_exit(2);
	if (enable && runtime_enable(kfd, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, 0, &caps))
		_exit(3);
	if (bo_alloc(kfd, &bo, g->id, va_alloc(ctx, XQ_BO_SIZE), XQ_BO_SIZE,
		     ALLOC_GTT | ALLOC_WRITABLE | ALLOC_NO_SUBST, 0) ||
	    bo_map(kfd, bo.handle, &g->id, 1, &n_ok) || n_ok != 1)
		_exit(4);
	cpu = bo_cpu_map(rfd, bo.mmap_offset, XQ_BO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (cpu == MAP_FAILED || kfd_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, &ce))
		_exit(5);
	v = bo.va;
	memset(cpu, 0, XQ_BO_SIZE);
	*xq_word(cpu, AMDQ_BASE_ADDRESS) = v + XQ_RING;
	*(uint32_t *)(cpu + AMDQ_SIZE_PACKETS) = 4096 / 64;
	*(uint32_t *)(cpu + AMDQ_READ_FIELD_OFFSET) = AMDQ_READ_DISPATCH_ID;
	*xq_word(cpu, AMDQ_INACTIVE_SIGNAL) = v + XQ_INACTIVE;
	csa = (struct kfd_context_save_area_header *)(cpu + XQ_CSA);
	csa->err_payload_addr = v + XQ_PAYLOAD;
	csa->err_event_id = ce.event_id;
	inactive = xq_word(cpu, XQ_INACTIVE + AMDSIG_VALUE);

	if (queue_mem_init(&qm))
		_exit(6);
	queue_args_init(&q, g->id, &qm, NULL);
	q.ring_base_address = v + XQ_RING;
	q.read_pointer_address = v + AMDQ_READ_DISPATCH_ID;
	q.write_pointer_address = v + AMDQ_WRITE_DISPATCH_ID;
	q.ctx_save_restore_address = v + XQ_CSA;
	if (kfd_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q))
		_exit(7);

	/* a dispatch of one wave, published */
	hand_kernel_write(cpu + XQ_KERNEL, mfma_code, sizeof(mfma_code));
	memcpy(cpu + XQ_RING + AQL_WORKGROUP_SIZE, wg, sizeof(wg));
	memcpy(cpu + XQ_RING + AQL_GRID_SIZE, grid, sizeof(grid));
	*xq_word(cpu, XQ_RING + AQL_KERNEL_OBJECT) = f->unmapped ? UNMAPPED_KERNEL_OBJECT : v + XQ_KERNEL;
	__atomic_store_n((uint32_t *)(cpu + XQ_RING), AQL_DISPATCH_HEADER | AQL_DISPATCH_SETUP << 16,
			 __ATOMIC_RELEASE);
	__atomic_store_n(xq_word(cpu, AMDQ_WRITE_DISPATCH_ID), 1, __ATOMIC_RELEASE);

	if (enable) {
		/* the payload gets the exception's bit and the header's event is set */
		ed.event_id = ce.event_id;
		if (kfd_ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &we) ||
		    we.wait_result != KFD_IOC_WAIT_RESULT_COMPLETE)
			_exit(8);
		if (*xq_word(cpu, XQ_PAYLOAD) != f->exception)
			_exit(9);
		if (*inactive)
			_exit(10);	/* queue_inactive_signal is not used for it */
	} else {
		for (i = 0; i < 300 && !__atomic_load_n(inactive, __ATOMIC_ACQUIRE); i++)
			sleep_ms(10);
		if (*inactive != f->code)
			_exit(11);
		if (*xq_word(cpu, XQ_PAYLOAD))
			_exit(12);	/* no exception without the runtime enabled */
	}
	_exit(0);
}

/*
 * 6.5 (KFD 1.13): a queue error of a process whose runtime is enabled reaches it as a queue
 * exception: the exception's bit ORed into the payload named by the queue's context save
 * area header, and the event named there set. Without RUNTIME_ENABLE the error code goes
 * into queue_inactive_signal, as on 6.1. Both for a wave that meets an instruction the
 * shader core does not execute and for a kernel descriptor the GPU VM does not map.
 */
static void queue_exception(struct ctx *ctx)
{
	struct dispatch_fault illegal = { .runtime_enabled = true,
					  .exception = KFD_EC_MASK(EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION),
					  .code = QUEUE_ERROR_ILLEGAL_INSTRUCTION };
	struct dispatch_fault unmapped = { .runtime_enabled = true, .unmapped = true,
					   .exception = KFD_EC_MASK(EC_QUEUE_WAVE_APERTURE_VIOLATION),
					   .code = QUEUE_ERROR_MEMORY_VIOLATION };

	tap_ok(wait_child(run_child("queue exception", exception_child, ctx, &illegal),
			  "queue exception"),
	       "runtime enabled: a kernel that starts with an MFMA (which the emulated shader core "
	       "does not execute) sets EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION in the save area's error "
	       "payload and raises its event; queue_inactive_signal stays 0 (6.5)");
	tap_ok(wait_child(run_child("queue exception", exception_child, ctx, &unmapped),
			  "queue exception"),
	       "runtime enabled: a dispatch whose kernel object is not mapped sets "
	       "EC_QUEUE_WAVE_APERTURE_VIOLATION, nothing else (6.5)");
	illegal.runtime_enabled = unmapped.runtime_enabled = false;
	tap_ok(wait_child(run_child("queue error", exception_child, ctx, &illegal), "queue error"),
	       "runtime not enabled: the MFMA kernel writes 0x40000000 (illegal instruction) into "
	       "queue_inactive_signal, no exception (6.1)");
	tap_ok(wait_child(run_child("queue error", exception_child, ctx, &unmapped), "queue error"),
	       "runtime not enabled: the unmapped kernel object writes 0x20000000 (memory violation) "
	       "into queue_inactive_signal, no exception (6.1)");
}

/* 6.8 (KFD 1.14): a waiter that saw an older age of a signal event returns at once. */
static void event_age(struct ctx *ctx)
{
	struct kfd_ioctl_create_event_args ce = { .event_type = KFD_IOC_EVENT_SIGNAL,
						  .auto_reset = 1 };
	struct kfd_ioctl_set_event_args se = { 0 };
	struct kfd_ioctl_destroy_event_args de = { 0 };
	struct kfd_event_data ed = { 0 };
	struct kfd_ioctl_wait_events_args we = { .events_ptr = (uint64_t)(uintptr_t)&ed,
						 .num_events = 1, .wait_for_all = 1,
						 .timeout = 0 };

	if (kfd_ioctl(ctx->kfd, AMDKFD_IOC_CREATE_EVENT, &ce)) {
		tap_ok(false, "event age: a signal event");
		return;
	}
	ed.event_id = ce.event_id;
	ed.signal_event_data.last_event_age = 1;
	kfd_ioctl(ctx->kfd, AMDKFD_IOC_WAIT_EVENTS, &we);
	tap_ok(we.wait_result == KFD_IOC_WAIT_RESULT_TIMEOUT,
	       "WAIT_EVENTS with the age of a fresh event (1) times out (6.8)");

	se.event_id = ce.event_id;
	kfd_ioctl(ctx->kfd, AMDKFD_IOC_SET_EVENT, &se);
	kfd_ioctl(ctx->kfd, AMDKFD_IOC_WAIT_EVENTS, &we);	/* consumes the auto-reset signal */
	ed.signal_event_data.last_event_age = 1;
	we.wait_result = 0;
	kfd_ioctl(ctx->kfd, AMDKFD_IOC_WAIT_EVENTS, &we);
	tap_ok(we.wait_result == KFD_IOC_WAIT_RESULT_COMPLETE &&
		       ed.signal_event_data.last_event_age == 2,
	       "WAIT_EVENTS with an age the event has passed completes and returns the new age (6.8)");

	ed.signal_event_data.last_event_age = 0;
	we.wait_result = 0;
	kfd_ioctl(ctx->kfd, AMDKFD_IOC_WAIT_EVENTS, &we);
	tap_ok(we.wait_result == KFD_IOC_WAIT_RESULT_TIMEOUT,
	       "WAIT_EVENTS with age 0 waits as before 1.14 (6.8)");
	de.event_id = ce.event_id;
	kfd_ioctl(ctx->kfd, AMDKFD_IOC_DESTROY_EVENT, &de);
}

/* The flags of the CHECKPOINT bucket of the BO at @va, 0 if none. */
static uint32_t checkpoint_flags(int kfd, uint64_t va)
{
	struct kfd_ioctl_criu_args a = { 0 };
	struct kfd_criu_device_bucket *devs;
	struct kfd_criu_bo_bucket *bos;
	uint32_t flags = 0, i;
	void *priv;

	if (criu_op(kfd, &a, KFD_CRIU_OP_PROCESS_INFO))
		return 0;
	devs = calloc(a.num_devices, sizeof(*devs));
	bos = calloc(a.num_bos, sizeof(*bos));
	priv = calloc(1, a.priv_data_size);
	a.devices = (uintptr_t)devs;
	a.bos = (uintptr_t)bos;
	a.priv_data = (uintptr_t)priv;
	if (devs && bos && priv && !criu_op(kfd, &a, KFD_CRIU_OP_CHECKPOINT))
		for (i = 0; i < a.num_bos; i++)
			if (bos[i].addr == va)
				flags = bos[i].alloc_flags;
	criu_op(kfd, &a, KFD_CRIU_OP_UNPAUSE);
	free(devs);
	free(bos);
	free(priv);
	return flags;
}

/* 6.5 EXT_COHERENT, 6.11 CONTIGUOUS: accepted with any domain, kept, and checkpointed. */
static void alloc_flags(struct ctx *ctx)
{
	uint32_t extra = KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT;
	const struct gpu *g = &ctx->gpu[0];
	struct bo vram, gtt;

#if KFD_IOCTL_MINOR_VERSION >= 16
	extra |= KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS;
#endif
	tap_errno(bo_alloc(ctx->kfd, &vram, g->id, va_alloc(ctx, 1 << 20), 1 << 20,
			   ALLOC_VRAM | ALLOC_WRITABLE | extra, 0),
		  0, "ALLOC VRAM with EXT_COHERENT (6.5) and CONTIGUOUS (6.11) succeeds");
	tap_errno(bo_alloc(ctx->kfd, &gtt, g->id, va_alloc(ctx, 1 << 16), 1 << 16,
			   ALLOC_GTT | ALLOC_WRITABLE | extra, 0),
		  0, "ALLOC GTT with EXT_COHERENT and CONTIGUOUS succeeds (ignored off VRAM)");
	tap_ok((checkpoint_flags(ctx->kfd, vram.va) & extra) == extra &&
		       (checkpoint_flags(ctx->kfd, gtt.va) & extra) == extra,
	       "CRIU CHECKPOINT reports the new flags in the BO buckets' alloc_flags");
	bo_free(ctx->kfd, vram.handle);
	bo_free(ctx->kfd, gtt.handle);
}
#endif

#if KFD_IOCTL_MINOR_VERSION >= 17
/* the create_queue_args of 1.11..1.16, without sdma_engine_id and what follows */
#define CREATE_QUEUE_OLD _IOWR('K', 0x02, uint8_t[offsetof(struct kfd_ioctl_create_queue_args, \
							    sdma_engine_id)])

/* 6.12 (KFD 1.17): SDMA queues on a named engine; the old argument size still works. */
static void sdma_by_engine(struct ctx *ctx)
{
	const struct gpu *g = &ctx->gpu[0];
	struct kfd_ioctl_destroy_queue_args dq = { 0 };
	struct kfd_ioctl_create_queue_args q;
	uint32_t engines = 0, v;
	static uint64_t rptr;
	struct queue_mem qm;
	char path[128], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/virtual/kfd/kfd/topology/nodes/%u/properties",
		 g->node);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "num_sdma_engines %u", &v) == 1 ||
		    sscanf(line, "num_sdma_xgmi_engines %u", &v) == 1)
			engines += v;
	if (f)
		fclose(f);
	if (queue_mem_init(&qm) || !engines) {
		tap_ok(false, "SDMA_BY_ENG_ID: queue memory and the engine count");
		return;
	}

	queue_args_init(&q, g->id, &qm, &rptr);
	q.queue_type = KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID;
	q.sdma_engine_id = engines;
	tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_CREATE_QUEUE, &q), EINVAL,
		  "SDMA_BY_ENG_ID past the last engine (%u) -> EINVAL (6.12)", engines);

	queue_args_init(&q, g->id, &qm, &rptr);
	q.queue_type = KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID;
	q.sdma_engine_id = engines - 1;
	tap_errno(kfd_ioctl(ctx->kfd, AMDKFD_IOC_CREATE_QUEUE, &q), 0,
		  "SDMA_BY_ENG_ID on the last engine creates a queue (6.12)");
	dq.queue_id = q.queue_id;
	kfd_ioctl(ctx->kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq);

	queue_args_init(&q, g->id, &qm, &rptr);
	q.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
	tap_errno(kfd_ioctl(ctx->kfd, CREATE_QUEUE_OLD, &q), 0,
		  "CREATE_QUEUE with the 1.16 argument size still works (6.12 dispatcher)");
	dq.queue_id = q.queue_id;
	kfd_ioctl(ctx->kfd, AMDKFD_IOC_DESTROY_QUEUE, &dq);
}
#endif

void test_newer_kfd(struct ctx *ctx)
{
	version(ctx);
#if KFD_IOCTL_MINOR_VERSION < 12
	later_numbers_unknown(ctx);
#else
	export(ctx);
#endif
#if KFD_IOCTL_MINOR_VERSION >= 13
	runtime(ctx);
	queue_exception(ctx);
	event_age(ctx);
	alloc_flags(ctx);
#endif
#if KFD_IOCTL_MINOR_VERSION >= 17
	sdma_by_engine(ctx);
#endif
}
