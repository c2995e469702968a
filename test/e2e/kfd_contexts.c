// SPDX-License-Identifier: GPL-2.0-only
/*
 * kfd_contexts: a process with a secondary KFD context (KFD 1.19, Linux 7.x), for the e2e
 * scenario that dumps one.
 *
 * It opens /dev/kfd twice and turns the second file into a secondary context with
 * AMDKFD_IOC_CREATE_PROCESS, prints "READY <pid>" and waits. On SIGUSR1 it asks each context for
 * its apertures (an ioctl every context answers) and writes "CONTEXTS OK <n> <n>" (the GPUs each
 * sees) or "CONTEXTS FAILED ..." to <state>.verify.
 *
 * Exit status 77: the kernel has no CREATE_PROCESS (before 1.19 the ioctl number is unknown).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kfd_ioctl.h>

/* The uapi number, for a linux-libc-dev older than the kernel (trixie's is 6.12's). */
#ifndef AMDKFD_IOC_CREATE_PROCESS
#define AMDKFD_IOC_CREATE_PROCESS AMDKFD_IO(0x27)
#endif

#define EXIT_UNSUPPORTED 77

static volatile sig_atomic_t verify_asked;

static void on_usr1(int sig)
{
	(void)sig;
	verify_asked = 1;
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do
		r = ioctl(fd, req, arg);
	while (r == -1 && errno == EINTR);
	return r == -1 ? -errno : 0;
}

/* The number of GPUs the context of @kfd has, or -errno. */
static int context_gpus(int kfd)
{
	struct kfd_ioctl_get_process_apertures_new_args a;
	int r;

	memset(&a, 0, sizeof(a)); /* num_of_nodes 0: only the count */
	r = xioctl(kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a);
	return r ? r : (int)a.num_of_nodes;
}

static void answer(const char *state, int primary, int secondary)
{
	char path[4096], tmp[4112];
	int p = context_gpus(primary), s = context_gpus(secondary);
	FILE *f;

	snprintf(path, sizeof(path), "%s.verify", state);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	if (p > 0 && s > 0)
		fprintf(f, "CONTEXTS OK %d %d\n", p, s);
	else
		fprintf(f, "CONTEXTS FAILED primary %d secondary %d\n", p, s);
	if (fclose(f) == 0)
		rename(tmp, path);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	int primary, secondary, r;
	sigset_t block, old;

	if (argc != 3 || strcmp(argv[1], "--state")) {
		fprintf(stderr, "usage: %s --state FILE\n", argv[0]);
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);

	primary = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	secondary = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (primary < 0 || secondary < 0) {
		fprintf(stderr, "kfd_contexts: cannot open /dev/kfd: %s\n", strerror(errno));
		return 1;
	}
	r = xioctl(secondary, AMDKFD_IOC_CREATE_PROCESS, NULL);
	if (r) {
		fprintf(stderr, "kfd_contexts: CREATE_PROCESS: %s\n", strerror(-r));
		return r == -EINVAL || r == -ENOTTY ? EXIT_UNSUPPORTED : 1;
	}
	printf("READY %d\n", (int)getpid());
	fflush(stdout);

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	for (;;) {
		sigprocmask(SIG_BLOCK, &block, &old);
		while (!verify_asked)
			sigsuspend(&old);
		verify_asked = 0;
		sigprocmask(SIG_SETMASK, &old, NULL);
		answer(argv[2], primary, secondary);
	}
}
