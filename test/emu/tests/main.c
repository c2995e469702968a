// SPDX-License-Identifier: GPL-2.0-only
/*
 * kfd_ioctl_test - checks the amdgpu/KFD emulator (test/emu) against the KFD
 * ioctl ABI of Linux 6.1 as described in Documentation/kfd-interface.md.
 * Runs as root in the guest, prints TAP, exits 0 iff every check passed
 * (77 if there is no /dev/kfd at all).
 */
#include "kfd_test.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TIMEOUT_S 600

static void on_alarm(int sig)
{
	static const char msg[] = "Bail out! kfd_ioctl_test timed out\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

int main(void)
{
	struct ctx ctx;
	int r;

	if (access("/dev/kfd", F_OK)) {
		printf("1..0 # SKIP no /dev/kfd\n");
		return 77;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	alarm(TIMEOUT_S);
	tap_init();

	r = ctx_init(&ctx);
	if (r < 0 || !ctx.n_gpus) {
		printf("Bail out! no usable emulated GPU (%s, %u GPU nodes)\n", strerror(-r),
		       ctx.n_gpus);
		return 1;
	}
	tap_diag("%u topology nodes, %u GPUs", ctx.n_nodes, ctx.n_gpus);
	for (unsigned int i = 0; i < ctx.n_gpus; i++)
		tap_diag("gpu 0x%04x: node %u, renderD%u, %llu MiB VRAM", ctx.gpu[i].id,
			 ctx.gpu[i].node, ctx.gpu[i].render_minor,
			 (unsigned long long)(ctx.gpu[i].vram_size >> 20));

	test_version_and_dispatch(&ctx);
	test_apertures(&ctx);
	test_before_acquire(&ctx);
	test_acquire_vm(&ctx);
	test_memory_policy(&ctx);
	test_xnack(&ctx);
	test_alloc(&ctx);
	test_mmap(&ctx);
	test_map_unmap(&ctx);
	test_free(&ctx);
	test_available_memory(&ctx);
	test_queues(&ctx);
	test_events(&ctx);
	test_misc(&ctx);
	test_non_owner(&ctx);
	test_newer_kfd(&ctx);
	test_criu(&ctx);
	test_sharing(&ctx);
	test_contexts(&ctx);
	test_kfd_procfs(&ctx);
	test_profiler(&ctx);
	test_fault_injection(&ctx);

	return tap_finish();
}
