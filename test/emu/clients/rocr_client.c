// SPDX-License-Identifier: GPL-2.0-only
/*
 * rocr_client: ROCm's runtime (libhsa-runtime64, unmodified) moving data
 * through the emulated GPUs' SDMA engines, as a TAP stream.
 *
 * For every GPU agent: a VRAM and a system buffer, then host->VRAM->host
 * copies with hsa_amd_memory_async_copy, each completing through an interrupt
 * signal waited on in blocked mode (the SDMA engine decrements the signal and
 * raises the KFD event behind it); a second copy that depends on the first's
 * signal (the engine polls it); every byte compared.  Every wait has a time
 * limit, so a queue that never runs fails with a message naming the copy,
 * never hangs.
 *
 *   rocr_client [--mib N]
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 8
#define WAIT_NS (20ull * 1000 * 1000 * 1000)

struct gpu {
	hsa_agent_t agent;
	hsa_amd_memory_pool_t vram;
	int has_vram;
	char name[64];
	uint32_t id; /* KFD topology node */
};

static struct gpu gpus[MAX_GPUS];
static int n_gpus;
static hsa_agent_t cpu;
static hsa_amd_memory_pool_t sys_pool;
static int has_cpu, has_sys;
static int n_test, n_failed;

static void ok(int good, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int good, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", good ? "ok" : "not ok", ++n_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!good)
		n_failed++;
}

static const char *status_text(hsa_status_t s)
{
	const char *text = NULL;

	if (hsa_status_string(s, &text) != HSA_STATUS_SUCCESS || !text)
		return "unknown status";
	return text;
}

static hsa_status_t vram_pool(hsa_amd_memory_pool_t pool, void *data)
{
	struct gpu *g = data;
	hsa_amd_segment_t seg;

	if (hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) == HSA_STATUS_SUCCESS &&
	    seg == HSA_AMD_SEGMENT_GLOBAL && !g->has_vram) {
		g->vram = pool;
		g->has_vram = 1;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t system_pool(hsa_amd_memory_pool_t pool, void *data)
{
	hsa_amd_segment_t seg;
	uint32_t flags = 0;

	(void)data;
	if (hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) != HSA_STATUS_SUCCESS ||
	    seg != HSA_AMD_SEGMENT_GLOBAL)
		return HSA_STATUS_SUCCESS;
	hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	if (!has_sys && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)) {
		sys_pool = pool;
		has_sys = 1;
	}
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t agent(hsa_agent_t a, void *data)
{
	hsa_device_type_t type;

	(void)data;
	if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS)
		return HSA_STATUS_SUCCESS;
	if (type == HSA_DEVICE_TYPE_CPU && !has_cpu) {
		cpu = a;
		has_cpu = 1;
	} else if (type == HSA_DEVICE_TYPE_GPU && n_gpus < MAX_GPUS) {
		struct gpu *g = &gpus[n_gpus++];

		g->agent = a;
		hsa_agent_get_info(a, HSA_AGENT_INFO_NAME, g->name);
		hsa_agent_get_info(a, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DRIVER_NODE_ID, &g->id);
		hsa_amd_agent_iterate_memory_pools(a, vram_pool, g);
	}
	return HSA_STATUS_SUCCESS;
}

/* Waits for @sig to drop below 1; 0 on time, else the value it is stuck at. */
static hsa_signal_value_t wait_done(hsa_signal_t sig)
{
	return hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_LT, 1, WAIT_NS, HSA_WAIT_STATE_BLOCKED);
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		p[i] = (uint8_t)(x >> 24);
	}
}

static void check_gpu(struct gpu *g, size_t bytes)
{
	hsa_agent_t both[2] = { g->agent, cpu };
	void *src = NULL, *vram = NULL, *back = NULL, *vram2 = NULL;
	hsa_signal_t first, second;
	hsa_signal_value_t v;
	hsa_status_t s;

	if (!g->has_vram) {
		ok(0, "GPU node %u (%s): has a VRAM pool", g->id, g->name);
		return;
	}
	s = hsa_amd_memory_pool_allocate(sys_pool, bytes, 0, &src);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_memory_pool_allocate(sys_pool, bytes, 0, &back);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_memory_pool_allocate(g->vram, bytes, 0, &vram);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa_amd_memory_pool_allocate(g->vram, bytes, 0, &vram2);
	ok(s == HSA_STATUS_SUCCESS, "GPU node %u: allocate %zu KiB of VRAM and system memory: %s", g->id,
	   bytes >> 10, status_text(s));
	if (s != HSA_STATUS_SUCCESS)
		return;
	hsa_amd_agents_allow_access(2, both, NULL, src);
	hsa_amd_agents_allow_access(2, both, NULL, back);
	fill(src, bytes, g->id);
	memset(back, 0, bytes);

	hsa_signal_create(1, 0, NULL, &first);
	hsa_signal_create(1, 0, NULL, &second);
	s = hsa_amd_memory_async_copy(vram, g->agent, src, cpu, bytes, 0, NULL, first);
	v = s == HSA_STATUS_SUCCESS ? wait_done(first) : 1;
	ok(s == HSA_STATUS_SUCCESS && v == 0,
	   "GPU node %u: host->VRAM copy completes, its interrupt signal wakes the waiter (%s, signal %" PRId64 ")",
	   g->id, status_text(s), (int64_t)v);

	/* VRAM->host, held back by a signal the SDMA engine polls until the host sets it */
	hsa_signal_store_screlease(first, 1);
	s = hsa_amd_memory_async_copy(back, cpu, vram, g->agent, bytes, 1, &first, second);
	v = hsa_signal_wait_scacquire(second, HSA_SIGNAL_CONDITION_LT, 1, 200ull * 1000 * 1000,
				      HSA_WAIT_STATE_BLOCKED);
	ok(s == HSA_STATUS_SUCCESS && v == 1, "GPU node %u: a copy waits for its dependency signal (%s, signal %" PRId64 ")",
	   g->id, status_text(s), (int64_t)v);
	hsa_signal_store_screlease(first, 0);
	v = wait_done(second);
	ok(v == 0, "GPU node %u: ... and runs once the dependency is met (signal %" PRId64 ")", g->id, (int64_t)v);
	ok(v == 0 && !memcmp(src, back, bytes), "GPU node %u: host->VRAM->host: every byte back", g->id);

	hsa_signal_destroy(first);
	hsa_signal_destroy(second);
	hsa_amd_memory_pool_free(src);
	hsa_amd_memory_pool_free(back);
	hsa_amd_memory_pool_free(vram);
	hsa_amd_memory_pool_free(vram2);
}

int main(int argc, char **argv)
{
	size_t mib = 4;
	hsa_status_t s;

	if (argc == 3 && !strcmp(argv[1], "--mib"))
		mib = strtoul(argv[2], NULL, 0);
	s = hsa_init();
	ok(s == HSA_STATUS_SUCCESS, "hsa_init: %s", status_text(s));
	if (s != HSA_STATUS_SUCCESS)
		goto out;
	hsa_iterate_agents(agent, NULL);
	if (has_cpu)
		hsa_amd_agent_iterate_memory_pools(cpu, system_pool, NULL);
	ok(n_gpus > 0 && has_cpu && has_sys, "agents: %d GPUs, a CPU with a fine-grained system pool", n_gpus);
	for (int i = 0; i < n_gpus && has_sys; i++)
		check_gpu(&gpus[i], mib << 20);
	s = hsa_shut_down();
	ok(s == HSA_STATUS_SUCCESS, "hsa_shut_down: %s", status_text(s));
out:
	printf("1..%d\n", n_test);
	return n_failed ? 1 : 0;
}
