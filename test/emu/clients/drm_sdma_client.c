// SPDX-License-Identifier: GPL-2.0
/*
 * drm_sdma_client: the real libdrm_amdgpu against the emulator's render nodes.
 *
 * On every emulated GPU: amdgpu_device_initialize and the queries it and its
 * users make; GEM BOs in VRAM and GTT, userptr BOs, GPU VAs from libdrm's own
 * VA manager; SDMA submissions (COPY_LINEAR at the engine's 4 MiB maximum with
 * count = bytes - 1, many packets per IB padded to 8 dwords, CONST_FILL,
 * WRITE, FENCE, TRAP) waited for with amdgpu_cs_query_fence_status and checked
 * byte by byte; dma-buf export and re-import; the checkpoint interface of
 * Linux 6.18 (GEM_LIST_HANDLES, GEM_OP GET_MAPPING_INFO); the kernel's error
 * codes.  Then
 * the plugin's path to KFD memory: a forked child allocates VRAM through
 * /dev/kfd, this process checkpoints it with the CRIU ioctls as criu does,
 * imports the dma-bufs and moves their contents through SDMA both ways.
 * With --copy-mib N, N MiB go through SDMA each way and the engine's
 * throughput is printed.
 *
 * TAP on stdout; exit 0 iff all passed, 77 with "1..0 # SKIP" without the
 * emulator.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <xf86drm.h>
#include <amdgpu.h>
#include <amdgpu_drm.h>
#include <linux/kfd_ioctl.h>

#include "client_tap.h"

#define TOPOLOGY	"/sys/class/kfd/kfd/topology/nodes"
#define MBPS_PARAM	"/sys/module/amdgpu/parameters/sdma_mbps"
#define MAX_GPUS	16
#define SDMA_MAX_COPY	(1u << 22)	/* COPY_LINEAR count is 22 bits: 4 MiB */
#define MIB		(1ull << 20)
#define FAMILY_AI	141

/* SDMA 4.x packets */
#define SDMA_NOP		0x00000000u
#define SDMA_COPY_LINEAR	0x00000001u
#define SDMA_WRITE_LINEAR	0x00000002u
#define SDMA_FENCE		0x00000005u
#define SDMA_TRAP		0x00000006u
#define SDMA_CONST_FILL		0x0000000bu

struct gpu {
	unsigned int node;
	uint32_t gpu_id;
	uint32_t device_id;
	int minor;
	uint64_t vram_size;
	int fd;
	amdgpu_device_handle dev;
};

static struct gpu gpus[MAX_GPUS];
static unsigned int n_gpus;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool read_prop(unsigned int node, const char *key, uint64_t *val)
{
	char path[256], k[64];
	unsigned long long v;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), TOPOLOGY "/%u/properties", node);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fscanf(f, "%63s %llu", k, &v) == 2) {
		if (!strcmp(k, key)) {
			*val = v;
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

static bool read_vram_size(unsigned int node, uint64_t *size)
{
	char path[256];
	unsigned long long v;
	FILE *f;
	bool found = false;
	char k[64];

	snprintf(path, sizeof(path), TOPOLOGY "/%u/mem_banks/0/properties", node);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fscanf(f, "%63s %llu", k, &v) == 2)
		if (!strcmp(k, "size_in_bytes")) {
			*size = v;
			found = true;
		}
	fclose(f);
	return found;
}

/* The GPU nodes of the KFD topology, in node order. */
static void find_gpus(void)
{
	unsigned int node;
	uint64_t v;
	char path[256];
	FILE *f;

	for (node = 0; node < 64 && n_gpus < MAX_GPUS; node++) {
		unsigned long id = 0;

		snprintf(path, sizeof(path), TOPOLOGY "/%u/gpu_id", node);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%lu", &id) != 1)
			id = 0;
		fclose(f);
		if (!id)
			continue;
		gpus[n_gpus].node = node;
		gpus[n_gpus].gpu_id = id;
		gpus[n_gpus].minor = read_prop(node, "drm_render_minor", &v) ? (int)v : -1;
		gpus[n_gpus].device_id = read_prop(node, "device_id", &v) ? v : 0;
		if (!read_vram_size(node, &gpus[n_gpus].vram_size))
			gpus[n_gpus].vram_size = 0;
		gpus[n_gpus].fd = -1;
		n_gpus++;
	}
}

static uint64_t pat(uint64_t seed, uint64_t i)
{
	return (seed << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ i;
}

static void fill_pattern(void *buf, uint64_t size, uint64_t seed)
{
	uint64_t *p = buf, i;

	for (i = 0; i < size / 8; i++)
		p[i] = pat(seed, i);
}

/* The offset of the first difference from the pattern, or -1. */
static int64_t check_pattern(const void *buf, uint64_t size, uint64_t seed)
{
	const uint64_t *p = buf;
	uint64_t i;

	for (i = 0; i < size / 8; i++)
		if (p[i] != pat(seed, i))
			return i * 8;
	return -1;
}

/* ---- BOs and VAs ------------------------------------------------------------ */

struct buf {
	amdgpu_bo_handle bo;
	amdgpu_va_handle vah;
	uint64_t va;
	uint64_t size;
	void *cpu;
};

static int buf_map(amdgpu_device_handle dev, struct buf *b)
{
	int r;

	r = amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, b->size, 0x1000, 0,
				  &b->va, &b->vah, 0);
	if (r)
		return r;
	r = amdgpu_bo_va_op(b->bo, 0, b->size, b->va, 0, AMDGPU_VA_OP_MAP);
	if (r) {
		amdgpu_va_range_free(b->vah);
		b->vah = NULL;
	}
	return r;
}

static int buf_alloc(amdgpu_device_handle dev, struct buf *b, uint64_t size, uint32_t domain,
		     bool cpu_map)
{
	struct amdgpu_bo_alloc_request req = {
		.alloc_size = size, .phys_alignment = 0x1000, .preferred_heap = domain,
	};
	int r;

	memset(b, 0, sizeof(*b));
	b->size = size;
	r = amdgpu_bo_alloc(dev, &req, &b->bo);
	if (r)
		return r;
	if (cpu_map) {
		r = amdgpu_bo_cpu_map(b->bo, &b->cpu);
		if (r)
			return r;
	}
	return buf_map(dev, b);
}

static int buf_userptr(amdgpu_device_handle dev, struct buf *b, uint64_t size)
{
	int r;

	memset(b, 0, sizeof(*b));
	b->size = size;
	b->cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->cpu == MAP_FAILED) {
		b->cpu = NULL;
		return -errno;
	}
	r = amdgpu_create_bo_from_user_mem(dev, b->cpu, size, &b->bo);
	if (r)
		return r;
	return buf_map(dev, b);
}

static void buf_free(struct buf *b, bool user)
{
	if (b->vah) {
		amdgpu_bo_va_op(b->bo, 0, b->size, b->va, 0, AMDGPU_VA_OP_UNMAP);
		amdgpu_va_range_free(b->vah);
	}
	if (b->bo && b->cpu && !user)
		amdgpu_bo_cpu_unmap(b->bo);
	if (b->bo)
		amdgpu_bo_free(b->bo);
	if (user && b->cpu)
		munmap(b->cpu, b->size);
	memset(b, 0, sizeof(*b));
}

/* ---- IBs and submission ----------------------------------------------------- */

struct ib {
	struct buf b;
	uint32_t *dw;
	uint32_t n, max;
};

static int ib_init(amdgpu_device_handle dev, struct ib *ib, uint32_t max_dw)
{
	int r;

	r = buf_alloc(dev, &ib->b, ((uint64_t)max_dw * 4 + 0xfff) & ~0xfffull,
		      AMDGPU_GEM_DOMAIN_GTT, true);
	ib->dw = ib->b.cpu;
	ib->n = 0;
	ib->max = max_dw;
	return r;
}

static void ib_copy(struct ib *ib, uint64_t dst, uint64_t src, uint64_t bytes)
{
	while (bytes) {
		uint32_t n = bytes > SDMA_MAX_COPY ? SDMA_MAX_COPY : bytes;

		ib->dw[ib->n++] = SDMA_COPY_LINEAR;
		ib->dw[ib->n++] = n - 1;	/* SDMA 4.x: bytes - 1 */
		ib->dw[ib->n++] = 0;
		ib->dw[ib->n++] = (uint32_t)src;
		ib->dw[ib->n++] = src >> 32;
		ib->dw[ib->n++] = (uint32_t)dst;
		ib->dw[ib->n++] = dst >> 32;
		src += n;
		dst += n;
		bytes -= n;
	}
}

static void ib_pad(struct ib *ib)
{
	while (ib->n & 7)
		ib->dw[ib->n++] = SDMA_NOP;
}

static int submit(amdgpu_device_handle dev, amdgpu_context_handle ctx, struct ib *ib,
		  amdgpu_bo_list_handle list, uint64_t *seq)
{
	struct amdgpu_cs_ib_info info = { .ib_mc_address = ib->b.va, .size = ib->n };
	struct amdgpu_cs_request req = {
		.ip_type = AMDGPU_HW_IP_DMA, .ring = 0, .resources = list,
		.number_of_ibs = 1, .ibs = &info,
	};
	int r;

	(void)dev;
	r = amdgpu_cs_submit(ctx, 0, &req, 1);
	*seq = req.seq_no;
	return r;
}

static int wait_seq(amdgpu_context_handle ctx, uint64_t seq, uint64_t timeout_ns, uint32_t *expired)
{
	struct amdgpu_cs_fence f = {
		.context = ctx, .ip_type = AMDGPU_HW_IP_DMA, .ring = 0, .fence = seq,
	};

	*expired = 0;
	return amdgpu_cs_query_fence_status(&f, timeout_ns, 0, expired);
}

/* Submit @ib, wait for it without limit: 0 or the error. */
static int run(amdgpu_device_handle dev, amdgpu_context_handle ctx, struct ib *ib,
	       amdgpu_bo_list_handle list)
{
	uint32_t expired;
	uint64_t seq;
	int r;

	ib_pad(ib);
	r = submit(dev, ctx, ib, list, &seq);
	if (r)
		return r;
	r = wait_seq(ctx, seq, AMDGPU_TIMEOUT_INFINITE, &expired);
	if (!r && !expired)
		r = -EBUSY;
	ib->n = 0;
	return r;
}

static int raw_va(int fd, uint32_t handle, uint32_t op, uint64_t va, uint64_t size, uint64_t off)
{
	struct drm_amdgpu_gem_va args = {
		.handle = handle, .operation = op,
		.flags = AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE,
		.va_address = va, .offset_in_bo = off, .map_size = size,
	};

	return drmCommandWrite(fd, DRM_AMDGPU_GEM_VA, &args, sizeof(args));
}

static uint32_t kms_handle(amdgpu_bo_handle bo)
{
	uint32_t h = 0;

	amdgpu_bo_export(bo, amdgpu_bo_handle_type_kms, &h);
	return h;
}

static int set_mbps(unsigned int mbps)
{
	FILE *f = fopen(MBPS_PARAM, "w");

	if (!f)
		return -errno;
	fprintf(f, "%u\n", mbps);
	return fclose(f) ? -errno : 0;
}

/* ---- per-GPU checks --------------------------------------------------------- */

static void check_queries(struct gpu *g)
{
	struct drm_amdgpu_info_device di = {};
	struct drm_amdgpu_info_hw_ip ip = {};
	struct amdgpu_gpu_info info = {};
	struct amdgpu_heap_info heap = {};
	uint32_t count = 0, reg = 0;
	int r;

	r = amdgpu_query_gpu_info(g->dev, &info);
	ok(!r && info.family_id == FAMILY_AI && info.asic_id == g->device_id,
	   "amdgpu_query_gpu_info: family %u (AI) asic 0x%x (topology 0x%x)",
	   info.family_id, info.asic_id, g->device_id);
	r = amdgpu_query_info(g->dev, AMDGPU_INFO_DEV_INFO, sizeof(di), &di);
	ok(!r && di.virtual_address_offset == 2 * MIB &&
	   di.virtual_address_max == 1ull << 47 && di.virtual_address_alignment == 4096 &&
	   di.high_va_offset == 0xffff800000000000ull &&
	   di.high_va_max == 0xffffffffffe00000ull,
	   "DEV_INFO VA layout: [0x%" PRIx64 ", 0x%" PRIx64 ") align %u, high [0x%" PRIx64
	   ", 0x%" PRIx64 ")", (uint64_t)di.virtual_address_offset,
	   (uint64_t)di.virtual_address_max, di.virtual_address_alignment,
	   (uint64_t)di.high_va_offset, (uint64_t)di.high_va_max);
	r = amdgpu_read_mm_registers(g->dev, 0x263e, 1, 0xffffffff, 0, &reg);
	ok(!r && reg, "READ_MMR_REG GB_ADDR_CONFIG = 0x%x", reg);
	r = amdgpu_read_mm_registers(g->dev, 0x1234, 1, 0xffffffff, 0, &reg);
	ok(r == -EFAULT, "READ_MMR_REG of a register not on the allow list: -EFAULT (%d)", r);
	r = amdgpu_query_hw_ip_info(g->dev, AMDGPU_HW_IP_DMA, 0, &ip);
	ok(!r && ip.hw_ip_version_major == 4 && ip.ib_start_alignment == 256 &&
	   ip.ib_size_alignment == 4 && ip.available_rings == 3,
	   "HW_IP_INFO DMA: SDMA %u.%u, IB alignment %u/%u, rings 0x%x",
	   ip.hw_ip_version_major, ip.hw_ip_version_minor, ip.ib_start_alignment,
	   ip.ib_size_alignment, ip.available_rings);
	r = amdgpu_query_hw_ip_info(g->dev, AMDGPU_HW_IP_DMA, 1, &ip);
	ok(r == -EINVAL, "HW_IP_INFO for ip_instance 1: -EINVAL (%d)", r);
	r = amdgpu_query_hw_ip_count(g->dev, AMDGPU_HW_IP_DMA, &count);
	ok(!r && count == 1, "HW_IP_COUNT DMA: %u", count);
	r = amdgpu_query_heap_info(g->dev, AMDGPU_GEM_DOMAIN_VRAM, 0, &heap);
	ok(!r && heap.heap_size == g->vram_size,
	   "heap info VRAM: %" PRIu64 " MiB (topology %" PRIu64 " MiB), usage %" PRIu64,
	   (uint64_t)heap.heap_size >> 20, g->vram_size >> 20, (uint64_t)heap.heap_usage);
	r = amdgpu_query_heap_info(g->dev, AMDGPU_GEM_DOMAIN_GTT, 0, &heap);
	ok(!r && heap.heap_size > 0, "heap info GTT: %" PRIu64 " MiB",
	   (uint64_t)heap.heap_size >> 20);
}

#define SMALL	(6 * MIB + 12288)	/* not a multiple of the packet size */

/* Userptr -> VRAM -> GTT with copies, then fill/write/fence packets. */
static void check_sdma(struct gpu *g)
{
	struct buf up = {}, vram = {}, gtt = {};
	amdgpu_bo_handle handles[4];
	amdgpu_bo_list_handle list = NULL;
	amdgpu_context_handle ctx = NULL;
	struct ib ib = {};
	int64_t bad;
	uint32_t *w;
	int r;

	r = amdgpu_cs_ctx_create(g->dev, &ctx);
	ok(!r, "amdgpu_cs_ctx_create (%d)", r);
	r = buf_userptr(g->dev, &up, SMALL);
	ok(!r, "userptr BO of %" PRIu64 " bytes mapped at a libdrm VA (%d)", (uint64_t)SMALL, r);
	r = buf_alloc(g->dev, &vram, SMALL, AMDGPU_GEM_DOMAIN_VRAM, true);
	ok(!r, "VRAM BO created, CPU-mapped and VA-mapped (%d)", r);
	r |= buf_alloc(g->dev, &gtt, SMALL, AMDGPU_GEM_DOMAIN_GTT, true);
	ok(!r, "GTT BO created, CPU-mapped and VA-mapped (%d)", r);
	r |= ib_init(g->dev, &ib, 4096);
	if (r || !ctx)
		goto out;
	handles[0] = up.bo;
	handles[1] = vram.bo;
	handles[2] = gtt.bo;
	handles[3] = ib.b.bo;
	r = amdgpu_bo_list_create(g->dev, 4, handles, NULL, &list);
	ok(!r, "amdgpu_bo_list_create (%d)", r);

	fill_pattern(up.cpu, SMALL, g->gpu_id);
	ib_copy(&ib, vram.va, up.va, SMALL);
	ib_copy(&ib, gtt.va, vram.va, SMALL);
	r = run(g->dev, ctx, &ib, list);
	bad = check_pattern(gtt.cpu, SMALL, g->gpu_id);
	ok(!r && bad < 0 && check_pattern(vram.cpu, SMALL, g->gpu_id) < 0,
	   "SDMA userptr -> VRAM -> GTT, 4 MiB packets, one IB: every byte arrives (r %d, first bad %" PRId64 ")",
	   r, bad);

	/* back to user memory, and an odd-sized copy at odd addresses */
	memset(up.cpu, 0, SMALL);
	ib_copy(&ib, up.va, gtt.va, SMALL);
	r = run(g->dev, ctx, &ib, list);
	ok(!r && check_pattern(up.cpu, SMALL, g->gpu_id) < 0, "SDMA GTT -> userptr (r %d)", r);
	memset(gtt.cpu, 0xee, 4096);
	ib_copy(&ib, gtt.va + 3, up.va + 101, 1001);
	r = run(g->dev, ctx, &ib, list);
	ok(!r && !memcmp((char *)gtt.cpu + 3, (char *)up.cpu + 101, 1001) &&
	   ((unsigned char *)gtt.cpu)[2] == 0xee && ((unsigned char *)gtt.cpu)[1004] == 0xee,
	   "SDMA copy of 1001 bytes between unaligned VAs touches exactly those bytes");

	/* CONST_FILL, WRITE, FENCE, TRAP and a burst NOP */
	ib.dw[ib.n++] = SDMA_CONST_FILL;
	ib.dw[ib.n++] = (uint32_t)vram.va;
	ib.dw[ib.n++] = vram.va >> 32;
	ib.dw[ib.n++] = 0xa5a5a5a5;
	ib.dw[ib.n++] = 65536 - 1;
	ib.dw[ib.n++] = SDMA_NOP | (2 << 16);	/* skips the next two dwords */
	ib.dw[ib.n++] = 0xdeadbeef;
	ib.dw[ib.n++] = 0xdeadbeef;
	ib.dw[ib.n++] = SDMA_WRITE_LINEAR;
	ib.dw[ib.n++] = (uint32_t)(gtt.va + 64);
	ib.dw[ib.n++] = (gtt.va + 64) >> 32;
	ib.dw[ib.n++] = 3 - 1;
	ib.dw[ib.n++] = 0x11111111;
	ib.dw[ib.n++] = 0x22222222;
	ib.dw[ib.n++] = 0x33333333;
	ib.dw[ib.n++] = SDMA_FENCE;
	ib.dw[ib.n++] = (uint32_t)(gtt.va + 128);
	ib.dw[ib.n++] = (gtt.va + 128) >> 32;
	ib.dw[ib.n++] = 0xfeedf00d;
	ib.dw[ib.n++] = SDMA_TRAP;
	ib.dw[ib.n++] = 0;
	r = run(g->dev, ctx, &ib, list);
	w = gtt.cpu;
	ok(!r && ((uint32_t *)vram.cpu)[0] == 0xa5a5a5a5 &&
	   ((uint32_t *)vram.cpu)[16383] == 0xa5a5a5a5 &&
	   ((uint64_t *)vram.cpu)[8192] == pat(g->gpu_id, 8192) &&
	   w[16] == 0x11111111 && w[17] == 0x22222222 && w[18] == 0x33333333 &&
	   w[32] == 0xfeedf00d,
	   "CONST_FILL, NOP with count, WRITE, FENCE and TRAP execute (r %d)", r);

	amdgpu_bo_list_destroy(list);
out:
	if (ib.b.bo)
		buf_free(&ib.b, false);
	buf_free(&gtt, false);
	buf_free(&vram, false);
	buf_free(&up, true);
	if (ctx)
		amdgpu_cs_ctx_free(ctx);
}

/* dma-buf export and import: the same GEM object on the same device. */
static void check_prime(struct gpu *g)
{
	struct amdgpu_bo_import_result res = {};
	union drm_amdgpu_gem_mmap mm = {};
	char path[64];
	struct buf b = {};
	uint32_t fd = 0, h2 = 0;
	int r, fd2;
	void *p2;
	off_t size;

	r = buf_alloc(g->dev, &b, 2 * MIB, AMDGPU_GEM_DOMAIN_VRAM, true);
	if (r) {
		ok(false, "VRAM BO for dma-buf (%d)", r);
		return;
	}
	fill_pattern(b.cpu, 2 * MIB, 77);
	r = amdgpu_bo_export(b.bo, amdgpu_bo_handle_type_dma_buf_fd, &fd);
	size = r ? -1 : lseek(fd, 0, SEEK_END);
	ok(!r && size == 2 * MIB, "amdgpu_bo_export as dma-buf; lseek gives its size (%lld)",
	   (long long)size);
	if (r)
		goto out;
	r = amdgpu_bo_import(g->dev, amdgpu_bo_handle_type_dma_buf_fd, fd, &res);
	ok(!r && res.buf_handle == b.bo && res.alloc_size == 2 * MIB,
	   "re-importing into the same file gives the same BO (%d)", r);
	if (!r)
		amdgpu_bo_free(res.buf_handle);

	/* another file of the same device: the same GEM object behind a new handle */
	snprintf(path, sizeof(path), "/dev/dri/renderD%d", g->minor);
	fd2 = open(path, O_RDWR | O_CLOEXEC);
	r = fd2 < 0 ? -errno : drmPrimeFDToHandle(fd2, fd, &h2);
	mm.in.handle = h2;
	if (!r)
		r = drmCommandWriteRead(fd2, DRM_AMDGPU_GEM_MMAP, &mm, sizeof(mm));
	p2 = r ? MAP_FAILED : mmap(NULL, 2 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd2,
				   mm.out.addr_ptr);
	ok(p2 != MAP_FAILED && check_pattern(p2, 2 * MIB, 77) < 0,
	   "importing into another file of the device reaches the same pages (%d)", r);
	if (p2 != MAP_FAILED) {
		((uint32_t *)p2)[5] = 0xcafe;
		ok(((uint32_t *)b.cpu)[5] == 0xcafe, "a write through the import shows in the original");
		munmap(p2, 2 * MIB);
	}
	if (fd2 >= 0)
		close(fd2);
	close(fd);
out:
	buf_free(&b, false);

	/* memory that lives in one file's VM alone is not lent out */
	struct amdgpu_bo_alloc_request req = {
		.alloc_size = 64 << 10,
		.phys_alignment = 4096,
		.preferred_heap = AMDGPU_GEM_DOMAIN_GTT,
		.flags = AMDGPU_GEM_CREATE_VM_ALWAYS_VALID,
	};
	amdgpu_bo_handle local;
	uint32_t local_fd = 0;

	r = amdgpu_bo_alloc(g->dev, &req, &local);
	ok(!r, "a VM_ALWAYS_VALID GTT BO (%d)", r);
	if (r)
		return;
	errno = 0;
	r = amdgpu_bo_export(local, amdgpu_bo_handle_type_dma_buf_fd, &local_fd);
	ok(r && errno == EPERM, "a VM_ALWAYS_VALID BO cannot be exported as a dma-buf: EPERM (%d, %s)", r,
	   strerror(errno));
	if (!r)
		close(local_fd);
	amdgpu_bo_free(local);
}

/* ---- the checkpoint interface of Linux 6.18 -------------------------------- */

/* amdgpu_drm.h of 6.18, which the headers here may predate */
#define LIST_HANDLES_NR		0x19
#define GEM_OP_MAPPING_INFO	2
#define LIST_IS_IMPORT		(1u << 0)

struct list_handles {
	uint64_t entries;
	uint32_t num_entries, padding;
};

struct list_entry {
	uint32_t gem_handle, flags;
	uint64_t size, preferred_domains, alloc_flags, alignment;
};

struct gem_op24 {
	uint32_t handle, op;
	uint64_t value;
	uint32_t num_entries, padding;
};

struct vm_entry {
	uint64_t addr, size, offset, flags;
};

struct change_handle {
	uint32_t handle, new_handle;
};

static bool kernel_at_least(unsigned int major, unsigned int minor)
{
	unsigned int a = 0, b = 0;
	FILE *f = fopen("/proc/sys/kernel/osrelease", "r");

	if (f) {
		if (fscanf(f, "%u.%u", &a, &b) != 2)
			a = b = 0;
		fclose(f);
	}
	return a > major || (a == major && b >= minor);
}

static int list_handles(int fd, struct list_entry *e, uint32_t *n)
{
	struct list_handles args = { .entries = (uintptr_t)e, .num_entries = *n };
	int r = drmIoctl(fd, DRM_IOWR(DRM_COMMAND_BASE + LIST_HANDLES_NR, struct list_handles), &args);

	*n = args.num_entries;
	return r ? -errno : 0;
}

static int mapping_info(int fd, uint32_t handle, struct vm_entry *e, uint32_t *n, uint32_t padding)
{
	struct gem_op24 args = {
		.handle = handle, .op = GEM_OP_MAPPING_INFO, .value = (uintptr_t)e,
		.num_entries = *n, .padding = padding,
	};
	int r = drmIoctl(fd, DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, struct gem_op24), &args);

	*n = args.num_entries;
	return r ? -errno : 0;
}

static int gem_create(int fd, uint64_t size, uint64_t align, uint32_t domain, uint32_t *handle)
{
	union drm_amdgpu_gem_create args = {
		.in = { .bo_size = size, .alignment = align, .domains = domain },
	};
	int r = drmCommandWriteRead(fd, DRM_AMDGPU_GEM_CREATE, &args, sizeof(args));

	*handle = args.out.handle;
	return r;
}

/*
 * GEM_LIST_HANDLES and GEM_OP GET_MAPPING_INFO as 6.18 answers them, on a file
 * of its own (its handles from 1): objects in handle order, an array too small
 * given only their number, alignment in pages, IS_IMPORT for another GPU's
 * dma-buf alone, the mappings with the flags they were made with, a non-zero
 * padding refused; DRM core's CHANGE_HANDLE disabled since the CVE-2026-53145
 * fix. Before 6.18 both ioctls fail with EINVAL.
 */
static void check_gem_checkpoint(struct gpu *g, struct gpu *other)
{
	const uint64_t va = 0x7f0000000000ull, vm_flags = AMDGPU_VM_PAGE_READABLE |
		AMDGPU_VM_PAGE_WRITEABLE | AMDGPU_VM_MTYPE_UC;
	struct list_entry e[4];
	struct vm_entry m[2];
	struct change_handle ch;
	char path[64];
	uint32_t h[3] = { 0 }, n, imported = 0;
	struct buf theirs = {};
	uint32_t dmabuf = 0;
	int fd, r;

	snprintf(path, sizeof(path), "/dev/dri/renderD%d", g->minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (!ok(fd >= 0, "a file of its own for the GEM checkpoint interface"))
		return;
	n = 0;
	if (!kernel_at_least(6, 18)) {
		ok(list_handles(fd, e, &n) == -EINVAL, "before Linux 6.18 GEM_LIST_HANDLES fails with EINVAL");
		r = gem_create(fd, 64 << 10, 0, AMDGPU_GEM_DOMAIN_GTT, &h[0]);
		ok(!r && mapping_info(fd, h[0], m, &n, 0) == -EINVAL,
		   "before Linux 6.18 GEM_OP has no GET_MAPPING_INFO: EINVAL");
		close(fd);
		return;
	}
	ok(!list_handles(fd, e, &n) && n == 0, "a new file lists no GEM object");
	r = gem_create(fd, 1 * MIB, 0x10000, AMDGPU_GEM_DOMAIN_VRAM, &h[0]);
	if (!r)
		r = gem_create(fd, 64 << 10, 0, AMDGPU_GEM_DOMAIN_GTT, &h[1]);
	if (!r)
		r = gem_create(fd, 2 * MIB, 0, AMDGPU_GEM_DOMAIN_GTT, &h[2]);
	if (!ok(!r && h[0] == 1 && h[1] == 2 && h[2] == 3, "handles are handed out from 1 (%u %u %u)", h[0],
		h[1], h[2]))
		goto out;
	drmCloseBufferHandle(fd, h[1]);

	memset(e, 0xa5, sizeof(e));
	n = 1;
	r = list_handles(fd, e, &n);
	ok(!r && n == 2 && e[0].gem_handle == 0xa5a5a5a5,
	   "an array too small gets the number of objects (%u) and nothing in it", n);
	n = 4;
	r = list_handles(fd, e, &n);
	ok(!r && n == 2 && e[0].gem_handle == 1 && e[1].gem_handle == 3,
	   "the objects in handle order, the freed handle left out (%u: %u %u)", n, e[0].gem_handle,
	   e[1].gem_handle);
	ok(!r && e[0].size == 1 * MIB && e[0].preferred_domains == AMDGPU_GEM_DOMAIN_VRAM &&
	   e[0].alignment == 16 && !e[0].flags &&
	   (e[0].alloc_flags & AMDGPU_GEM_CREATE_VRAM_CLEARED),
	   "size, domains, alignment in pages (%llu) and creation flags (0x%llx) as created",
	   (unsigned long long)e[0].alignment, (unsigned long long)e[0].alloc_flags);

	r = raw_va(fd, h[0], AMDGPU_VA_OP_MAP, va, 1 * MIB, 0);
	if (!r) {
		struct drm_amdgpu_gem_va args = {
			.handle = h[2], .operation = AMDGPU_VA_OP_MAP, .flags = vm_flags,
			.va_address = va + 4 * MIB, .offset_in_bo = 1 * MIB, .map_size = 1 * MIB,
		};
		r = drmCommandWrite(fd, DRM_AMDGPU_GEM_VA, &args, sizeof(args));
	}
	n = 0;
	if (!r)
		r = mapping_info(fd, h[2], m, &n, 0);
	ok(!r && n == 1, "GET_MAPPING_INFO counts an object's mappings (%u)", n);
	memset(m, 0, sizeof(m));
	r = mapping_info(fd, h[2], m, &n, 0);
	ok(!r && n == 1 && m[0].addr == va + 4 * MIB && m[0].size == 1 * MIB && m[0].offset == 1 * MIB &&
	   m[0].flags == vm_flags,
	   "the mapping's address, size, offset and flags as mapped (flags 0x%llx)", (unsigned long long)m[0].flags);
	ok(mapping_info(fd, h[2], m, &n, 1) == -EINVAL, "a GEM_OP with its padding set fails with EINVAL");
	ok(mapping_info(fd, 2, m, &n, 0) == -ENOENT, "GET_MAPPING_INFO of a freed handle fails with ENOENT");

	/* another GPU's buffer is an import here; it takes the lowest free handle */
	if (other && !buf_alloc(other->dev, &theirs, 64 << 10, AMDGPU_GEM_DOMAIN_VRAM, false) &&
	    !amdgpu_bo_export(theirs.bo, amdgpu_bo_handle_type_dma_buf_fd, &dmabuf) &&
	    !drmPrimeFDToHandle(fd, dmabuf, &imported)) {
		n = 4;
		r = list_handles(fd, e, &n);
		ok(!r && n == 3 && imported == 2 && e[1].gem_handle == 2 && (e[1].flags & LIST_IS_IMPORT) &&
		   !(e[0].flags & LIST_IS_IMPORT),
		   "another GPU's dma-buf comes in at the freed handle 2, marked an import");
	} else if (other) {
		ok(false, "another GPU's buffer imported (%s)", strerror(errno));
	}
	if (dmabuf)
		close(dmabuf);
	if (theirs.bo)
		buf_free(&theirs, false);

	ch = (struct change_handle){ .handle = h[0], .new_handle = 10 };
	r = drmIoctl(fd, DRM_IOWR(0xD2, struct change_handle), &ch) ? -errno : 0;
	ok(r == -EINVAL, "DRM_IOCTL_GEM_CHANGE_HANDLE fails with EINVAL (disabled since CVE-2026-53145's fix)");
out:
	close(fd);
}

static void check_errors(struct gpu *g)
{
	struct drm_amdgpu_gem_userptr up = {};
	amdgpu_context_handle ctx = NULL, ctx2 = NULL;
	struct drm_amdgpu_bo_list_entry bad_entry = { .bo_handle = 0xdead };
	union drm_amdgpu_bo_list bl = {};
	uint32_t flags = 0, hangs = 0, expired, h;
	struct buf a = {}, c = {};
	struct ib ib = {};
	uint64_t seq, flags2 = 0;
	void *mem;
	int r;

	r = raw_va(g->fd, 0xdead, AMDGPU_VA_OP_MAP, 1ull << 33, 4096, 0);
	ok(r == -ENOENT, "GEM_VA MAP of an unknown handle: -ENOENT (%d)", r);

	if (buf_alloc(g->dev, &a, 64 * 1024, AMDGPU_GEM_DOMAIN_GTT, true) ||
	    ib_init(g->dev, &ib, 1024)) {
		ok(false, "BOs for the error checks");
		goto out;
	}
	h = kms_handle(a.bo);
	r = raw_va(g->fd, h, AMDGPU_VA_OP_MAP, a.va + 4096, 4096, 0);
	ok(r == -EINVAL, "GEM_VA MAP overlapping an existing mapping: -EINVAL (%d)", r);
	r = raw_va(g->fd, h, AMDGPU_VA_OP_MAP, 1 * MIB, 4096, 0);
	ok(r == -EINVAL, "GEM_VA MAP below the reserved 2 MiB: -EINVAL (%d)", r);
	r = raw_va(g->fd, h, AMDGPU_VA_OP_MAP, 1ull << 47, 4096, 0);
	ok(r == -EINVAL, "GEM_VA MAP in the VA hole: -EINVAL (%d)", r);
	r = raw_va(g->fd, h, AMDGPU_VA_OP_MAP, (1ull << 40) + 512, 4096, 0);
	ok(r == -EINVAL, "GEM_VA MAP of an unaligned VA: -EINVAL (%d)", r);
	r = raw_va(g->fd, h, AMDGPU_VA_OP_MAP, 1ull << 40, 128 * 1024, 0);
	ok(r == -EINVAL, "GEM_VA MAP past the end of the BO: -EINVAL (%d)", r);
	r = raw_va(g->fd, h, AMDGPU_VA_OP_UNMAP, 1ull << 40, 4096, 0);
	ok(r == -ENOENT, "GEM_VA UNMAP where the BO is not mapped: -ENOENT (%d)", r);
	r = raw_va(g->fd, h, 7, 1ull << 40, 4096, 0);
	ok(r == -EINVAL, "GEM_VA with an unknown operation: -EINVAL (%d)", r);
	r = raw_va(g->fd, h, AMDGPU_VA_OP_MAP, 0xffff800000100000ull, 4096, 0);
	ok(!r, "GEM_VA MAP in the high VA range (%d)", r);
	r = raw_va(g->fd, h, AMDGPU_VA_OP_UNMAP, 0xffff800000100000ull, 4096, 0);
	ok(!r, "GEM_VA UNMAP of it (%d)", r);

	mem = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	up.addr = (uintptr_t)mem + 16;
	up.size = 4096;
	up.flags = AMDGPU_GEM_USERPTR_ANONONLY | AMDGPU_GEM_USERPTR_REGISTER |
		   AMDGPU_GEM_USERPTR_VALIDATE;
	r = drmCommandWriteRead(g->fd, DRM_AMDGPU_GEM_USERPTR, &up, sizeof(up));
	ok(r == -EINVAL, "GEM_USERPTR at a misaligned address: -EINVAL (%d)", r);
	up.addr = (uintptr_t)mem;
	up.size = 4000;
	r = drmCommandWriteRead(g->fd, DRM_AMDGPU_GEM_USERPTR, &up, sizeof(up));
	ok(r == -EINVAL, "GEM_USERPTR of a misaligned size: -EINVAL (%d)", r);
	up.size = 4096;
	up.flags = AMDGPU_GEM_USERPTR_ANONONLY | AMDGPU_GEM_USERPTR_VALIDATE;
	r = drmCommandWriteRead(g->fd, DRM_AMDGPU_GEM_USERPTR, &up, sizeof(up));
	ok(r == -EACCES, "GEM_USERPTR writable without REGISTER: -EACCES (%d)", r);
	up.flags = 1u << 9 | AMDGPU_GEM_USERPTR_REGISTER;
	r = drmCommandWriteRead(g->fd, DRM_AMDGPU_GEM_USERPTR, &up, sizeof(up));
	ok(r == -EINVAL, "GEM_USERPTR with an unknown flag: -EINVAL (%d)", r);
	munmap(mem, 3 * 4096);

	bl.in.operation = AMDGPU_BO_LIST_OP_CREATE;
	bl.in.bo_number = 1;
	bl.in.bo_info_size = sizeof(bad_entry);
	bl.in.bo_info_ptr = (uintptr_t)&bad_entry;
	r = drmCommandWriteRead(g->fd, DRM_AMDGPU_BO_LIST, &bl, sizeof(bl));
	ok(r == -ENOENT, "BO_LIST CREATE with an unknown handle: -ENOENT (%d)", r);

	/* a copy from an unmapped VA faults; the context is guilty from then on */
	r = amdgpu_cs_ctx_create(g->dev, &ctx);
	r |= amdgpu_cs_ctx_create(g->dev, &ctx2);
	if (r) {
		ok(false, "contexts for the fault checks (%d)", r);
		goto out;
	}
	ib_copy(&ib, a.va, 0x7000000000ull, 4096);
	ib_pad(&ib);
	r = submit(g->dev, ctx, &ib, NULL, &seq);
	ok(!r && seq == 1, "CS of a copy from an unmapped VA is accepted (seq %" PRIu64 ")", seq);
	r = wait_seq(ctx, seq, AMDGPU_TIMEOUT_INFINITE, &expired);
	ok(r == -ETIME, "its fence reports the fault: -ETIME (%d)", r);
	r = amdgpu_cs_query_reset_state2(ctx, &flags2);
	ok(!r && (flags2 & AMDGPU_CTX_QUERY2_FLAGS_GUILTY) && (flags2 & AMDGPU_CTX_QUERY2_FLAGS_RESET),
	   "QUERY_STATE2: the context is guilty and saw a reset (flags 0x%" PRIx64 ")", flags2);
	ib.n = 0;
	ib.dw[ib.n++] = SDMA_NOP;
	ib_pad(&ib);
	r = submit(g->dev, ctx, &ib, NULL, &seq);
	ok(r == -ECANCELED, "the next CS on the guilty context: -ECANCELED (%d)", r);
	r = amdgpu_cs_query_reset_state(ctx2, &flags, &hangs);
	ok(!r && flags == AMDGPU_CTX_UNKNOWN_RESET,
	   "QUERY_STATE of another context reports the reset (%u)", flags);
	r = run(g->dev, ctx2, &ib, NULL);
	ok(!r, "another context still runs (%d)", r);

	/* an opcode SDMA 4 does not have */
	amdgpu_cs_ctx_free(ctx);
	ctx = NULL;
	r = amdgpu_cs_ctx_create(g->dev, &ctx);
	ib.n = 0;
	ib.dw[ib.n++] = 0x000000ff;
	ib_pad(&ib);
	r = r ? r : run(g->dev, ctx, &ib, NULL);
	ok(r == -ETIME, "an unknown opcode faults the submission (%d)", r);
	ib.n = 0;
	ib.dw[ib.n++] = SDMA_NOP;
	ib_pad(&ib);
	r = submit(g->dev, ctx, &ib, NULL, &seq);
	ok(r == -ECANCELED, "and the context is guilty: -ECANCELED (%d)", r);

	/* an IB that is not mapped */
	ib.n = 8;
	{
		struct amdgpu_cs_ib_info info = { .ib_mc_address = 0x6000000000ull, .size = 8 };
		struct amdgpu_cs_request req = {
			.ip_type = AMDGPU_HW_IP_DMA, .number_of_ibs = 1, .ibs = &info,
		};

		r = amdgpu_cs_submit(ctx2, 0, &req, 1);
		r = r ? r : wait_seq(ctx2, req.seq_no, AMDGPU_TIMEOUT_INFINITE, &expired);
		ok(r == -ETIME, "an IB at an unmapped VA faults (%d)", r);
	}

	/* WAIT_CS honours its timeout: a throttled 8 MiB copy is busy at first */
	amdgpu_cs_ctx_free(ctx);
	ctx = NULL;
	if (amdgpu_cs_ctx_create(g->dev, &ctx) ||
	    buf_alloc(g->dev, &c, 8 * MIB, AMDGPU_GEM_DOMAIN_VRAM, false)) {
		ok(false, "context and BO for the timeout check");
		goto out;
	}
	{
		struct amdgpu_cs_ib_info info = { .ib_mc_address = ib.b.va, .size = 8 };
		struct amdgpu_cs_request req = {
			.ip_type = AMDGPU_HW_IP_DMA, .ring = 2, .number_of_ibs = 1, .ibs = &info,
		};

		r = amdgpu_cs_submit(ctx, 0, &req, 1);
		ok(r == -EINVAL, "CS to DMA ring 2 (the CS layer has two): -EINVAL (%d)", r);
		req.ring = 0;
		req.ip_type = AMDGPU_HW_IP_COMPUTE;
		r = amdgpu_cs_submit(ctx, 0, &req, 1);
		ok(r == -EINVAL, "CS to the compute IP (not emulated): -EINVAL (%d)", r);
	}
	if (set_mbps(50)) {
		ok(true, "WAIT_CS timeout # SKIP cannot write " MBPS_PARAM);
	} else {
		double t0 = now(), t1;

		ib.n = 0;
		ib_copy(&ib, c.va, c.va + 4 * MIB, 4 * MIB);
		ib_pad(&ib);
		r = submit(g->dev, ctx, &ib, NULL, &seq);
		r = r ? r : wait_seq(ctx, seq, 0, &expired);
		ok(!r && !expired, "WAIT_CS with timeout 0 on a running copy: busy (%d, expired %u)",
		   r, expired);
		r = wait_seq(ctx, seq, 20 * 1000000ull, &expired);
		ok(!r && !expired, "WAIT_CS with a 20 ms timeout: still busy (%d)", r);
		r = wait_seq(ctx, seq, 10ull * 1000000000, &expired);
		t1 = now();
		ok(!r && expired && t1 - t0 > 0.06,
		   "WAIT_CS until done: 4 MiB at sdma_mbps=50 took %.3f s", t1 - t0);
		set_mbps(0);
	}
out:
	if (ctx)
		amdgpu_cs_ctx_free(ctx);
	if (ctx2)
		amdgpu_cs_ctx_free(ctx2);
	if (ib.b.bo)
		buf_free(&ib.b, false);
	buf_free(&c, false);
	buf_free(&a, false);
}

/* --copy-mib: N MiB each way between user memory and VRAM, timed. */
static void check_throughput(struct gpu *g, unsigned int mib)
{
	const uint64_t size = (uint64_t)mib * MIB, chunk = 64 * MIB;
	struct buf up = {}, vram = {};
	amdgpu_context_handle ctx = NULL;
	struct ib ibs[4] = {};
	uint64_t seqs[4], off;
	unsigned int dir, i, n;
	uint32_t expired;
	double t0, t;
	int r;

	r = amdgpu_cs_ctx_create(g->dev, &ctx);
	r = r ? r : buf_userptr(g->dev, &up, size);
	r = r ? r : buf_alloc(g->dev, &vram, size, AMDGPU_GEM_DOMAIN_VRAM, true);
	for (i = 0; i < 4 && !r; i++)
		r = ib_init(g->dev, &ibs[i], (chunk / SDMA_MAX_COPY) * 7 + 8);
	ok(!r, "%u MiB of user memory and VRAM, mapped (%d)", mib, r);
	if (r)
		goto out;
	fill_pattern(up.cpu, size, 0x5d);

	for (dir = 0; dir < 2; dir++) {
		if (dir)
			memset(up.cpu, 0, size);
		t0 = now();
		r = 0;
		/* 64 MiB per submission, up to four in flight */
		for (off = 0, n = 0; off < size && !r; off += chunk, n++) {
			struct ib *ib = &ibs[n % 4];
			uint64_t len = size - off < chunk ? size - off : chunk;

			if (n >= 4) {
				r = wait_seq(ctx, seqs[n % 4], AMDGPU_TIMEOUT_INFINITE, &expired);
				if (r || !expired)
					break;
			}
			ib->n = 0;
			if (dir)
				ib_copy(ib, up.va + off, vram.va + off, len);
			else
				ib_copy(ib, vram.va + off, up.va + off, len);
			ib_pad(ib);
			r = submit(g->dev, ctx, ib, NULL, &seqs[n % 4]);
		}
		for (i = 0; i < 4 && i < n && !r; i++)
			r = wait_seq(ctx, seqs[i], AMDGPU_TIMEOUT_INFINITE, &expired);
		t = now() - t0;
		diag("SDMA throughput %s: %u MiB in %.3f s = %.1f MB/s", dir ? "VRAM->host" : "host->VRAM",
		     mib, t, size / t / 1e6);
		ok(!r && check_pattern(dir ? up.cpu : vram.cpu, size, 0x5d) < 0,
		   "SDMA %s %u MiB at %.1f MB/s, every byte verified", dir ? "VRAM->host" : "host->VRAM",
		   mib, size / t / 1e6);
	}
out:
	for (i = 0; i < 4; i++)
		if (ibs[i].b.bo)
			buf_free(&ibs[i].b, false);
	buf_free(&vram, false);
	buf_free(&up, true);
	if (ctx)
		amdgpu_cs_ctx_free(ctx);
}

/* ---- KFD memory through CRIU CHECKPOINT --------------------------------------- */

#define KFD_BO_SIZE	(3 * MIB)

static int send_fd(int sock, int fd)
{
	char buf[CMSG_SPACE(sizeof(int))] = {}, c = 'f';
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = buf, .msg_controllen = sizeof(buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char buf[CMSG_SPACE(sizeof(int))] = {}, c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = buf, .msg_controllen = sizeof(buf) };
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* The child: VRAM on every GPU through /dev/kfd, filled from the CPU. */
static int kfd_child(int sock)
{
	void *va[MAX_GPUS];
	unsigned int i;
	char c;
	int kfd;

	kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (kfd < 0)
		return 1;
	for (i = 0; i < n_gpus; i++) {
		struct kfd_ioctl_acquire_vm_args acq = { .gpu_id = gpus[i].gpu_id };
		struct kfd_ioctl_alloc_memory_of_gpu_args al = {};
		struct kfd_ioctl_map_memory_to_gpu_args map = {};
		char path[64];
		int rfd;

		snprintf(path, sizeof(path), "/dev/dri/renderD%d", gpus[i].minor);
		rfd = open(path, O_RDWR | O_CLOEXEC);
		acq.drm_fd = rfd;
		if (rfd < 0 || ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &acq))
			return 2;
		/* a CPU VA reservation is the BO's GPU VA, as the thunk does it */
		va[i] = mmap(NULL, KFD_BO_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			     -1, 0);
		al.va_addr = (uintptr_t)va[i];
		al.size = KFD_BO_SIZE;
		al.gpu_id = gpus[i].gpu_id;
		al.flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE |
			   KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC |
			   KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE;
		if (ioctl(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &al))
			return 3;
		if (mmap(va[i], KFD_BO_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, rfd,
			 al.mmap_offset) != va[i])
			return 4;
		fill_pattern(va[i], KFD_BO_SIZE, 1000 + i);
		map.handle = al.handle;
		map.device_ids_array_ptr = (uintptr_t)&gpus[i].gpu_id;
		map.n_devices = 1;
		if (ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &map))
			return 5;
	}
	if (send_fd(sock, kfd))
		return 6;
	/* the parent wrote new contents through SDMA: check them from here */
	if (read(sock, &c, 1) != 1)
		return 7;
	for (i = 0; i < n_gpus; i++)
		if (check_pattern(va[i], KFD_BO_SIZE, 2000 + i) >= 0)
			return 10 + i;
	return 0;
}

static struct gpu *gpu_by_id(uint32_t id)
{
	unsigned int i;

	for (i = 0; i < n_gpus; i++)
		if (gpus[i].gpu_id == id)
			return &gpus[i];
	return NULL;
}

/* Move one KFD BO's contents out and new contents in, through SDMA. */
static void kfd_bo_roundtrip(struct kfd_criu_bo_bucket *bk, unsigned int seq)
{
	struct amdgpu_bo_import_result res = {};
	struct gpu *g = gpu_by_id(bk->gpu_id);
	amdgpu_context_handle ctx = NULL;
	struct buf kb = {}, up = {};
	struct ib ib = {};
	unsigned int idx;
	int r;

	if (!g) {
		ok(false, "KFD BO of unknown gpu 0x%x", bk->gpu_id);
		return;
	}
	idx = g - gpus;
	(void)seq;
	r = amdgpu_bo_import(g->dev, amdgpu_bo_handle_type_dma_buf_fd, bk->dmabuf_fd, &res);
	ok(!r && res.alloc_size == bk->size,
	   "gpu 0x%x: the KFD BO's CHECKPOINT dma-buf imports (%d, %" PRIu64 " bytes)",
	   g->gpu_id, r, (uint64_t)res.alloc_size);
	if (r)
		return;
	kb.bo = res.buf_handle;
	kb.size = bk->size;
	r = buf_map(g->dev, &kb);
	r = r ? r : buf_userptr(g->dev, &up, bk->size);
	r = r ? r : ib_init(g->dev, &ib, 64);
	r = r ? r : amdgpu_cs_ctx_create(g->dev, &ctx);
	if (r) {
		ok(false, "gpu 0x%x: VAs, staging and context for the KFD BO (%d)", g->gpu_id, r);
		goto out;
	}
	ib_copy(&ib, up.va, kb.va, bk->size);
	r = run(g->dev, ctx, &ib, NULL);
	ok(!r && check_pattern(up.cpu, bk->size, 1000 + idx) < 0,
	   "gpu 0x%x: SDMA reads what the child wrote into its VRAM (%d)", g->gpu_id, r);
	fill_pattern(up.cpu, bk->size, 2000 + idx);
	ib_copy(&ib, kb.va, up.va, bk->size);
	r = run(g->dev, ctx, &ib, NULL);
	ok(!r, "gpu 0x%x: SDMA writes new contents into the KFD BO (%d)", g->gpu_id, r);
out:
	if (ctx)
		amdgpu_cs_ctx_free(ctx);
	if (ib.b.bo)
		buf_free(&ib.b, false);
	buf_free(&up, true);
	buf_free(&kb, false);
}

static void check_kfd_checkpoint(void)
{
	struct kfd_ioctl_criu_args args = {};
	struct kfd_criu_device_bucket *devs = NULL;
	struct kfd_criu_bo_bucket *bos = NULL;
	void *priv = NULL;
	int sv[2], kfd = -1, status = 0, r;
	unsigned int i, n_vram = 0;
	pid_t pid;
	char c = 'v';

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		ok(false, "socketpair");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (!pid) {
		close(sv[0]);
		_exit(kfd_child(sv[1]));
	}
	close(sv[1]);
	kfd = recv_fd(sv[0]);
	ok(kfd >= 0, "a child built VRAM BOs through /dev/kfd and sent its kfd fd");
	if (kfd < 0)
		goto out;
	r = ptrace(PTRACE_SEIZE, pid, NULL, NULL) ? -errno : 0;
	ok(!r, "PTRACE_SEIZE the child, as criu does (%d)", r);

	args.op = KFD_CRIU_OP_PROCESS_INFO;
	r = ioctl(kfd, AMDKFD_IOC_CRIU_OP, &args) ? -errno : 0;
	ok(!r && args.num_bos >= n_gpus, "CRIU PROCESS_INFO: %u devices, %u BOs (%d)",
	   args.num_devices, args.num_bos, r);
	if (r)
		goto out;
	devs = calloc(args.num_devices, sizeof(*devs));
	bos = calloc(args.num_bos, sizeof(*bos));
	priv = calloc(1, args.priv_data_size);
	args.devices = (uintptr_t)devs;
	args.bos = (uintptr_t)bos;
	args.priv_data = (uintptr_t)priv;
	args.op = KFD_CRIU_OP_CHECKPOINT;
	r = ioctl(kfd, AMDKFD_IOC_CRIU_OP, &args) ? -errno : 0;
	ok(!r, "CRIU CHECKPOINT hands out dma-buf fds (%d)", r);
	args.op = KFD_CRIU_OP_UNPAUSE;
	ioctl(kfd, AMDKFD_IOC_CRIU_OP, &args);
	if (r)
		goto out;
	for (i = 0; i < args.num_bos; i++) {
		if (!(bos[i].alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) ||
		    bos[i].size != KFD_BO_SIZE)
			continue;
		n_vram++;
		kfd_bo_roundtrip(&bos[i], n_vram);
		close(bos[i].dmabuf_fd);
	}
	ok(n_vram == n_gpus, "one KFD VRAM BO per GPU went both ways (%u of %u)", n_vram, n_gpus);
	if (write(sv[0], &c, 1) != 1)
		diag("cannot tell the child to check");
out:
	close(sv[0]);
	if (kfd >= 0)
		close(kfd);
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "the child sees the contents SDMA wrote into its VRAM (status %d)",
	   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	free(devs);
	free(bos);
	free(priv);
}

int main(int argc, char **argv)
{
	unsigned int copy_mib = 0, i;
	uint32_t major, minor;
	char path[64];
	int r;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--copy-mib") && i + 1 < (unsigned int)argc)
			copy_mib = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--copy-mib N]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	find_gpus();
	if (access("/dev/kfd", F_OK) || !n_gpus) {
		printf("1..0 # SKIP no emulated GPU (/dev/kfd, %s)\n", TOPOLOGY);
		return 77;
	}

	for (i = 0; i < n_gpus; i++) {
		struct gpu *g = &gpus[i];
		char pfx[32];

		snprintf(pfx, sizeof(pfx), "gpu 0x%x: ", g->gpu_id);
		tap_prefix = pfx;
		snprintf(path, sizeof(path), "/dev/dri/renderD%d", g->minor);
		g->fd = open(path, O_RDWR | O_CLOEXEC);
		r = g->fd < 0 ? -errno : amdgpu_device_initialize(g->fd, &major, &minor, &g->dev);
		ok(!r && major == 3, "amdgpu_device_initialize on %s: DRM %u.%u (%d)", path,
		   major, minor, r);
		if (r)
			continue;
		check_queries(g);
		check_sdma(g);
		check_prime(g);
		check_gem_checkpoint(g, i && gpus[i - 1].dev ? &gpus[i - 1] : NULL); /* a GPU set up before */
		check_errors(g);
	}
	tap_prefix = "";
	check_kfd_checkpoint();
	if (copy_mib && gpus[0].dev) {
		tap_prefix = "";
		check_throughput(&gpus[0], copy_mib);
	}

	for (i = 0; i < n_gpus; i++) {
		if (gpus[i].dev)
			amdgpu_device_deinitialize(gpus[i].dev);
		if (gpus[i].fd >= 0)
			close(gpus[i].fd);
	}
	return tap_done();
}
