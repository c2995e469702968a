// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory: ALLOC/FREE_MEMORY_OF_GPU, MAP/UNMAP_MEMORY_TO_GPU, CPU mappings of
 * BOs through the render node and of doorbells/MMIO through /dev/kfd, and
 * AVAILABLE_MEMORY. §N.N: sections of Documentation/kfd-interface.md.
 */
#include "kfd_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BO_SIZE (64 * 1024ULL)

/* BOs of the main process, shared by the tests in this file. */
static struct {
	struct bo vram[MAX_GPUS];
	struct bo gtt;
	struct bo userptr;
	struct bo doorbell[MAX_GPUS];
	struct bo mmio[MAX_GPUS];
	bool have_vram, have_gtt, have_userptr, have_doorbell, have_mmio;
} M;

static bool offset_looks_valid(uint64_t off)
{
	return off != 0 && (off & (PAGE_SZ - 1)) == 0;
}

void test_alloc(struct ctx *ctx)
{
	const uint32_t vram_flags = ALLOC_VRAM | ALLOC_WRITABLE | ALLOC_EXEC | ALLOC_PUBLIC |
				    ALLOC_NO_SUBST;
	const struct gpu *g0 = &ctx->gpu[0];
	struct bo bo;
	void *cpu;
	int r;

	M.have_vram = true;
	for (unsigned int i = 0; i < ctx->n_gpus; i++) {
		const struct gpu *g = &ctx->gpu[i];

		r = bo_alloc(ctx->kfd, &M.vram[i], g->id, va_alloc(ctx, BO_SIZE), BO_SIZE,
			     vram_flags, 0);
		M.have_vram &= tap_errno(r, 0, "ALLOC VRAM 64 KiB on gpu 0x%x", g->id);
		if (r)
			continue;
		/* §1.5: handle = gpu_id << 32 | idr id; ids come from 0 per pdd (§5.0). */
		tap_eq(HANDLE_GPU(M.vram[i].handle), g->id,
		       "VRAM handle carries gpu_id in bits 63:32 (§1.5)");
		tap_eq(HANDLE_IDR(M.vram[i].handle), 0,
		       "first BO of gpu 0x%x gets idr id 0 (§5.0)", g->id);
		if (!tap_ok(offset_looks_valid(M.vram[i].mmap_offset),
			    "VRAM mmap_offset is a page-aligned render-node offset (§3.4)"))
			tap_diag("mmap_offset 0x%llx", (unsigned long long)M.vram[i].mmap_offset);
	}

	r = bo_alloc(ctx->kfd, &M.gtt, g0->id, va_alloc(ctx, BO_SIZE), BO_SIZE,
		     ALLOC_GTT | ALLOC_WRITABLE | ALLOC_NO_SUBST, 0);
	M.have_gtt = tap_errno(r, 0, "ALLOC GTT 64 KiB");
	if (M.have_gtt) {
		tap_eq(M.gtt.handle, (uint64_t)g0->id << 32 | 1,
		       "second BO of gpu 0x%x gets handle gpu_id<<32 | 1 (§1.5, §5.0)", g0->id);
		tap_ok(offset_looks_valid(M.gtt.mmap_offset) &&
			       M.gtt.mmap_offset != M.vram[0].mmap_offset,
		       "GTT mmap_offset is a distinct page-aligned render-node offset (§3.4)");
	}

	/* USERPTR: mmap_offset carries the CPU address in (§1.2, §1.4). */
	cpu = mmap(NULL, BO_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(cpu, 0x5a, BO_SIZE);
	r = bo_alloc(ctx->kfd, &M.userptr, g0->id, (uint64_t)(uintptr_t)cpu, BO_SIZE,
		     ALLOC_USERPTR | ALLOC_WRITABLE | ALLOC_NO_SUBST, (uint64_t)(uintptr_t)cpu);
	M.have_userptr = tap_errno(r, 0, "ALLOC USERPTR 64 KiB of anonymous memory");
	if (M.have_userptr)
		tap_eq(HANDLE_GPU(M.userptr.handle), g0->id, "USERPTR handle carries gpu_id");

	M.have_doorbell = M.have_mmio = true;
	for (unsigned int i = 0; i < ctx->n_gpus; i++) {
		const struct gpu *g = &ctx->gpu[i];

		r = bo_alloc(ctx->kfd, &M.doorbell[i], g->id, va_alloc(ctx, DOORBELL_SLICE),
			     DOORBELL_SLICE,
			     ALLOC_DOORBELL | ALLOC_WRITABLE | ALLOC_COHERENT | ALLOC_NO_SUBST, 0);
		M.have_doorbell &= tap_errno(r, 0, "ALLOC DOORBELL 8 KiB on gpu 0x%x (§3.5)", g->id);

		r = bo_alloc(ctx->kfd, &M.mmio[i], g->id, va_alloc(ctx, PAGE_SZ), PAGE_SZ,
			     ALLOC_MMIO | ALLOC_WRITABLE | ALLOC_COHERENT | ALLOC_NO_SUBST, 0);
		M.have_mmio &= tap_errno(r, 0, "ALLOC MMIO_REMAP 4 KiB on gpu 0x%x (§3.2)", g->id);
		if (!r)
			tap_eq(M.mmio[i].mmap_offset, MMAP_TYPE_MMIO | MMAP_GPU_ID(g->id),
			       "MMIO_REMAP mmap_offset = TYPE_MMIO | GPU_ID (§3.4)");
	}

	/* Error cases (§3.4). None of them may consume an idr id or memory. */
	r = bo_alloc(ctx->kfd, &bo, g0->id, va_alloc(ctx, BO_SIZE), 0, ALLOC_VRAM, 0);
	tap_errno(r, EINVAL, "ALLOC size 0 -> EINVAL (§3.4)");
	r = bo_alloc(ctx->kfd, &bo, ctx->bogus_gpu_id, va_alloc(ctx, BO_SIZE), BO_SIZE,
		     ALLOC_VRAM, 0);
	tap_errno(r, EINVAL, "ALLOC on an unknown gpu_id -> EINVAL (§3.4)");
	r = bo_alloc(ctx->kfd, &bo, g0->id, va_alloc(ctx, BO_SIZE), PAGE_SZ,
		     ALLOC_DOORBELL | ALLOC_WRITABLE, 0);
	tap_errno(r, EINVAL, "ALLOC DOORBELL of 4 KiB (not the 8 KiB slice) -> EINVAL (§3.4)");
	r = bo_alloc(ctx->kfd, &bo, g0->id, va_alloc(ctx, BO_SIZE), 2 * PAGE_SZ,
		     ALLOC_MMIO | ALLOC_WRITABLE, 0);
	tap_errno(r, EINVAL, "ALLOC MMIO_REMAP of 8 KiB (not PAGE_SIZE) -> EINVAL (§3.4)");
	r = bo_alloc(ctx->kfd, &bo, g0->id, va_alloc(ctx, BO_SIZE), BO_SIZE,
		     ALLOC_USERPTR | ALLOC_WRITABLE, 0);
	tap_errno(r, EINVAL, "ALLOC USERPTR with CPU address 0 -> EINVAL (§3.4)");
	if (g0->vram_size) {
		uint64_t size = (g0->vram_size + (1ULL << 30) + (2ULL << 20) - 1) & ~((2ULL << 20) - 1);

		r = bo_alloc(ctx->kfd, &bo, g0->id, va_alloc(ctx, 1 << 20), size,
			     ALLOC_VRAM | ALLOC_NO_SUBST, 0);
		tap_errno(r, ENOMEM, "ALLOC VRAM larger than the advertised %llu MiB -> ENOMEM (§3.4)",
			  (unsigned long long)(g0->vram_size >> 20));
		if (!r)
			bo_free(ctx->kfd, bo.handle);
	} else {
		tap_skip("no VRAM size in mem_banks", "ALLOC VRAM over the advertised size -> ENOMEM");
	}

	/* The failed attempts above must not have used up idr ids. */
	r = bo_alloc(ctx->kfd, &bo, g0->id, va_alloc(ctx, PAGE_SZ), PAGE_SZ,
		     ALLOC_GTT | ALLOC_WRITABLE, 0);
	if (tap_errno(r, 0, "ALLOC after the failures succeeds")) {
		uint32_t expect = 2 + (M.have_userptr ? 1 : 0) + (M.have_doorbell ? 1 : 0) +
				  (M.have_mmio ? 1 : 0);

		tap_eq(HANDLE_IDR(bo.handle), expect,
		       "failed ALLOCs left no hole in the idr (lowest free id, §5.0)");
		bo_free(ctx->kfd, bo.handle);
	}
}

/* Writes a pattern through one mapping and reads it back through a second one. */
static bool cpu_roundtrip(int render_fd, const struct bo *bo, uint32_t seed)
{
	void *p = bo_cpu_map(render_fd, bo->mmap_offset, bo->size, PROT_READ | PROT_WRITE,
			     MAP_SHARED);
	size_t bad = 0;
	bool ok;

	if (p == MAP_FAILED) {
		tap_diag("mmap(render, 0x%llx): %s", (unsigned long long)bo->mmap_offset,
			 strerror(errno));
		return false;
	}
	fill_pattern(p, bo->size, seed);
	munmap(p, bo->size);
	p = bo_cpu_map(render_fd, bo->mmap_offset, bo->size, PROT_READ, MAP_SHARED);
	if (p == MAP_FAILED) {
		tap_diag("second mmap: %s", strerror(errno));
		return false;
	}
	ok = check_pattern(p, bo->size, seed, &bad);
	if (!ok)
		tap_diag("pattern mismatch at byte %zu", bad);
	munmap(p, bo->size);
	return ok;
}

static void test_kfd_mmap(struct ctx *ctx)
{
	for (unsigned int i = 0; i < ctx->n_gpus; i++) {
		const struct gpu *g = &ctx->gpu[i];
		uint64_t off = MMAP_TYPE_DOORBELL | MMAP_GPU_ID(g->id);
		void *p;

		p = mmap(NULL, DOORBELL_SLICE, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->kfd,
			 (off_t)off);
		if (!tap_ok(p != MAP_FAILED, "mmap /dev/kfd doorbell slice of gpu 0x%x (8 KiB) (§1.5)",
			    g->id))
			tap_diag("offset 0x%llx: %s", (unsigned long long)off, strerror(errno));
		else
			munmap(p, DOORBELL_SLICE);

		if (!M.have_mmio)
			continue;
		p = mmap(NULL, PAGE_SZ, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->kfd,
			 (off_t)M.mmio[i].mmap_offset);
		if (!tap_ok(p != MAP_FAILED, "mmap /dev/kfd MMIO page of gpu 0x%x (4 KiB) (§1.5)",
			    g->id)) {
			tap_diag("offset 0x%llx: %s", (unsigned long long)M.mmio[i].mmap_offset,
				 strerror(errno));
		} else {
			/* HDP flush registers at offsets 0 and 4 (§1.4): must be readable. */
			volatile uint32_t *reg = p;

			(void)reg[0];
			(void)reg[1];
			munmap(p, PAGE_SZ);
		}
	}

	/* Size checks of kfd_doorbell_mmap / kfd_mmio_mmap (§1.5; errno per 6.1). */
	const struct gpu *g0 = &ctx->gpu[0];
	void *p;

	p = mmap(NULL, PAGE_SZ, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->kfd,
		 (off_t)(MMAP_TYPE_DOORBELL | MMAP_GPU_ID(g0->id)));
	tap_errno(p == MAP_FAILED ? -errno : 0, EINVAL,
		  "mmap /dev/kfd doorbell with 4 KiB (not the slice) -> EINVAL (§1.5)");
	if (p != MAP_FAILED)
		munmap(p, PAGE_SZ);
	p = mmap(NULL, 2 * DOORBELL_SLICE, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->kfd,
		 (off_t)(MMAP_TYPE_DOORBELL | MMAP_GPU_ID(g0->id)));
	tap_errno(p == MAP_FAILED ? -errno : 0, EINVAL,
		  "mmap /dev/kfd doorbell with 16 KiB -> EINVAL (§1.5)");
	if (p != MAP_FAILED)
		munmap(p, 2 * DOORBELL_SLICE);
	p = mmap(NULL, 2 * PAGE_SZ, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->kfd,
		 (off_t)(MMAP_TYPE_MMIO | MMAP_GPU_ID(g0->id)));
	tap_errno(p == MAP_FAILED ? -errno : 0, EINVAL,
		  "mmap /dev/kfd MMIO with 8 KiB (not PAGE_SIZE) -> EINVAL (§1.5)");
	if (p != MAP_FAILED)
		munmap(p, 2 * PAGE_SZ);
	p = mmap(NULL, DOORBELL_SLICE, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->kfd,
		 (off_t)(MMAP_TYPE_DOORBELL | MMAP_GPU_ID(ctx->bogus_gpu_id)));
	tap_errno(p == MAP_FAILED ? -errno : 0, ENODEV,
		  "mmap /dev/kfd doorbell of an unknown gpu_id -> ENODEV (6.1 kfd_mmap)");
	if (p != MAP_FAILED)
		munmap(p, DOORBELL_SLICE);
}

void test_mmap(struct ctx *ctx)
{
	const struct gpu *g0 = &ctx->gpu[0];
	void *p;
	int other;

	if (M.have_vram) {
		for (unsigned int i = 0; i < ctx->n_gpus; i++)
			tap_ok(cpu_roundtrip(ctx->gpu[i].render_fd, &M.vram[i], 0x1000 + i),
			       "VRAM of gpu 0x%x: write through a render-node mapping, read back "
			       "through a new one (§3.4)",
			       ctx->gpu[i].id);

		/* The thunk maps non-host-access VRAM PROT_NONE/MAP_PRIVATE (§3.4, §5.0). */
		p = bo_cpu_map(g0->render_fd, M.vram[0].mmap_offset, BO_SIZE, PROT_NONE,
			       MAP_PRIVATE);
		if (!tap_ok(p != MAP_FAILED, "VRAM mmap PROT_NONE MAP_PRIVATE is accepted (§3.4)"))
			tap_diag("mmap: %s", strerror(errno));
		else
			munmap(p, BO_SIZE);

		/* Only the file given to ACQUIRE_VM may map KFD BOs (§3.4, §5.1). */
		other = open_render(g0);
		p = bo_cpu_map(other, M.vram[0].mmap_offset, BO_SIZE, PROT_READ, MAP_SHARED);
		if (!tap_ok(p == MAP_FAILED,
			    "VRAM BO cannot be mapped through another render file (§3.4)"))
			munmap(p, BO_SIZE);
		else
			tap_diag("refused with %s", errname(errno));
		close(other);
	}

	if (M.have_gtt)
		tap_ok(cpu_roundtrip(g0->render_fd, &M.gtt, 0x2000),
		       "GTT: write through a render-node mapping, read back (§3.4)");

	test_kfd_mmap(ctx);
}

void test_map_unmap(struct ctx *ctx)
{
	const struct gpu *g0 = &ctx->gpu[0];
	uint32_t ids[MAX_GPUS + 1], n = ctx_gpu_ids(ctx, ids), ns;
	struct bo b;
	bool ok;
	int r;

	if (M.have_vram) {
		ns = 0;
		r = bo_map(ctx->kfd, M.vram[0].handle, ids, n, &ns);
		tap_errno(r, 0, "MAP VRAM to all %u GPUs", n);
		tap_eq(ns, n, "MAP: n_success == n_devices on success (§1.2)");
	}
	if (M.have_gtt) {
		ns = 0;
		tap_errno(bo_map(ctx->kfd, M.gtt.handle, ids, n, &ns), 0, "MAP GTT to all GPUs");
	}
	if (M.have_userptr) {
		ns = 0;
		tap_errno(bo_map(ctx->kfd, M.userptr.handle, ids, 1, &ns), 0, "MAP USERPTR to gpu 0");
	}
	ok = M.have_doorbell && M.have_mmio;
	for (unsigned int i = 0; ok && i < ctx->n_gpus; i++) {
		ns = 0;
		r = bo_map(ctx->kfd, M.doorbell[i].handle, &ids[i], 1, &ns);
		ns = 0;
		r = r ?: bo_map(ctx->kfd, M.mmio[i].handle, &ids[i], 1, &ns);
		if (r) {
			tap_diag("gpu 0x%x: %s", ids[i], errname(-r));
			ok = false;
		}
	}
	tap_ok(ok, "MAP each GPU's DOORBELL and MMIO_REMAP BO to that GPU (§3.2, §3.5)");

	/* Argument checks (§3.4). */
	ns = 0;
	r = bo_map(ctx->kfd, M.vram[0].handle, ids, 0, &ns);
	tap_errno(r, EINVAL, "MAP with n_devices 0 -> EINVAL (§3.4)");
	ns = 2;
	r = bo_map(ctx->kfd, M.vram[0].handle, ids, 1, &ns);
	tap_errno(r, EINVAL, "MAP with n_success > n_devices -> EINVAL (§3.4)");
	ns = 0;
	r = bo_map(ctx->kfd, (uint64_t)g0->id << 32 | 0x7fff, ids, 1, &ns);
	tap_errno(r, ENOMEM, "MAP an unknown handle -> ENOMEM (§3.4, sic)");
	ns = 0;
	r = bo_map(ctx->kfd, (uint64_t)ctx->bogus_gpu_id << 32, ids, 1, &ns);
	tap_errno(r, EINVAL, "MAP a handle naming an unknown gpu -> EINVAL (6.1)");

	/* n_success is the resume point (§1.2): a bad peer stops the loop there. */
	r = bo_alloc(ctx->kfd, &b, g0->id, va_alloc(ctx, BO_SIZE), BO_SIZE,
		     ALLOC_VRAM | ALLOC_WRITABLE | ALLOC_NO_SUBST, 0);
	if (tap_errno(r, 0, "ALLOC a VRAM BO for the n_success checks")) {
		uint32_t arr[2] = { g0->id, ctx->bogus_gpu_id };

		ns = 0;
		r = bo_map(ctx->kfd, b.handle, arr, 2, &ns);
		tap_errno(r, EINVAL, "MAP to [gpu0, unknown peer] -> EINVAL (§3.4)");
		tap_eq(ns, 1, "MAP failure leaves n_success at the first failed index (§1.2)");
		if (ctx->n_gpus >= 2) {
			/* Resume at index 1: entry 0 (already mapped) is not looked at again. */
			arr[1] = ctx->gpu[1].id;
			r = bo_map(ctx->kfd, b.handle, arr, 2, &ns);
			tap_errno(r, 0, "MAP resumed with n_success 1 succeeds (§1.2)");
			tap_eq(ns, 2, "resumed MAP ends with n_success == n_devices");
		}
		ns = 0;
		r = bo_unmap(ctx->kfd, b.handle, arr, ctx->n_gpus >= 2 ? 2 : 1, &ns);
		tap_errno(r, 0, "UNMAP it again");
		r = bo_free(ctx->kfd, b.handle);
		tap_errno(r, 0, "FREE the unmapped VRAM BO");
	}

	if (M.have_vram) {
		ns = 0;
		r = bo_unmap(ctx->kfd, M.vram[0].handle, ids, n, &ns);
		tap_errno(r, 0, "UNMAP VRAM from all GPUs");
		tap_eq(ns, n, "UNMAP: n_success == n_devices on success");
		ns = 0;
		r = bo_map(ctx->kfd, M.vram[0].handle, ids, n, &ns);
		tap_errno(r, 0, "MAP VRAM again after UNMAP");
	}
	ns = 0;
	r = bo_unmap(ctx->kfd, M.vram[0].handle, ids, 0, &ns);
	tap_errno(r, EINVAL, "UNMAP with n_devices 0 -> EINVAL (6.1)");
	ns = 0;
	r = bo_unmap(ctx->kfd, (uint64_t)g0->id << 32 | 0x7fff, ids, 1, &ns);
	tap_errno(r, ENOMEM, "UNMAP an unknown handle -> ENOMEM (6.1, same as MAP)");
}

void test_free(struct ctx *ctx)
{
	const struct gpu *g0 = &ctx->gpu[0];
	struct bo b;
	int r;

	r = bo_alloc(ctx->kfd, &b, g0->id, va_alloc(ctx, BO_SIZE), BO_SIZE,
		     ALLOC_GTT | ALLOC_WRITABLE, 0);
	if (!tap_errno(r, 0, "ALLOC a GTT BO to free"))
		return;
	tap_errno(bo_free(ctx->kfd, b.handle), 0, "FREE_MEMORY_OF_GPU succeeds");
	tap_errno(bo_free(ctx->kfd, b.handle), EINVAL, "FREE the same handle again -> EINVAL (6.1)");
	tap_errno(bo_free(ctx->kfd, (uint64_t)g0->id << 32 | 0x7fff), EINVAL,
		  "FREE an unknown handle -> EINVAL (6.1)");
	tap_errno(bo_free(ctx->kfd, (uint64_t)ctx->bogus_gpu_id << 32), EINVAL,
		  "FREE a handle naming an unknown gpu -> EINVAL (6.1)");
}

void test_available_memory(struct ctx *ctx)
{
	struct kfd_ioctl_get_available_memory_args a = { .gpu_id = ctx->gpu[0].id };
	uint64_t before, during;
	struct bo b;
	int r;

	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_AVAILABLE_MEMORY, &a);
	tap_errno(r, 0, "AVAILABLE_MEMORY succeeds");
	before = a.available;
	if (!tap_ok(before > 0 && (!ctx->gpu[0].vram_size || before <= ctx->gpu[0].vram_size),
		    "AVAILABLE_MEMORY is non-zero and at most the VRAM size"))
		tap_diag("available %llu, vram %llu", (unsigned long long)before,
			 (unsigned long long)ctx->gpu[0].vram_size);

	r = bo_alloc(ctx->kfd, &b, ctx->gpu[0].id, va_alloc(ctx, 16 << 20), 16 << 20,
		     ALLOC_VRAM | ALLOC_NO_SUBST, 0);
	if (tap_errno(r, 0, "ALLOC 16 MiB of VRAM")) {
		r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_AVAILABLE_MEMORY, &a);
		during = a.available;
		if (!tap_ok(r == 0 && during < before, "AVAILABLE_MEMORY drops after a VRAM ALLOC"))
			tap_diag("before %llu, after %llu", (unsigned long long)before,
				 (unsigned long long)during);
		bo_free(ctx->kfd, b.handle);
		r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_AVAILABLE_MEMORY, &a);
		tap_ok(r == 0 && a.available > during, "AVAILABLE_MEMORY recovers after FREE");
	}

	a.gpu_id = ctx->bogus_gpu_id;
	r = kfd_ioctl(ctx->kfd, AMDKFD_IOC_AVAILABLE_MEMORY, &a);
	tap_errno(r, EINVAL, "AVAILABLE_MEMORY with an unknown gpu_id -> EINVAL (uapi header)");
}
