// SPDX-License-Identifier: GPL-2.0-only
/*
 * hip_client: HIP's host API (libamdhip64 5.2.3, unmodified) on the emulated
 * GPUs, as a TAP stream.
 *
 * What runs without a shader: device enumeration and properties (the
 * preset's real compute unit count, memory and clock), hipMalloc and
 * hipMemGetInfo on every device.  What does not: HIP 5.2 starts the first work
 * on a device's queue -- a hipMemcpy, even hipFree's device synchronisation --
 * with a kernel dispatch of its own.  The emulated GPU reports that dispatch as an
 * illegal instruction and HIP ends the process with its queue error message
 * (SIGABRT).  A child process checks exactly that: it must end that way within
 * a minute, never hang and never "succeed" -- unless its copy really ran: HIP
 * 6.x moves a host->device->host hipMemcpy on the SDMA engines (after loading
 * its code objects, which invalidates the GPU's caches with a PM4 packet), and
 * then every byte must come back.
 *
 * Every step runs under an alarm: a call that never returns fails the step it
 * was in with a message, instead of hanging the suite.
 *
 *   hip_client [--cus N]
 *   hip_client --memcpy      (the child: one hipMemcpy)
 */
#include <hip/hip_runtime_api.h>

#include "client_tap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEP_SECONDS 60
#define BYTES (4u << 20)

static const char *volatile step = "start";

static void on_alarm(int sig)
{
	char line[256];
	int n;

	(void)sig;
	n = snprintf(line, sizeof(line), "not ok %u - %s: did not return within %d s\n1..%u\n", tap_n + 1, step,
		     STEP_SECONDS, tap_n + 1);
	if (write(STDOUT_FILENO, line, (size_t)n) < 0)
		_exit(3);
	_exit(2);
}

static void begin(const char *what)
{
	step = what;
	alarm(STEP_SECONDS);
}

static void check_device(int dev, int cus)
{
	size_t free_bytes = 0, total = 0;
	hipDeviceProp_t prop;
	void *mem = NULL;
	hipError_t e;

	begin("hipSetDevice / hipGetDeviceProperties");
	e = hipSetDevice(dev);
	if (e == hipSuccess)
		e = hipGetDeviceProperties(&prop, dev);
	ok(e == hipSuccess && (!cus || prop.multiProcessorCount == cus),
	   "device %d: %s, %d compute units%s, %zu MiB, %d kHz: %s", dev, e == hipSuccess ? prop.gcnArchName : "?",
	   e == hipSuccess ? prop.multiProcessorCount : 0, cus ? " (the model's)" : "",
	   e == hipSuccess ? prop.totalGlobalMem >> 20 : 0, e == hipSuccess ? prop.clockRate : 0, hipGetErrorString(e));
	if (e != hipSuccess)
		return;

	begin("hipMalloc / hipMemGetInfo");
	e = hipMalloc(&mem, BYTES);
	if (e == hipSuccess)
		e = hipMemGetInfo(&free_bytes, &total);
	ok(e == hipSuccess && total == prop.totalGlobalMem && free_bytes <= total - BYTES,
	   "device %d: hipMalloc of %u KiB is accounted (%zu of %zu MiB free): %s", dev, BYTES >> 10, free_bytes >> 20,
	   total >> 20, hipGetErrorString(e));
	/* not freed: hipFree synchronises the device, and that too starts with a kernel dispatch */
}

/*
 * In a child: a hipMemcpy.  Where HIP starts it with a kernel dispatch (5.2),
 * that must end the child with HIP's queue error; where the copy engines move
 * it (6.x), every byte must come back.
 */
static void check_needs_shaders(void)
{
	char out[4096] = "";
	int pipefd[2], status = 0;
	ssize_t n, got = 0;
	pid_t child;

	begin("hipMemcpy in a child");
	if (pipe(pipefd)) {
		ok(0, "a pipe for the child: %s", strerror(errno));
		return;
	}
	/* a fresh process: the runtime's state does not survive fork() */
	child = fork();
	if (child == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		dup2(pipefd[1], STDOUT_FILENO);
		execl("/proc/self/exe", "hip_client", "--memcpy", (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while (got < (ssize_t)sizeof(out) - 1 && (n = read(pipefd[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += n;
	close(pipefd[0]);
	waitpid(child, &status, 0);
	for (char *p = out; *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (WIFEXITED(status) && !WEXITSTATUS(status) && strstr(out, "every byte back")) {
		ok(1, "hipMemcpy host->device->host runs on the copy engines: every byte back (%s)", out);
		return;
	}
	ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(out, "ILLEGAL_INSTRUCTION"),
	   "hipMemcpy starts with a kernel dispatch: the process ends with HIP's queue error, no hang (%s%d: %s)",
	   WIFSIGNALED(status) ? "signal " : "exit ", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), out);
}

/*
 * The child of check_needs_shaders(): host->device->host.  HIP 6.x moves such
 * copies on the SDMA engines, so on the emulated GPU they complete and every
 * byte must come back.
 */
static int memcpy_once(void)
{
	static unsigned char host[BYTES], back[BYTES];
	void *mem = NULL;
	size_t differ = 0;
	hipError_t e;

	for (size_t i = 0; i < BYTES; i++)
		host[i] = (unsigned char)(i * 131 + (i >> 12));
	e = hipMalloc(&mem, BYTES);
	if (e == hipSuccess)
		e = hipMemcpy(mem, host, BYTES, hipMemcpyHostToDevice);
	printf("hipMalloc, hipMemcpy: %s\n", hipGetErrorString(e));
	fflush(stdout);
	if (e != hipSuccess)
		return 1;
	e = hipMemcpy(back, mem, BYTES, hipMemcpyDeviceToHost);
	for (size_t i = 0; i < BYTES; i++)
		differ += host[i] != back[i];
	if (e != hipSuccess || differ) {
		printf("device->host: %s, %zu of %u bytes differ\n", hipGetErrorString(e), differ, BYTES);
		return 1;
	}
	printf("device->host: every byte back\n");
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0, cus = 0;
	hipError_t e;

	if (argc == 2 && !strcmp(argv[1], "--memcpy"))
		return memcpy_once();

	if (argc == 3 && !strcmp(argv[1], "--cus"))
		cus = atoi(argv[2]);
	signal(SIGALRM, on_alarm);
	begin("hipGetDeviceCount");
	e = hipGetDeviceCount(&count);
	ok(e == hipSuccess && count > 0, "hipGetDeviceCount: %d devices (%s)", count, hipGetErrorString(e));
	for (int dev = 0; dev < count; dev++)
		check_device(dev, cus);
	if (count > 0)
		check_needs_shaders();
	alarm(0);
	return tap_done();
}
