// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: the shader core — an interpreter of gfx9 machine code as
 * gfx908 (MI100), gfx90a (MI200) and gfx942 (MI300) run it, one wave at a
 * time.
 *
 * The encodings, opcodes and their semantics are those of the public AMD
 * "Vega" Instruction Set Architecture reference guide and of the "AMD
 * Instinct MI200 (CDNA 2)" and "MI300 (CDNA 3) Instruction Set Architecture"
 * reference guides, checked against what llvm-mc assembles for gfx908,
 * gfx90a and gfx940.
 *
 * gfx942 is gfx90a's encoding with these differences, found by
 * disassembling every opcode of every encoding for both targets and by the
 * code hipcc and the runtimes build for gfx942: VOP2 0x17/0x18 are the
 * fused v_fmamk_f32/v_fmaak_f32 (gfx90a: the unfused v_madmk/v_madak);
 * v_mac_f32, v_mad_f32 and v_mad_legacy_f32 are gone; new are v_mov_b64
 * (VOP1 0x38), v_lshl_add_u64 (VOP3 0x208), the fp8/bf8 conversions, the
 * LDS-DMA global loads, more MFMA forms and HW_REG_XCC_ID (20); the
 * cache-policy bits glc/slc/scc are named sc0/nt/sc1 with the same
 * positions; MUBUF 0x29 is buffer_inv (gfx90a: buffer_invl2).
 *
 * This file: the issue loop, the decode of an instruction's encoding, the
 * scalar ALU (SOP1, SOP2, SOPK, SOPC, SOPP), operand decoding and memory
 * through the dispatcher's map callback.  emu_shader_vector.c has the
 * vector ALU (VOP1, VOP2, VOPC, VOP3A/B, VOP3P; floats through
 * emu_shader_fp.c), emu_shader_memory.c the memory instructions (SMEM, DS,
 * FLAT/GLOBAL).
 *
 * Where it is not the hardware:
 * - Every instruction completes before the next issues: no waitcnt
 *   counters, no hazards (s_nop, s_waitcnt and s_setprio do nothing), no
 *   instruction prefetch (a store into the code is seen at once).
 * - Not executed, the wave stops as EMU_WAVE_ILLEGAL at the instruction:
 *   MUBUF (but for its cache write-back and invalidate instructions,
 *   which have nothing to do: memory is coherent), MTBUF, MIMG, EXP,
 *   VINTRP, scratch, GDS, DPP and SDWA, the fp8 conversions, the
 *   matrix (MFMA) instructions, traps (s_trap), s_sendmsg, s_setkill,
 *   s_sethalt, s_rfe, s_movrel*, s_set_gpr_idx_* and the opcodes no table
 *   below lists.  A VGPR or AccVGPR beyond what the kernel descriptor
 *   allocated is illegal too (hardware would reach other waves' registers).
 * - s_getreg of registers other than MODE, STATUS, TRAPSTS and (gfx942)
 *   XCC_ID reads 0;
 *   s_setreg writes MODE and TRAPSTS only (of STATUS, SCC).
 * - s_memtime and s_memrealtime read the host's raw monotonic clock, in
 *   nanoseconds and in 100 MHz ticks.
 * - A memory access the VM refuses stops the wave as EMU_WAVE_MEMVIOL at
 *   the instruction, having written nothing (emu_shader_memory.c says how
 *   far that holds).
 */
#include "emu_shader_internal.h"

/* --- memory --- */

u8 *emu_map_range(struct emu_exec *c, struct emu_map_cache *mc, u64 va, u32 size,
		  enum emu_mem_access acc)
{
	u32 room;
	u8 *p;

	if (mc->host && va >= mc->va && va - mc->va + size <= mc->room)
		return mc->host + (va - mc->va);
	p = c->mem->map(c->mem->ctx, va, acc, &room);
	if (!p)
		return NULL;
	mc->va = va;
	mc->host = p;
	mc->room = room;
	return room >= size ? p : NULL;
}

/* byte by byte, for ranges split across host pieces */
static bool mem_bytes(struct emu_exec *c, struct emu_map_cache *mc, u64 va, u8 *buf,
		      u32 size, enum emu_mem_access acc)
{
	u32 i;

	for (i = 0; i < size; i++) {
		u8 *p = emu_map_range(c, mc, va + i, 1, acc);

		if (!p)
			return emu_memviol(c, va + i);
		if (acc == EMU_MEM_WRITE)
			*p = buf[i];
		else
			buf[i] = *p;
	}
	return true;
}

bool emu_mem_read(struct emu_exec *c, u64 va, void *buf, u32 size)
{
	u8 *p = emu_map_range(c, &c->rd, va, size, EMU_MEM_READ);

	if (!p)
		return mem_bytes(c, &c->rd, va, buf, size, EMU_MEM_READ);
	memcpy(buf, p, size);
	return true;
}

bool emu_mem_write(struct emu_exec *c, u64 va, const void *buf, u32 size)
{
	u8 *p = emu_map_range(c, &c->wr, va, size, EMU_MEM_WRITE);

	if (!p)
		return mem_bytes(c, &c->wr, va, (u8 *)buf, size, EMU_MEM_WRITE);
	memcpy(p, buf, size);
	return true;
}

bool emu_fetch(struct emu_exec *c, u64 va, u32 *word)
{
	u8 *p = emu_map_range(c, &c->ic, va, 4, EMU_MEM_EXEC);

	if (!p)
		return mem_bytes(c, &c->ic, va, (u8 *)word, 4, EMU_MEM_EXEC);
	memcpy(word, p, 4);
	return true;
}

/* --- operands --- */

/* inline float constants 240..248 (0.5, -0.5, 1, -1, 2, -2, 4, -4, 1/(2*pi)) */
static const u16 inline_f16[9] = {
	0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118,
};
static const u32 inline_f32[9] = {
	0x3f000000, 0xbf000000, 0x3f800000, 0xbf800000, 0x40000000, 0xc0000000,
	0x40800000, 0xc0800000, 0x3e22f983,
};
static const u64 inline_f64[9] = {
	0x3fe0000000000000ull, 0xbfe0000000000000ull, 0x3ff0000000000000ull,
	0xbff0000000000000ull, 0x4000000000000000ull, 0xc000000000000000ull,
	0x4010000000000000ull, 0xc010000000000000ull, 0x3fc45f306dc9c882ull,
};

/* one 32-bit scalar register; false: @code is none */
static bool sreg32(const struct emu_wave *w, unsigned int code, u32 *v)
{
	if (code < EMU_WAVE_SGPRS) {
		*v = w->sgpr[code];
		return true;
	}
	switch (code) {
	case 102: *v = (u32)w->flat_scratch; return true;
	case 103: *v = w->flat_scratch >> 32; return true;
	case 104: *v = (u32)w->xnack_mask; return true;
	case 105: *v = w->xnack_mask >> 32; return true;
	case 106: *v = (u32)w->vcc; return true;
	case 107: *v = w->vcc >> 32; return true;
	case 124: *v = w->m0; return true;
	case 126: *v = (u32)w->exec; return true;
	case 127: *v = w->exec >> 32; return true;
	}
	if (code >= 108 && code < 108 + EMU_WAVE_TTMPS) {
		*v = w->ttmp[code - 108];
		return true;
	}
	return false;
}

bool emu_sread(struct emu_exec *c, unsigned int code, enum emu_opnd kind, u64 *v)
{
	const struct emu_wave *w = c->w;
	bool is64 = emu_opnd_is64(kind);
	u32 lo, hi;

	if (code < 128) {
		if (!sreg32(w, code, &lo))
			return false;
		hi = 0;
		/* a pair: both halves must exist (s101 has no partner) */
		if (is64 && (code == EMU_WAVE_SGPRS - 1 || !sreg32(w, code + 1, &hi)))
			return false;
		*v = lo | (u64)hi << 32;
		return true;
	}
	if (code <= 192) {
		*v = code - 128;
		return true;
	}
	if (code <= 208) {
		s64 n = -(s64)(code - 192);

		*v = is64 ? (u64)n : (u32)n;
		return true;
	}
	if (code >= 240 && code <= 248) {
		if (kind == EMU_F16)
			*v = inline_f16[code - 240];
		else if (kind == EMU_F64)
			*v = inline_f64[code - 240];
		else
			*v = inline_f32[code - 240];
		return true;
	}
	switch (code) {
	case 235:	/* src_shared_base, src_shared_limit */
	case 237:
	case 236:	/* src_private_base, src_private_limit */
	case 238: {
		u64 base = code & 1 ? w->lds_aperture : w->scratch_aperture;

		/* 32 bits: the aperture's high half; 64: its first or last byte */
		if (!is64)
			*v = base >> 32;
		else
			*v = code >= 237 ? base | 0xffffffffull : base;
		return true;
	}
	case 251:
		*v = w->vcc == 0;
		return true;
	case 252:
		*v = w->exec == 0;
		return true;
	case 253:
		*v = emu_scc(w);
		return true;
	case 255:
		if (!c->has_literal) {
			if (!emu_fetch(c, c->pc + c->len, &c->literal))
				return false;
			c->has_literal = true;
		}
		*v = kind == EMU_F64 ? (u64)c->literal << 32 : c->literal;
		return true;
	}
	return false;
}

bool emu_sdst_ok(unsigned int code, bool is64)
{
	if (code < EMU_WAVE_SGPRS)
		return !is64 || code + 1 < EMU_WAVE_SGPRS;
	if (code >= 102 && code <= 107)
		return !is64 || !(code & 1);
	if (code >= 108 && code < 108 + EMU_WAVE_TTMPS)
		return !is64 || code + 1 < 108 + EMU_WAVE_TTMPS;
	if (code == 124)
		return !is64;
	if (code == 126 || code == 127)
		return !is64 || code == 126;
	return false;
}

static void sreg32_write(struct emu_wave *w, unsigned int code, u32 v)
{
	u64 *pair = NULL;

	if (code < EMU_WAVE_SGPRS) {
		w->sgpr[code] = v;
		return;
	}
	if (code >= 108 && code < 108 + EMU_WAVE_TTMPS) {
		w->ttmp[code - 108] = v;
		return;
	}
	switch (code & ~1u) {
	case 102: pair = &w->flat_scratch; break;
	case 104: pair = &w->xnack_mask; break;
	case 106: pair = &w->vcc; break;
	case 126: pair = &w->exec; break;
	case 124: w->m0 = v; return;
	}
	if (!pair)
		return;
	if (code & 1)
		*pair = (u32)*pair | (u64)v << 32;
	else
		*pair = (*pair & ~0xffffffffull) | v;
}

void emu_swrite(struct emu_wave *w, unsigned int code, bool is64, u64 v)
{
	sreg32_write(w, code, (u32)v);
	if (is64)
		sreg32_write(w, code + 1, v >> 32);
}

bool emu_vread(struct emu_exec *c, unsigned int code, enum emu_opnd kind, u64 *out)
{
	unsigned int i;
	u64 s;

	if (code >= 256) {
		const u32 *lo = emu_vreg(c->w, code - 256, false);
		const u32 *hi = NULL;

		if (!lo)
			return false;
		if (emu_opnd_is64(kind)) {
			hi = emu_vreg(c->w, code - 255, false);
			if (!hi)
				return false;
			for (i = 0; i < EMU_WAVE_LANES; i++)
				out[i] = lo[i] | (u64)hi[i] << 32;
		} else {
			for (i = 0; i < EMU_WAVE_LANES; i++)
				out[i] = lo[i];
		}
		return true;
	}
	if (!emu_sread(c, code, kind, &s))
		return false;
	for (i = 0; i < EMU_WAVE_LANES; i++)
		out[i] = s;
	return true;
}

void emu_vwrite(struct emu_wave *w, unsigned int n, bool acc, bool is64, const u64 *d,
		u64 exec)
{
	u32 *lo = emu_vreg(w, n, acc);
	u32 *hi = is64 ? emu_vreg(w, n + 1, acc) : NULL;
	unsigned int i;

	if (exec == ~0ull && !hi) {
		for (i = 0; i < EMU_WAVE_LANES; i++)
			lo[i] = d[i];
		return;
	}
	EMU_LANES(exec, i) {
		lo[i] = d[i];
		if (hi)
			hi[i] = d[i] >> 32;
	}
}

/* --- scalar ALU --- */

static u64 bfe64(u64 v, u32 spec, bool sign, unsigned int bits)
{
	unsigned int off = spec & (bits - 1), width = (spec >> 16) & 0x7f;

	if (!width)
		return 0;
	if (width > bits)
		width = bits;
	v >>= off;
	if (width < 64)
		v &= (1ull << width) - 1;
	if (sign && width < 64 && (v >> (width - 1) & 1))
		v |= ~0ull << width;
	return bits == 32 ? (u32)v : v;
}

static bool sop2_is64(unsigned int op, bool *src1_64, bool *dst_64)
{
	switch (op) {
	case SOP2_CSELECT_B64:
	case SOP2_AND_B64: case SOP2_OR_B64: case SOP2_XOR_B64:
	case SOP2_ANDN2_B64: case SOP2_ORN2_B64: case SOP2_NAND_B64:
	case SOP2_NOR_B64: case SOP2_XNOR_B64:
		*src1_64 = *dst_64 = true;
		return true;
	case SOP2_LSHL_B64: case SOP2_LSHR_B64: case SOP2_ASHR_I64:
	case SOP2_BFE_U64: case SOP2_BFE_I64:
		*src1_64 = false;
		*dst_64 = true;
		return true;
	case SOP2_BFM_B64:
		*src1_64 = false;
		*dst_64 = true;
		return false;
	}
	*src1_64 = *dst_64 = false;
	return false;
}

bool emu_exec_sop2(struct emu_exec *c)
{
	struct emu_wave *w = c->w;
	u32 word = c->word[0];
	unsigned int op = (word >> 23) & 0x7f, sdst = (word >> 16) & 0x7f;
	bool s0_64, s1_64, d64, scc = emu_scc(w), wscc = true;
	u64 a, b, d;
	u32 x, y;

	s0_64 = sop2_is64(op, &s1_64, &d64);
	if (!emu_sread(c, word & 0xff, s0_64 ? EMU_B64 : EMU_B32, &a) ||
	    !emu_sread(c, (word >> 8) & 0xff, s1_64 ? EMU_B64 : EMU_B32, &b) ||
	    !emu_sdst_ok(sdst, d64))
		return emu_illegal(c);
	x = a;
	y = b;
	switch (op) {
	case SOP2_ADD_U32: d = (u64)x + y; scc = d >> 32; break;
	case SOP2_SUB_U32: d = x - y; scc = y > x; break;
	case SOP2_ADDC_U32: d = (u64)x + y + scc; scc = d >> 32; break;
	case SOP2_SUBB_U32: d = (u32)(x - y - scc); scc = (u64)y + scc > x; break;
	case SOP2_ADD_I32:
		d = (u32)(x + y);
		scc = ((x ^ ~y) & (x ^ (u32)d)) >> 31;
		break;
	case SOP2_SUB_I32:
		d = (u32)(x - y);
		scc = ((x ^ y) & (x ^ (u32)d)) >> 31;
		break;
	case SOP2_MIN_I32: scc = (s32)x < (s32)y; d = scc ? x : y; break;
	case SOP2_MIN_U32: scc = x < y; d = scc ? x : y; break;
	case SOP2_MAX_I32: scc = (s32)x > (s32)y; d = scc ? x : y; break;
	case SOP2_MAX_U32: scc = x > y; d = scc ? x : y; break;
	case SOP2_CSELECT_B32:
	case SOP2_CSELECT_B64: d = scc ? a : b; wscc = false; break;
	case SOP2_AND_B32: case SOP2_AND_B64: d = a & b; break;
	case SOP2_OR_B32: case SOP2_OR_B64: d = a | b; break;
	case SOP2_XOR_B32: case SOP2_XOR_B64: d = a ^ b; break;
	case SOP2_ANDN2_B32: case SOP2_ANDN2_B64: d = a & ~b; break;
	case SOP2_ORN2_B32: case SOP2_ORN2_B64: d = a | ~b; break;
	case SOP2_NAND_B32: case SOP2_NAND_B64: d = ~(a & b); break;
	case SOP2_NOR_B32: case SOP2_NOR_B64: d = ~(a | b); break;
	case SOP2_XNOR_B32: case SOP2_XNOR_B64: d = ~(a ^ b); break;
	case SOP2_LSHL_B32: d = (u32)(x << (y & 31)); break;
	case SOP2_LSHL_B64: d = a << (y & 63); break;
	case SOP2_LSHR_B32: d = x >> (y & 31); break;
	case SOP2_LSHR_B64: d = a >> (y & 63); break;
	case SOP2_ASHR_I32: d = (u32)((s32)x >> (y & 31)); break;
	case SOP2_ASHR_I64: d = (u64)((s64)a >> (y & 63)); break;
	case SOP2_BFM_B32: d = (u32)(((1ull << (x & 31)) - 1) << (y & 31)); wscc = false; break;
	case SOP2_BFM_B64: d = ((x & 63) ? ((1ull << (x & 63)) - 1) : 0) << (y & 63);
		wscc = false;
		break;
	case SOP2_MUL_I32: d = (u32)(x * y); wscc = false; break;
	case SOP2_MUL_HI_U32: d = ((u64)x * y) >> 32; wscc = false; break;
	case SOP2_MUL_HI_I32: d = (u32)(((s64)(s32)x * (s32)y) >> 32); wscc = false; break;
	case SOP2_BFE_U32: d = bfe64(x, y, false, 32); break;
	case SOP2_BFE_I32: d = bfe64(x, y, true, 32); break;
	case SOP2_BFE_U64: d = bfe64(a, y, false, 64); break;
	case SOP2_BFE_I64: d = bfe64(a, y, true, 64); break;
	case SOP2_ABSDIFF_I32: {
		s64 diff = (s64)(s32)x - (s32)y;

		d = (u32)(diff < 0 ? -diff : diff);
		break;
	}
	case SOP2_LSHL1_ADD_U32: case SOP2_LSHL2_ADD_U32:
	case SOP2_LSHL3_ADD_U32: case SOP2_LSHL4_ADD_U32:
		d = ((u64)x << (op - SOP2_LSHL1_ADD_U32 + 1)) + y;
		scc = d >> 32;
		d = (u32)d;
		break;
	case SOP2_PACK_LL_B32_B16: d = (x & 0xffff) | y << 16; wscc = false; break;
	case SOP2_PACK_LH_B32_B16: d = (x & 0xffff) | (y & 0xffff0000u); wscc = false; break;
	case SOP2_PACK_HH_B32_B16: d = (x >> 16) | (y & 0xffff0000u); wscc = false; break;
	default:
		return emu_illegal(c);
	}
	if (!d64)
		d = (u32)d;
	/* logic, shifts and bfe report a non-zero result; arithmetic set scc above */
	if (wscc && op >= SOP2_AND_B32 && op != SOP2_ABSDIFF_I32 && op < SOP2_LSHL1_ADD_U32)
		scc = d != 0;
	if (op == SOP2_ABSDIFF_I32)
		scc = d != 0;
	if (wscc)
		emu_set_scc(w, scc);
	emu_swrite(w, sdst, d64, d);
	return true;
}

/* hardware registers by s_getreg/s_setreg id */
#define HWREG_MODE	1
#define HWREG_STATUS	2
#define HWREG_TRAPSTS	3
#define HWREG_XCC_ID	20

static u32 *hwreg(struct emu_wave *w, unsigned int id)
{
	switch (id) {
	case HWREG_MODE: return &w->mode;
	case HWREG_STATUS: return &w->status;
	case HWREG_TRAPSTS: return &w->trapsts;
	}
	return NULL;
}

static void setreg(struct emu_wave *w, u32 simm, u32 v)
{
	unsigned int off = (simm >> 6) & 31, size = ((simm >> 11) & 31) + 1;
	u32 mask = (size == 32 ? ~0u : (1u << size) - 1) << off;
	u32 *r = hwreg(w, simm & 0x3f);

	if (!r)
		return;
	/* of STATUS, only SCC is the program's to change */
	if (r == &w->status)
		mask &= EMU_STATUS_SCC;
	*r = (*r & ~mask) | ((v << off) & mask);
}

static u32 getreg(struct emu_wave *w, u32 simm)
{
	unsigned int off = (simm >> 6) & 31, size = ((simm >> 11) & 31) + 1;
	u32 *r = hwreg(w, simm & 0x3f);
	u32 v = r ? *r >> off : 0;

	/* gfx942: the XCC in bits 3:0, read-only */
	if (w->isa == EMU_ISA_GFX942 && (simm & 0x3f) == HWREG_XCC_ID)
		v = (w->xcc_id & 0xf) >> off;

	return size == 32 ? v : v & ((1u << size) - 1);
}

bool emu_exec_sopk(struct emu_exec *c)
{
	struct emu_wave *w = c->w;
	u32 word = c->word[0], simm = word & 0xffff;
	unsigned int op = (word >> 23) & 0x1f, sdst = (word >> 16) & 0x7f;
	s32 k = (s16)simm;
	u64 v64 = 0;
	u32 v;

	/* these name sdst as a source too */
	if (op != SOPK_SETREG_IMM32_B32 && !emu_sdst_ok(sdst, op == SOPK_CALL_B64))
		return emu_illegal(c);
	if (op != SOPK_SETREG_IMM32_B32 && op != SOPK_CALL_B64 &&
	    !emu_sread(c, sdst, EMU_B32, &v64))
		return emu_illegal(c);
	v = v64;
	switch (op) {
	case SOPK_MOVK_I32: emu_swrite(w, sdst, false, (u32)k); break;
	case SOPK_CMOVK_I32:
		if (emu_scc(w))
			emu_swrite(w, sdst, false, (u32)k);
		break;
	case SOPK_CMPK_EQ_I32: emu_set_scc(w, (s32)v == k); break;
	case SOPK_CMPK_LG_I32: emu_set_scc(w, (s32)v != k); break;
	case SOPK_CMPK_GT_I32: emu_set_scc(w, (s32)v > k); break;
	case SOPK_CMPK_GE_I32: emu_set_scc(w, (s32)v >= k); break;
	case SOPK_CMPK_LT_I32: emu_set_scc(w, (s32)v < k); break;
	case SOPK_CMPK_LE_I32: emu_set_scc(w, (s32)v <= k); break;
	case SOPK_CMPK_EQ_U32: emu_set_scc(w, v == simm); break;
	case SOPK_CMPK_LG_U32: emu_set_scc(w, v != simm); break;
	case SOPK_CMPK_GT_U32: emu_set_scc(w, v > simm); break;
	case SOPK_CMPK_GE_U32: emu_set_scc(w, v >= simm); break;
	case SOPK_CMPK_LT_U32: emu_set_scc(w, v < simm); break;
	case SOPK_CMPK_LE_U32: emu_set_scc(w, v <= simm); break;
	case SOPK_ADDK_I32: {
		u32 d = v + (u32)k;

		emu_set_scc(w, ((v ^ ~(u32)k) & (v ^ d)) >> 31);
		emu_swrite(w, sdst, false, d);
		break;
	}
	case SOPK_MULK_I32: emu_swrite(w, sdst, false, (u32)((s32)v * k)); break;
	case SOPK_GETREG_B32: emu_swrite(w, sdst, false, getreg(w, simm)); break;
	case SOPK_SETREG_B32: setreg(w, simm, v); break;
	case SOPK_SETREG_IMM32_B32:
		if (!emu_fetch(c, c->pc + 4, &v))
			return false;
		c->len = 8;
		setreg(w, simm, v);
		break;
	case SOPK_CALL_B64:
		emu_swrite(w, sdst, true, c->pc + 4);
		c->next_pc = c->pc + 4 + (s64)k * 4;
		c->jumped = true;
		break;
	default:
		return emu_illegal(c);
	}
	return true;
}

static u32 first_one(u64 v)
{
	return v ? (u32)__builtin_ctzll(v) : ~0u;
}

static u32 flbit(u64 v, unsigned int bits)
{
	return v ? (u32)__builtin_clzll(v) - (64 - bits) : ~0u;
}

/* leading bits equal to the sign bit, not counting it: -1 for 0 and -1 */
static u32 flbit_signed(u64 v, unsigned int bits)
{
	u64 sign = v >> (bits - 1) & 1;

	if (sign)
		v = ~v & (bits == 64 ? ~0ull : (1ull << bits) - 1);
	return flbit(v, bits);
}

static u64 wqm(u64 v)
{
	u64 d = 0;
	unsigned int i;

	for (i = 0; i < 64; i += 4)
		if (v >> i & 15)
			d |= 15ull << i;
	return d;
}

static u64 quadmask(u64 v)
{
	u64 d = 0;
	unsigned int i;

	for (i = 0; i < 64; i += 4)
		if (v >> i & 15)
			d |= 1ull << (i / 4);
	return d;
}

/* source and destination widths of a SOP1 opcode */
static void sop1_widths(unsigned int op, bool *s64, bool *d64)
{
	*s64 = *d64 = false;
	switch (op) {
	case SOP1_MOV_B64: case SOP1_CMOV_B64: case SOP1_NOT_B64: case SOP1_WQM_B64:
	case SOP1_BREV_B64: case SOP1_SETPC_B64: case SOP1_SWAPPC_B64:
	case SOP1_QUADMASK_B64:
		*s64 = *d64 = true;
		break;
	case SOP1_BCNT0_I32_B64: case SOP1_BCNT1_I32_B64: case SOP1_FF0_I32_B64:
	case SOP1_FF1_I32_B64: case SOP1_FLBIT_I32_B64: case SOP1_FLBIT_I32_I64:
		*s64 = true;
		break;
	case SOP1_BITSET0_B64: case SOP1_BITSET1_B64: case SOP1_GETPC_B64:
	case SOP1_BITREPLICATE_B64_B32:
		*d64 = true;
		break;
	}
	if (op >= SOP1_AND_SAVEEXEC_B64 && op <= SOP1_XNOR_SAVEEXEC_B64)
		*s64 = *d64 = true;
	if (op >= SOP1_ANDN1_SAVEEXEC_B64 && op <= SOP1_ANDN2_WREXEC_B64)
		*s64 = *d64 = true;
}

/* the new EXEC of s_*_saveexec_b64 / s_*_wrexec_b64 */
static bool saveexec(unsigned int op, u64 s, u64 exec, u64 *d)
{
	switch (op) {
	case SOP1_AND_SAVEEXEC_B64: *d = s & exec; break;
	case SOP1_OR_SAVEEXEC_B64: *d = s | exec; break;
	case SOP1_XOR_SAVEEXEC_B64: *d = s ^ exec; break;
	case SOP1_ANDN2_SAVEEXEC_B64: *d = s & ~exec; break;
	case SOP1_ORN2_SAVEEXEC_B64: *d = s | ~exec; break;
	case SOP1_NAND_SAVEEXEC_B64: *d = ~(s & exec); break;
	case SOP1_NOR_SAVEEXEC_B64: *d = ~(s | exec); break;
	case SOP1_XNOR_SAVEEXEC_B64: *d = ~(s ^ exec); break;
	case SOP1_ANDN1_SAVEEXEC_B64: *d = ~s & exec; break;
	case SOP1_ORN1_SAVEEXEC_B64: *d = ~s | exec; break;
	case SOP1_ANDN1_WREXEC_B64: *d = ~s & exec; break;
	case SOP1_ANDN2_WREXEC_B64: *d = s & ~exec; break;
	default: return false;
	}
	return true;
}

bool emu_exec_sop1(struct emu_exec *c)
{
	struct emu_wave *w = c->w;
	u32 word = c->word[0];
	unsigned int op = (word >> 8) & 0xff, sdst = (word >> 16) & 0x7f;
	bool s64, d64, has_src = op != SOP1_GETPC_B64, has_dst = op != SOP1_SETPC_B64;
	bool wscc = false, scc = false;
	u64 s = 0, d = 0, exec;

	sop1_widths(op, &s64, &d64);
	if ((has_src && !emu_sread(c, word & 0xff, s64 ? EMU_B64 : EMU_B32, &s)) ||
	    (has_dst && !emu_sdst_ok(sdst, d64)))
		return emu_illegal(c);
	if (saveexec(op, s, w->exec, &exec)) {
		/* saveexec: sdst gets the old EXEC; wrexec: the new one */
		d = op >= SOP1_ANDN1_WREXEC_B64 ? exec : w->exec;
		w->exec = exec;
		emu_set_scc(w, exec != 0);
		emu_swrite(w, sdst, true, d);
		return true;
	}
	switch (op) {
	case SOP1_MOV_B32: case SOP1_MOV_B64: d = s; break;
	case SOP1_CMOV_B32: case SOP1_CMOV_B64:
		if (!emu_scc(w))
			return true;
		d = s;
		break;
	case SOP1_NOT_B32: case SOP1_NOT_B64: d = ~s; wscc = true; break;
	case SOP1_WQM_B32: d = wqm((u32)s); wscc = true; break;
	case SOP1_WQM_B64: d = wqm(s); wscc = true; break;
	case SOP1_BREV_B32: d = emu_brev64(s) >> 32; break;
	case SOP1_BREV_B64: d = emu_brev64(s); break;
	case SOP1_BCNT0_I32_B32: d = 32 - emu_popcount((u32)s); wscc = true; break;
	case SOP1_BCNT0_I32_B64: d = 64 - emu_popcount(s); wscc = true; break;
	case SOP1_BCNT1_I32_B32: case SOP1_BCNT1_I32_B64:
		d = emu_popcount(s);
		wscc = true;
		break;
	case SOP1_FF0_I32_B32: d = first_one(~s & 0xffffffffull); break;
	case SOP1_FF0_I32_B64: d = first_one(~s); break;
	case SOP1_FF1_I32_B32: case SOP1_FF1_I32_B64: d = first_one(s); break;
	case SOP1_FLBIT_I32_B32: d = flbit(s, 32); break;
	case SOP1_FLBIT_I32_B64: d = flbit(s, 64); break;
	case SOP1_FLBIT_I32: d = flbit_signed(s, 32); break;
	case SOP1_FLBIT_I32_I64: d = flbit_signed(s, 64); break;
	case SOP1_SEXT_I32_I8: d = (u32)(s32)(s8)s; break;
	case SOP1_SEXT_I32_I16: d = (u32)(s32)(s16)s; break;
	case SOP1_BITSET0_B32: case SOP1_BITSET1_B32:
	case SOP1_BITSET0_B64: case SOP1_BITSET1_B64: {
		unsigned int bit = s & (d64 ? 63 : 31);
		u64 old;

		/* read-modify-write of sdst */
		if (!emu_sread(c, sdst, d64 ? EMU_B64 : EMU_B32, &old))
			return emu_illegal(c);
		d = op >= SOP1_BITSET1_B32 ? old | 1ull << bit : old & ~(1ull << bit);
		break;
	}
	case SOP1_GETPC_B64: d = c->pc + 4; break;
	case SOP1_SETPC_B64:
		c->next_pc = s & ~3ull;
		c->jumped = true;
		return true;
	case SOP1_SWAPPC_B64:
		d = c->pc + 4;
		c->next_pc = s & ~3ull;
		c->jumped = true;
		break;
	case SOP1_QUADMASK_B32: d = quadmask((u32)s); wscc = true; break;
	case SOP1_QUADMASK_B64: d = quadmask(s); wscc = true; break;
	case SOP1_ABS_I32:
		d = (s32)s < 0 ? -(u32)s : (u32)s;
		wscc = true;
		break;
	case SOP1_BITREPLICATE_B64_B32: {
		unsigned int i;

		for (i = 0; i < 32; i++)
			if (s >> i & 1)
				d |= 3ull << (2 * i);
		break;
	}
	default:
		return emu_illegal(c);
	}
	if (!d64)
		d = (u32)d;
	if (wscc) {
		scc = d != 0;
		emu_set_scc(w, scc);
	}
	emu_swrite(w, sdst, d64, d);
	return true;
}

bool emu_exec_sopc(struct emu_exec *c)
{
	u32 word = c->word[0];
	unsigned int op = (word >> 16) & 0x7f;
	bool is64 = op == SOPC_CMP_EQ_U64 || op == SOPC_CMP_LG_U64 ||
		    op == SOPC_BITCMP0_B64 || op == SOPC_BITCMP1_B64;
	bool b64 = op == SOPC_CMP_EQ_U64 || op == SOPC_CMP_LG_U64;
	u64 a, b;
	bool scc;

	if (!emu_sread(c, word & 0xff, is64 ? EMU_B64 : EMU_B32, &a) ||
	    !emu_sread(c, (word >> 8) & 0xff, b64 ? EMU_B64 : EMU_B32, &b))
		return emu_illegal(c);
	switch (op) {
	case SOPC_CMP_EQ_I32: case SOPC_CMP_EQ_U32: case SOPC_CMP_EQ_U64: scc = a == b; break;
	case SOPC_CMP_LG_I32: case SOPC_CMP_LG_U32: case SOPC_CMP_LG_U64: scc = a != b; break;
	case SOPC_CMP_GT_I32: scc = (s32)a > (s32)b; break;
	case SOPC_CMP_GE_I32: scc = (s32)a >= (s32)b; break;
	case SOPC_CMP_LT_I32: scc = (s32)a < (s32)b; break;
	case SOPC_CMP_LE_I32: scc = (s32)a <= (s32)b; break;
	case SOPC_CMP_GT_U32: scc = (u32)a > (u32)b; break;
	case SOPC_CMP_GE_U32: scc = (u32)a >= (u32)b; break;
	case SOPC_CMP_LT_U32: scc = (u32)a < (u32)b; break;
	case SOPC_CMP_LE_U32: scc = (u32)a <= (u32)b; break;
	case SOPC_BITCMP0_B32: scc = !(a >> (b & 31) & 1); break;
	case SOPC_BITCMP1_B32: scc = a >> (b & 31) & 1; break;
	case SOPC_BITCMP0_B64: scc = !(a >> (b & 63) & 1); break;
	case SOPC_BITCMP1_B64: scc = a >> (b & 63) & 1; break;
	default:
		return emu_illegal(c);
	}
	emu_set_scc(c->w, scc);
	return true;
}

bool emu_exec_sopp(struct emu_exec *c)
{
	struct emu_wave *w = c->w;
	u32 word = c->word[0];
	unsigned int op = (word >> 16) & 0x7f;
	u64 target = c->pc + 4 + (s64)(s16)(word & 0xffff) * 4;
	bool take = false;

	switch (op) {
	case SOPP_NOP: case SOPP_WAITCNT: case SOPP_SETPRIO: case SOPP_ICACHE_INV:
	case SOPP_INCPERFLEVEL: case SOPP_DECPERFLEVEL: case SOPP_TTRACEDATA:
	case SOPP_WAKEUP:
		return true;
	/* no debugger is attached: the debug branches fall through */
	case SOPP_CBRANCH_CDBGSYS: case SOPP_CBRANCH_CDBGUSER:
		return true;
	case SOPP_SLEEP:
		c->yield = true;
		return true;
	case SOPP_ENDPGM:
		w->state = EMU_WAVE_ENDED;
		return true;
	case SOPP_BARRIER:
		w->state = EMU_WAVE_BARRIER;
		return true;
	case SOPP_BRANCH: take = true; break;
	case SOPP_CBRANCH_SCC0: take = !emu_scc(w); break;
	case SOPP_CBRANCH_SCC1: take = emu_scc(w); break;
	case SOPP_CBRANCH_VCCZ: take = w->vcc == 0; break;
	case SOPP_CBRANCH_VCCNZ: take = w->vcc != 0; break;
	case SOPP_CBRANCH_EXECZ: take = w->exec == 0; break;
	case SOPP_CBRANCH_EXECNZ: take = w->exec != 0; break;
	default:
		return emu_illegal(c);
	}
	if (take) {
		c->next_pc = target;
		c->jumped = true;
	}
	return true;
}

/* --- the issue loop --- */

/* one instruction at w->pc; false: the wave stopped at it */
static bool step(struct emu_exec *c)
{
	u32 w0;
	bool ok;

	c->pc = c->w->pc;
	c->jumped = false;
	c->has_literal = false;
	c->len = 4;
	if (!emu_fetch(c, c->pc, &c->word[0]))
		return false;
	w0 = c->word[0];
	if (!(w0 >> 31)) {
		/* VOP2, VOP1 (0111111), VOPC (0111110) */
		switch (w0 >> 25) {
		case 0x3f: ok = emu_exec_vop1(c); break;
		case 0x3e: ok = emu_exec_vopc(c); break;
		default: ok = emu_exec_vop2(c); break;
		}
	} else if ((w0 >> 30) == 2) {
		/* SOP2 (10), SOPK (1011), SOP1/SOPC/SOPP (101111101/0/1 + 1) */
		switch (w0 >> 23) {
		case 0x17d: ok = emu_exec_sop1(c); break;
		case 0x17e: ok = emu_exec_sopc(c); break;
		case 0x17f: ok = emu_exec_sopp(c); break;
		default:
			ok = (w0 >> 28) == 0xb ? emu_exec_sopk(c) : emu_exec_sop2(c);
			break;
		}
	} else {
		/* the 64-bit encodings: their second dword first */
		c->len = 8;
		if (!emu_fetch(c, c->pc + 4, &c->word[1]))
			return false;
		switch (w0 >> 26) {
		case 0x30: ok = emu_exec_smem(c); break;
		case 0x34:
			ok = (w0 >> 23) == 0x1a7 ? emu_exec_vop3p(c) : emu_exec_vop3(c);
			break;
		case 0x36: ok = emu_exec_ds(c); break;
		case 0x37: ok = emu_exec_flat(c); break;
		case 0x38: ok = emu_exec_mubuf(c); break;
		/* MTBUF, MIMG, EXP, VINTRP and the rest */
		default: ok = emu_illegal(c); break;
		}
	}
	if (!ok)
		return false;
	c->w->pc = c->jumped ? c->next_pc : c->pc + c->len + (c->has_literal ? 4 : 0);
	c->w->retired++;
	return true;
}

u32 emu_wave_run(struct emu_wave *w, const struct emu_shader_mem *mem, u32 budget)
{
	struct emu_exec c = { .w = w, .mem = mem };
	u32 n = 0;

	while (n < budget && w->state == EMU_WAVE_RUNNING) {
		if (!step(&c))
			break;
		n++;
		if (c.yield)
			break;
	}
	return n;
}

/* --- what the scalar side executes, for listings --- */

static const struct emu_op_name sop2_ops[] = {
	EMU_OP(SOP2_ADD_U32), EMU_OP(SOP2_SUB_U32), EMU_OP(SOP2_ADD_I32),
	EMU_OP(SOP2_SUB_I32), EMU_OP(SOP2_ADDC_U32), EMU_OP(SOP2_SUBB_U32),
	EMU_OP(SOP2_MIN_I32), EMU_OP(SOP2_MIN_U32), EMU_OP(SOP2_MAX_I32),
	EMU_OP(SOP2_MAX_U32), EMU_OP(SOP2_CSELECT_B32), EMU_OP(SOP2_CSELECT_B64),
	EMU_OP(SOP2_AND_B32), EMU_OP(SOP2_AND_B64), EMU_OP(SOP2_OR_B32),
	EMU_OP(SOP2_OR_B64), EMU_OP(SOP2_XOR_B32), EMU_OP(SOP2_XOR_B64),
	EMU_OP(SOP2_ANDN2_B32), EMU_OP(SOP2_ANDN2_B64), EMU_OP(SOP2_ORN2_B32),
	EMU_OP(SOP2_ORN2_B64), EMU_OP(SOP2_NAND_B32), EMU_OP(SOP2_NAND_B64),
	EMU_OP(SOP2_NOR_B32), EMU_OP(SOP2_NOR_B64), EMU_OP(SOP2_XNOR_B32),
	EMU_OP(SOP2_XNOR_B64), EMU_OP(SOP2_LSHL_B32), EMU_OP(SOP2_LSHL_B64),
	EMU_OP(SOP2_LSHR_B32), EMU_OP(SOP2_LSHR_B64), EMU_OP(SOP2_ASHR_I32),
	EMU_OP(SOP2_ASHR_I64), EMU_OP(SOP2_BFM_B32), EMU_OP(SOP2_BFM_B64),
	EMU_OP(SOP2_MUL_I32), EMU_OP(SOP2_BFE_U32), EMU_OP(SOP2_BFE_I32),
	EMU_OP(SOP2_BFE_U64), EMU_OP(SOP2_BFE_I64), EMU_OP(SOP2_ABSDIFF_I32),
	EMU_OP(SOP2_MUL_HI_U32), EMU_OP(SOP2_MUL_HI_I32), EMU_OP(SOP2_LSHL1_ADD_U32),
	EMU_OP(SOP2_LSHL2_ADD_U32), EMU_OP(SOP2_LSHL3_ADD_U32), EMU_OP(SOP2_LSHL4_ADD_U32),
	EMU_OP(SOP2_PACK_LL_B32_B16), EMU_OP(SOP2_PACK_LH_B32_B16),
	EMU_OP(SOP2_PACK_HH_B32_B16),
};

static const struct emu_op_name sopk_ops[] = {
	EMU_OP(SOPK_MOVK_I32), EMU_OP(SOPK_CMOVK_I32), EMU_OP(SOPK_CMPK_EQ_I32),
	EMU_OP(SOPK_CMPK_LG_I32), EMU_OP(SOPK_CMPK_GT_I32), EMU_OP(SOPK_CMPK_GE_I32),
	EMU_OP(SOPK_CMPK_LT_I32), EMU_OP(SOPK_CMPK_LE_I32), EMU_OP(SOPK_CMPK_EQ_U32),
	EMU_OP(SOPK_CMPK_LG_U32), EMU_OP(SOPK_CMPK_GT_U32), EMU_OP(SOPK_CMPK_GE_U32),
	EMU_OP(SOPK_CMPK_LT_U32), EMU_OP(SOPK_CMPK_LE_U32), EMU_OP(SOPK_ADDK_I32),
	EMU_OP(SOPK_MULK_I32), EMU_OP(SOPK_GETREG_B32), EMU_OP(SOPK_SETREG_B32),
	EMU_OP(SOPK_SETREG_IMM32_B32), EMU_OP(SOPK_CALL_B64),
};

static const struct emu_op_name sop1_ops[] = {
	EMU_OP(SOP1_MOV_B32), EMU_OP(SOP1_MOV_B64), EMU_OP(SOP1_CMOV_B32),
	EMU_OP(SOP1_CMOV_B64), EMU_OP(SOP1_NOT_B32), EMU_OP(SOP1_NOT_B64),
	EMU_OP(SOP1_WQM_B32), EMU_OP(SOP1_WQM_B64), EMU_OP(SOP1_BREV_B32),
	EMU_OP(SOP1_BREV_B64), EMU_OP(SOP1_BCNT0_I32_B32), EMU_OP(SOP1_BCNT0_I32_B64),
	EMU_OP(SOP1_BCNT1_I32_B32), EMU_OP(SOP1_BCNT1_I32_B64), EMU_OP(SOP1_FF0_I32_B32),
	EMU_OP(SOP1_FF0_I32_B64), EMU_OP(SOP1_FF1_I32_B32), EMU_OP(SOP1_FF1_I32_B64),
	EMU_OP(SOP1_FLBIT_I32_B32), EMU_OP(SOP1_FLBIT_I32_B64), EMU_OP(SOP1_FLBIT_I32),
	EMU_OP(SOP1_FLBIT_I32_I64), EMU_OP(SOP1_SEXT_I32_I8), EMU_OP(SOP1_SEXT_I32_I16),
	EMU_OP(SOP1_BITSET0_B32), EMU_OP(SOP1_BITSET0_B64), EMU_OP(SOP1_BITSET1_B32),
	EMU_OP(SOP1_BITSET1_B64), EMU_OP(SOP1_GETPC_B64), EMU_OP(SOP1_SETPC_B64),
	EMU_OP(SOP1_SWAPPC_B64), EMU_OP(SOP1_AND_SAVEEXEC_B64), EMU_OP(SOP1_OR_SAVEEXEC_B64),
	EMU_OP(SOP1_XOR_SAVEEXEC_B64), EMU_OP(SOP1_ANDN2_SAVEEXEC_B64),
	EMU_OP(SOP1_ORN2_SAVEEXEC_B64), EMU_OP(SOP1_NAND_SAVEEXEC_B64),
	EMU_OP(SOP1_NOR_SAVEEXEC_B64), EMU_OP(SOP1_XNOR_SAVEEXEC_B64),
	EMU_OP(SOP1_QUADMASK_B32), EMU_OP(SOP1_QUADMASK_B64), EMU_OP(SOP1_ABS_I32),
	EMU_OP(SOP1_ANDN1_SAVEEXEC_B64), EMU_OP(SOP1_ORN1_SAVEEXEC_B64),
	EMU_OP(SOP1_ANDN1_WREXEC_B64), EMU_OP(SOP1_ANDN2_WREXEC_B64),
	EMU_OP(SOP1_BITREPLICATE_B64_B32),
};

static const struct emu_op_name sopc_ops[] = {
	EMU_OP(SOPC_CMP_EQ_I32), EMU_OP(SOPC_CMP_LG_I32), EMU_OP(SOPC_CMP_GT_I32),
	EMU_OP(SOPC_CMP_GE_I32), EMU_OP(SOPC_CMP_LT_I32), EMU_OP(SOPC_CMP_LE_I32),
	EMU_OP(SOPC_CMP_EQ_U32), EMU_OP(SOPC_CMP_LG_U32), EMU_OP(SOPC_CMP_GT_U32),
	EMU_OP(SOPC_CMP_GE_U32), EMU_OP(SOPC_CMP_LT_U32), EMU_OP(SOPC_CMP_LE_U32),
	EMU_OP(SOPC_BITCMP0_B32), EMU_OP(SOPC_BITCMP1_B32), EMU_OP(SOPC_BITCMP0_B64),
	EMU_OP(SOPC_BITCMP1_B64), EMU_OP(SOPC_CMP_EQ_U64), EMU_OP(SOPC_CMP_LG_U64),
};

static const struct emu_op_name sopp_ops[] = {
	EMU_OP(SOPP_NOP), EMU_OP(SOPP_ENDPGM), EMU_OP(SOPP_BRANCH), EMU_OP(SOPP_WAKEUP),
	EMU_OP(SOPP_CBRANCH_SCC0), EMU_OP(SOPP_CBRANCH_SCC1), EMU_OP(SOPP_CBRANCH_VCCZ),
	EMU_OP(SOPP_CBRANCH_VCCNZ), EMU_OP(SOPP_CBRANCH_EXECZ), EMU_OP(SOPP_CBRANCH_EXECNZ),
	EMU_OP(SOPP_BARRIER), EMU_OP(SOPP_WAITCNT), EMU_OP(SOPP_SLEEP), EMU_OP(SOPP_SETPRIO),
	EMU_OP(SOPP_ICACHE_INV), EMU_OP(SOPP_INCPERFLEVEL), EMU_OP(SOPP_DECPERFLEVEL),
	EMU_OP(SOPP_TTRACEDATA), EMU_OP(SOPP_CBRANCH_CDBGSYS), EMU_OP(SOPP_CBRANCH_CDBGUSER),
};

#define TABLE(enc, prefix, ops) { enc, prefix, ops, sizeof(ops) / sizeof(ops[0]) }

static const struct emu_op_table scalar_tables[] = {
	TABLE("SOP2", "s_", sop2_ops), TABLE("SOPK", "s_", sopk_ops),
	TABLE("SOP1", "s_", sop1_ops), TABLE("SOPC", "s_", sopc_ops),
	TABLE("SOPP", "s_", sopp_ops),
};

static void list_table(const struct emu_op_table *t,
		       void (*fn)(void *arg, const char *enc, unsigned int op, const char *name),
		       void *arg)
{
	unsigned int i, j, k;
	char name[64];

	for (i = 0; i < t->count; i++) {
		const char *e = t->ops[i].name;

		while (*e && *e != '_')
			e++;
		k = 0;
		for (j = 0; t->prefix[j] && k < sizeof(name) - 1; j++)
			name[k++] = t->prefix[j];
		for (e++; *e && k < sizeof(name) - 1; e++)
			name[k++] = *e >= 'A' && *e <= 'Z' ? *e - 'A' + 'a' : *e;
		name[k] = 0;
		fn(arg, t->enc, t->ops[i].op, name);
	}
}

void emu_shader_for_each_op(void (*fn)(void *arg, const char *enc, unsigned int op,
				       const char *name), void *arg)
{
	unsigned int i;

	for (i = 0; i < sizeof(scalar_tables) / sizeof(scalar_tables[0]); i++)
		list_table(&scalar_tables[i], fn, arg);
	for (i = 0; i < emu_vector_ntables; i++)
		list_table(&emu_vector_tables[i], fn, arg);
	for (i = 0; i < emu_memory_ntables; i++)
		list_table(&emu_memory_tables[i], fn, arg);
}
