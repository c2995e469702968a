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
 * HIP 7.2 gives each stream one SDMA engine, chosen at its first copy: after a
 * host->device copy that is engine 0, and on gfx90a ROCr refuses any other
 * direction there (HSA_STATUS_ERROR_INVALID_ARGUMENT: only host->device may use
 * SDMA0), so HIP falls back to its copy kernel for the device->host half -- on
 * a real MI210 too, where that kernel runs.  Here it cannot: that half is a
 * skip naming the fallback, recognised by HIP's own error lines (the child
 * runs with AMD_LOG_LEVEL=1), and a second child shows that a device->host
 * copy that comes first, on an engine of its own, does run on the SDMA engine.
 *
 * Every step runs under an alarm: a call that never returns fails the step it
 * was in with a message, instead of hanging the suite.
 *
 *   hip_client [--cus N]
 *   hip_client --memcpy      (a child: host->device->host)
 *   hip_client --readback    (a child: device->host only)
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
 * Runs this program again with one argument, in a fresh process (the runtime's
 * state does not survive fork()), with HIP's error lines on.  Its output, one
 * line, goes into out; returns its wait status, or -1.
 */
static int run_child(const char *arg, char *out, size_t size)
{
	int pipefd[2], status = 0;
	ssize_t n, got = 0;
	pid_t child;

	out[0] = '\0';
	if (pipe(pipefd)) {
		snprintf(out, size, "pipe: %s", strerror(errno));
		return -1;
	}
	child = fork();
	if (child == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		dup2(pipefd[1], STDOUT_FILENO);
		setenv("AMD_LOG_LEVEL", "1", 0);
		execl("/proc/self/exe", "hip_client", arg, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while (got < (ssize_t)size - 1 && (n = read(pipefd[0], out + got, size - 1 - got)) > 0)
		got += n;
	out[got] = '\0';
	close(pipefd[0]);
	if (child < 0 || waitpid(child, &status, 0) < 0)
		return -1;
	for (char *p = out; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return status;
}

static bool exited_ok(int status)
{
	return status >= 0 && WIFEXITED(status) && !WEXITSTATUS(status);
}

/*
 * In a child: a hipMemcpy.  Where HIP starts it with a kernel dispatch (5.2),
 * that must end the child with HIP's queue error; where the copy engines move
 * it (6.x), every byte must come back; where HIP 7.2 falls back from the SDMA
 * engine to its copy kernel for the device->host half, that half is a skip.
 */
static void check_needs_shaders(void)
{
	char out[8192];
	int status;

	begin("hipMemcpy in a child");
	status = run_child("--memcpy", out, sizeof(out));
	if (exited_ok(status) && strstr(out, "every byte back")) {
		ok(1, "hipMemcpy host->device->host runs on the copy engines: every byte back (%s)", out);
		return;
	}
	if (strstr(out, "hipMemcpy: no error") && strstr(out, "falling to Blit copy") &&
	    strstr(out, "__amd_rocclr_copyBuffer") && strstr(out, "ILLEGAL_INSTRUCTION")) {
		ok(1, "hipMemcpy host->device returns no error");
		ok(1, "hipMemcpy device->host # SKIP HIP's SDMA copy on its stream's engine was refused "
		      "and it fell back to its copy kernel __amd_rocclr_copyBuffer: shaders are not emulated (%s)",
		   out);
		begin("hipMemcpy device->host first, in a child");
		status = run_child("--readback", out, sizeof(out));
		ok(exited_ok(status) && strstr(out, "every byte"),
		   "hipMemcpy device->host as a stream's first copy runs on the copy engines (%s%d: %s)",
		   status >= 0 && WIFSIGNALED(status) ? "signal " : "exit ",
		   status >= 0 && WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), out);
		return;
	}
	ok(status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(out, "ILLEGAL_INSTRUCTION"),
	   "hipMemcpy starts with a kernel dispatch: the process ends with HIP's queue error, no hang (%s%d: %s)",
	   status >= 0 && WIFSIGNALED(status) ? "signal " : "exit ",
	   status >= 0 && WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), out);
}

/*
 * The --memcpy child: host->device->host.  HIP 6.x moves such copies on the
 * SDMA engines, so on the emulated GPU they complete and every byte must come
 * back.
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

/*
 * The --readback child: device->host of a fresh allocation, the stream's first
 * copy.  The emulated GPU hands out zeroed memory, so every byte must be 0.
 */
static int readback_once(void)
{
	static unsigned char back[BYTES];
	void *mem = NULL;
	size_t nonzero = 0;
	hipError_t e;

	memset(back, 0xa5, sizeof(back));
	e = hipMalloc(&mem, BYTES);
	if (e == hipSuccess)
		e = hipMemcpy(back, mem, BYTES, hipMemcpyDeviceToHost);
	for (size_t i = 0; i < BYTES; i++)
		nonzero += back[i] != 0;
	if (e != hipSuccess || nonzero) {
		printf("hipMalloc, hipMemcpy device->host: %s, %zu of %u bytes not 0\n", hipGetErrorString(e),
		       nonzero, BYTES);
		return 1;
	}
	printf("hipMalloc, hipMemcpy device->host: every byte 0, as allocated\n");
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0, cus = 0;
	hipError_t e;

	if (argc == 2 && !strcmp(argv[1], "--memcpy"))
		return memcpy_once();
	if (argc == 2 && !strcmp(argv[1], "--readback"))
		return readback_once();

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
