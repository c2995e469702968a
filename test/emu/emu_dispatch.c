// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: the dispatcher — what the command processor and the workgroup
 * dispatcher do with an AQL KERNEL_DISPATCH packet, and the waves that run it.
 *
 * The packet names a grid, a workgroup size, the kernel's arguments and its
 * kernel descriptor (the 64-byte record the code object's loader placed in
 * GPU memory, AMDGPU "amdhsa" code object ABI): where the code starts, how
 * many registers and how much LDS each wave and workgroup takes, and which
 * SGPRs and VGPRs the hardware preloads.  Each XCC of the GPU walks its
 * share of the grid one workgroup at a time in linear order (x fastest), as
 * an XCC with one compute unit would: a workgroup's waves (64 work-items
 * each, the last one partial) get their preloaded registers, the workgroup
 * its zeroed LDS, and the waves run round-robin on the shader core
 * (emu_shader.c), a slice of instructions each, meeting at s_barrier.
 * Workgroups at the grid's upper edges are partial, as HSA defines them.
 * Only one dispatch of a queue is in flight: the packet processor takes the
 * next packet once this one has completed, which is one order the AQL model
 * allows.
 *
 * An MI300 partition of several XCCs (SPX: 8) runs one queue on all of
 * them: amdkfd gives each XCC its own MQD for the same ring, with a logical
 * XCC id and a workgroup chunk of 1, so that XCC x launches the workgroups
 * whose linear index is x modulo the XCC count (AMD describes this
 * round-robin for MI300 in its partitioning documents).  The emulator takes
 * XCC x as logical id x (amdkfd rotates which XCC is first per queue) and
 * runs the XCCs' workgroups in turn, each with its own waves, LDS, control
 * stack and save area; the dispatch completes when every XCC's share has.
 *
 * Preloaded registers, in the order the code object ABI gives them: the user
 * SGPRs the descriptor enables (private segment buffer, dispatch packet
 * address, amd_queue_t address, kernarg address, dispatch id, flat scratch
 * init, private segment size), then the system SGPRs (workgroup ids x/y/z,
 * workgroup info); VGPR 0..2 the work-item ids (gfx90a: all three packed in
 * VGPR 0, 10 bits each).  MODE comes from the descriptor's float modes.
 *
 * Not emulated: the private segment (scratch).  Such a dispatch ends as an
 * illegal instruction at its first instruction, and the log says why;
 * kernels compiled with optimisation that keep everything in registers and
 * LDS need no scratch.
 *
 * Memory goes through the process's GPU VM, as the copy engine's does; a
 * small translation cache per pass keeps the lookups off the per-lane path.
 */
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/seq_file.h>

#include "emu.h"
#include "emu_shader.h"
#include "emu_cwsr.h"

/* The kernel descriptor (amdhsa), byte offsets */
#define KD_GROUP_SEGMENT_SIZE		0
#define KD_PRIVATE_SEGMENT_SIZE		4
#define KD_KERNARG_SIZE			8
#define KD_ENTRY_OFFSET			16
#define KD_PGM_RSRC3			44
#define KD_PGM_RSRC1			48
#define KD_PGM_RSRC2			52
#define KD_CODE_PROPERTIES		56
#define KD_BYTES			64

/* kernel_code_properties: the user SGPRs it enables, in preload order, and their sizes */
#define KD_SGPR_PRIVATE_SEGMENT_BUFFER	BIT(0)	/* 4 */
#define KD_SGPR_DISPATCH_PTR		BIT(1)	/* 2 */
#define KD_SGPR_QUEUE_PTR		BIT(2)	/* 2 */
#define KD_SGPR_KERNARG_PTR		BIT(3)	/* 2 */
#define KD_SGPR_DISPATCH_ID		BIT(4)	/* 2 */
#define KD_SGPR_FLAT_SCRATCH_INIT	BIT(5)	/* 2 */
#define KD_SGPR_PRIVATE_SEGMENT_SIZE	BIT(6)	/* 1 */
#define KD_WAVEFRONT_SIZE32		BIT(10)

/* compute_pgm_rsrc1 */
#define RSRC1_VGPRS(r)			((r) & 0x3f)
#define RSRC1_FLOAT_MODES(r)		(((r) >> 12) & 0xff)	/* round 32, 16/64; denorm 32, 16/64 */
#define RSRC1_DX10_CLAMP		BIT(21)
#define RSRC1_IEEE_MODE			BIT(23)
#define RSRC1_FP16_OVFL			BIT(26)
/* compute_pgm_rsrc2 */
#define RSRC2_SCRATCH_EN		BIT(0)
#define RSRC2_USER_SGPRS(r)		(((r) >> 1) & 0x1f)
#define RSRC2_WORKGROUP_ID_X		BIT(7)
#define RSRC2_WORKGROUP_ID_Y		BIT(8)
#define RSRC2_WORKGROUP_ID_Z		BIT(9)
#define RSRC2_WORKGROUP_INFO		BIT(10)
#define RSRC2_VGPR_WORKITEM_IDS(r)	(((r) >> 11) & 3)	/* 0: x, 1: x y, 2: x y z */
/* compute_pgm_rsrc3 (gfx90a): the first AccVGPR, in units of 4, minus one */
#define RSRC3_ACCUM_OFFSET(r)		((r) & 0x3f)

/* MODE (gfx9): float modes in 7:0, DX10_CLAMP 8, IEEE 9, FP16_OVFL 23 */
#define MODE_DX10_CLAMP			BIT(8)
#define MODE_IEEE			BIT(9)
#define MODE_FP16_OVFL			BIT(23)

/* hsa_kernel_dispatch_packet_t, byte offsets */
#define PKT_SETUP			2
#define PKT_WORKGROUP_SIZE		4	/* 3 x u16 */
#define PKT_GRID_SIZE			12	/* 3 x u32 */
#define PKT_PRIVATE_SEGMENT_SIZE	24
#define PKT_GROUP_SEGMENT_SIZE		28
#define PKT_KERNEL_OBJECT		32
#define PKT_KERNARG_ADDRESS		40

/* amd_queue_t: the scratch buffer descriptor ROCr keeps for the CP */
#define AMD_QUEUE_SCRATCH_RESOURCE	144

#define EMU_MAX_LDS			(64 << 10)
#define EMU_MAX_WG_WAVES		16	/* 1024 work-items */
#define EMU_WAVE_SLICE			256	/* instructions before the next wave's turn */
#define EMU_TLB_ENTRIES			16

struct emu_tlb_entry {
	u64 page;			/* GPU VA >> PAGE_SHIFT; 0: empty */
	u8 *host;			/* the page in the kernel's direct map */
	bool writable;
	struct emu_bo *bo;		/* referenced while cached */
};

/* What the shader core's memory callback needs for one pass */
struct emu_dispatch_mem {
	struct emu_vm *vm;
	struct emu_tlb_entry tlb[EMU_TLB_ENTRIES];
	unsigned int next;
};

static void emu_tlb_flush(struct emu_dispatch_mem *m)
{
	unsigned int i;

	for (i = 0; i < EMU_TLB_ENTRIES; i++) {
		if (m->tlb[i].bo)
			emu_bo_put(m->tlb[i].bo);
		m->tlb[i] = (struct emu_tlb_entry){};
	}
}

static u8 *emu_dispatch_map(void *ctx, u64 va, enum emu_mem_access access, u32 *room)
{
	struct emu_dispatch_mem *m = ctx;
	bool write = access == EMU_MEM_WRITE;
	u64 page = (va & EMU_GMC_HOLE_MASK) >> PAGE_SHIFT;
	struct emu_tlb_entry *e;
	struct emu_vm_seg seg = {};
	unsigned int i;

	for (i = 0; i < EMU_TLB_ENTRIES; i++) {
		e = &m->tlb[i];
		if (e->page == page && e->host && (e->writable || !write))
			goto hit;
	}
	/*
	 * Instruction fetches need only READABLE: the VM's EXECUTABLE bit is
	 * not checked, so a kernel's code may sit in any readable buffer.
	 */
	if (emu_vm_resolve(m->vm, va, write, &seg))
		return NULL;
	e = &m->tlb[m->next++ % EMU_TLB_ENTRIES];
	if (e->bo)
		emu_bo_put(e->bo);
	e->page = page;
	/* VA and BO offset are page aligned alike: mappings are whole pages */
	e->host = page_address(seg.bo->pages[seg.offset >> PAGE_SHIFT]);
	e->writable = write;
	e->bo = seg.bo;			/* the reference seg took moves here */
hit:
	*room = PAGE_SIZE - offset_in_page(va);
	return e->host + offset_in_page(va);
}

/*
 * One XCC's share of a dispatch: the workgroups x, x + n, x + 2n, ... of the
 * grid (n XCCs), and the waves of the one it runs.
 */
struct emu_xcc_run {
	u64 groups;			/* its share of the grid */
	u64 started;			/* of them, started so far */
	u32 nwaves;			/* of the workgroup in flight, its started - 1st */
	struct emu_wave waves[EMU_MAX_WG_WAVES];
	u32 (*vgprs)[EMU_WAVE_LANES];	/* every wave's registers, one block */
	u8 *lds;
	/* preempted: the waves are in this XCC's context save area, not here */
	u32 saved_waves;
	struct emu_cwsr_state cwsr;
};

/* A kernel dispatch in flight on a queue */
struct emu_dispatch {
	u64 packet_va;
	u64 pkt[8];			/* the packet as it was taken */
	u64 dispatch_id;
	u64 amd_queue;
	u64 start_ts;
	enum emu_isa_target isa;
	/* from the kernel descriptor */
	u64 entry;
	u32 rsrc1, rsrc2, rsrc3;
	u16 properties;
	u32 lds_bytes;
	u32 nvgpr, nagpr;
	u32 waves_max;			/* of a whole workgroup */
	/* the grid, in workgroups */
	u32 wg_size[3];
	u32 grid[3];
	u32 groups[3];
	u64 total_groups;
	u32 lds_alloc;			/* lds_bytes rounded to the save area's 512-byte units */
	u64 retired;
	bool preempted;
	u32 n_xcc;
	struct emu_xcc_run xcc[];
};

/* the linear index of XCC @x's @k-th workgroup */
static u64 emu_xcc_group(const struct emu_dispatch *d, u32 x, u64 k)
{
	return k * d->n_xcc + x;
}

/* workgroups started on every XCC, and waves saved */
static u64 emu_dispatch_started(const struct emu_dispatch *d)
{
	u64 n = 0;
	u32 x;

	for (x = 0; x < d->n_xcc; x++)
		n += d->xcc[x].started;
	return n;
}

static u32 emu_dispatch_saved_waves(const struct emu_dispatch *d)
{
	u32 n = 0, x;

	for (x = 0; x < d->n_xcc; x++)
		n += d->xcc[x].saved_waves;
	return n;
}

u64 emu_dispatch_instructions(struct emu_dispatch *d)
{
	return d ? d->retired : 0;
}

static u16 emu_pkt_u16(const struct emu_dispatch *d, unsigned int at)
{
	return ((const u16 *)d->pkt)[at / 2];
}

static u32 emu_pkt_u32(const struct emu_dispatch *d, unsigned int at)
{
	return ((const u32 *)d->pkt)[at / 4];
}

/* The shader core's target for @gpu's code */
static enum emu_isa_target emu_gpu_isa(const struct emu_gpu *gpu)
{
	switch (gpu->model->gfx_target_version) {
	case 90008:
		return EMU_ISA_GFX908;
	case 90010:
		return EMU_ISA_GFX90A;
	default:
		return EMU_ISA_GFX942;		/* 90402, the only other the presets have */
	}
}

void emu_dispatch_free(struct emu_dispatch *d)
{
	u32 x;

	if (!d)
		return;
	for (x = 0; x < d->n_xcc; x++) {
		kvfree(d->xcc[x].vgprs);
		kvfree(d->xcc[x].lds);
	}
	kvfree(d);
}

/*
 * Take the dispatch packet @pkt at @va.  Returns the dispatch, or an
 * ERR_PTR: -EFAULT if the kernel descriptor cannot be read, -ENOEXEC if it
 * asks for what the dispatcher cannot give (*why says what), -ENOMEM.
 */
struct emu_dispatch *emu_dispatch_begin(struct emu_queue *q, const u64 *pkt, u64 va, u64 dispatch_id,
					 u64 amd_queue, const char **why)
{
	struct emu_sdma_ctx x = { .gpu = q->pdd->gpu, .vm = q->pdd->vm };
	enum emu_isa_target isa = emu_gpu_isa(q->pdd->gpu);
	u32 n_xcc = max_t(u32, q->n_xcc, 1);
	u8 kd[KD_BYTES];
	struct emu_dispatch *d;
	u32 waves_max, regs, i;
	s64 entry_offset;

	/* every XCC's 16 waves with their working space */
	d = kvzalloc(struct_size(d, xcc, n_xcc), GFP_KERNEL);
	if (!d)
		return ERR_PTR(-ENOMEM);
	d->n_xcc = n_xcc;
	d->isa = isa;
	memcpy(d->pkt, pkt, sizeof(d->pkt));
	d->packet_va = va;
	d->dispatch_id = dispatch_id;
	d->amd_queue = amd_queue;
	d->start_ts = emu_gpu_clock_counter();
	if (emu_sdma_access(&x, pkt[PKT_KERNEL_OBJECT / 8], kd, sizeof(kd), false, 0)) {
		*why = "kernel descriptor not readable";
		emu_dispatch_free(d);
		return ERR_PTR(-EFAULT);
	}
	memcpy(&entry_offset, kd + KD_ENTRY_OFFSET, sizeof(entry_offset));
	memcpy(&d->rsrc3, kd + KD_PGM_RSRC3, sizeof(u32));
	memcpy(&d->rsrc1, kd + KD_PGM_RSRC1, sizeof(u32));
	memcpy(&d->rsrc2, kd + KD_PGM_RSRC2, sizeof(u32));
	memcpy(&d->properties, kd + KD_CODE_PROPERTIES, sizeof(u16));
	d->entry = pkt[PKT_KERNEL_OBJECT / 8] + entry_offset;

	for (i = 0; i < 3; i++) {
		d->wg_size[i] = emu_pkt_u16(d, PKT_WORKGROUP_SIZE + 2 * i);
		d->grid[i] = emu_pkt_u32(d, PKT_GRID_SIZE + 4 * i);
	}
	/* dimensions beyond the packet's are 1, as the CP takes them */
	for (i = (emu_pkt_u16(d, PKT_SETUP) & 3) ?: 1; i < 3; i++) {
		d->wg_size[i] = d->wg_size[i] ?: 1;
		d->grid[i] = d->grid[i] ?: 1;
	}
	d->lds_bytes = emu_pkt_u32(d, PKT_GROUP_SEGMENT_SIZE);
	regs = (RSRC1_VGPRS(d->rsrc1) + 1) * (emu_isa_unified_vgprs(isa) ? 8 : 4);
	if (emu_isa_unified_vgprs(isa)) {
		d->nvgpr = min((RSRC3_ACCUM_OFFSET(d->rsrc3) + 1) * 4, regs);
		d->nagpr = regs - d->nvgpr;
	} else {
		d->nvgpr = d->nagpr = regs;
	}
	waves_max = DIV_ROUND_UP(d->wg_size[0] * d->wg_size[1] * d->wg_size[2], EMU_WAVE_LANES);
	d->waves_max = waves_max;

	*why = NULL;
	if (!d->wg_size[0] || !d->wg_size[1] || !d->wg_size[2] || !d->grid[0] || !d->grid[1] || !d->grid[2])
		*why = "dispatch with an empty workgroup or grid";
	else if (waves_max > EMU_MAX_WG_WAVES)
		*why = "workgroup of more than 1024 work-items";
	else if (d->lds_bytes > EMU_MAX_LDS)
		*why = "workgroup needs more than 64 KiB of LDS";
	else if (d->properties & KD_WAVEFRONT_SIZE32)
		*why = "wave32 kernel on a wave64 GPU";
	else if ((d->rsrc2 & RSRC2_SCRATCH_EN) || emu_pkt_u32(d, PKT_PRIVATE_SEGMENT_SIZE))
		*why = "kernel needs scratch memory (the private segment is not emulated)";
	else if (d->nvgpr + d->nagpr > EMU_WAVE_MAX_VGPRS)
		*why = "kernel descriptor allocates more than 512 VGPRs";
	if (*why) {
		emu_dispatch_free(d);
		return ERR_PTR(-ENOEXEC);
	}
	for (i = 0; i < 3; i++)
		d->groups[i] = DIV_ROUND_UP(d->grid[i], d->wg_size[i]);
	d->total_groups = (u64)d->groups[0] * d->groups[1] * d->groups[2];
	d->lds_alloc = round_up(d->lds_bytes, 512);
	for (i = 0; i < n_xcc; i++) {
		struct emu_xcc_run *r = &d->xcc[i];

		r->groups = d->total_groups > i ? DIV_ROUND_UP(d->total_groups - i, n_xcc) : 0;
		if (!r->groups)
			continue;
		r->vgprs = kvmalloc_array((size_t)waves_max * (d->nvgpr + d->nagpr), sizeof(*r->vgprs),
					  GFP_KERNEL);
		r->lds = d->lds_bytes ? kvzalloc(d->lds_alloc, GFP_KERNEL) : NULL;
		if ((!r->vgprs && d->nvgpr + d->nagpr) || (d->lds_bytes && !r->lds)) {
			emu_dispatch_free(d);
			return ERR_PTR(-ENOMEM);
		}
	}
	return d;
}

/* The MODE register a wave starts with, from the descriptor's float settings */
static u32 emu_dispatch_mode(const struct emu_dispatch *d)
{
	u32 mode = RSRC1_FLOAT_MODES(d->rsrc1);

	if (d->rsrc1 & RSRC1_DX10_CLAMP)
		mode |= MODE_DX10_CLAMP;
	if (d->rsrc1 & RSRC1_IEEE_MODE)
		mode |= MODE_IEEE;
	if (d->rsrc1 & RSRC1_FP16_OVFL)
		mode |= MODE_FP16_OVFL;
	return mode;
}

static void emu_put_sgpr64(struct emu_wave *w, unsigned int *n, u64 v)
{
	if (*n + 2 > EMU_WAVE_SGPRS)
		return;
	w->sgpr[(*n)++] = lower_32_bits(v);
	w->sgpr[(*n)++] = upper_32_bits(v);
}

/* The user and system SGPRs the descriptor enables, in the ABI's order */
static void emu_dispatch_sgprs(struct emu_dispatch *d, struct emu_wave *w, const u32 *scratch_rsrc,
			       const u32 *id)
{
	unsigned int n = 0, i;

	if (d->properties & KD_SGPR_PRIVATE_SEGMENT_BUFFER)
		for (i = 0; i < 4; i++)
			w->sgpr[n++] = scratch_rsrc[i];
	if (d->properties & KD_SGPR_DISPATCH_PTR)
		emu_put_sgpr64(w, &n, d->packet_va);
	if (d->properties & KD_SGPR_QUEUE_PTR)
		emu_put_sgpr64(w, &n, d->amd_queue);
	if (d->properties & KD_SGPR_KERNARG_PTR)
		emu_put_sgpr64(w, &n, d->pkt[PKT_KERNARG_ADDRESS / 8]);
	if (d->properties & KD_SGPR_DISPATCH_ID)
		emu_put_sgpr64(w, &n, d->dispatch_id);
	if (d->properties & KD_SGPR_FLAT_SCRATCH_INIT)
		emu_put_sgpr64(w, &n, 0);	/* no scratch: checked at begin */
	if (d->properties & KD_SGPR_PRIVATE_SEGMENT_SIZE)
		w->sgpr[n++] = 0;
	/* the system SGPRs follow the user SGPRs the descriptor counts */
	n = max_t(unsigned int, n, RSRC2_USER_SGPRS(d->rsrc2));
	if (d->rsrc2 & RSRC2_WORKGROUP_ID_X)
		w->sgpr[n++] = id[0];
	if (d->rsrc2 & RSRC2_WORKGROUP_ID_Y)
		w->sgpr[n++] = id[1];
	if (d->rsrc2 & RSRC2_WORKGROUP_ID_Z)
		w->sgpr[n++] = id[2];
	if (d->rsrc2 & RSRC2_WORKGROUP_INFO)
		w->sgpr[n++] = 0;
}

/* The x, y, z ids of the workgroup of linear index @g (x fastest) */
static void emu_dispatch_group_id(const struct emu_dispatch *d, u64 g, u32 id[3])
{
	id[0] = g % d->groups[0];
	id[1] = (g / d->groups[0]) % d->groups[1];
	id[2] = g / ((u64)d->groups[0] * d->groups[1]);
}

/* Start XCC @x's next workgroup: its waves, registers preloaded, and a zeroed LDS */
static int emu_dispatch_start_group(struct emu_dispatch *d, u32 x, struct emu_sdma_ctx *sx)
{
	struct emu_xcc_run *r = &d->xcc[x];
	u32 scratch_rsrc[4] = {}, id[3], size[3], items, wave, lane, i, regs = d->nvgpr + d->nagpr;
	u64 g = emu_xcc_group(d, x, r->started++);

	if (d->properties & KD_SGPR_PRIVATE_SEGMENT_BUFFER &&
	    emu_sdma_access(sx, d->amd_queue + AMD_QUEUE_SCRATCH_RESOURCE, scratch_rsrc, sizeof(scratch_rsrc),
			    false, 0))
		return -EFAULT;
	emu_dispatch_group_id(d, g, id);
	for (i = 0; i < 3; i++)
		size[i] = min(d->wg_size[i], d->grid[i] - id[i] * d->wg_size[i]);
	items = size[0] * size[1] * size[2];
	r->nwaves = DIV_ROUND_UP(items, EMU_WAVE_LANES);
	if (r->lds)
		memset(r->lds, 0, d->lds_bytes);
	for (wave = 0; wave < r->nwaves; wave++) {
		struct emu_wave *w = &r->waves[wave];

		*w = (struct emu_wave){
			.pc = d->entry,
			.mode = emu_dispatch_mode(d),
			.nvgpr = d->nvgpr,
			.nagpr = d->nagpr,
			.vgpr = r->vgprs + (size_t)wave * regs,
			.lds = r->lds,
			.lds_size = d->lds_bytes,
			.lds_aperture = EMU_LDS_BASE,
			.scratch_aperture = EMU_SCRATCH_BASE,
			.isa = d->isa,
			.xcc_id = x,
		};
		memset(w->vgpr, 0, regs * sizeof(*w->vgpr));
		emu_dispatch_sgprs(d, w, scratch_rsrc, id);
		emu_cwsr_spi_ttmps(w, id, wave);
		for (lane = 0; lane < EMU_WAVE_LANES; lane++) {
			u32 item = wave * EMU_WAVE_LANES + lane, ix, iy, iz;

			if (item >= items)
				break;
			w->exec |= 1ull << lane;
			ix = item % size[0];
			iy = (item / size[0]) % size[1];
			iz = item / (size[0] * size[1]);
			if (emu_isa_unified_vgprs(d->isa)) {
				w->vgpr[0][lane] = ix | iy << 10 | iz << 20;
				continue;
			}
			w->vgpr[0][lane] = ix;
			if (RSRC2_VGPR_WORKITEM_IDS(d->rsrc2) >= 1 && regs > 1)
				w->vgpr[1][lane] = iy;
			if (RSRC2_VGPR_WORKITEM_IDS(d->rsrc2) >= 2 && regs > 2)
				w->vgpr[2][lane] = iz;
		}
	}
	return 0;
}

/*
 * One slice of XCC @x: each of its running waves runs a slice of
 * instructions; a workgroup that has ended makes room for the next, also at
 * the end of a slice, so that a queue stopped between two slices has its
 * waves resident, as a GPU's would be.  *done counts the instructions.
 * Returns EMU_DISPATCH_DONE when the XCC's share has ended.
 */
static enum emu_dispatch_status emu_xcc_slice(struct emu_dispatch *d, u32 x, struct emu_sdma_ctx *sx,
					      const struct emu_shader_mem *mem, u64 *done,
					      struct emu_dispatch_fault *fault)
{
	struct emu_xcc_run *r = &d->xcc[x];
	u32 i, ended = 0, waiting = 0;

	if (!r->nwaves) {
		if (r->started == r->groups)
			return EMU_DISPATCH_DONE;
		if (emu_dispatch_start_group(d, x, sx)) {
			*fault = (struct emu_dispatch_fault){ .state = EMU_WAVE_MEMVIOL,
				.addr = d->amd_queue + AMD_QUEUE_SCRATCH_RESOURCE, .pc = d->entry };
			return EMU_DISPATCH_FAULT;
		}
	}
	for (i = 0; i < r->nwaves; i++) {
		struct emu_wave *w = &r->waves[i];

		if (w->state == EMU_WAVE_RUNNING)
			*done += emu_wave_run(w, mem, EMU_WAVE_SLICE);
		if (w->state == EMU_WAVE_ILLEGAL || w->state == EMU_WAVE_MEMVIOL) {
			*fault = (struct emu_dispatch_fault){ .state = w->state,
				.pc = w->fault_pc, .addr = w->fault_addr };
			return EMU_DISPATCH_FAULT;
		}
		ended += w->state == EMU_WAVE_ENDED;
		waiting += w->state == EMU_WAVE_BARRIER;
	}
	if (ended == r->nwaves) {
		r->nwaves = 0;
		if (r->started == r->groups)
			return EMU_DISPATCH_DONE;
		if (emu_dispatch_start_group(d, x, sx)) {
			*fault = (struct emu_dispatch_fault){ .state = EMU_WAVE_MEMVIOL,
				.addr = d->amd_queue + AMD_QUEUE_SCRATCH_RESOURCE, .pc = d->entry };
			return EMU_DISPATCH_FAULT;
		}
		return EMU_DISPATCH_RUNNING;
	}
	/* every wave still running has reached the barrier: all go on */
	if (waiting && waiting + ended == r->nwaves)
		for (i = 0; i < r->nwaves; i++)
			if (r->waves[i].state == EMU_WAVE_BARRIER)
				r->waves[i].state = EMU_WAVE_RUNNING;
	return EMU_DISPATCH_RUNNING;
}

/*
 * Run @d for about @budget instructions, the XCCs a slice each in turn.
 * Returns EMU_DISPATCH_RUNNING with work left, EMU_DISPATCH_DONE when the
 * grid's last workgroup has ended, or EMU_DISPATCH_FAULT with *fault saying
 * which wave stopped how.
 */
enum emu_dispatch_status emu_dispatch_run(struct emu_dispatch *d, struct emu_queue *q, u64 budget,
					  struct emu_dispatch_fault *fault)
{
	struct emu_sdma_ctx sx = { .gpu = q->pdd->gpu, .vm = q->pdd->vm };
	struct emu_dispatch_mem m = { .vm = q->pdd->vm };
	const struct emu_shader_mem mem = { .ctx = &m, .map = emu_dispatch_map };
	enum emu_dispatch_status status = EMU_DISPATCH_RUNNING, st;
	u64 done = 0;
	u32 x, running;

	for (;;) {
		running = 0;
		for (x = 0; x < d->n_xcc; x++) {
			st = emu_xcc_slice(d, x, &sx, &mem, &done, fault);
			if (st == EMU_DISPATCH_FAULT) {
				status = st;
				goto out;
			}
			running += st == EMU_DISPATCH_RUNNING;
		}
		if (!running) {
			status = EMU_DISPATCH_DONE;
			break;
		}
		if (done >= budget)
			break;
		cond_resched();
	}
out:
	d->retired += done;
	atomic64_add(done, &q->pdd->gpu->shader_instructions);
	emu_tlb_flush(&m);
	return status;
}

u64 emu_dispatch_start_ts(const struct emu_dispatch *d)
{
	return d->start_ts;
}

u64 emu_dispatch_completion_signal(const struct emu_dispatch *d)
{
	return d->pkt[7];
}

/*
 * A dispatch in the queue's MQD image: everything the waves' own state in the
 * context save area does not hold.  A real MQD keeps the dispatcher's
 * progress in registers of its own; the emulator's MQD is its own layout
 * (emu_queue.c), and this record is part of it, one per XCC in that XCC's
 * MQD.
 */
#define EMU_DISPATCH_RECORD_MAGIC	0x50534944	/* "DISP" */

struct emu_dispatch_record {
	u32 magic;
	u32 nwaves;			/* of the XCC's workgroup in flight, saved by CWSR */
	u64 pkt[8];
	u64 packet_va;
	u64 dispatch_id;
	u64 amd_queue;
	u64 start_ts;
	u64 started;			/* of the XCC's workgroups */
	u64 retired;
	u32 cntl_stack_offset;		/* the control stack and wave area CWSR filled */
	u32 wg_state_offset;
	u32 xcc;			/* which XCC's, of how many */
	u32 n_xcc;
};

size_t emu_dispatch_record_size(void)
{
	return sizeof(struct emu_dispatch_record);
}

/* XCC @x's record of @d (NULL: no dispatch in flight) into @buf */
void emu_dispatch_save_record(const struct emu_dispatch *d, u32 x, void *buf)
{
	struct emu_dispatch_record *r = buf;

	memset(r, 0, sizeof(*r));
	if (!d || x >= d->n_xcc)
		return;
	r->magic = EMU_DISPATCH_RECORD_MAGIC;
	r->nwaves = d->preempted ? d->xcc[x].saved_waves : 0;
	r->cntl_stack_offset = d->xcc[x].cwsr.cntl_stack_offset;
	r->wg_state_offset = d->xcc[x].cwsr.wg_state_offset;
	memcpy(r->pkt, d->pkt, sizeof(r->pkt));
	r->packet_va = d->packet_va;
	r->dispatch_id = d->dispatch_id;
	r->amd_queue = d->amd_queue;
	r->start_ts = d->start_ts;
	r->started = d->xcc[x].started;
	r->retired = d->retired;
	r->xcc = x;
	r->n_xcc = d->n_xcc;
}

/*
 * The dispatch a restored MQD carries: taken again from its packet (the
 * kernel descriptor is back in memory by the time the queues resume), with
 * each XCC's progress and CWSR state from its record.  NULL if XCC 0's
 * record is empty; an ERR_PTR if the records cannot be the state of one
 * dispatch of this queue, *why saying why.
 */
static struct emu_dispatch *emu_dispatch_from_records(struct emu_queue *q, const char **why)
{
	const struct emu_dispatch_record *r0 = emu_queue_mqd_record(q, 0), *r;
	struct emu_dispatch *d;
	u32 x;

	if (!r0 || r0->magic != EMU_DISPATCH_RECORD_MAGIC)
		return NULL;
	d = emu_dispatch_begin(q, r0->pkt, r0->packet_va, r0->dispatch_id, r0->amd_queue, why);
	if (IS_ERR(d))
		return d;
	for (x = 0; x < d->n_xcc; x++) {
		struct emu_xcc_run *run = &d->xcc[x];

		r = emu_queue_mqd_record(q, x);
		if (!r || r->magic != EMU_DISPATCH_RECORD_MAGIC || r->xcc != x || r->n_xcc != d->n_xcc ||
		    r->dispatch_id != r0->dispatch_id || memcmp(r->pkt, r0->pkt, sizeof(r->pkt))) {
			*why = "MQD: the XCCs' records are not of one dispatch";
			emu_dispatch_free(d);
			return ERR_PTR(-EINVAL);
		}
		if (r->started > run->groups || r->nwaves > d->waves_max || (r->nwaves && !r->started)) {
			*why = "MQD: dispatch progress out of its grid";
			emu_dispatch_free(d);
			return ERR_PTR(-EINVAL);
		}
		run->started = r->started;
		run->saved_waves = r->nwaves;
		run->cwsr.cntl_stack_offset = r->cntl_stack_offset;
		run->cwsr.wg_state_offset = r->wg_state_offset;
	}
	d->start_ts = r0->start_ts;
	d->retired = r0->retired;
	d->preempted = true;
	return d;
}

/* XCC @x's save area: the slice of the queue's context save area, and of its control stacks */
struct emu_xcc_area {
	struct emu_cwsr_area area;
	u64 save_va;			/* the slice's start: the thunk's header, then the wave area */
	u8 *ctl_stack;
};

static int emu_xcc_area(const struct emu_queue *q, const struct emu_dispatch *d, u32 x, struct emu_xcc_area *xa)
{
	if (!q->ctx_save_addr || !q->ctl_stack || !q->ctl_stack_size)
		return -ENOSPC;
	xa->save_va = q->ctx_save_addr + (u64)x * q->ctx_save_size;
	xa->ctl_stack = q->ctl_stack + (size_t)x * q->ctl_stack_size;
	return emu_cwsr_area_init(&xa->area, d->isa, q->ctx_save_size, q->ctl_stack_size);
}

/* XCC @x's waves into its save area; the bytes written to *bytes */
static int emu_xcc_preempt(struct emu_queue *q, struct emu_dispatch *d, u32 x, u32 *bytes, const char **why)
{
	struct emu_sdma_ctx sx = { .gpu = q->pdd->gpu, .vm = q->pdd->vm };
	struct emu_xcc_run *r = &d->xcc[x];
	struct emu_cwsr_group group = {};
	struct emu_xcc_area xa;
	u32 i, n = 0;
	u8 *buf;
	int ret;

	*bytes = 0;
	/* waves that ended are gone from the hardware too */
	for (i = 0; i < r->nwaves; i++) {
		if (r->waves[i].state == EMU_WAVE_ENDED)
			continue;
		if (n != i) {
			/* the ended wave's register block goes to the end with it */
			u32 (*spare)[EMU_WAVE_LANES] = r->waves[n].vgpr;

			r->waves[n] = r->waves[i];
			r->waves[i].vgpr = spare;
			r->waves[i].state = EMU_WAVE_ENDED;
		}
		n++;
	}
	r->nwaves = n;
	r->saved_waves = 0;
	if (!n)
		return 0;
	*why = "no context save area to save the waves in";
	ret = emu_xcc_area(q, d, x, &xa);
	if (ret)
		return ret;
	group = (struct emu_cwsr_group){ .first_wave = 0, .n_waves = n, .lds = r->lds, .lds_size = d->lds_alloc };
	emu_dispatch_group_id(d, emu_xcc_group(d, x, r->started - 1), group.id);
	*why = "the waves do not fit the context save area";
	ret = emu_cwsr_encode_size(&xa.area, r->waves, n, &group, 1, bytes);
	if (ret)
		return ret;
	buf = kvmalloc(*bytes, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	ret = emu_cwsr_encode(&xa.area, r->waves, n, &group, 1, xa.ctl_stack, buf, &r->cwsr);
	*why = "context save area not writable through the GPU VM";
	if (!ret)
		ret = emu_sdma_access(&sx, xa.save_va + q->ctl_stack_size, buf, *bytes, true, 0);
	kvfree(buf);
	if (ret)
		return ret;
	r->saved_waves = n;
	r->nwaves = 0;
	return 0;
}

/*
 * The queue stops (KFD evicts it, CRIU pauses it): as CWSR does, the waves
 * of each XCC's workgroup in flight stop at an instruction boundary (they are
 * between slices) and go into that XCC's control stack and context save
 * area; the dispatcher keeps only how far the grid has got.  0, or a
 * negative errno with *why: the queue cannot keep its waves (no save area,
 * or one the GPU VM cannot write), which on hardware is a fault of the queue.
 */
int emu_dispatch_preempt(struct emu_queue *q, const char **why)
{
	struct emu_dispatch *d = q->dispatch;
	u32 x, bytes, total = 0, xccs = 0;
	int ret;

	if (!d || d->preempted)
		return 0;
	d->preempted = true;
	for (x = 0; x < d->n_xcc; x++) {
		ret = emu_xcc_preempt(q, d, x, &bytes, why);
		if (ret)
			return ret;
		total += bytes;
		xccs += d->xcc[x].saved_waves != 0;
	}
	if (!xccs)
		return 0;
	if (d->n_xcc > 1)
		pr_info(EMU_NAME ": [cwsr] queue %u (GPU %u): dispatch %llu preempted in workgroup %llu of %llu, %u waves saved (%u bytes) on %u of %u XCCs\n",
			q->id, q->pdd->gpu->index, d->dispatch_id, emu_dispatch_started(d), d->total_groups,
			emu_dispatch_saved_waves(d), total, xccs, d->n_xcc);
	else
		pr_info(EMU_NAME ": [cwsr] queue %u (GPU %u): dispatch %llu preempted in workgroup %llu of %llu, %u waves saved (%u bytes)\n",
			q->id, q->pdd->gpu->index, d->dispatch_id, emu_dispatch_started(d), d->total_groups,
			emu_dispatch_saved_waves(d), total);
	return 0;
}

/* XCC @x's waves back from its save area, @scanned room for a workgroup's */
static int emu_xcc_restore(struct emu_queue *q, struct emu_dispatch *d, u32 x, struct emu_wave *scanned,
			   const char **why)
{
	struct emu_sdma_ctx sx = { .gpu = q->pdd->gpu, .vm = q->pdd->vm };
	struct emu_xcc_run *r = &d->xcc[x];
	struct emu_cwsr_group group = {};
	u32 i, n_groups, n_waves, used, regs = d->nvgpr + d->nagpr;
	struct emu_xcc_area xa;
	u8 *buf;
	int ret;

	*why = "control stack does not describe the waves saved";
	ret = emu_xcc_area(q, d, x, &xa);
	if (!ret)
		ret = emu_cwsr_state_check(&xa.area, &r->cwsr);
	if (!ret)
		ret = emu_cwsr_scan(&xa.area, xa.ctl_stack, &r->cwsr, &group, 1, scanned, EMU_MAX_WG_WAVES,
				    &n_groups, &n_waves);
	if (ret)
		return ret;
	if (n_groups != 1 || n_waves != r->saved_waves || n_waves > d->waves_max ||
	    group.lds_size != (r->lds ? d->lds_alloc : 0))
		return -EINVAL;
	for (i = 0; i < n_waves; i++)
		if (scanned[i].nvgpr + scanned[i].nagpr != regs || scanned[i].isa != d->isa)
			return -EINVAL;
	used = emu_cwsr_save_area_used(&xa.area, &r->cwsr);
	buf = kvmalloc(used, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	*why = "context save area not readable through the GPU VM";
	ret = emu_sdma_access(&sx, xa.save_va + q->ctl_stack_size, buf, used, false, 0);
	if (!ret) {
		*why = "context save area does not hold the waves saved";
		for (i = 0; i < n_waves; i++)
			scanned[i].vgpr = r->vgprs + (size_t)i * regs;
		group.lds = r->lds;
		ret = emu_cwsr_decode(&xa.area, xa.ctl_stack, &r->cwsr, buf, used, &group, 1, scanned, n_waves);
	}
	kvfree(buf);
	if (ret)
		return ret;
	for (i = 0; i < n_waves; i++) {
		r->waves[i] = scanned[i];
		r->waves[i].lds_aperture = EMU_LDS_BASE;
		r->waves[i].scratch_aperture = EMU_SCRATCH_BASE;
		r->waves[i].xcc_id = x;
	}
	r->nwaves = n_waves;
	r->saved_waves = 0;
	emu_cwsr_state_empty(&xa.area, &r->cwsr);
	return 0;
}

/*
 * The queue runs again (after an eviction, an unpaused dump, or a restore on
 * this or another node): the waves come back from each XCC's control stack
 * and save area and go on from where they stopped.  0, or a negative errno
 * with *why: a save area or control stack does not hold the waves the
 * dispatch left there (the process wrote over it, or the images were
 * damaged) — the queue faults rather than run something else.
 */
int emu_dispatch_resume(struct emu_queue *q, const char **why)
{
	struct emu_dispatch *d;
	struct emu_wave *scanned;
	u32 x, waves, xccs = 0;
	int ret = 0;

	if (!q->dispatch) {
		d = emu_dispatch_from_records(q, why);
		/* taken: a later resume must not take it again */
		for (x = 0; x < q->n_xcc; x++)
			if (emu_queue_mqd_record(q, x))
				((struct emu_dispatch_record *)emu_queue_mqd_record(q, x))->magic = 0;
		if (IS_ERR(d))
			return PTR_ERR(d);
		q->dispatch = d;
	}
	d = q->dispatch;
	if (!d || !d->preempted)
		return 0;
	d->preempted = false;
	waves = emu_dispatch_saved_waves(d);
	if (!waves)
		return 0;
	scanned = kcalloc(EMU_MAX_WG_WAVES, sizeof(*scanned), GFP_KERNEL);
	if (!scanned)
		return -ENOMEM;
	for (x = 0; x < d->n_xcc && !ret; x++) {
		if (!d->xcc[x].saved_waves)
			continue;
		ret = emu_xcc_restore(q, d, x, scanned, why);
		xccs++;
	}
	kfree(scanned);
	if (ret)
		return ret;
	if (d->n_xcc > 1)
		pr_info(EMU_NAME ": [cwsr] queue %u (GPU %u): dispatch %llu resumed in workgroup %llu of %llu, %u waves restored on %u of %u XCCs\n",
			q->id, q->pdd->gpu->index, d->dispatch_id, emu_dispatch_started(d), d->total_groups, waves,
			xccs, d->n_xcc);
	else
		pr_info(EMU_NAME ": [cwsr] queue %u (GPU %u): dispatch %llu resumed in workgroup %llu of %llu, %u waves restored\n",
			q->id, q->pdd->gpu->index, d->dispatch_id, emu_dispatch_started(d), d->total_groups, waves);
	return 0;
}

/*
 * GET_QUEUE_WAVE_STATE: XCC @x's MQD control stack offset and wave state end
 * of the last preemption; an empty queue's (both ctl_stack_size) when no wave
 * was saved there.
 */
void emu_dispatch_wave_state(struct emu_queue *q, u32 x, u32 *cntl_stack_offset, u32 *wg_state_offset)
{
	struct emu_dispatch *d = q->dispatch;

	*cntl_stack_offset = *wg_state_offset = q->ctl_stack_size;
	if (d && d->preempted && x < d->n_xcc && d->xcc[x].saved_waves) {
		*cntl_stack_offset = d->xcc[x].cwsr.cntl_stack_offset;
		*wg_state_offset = d->xcc[x].cwsr.wg_state_offset;
	}
}

/*
 * The end of a queue's line in debugfs: its dispatch in flight, the
 * workgroups started so far of the grid's, whether its waves are in the
 * context save areas, and (several XCCs) on how many XCCs a workgroup is in
 * flight or saved.
 */
void emu_dispatch_show(struct seq_file *m, const struct emu_dispatch *d)
{
	u32 x, busy = 0;

	if (!d) {
		seq_puts(m, " dispatch none\n");
		return;
	}
	for (x = 0; x < d->n_xcc; x++)
		busy += d->xcc[x].nwaves || (d->preempted && d->xcc[x].saved_waves);
	seq_printf(m, " dispatch %llu workgroups %llu of %llu waves_saved %u instructions %llu",
		   d->dispatch_id, emu_dispatch_started(d), d->total_groups,
		   d->preempted ? emu_dispatch_saved_waves(d) : 0, d->retired);
	if (d->n_xcc > 1)
		seq_printf(m, " xccs_busy %u of %u", busy, d->n_xcc);
	seq_putc(m, '\n');
}
