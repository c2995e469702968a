// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of emu_cwsr.c: the sizes amdkfd and the thunk give a save
 * area, the control stack words and record offsets of a small case worked out
 * by hand from the hardware layout, a second reader of the save area that
 * walks it the way ROCdbgapi does, round trips of random waves, and a decoder
 * that refuses truncated, inconsistent or garbage input without touching its
 * outputs.
 *
 * Prints "PASS: name" or "FAIL: name" per test and "N passed, N failed" last.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_cwsr.h"

static int failures;
static unsigned int n_passed, n_failed;

#define EXPECT(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "  %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;					\
		}							\
	} while (0)

static void run(const char *name, void (*test)(void))
{
	failures = 0;
	test();
	printf("%s: %s\n", failures ? "FAIL" : "PASS", name);
	if (failures)
		n_failed++;
	else
		n_passed++;
}

static u64 rng_state = 0x9e3779b97f4a7c15ull;

static u64 rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static u32 rnd_below(u32 n)
{
	return rnd() % n;
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

static u32 round_up(u32 v, u32 g)
{
	return (v + g - 1) / g * g;
}

/* ---- scenes: workgroups of waves to save ------------------------------------ */

#define MAX_WAVES 64
#define MAX_GROUPS 8

struct scene {
	enum emu_isa_target isa;
	u32 n_waves, n_groups;
	struct emu_wave waves[MAX_WAVES];
	struct emu_cwsr_group groups[MAX_GROUPS];
};

static const enum emu_wave_state live_states[] = {
	EMU_WAVE_RUNNING, EMU_WAVE_BARRIER, EMU_WAVE_ILLEGAL, EMU_WAVE_MEMVIOL,
};

static void wave_fill(struct emu_wave *w, enum emu_isa_target isa, u32 nvgpr, u32 nagpr,
		      const u32 id[3], u32 position)
{
	u32 r, lane, i;

	memset(w, 0, sizeof(*w));
	w->isa = isa;
	/* code lives in the low half, now and then in the high (sign-extended) one */
	w->pc = rnd() & 0x00007ffffffffffcull;
	if (!rnd_below(8))
		w->pc |= 0xffff800000000000ull;
	w->exec = rnd();
	w->vcc = rnd();
	w->flat_scratch = rnd();
	w->xnack_mask = rnd();
	w->m0 = rnd();
	w->mode = rnd();
	w->status = rnd();
	w->trapsts = rnd();
	for (i = 0; i < EMU_WAVE_SGPRS; i++)
		w->sgpr[i] = rnd();
	for (i = 0; i < EMU_WAVE_TTMPS; i++)
		w->ttmp[i] = rnd();
	emu_cwsr_spi_ttmps(w, id, position);
	w->nvgpr = nvgpr;
	w->nagpr = nagpr;
	w->vgpr = calloc(nvgpr + nagpr + 1, sizeof(*w->vgpr));
	for (r = 0; r < nvgpr + nagpr; r++)
		for (lane = 0; lane < EMU_WAVE_LANES; lane++)
			w->vgpr[r][lane] = rnd();
	w->state = live_states[rnd_below(4)];
	w->fault_pc = rnd();
	w->fault_addr = rnd();
	w->retired = rnd();
}

static void random_counts(enum emu_isa_target isa, u32 *nvgpr, u32 *nagpr)
{
	*nvgpr = 1 + rnd_below(256);
	/* gfx90a: at most 256 AccVGPRs once the unified file is rounded to 8 */
	*nagpr = rnd_below(emu_isa_unified_vgprs(isa) ? 249 : 257);
	if (!rnd_below(4))
		*nagpr = 0;
}

/* the targets in turn: gfx908, gfx90a, gfx942 (whose save layout is gfx90a's) */
static enum emu_isa_target isa_of(unsigned int iter)
{
	static const enum emu_isa_target isas[] = { EMU_ISA_GFX908, EMU_ISA_GFX90A, EMU_ISA_GFX942 };

	return isas[iter % 3];
}
static void scene_random(struct scene *s, enum emu_isa_target isa)
{
	u32 g, j;

	memset(s, 0, sizeof(*s));
	s->isa = isa;
	s->n_groups = 1 + rnd_below(MAX_GROUPS);
	for (g = 0; g < s->n_groups; g++) {
		struct emu_cwsr_group *grp = &s->groups[g];
		u32 positions[16], nvgpr, nagpr, i;

		grp->first_wave = s->n_waves;
		grp->n_waves = 1 + rnd_below(MAX_WAVES / MAX_GROUPS);
		for (i = 0; i < 3; i++)
			grp->id[i] = rnd_below(4) ? rnd_below(1024) : (u32)rnd();
		switch (rnd_below(4)) {
		case 0:
			grp->lds_size = 0;
			break;
		case 1:
			grp->lds_size = 4 * (1 + rnd_below(16384));	/* not a whole granule */
			break;
		default:
			grp->lds_size = 512 * (1 + rnd_below(128));
		}
		grp->lds = malloc(grp->lds_size + 1);
		for (i = 0; i < grp->lds_size; i++)
			grp->lds[i] = rnd();
		/* positions: distinct, not necessarily 0..n-1 (some waves may have ended) */
		for (i = 0; i < 16; i++)
			positions[i] = i;
		for (i = 15; i > 0; i--) {
			u32 k = rnd_below(i + 1), t = positions[i];

			positions[i] = positions[k];
			positions[k] = t;
		}
		random_counts(isa, &nvgpr, &nagpr);
		for (j = 0; j < grp->n_waves; j++) {
			/* a wave of its own allocation now and then: a state word mid-group */
			if (!rnd_below(6))
				random_counts(isa, &nvgpr, &nagpr);
			wave_fill(&s->waves[s->n_waves++], isa, nvgpr, nagpr, grp->id,
				  positions[j]);
		}
	}
}

static void waves_free(struct scene *s)
{
	u32 i;

	for (i = 0; i < s->n_waves; i++)
		free(s->waves[i].vgpr);
}

static void scene_free(struct scene *s)
{
	u32 i;

	waves_free(s);
	for (i = 0; i < s->n_groups; i++)
		free(s->groups[i].lds);
}

/* ---- an encoded save area ------------------------------------------------ */

struct saved {
	struct emu_cwsr_area area;
	struct emu_cwsr_state st;
	u8 *ctl;		/* area.ctl_stack_size bytes */
	u8 *wave_area;
	u32 wave_bytes;
};

#define CTL_FILL 0xa5

static int save(const struct scene *s, u32 ctx_size, u32 ctl_size, struct saved *sv)
{
	int ret;

	memset(sv, 0, sizeof(*sv));
	ret = emu_cwsr_area_init(&sv->area, s->isa, ctx_size, ctl_size);
	if (ret)
		return ret;
	ret = emu_cwsr_encode_size(&sv->area, s->waves, s->n_waves, s->groups, s->n_groups,
				   &sv->wave_bytes);
	if (ret)
		return ret;
	sv->ctl = malloc(ctl_size);
	memset(sv->ctl, CTL_FILL, ctl_size);
	sv->wave_area = malloc(sv->wave_bytes + 1);
	return emu_cwsr_encode(&sv->area, s->waves, s->n_waves, s->groups, s->n_groups,
			       sv->ctl, sv->wave_area, &sv->st);
}

static void saved_free(struct saved *sv)
{
	free(sv->ctl);
	free(sv->wave_area);
}

/* what a restore gets back */
struct restored {
	u32 n_groups, n_waves;
	struct emu_cwsr_group *groups;
	struct emu_wave *waves;
};

static void restored_free(struct restored *r)
{
	u32 i;

	for (i = 0; r->waves && i < r->n_waves; i++)
		free(r->waves[i].vgpr);
	for (i = 0; r->groups && i < r->n_groups; i++)
		free(r->groups[i].lds);
	free(r->waves);
	free(r->groups);
	memset(r, 0, sizeof(*r));
}

/* scan, give every wave and group its storage, decode: what the emulator will do */
static int restore(const struct saved *sv, u32 wave_area_size, struct restored *r)
{
	u32 i;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = emu_cwsr_scan(&sv->area, sv->ctl, &sv->st, NULL, 0, NULL, 0,
			    &r->n_groups, &r->n_waves);
	if (ret)
		return ret;
	r->groups = calloc(r->n_groups + 1, sizeof(*r->groups));
	r->waves = calloc(r->n_waves + 1, sizeof(*r->waves));
	ret = emu_cwsr_scan(&sv->area, sv->ctl, &sv->st, r->groups, r->n_groups,
			    r->waves, r->n_waves, &r->n_groups, &r->n_waves);
	if (ret)
		return ret;
	for (i = 0; i < r->n_waves; i++)
		r->waves[i].vgpr = calloc(r->waves[i].nvgpr + r->waves[i].nagpr + 1,
					  sizeof(*r->waves[i].vgpr));
	for (i = 0; i < r->n_groups; i++)
		r->groups[i].lds = malloc(r->groups[i].lds_size + 1);
	return emu_cwsr_decode(&sv->area, sv->ctl, &sv->st, sv->wave_area, wave_area_size,
			       r->groups, r->n_groups, r->waves, r->n_waves);
}

/* A restored wave holds the saved one's values; padding registers read 0. */
static int wave_matches(const struct emu_wave *a, const struct emu_wave *b)
{
	u32 r, lane;

	if (a->pc != b->pc || a->exec != b->exec || a->vcc != b->vcc ||
	    a->flat_scratch != b->flat_scratch || a->xnack_mask != b->xnack_mask ||
	    a->m0 != b->m0 || a->mode != b->mode || a->status != b->status ||
	    a->trapsts != b->trapsts || a->isa != b->isa || a->state != b->state ||
	    a->fault_pc != b->fault_pc || a->fault_addr != b->fault_addr ||
	    a->retired != b->retired ||
	    memcmp(a->sgpr, b->sgpr, sizeof(a->sgpr)) || memcmp(a->ttmp, b->ttmp, sizeof(a->ttmp)))
		return 0;
	if (b->nvgpr < a->nvgpr || b->nvgpr % 4 || b->nagpr < a->nagpr)
		return 0;
	if (emu_isa_unified_vgprs(a->isa) && (b->nvgpr + b->nagpr) % 8)
		return 0;
	if (a->isa == EMU_ISA_GFX908 && b->nagpr != b->nvgpr)
		return 0;
	for (r = 0; r < b->nvgpr; r++)
		for (lane = 0; lane < EMU_WAVE_LANES; lane++)
			if (b->vgpr[r][lane] != (r < a->nvgpr ? a->vgpr[r][lane] : 0))
				return 0;
	for (r = 0; r < b->nagpr; r++)
		for (lane = 0; lane < EMU_WAVE_LANES; lane++)
			if (b->vgpr[b->nvgpr + r][lane] !=
			    (r < a->nagpr ? a->vgpr[a->nvgpr + r][lane] : 0))
				return 0;
	return 1;
}

static int group_matches(const struct emu_cwsr_group *a, const struct emu_cwsr_group *b)
{
	u32 i;

	if (memcmp(a->id, b->id, sizeof(a->id)) || a->first_wave != b->first_wave ||
	    a->n_waves != b->n_waves || b->lds_size != round_up(a->lds_size, 512))
		return 0;
	for (i = 0; i < b->lds_size; i++)
		if (b->lds[i] != (i < a->lds_size ? a->lds[i] : 0))
			return 0;
	return 1;
}

#define BIG_CTX		(64u << 20)
#define MI210_CTL	0x9000u

/* ---- sizes ----------------------------------------------------------------- */

static void test_sizes_mi210_mi100(void)
{
	struct emu_cwsr_sizes s;

	/* MI210: 104 CUs of 4 SIMDs, 8 shader arrays, 1 per engine */
	EXPECT(emu_cwsr_sizes(EMU_ISA_GFX90A, 416, 4, 8, 1, &s) == 0);
	EXPECT(s.cu_num == 104);
	EXPECT(s.wave_num == 4096);		/* min(104 * 40, 8 * 512) */
	EXPECT(s.ctl_stack_size == 0x9000);	/* page_align(40 + 4096 * 8 + 8) */
	EXPECT(s.wg_data_size == 104 * 0x95000);
	EXPECT(s.ctx_save_size == 0x9000 + 104 * 0x95000);
	EXPECT(s.debug_memory_size == 4096 * 32);

	/* MI100: 120 CUs */
	EXPECT(emu_cwsr_sizes(EMU_ISA_GFX908, 480, 4, 8, 1, &s) == 0);
	EXPECT(s.cu_num == 120 && s.wave_num == 4096);
	EXPECT(s.ctl_stack_size == 0x9000 && s.wg_data_size == 0x45d8000);

	/* a small part: the CU bound wins */
	EXPECT(emu_cwsr_sizes(EMU_ISA_GFX90A, 8, 4, 8, 1, &s) == 0);
	EXPECT(s.wave_num == 80 && s.ctl_stack_size == 0x1000);

	EXPECT(emu_cwsr_sizes(EMU_ISA_GFX90A, 416, 0, 8, 1, &s) == -EINVAL);
	EXPECT(emu_cwsr_sizes(EMU_ISA_GFX90A, 416, 4, 8, 0, &s) == -EINVAL);
	EXPECT(emu_cwsr_sizes(EMU_ISA_GFX90A, 0xfffffff0, 1, 8, 1, &s) == -EINVAL);
}

static void test_area_and_state_checks(void)
{
	struct emu_cwsr_area a;
	struct emu_cwsr_state st;

	EXPECT(emu_cwsr_area_init(&a, EMU_ISA_GFX90A, 0x3c91000, 0x9000) == 0);
	EXPECT(a.ctl_stack_size == 0x9000 && a.wave_area_end == 0x3c91000);
	EXPECT(emu_cwsr_area_init(&a, EMU_ISA_GFX90A, 0x10000, 0x9002) == -EINVAL);
	EXPECT(emu_cwsr_area_init(&a, EMU_ISA_GFX90A, 0x10000, 44) == -EINVAL);
	EXPECT(emu_cwsr_area_init(&a, EMU_ISA_GFX90A, 0x8000, 0x9000) == -EINVAL);
	EXPECT(emu_cwsr_area_init(&a, EMU_ISA_GFX90A, 0xffffffff, 0x200000) == -EINVAL);
	EXPECT(emu_cwsr_area_init(&a, (enum emu_isa_target)7, 0x10000, 0x9000) == -EINVAL);

	emu_cwsr_area_init(&a, EMU_ISA_GFX90A, 0x20000, 0x9000);
	emu_cwsr_state_empty(&a, &st);
	EXPECT(emu_cwsr_state_check(&a, &st) == 0);
	EXPECT(emu_cwsr_ctl_stack_used(&a, &st) == 0 && emu_cwsr_save_area_used(&a, &st) == 0);
	st.cntl_stack_offset = 0x8ff0;
	st.wg_state_offset = 0x9100;
	EXPECT(emu_cwsr_state_check(&a, &st) == 0);
	st.cntl_stack_offset = 0x8ff2;			/* not a word */
	EXPECT(emu_cwsr_state_check(&a, &st) == -EINVAL);
	st.cntl_stack_offset = 36;			/* inside the thunk's header */
	EXPECT(emu_cwsr_state_check(&a, &st) == -EINVAL);
	st.cntl_stack_offset = 0x9004;			/* past the control stack */
	EXPECT(emu_cwsr_state_check(&a, &st) == -EINVAL);
	st.cntl_stack_offset = 0x8ff0;
	st.wg_state_offset = 0x20004;			/* past the area */
	EXPECT(emu_cwsr_state_check(&a, &st) == -EINVAL);
	st.wg_state_offset = 0x8ffc;			/* below the wave area */
	EXPECT(emu_cwsr_state_check(&a, &st) == -EINVAL);
	st.wg_state_offset = 0x9000;			/* entries but no records */
	EXPECT(emu_cwsr_state_check(&a, &st) == -EINVAL);
	st.cntl_stack_offset = 0x9000;			/* records but no entries */
	st.wg_state_offset = 0x9100;
	EXPECT(emu_cwsr_state_check(&a, &st) == -EINVAL);
}

static void test_wave_state_header(void)
{
	struct emu_cwsr_area a;
	struct emu_cwsr_state st = { .cntl_stack_offset = 0x8fe4, .wg_state_offset = 0xb380 };
	u8 h[16];

	emu_cwsr_area_init(&a, EMU_ISA_GFX90A, 0x20000, 0x9000);
	emu_cwsr_wave_state_header(&a, &st, h);
	/* kfd_context_save_area_header.wave_state as 6.8+ fills it */
	EXPECT(get32(h) == 0x8fe4);
	EXPECT(get32(h + 4) == 0x1c);
	EXPECT(get32(h + 8) == 0xb380);
	EXPECT(get32(h + 12) == 0x2380);
}

/* ---- the layout, by hand ---------------------------------------------------- */

/*
 * gfx90a, control stack area 4096 bytes.  Group 0: one wave, 8 VGPRs, no
 * AccVGPRs, 1024 bytes of LDS.  Group 1: two waves, 4 VGPRs + 4 AccVGPRs, no
 * LDS.  Read from cntl_stack_offset upward: the two firmware words, then
 * group 1 (saved last) and group 0.
 *   group 1 state: VGPR field (4+4)/8-1 = 0, SGPR field 7, LDS 0, accum 4/4-1 = 0
 *                  = 0x80000000 | 7 << 6                      = 0x800001c0
 *   its waves:     first 1 << 17 = 0x00020000, last 1 << 16   = 0x00010000
 *   group 0 state: VGPR 8/8-1 = 0, SGPR 7, LDS 1024/512 = 2, accum 8/4-1 = 1
 *                  = 0x800001c0 | 2 << 9 | 1 << 24            = 0x810005c0
 *   its wave:      first and last                             = 0x00030000
 * 7 words: cntl_stack_offset = 4096 - 28 = 4068.
 * Records (VGPRs 256 B each, 112 SGPRs = 448 B, 64 B hwregs, 64 B ttmps, LDS,
 * 64 B at the top): group 1 waves 2048 + 448 + 128 + 64 = 2688 each, group
 * 0's 2048 + 448 + 128 + 1024 + 64 = 3712; 9088 in all, group 1's first wave
 * on top at [6400, 9088), its second at [3712, 6400), group 0's at [0, 3712).
 */
static void test_control_stack_by_hand_gfx90a(void)
{
	static const u32 id0[3] = { 5, 0, 0 }, id1[3] = { 6, 1, 0 };
	struct scene s = { .isa = EMU_ISA_GFX90A, .n_waves = 3, .n_groups = 2 };
	struct saved sv;
	u8 lds[1024];
	u32 i;

	for (i = 0; i < sizeof(lds); i++)
		lds[i] = i * 7 + 1;
	wave_fill(&s.waves[0], EMU_ISA_GFX90A, 8, 0, id0, 0);
	wave_fill(&s.waves[1], EMU_ISA_GFX90A, 4, 4, id1, 0);
	wave_fill(&s.waves[2], EMU_ISA_GFX90A, 4, 4, id1, 1);
	s.waves[1].pc = 0x123456789abcull;
	s.waves[0].m0 = 0xdeadbeef;
	s.groups[0] = (struct emu_cwsr_group){ { 5, 0, 0 }, 0, 1, lds, sizeof(lds) };
	s.groups[1] = (struct emu_cwsr_group){ { 6, 1, 0 }, 1, 2, NULL, 0 };

	EXPECT(save(&s, 4096 + 0x10000, 4096, &sv) == 0);
	EXPECT(sv.st.cntl_stack_offset == 4068);
	EXPECT(sv.st.wg_state_offset == 4096 + 9088);
	EXPECT(sv.wave_bytes == 9088);
	EXPECT(get32(sv.ctl + 4068 + 1 * 4) == 3);	/* ours: the number of waves */
	EXPECT(get32(sv.ctl + 4068 + 2 * 4) == 0x800001c0);
	EXPECT(get32(sv.ctl + 4068 + 3 * 4) == 0x00020000);
	EXPECT(get32(sv.ctl + 4068 + 4 * 4) == 0x00010000);
	EXPECT(get32(sv.ctl + 4068 + 5 * 4) == 0x810005c0);
	EXPECT(get32(sv.ctl + 4068 + 6 * 4) == 0x00030000);
	EXPECT(sv.ctl[4067] == CTL_FILL);		/* below the used part: untouched */

	/* group 1's first wave (waves[1]) on top: PC_LO, PC_HI after VGPRs and SGPRs */
	EXPECT(get32(sv.wave_area + 6400 + 2048 + 448 + 4) == 0x56789abc);
	EXPECT(get32(sv.wave_area + 6400 + 2048 + 448 + 8) == 0x1234);
	/* its AccVGPR a0, lane 3, right after its 4 VGPRs */
	EXPECT(get32(sv.wave_area + 6400 + 4 * 256 + 3 * 4) == s.waves[1].vgpr[4][3]);
	/* its position in ttmp11, its workgroup id in ttmp8 */
	EXPECT((get32(sv.wave_area + 6400 + 2048 + 448 + 64 + 11 * 4) & 0x3f) == 0);
	EXPECT(get32(sv.wave_area + 6400 + 2048 + 448 + 64 + 8 * 4) == 6);
	/* the second wave below it */
	EXPECT((get32(sv.wave_area + 3712 + 2048 + 448 + 64 + 11 * 4) & 0x3f) == 1);
	/* group 0's wave at the bottom: M0 first in the hwregs, LDS after the ttmps */
	EXPECT(get32(sv.wave_area + 2048 + 448) == 0xdeadbeef);
	EXPECT(memcmp(sv.wave_area + 2048 + 448 + 128, lds, sizeof(lds)) == 0);
	/* VCC in s106-107, FLAT_SCRATCH in s102-103 */
	EXPECT(get32(sv.wave_area + 2048 + 106 * 4) == (u32)s.waves[0].vcc);
	EXPECT(get32(sv.wave_area + 2048 + 103 * 4) == (u32)(s.waves[0].flat_scratch >> 32));
	saved_free(&sv);
	waves_free(&s);
}

/*
 * gfx908: one wave with 8 VGPRs and 512 bytes of LDS.  State: VGPR field
 * 8/4-1 = 1, SGPR 7, LDS 1: 0x80000000 | 1 | 7 << 6 | 1 << 9 = 0x800003c1.
 * Its AccVGPRs are saved alike (8): 4096 + 448 + 128 + 512 + 64 = 5248 bytes.
 */
static void test_control_stack_by_hand_gfx908(void)
{
	static const u32 id[3] = { 1, 2, 3 };
	struct scene s = { .isa = EMU_ISA_GFX908, .n_waves = 1, .n_groups = 1 };
	struct saved sv;
	u8 lds[512] = { 0x11, 0x22 };

	wave_fill(&s.waves[0], EMU_ISA_GFX908, 8, 0, id, 2);
	s.groups[0] = (struct emu_cwsr_group){ { 1, 2, 3 }, 0, 1, lds, sizeof(lds) };
	EXPECT(save(&s, 0x2000 + 0x10000, 0x2000, &sv) == 0);
	EXPECT(sv.st.cntl_stack_offset == 0x2000 - 16);
	EXPECT(get32(sv.ctl + 0x2000 - 8) == 0x800003c1);
	EXPECT(get32(sv.ctl + 0x2000 - 4) == 0x00030000);
	EXPECT(sv.wave_bytes == 5248);
	/* AccVGPRs zero: the wave had none, the hardware saves 8 */
	EXPECT(get32(sv.wave_area + 8 * 256) == 0 && get32(sv.wave_area + 16 * 256 - 4) == 0);
	EXPECT(get32(sv.wave_area + 4096 + 448 + 128) == 0x2211);
	saved_free(&sv);
	waves_free(&s);
}

/* ---- a second reader: ROCdbgapi's walk ---------------------------------------- */

/*
 * ROCdbgapi (architecture.cpp) walks the control stack from its third word
 * and the wave area from its top: a record's "context save address" is 64
 * bytes below the previous record's bottom; a first wave's LDS lies below
 * it, then 16 ttmps, 16 hwregs, the SGPRs ((blocks - 1) * 16 of them), the
 * AccVGPRs and the VGPRs.  Check every register of every wave there.
 */
static int dbgapi_walk(const struct scene *s, const struct saved *sv)
{
	u32 consumed = 0, words, state = 0, i, k;
	s64 last = sv->wave_bytes;
	int g;

	/* waves appear last group first, each group's waves in order */
	words = (sv->area.ctl_stack_size - sv->st.cntl_stack_offset) / 4;
	for (g = s->n_groups - 1; g >= 0; g--) {
		for (k = 0; k < s->groups[g].n_waves; k++) {
			const struct emu_wave *w = &s->waves[s->groups[g].first_wave + k];
			u32 relaunch, arch, acc, nsgpr, alias_end, lds = 0, r, lane;
			s64 csa, ttmps, hwregs, sgprs, accs, vgprs;
			const u8 *p;

			/* next wave entry, taking state words on the way */
			for (;;) {
				i = 2 + consumed++;
				if (i >= words)
					return 0;
				relaunch = get32(sv->ctl + sv->st.cntl_stack_offset + i * 4);
				if (relaunch & (1u << 30))
					continue;
				if (relaunch & (1u << 31)) {
					state = relaunch;
					continue;
				}
				break;
			}
			if (emu_isa_unified_vgprs(s->isa)) {
				arch = ((state >> 24 & 0x3f) + 1) * 4;
				acc = ((state & 0x3f) + 1) * 8 - arch;
			} else {
				arch = ((state & 0x3f) + 1) * 4;
				acc = arch;
			}
			nsgpr = ((state >> 6 & 7) + 1) * 16 - 16;
			csa = last - 64;
			if (relaunch & (1u << 17)) {
				lds = (state >> 9 & (emu_isa_unified_vgprs(s->isa) ? 0xff : 0x1ff)) * 512;
				csa -= lds;
			}
			ttmps = csa - 16 * 4;
			hwregs = ttmps - 16 * 4;
			sgprs = hwregs - nsgpr * 4;
			accs = sgprs - acc * 256;
			vgprs = accs - arch * 256;
			if (vgprs < 0 || arch < w->nvgpr || acc < w->nagpr)
				return 0;
			p = sv->wave_area;
			for (r = 0; r < w->nvgpr; r++)
				for (lane = 0; lane < 64; lane++)
					if (get32(p + vgprs + r * 256 + lane * 4) != w->vgpr[r][lane])
						return 0;
			for (r = 0; r < w->nagpr; r++)
				for (lane = 0; lane < 64; lane++)
					if (get32(p + accs + r * 256 + lane * 4) !=
					    w->vgpr[w->nvgpr + r][lane])
						return 0;
			alias_end = nsgpr < 108 ? nsgpr : 108;
			for (r = 0; r < alias_end - 6; r++)
				if (get32(p + sgprs + r * 4) != w->sgpr[r])
					return 0;
			if (get32(p + sgprs + (alias_end - 2) * 4) != (u32)w->vcc ||
			    get32(p + sgprs + (alias_end - 1) * 4) != (u32)(w->vcc >> 32) ||
			    get32(p + sgprs + (alias_end - 6) * 4) != (u32)w->flat_scratch ||
			    get32(p + sgprs + (alias_end - 5) * 4) != (u32)(w->flat_scratch >> 32))
				return 0;
			if (get32(p + hwregs) != w->m0 ||
			    get32(p + hwregs + 4) != (u32)w->pc ||
			    (get32(p + hwregs + 8) & 0xffff) != ((w->pc >> 32) & 0xffff) ||
			    get32(p + hwregs + 12) != (u32)w->exec ||
			    get32(p + hwregs + 16) != (u32)(w->exec >> 32) ||
			    get32(p + hwregs + 20) != w->status ||
			    get32(p + hwregs + 24) != w->trapsts ||
			    get32(p + hwregs + 28) != (u32)w->xnack_mask ||
			    get32(p + hwregs + 32) != (u32)(w->xnack_mask >> 32) ||
			    get32(p + hwregs + 36) != w->mode)
				return 0;
			for (r = 0; r < 16; r++)
				if (get32(p + ttmps + r * 4) != w->ttmp[r])
					return 0;
			if (k == 0 && (lds != round_up(s->groups[g].lds_size, 512) ||
				       memcmp(p + csa, s->groups[g].lds, s->groups[g].lds_size)))
				return 0;
			if (k != 0 && (relaunch & (1u << 17)))
				return 0;
			if ((k == s->groups[g].n_waves - 1) != !!(relaunch & (1u << 16)))
				return 0;
			last = vgprs;
		}
	}
	/* the records tile the wave area exactly */
	return last == 0;
}

static void test_rocdbgapi_reads_what_we_save(void)
{
	int iter;

	for (iter = 0; iter < 40; iter++) {
		struct scene s;
		struct saved sv;

		scene_random(&s, isa_of(iter));
		EXPECT(save(&s, BIG_CTX, MI210_CTL, &sv) == 0);
		EXPECT(dbgapi_walk(&s, &sv));
		saved_free(&sv);
		scene_free(&s);
	}
}

/* ---- round trips ------------------------------------------------------------ */

static void test_round_trip_random(void)
{
	int iter;

	for (iter = 0; iter < 120; iter++) {
		struct scene s;
		struct saved sv;
		struct restored r;
		u32 i;

		scene_random(&s, isa_of(iter + 1));
		EXPECT(save(&s, BIG_CTX, MI210_CTL, &sv) == 0);
		EXPECT(emu_cwsr_state_check(&sv.area, &sv.st) == 0);
		EXPECT(emu_cwsr_save_area_used(&sv.area, &sv.st) == sv.wave_bytes);
		/* only the used part of the control stack is written */
		for (i = 0; i < sv.st.cntl_stack_offset; i++)
			if (sv.ctl[i] != CTL_FILL)
				break;
		EXPECT(i == sv.st.cntl_stack_offset);

		EXPECT(restore(&sv, sv.wave_bytes, &r) == 0);
		EXPECT(r.n_groups == s.n_groups && r.n_waves == s.n_waves);
		for (i = 0; i < s.n_groups && i < r.n_groups; i++)
			EXPECT(group_matches(&s.groups[i], &r.groups[i]));
		for (i = 0; i < s.n_waves && i < r.n_waves; i++)
			EXPECT(wave_matches(&s.waves[i], &r.waves[i]));
		/* each wave's LDS is its group's */
		for (i = 0; i < r.n_groups; i++) {
			u32 j;

			for (j = 0; j < r.groups[i].n_waves; j++) {
				const struct emu_wave *w = &r.waves[r.groups[i].first_wave + j];

				EXPECT(w->lds == r.groups[i].lds &&
				       w->lds_size == r.groups[i].lds_size);
			}
		}
		restored_free(&r);
		saved_free(&sv);
		scene_free(&s);
	}
}

/* Saving what a restore gave back yields the same bytes: nothing drifts across cycles. */
static void test_second_cycle_is_identical(void)
{
	int iter;

	for (iter = 0; iter < 20; iter++) {
		struct scene s, again;
		struct saved sv, sv2;
		struct restored r;

		scene_random(&s, isa_of(iter));
		EXPECT(save(&s, BIG_CTX, MI210_CTL, &sv) == 0);
		EXPECT(restore(&sv, sv.wave_bytes, &r) == 0);
		memset(&again, 0, sizeof(again));
		again.isa = s.isa;
		again.n_waves = r.n_waves;
		again.n_groups = r.n_groups;
		memcpy(again.waves, r.waves, r.n_waves * sizeof(*r.waves));
		memcpy(again.groups, r.groups, r.n_groups * sizeof(*r.groups));
		EXPECT(save(&again, BIG_CTX, MI210_CTL, &sv2) == 0);
		EXPECT(sv2.wave_bytes == sv.wave_bytes);
		EXPECT(memcmp(&sv2.st, &sv.st, sizeof(sv.st)) == 0);
		EXPECT(memcmp(sv2.ctl, sv.ctl, MI210_CTL) == 0);
		EXPECT(memcmp(sv2.wave_area, sv.wave_area, sv.wave_bytes) == 0);
		saved_free(&sv2);
		restored_free(&r);
		saved_free(&sv);
		scene_free(&s);
	}
}

static void test_empty_queue(void)
{
	struct scene s = { .isa = EMU_ISA_GFX90A };
	struct saved sv;
	struct restored r;

	EXPECT(save(&s, BIG_CTX, MI210_CTL, &sv) == 0);
	EXPECT(sv.wave_bytes == 0);
	EXPECT(sv.st.cntl_stack_offset == MI210_CTL && sv.st.wg_state_offset == MI210_CTL);
	EXPECT(restore(&sv, 0, &r) == 0);
	EXPECT(r.n_groups == 0 && r.n_waves == 0);
	restored_free(&r);
	saved_free(&sv);
}

/* ---- what cannot be saved ----------------------------------------------------- */

static int encode_size_of(struct scene *s, u32 ctx, u32 ctl)
{
	struct emu_cwsr_area a;
	u32 bytes;

	emu_cwsr_area_init(&a, s->isa, ctx, ctl);
	return emu_cwsr_encode_size(&a, s->waves, s->n_waves, s->groups, s->n_groups, &bytes);
}

static void two_wave_scene(struct scene *s)
{
	static const u32 id[3] = { 9, 8, 7 };

	memset(s, 0, sizeof(*s));
	s->isa = EMU_ISA_GFX90A;
	s->n_waves = 2;
	s->n_groups = 1;
	wave_fill(&s->waves[0], EMU_ISA_GFX90A, 16, 8, id, 0);
	wave_fill(&s->waves[1], EMU_ISA_GFX90A, 16, 8, id, 1);
	s->groups[0] = (struct emu_cwsr_group){ { 9, 8, 7 }, 0, 2, NULL, 0 };
}

static void test_encode_refuses(void)
{
	struct scene s;
	struct emu_wave keep;

	two_wave_scene(&s);
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == 0);

	keep = s.waves[1];
	s.waves[1].state = EMU_WAVE_ENDED;		/* not resident */
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.waves[1] = keep;
	s.waves[1].isa = EMU_ISA_GFX908;		/* another target's */
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.waves[1] = keep;
	s.waves[1].ttmp[9] = 1;				/* another workgroup's */
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.waves[1] = keep;
	s.waves[1].ttmp[11] &= ~0x3fu;			/* the first wave's position */
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.waves[1] = keep;
	s.waves[1].nvgpr = 257;
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.waves[1] = keep;
	s.waves[1].nvgpr = 4;
	s.waves[1].nagpr = 256;				/* 260 AccVGPR slots on gfx90a */
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.waves[1] = keep;
	s.waves[1].pc = 0x0001000000000000ull;		/* not a 48-bit address */
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.waves[1] = keep;

	s.groups[0].n_waves = 0;
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.groups[0].n_waves = 3;			/* past the waves given */
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.groups[0].n_waves = 2;
	s.groups[0].lds_size = 512;			/* LDS without contents */
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.groups[0].lds = (u8 *)&keep;
	s.groups[0].lds_size = 65536 + 512;
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.groups[0].lds = NULL;
	s.groups[0].lds_size = 0;

	/* two groups over the same waves */
	s.groups[1] = s.groups[0];
	s.n_groups = 2;
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.n_groups = 1;

	/* room: control stack for 2 + 1 + 2 words after the header, wave area for 2 records */
	EXPECT(encode_size_of(&s, BIG_CTX, 40 + 20) == 0);
	EXPECT(encode_size_of(&s, BIG_CTX, 40 + 16) == -ENOSPC);
	EXPECT(encode_size_of(&s, 4096 + 2 * (24 * 256 + 448 + 192), 4096) == 0);
	EXPECT(encode_size_of(&s, 4096 + 2 * (24 * 256 + 448 + 192) - 4, 4096) == -ENOSPC);
	scene_free(&s);
}

static void test_seventeen_waves_refused(void)
{
	static const u32 id[3] = { 0, 0, 0 };
	struct scene s = { .isa = EMU_ISA_GFX90A, .n_waves = 17, .n_groups = 1 };
	u32 i;

	for (i = 0; i < 17; i++)
		wave_fill(&s.waves[i], EMU_ISA_GFX90A, 4, 4, id, i);
	s.groups[0] = (struct emu_cwsr_group){ { 0, 0, 0 }, 0, 17, NULL, 0 };
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == -EINVAL);
	s.groups[0].n_waves = 16;
	EXPECT(encode_size_of(&s, BIG_CTX, MI210_CTL) == 0);
	scene_free(&s);
}

/* ---- what cannot be restored ----------------------------------------------------- */

/*
 * A decode that fails leaves the caller's waves and groups as they were:
 * fill them with a pattern and look at it afterwards.
 */
static int refused_untouched(struct saved *sv, u32 wave_area_size)
{
	struct restored r;
	u32 i, n_groups, n_waves;
	int ret, untouched = 1;

	memset(&r, 0, sizeof(r));
	if (emu_cwsr_scan(&sv->area, sv->ctl, &sv->st, NULL, 0, NULL, 0, &n_groups, &n_waves))
		return 1;	/* refused before anything was handed out */
	r.n_groups = n_groups;
	r.n_waves = n_waves;
	r.groups = calloc(n_groups + 1, sizeof(*r.groups));
	r.waves = calloc(n_waves + 1, sizeof(*r.waves));
	if (emu_cwsr_scan(&sv->area, sv->ctl, &sv->st, r.groups, n_groups, r.waves, n_waves,
			  &n_groups, &n_waves))
		untouched = 0;
	for (i = 0; i < n_waves; i++) {
		u32 regs = r.waves[i].nvgpr + r.waves[i].nagpr;

		r.waves[i].vgpr = malloc(regs * sizeof(*r.waves[i].vgpr) + 1);
		memset(r.waves[i].vgpr, 0x5a, regs * sizeof(*r.waves[i].vgpr));
		r.waves[i].pc = 0x5a5a;
		r.waves[i].state = EMU_WAVE_ENDED;
		memset(r.waves[i].sgpr, 0x5a, sizeof(r.waves[i].sgpr));
	}
	for (i = 0; i < n_groups; i++) {
		r.groups[i].lds = malloc(r.groups[i].lds_size + 1);
		memset(r.groups[i].lds, 0x5a, r.groups[i].lds_size);
		memset(r.groups[i].id, 0x5a, sizeof(r.groups[i].id));
	}
	ret = emu_cwsr_decode(&sv->area, sv->ctl, &sv->st, sv->wave_area, wave_area_size,
			      r.groups, n_groups, r.waves, n_waves);
	if (ret != -EINVAL)
		untouched = 0;
	for (i = 0; i < n_waves; i++) {
		u32 regs = r.waves[i].nvgpr + r.waves[i].nagpr, k;
		const u8 *v = (const u8 *)r.waves[i].vgpr;

		if (r.waves[i].pc != 0x5a5a || r.waves[i].state != EMU_WAVE_ENDED ||
		    r.waves[i].sgpr[0] != 0x5a5a5a5a || r.waves[i].lds)
			untouched = 0;
		for (k = 0; k < regs * sizeof(*r.waves[i].vgpr); k++)
			if (v[k] != 0x5a)
				untouched = 0;
	}
	for (i = 0; i < n_groups; i++) {
		if (r.groups[i].id[0] != 0x5a5a5a5a ||
		    (r.groups[i].lds_size && r.groups[i].lds[0] != 0x5a))
			untouched = 0;
	}
	restored_free(&r);
	return untouched;
}

/* a known scene of 3 groups, saved; its records located from the walk by hand */
static void three_groups(struct scene *s, struct saved *sv)
{
	static const u32 ids[3][3] = { { 1, 0, 0 }, { 2, 0, 0 }, { 3, 0, 0 } };
	u32 g, j, w = 0;

	memset(s, 0, sizeof(*s));
	s->isa = EMU_ISA_GFX90A;
	s->n_groups = 3;
	for (g = 0; g < 3; g++) {
		s->groups[g].id[0] = ids[g][0];
		s->groups[g].first_wave = w;
		s->groups[g].n_waves = 2;
		s->groups[g].lds_size = 1024;
		s->groups[g].lds = malloc(1024);
		memset(s->groups[g].lds, g + 1, 1024);
		for (j = 0; j < 2; j++)
			wave_fill(&s->waves[w++], EMU_ISA_GFX90A, 8, 0, ids[g], j);
	}
	s->n_waves = w;
	save(s, BIG_CTX, MI210_CTL, sv);
}

/* record sizes in three_groups: 8 VGPRs, 112 SGPRs, 128, (LDS), 64 */
#define REC		(8 * 256 + 448 + 128 + 64)
#define REC_FIRST	(REC + 1024)
/* the bottom record is group 0's second wave: its extra bytes at REC - 64 */

static void test_decode_refuses_truncated(void)
{
	struct scene s;
	struct saved sv;
	struct emu_cwsr_state keep;

	three_groups(&s, &sv);
	EXPECT(sv.wave_bytes == 3 * (REC + REC_FIRST));
	EXPECT(refused_untouched(&sv, sv.wave_bytes) == 0);	/* intact: it decodes */
	EXPECT(refused_untouched(&sv, sv.wave_bytes - 4));	/* the caller read less */
	EXPECT(refused_untouched(&sv, sv.wave_bytes + 4));

	keep = sv.st;
	sv.st.wg_state_offset -= REC;			/* one record short */
	EXPECT(refused_untouched(&sv, sv.wave_bytes - REC));
	sv.st = keep;
	sv.st.wg_state_offset += 64;			/* more data than records */
	EXPECT(refused_untouched(&sv, sv.wave_bytes + 64));
	sv.st = keep;
	sv.st.cntl_stack_offset += 4;			/* firmware words cut */
	EXPECT(refused_untouched(&sv, sv.wave_bytes));
	sv.st = keep;
	sv.st.cntl_stack_offset += 8;			/* the marker skipped */
	EXPECT(refused_untouched(&sv, sv.wave_bytes));
	sv.st = keep;
	sv.st.cntl_stack_offset -= 4;			/* a word below the stack */
	EXPECT(refused_untouched(&sv, sv.wave_bytes));
	sv.st = keep;
	sv.st.cntl_stack_offset = sv.area.ctl_stack_size - 8;	/* only the last entries */
	EXPECT(refused_untouched(&sv, sv.wave_bytes));
	sv.st = keep;
	sv.area.wave_area_end = sv.st.wg_state_offset - 4;	/* an area smaller than said */
	EXPECT(refused_untouched(&sv, sv.wave_bytes));
	saved_free(&sv);
	scene_free(&s);
}

/* flip a control stack word and expect a refusal */
static int refused_with_word(struct saved *sv, u32 index, u32 xor_mask)
{
	u8 *p = sv->ctl + sv->st.cntl_stack_offset + index * 4;
	int ok;

	put32(p, get32(p) ^ xor_mask);
	ok = refused_untouched(sv, sv->wave_bytes);
	put32(p, get32(p) ^ xor_mask);
	return ok;
}

static int refused_with_record_word(struct saved *sv, u32 offset, u32 xor_mask)
{
	u8 *p = sv->wave_area + offset;
	int ok;

	put32(p, get32(p) ^ xor_mask);
	ok = refused_untouched(sv, sv->wave_bytes);
	put32(p, get32(p) ^ xor_mask);
	return ok;
}

static void test_decode_refuses_inconsistent_control_stack(void)
{
	struct scene s;
	struct saved sv;

	/*
	 * three_groups' stack: [marker][6] then per group (2 down to 0)
	 * [state][first wave][last wave]: words 2..10.
	 */
	three_groups(&s, &sv);
	EXPECT(get32(sv.ctl + sv.st.cntl_stack_offset + 2 * 4) >> 31 == 1);
	EXPECT(refused_with_word(&sv, 0, 1));			/* marker */
	EXPECT(refused_with_word(&sv, 1, 1));			/* wave count */
	EXPECT(refused_with_word(&sv, 4, 1u << 16));		/* group without its last */
	EXPECT(refused_with_word(&sv, 3, 1u << 17));		/* group without its first */
	EXPECT(refused_with_word(&sv, 4, 1u << 17));		/* a first inside a group */
	EXPECT(refused_with_word(&sv, 3, 1u << 30));		/* a wave turned event */
	EXPECT(refused_with_word(&sv, 3, 1u << 31));		/* a wave turned state */
	EXPECT(refused_with_word(&sv, 3, 1u << 20));		/* undefined wave bits */
	EXPECT(refused_with_word(&sv, 2, 1u << 0));		/* more VGPRs than saved */
	EXPECT(refused_with_word(&sv, 2, 1u << 9));		/* other LDS size */
	EXPECT(refused_with_word(&sv, 2, 7u << 6));		/* SGPR blocks 0 */
	EXPECT(refused_with_word(&sv, 2, 1u << 20));		/* undefined state bits */
	EXPECT(refused_with_word(&sv, 2, 0x3fu << 24));		/* more VGPRs than the file */
	EXPECT(refused_with_word(&sv, 2, 0xffffffffu));		/* event: no state before */

	/* the same words pass unmodified */
	EXPECT(refused_with_word(&sv, 3, 0) == 0);
	saved_free(&sv);
	scene_free(&s);
}

static void test_decode_refuses_bad_records(void)
{
	struct scene s;
	struct saved sv;
	u32 bottom_hw = 8 * 256 + 448, bottom_extra = REC - 64;

	three_groups(&s, &sv);
	/* the bottom record (group 0's second wave) is the last one decoded */
	EXPECT(refused_with_record_word(&sv, bottom_extra, 1));		/* magic */
	EXPECT(refused_with_record_word(&sv, bottom_extra + 4, EMU_WAVE_ENDED ^
					get32(sv.wave_area + bottom_extra + 4)));
	EXPECT(refused_with_record_word(&sv, bottom_extra + 4, 0x100));	/* no such state */
	EXPECT(refused_with_record_word(&sv, bottom_extra + 60, 1));	/* reserved */
	EXPECT(refused_with_record_word(&sv, bottom_hw + 12 * 4, 1));	/* unused hwreg */
	EXPECT(refused_with_record_word(&sv, bottom_hw + 2 * 4, 1u << 20)); /* PC_HI reserved */
	EXPECT(refused_with_record_word(&sv, 8 * 256 + 104 * 4, 1));	/* XNACK copy */
	EXPECT(refused_with_record_word(&sv, 8 * 256 + 110 * 4, 1));	/* past the aliases */
	EXPECT(refused_with_record_word(&sv, bottom_hw + 64 + 8 * 4, 1));	/* other group id */
	EXPECT(refused_with_record_word(&sv, bottom_hw + 64 + 11 * 4, 1));	/* position taken */

	/* replay state in PC_HI[31:26] is the hardware's: accepted, PC unchanged */
	EXPECT(refused_with_record_word(&sv, bottom_hw + 2 * 4, 0xfc000000u) == 0);
	saved_free(&sv);
	scene_free(&s);
}

static void test_decode_refuses_garbage(void)
{
	int iter, refused = 0, rounds = 300;

	for (iter = 0; iter < rounds; iter++) {
		struct scene s;
		struct saved sv;
		u32 used, i;

		three_groups(&s, &sv);
		used = sv.area.ctl_stack_size - sv.st.cntl_stack_offset;
		/* garbage after valid firmware words (half the time over them too) */
		for (i = iter % 2 ? 0 : 8; i < used; i += 4)
			put32(sv.ctl + sv.st.cntl_stack_offset + i, rnd());
		if (refused_untouched(&sv, sv.wave_bytes))
			refused++;
		saved_free(&sv);
		scene_free(&s);
	}
	EXPECT(refused == rounds);

	/* and whole areas of garbage, offsets included */
	for (iter = 0; iter < rounds; iter++) {
		struct saved sv;
		u32 i;

		memset(&sv, 0, sizeof(sv));
		emu_cwsr_area_init(&sv.area, EMU_ISA_GFX90A, 0x9000 + 0x40000, 0x9000);
		sv.ctl = malloc(0x9000);
		for (i = 0; i < 0x9000; i += 4)
			put32(sv.ctl + i, iter % 3 ? rnd() : (iter % 2 ? 0 : 0xffffffff));
		sv.st.cntl_stack_offset = rnd_below(0x9000 / 4 + 1) * 4;
		sv.st.wg_state_offset = 0x9000 + rnd_below(0x40000 / 4 + 1) * 4;
		sv.wave_bytes = sv.st.wg_state_offset - 0x9000;
		sv.wave_area = malloc(sv.wave_bytes + 1);
		for (i = 0; i + 4 <= sv.wave_bytes; i += 4)
			put32(sv.wave_area + i, rnd());
		EXPECT(refused_untouched(&sv, sv.wave_bytes));
		saved_free(&sv);
	}
}

/*
 * Records whose sizes add up past 4 GiB must not wrap around to the size
 * given: 21775 one-wave groups of 512 VGPRs and 64 KiB of LDS take
 * 21775 * 197248 bytes = 2^32 + 107904.
 */
static void test_decode_refuses_sizes_that_wrap(void)
{
	const u32 rec = 512 * 256 + 448 + 128 + 65536 + 64, k = 21775;
	struct saved sv;
	u32 n_groups, n_waves, i, word;

	EXPECT((u64)rec * k - (1ull << 32) == 107904);
	memset(&sv, 0, sizeof(sv));
	EXPECT(emu_cwsr_area_init(&sv.area, EMU_ISA_GFX90A, EMU_CWSR_MAX_CTL_STACK + 0x100000,
				  EMU_CWSR_MAX_CTL_STACK) == 0);
	sv.ctl = calloc(1, EMU_CWSR_MAX_CTL_STACK);
	sv.st.cntl_stack_offset = EMU_CWSR_MAX_CTL_STACK - 4 * (3 + k);
	sv.st.wg_state_offset = EMU_CWSR_MAX_CTL_STACK + 107904;
	word = sv.st.cntl_stack_offset;
	put32(sv.ctl + word, 0x63554d45);		/* the marker */
	put32(sv.ctl + word + 4, k);
	/* 512 VGPRs of which 256 architected, 8 SGPR blocks, 128 LDS granules */
	put32(sv.ctl + word + 8, 0x80000000u | 63 | 7 << 6 | 128 << 9 | 63 << 24);
	for (i = 0; i < k; i++)
		put32(sv.ctl + word + 12 + 4 * i, 0x00030000);
	EXPECT(emu_cwsr_scan(&sv.area, sv.ctl, &sv.st, NULL, 0, NULL, 0,
			     &n_groups, &n_waves) == -EINVAL);
	free(sv.ctl);
}

int main(void)
{
	run("sizes of MI210 and MI100 save areas as amdkfd and the thunk compute them",
	    test_sizes_mi210_mi100);
	run("area and saved-state offsets are checked", test_area_and_state_checks);
	run("the 16-byte wave_state header of 6.8+ kernels", test_wave_state_header);
	run("gfx90a control stack words and record offsets as computed by hand",
	    test_control_stack_by_hand_gfx90a);
	run("gfx908 control stack words and record size as computed by hand",
	    test_control_stack_by_hand_gfx908);
	run("ROCdbgapi's walk of the save area finds every register", test_rocdbgapi_reads_what_we_save);
	run("random waves of several workgroups round-trip", test_round_trip_random);
	run("saving a restored queue again gives the same bytes", test_second_cycle_is_identical);
	run("an empty queue saves and restores nothing", test_empty_queue);
	run("encode refuses waves the hardware could not have saved", test_encode_refuses);
	run("a workgroup of 17 waves is refused, of 16 accepted", test_seventeen_waves_refused);
	run("decode refuses truncated input and leaves its outputs alone",
	    test_decode_refuses_truncated);
	run("decode refuses an inconsistent control stack",
	    test_decode_refuses_inconsistent_control_stack);
	run("decode refuses records that are not ours", test_decode_refuses_bad_records);
	run("decode refuses garbage", test_decode_refuses_garbage);
	run("decode refuses record sizes that wrap past 4 GiB", test_decode_refuses_sizes_that_wrap);
	printf("%u passed, %u failed\n", n_passed, n_failed);
	return n_failed ? 1 : 0;
}
