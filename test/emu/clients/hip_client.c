// SPDX-License-Identifier: GPL-2.0-only
/*
 * hip_client: HIP's host API (libamdhip64 5.2.3, unmodified) on the emulated
 * GPUs, as a TAP stream.
 *
 * Device enumeration and properties (the preset's real compute unit count,
 * memory and clock), hipMalloc and hipMemGetInfo on every device.  Then a
 * hipMemcpy host->device->host in a child process, which must bring every
 * byte back however HIP moves it:
 *
 *  - HIP 6.x moves it on the SDMA engines (after loading its code objects,
 *    which invalidates the GPU's caches with a PM4 packet);
 *  - HIP 5.2 starts the first work on a device's queue -- a hipMemcpy, even
 *    hipFree's device synchronisation -- with a blit kernel that its comgr
 *    compiles at run time;
 *  - HIP 7.2 gives each stream one SDMA engine, chosen at its first copy:
 *    after a host->device copy that is engine 0, and on gfx90a ROCr refuses
 *    any other direction there (HSA_STATUS_ERROR_INVALID_ARGUMENT: only
 *    host->device may use SDMA0), so HIP falls back to its copy kernel
 *    __amd_rocclr_copyBuffer for the device->host half, on a real MI210 too.
 *
 * Those kernels run on the emulated GPU's shader core.  If one uses an
 * instruction the core does not execute, the wave stops there, the queue
 * reports an illegal instruction and HIP ends the process (SIGABRT): that is
 * a skip naming the kernel (HIP's log names each kernel it dispatches: the
 * child runs with AMD_LOG_LEVEL=3 and AMD_LOG_MASK's kernel bit) and the
 * emulator's kernel log line of where it stopped.  Anything else -- a hang, a
 * wrong byte, another error -- fails.  After 7.2's skip a second child shows
 * that a device->host copy that comes first, on an engine of its own, runs
 * on the SDMA engine.
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
	/*
	 * not freed: hipFree synchronises the device, and HIP 5.2 starts that with a kernel, which
	 * would end this process if the shader core stops it (the child checks that kernel)
	 */
}

/* What a child said, and what the kernel log says of its queues */
struct child {
	int status;		/* its wait status, or -1 */
	char out[256 << 10];	/* its output, up to this much */
	char own[2048];		/* its own lines and HIP's errors, one line */
	char kernels[512];	/* the kernels HIP dispatched, as HIP's log names them; "" if none */
	char klog[1024];	/* the emulator's kernel log lines meanwhile, one line */
};

static struct child child;

static void append(char *dst, size_t size, const char *sep, const char *s, size_t n)
{
	size_t len = strlen(dst);

	if (len && len + strlen(sep) < size) {
		strcpy(dst + len, sep);
		len += strlen(sep);
	}
	if (n > size - 1 - len)
		n = size - 1 - len;
	memcpy(dst + len, s, n);
	dst[len + n] = '\0';
}

/* Whether @name (@n bytes) is one of the entries of @list, separated by ", " */
static bool listed(const char *list, const char *name, size_t n)
{
	for (const char *at = list; (at = memmem(at, strlen(at), name, n)); at += n)
		if ((at == list || at[-1] == ' ') && (at[n] == ',' || at[n] == '\0'))
			return true;
	return false;
}

/*
 * Sorts the child's output: HIP's log lines begin with ':' (":level:file:line: ... ] message").
 * Of those at level 3 only the names after "ShaderName : " are kept (AMD_LOG_MASK's kernel
 * bit: one line per dispatch); the messages at levels 0 and 1 (its queue error, its errors)
 * are kept with the child's own lines.
 */
static void sort_output(struct child *c)
{
	const char *tag = "ShaderName : ";

	c->own[0] = c->kernels[0] = '\0';
	for (char *line = c->out, *end; *line; line = *end ? end + 1 : end) {
		const char *name = strstr(line, tag);
		size_t n;

		end = strchrnul(line, '\n');
		if (name && name < end) {
			name += strlen(tag);
			n = strcspn(name, " \n");
			/* each kernel once */
			if (!listed(c->kernels, name, n))
				append(c->kernels, sizeof(c->kernels), ", ", name, n);
		} else if (line[0] != ':' || !strncmp(line, ":0:", 3) || !strncmp(line, ":1:", 3)) {
			const char *msg = line[0] == ':' ? strstr(line, "] ") : NULL;

			msg = msg && msg < end ? msg + 2 : line;
			append(c->own, sizeof(c->own), "; ", msg, end - msg);
		}
	}
}

/* The emulator's lines in the kernel log from @kmsg (an fd on /dev/kmsg) on, into c->klog */
static void read_klog(struct child *c, int kmsg)
{
	char rec[2048];
	ssize_t n;

	c->klog[0] = '\0';
	if (kmsg < 0) {
		snprintf(c->klog, sizeof(c->klog), "(kernel log not readable: %s)", strerror(-kmsg));
		return;
	}
	/* one record per read; EPIPE: records were overwritten meanwhile, the next read goes on */
	while ((n = read(kmsg, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		char *msg, *end;

		if (n <= 0)
			continue;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? strstr(msg, "amdgpu_emu: ") : NULL;
		if (!msg)
			continue;
		end = strchrnul(msg, '\n');
		append(c->klog, sizeof(c->klog), "; ", msg, end - msg);
	}
	close(kmsg);
}

/*
 * Runs this program again with one argument, in a fresh process (the runtime's
 * state does not survive fork()), with HIP's error lines and a line naming
 * each kernel it dispatches.  Fills child; its wait status is in child.status.
 */
static void run_child(const char *arg)
{
	struct child *c = &child;
	int pipefd[2], kmsg;
	ssize_t n = 0, got = 0;
	char drain[4096];
	pid_t pid;

	c->status = -1;
	c->out[0] = '\0';
	/* from the end of the kernel log: what the emulator logs while the child runs */
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg < 0) {
		kmsg = -errno;
	} else if (lseek(kmsg, 0, SEEK_END) < 0) {
		n = -errno;
		close(kmsg);
		kmsg = (int)n;
	}
	if (pipe(pipefd)) {
		snprintf(c->out, sizeof(c->out), "pipe: %s", strerror(errno));
		sort_output(c);
		return;
	}
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		dup2(pipefd[1], STDOUT_FILENO);
		setenv("AMD_LOG_LEVEL", "3", 1);
		setenv("AMD_LOG_MASK", "0x80", 1);
		execl("/proc/self/exe", "hip_client", arg, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while (got < (ssize_t)sizeof(c->out) - 1 && (n = read(pipefd[0], c->out + got, sizeof(c->out) - 1 - got)) > 0)
		got += n;
	c->out[got] = '\0';
	/* the rest is dropped, but read: the child must never block on a full pipe */
	while (read(pipefd[0], drain, sizeof(drain)) > 0)
		;
	close(pipefd[0]);
	if (pid < 0 || waitpid(pid, &c->status, 0) < 0)
		c->status = -1;
	sort_output(c);
	read_klog(c, kmsg);
}

static bool exited_ok(int status)
{
	return status >= 0 && WIFEXITED(status) && !WEXITSTATUS(status);
}

static const char *how_it_ended(int status, char *buf, size_t size)
{
	if (status < 0)
		snprintf(buf, size, "not run");
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "exit %d", WEXITSTATUS(status));
	return buf;
}

/*
 * The child died of HIP's queue error for an illegal instruction (HIP aborts on any queue
 * error), and the emulator logged the queue error 0x40000000: in a kernel HIP named, a wave met
 * an instruction the shader core does not execute; or HIP's kernel was for a GPU whose code the
 * shader core does not execute at all (the gfx942 of cpx8), which the emulator's log says,
 * before HIP names any kernel.
 */
static bool ended_illegal(const struct child *c)
{
	return c->status >= 0 && WIFSIGNALED(c->status) && WTERMSIG(c->status) == SIGABRT &&
	       strstr(c->out, "ILLEGAL_INSTRUCTION") && strstr(c->klog, "queue error 0x40000000") &&
	       (c->kernels[0] || strstr(c->klog, "the shader core executes gfx908 and gfx90a code, not this GPU's"));
}

/*
 * In a child: a hipMemcpy host->device->host, which must bring every byte back
 * however HIP moves it: on the SDMA engines (HIP 6.x), or with a kernel of its
 * own (HIP 5.2 starts a device's first work with one; HIP 7.2 falls back to
 * its copy kernel for the device->host half, see the top of the file), which
 * then ran on the shader core.  The one other outcome accepted is that such a
 * kernel stops at an instruction the shader core does not execute: a skip that
 * names the kernel and the emulator's log of where it stopped.
 */
static void check_needs_shaders(void)
{
	struct child *c = &child;
	char how[32];

	begin("hipMemcpy in a child");
	run_child("--memcpy");
	if (exited_ok(c->status) && strstr(c->own, "every byte back")) {
		ok(1, "hipMemcpy host->device->host: every byte back (kernels HIP dispatched: %s)",
		   c->kernels[0] ? c->kernels : "none, the copy engines moved it");
		return;
	}
	if (!ended_illegal(c)) {
		ok(0, "hipMemcpy host->device->host: every byte back, or one of HIP's kernels stops at an instruction the shader core does not execute (%s: %s; kernels: %s; kernel log: %s)",
		   how_it_ended(c->status, how, sizeof(how)), c->own, c->kernels[0] ? c->kernels : "none", c->klog);
		return;
	}
	if (!strstr(c->own, "falling to Blit copy") ||
	    !listed(c->kernels, "__amd_rocclr_copyBuffer", strlen("__amd_rocclr_copyBuffer"))) {
		ok(1, "hipMemcpy # SKIP HIP started it with its kernel %s, which stopped at an instruction the shader core does not execute (%s; kernel log: %s)",
		   c->kernels[0] ? c->kernels : "(unnamed)", c->own, c->klog);
		return;
	}
	ok(strstr(c->own, "hipMemcpy: no error") != NULL, "hipMemcpy host->device returns no error (%s)", c->own);
	ok(1, "hipMemcpy device->host # SKIP ROCr refused HIP's SDMA copy on its stream's engine; HIP fell back to its copy kernel (%s), which stopped at an instruction the shader core does not execute (kernel log: %s)",
	   c->kernels, c->klog);
	begin("hipMemcpy device->host first, in a child");
	run_child("--readback");
	ok(exited_ok(c->status) && strstr(c->own, "every byte"),
	   "hipMemcpy device->host as a stream's first copy runs on the copy engines (%s: %s)",
	   how_it_ended(c->status, how, sizeof(how)), c->own);
}

/* The --memcpy child: host->device->host; every byte must come back. */
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
