// SPDX-License-Identifier: GPL-2.0
/*
 * hsakmt_client: the real ROCm thunk (libhsakmt 5.2.3) against the emulator.
 *
 * Opens KFD (which now also initialises libdrm_amdgpu on every render node:
 * its log must stay free of errors), takes the topology snapshot and checks
 * every GPU node is a gfx9 dGPU with a render node; then on every GPU: VRAM
 * with and without host access, mapped to the GPU; an AQL queue whose read
 * pointer the emulator's heartbeat moves; a signal event that times out,
 * is set and is waited for.  GTT (non-paged system memory) and paged system
 * memory are mapped to all GPUs.  Everything is freed and KFD closed, every
 * call returning success.
 *
 * TAP on stdout; exit 0 iff all passed, 77 with "1..0 # SKIP" without KFD.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* libhsakmt 6.x names KFD debugger structures in its prototypes without declaring them */
#include <linux/kfd_ioctl.h>
#include <hsakmt.h>

#include "client_tap.h"

#define SIZE		(256 << 10)
#define MAX_NODES	64


static bool st_ok(HSAKMT_STATUS st, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return ok(st == HSAKMT_STATUS_SUCCESS, "%s (status %d)", buf, st);
}

static bool all_zero(const void *p, size_t n)
{
	const uint64_t *q = p;
	size_t i;

	for (i = 0; i < n / 8; i++)
		if (q[i])
			return false;
	return true;
}

static void check_vram(unsigned int node)
{
	HsaMemFlags flags = {};
	HSAuint64 gpuva = 0;
	void *vram = NULL, *hidden = NULL;
	HSAKMT_STATUS st;

	flags.ui32.NonPaged = 1;
	flags.ui32.HostAccess = 1;
	flags.ui32.NoSubstitute = 1;
	st = hsaKmtAllocMemory(node, SIZE, flags, &vram);
	if (st_ok(st, "node %u: VRAM with host access", node)) {
		ok(all_zero(vram, SIZE), "node %u: VRAM is cleared on allocation", node);
		memset(vram, 0x5a, SIZE);
		st_ok(hsaKmtMapMemoryToGPU(vram, SIZE, &gpuva), "node %u: VRAM mapped to the GPU",
		      node);
		st_ok(hsaKmtUnmapMemoryToGPU(vram), "node %u: VRAM unmapped", node);
		st_ok(hsaKmtFreeMemory(vram, SIZE), "node %u: VRAM freed", node);
	}

	flags.ui32.HostAccess = 0;
	st = hsaKmtAllocMemory(node, SIZE, flags, &hidden);
	if (st_ok(st, "node %u: VRAM without host access (PROT_NONE private mapping)", node)) {
		st_ok(hsaKmtMapMemoryToGPU(hidden, SIZE, &gpuva),
		      "node %u: hidden VRAM mapped to the GPU", node);
		st_ok(hsaKmtUnmapMemoryToGPU(hidden), "node %u: hidden VRAM unmapped", node);
		st_ok(hsaKmtFreeMemory(hidden, SIZE), "node %u: hidden VRAM freed", node);
	}
}

/* GTT and paged system memory, mapped to every GPU at once. */
static void check_system(const unsigned int *gpu_nodes, unsigned int n)
{
	HsaMemFlags flags = {};
	HSAuint64 gpuva;
	HSAuint32 nodes[MAX_NODES];
	HsaMemMapFlags mflags = {};
	void *gtt = NULL, *paged = NULL;
	unsigned int i;

	for (i = 0; i < n; i++)
		nodes[i] = gpu_nodes[i];
	flags.ui32.NonPaged = 1;
	flags.ui32.HostAccess = 1;
	if (st_ok(hsaKmtAllocMemory(0, SIZE, flags, &gtt), "GTT (non-paged system memory)")) {
		memset(gtt, 0xa5, SIZE);
		st_ok(hsaKmtMapMemoryToGPUNodes(gtt, SIZE, &gpuva, mflags, n, nodes),
		      "GTT mapped to all %u GPUs", n);
		st_ok(hsaKmtUnmapMemoryToGPU(gtt), "GTT unmapped");
		st_ok(hsaKmtFreeMemory(gtt, SIZE), "GTT freed");
	}

	memset(&flags, 0, sizeof(flags));
	flags.ui32.HostAccess = 1;
	if (st_ok(hsaKmtAllocMemory(0, SIZE, flags, &paged), "paged system memory (userptr)")) {
		memset(paged, 0x3c, SIZE);
		st_ok(hsaKmtMapMemoryToGPUNodes(paged, SIZE, &gpuva, mflags, n, nodes),
		      "paged memory mapped to all %u GPUs", n);
		st_ok(hsaKmtUnmapMemoryToGPU(paged), "paged memory unmapped");
		st_ok(hsaKmtFreeMemory(paged, SIZE), "paged memory freed");
	}
}

static void check_events(unsigned int node)
{
	HsaEventDescriptor desc = { .EventType = HSA_EVENTTYPE_SIGNAL, .NodeId = node };
	HsaEvent *ev = NULL;
	HSAKMT_STATUS st;

	if (!st_ok(hsaKmtCreateEvent(&desc, false, false, &ev), "node %u: signal event created",
		   node))
		return;
	st = hsaKmtWaitOnEvent(ev, 10);
	ok(st == HSAKMT_STATUS_WAIT_TIMEOUT, "node %u: waiting on it times out (status %d)",
	   node, st);
	st_ok(hsaKmtSetEvent(ev), "node %u: event set", node);
	st_ok(hsaKmtWaitOnEvent(ev, 1000), "node %u: the wait sees it", node);
	st = hsaKmtWaitOnEvent(ev, 10);
	ok(st == HSAKMT_STATUS_WAIT_TIMEOUT, "node %u: auto-reset: the next wait times out (%d)",
	   node, st);
	st_ok(hsaKmtDestroyEvent(ev), "node %u: event destroyed", node);
}

static void check_queue(unsigned int node)
{
	static volatile uint64_t rptr, wptr;
	HsaQueueResource res = {};
	HsaMemFlags flags = {};
	void *ring = NULL;
	uint64_t before;

	flags.ui32.HostAccess = 1;
	flags.ui32.ExecuteAccess = 1;
	if (!st_ok(hsaKmtAllocMemory(0, SIZE, flags, &ring), "node %u: ring buffer", node))
		return;
	st_ok(hsaKmtMapMemoryToGPU(ring, SIZE, NULL), "node %u: ring mapped", node);
	rptr = wptr = 0;
	res.Queue_read_ptr_aql = (HSAuint64 *)&rptr;
	res.Queue_write_ptr_aql = (HSAuint64 *)&wptr;
	if (st_ok(hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL,
				    ring, SIZE, NULL, &res),
		  "node %u: AQL queue created (EOP in hidden VRAM, CWSR area as userptr)", node)) {
		*res.Queue_DoorBell_aql = 0;	/* the doorbell page is mapped */
		before = rptr;
		usleep(200000);
		ok(rptr != before, "node %u: the queue's read pointer beats (%llu times in 200 ms)",
		   node, (unsigned long long)(rptr - before));
		st_ok(hsaKmtDestroyQueue(res.QueueId), "node %u: queue destroyed", node);
	}
	st_ok(hsaKmtUnmapMemoryToGPU(ring), "node %u: ring unmapped", node);
	st_ok(hsaKmtFreeMemory(ring, SIZE), "node %u: ring freed", node);
}

/* Runs hsaKmtOpenKFD with the thunk's error log on, into @log. */
static HSAKMT_STATUS open_kfd_logged(char *log, size_t size)
{
	char tmpl[] = "/tmp/hsakmt_client.XXXXXX";
	HSAKMT_STATUS st;
	int fd, saved;
	ssize_t n;

	log[0] = 0;
	setenv("HSAKMT_DEBUG_LEVEL", "3", 1);	/* errors */
	fd = mkstemp(tmpl);
	if (fd < 0)
		return hsaKmtOpenKFD();
	unlink(tmpl);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	st = hsaKmtOpenKFD();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, log, size - 1, 0);
	log[n > 0 ? n : 0] = 0;
	close(fd);
	return st;
}

int main(void)
{
	unsigned int gpu_nodes[MAX_NODES], n_gpus = 0, i;
	HsaSystemProperties sp = {};
	HsaVersionInfo ver;
	HSAKMT_STATUS st;
	char log[4096], *line;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (access("/dev/kfd", F_OK)) {
		printf("1..0 # SKIP no /dev/kfd\n");
		return 77;
	}
	st = open_kfd_logged(log, sizeof(log));
	if (!st_ok(st, "hsaKmtOpenKFD"))
		return tap_done();
	ok(!strstr(log, "amdgpu_device_initialize") && !strstr(log, "rror"),
	   "the thunk's open logs no error (libdrm_amdgpu initialises on every render node)");
	for (line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
		printf("# thunk: %s\n", line);
	st = hsaKmtGetVersion(&ver);
	ok(st == HSAKMT_STATUS_SUCCESS && ver.KernelInterfaceMajorVersion == 1,
	   "hsaKmtGetVersion: KFD ioctl %u.%u", ver.KernelInterfaceMajorVersion,
	   ver.KernelInterfaceMinorVersion);
	st = hsaKmtAcquireSystemProperties(&sp);
	st_ok(st, "hsaKmtAcquireSystemProperties: %u nodes", sp.NumNodes);

	for (i = 0; i < sp.NumNodes && i < MAX_NODES; i++) {
		HsaNodeProperties np;

		if (hsaKmtGetNodeProperties(i, &np) != HSAKMT_STATUS_SUCCESS) {
			ok(false, "hsaKmtGetNodeProperties(%u)", i);
			continue;
		}
		if (!np.NumFComputeCores)
			continue;
		gpu_nodes[n_gpus++] = i;
		ok(np.EngineId.ui32.Major == 9 && np.DrmRenderMinor >= 128,
		   "node %u: gfx%u.%u.%u, device 0x%x, renderD%d", i,
		   np.EngineId.ui32.Major, np.EngineId.ui32.Minor, np.EngineId.ui32.Stepping,
		   np.DeviceId, np.DrmRenderMinor);
	}
	ok(n_gpus > 0, "the thunk sees %u GPU(s)", n_gpus);

	for (i = 0; i < n_gpus; i++) {
		check_vram(gpu_nodes[i]);
		check_events(gpu_nodes[i]);
		check_queue(gpu_nodes[i]);
	}
	if (n_gpus)
		check_system(gpu_nodes, n_gpus);

	st_ok(hsaKmtReleaseSystemProperties(), "hsaKmtReleaseSystemProperties");
	st_ok(hsaKmtCloseKFD(), "hsaKmtCloseKFD");
	return tap_done();
}
