// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: a queue's waves into and out of its context save area, in the
 * gfx9 layout (emu_cwsr.h says which parts are the hardware's and which are
 * ours).
 *
 * The control stack is walked one workgroup at a time (emu_cwsr_next_group),
 * and every reader goes through that walk, so the structural checks — entry
 * kinds, first/last pairing, register and LDS allocations, records tiling the
 * wave area exactly — live in one place.
 */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#else
#include <errno.h>
#include <string.h>
#endif

#include "emu_cwsr.h"

/* control stack words (ROCdbgapi's compute_relaunch_is_event/is_state) */
#define CTL_EVENT		(1u << 30)
#define CTL_STATE		(1u << 31)

/* RELAUNCH_WAVE: scratch scoreboard [8:0], shader engine, scratch_en [15] ... */
#define WAVE_LAST		(1u << 16)
#define WAVE_FIRST		(1u << 17)
#define WAVE_DEFINED		0x0003ffffu

/* RELAUNCH_STATE */
#define STATE_VGPRS_SHIFT	0
#define STATE_SGPRS_SHIFT	6
#define STATE_LDS_SHIFT		9
#define STATE_ACCUM_SHIFT	24	/* gfx90a */
#define STATE_SGPR_BLOCKS	8	/* what the encoder always saves */

/* ours: the firmware's two words, and the last 64 bytes of a record */
#define FW_MARKER		0x63554d45u	/* "EMUc" */
#define EXTRA_MAGIC		0x77554d45u	/* "EMUw" */

#define VGPR_BYTES		(EMU_WAVE_LANES * 4)
#define HWREG_BYTES		64
#define TTMP_BYTES		64
#define EXTRA_BYTES		64
#define LDS_GRANULE		512

/* the hardware registers' slots, in dwords from the block's start */
enum {
	HW_M0, HW_PC_LO, HW_PC_HI, HW_EXEC_LO, HW_EXEC_HI, HW_STATUS,
	HW_TRAPSTS, HW_XNACK_LO, HW_XNACK_HI, HW_MODE, HW_USED
};

/* PC_HI: PC[47:32]; the handler keeps IB_STS replay state in [31:26] */
#define PC_HI_ADDR		0x0000ffffu
#define PC_HI_REPLAY		0xfc000000u

/* ttmp11[5:0]: the wave's position in its workgroup (SPI debug setup) */
#define TTMP11_POSITION		0x3fu

/* where a record's parts are, from its lowest byte */
struct emu_cwsr_geom {
	u32 varch;		/* VGPRs saved */
	u32 vacc;		/* AccVGPRs saved */
	u32 nsgpr;		/* SGPRs saved */
	u32 lds;		/* LDS bytes in this record (first wave only) */
};

static u32 geom_acc_at(const struct emu_cwsr_geom *g)
{
	return g->varch * VGPR_BYTES;
}

static u32 geom_sgpr_at(const struct emu_cwsr_geom *g)
{
	return (g->varch + g->vacc) * VGPR_BYTES;
}

static u32 geom_hwreg_at(const struct emu_cwsr_geom *g)
{
	return geom_sgpr_at(g) + g->nsgpr * 4;
}

static u32 geom_ttmp_at(const struct emu_cwsr_geom *g)
{
	return geom_hwreg_at(g) + HWREG_BYTES;
}

static u32 geom_lds_at(const struct emu_cwsr_geom *g)
{
	return geom_ttmp_at(g) + TTMP_BYTES;
}

static u32 geom_extra_at(const struct emu_cwsr_geom *g)
{
	return geom_lds_at(g) + g->lds;
}

static u32 geom_size(const struct emu_cwsr_geom *g)
{
	return geom_extra_at(g) + EXTRA_BYTES;
}

static u32 get32(const u8 *p)
{
	return p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

static void put32(u8 *p, u32 v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static u64 get64(const u8 *p)
{
	return get32(p) | (u64)get32(p + 4) << 32;
}

static void put64(u8 *p, u64 v)
{
	put32(p, v);
	put32(p + 4, v >> 32);
}

static u32 round_up_u32(u32 v, u32 granule)
{
	return (v + granule - 1) / granule * granule;
}

static bool isa_known(enum emu_isa_target isa)
{
	return isa == EMU_ISA_GFX908 || isa == EMU_ISA_GFX90A || isa == EMU_ISA_GFX942;
}

/* ---- sizes and the area ------------------------------------------------- */

/* kfd_queue.c: VGPR 0x80000 (gfx908, gfx90a, gfx942), SGPR 0x4000, LDS 0x10000, HWREG 0x1000 */
#define WG_DATA_PER_CU		(0x80000 + 0x4000 + 0x10000 + 0x1000)
#define CTL_BYTES_PER_WAVE	8	/* gfx9: one wave and one state word */
#define DEBUG_BYTES_PER_WAVE	32
#define DEBUG_BYTES_ALIGN	64

int emu_cwsr_sizes(enum emu_isa_target isa, u32 simd_count, u32 simd_per_cu,
		   u32 array_count, u32 simd_arrays_per_engine,
		   struct emu_cwsr_sizes *s)
{
	u64 cu, waves, ctl, wg;

	if (!isa_known(isa) || !simd_per_cu || !simd_arrays_per_engine)
		return -EINVAL;
	cu = simd_count / simd_per_cu;
	waves = (u64)array_count / simd_arrays_per_engine * 512;
	if (cu * 40 < waves)
		waves = cu * 40;
	ctl = (EMU_CWSR_HEADER_SIZE + waves * CTL_BYTES_PER_WAVE + 8 +
	       EMU_CWSR_PAGE_SIZE - 1) / EMU_CWSR_PAGE_SIZE * EMU_CWSR_PAGE_SIZE;
	wg = (cu * WG_DATA_PER_CU + EMU_CWSR_PAGE_SIZE - 1) /
	     EMU_CWSR_PAGE_SIZE * EMU_CWSR_PAGE_SIZE;
	if (!cu || ctl + wg > 0xffffffffull)
		return -EINVAL;
	s->cu_num = cu;
	s->wave_num = waves;
	s->ctl_stack_size = ctl;
	s->wg_data_size = wg;
	s->ctx_save_size = ctl + wg;
	s->debug_memory_size = round_up_u32(waves * DEBUG_BYTES_PER_WAVE, DEBUG_BYTES_ALIGN);
	return 0;
}

int emu_cwsr_area_init(struct emu_cwsr_area *a, enum emu_isa_target isa,
		       u32 ctx_save_size, u32 ctl_stack_size)
{
	if (!isa_known(isa) || ctl_stack_size % 4 ||
	    ctl_stack_size < EMU_CWSR_HEADER_SIZE + 4 * EMU_CWSR_FW_WORDS ||
	    ctl_stack_size > EMU_CWSR_MAX_CTL_STACK || ctx_save_size < ctl_stack_size)
		return -EINVAL;
	a->isa = isa;
	a->ctl_stack_size = ctl_stack_size;
	a->wave_area_end = ctx_save_size;
	return 0;
}

int emu_cwsr_state_check(const struct emu_cwsr_area *a, const struct emu_cwsr_state *st)
{
	if (st->cntl_stack_offset % 4 || st->wg_state_offset % 4 ||
	    st->cntl_stack_offset < EMU_CWSR_HEADER_SIZE ||
	    st->cntl_stack_offset > a->ctl_stack_size ||
	    st->wg_state_offset < a->ctl_stack_size ||
	    st->wg_state_offset > a->wave_area_end)
		return -EINVAL;
	/* an empty control stack has no waves, and waves need their entries */
	if ((st->cntl_stack_offset == a->ctl_stack_size) !=
	    (st->wg_state_offset == a->ctl_stack_size))
		return -EINVAL;
	return 0;
}

void emu_cwsr_wave_state_header(const struct emu_cwsr_area *a,
				const struct emu_cwsr_state *st, u8 out[16])
{
	put32(out, st->cntl_stack_offset);
	put32(out + 4, emu_cwsr_ctl_stack_used(a, st));
	put32(out + 8, st->wg_state_offset);
	put32(out + 12, emu_cwsr_save_area_used(a, st));
}

void emu_cwsr_spi_ttmps(struct emu_wave *w, const u32 group_id[3], u32 position)
{
	w->ttmp[8] = group_id[0];
	w->ttmp[9] = group_id[1];
	w->ttmp[10] = group_id[2];
	w->ttmp[11] = (w->ttmp[11] & ~TTMP11_POSITION) | (position & TTMP11_POSITION);
}

/* ---- register allocations ----------------------------------------------- */

/* The allocation the hardware would have given @w (emu_cwsr.h: granules). */
static int geom_of_wave(enum emu_isa_target isa, const struct emu_wave *w,
			struct emu_cwsr_geom *g)
{
	u32 varch, total;

	if (w->nvgpr > 256 || w->nagpr > 256)
		return -EINVAL;
	g->nsgpr = EMU_CWSR_SAVED_SGPRS;
	g->lds = 0;
	if (emu_isa_unified_vgprs(isa)) {
		varch = round_up_u32(w->nvgpr ? w->nvgpr : 1, 4);
		total = round_up_u32(varch + w->nagpr, 8);
		if (total - varch > 256)
			return -EINVAL;
		g->varch = varch;
		g->vacc = total - varch;
	} else {
		/* gfx908 allocates its two files alike */
		varch = w->nvgpr > w->nagpr ? w->nvgpr : w->nagpr;
		g->varch = round_up_u32(varch ? varch : 1, 4);
		g->vacc = g->varch;
	}
	return 0;
}

static u32 state_word(enum emu_isa_target isa, const struct emu_cwsr_geom *g, u32 lds)
{
	u32 word = CTL_STATE | (STATE_SGPR_BLOCKS - 1) << STATE_SGPRS_SHIFT |
		   lds / LDS_GRANULE << STATE_LDS_SHIFT;

	if (emu_isa_unified_vgprs(isa))
		return word | ((g->varch + g->vacc) / 8 - 1) << STATE_VGPRS_SHIFT |
		       (g->varch / 4 - 1) << STATE_ACCUM_SHIFT;
	return word | (g->varch / 4 - 1) << STATE_VGPRS_SHIFT;
}

/* A RELAUNCH_STATE read back; the LDS it gives applies to a first wave. */
static int geom_of_state(enum emu_isa_target isa, u32 word, struct emu_cwsr_geom *g)
{
	u32 vfield = word >> STATE_VGPRS_SHIFT & 0x3f;
	u32 sfield = word >> STATE_SGPRS_SHIFT & 0x7;
	u32 lds, defined;

	if (emu_isa_unified_vgprs(isa)) {
		u32 total = (vfield + 1) * 8;

		defined = CTL_STATE | 0x3f000000u | 0x0001ffffu;
		lds = word >> STATE_LDS_SHIFT & 0xff;
		g->varch = ((word >> STATE_ACCUM_SHIFT & 0x3f) + 1) * 4;
		if (g->varch > total || total - g->varch > 256)
			return -EINVAL;
		g->vacc = total - g->varch;
	} else {
		defined = CTL_STATE | 0x0003ffffu;
		lds = word >> STATE_LDS_SHIFT & 0x1ff;
		g->varch = (vfield + 1) * 4;
		g->vacc = g->varch;
	}
	if (word & ~defined)
		return -EINVAL;
	/* at least the SGPRs that VCC and FLAT_SCRATCH alias */
	if (sfield < 1)
		return -EINVAL;
	g->nsgpr = (sfield + 1) * 16 - 16;
	g->lds = lds * LDS_GRANULE;
	if (g->lds > EMU_CWSR_MAX_LDS)
		return -EINVAL;
	return 0;
}

/* ---- walking a saved control stack ---------------------------------------- */

struct emu_cwsr_walk {
	const struct emu_cwsr_area *a;
	const u8 *ctl;
	u32 word;		/* next word to read, in bytes from the area's start */
	u32 cursor;		/* top of the next record, from the wave area's start */
	u32 waves_left;		/* the count the firmware words promised */
	struct emu_cwsr_geom state;
	bool have_state;
};

struct emu_cwsr_slot {
	struct emu_cwsr_geom geom;
	u32 offset;		/* of the record in the wave area */
};

static int walk_start(struct emu_cwsr_walk *wk, const struct emu_cwsr_area *a,
		      const u8 *ctl, const struct emu_cwsr_state *st)
{
	int ret = emu_cwsr_state_check(a, st);

	if (ret)
		return ret;
	memset(wk, 0, sizeof(*wk));
	wk->a = a;
	wk->ctl = ctl;
	wk->word = st->cntl_stack_offset;
	wk->cursor = emu_cwsr_save_area_used(a, st);
	if (st->cntl_stack_offset == a->ctl_stack_size)
		return 0;
	if (a->ctl_stack_size - wk->word < 4 * EMU_CWSR_FW_WORDS ||
	    get32(ctl + wk->word) != FW_MARKER)
		return -EINVAL;
	wk->waves_left = get32(ctl + wk->word + 4);
	wk->word += 4 * EMU_CWSR_FW_WORDS;
	return 0;
}

/*
 * Reads the next workgroup's entries: its waves' record places into
 * slot[], the first wave's carrying the LDS.  Returns the number of waves,
 * 0 at the end of a well-formed stack, -EINVAL for anything else.
 */
static int walk_group(struct emu_cwsr_walk *wk,
		      struct emu_cwsr_slot slot[EMU_CWSR_MAX_GROUP_WAVES])
{
	u32 end = wk->a->ctl_stack_size;
	int n = 0;

	while (wk->word < end) {
		u32 word = get32(wk->ctl + wk->word);
		struct emu_cwsr_slot *s;
		u32 size;

		wk->word += 4;
		if (word & CTL_EVENT)
			continue;
		if (word & CTL_STATE) {
			if (geom_of_state(wk->a->isa, word, &wk->state))
				return -EINVAL;
			wk->have_state = true;
			continue;
		}
		if (word & ~WAVE_DEFINED || !wk->have_state || !wk->waves_left)
			return -EINVAL;
		/* a group opens with its first wave and only there */
		if (!n != !!(word & WAVE_FIRST) || n == EMU_CWSR_MAX_GROUP_WAVES)
			return -EINVAL;
		s = &slot[n++];
		s->geom = wk->state;
		if (!(word & WAVE_FIRST))
			s->geom.lds = 0;
		size = geom_size(&s->geom);
		if (size > wk->cursor)
			return -EINVAL;
		wk->cursor -= size;
		s->offset = wk->cursor;
		wk->waves_left--;
		if (word & WAVE_LAST)
			return n;
	}
	/* the stack ended: inside a group, or with records or waves unaccounted for */
	if (n || wk->cursor || wk->waves_left)
		return -EINVAL;
	return 0;
}

/* ---- saving --------------------------------------------------------------- */

static int check_group(const struct emu_cwsr_area *a, const struct emu_wave *waves,
		       u32 n_waves, const struct emu_cwsr_group *grp, u32 prev_end)
{
	u64 seen = 0;
	u32 j;

	if (!grp->n_waves || grp->n_waves > EMU_CWSR_MAX_GROUP_WAVES ||
	    grp->first_wave < prev_end || grp->first_wave > n_waves ||
	    grp->n_waves > n_waves - grp->first_wave ||
	    grp->lds_size > EMU_CWSR_MAX_LDS || (grp->lds_size && !grp->lds))
		return -EINVAL;
	for (j = 0; j < grp->n_waves; j++) {
		const struct emu_wave *w = &waves[grp->first_wave + j];
		u64 position = 1ull << (w->ttmp[11] & TTMP11_POSITION);
		s64 pc48 = (s64)(w->pc << 16) >> 16;

		if (w->isa != a->isa || w->state == EMU_WAVE_ENDED ||
		    w->state > EMU_WAVE_MEMVIOL || (u64)pc48 != w->pc ||
		    (w->nvgpr + w->nagpr && !w->vgpr))
			return -EINVAL;
		if (w->ttmp[8] != grp->id[0] || w->ttmp[9] != grp->id[1] ||
		    w->ttmp[10] != grp->id[2] || (seen & position))
			return -EINVAL;
		seen |= position;
	}
	return 0;
}

/* Checks the input and counts the control stack words and wave area bytes. */
static int plan(const struct emu_cwsr_area *a, const struct emu_wave *waves, u32 n_waves,
		const struct emu_cwsr_group *groups, u32 n_groups,
		u32 *ctl_bytes, u32 *wave_bytes)
{
	u64 words = EMU_CWSR_FW_WORDS, bytes = 0;
	u32 g, j, prev_end = 0;

	for (g = 0; g < n_groups; g++) {
		const struct emu_cwsr_group *grp = &groups[g];
		struct emu_cwsr_geom geom, last = { 0 };

		if (check_group(a, waves, n_waves, grp, prev_end))
			return -EINVAL;
		prev_end = grp->first_wave + grp->n_waves;
		for (j = 0; j < grp->n_waves; j++) {
			if (geom_of_wave(a->isa, &waves[grp->first_wave + j], &geom))
				return -EINVAL;
			/* a state word opens each group and follows allocation changes */
			if (!j || geom.varch != last.varch || geom.vacc != last.vacc)
				words++;
			last = geom;
			if (!j)
				geom.lds = round_up_u32(grp->lds_size, LDS_GRANULE);
			bytes += geom_size(&geom);
			words++;
		}
	}
	if (words * 4 > a->ctl_stack_size - EMU_CWSR_HEADER_SIZE ||
	    bytes > a->wave_area_end - a->ctl_stack_size)
		return -ENOSPC;
	*ctl_bytes = words * 4;
	*wave_bytes = bytes;
	return 0;
}

int emu_cwsr_encode_size(const struct emu_cwsr_area *a,
			 const struct emu_wave *waves, u32 n_waves,
			 const struct emu_cwsr_group *groups, u32 n_groups,
			 u32 *wave_bytes)
{
	u32 ctl_bytes;

	return plan(a, waves, n_waves, groups, n_groups, &ctl_bytes, wave_bytes);
}

static void put_record(u8 *rec, const struct emu_cwsr_geom *g, const struct emu_wave *w,
		       const struct emu_cwsr_group *grp)
{
	u8 *sgpr = rec + geom_sgpr_at(g), *hw = rec + geom_hwreg_at(g);
	u8 *extra = rec + geom_extra_at(g);
	u32 r, lane, i;

	memset(rec, 0, geom_size(g));
	for (r = 0; r < w->nvgpr; r++)
		for (lane = 0; lane < EMU_WAVE_LANES; lane++)
			put32(rec + r * VGPR_BYTES + lane * 4, w->vgpr[r][lane]);
	for (r = 0; r < w->nagpr; r++)
		for (lane = 0; lane < EMU_WAVE_LANES; lane++)
			put32(rec + geom_acc_at(g) + r * VGPR_BYTES + lane * 4,
			      w->vgpr[w->nvgpr + r][lane]);

	for (i = 0; i < EMU_WAVE_SGPRS; i++)
		put32(sgpr + i * 4, w->sgpr[i]);
	put64(sgpr + 102 * 4, w->flat_scratch);
	put64(sgpr + 104 * 4, w->xnack_mask);
	put64(sgpr + 106 * 4, w->vcc);

	put32(hw + HW_M0 * 4, w->m0);
	put32(hw + HW_PC_LO * 4, w->pc);
	put32(hw + HW_PC_HI * 4, (w->pc >> 32) & PC_HI_ADDR);
	put64(hw + HW_EXEC_LO * 4, w->exec);
	put32(hw + HW_STATUS * 4, w->status);
	put32(hw + HW_TRAPSTS * 4, w->trapsts);
	put64(hw + HW_XNACK_LO * 4, w->xnack_mask);
	put32(hw + HW_MODE * 4, w->mode);

	for (i = 0; i < EMU_WAVE_TTMPS; i++)
		put32(rec + geom_ttmp_at(g) + i * 4, w->ttmp[i]);
	if (g->lds && grp->lds_size)
		memcpy(rec + geom_lds_at(g), grp->lds, grp->lds_size);

	put32(extra, EXTRA_MAGIC);
	put32(extra + 4, w->state);
	put64(extra + 8, w->fault_pc);
	put64(extra + 16, w->fault_addr);
	put64(extra + 24, w->retired);
}

int emu_cwsr_encode(const struct emu_cwsr_area *a,
		    const struct emu_wave *waves, u32 n_waves,
		    const struct emu_cwsr_group *groups, u32 n_groups,
		    u8 *ctl_stack, u8 *wave_area, struct emu_cwsr_state *st)
{
	u32 ctl_bytes, wave_bytes, word, cursor, j, total = 0;
	int g, ret;

	ret = plan(a, waves, n_waves, groups, n_groups, &ctl_bytes, &wave_bytes);
	if (ret)
		return ret;
	for (g = 0; g < (int)n_groups; g++)
		total += groups[g].n_waves;

	word = a->ctl_stack_size - ctl_bytes;
	st->cntl_stack_offset = word;
	st->wg_state_offset = a->ctl_stack_size + wave_bytes;
	if (!n_groups) {
		emu_cwsr_state_empty(a, st);
		return 0;
	}
	put32(ctl_stack + word, FW_MARKER);
	put32(ctl_stack + word + 4, total);
	word += 4 * EMU_CWSR_FW_WORDS;

	/*
	 * The last group saved is read first and owns the top of the wave
	 * area; inside a group the first wave comes first.
	 */
	cursor = wave_bytes;
	for (g = n_groups - 1; g >= 0; g--) {
		const struct emu_cwsr_group *grp = &groups[g];
		struct emu_cwsr_geom geom, last = { 0 };

		for (j = 0; j < grp->n_waves; j++) {
			const struct emu_wave *w = &waves[grp->first_wave + j];
			u32 wave = 0;

			geom_of_wave(a->isa, w, &geom);
			geom.lds = j ? 0 : round_up_u32(grp->lds_size, LDS_GRANULE);
			if (!j || geom.varch != last.varch || geom.vacc != last.vacc) {
				put32(ctl_stack + word,
				      state_word(a->isa, &geom,
						 round_up_u32(grp->lds_size, LDS_GRANULE)));
				word += 4;
			}
			last = geom;
			if (!j)
				wave |= WAVE_FIRST;
			if (j == grp->n_waves - 1)
				wave |= WAVE_LAST;
			put32(ctl_stack + word, wave);
			word += 4;
			cursor -= geom_size(&geom);
			put_record(wave_area + cursor, &geom, w, grp);
		}
	}
	return 0;
}

/* ---- restoring ------------------------------------------------------------ */

int emu_cwsr_scan(const struct emu_cwsr_area *a, const u8 *ctl_stack,
		  const struct emu_cwsr_state *st,
		  struct emu_cwsr_group *groups, u32 max_groups,
		  struct emu_wave *waves, u32 max_waves,
		  u32 *n_groups, u32 *n_waves)
{
	struct emu_cwsr_slot slot[EMU_CWSR_MAX_GROUP_WAVES];
	struct emu_cwsr_walk wk;
	u32 groups_read = 0, waves_read = 0, total_waves, total_groups, j;
	int n, ret;

	/* first the whole stack, so that nothing is filled in for a bad one */
	ret = walk_start(&wk, a, ctl_stack, st);
	if (ret)
		return ret;
	while ((n = walk_group(&wk, slot)) > 0) {
		groups_read++;
		waves_read += n;
	}
	if (n < 0)
		return n;
	*n_groups = total_groups = groups_read;
	*n_waves = total_waves = waves_read;
	if (!groups || !waves)
		return 0;
	if (max_groups < total_groups || max_waves < total_waves)
		return -ENOSPC;

	/* they were read last-saved first: put them back in their order */
	walk_start(&wk, a, ctl_stack, st);
	waves_read = 0;
	for (groups_read = 0; (n = walk_group(&wk, slot)) > 0; groups_read++) {
		struct emu_cwsr_group *grp = &groups[total_groups - 1 - groups_read];

		waves_read += n;
		memset(grp, 0, sizeof(*grp));
		grp->first_wave = total_waves - waves_read;
		grp->n_waves = n;
		grp->lds_size = slot[0].geom.lds;
		for (j = 0; j < (u32)n; j++) {
			struct emu_wave *w = &waves[grp->first_wave + j];

			w->isa = a->isa;
			w->nvgpr = slot[j].geom.varch;
			w->nagpr = slot[j].geom.vacc;
		}
	}
	return 0;
}

/* The checks of one record that need only its bytes. */
static int check_record(const u8 *rec, const struct emu_cwsr_geom *g)
{
	const u8 *sgpr = rec + geom_sgpr_at(g), *hw = rec + geom_hwreg_at(g);
	const u8 *extra = rec + geom_extra_at(g);
	u32 alias_end = g->nsgpr < 108 ? g->nsgpr : 108, i;

	if (get32(extra) != EXTRA_MAGIC || get32(extra + 4) == EMU_WAVE_ENDED ||
	    get32(extra + 4) > EMU_WAVE_MEMVIOL)
		return -EINVAL;
	for (i = 32; i < EXTRA_BYTES; i += 4)
		if (get32(extra + i))
			return -EINVAL;
	for (i = HW_USED; i < HWREG_BYTES / 4; i++)
		if (get32(hw + i * 4))
			return -EINVAL;
	if (get32(hw + HW_PC_HI * 4) & ~(PC_HI_ADDR | PC_HI_REPLAY))
		return -EINVAL;
	/* the SGPR copy of XNACK_MASK is the hardware register's */
	if (get64(sgpr + (alias_end - 4) * 4) != get64(hw + HW_XNACK_LO * 4))
		return -EINVAL;
	for (i = alias_end; i < g->nsgpr; i++)
		if (get32(sgpr + i * 4))
			return -EINVAL;
	return 0;
}

static void get_record(const u8 *rec, const struct emu_cwsr_geom *g, struct emu_wave *w,
		       struct emu_cwsr_group *grp, bool first)
{
	const u8 *sgpr = rec + geom_sgpr_at(g), *hw = rec + geom_hwreg_at(g);
	const u8 *extra = rec + geom_extra_at(g);
	u32 alias_end = g->nsgpr < 108 ? g->nsgpr : 108, r, lane, i;
	u32 (*vgpr)[EMU_WAVE_LANES] = w->vgpr;

	for (r = 0; r < g->varch + g->vacc; r++)
		for (lane = 0; lane < EMU_WAVE_LANES; lane++)
			vgpr[r][lane] = get32(rec + r * VGPR_BYTES + lane * 4);

	for (i = 0; i < EMU_WAVE_SGPRS; i++)
		w->sgpr[i] = i < alias_end - 6 ? get32(sgpr + i * 4) : 0;
	w->flat_scratch = get64(sgpr + (alias_end - 6) * 4);
	w->vcc = get64(sgpr + (alias_end - 2) * 4);

	w->m0 = get32(hw + HW_M0 * 4);
	/* a 48-bit address, sign-extended as the GPU's VA space is */
	w->pc = (u64)((s64)((u64)(get32(hw + HW_PC_HI * 4) & PC_HI_ADDR) << 48 |
			    (u64)get32(hw + HW_PC_LO * 4) << 16) >> 16);
	w->exec = get64(hw + HW_EXEC_LO * 4);
	w->status = get32(hw + HW_STATUS * 4);
	w->trapsts = get32(hw + HW_TRAPSTS * 4);
	w->xnack_mask = get64(hw + HW_XNACK_LO * 4);
	w->mode = get32(hw + HW_MODE * 4);

	for (i = 0; i < EMU_WAVE_TTMPS; i++)
		w->ttmp[i] = get32(rec + geom_ttmp_at(g) + i * 4);

	w->state = get32(extra + 4);
	w->fault_pc = get64(extra + 8);
	w->fault_addr = get64(extra + 16);
	w->retired = get64(extra + 24);

	if (first) {
		grp->id[0] = w->ttmp[8];
		grp->id[1] = w->ttmp[9];
		grp->id[2] = w->ttmp[10];
		if (g->lds)
			memcpy(grp->lds, rec + geom_lds_at(g), g->lds);
	}
	w->lds = grp->lds;
	w->lds_size = grp->lds_size;
}

int emu_cwsr_decode(const struct emu_cwsr_area *a, const u8 *ctl_stack,
		    const struct emu_cwsr_state *st,
		    const u8 *wave_area, u32 wave_area_size,
		    struct emu_cwsr_group *groups, u32 n_groups,
		    struct emu_wave *waves, u32 n_waves)
{
	struct emu_cwsr_slot slot[EMU_CWSR_MAX_GROUP_WAVES];
	struct emu_cwsr_walk wk;
	u32 total_groups, total_waves, waves_read, g, j;
	int n, pass, ret;

	ret = emu_cwsr_scan(a, ctl_stack, st, NULL, 0, NULL, 0, &total_groups, &total_waves);
	if (ret)
		return ret;
	if (total_groups != n_groups || total_waves != n_waves ||
	    wave_area_size != emu_cwsr_save_area_used(a, st))
		return -EINVAL;

	/* pass 0 checks every record against the caller's storage, pass 1 fills */
	for (pass = 0; pass < 2; pass++) {
		walk_start(&wk, a, ctl_stack, st);
		waves_read = 0;
		for (g = 0; (n = walk_group(&wk, slot)) > 0; g++) {
			struct emu_cwsr_group *grp = &groups[n_groups - 1 - g];
			const u8 *lead = wave_area + slot[0].offset;
			u64 seen = 0;

			waves_read += n;
			if (!pass && (grp->first_wave != n_waves - waves_read ||
				      grp->n_waves != (u32)n || grp->lds_size != slot[0].geom.lds ||
				      (grp->lds_size && !grp->lds)))
				return -EINVAL;
			for (j = 0; j < (u32)n; j++) {
				const struct emu_cwsr_geom *geom = &slot[j].geom;
				const u8 *rec = wave_area + slot[j].offset;
				struct emu_wave *w = &waves[grp->first_wave + j];
				u64 position;

				if (pass) {
					get_record(rec, geom, w, grp, !j);
					continue;
				}
				position = 1ull << (get32(rec + geom_ttmp_at(geom) + 11 * 4) &
						    TTMP11_POSITION);
				if (check_record(rec, geom) || (seen & position) ||
				    w->nvgpr != geom->varch || w->nagpr != geom->vacc ||
				    !w->vgpr || memcmp(rec + geom_ttmp_at(geom) + 8 * 4,
						       lead + geom_ttmp_at(&slot[0].geom) + 8 * 4,
						       12))
					return -EINVAL;
				seen |= position;
			}
		}
	}
	return 0;
}
