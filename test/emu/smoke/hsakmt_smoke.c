// SPDX-License-Identifier: GPL-2.0
/*
 * hsakmt_smoke: the real ROCm thunk (libhsakmt) against the emulator.
 *
 * Opens KFD, takes a topology snapshot and checks that every GPU node is
 * seen by the thunk as a gfx9 dGPU with its render node; then, on the first
 * GPU, goes through the thunk's own paths for VRAM with and without host
 * access, paged system memory (userptr), events and an AQL queue (EOP in
 * VRAM, CWSR area as userptr, doorbells), checking that the queue's read
 * pointer beats.  Exit status 0 on success.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <hsakmt.h>

#define SMOKE_SIZE	(64 << 10)

static int fail(const char *what, HSAKMT_STATUS st)
{
	fprintf(stderr, "hsakmt_smoke: %s failed: status %d\n", what, st);
	return 1;
}

static int check_memory(unsigned int node)
{
	HsaMemFlags flags;
	HSAuint64 gpuva;
	HSAKMT_STATUS st;
	void *vram = NULL, *hidden = NULL, *sys = NULL;
	unsigned int i;

	/* VRAM the host can see: a shared render-node mapping */
	memset(&flags, 0, sizeof(flags));
	flags.ui32.NonPaged = 1;
	flags.ui32.HostAccess = 1;
	flags.ui32.NoSubstitute = 1;
	st = hsaKmtAllocMemory(node, SMOKE_SIZE, flags, &vram);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("VRAM hsaKmtAllocMemory", st);
	for (i = 0; i < SMOKE_SIZE; i++)
		if (((unsigned char *)vram)[i])
			return fail("VRAM is cleared on allocation", 0);
	memset(vram, 0x5a, SMOKE_SIZE);
	st = hsaKmtMapMemoryToGPU(vram, SMOKE_SIZE, &gpuva);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("VRAM hsaKmtMapMemoryToGPU", st);
	st = hsaKmtUnmapMemoryToGPU(vram);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("VRAM hsaKmtUnmapMemoryToGPU", st);

	/* VRAM without host access: a PROT_NONE private render-node mapping */
	flags.ui32.HostAccess = 0;
	st = hsaKmtAllocMemory(node, SMOKE_SIZE, flags, &hidden);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hidden VRAM hsaKmtAllocMemory", st);

	/* paged system memory: a userptr BO */
	memset(&flags, 0, sizeof(flags));
	flags.ui32.HostAccess = 1;
	st = hsaKmtAllocMemory(0, SMOKE_SIZE, flags, &sys);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("system hsaKmtAllocMemory", st);
	st = hsaKmtMapMemoryToGPU(sys, SMOKE_SIZE, &gpuva);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("system hsaKmtMapMemoryToGPU", st);
	hsaKmtUnmapMemoryToGPU(sys);

	if (hsaKmtFreeMemory(sys, SMOKE_SIZE) || hsaKmtFreeMemory(hidden, SMOKE_SIZE) ||
	    hsaKmtFreeMemory(vram, SMOKE_SIZE))
		return fail("hsaKmtFreeMemory", 1);
	printf("memory: VRAM, hidden VRAM, userptr OK\n");
	return 0;
}

static int check_events(unsigned int node)
{
	HsaEventDescriptor desc = { .EventType = HSA_EVENTTYPE_SIGNAL, .NodeId = node };
	HsaEvent *ev;
	HSAKMT_STATUS st;

	st = hsaKmtCreateEvent(&desc, false, false, &ev);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtCreateEvent", st);
	st = hsaKmtWaitOnEvent(ev, 10);
	if (st != HSAKMT_STATUS_WAIT_TIMEOUT)
		return fail("hsaKmtWaitOnEvent on an unsignaled event times out", st);
	st = hsaKmtSetEvent(ev);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtSetEvent", st);
	st = hsaKmtWaitOnEvent(ev, 1000);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtWaitOnEvent on a signaled event", st);
	st = hsaKmtDestroyEvent(ev);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtDestroyEvent", st);
	printf("events: wait, set, auto-reset OK\n");
	return 0;
}

static int check_queue(unsigned int node)
{
	static volatile uint64_t rptr, wptr;
	HsaQueueResource res;
	HsaMemFlags flags;
	HSAKMT_STATUS st;
	void *ring = NULL;
	uint64_t before;

	memset(&flags, 0, sizeof(flags));
	flags.ui32.HostAccess = 1;
	flags.ui32.ExecuteAccess = 1;
	st = hsaKmtAllocMemory(0, SMOKE_SIZE, flags, &ring);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("ring hsaKmtAllocMemory", st);
	st = hsaKmtMapMemoryToGPU(ring, SMOKE_SIZE, NULL);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("ring hsaKmtMapMemoryToGPU", st);

	memset(&res, 0, sizeof(res));
	res.Queue_read_ptr_aql = (HSAuint64 *)&rptr;
	res.Queue_write_ptr_aql = (HSAuint64 *)&wptr;
	st = hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL,
			       ring, SMOKE_SIZE, NULL, &res);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtCreateQueue", st);
	*res.Queue_DoorBell_aql = 0;	/* the doorbell page is mapped */

	/* the emulator's heartbeat stands in for a running queue */
	before = rptr;
	usleep(300000);
	if (rptr == before)
		return fail("the queue's read pointer beats", 0);

	st = hsaKmtDestroyQueue(res.QueueId);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtDestroyQueue", st);
	hsaKmtUnmapMemoryToGPU(ring);
	hsaKmtFreeMemory(ring, SMOKE_SIZE);
	printf("queue: AQL queue %llu created, beat %llu times in 300 ms, destroyed OK\n",
	       (unsigned long long)res.QueueId, (unsigned long long)(rptr - before));
	return 0;
}

int main(void)
{
	unsigned int first_gpu = 0;
	HsaSystemProperties sp;
	HsaVersionInfo ver;
	HSAKMT_STATUS st;
	unsigned int i, gpus = 0;

	st = hsaKmtOpenKFD();
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtOpenKFD", st);
	st = hsaKmtGetVersion(&ver);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtGetVersion", st);
	printf("KFD ioctl %u.%u\n", ver.KernelInterfaceMajorVersion,
	       ver.KernelInterfaceMinorVersion);

	memset(&sp, 0, sizeof(sp));
	st = hsaKmtAcquireSystemProperties(&sp);
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtAcquireSystemProperties", st);

	for (i = 0; i < sp.NumNodes; i++) {
		HsaNodeProperties np;

		st = hsaKmtGetNodeProperties(i, &np);
		if (st != HSAKMT_STATUS_SUCCESS)
			return fail("hsaKmtGetNodeProperties", st);
		printf("node %u: cpu cores %u simds %u device 0x%x gfx %u.%u.%u mem banks %u caches %u io links %u renderD%d\n",
		       i, np.NumCPUCores, np.NumFComputeCores, np.DeviceId,
		       np.EngineId.ui32.Major, np.EngineId.ui32.Minor,
		       np.EngineId.ui32.Stepping, np.NumMemoryBanks, np.NumCaches,
		       np.NumIOLinks, np.DrmRenderMinor);
		if (!np.NumFComputeCores)
			continue;
		if (!gpus++)
			first_gpu = i;
		if (np.EngineId.ui32.Major != 9 || np.DrmRenderMinor < 128) {
			fprintf(stderr, "hsakmt_smoke: node %u is not a usable gfx9 GPU\n", i);
			return 1;
		}
	}
	if (!gpus) {
		fprintf(stderr, "hsakmt_smoke: the thunk sees no GPU\n");
		return 1;
	}

	if (check_memory(first_gpu) || check_events(first_gpu) || check_queue(first_gpu))
		return 1;

	st = hsaKmtReleaseSystemProperties();
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtReleaseSystemProperties", st);
	st = hsaKmtCloseKFD();
	if (st != HSAKMT_STATUS_SUCCESS)
		return fail("hsaKmtCloseKFD", st);
	printf("hsakmt_smoke: %u GPU(s) OK\n", gpus);
	return 0;
}
