// SPDX-License-Identifier: GPL-2.0-only
/*
 * render_workload: a GPU process that uses the render node alone, through
 * libdrm_amdgpu, as a Mesa or VA-API client does: no /dev/kfd at all.
 *
 * On the first GPU it creates five GEM buffers, 12 MiB in all, in VRAM and
 * GTT (4 MiB VRAM, 2 MiB GTT, 3 MiB VRAM, 1 MiB GTT, 2 MiB VRAM), each mapped
 * into the file's GPU VM at an address of libdrm's VA manager and into the
 * process; a sixth buffer, created between the second and the third and freed
 * once the seventh, the SDMA engine's command buffer, is made, leaves a gap in
 * the file's handles (1, 2, 4, 5, 6 and the command buffer's 7). Every
 * content buffer holds the workload's pattern; a copy thread then submits SDMA
 * copies through the command-submission ioctl of its one context, each with
 * the list of buffers it uses (no BO list object: Mesa's drivers pass the list
 * with each submission), waits for each by its fence sequence number, without
 * pause (the first 2 MiB of the first buffer into the last, the same
 * bytes again and again, so that they are always in flight) and counts those
 * that complete: that count is the heartbeat.
 *
 * The contract (verify, heartbeat, the state file) is the other workloads'
 * (test/e2e/README.md); rewrite and fault are not served. Verify also asks the
 * kernel whether each handle still names its buffer and (Linux 6.18 and
 * newer) where the file's GPU VM maps it. --always-valid adds a 1 MiB GTT buffer
 * created VM_ALWAYS_VALID (handle 8), which lives in the file's VM alone: the
 * kernel lends it to no other file, and verify checks its pattern too.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <xf86drm.h>
#include <amdgpu.h>
#include <amdgpu_drm.h>

#include "workload.h"

#define MIB		((uint64_t)1 << 20)
#define N_BUFS		5
#define MIRROR		4		/* the copies' destination */
#define MIRROR_BYTES	(2 * MIB)	/* what they copy: the first buffer's first 2 MiB */
#define SDMA_MAX_COPY	(1u << 22)	/* COPY_LINEAR's count is 22 bits */
#define SDMA_NOP	0x00000000u
#define SDMA_COPY_LINEAR 0x00000001u
#define IB_DWORDS	64

static const struct {
	uint64_t size;
	uint32_t domain;
} layout[N_BUFS] = {
	{ 4 * MIB, AMDGPU_GEM_DOMAIN_VRAM }, { 2 * MIB, AMDGPU_GEM_DOMAIN_GTT },
	{ 3 * MIB, AMDGPU_GEM_DOMAIN_VRAM }, { 1 * MIB, AMDGPU_GEM_DOMAIN_GTT },
	{ 2 * MIB, AMDGPU_GEM_DOMAIN_VRAM },
};

struct buf {
	amdgpu_bo_handle bo;
	amdgpu_va_handle vah;
	uint32_t handle; /* the file's GEM handle */
	uint64_t va, size;
	uint32_t domain;
	void *cpu;
};

struct ctx {
	struct wl_opts o;
	struct wl_gpu_node gpu;
	int fd;
	amdgpu_device_handle dev;
	amdgpu_context_handle cs;
	struct buf bufs[N_BUFS], ib;
	struct buf local; /* --always-valid: in the file's VM alone */
	uint64_t seed;
	pthread_t copier;
	bool copier_running;
	atomic_bool stop;
	_Atomic uint64_t copies;    /* completed */
	_Atomic int copy_error;	    /* the first failure, negative errno */
	volatile uint64_t beat;	    /* copies, for wl_check_heartbeats */
};

static int buf_create_flags(struct ctx *c, struct buf *b, uint64_t size, uint32_t domain, uint64_t flags)
{
	struct amdgpu_bo_alloc_request req = {
		.alloc_size = size,
		.phys_alignment = 0x1000,
		.preferred_heap = domain,
		.flags = AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED | flags,
	};
	int r;

	memset(b, 0, sizeof(*b));
	b->size = size;
	b->domain = domain;
	r = amdgpu_bo_alloc(c->dev, &req, &b->bo);
	if (r)
		return r;
	r = amdgpu_bo_export(b->bo, amdgpu_bo_handle_type_kms, &b->handle);
	if (!r)
		r = amdgpu_bo_cpu_map(b->bo, &b->cpu);
	if (!r)
		r = amdgpu_va_range_alloc(c->dev, amdgpu_gpu_va_range_general, size, 0x1000, 0, &b->va,
					  &b->vah, 0);
	if (!r)
		r = amdgpu_bo_va_op(b->bo, 0, size, b->va, 0, AMDGPU_VA_OP_MAP);
	return r;
}

static int buf_create(struct ctx *c, struct buf *b, uint64_t size, uint32_t domain)
{
	return buf_create_flags(c, b, size, domain, 0);
}

static void buf_destroy(struct buf *b)
{
	if (b->vah) {
		amdgpu_bo_va_op(b->bo, 0, b->size, b->va, 0, AMDGPU_VA_OP_UNMAP);
		amdgpu_va_range_free(b->vah);
	}
	if (b->cpu)
		amdgpu_bo_cpu_unmap(b->bo);
	if (b->bo)
		amdgpu_bo_free(b->bo);
	memset(b, 0, sizeof(*b));
}

/* The copy thread: the mirror copy, submitted and waited for, over and over. */
static void *copy_loop(void *arg)
{
	struct ctx *c = arg;
	uint32_t *dw = c->ib.cpu, n = 0;
	uint64_t src = c->bufs[0].va, dst = c->bufs[MIRROR].va, left = MIRROR_BYTES;

	while (left) {
		uint32_t bytes = left > SDMA_MAX_COPY ? SDMA_MAX_COPY : (uint32_t)left;

		dw[n++] = SDMA_COPY_LINEAR;
		dw[n++] = bytes - 1; /* SDMA 4.x: the count is bytes - 1 */
		dw[n++] = 0;
		dw[n++] = (uint32_t)src;
		dw[n++] = (uint32_t)(src >> 32);
		dw[n++] = (uint32_t)dst;
		dw[n++] = (uint32_t)(dst >> 32);
		src += bytes;
		dst += bytes;
		left -= bytes;
	}
	while (n & 7)
		dw[n++] = SDMA_NOP;

	/* the buffers each submission uses go with it, as Mesa's drivers pass them */
	struct drm_amdgpu_bo_list_entry bos[N_BUFS + 1];
	for (unsigned int i = 0; i < N_BUFS; i++)
		bos[i] = (struct drm_amdgpu_bo_list_entry){ .bo_handle = c->bufs[i].handle };
	bos[N_BUFS] = (struct drm_amdgpu_bo_list_entry){ .bo_handle = c->ib.handle };
	struct drm_amdgpu_bo_list_in list = {
		.bo_number = N_BUFS + 1,
		.bo_info_size = sizeof(bos[0]),
		.bo_info_ptr = (uint64_t)(uintptr_t)bos,
	};
	struct drm_amdgpu_cs_chunk_ib ib = {
		.ip_type = AMDGPU_HW_IP_DMA,
		.va_start = c->ib.va,
		.ib_bytes = n * 4,
	};
	struct drm_amdgpu_cs_chunk chunks[2] = {
		{ .chunk_id = AMDGPU_CHUNK_ID_BO_HANDLES,
		  .length_dw = sizeof(list) / 4,
		  .chunk_data = (uint64_t)(uintptr_t)&list },
		{ .chunk_id = AMDGPU_CHUNK_ID_IB, .length_dw = sizeof(ib) / 4, .chunk_data = (uint64_t)(uintptr_t)&ib },
	};

	while (!atomic_load(&c->stop)) {
		struct amdgpu_cs_fence fence = { .context = c->cs, .ip_type = AMDGPU_HW_IP_DMA };
		uint32_t expired = 0;
		uint64_t seq = 0;
		int r = amdgpu_cs_submit_raw2(c->dev, c->cs, 0, 2, chunks, &seq);

		if (!r) {
			fence.fence = seq;
			r = amdgpu_cs_query_fence_status(&fence, AMDGPU_TIMEOUT_INFINITE, 0, &expired);
		}
		if (!r && !expired)
			r = -ETIME;
		if (r) {
			int none = 0;

			atomic_compare_exchange_strong(&c->copy_error, &none, r);
			usleep(100000);
			continue;
		}
		c->beat = atomic_fetch_add(&c->copies, 1) + 1;
	}
	return NULL;
}

static void state_fill(FILE *f, void *arg)
{
	struct ctx *c = arg;

	fprintf(f, "pid %d\n", getpid());
	fprintf(f, "seed 0x%" PRIx64 "\n", c->seed);
	fprintf(f, "gpu 0x%04x render %u\n", c->gpu.gpu_id, c->gpu.render_minor);
	for (unsigned int i = 0; i < N_BUFS; i++)
		fprintf(f, "gem handle %u va 0x%" PRIx64 " size 0x%" PRIx64 " domain %s\n", c->bufs[i].handle,
			c->bufs[i].va, c->bufs[i].size, c->bufs[i].domain == AMDGPU_GEM_DOMAIN_VRAM ? "vram" : "gtt");
	if (c->local.bo)
		fprintf(f, "gem always-valid handle %u va 0x%" PRIx64 "\n", c->local.handle, c->local.va);
	wl_host_state(f);
}

static int setup(struct ctx *c)
{
	unsigned int n_gpus = 1, n_nodes;
	uint32_t major, minor;
	struct buf gap = { 0 };
	char path[64];
	int r;

	c->o.gpus = 1;
	r = wl_pick_gpus(&c->o, &c->gpu, &n_gpus, &n_nodes);
	if (r)
		return r;
	snprintf(path, sizeof(path), "/dev/dri/renderD%u", c->gpu.render_minor);
	c->fd = open(path, O_RDWR | O_CLOEXEC);
	if (c->fd < 0) {
		wl_err("cannot open %s: %s", path, strerror(errno));
		return WL_EXIT_SETUP;
	}
	r = amdgpu_device_initialize(c->fd, &major, &minor, &c->dev);
	if (r) {
		wl_err("amdgpu_device_initialize on %s: %s", path, strerror(-r));
		return WL_EXIT_SETUP;
	}
	c->seed = wl_seed();
	for (unsigned int i = 0; i < N_BUFS; i++) {
		r = buf_create(c, &c->bufs[i], layout[i].size, layout[i].domain);
		if (r) {
			wl_err("GEM buffer %u (%" PRIu64 " MiB): %s", i, layout[i].size / MIB, strerror(-r));
			return WL_EXIT_SETUP;
		}
		if (i == 1) {
			/*
			 * a buffer that goes once the others are made: the kernel hands out the
			 * lowest free handle, so freed now its handle would go to the next one
			 */
			r = buf_create(c, &gap, 64 << 10, AMDGPU_GEM_DOMAIN_GTT);
			if (r) {
				wl_err("the gap's buffer: %s", strerror(-r));
				return WL_EXIT_SETUP;
			}
		}
		wl_fill(c->bufs[i].cpu, c->bufs[i].size, c->seed, i == MIRROR ? 0 : i);
	}
	r = buf_create(c, &c->ib, 4096, AMDGPU_GEM_DOMAIN_GTT);
	buf_destroy(&gap);
	if (!r && c->o.always_valid) {
		r = buf_create_flags(c, &c->local, 1 * MIB, AMDGPU_GEM_DOMAIN_GTT, AMDGPU_GEM_CREATE_VM_ALWAYS_VALID);
		if (!r)
			wl_fill(c->local.cpu, c->local.size, c->seed, 9);
	}
	if (!r)
		r = amdgpu_cs_ctx_create(c->dev, &c->cs);
	if (r) {
		wl_err("the SDMA context: %s", strerror(-r));
		return WL_EXIT_SETUP;
	}
	if (pthread_create(&c->copier, NULL, copy_loop, c)) {
		wl_err("cannot start the copy thread");
		return WL_EXIT_SETUP;
	}
	c->copier_running = true;
	r = wl_host_setup(&c->o);
	return r ? r : wl_state_write(c->o.state, state_fill, c);
}

/*
 * Its handle still names the buffer, of its size and domain, and (where the
 * kernel tells it: GET_MAPPING_INFO, Linux 6.18) the file's VM maps it at its
 * address.
 */
static void check_handle(struct wl_report *r, const char *what, struct ctx *c, const struct buf *b)
{
	struct drm_amdgpu_gem_create_in info = { 0 };
	struct drm_amdgpu_gem_op op = {
		.handle = b->handle,
		.op = AMDGPU_GEM_OP_GET_GEM_CREATE_INFO,
		.value = (uint64_t)(uintptr_t)&info,
	};
	struct {
		uint64_t addr, size, offset, flags;
	} vm[4];
	/* the 6.18 layout of drm_amdgpu_gem_op; older libdrm headers lack it */
	struct {
		uint32_t handle, op;
		uint64_t value;
		uint32_t num_entries, padding;
	} mop = { b->handle, 2 /* GET_MAPPING_INFO */, (uint64_t)(uintptr_t)vm, 4, 0 };

	if (drmCommandWriteRead(c->fd, DRM_AMDGPU_GEM_OP, &op, sizeof(op))) {
		wl_fail(r, "%s: GEM_OP of handle %u: %s", what, b->handle, strerror(errno));
		return;
	}
	if (info.bo_size != b->size || !(info.domains & b->domain)) {
		wl_fail(r, "%s: handle %u names %" PRIu64 " bytes in domains 0x%" PRIx64 ", not %" PRIu64 " in 0x%x",
			what, b->handle, (uint64_t)info.bo_size, (uint64_t)info.domains, b->size, b->domain);
		return;
	}
	if (drmIoctl(c->fd, DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, mop), &mop)) {
		if (errno != EINVAL)
			wl_fail(r, "%s: GET_MAPPING_INFO of handle %u: %s", what, b->handle, strerror(errno));
		return;
	}
	if (mop.num_entries != 1 || vm[0].addr != b->va || vm[0].size != b->size || vm[0].offset)
		wl_fail(r, "%s: handle %u is mapped %u times, first at 0x%" PRIx64 " (%" PRIu64 " bytes), not once at 0x%" PRIx64,
			what, b->handle, mop.num_entries, mop.num_entries ? vm[0].addr : 0,
			mop.num_entries ? vm[0].size : 0, b->va);
}

static void verify(void *arg, struct wl_report *r)
{
	struct ctx *c = arg;
	char what[96];
	int err = atomic_load(&c->copy_error);

	if (err)
		wl_fail(r, "an SDMA copy failed: %s", strerror(-err));
	else
		wl_pass(r);
	for (unsigned int i = 0; i < N_BUFS; i++) {
		const struct buf *b = &c->bufs[i];
		struct wl_vma vma;

		snprintf(what, sizeof(what), "GEM buffer %u (handle %u)", i, b->handle);
		check_handle(r, what, c, b);
		if (!wl_check_mapping(r, what, (uint64_t)(uintptr_t)b->cpu, b->size, WL_BACK_RENDER, "rw-s", &vma))
			continue;
		/* the mirror's first 2 MiB are the first buffer's, copied there again and again */
		wl_check_pattern(r, what, b->cpu, b->size, c->seed, i == MIRROR ? 0 : i);
	}
	if (c->local.bo)
		wl_check_pattern(r, "the VM_ALWAYS_VALID buffer", c->local.cpu, c->local.size, c->seed, 9);
}

static void heartbeat(void *arg, struct wl_report *r)
{
	struct ctx *c = arg;
	const struct wl_heartbeat hb = { "SDMA copies", &c->beat };
	int err = atomic_load(&c->copy_error);

	if (err)
		wl_fail(r, "an SDMA copy failed: %s", strerror(-err));
	wl_check_heartbeats(r, &hb, 1, c->o.hb_timeout_ms);
}

static void teardown(void *arg)
{
	struct ctx *c = arg;

	atomic_store(&c->stop, true);
	if (c->copier_running)
		pthread_join(c->copier, NULL);
	if (c->cs)
		amdgpu_cs_ctx_free(c->cs);
	buf_destroy(&c->ib);
	buf_destroy(&c->local);
	for (unsigned int i = 0; i < N_BUFS; i++)
		buf_destroy(&c->bufs[i]);
	if (c->dev)
		amdgpu_device_deinitialize(c->dev);
	if (c->fd >= 0)
		close(c->fd);
}

int main(int argc, char **argv)
{
	static struct ctx c = { .fd = -1 };
	static const struct wl_ops ops = {
		.verify = verify,
		.heartbeat = heartbeat,
		.teardown = teardown,
	};
	int r;

	wl_parse_opts(argc, argv, &c.o);
	wl_signals_block();
	wl_guard_init();
	r = setup(&c);
	if (r) {
		teardown(&c);
		return r;
	}
	return wl_serve(&c.o, &ops, &c);
}
