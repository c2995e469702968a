// SPDX-License-Identifier: GPL-2.0-only
/*
 * The emulator's fault injection (test bed interface, not kernel ABI):
 * writing "ioctl <nr> <nth> <errno>" or "criu <op> <nth> <errno>" to
 * debugfs amdgpu_emu/fault makes the nth next such call fail with -errno;
 * "criu-stall <op> <nth> <ms>" makes that CRIU call wait first;
 * "clear" disarms.
 */
#include "kfd_test.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NR_ALLOC 22 /* AMDKFD_IOC_ALLOC_MEMORY_OF_GPU = 0x16 */

static int alloc_gtt(struct ctx *ctx, struct bo *b)
{
	return bo_alloc(ctx->kfd, b, ctx->gpu[0].id, va_alloc(ctx, PAGE_SZ), PAGE_SZ,
			ALLOC_GTT | ALLOC_WRITABLE, 0);
}

static void check_processes_file(void)
{
	char buf[512];
	int fd = open("/sys/kernel/debug/amdgpu_emu/processes", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (tap_ok(n > 0, "debugfs amdgpu_emu/processes is readable and not empty")) {
		buf[n] = '\0';
		*strchrnul(buf, '\n') = '\0';
		tap_diag("processes: %s", buf);
	}
}

void test_fault_injection(struct ctx *ctx)
{
	struct kfd_ioctl_criu_args a;
	struct bo b1, b2, b3;
	int r;

	if (!debugfs_ready()) {
		tap_skip("no debugfs amdgpu_emu/fault", "fault injection");
		return;
	}

	tap_errno(fault_arm("ioctl 22 1 12\n"), 0, "arm 'ioctl 22 1 12'");
	tap_errno(alloc_gtt(ctx, &b1), ENOMEM, "armed: the next ALLOC_MEMORY_OF_GPU fails with ENOMEM");
	r = alloc_gtt(ctx, &b1);
	if (tap_errno(r, 0, "the fault fires once: the ALLOC after it succeeds"))
		bo_free(ctx->kfd, b1.handle);

	tap_errno(fault_arm("ioctl 22 2 12\n"), 0, "arm 'ioctl 22 2 12'");
	r = alloc_gtt(ctx, &b1);
	tap_errno(r, 0, "nth = 2: the first ALLOC still succeeds");
	tap_errno(alloc_gtt(ctx, &b2), ENOMEM, "nth = 2: the second ALLOC fails with ENOMEM");
	tap_errno(alloc_gtt(ctx, &b3), 0, "nth = 2: the third ALLOC succeeds");
	bo_free(ctx->kfd, b1.handle);
	bo_free(ctx->kfd, b3.handle);

	fault_arm("ioctl 22 1 12\n");
	tap_errno(fault_arm("clear\n"), 0, "write 'clear'");
	r = alloc_gtt(ctx, &b1);
	if (tap_errno(r, 0, "after 'clear' an armed ALLOC fault no longer fires"))
		bo_free(ctx->kfd, b1.handle);

	/* CRIU ops by op number; the owner with CAP_SYS_ADMIN may call PROCESS_INFO. */
	tap_errno(fault_arm("criu 0 1 5\n"), 0, "arm 'criu 0 1 5'");
	memset(&a, 0, sizeof(a));
	tap_errno(criu_op(ctx->kfd, &a, KFD_CRIU_OP_PROCESS_INFO), EIO,
		  "armed: PROCESS_INFO fails with EIO");
	memset(&a, 0, sizeof(a));
	r = criu_op(ctx->kfd, &a, KFD_CRIU_OP_PROCESS_INFO);
	tap_errno(r, 0, "the next PROCESS_INFO succeeds");
	if (!r) {
		memset(&a, 0, sizeof(a));
		tap_errno(criu_op(ctx->kfd, &a, KFD_CRIU_OP_UNPAUSE), 0, "UNPAUSE after it");
	}

	/* A stall delays the call and then lets it do its work. */
	tap_errno(fault_arm("criu-stall 0 1 300\n"), 0, "arm 'criu-stall 0 1 300'");
	tap_errno(fault_arm("criu-stall 0 1 0\n"), EINVAL, "a stall of 0 ms is refused");
	memset(&a, 0, sizeof(a));
	{
		struct timespec t0, t1;
		double ms;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = criu_op(ctx->kfd, &a, KFD_CRIU_OP_PROCESS_INFO);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
		tap_errno(r, 0, "a stalled PROCESS_INFO succeeds");
		tap_ok(ms >= 290, "it returned after the stall (%.0f ms)", ms);
	}
	if (!r) {
		memset(&a, 0, sizeof(a));
		tap_errno(criu_op(ctx->kfd, &a, KFD_CRIU_OP_UNPAUSE), 0, "UNPAUSE after it, not stalled");
	}

	/* Faults and counts only for tasks of the given name (a sweep's criu, not its workload). */
	tap_errno(fault_arm("comm no-such-task\nioctl 22 1 12\n"), 0, "arm a fault for tasks named no-such-task");
	r = alloc_gtt(ctx, &b1);
	if (tap_errno(r, 0, "a task of another name is not hit"))
		bo_free(ctx->kfd, b1.handle);
	fault_arm("clear\n");
	{
		char buf[256] = "";
		int fd = open("/sys/kernel/debug/amdgpu_emu/calls", O_RDWR | O_CLOEXEC);
		ssize_t n = -1;
		bool counted;

		if (fd >= 0 && write(fd, "reset\n", 6) == 6) {
			r = alloc_gtt(ctx, &b1);
			if (!r)
				bo_free(ctx->kfd, b1.handle);
			n = pread(fd, buf, sizeof(buf) - 1, 0);
		}
		if (fd >= 0)
			close(fd);
		if (n > 0)
			buf[n] = '\0';
		counted = n > 0 && strstr(buf, "ioctl 22 1\n");
		tap_ok(counted, "debugfs calls counts the ALLOC since its reset ('%s')",
		       n > 0 ? strtok(buf, "\n") : "unreadable");
	}

	check_processes_file();
	fault_arm("clear\n");
}
