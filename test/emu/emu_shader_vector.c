// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: the shader core's vector ALU — VOP1, VOP2, VOPC, VOP3A/B and
 * VOP3P as gfx908, gfx90a and gfx942 define them (see emu_shader.c for the
 * sources and how gfx942 differs).
 *
 * Every encoding is brought to one form (struct valu, opcodes numbered as
 * in VOP3) and run by one path: read the sources for all lanes, check the
 * destination, compute into the wave's working space, then write the lanes
 * of EXEC.  Integer operations are here; floating point goes to
 * emu_shader_fp.c with the input modifiers (abs, neg) already applied and
 * the output ones (clamp, omod) passed on.
 *
 * Where it is not the hardware:
 * - VOP3 op_sel of the 16-bit operations is ignored (sources are their low
 *   halves, results are written zero-extended to 32 bits), and so is clamp
 *   on integer operations (no saturation).
 * - DPP and SDWA (src0 code 250 and 249), literals in VOP3 (gfx10 only) and
 *   the MFMA/dot instructions of VOP3P are illegal.
 */
#include "emu_shader_internal.h"

/* one VALU instruction, whichever its encoding */
struct valu {
	unsigned int op;	/* VOP3 numbering (emu_shader_ops.h) */
	unsigned int nsrc;	/* sources the encoding gives */
	unsigned int src[3];	/* 9-bit operand codes */
	unsigned int vdst;	/* VGPR, or SGPR code for results that are scalar */
	unsigned int sdst;	/* carry or compare mask out: SGPR code (106: VCC) */
	unsigned int mask_in;	/* v_cndmask / carry in: SGPR code */
	unsigned int abs, neg;	/* per source, bit k for source k */
	bool clamp;
	unsigned int omod;
	bool vop3;
};

/* operand kinds of the 64-bit and 16-bit float operations; the rest is B32 */
static bool op_is_f64(unsigned int op)
{
	switch (op) {
	case V_FMAC_F64: case V_TRUNC_F64: case V_CEIL_F64: case V_RNDNE_F64:
	case V_FLOOR_F64: case V_RCP_F64: case V_RSQ_F64: case V_SQRT_F64:
	case V_FREXP_MANT_F64: case V_FRACT_F64: case V_FMA_F64: case V_DIV_FIXUP_F64:
	case V_DIV_SCALE_F64: case V_DIV_FMAS_F64: case V_ADD_F64: case V_MUL_F64:
	case V_MIN_F64: case V_MAX_F64:
		return true;
	}
	return op >= V_CMP_F_F64 && op <= V_CMPX_TRU_F64;
}

static bool op_is_f16(unsigned int op)
{
	if ((op >= V_CMP_F_F16 && op <= V_CMPX_TRU_F16) ||
	    (op >= V_ADD_F16 && op <= V_MADAK_F16) ||
	    (op >= V_CVT_U16_F16 && op <= V_COS_F16))
		return true;
	switch (op) {
	case V_CMP_CLASS_F16: case V_CMPX_CLASS_F16: case V_MAX_F16: case V_MIN_F16:
	case V_CVT_F32_F16: case V_CVT_NORM_I16_F16: case V_CVT_NORM_U16_F16:
	case V_MAD_LEGACY_F16: case V_FMA_LEGACY_F16: case V_DIV_FIXUP_LEGACY_F16:
	case V_MIN3_F16: case V_MAX3_F16: case V_MED3_F16: case V_MAD_F16:
	case V_FMA_F16: case V_DIV_FIXUP_F16: case V_CVT_PKNORM_I16_F16:
	case V_CVT_PKNORM_U16_F16: case V_PACK_B32_F16:
		return true;
	}
	return false;
}

static enum emu_opnd src_kind(unsigned int op, unsigned int k)
{
	switch (op) {
	/* 64-bit sources of otherwise 32-bit operations, and the reverse */
	case V_CMP_CLASS_F64: case V_CMPX_CLASS_F64: case V_LDEXP_F64:
	case V_CVT_I32_F64: case V_CVT_F32_F64: case V_CVT_U32_F64:
	case V_FREXP_EXP_I32_F64: case V_TRIG_PREOP_F64:
		return k == 0 ? EMU_F64 : EMU_B32;
	case V_LSHLREV_B64: case V_LSHRREV_B64: case V_ASHRREV_I64:
		return k == 1 ? EMU_B64 : EMU_B32;
	case V_MAD_U64_U32: case V_MAD_I64_I32:
		return k == 2 ? EMU_B64 : EMU_B32;
	case V_MOV_B64:
		return k == 0 ? EMU_B64 : EMU_B32;
	case V_LSHL_ADD_U64:
		return k == 1 ? EMU_B32 : EMU_B64;
	case V_CMP_CLASS_F16: case V_CMPX_CLASS_F16: case V_LDEXP_F16:
		return k == 0 ? EMU_F16 : EMU_B32;
	}
	if (op >= V_CMP_F_I64 && op <= V_CMPX_T_U64)
		return EMU_B64;
	if (op_is_f64(op))
		return EMU_F64;
	if (op_is_f16(op) && op != V_CVT_F16_F32)
		return EMU_F16;
	return EMU_B32;
}

static bool dst_is64(unsigned int op)
{
	switch (op) {
	case V_CVT_F64_I32: case V_CVT_F64_F32: case V_CVT_F64_U32:
	case V_LDEXP_F64: case V_TRIG_PREOP_F64:
	case V_LSHLREV_B64: case V_LSHRREV_B64: case V_ASHRREV_I64:
	case V_MAD_U64_U32: case V_MAD_I64_I32:
	case V_MOV_B64: case V_LSHL_ADD_U64:
		return true;
	}
	return op >= 0x100 && op_is_f64(op);
}

/* the sign bit an abs or neg modifier acts on */
static u64 sign_bit(enum emu_opnd kind)
{
	switch (kind) {
	case EMU_F16: return 1ull << 15;
	case EMU_F64: case EMU_B64: return 1ull << 63;
	default: return 1ull << 31;
	}
}

static void modifiers(u64 *v, enum emu_opnd kind, bool abs, bool neg)
{
	u64 s = sign_bit(kind);
	unsigned int i;

	if (!abs && !neg)
		return;
	for (i = 0; i < EMU_WAVE_LANES; i++) {
		if (abs)
			v[i] &= ~s;
		if (neg)
			v[i] ^= s;
	}
}

/* the compare mask of a v_cmp over the lanes of @exec (0 in the others) */
static bool int_cmp(unsigned int op, const u64 *a, const u64 *b, u64 exec, u64 *mask)
{
	unsigned int cond = op & 7, i, bits;
	bool sign = !(op & 8);
	u64 m = 0;

	if (op >= V_CMP_F_I64)
		bits = 64;
	else if (op >= V_CMP_F_I32)
		bits = 32;
	else if (op >= V_CMP_F_I16)
		bits = 16;
	else
		return false;
	EMU_LANES(exec, i) {
		u64 x = a[i], y = b[i];
		bool lt, eq, r;

		if (bits < 64) {
			x &= (1ull << bits) - 1;
			y &= (1ull << bits) - 1;
		}
		if (sign) {
			/* flip the sign bits: unsigned order becomes signed order */
			x ^= 1ull << (bits - 1);
			y ^= 1ull << (bits - 1);
		}
		lt = x < y;
		eq = x == y;
		switch (cond) {
		case 0: r = false; break;
		case 1: r = lt; break;
		case 2: r = eq; break;
		case 3: r = lt || eq; break;
		case 4: r = !lt && !eq; break;
		case 5: r = !eq; break;
		case 6: r = !lt; break;
		default: r = true; break;
		}
		if (r)
			m |= 1ull << i;
	}
	*mask = m;
	return true;
}

static u32 sext24(u64 v)
{
	return (u32)((s32)((u32)v << 8) >> 8);
}

static u32 med3u(u32 a, u32 b, u32 c)
{
	u32 lo = a < b ? a : b, hi = a < b ? b : a;

	return c < lo ? lo : c > hi ? hi : c;
}

static s32 med3i(s32 a, s32 b, s32 c)
{
	s32 lo = a < b ? a : b, hi = a < b ? b : a;

	return c < lo ? lo : c > hi ? hi : c;
}

static u32 bfe32(u32 v, u32 off, u32 width, bool sign)
{
	off &= 31;
	width &= 31;
	if (!width)
		return 0;
	v >>= off;
	v &= width == 32 ? ~0u : (1u << width) - 1;
	if (sign && (v >> (width - 1) & 1))
		v |= ~0u << width;
	return v;
}

static u32 perm_byte(u64 in, unsigned int sel)
{
	if (sel < 8)
		return in >> (8 * sel) & 0xff;
	if (sel < 12)
		return (in >> (16 * (sel - 8) + 15) & 1) ? 0xff : 0;
	return sel == 12 ? 0 : 0xff;
}

static u32 sad(u32 a, u32 b, unsigned int bits)
{
	u32 m = (1u << bits) - 1, sum = 0;
	unsigned int k;

	for (k = 0; k < 32; k += bits) {
		u32 x = a >> k & m, y = b >> k & m;

		sum += x > y ? x - y : y - x;
	}
	return sum;
}

static u32 ffbh_signed(u32 v)
{
	if (v >> 31)
		v = ~v;
	return v ? (u32)__builtin_clz(v) - 1 : ~0u;
}

/* integer VALU operations; false: not one */
static bool int_op(unsigned int op, const u64 *a, const u64 *b, const u64 *c, u64 *d,
		   u64 exec)
{
	unsigned int i;

#define L(expr)	EMU_LANES(exec, i) d[i] = (expr)
#define X ((u32)a[i])
#define Y ((u32)b[i])
#define Z ((u32)c[i])
	switch (op) {
	case V_MOV_B32: L(X); break;
	case V_MOV_B64: L(a[i]); break;
	/* the ISA allows shifts of 0..4; the hardware takes bits 2:0 */
	case V_LSHL_ADD_U64: L((a[i] << (Y & 7)) + c[i]); break;
	case V_MUL_I32_I24: L((u32)((s32)sext24(X) * (s32)sext24(Y))); break;
	case V_MUL_HI_I32_I24: L((u32)(((s64)(s32)sext24(X) * (s32)sext24(Y)) >> 32)); break;
	case V_MUL_U32_U24: L((u32)((X & 0xffffff) * (Y & 0xffffff))); break;
	case V_MUL_HI_U32_U24: L((u32)(((u64)(X & 0xffffff) * (Y & 0xffffff)) >> 32)); break;
	case V_MIN_I32: L((s32)X < (s32)Y ? X : Y); break;
	case V_MAX_I32: L((s32)X > (s32)Y ? X : Y); break;
	case V_MIN_U32: L(X < Y ? X : Y); break;
	case V_MAX_U32: L(X > Y ? X : Y); break;
	case V_LSHRREV_B32: L(Y >> (X & 31)); break;
	case V_ASHRREV_I32: L((u32)((s32)Y >> (X & 31))); break;
	case V_LSHLREV_B32: L(Y << (X & 31)); break;
	case V_AND_B32: L(X & Y); break;
	case V_OR_B32: L(X | Y); break;
	case V_XOR_B32: L(X ^ Y); break;
	case V_XNOR_B32: L(~(X ^ Y)); break;
	case V_ADD_U16: L((X + Y) & 0xffff); break;
	case V_SUB_U16: L((X - Y) & 0xffff); break;
	case V_SUBREV_U16: L((Y - X) & 0xffff); break;
	case V_MUL_LO_U16: L((X * Y) & 0xffff); break;
	case V_LSHLREV_B16: L((Y << (X & 15)) & 0xffff); break;
	case V_LSHRREV_B16: L((Y & 0xffff) >> (X & 15)); break;
	case V_ASHRREV_I16: L((u32)((s16)Y >> (X & 15)) & 0xffff); break;
	case V_MAX_U16: L((u16)X > (u16)Y ? (u16)X : (u16)Y); break;
	case V_MIN_U16: L((u16)X < (u16)Y ? (u16)X : (u16)Y); break;
	case V_MAX_I16: L((u16)((s16)X > (s16)Y ? X : Y)); break;
	case V_MIN_I16: L((u16)((s16)X < (s16)Y ? X : Y)); break;
	case V_ADD_U32: case V_ADD_I32: L(X + Y); break;
	case V_SUB_U32: case V_SUB_I32: L(X - Y); break;
	case V_SUBREV_U32: L(Y - X); break;
	case V_ADD_I16: L((X + Y) & 0xffff); break;
	case V_SUB_I16: L((X - Y) & 0xffff); break;
	case V_NOT_B32: L(~X); break;
	case V_BFREV_B32: L(emu_brev64(X) >> 32); break;
	case V_FFBH_U32: L(X ? (u32)__builtin_clz(X) : ~0u); break;
	case V_FFBL_B32: L(X ? (u32)__builtin_ctz(X) : ~0u); break;
	case V_FFBH_I32: L(ffbh_signed(X)); break;
	case V_MAD_I32_I24: L((u32)((s32)sext24(X) * (s32)sext24(Y)) + Z); break;
	case V_MAD_U32_U24: L((u32)((X & 0xffffff) * (Y & 0xffffff)) + Z); break;
	case V_BFE_U32: L(bfe32(X, Y, Z, false)); break;
	case V_BFE_I32: L(bfe32(X, Y, Z, true)); break;
	case V_BFI_B32: L((X & Y) | (~X & Z)); break;
	case V_ALIGNBIT_B32: L((u32)((((u64)X << 32) | Y) >> (Z & 31))); break;
	case V_ALIGNBYTE_B32: L((u32)((((u64)X << 32) | Y) >> (8 * (Z & 3)))); break;
	case V_MIN3_I32: L(((s32)X < (s32)Y ? ((s32)X < (s32)Z ? X : Z) :
					      ((s32)Y < (s32)Z ? Y : Z))); break;
	case V_MAX3_I32: L((s32)X > (s32)Y ? ((s32)X > (s32)Z ? X : Z) :
			   ((s32)Y > (s32)Z ? Y : Z)); break;
	case V_MIN3_U32: L(X < Y ? (X < Z ? X : Z) : (Y < Z ? Y : Z)); break;
	case V_MAX3_U32: L(X > Y ? (X > Z ? X : Z) : (Y > Z ? Y : Z)); break;
	case V_MED3_I32: L((u32)med3i(X, Y, Z)); break;
	case V_MED3_U32: L(med3u(X, Y, Z)); break;
	case V_SAD_U8: L(sad(X, Y, 8) + Z); break;
	case V_SAD_HI_U8: L((sad(X, Y, 8) << 16) + Z); break;
	case V_SAD_U16: L(sad(X, Y, 16) + Z); break;
	case V_SAD_U32: L((X > Y ? X - Y : Y - X) + Z); break;
	case V_PERM_B32:
		EMU_LANES(exec, i) {
			u64 in = ((u64)X << 32) | Y;

			d[i] = perm_byte(in, Z & 0xff) | perm_byte(in, Z >> 8 & 0xff) << 8 |
			       perm_byte(in, Z >> 16 & 0xff) << 16 | perm_byte(in, Z >> 24) << 24;
		}
		break;
	case V_MAD_U32_U16: L((X & 0xffff) * (Y & 0xffff) + Z); break;
	case V_MAD_I32_I16: L((u32)((s32)(s16)X * (s16)Y) + Z); break;
	case V_MAD_U16: case V_MAD_LEGACY_U16: L((X * Y + Z) & 0xffff); break;
	case V_MAD_I16: case V_MAD_LEGACY_I16: L((X * Y + Z) & 0xffff); break;
	case V_XAD_U32: L((X ^ Y) + Z); break;
	case V_LSHL_ADD_U32: L((X << (Y & 31)) + Z); break;
	case V_ADD_LSHL_U32: L((X + Y) << (Z & 31)); break;
	case V_ADD3_U32: L(X + Y + Z); break;
	case V_LSHL_OR_B32: L((X << (Y & 31)) | Z); break;
	case V_AND_OR_B32: L((X & Y) | Z); break;
	case V_OR3_B32: L(X | Y | Z); break;
	case V_MIN3_U16: L(((u16)X < (u16)Y ? ((u16)X < (u16)Z ? (u16)X : (u16)Z) :
						  ((u16)Y < (u16)Z ? (u16)Y : (u16)Z))); break;
	case V_MAX3_U16: L((u16)X > (u16)Y ? ((u16)X > (u16)Z ? (u16)X : (u16)Z) :
			   ((u16)Y > (u16)Z ? (u16)Y : (u16)Z)); break;
	case V_MED3_U16: L(med3u((u16)X, (u16)Y, (u16)Z)); break;
	case V_MED3_I16: L((u16)med3i((s16)X, (s16)Y, (s16)Z)); break;
	case V_MIN3_I16: L((u16)((s16)X < (s16)Y ?
		((s16)X < (s16)Z ? X : Z) : ((s16)Y < (s16)Z ? Y : Z))); break;
	case V_MAX3_I16: L((u16)((s16)X > (s16)Y ? ((s16)X > (s16)Z ? X : Z) :
				 ((s16)Y > (s16)Z ? Y : Z))); break;
	case V_MUL_LO_U32: L(X * Y); break;
	case V_MUL_HI_U32: L((u32)(((u64)X * Y) >> 32)); break;
	case V_MUL_HI_I32: L((u32)(((s64)(s32)X * (s32)Y) >> 32)); break;
	case V_BCNT_U32_B32: L((u32)emu_popcount(X) + Y); break;
	case V_MBCNT_LO_U32_B32:
		L((u32)emu_popcount(X & (u32)((1ull << i) - 1)) + Y);
		break;
	case V_MBCNT_HI_U32_B32:
		L((u32)emu_popcount(X & (u32)(((1ull << i) - 1) >> 32)) + Y);
		break;
	case V_LSHLREV_B64: L(b[i] << (X & 63)); break;
	case V_LSHRREV_B64: L(b[i] >> (X & 63)); break;
	case V_ASHRREV_I64: L((u64)((s64)b[i] >> (X & 63))); break;
	case V_BFM_B32: L((u32)(((1ull << (X & 31)) - 1) << (Y & 31))); break;
	case V_PACK_B32_F16: L((X & 0xffff) | (Y & 0xffff) << 16); break;
	default:
		return false;
	}
#undef L
#undef X
#undef Y
#undef Z
	return true;
}

/* results of a carry operation and its carry-out mask */
static bool carry_op(unsigned int op, const u64 *a, const u64 *b, const u64 *c, u64 cin,
		     u64 *d, u64 exec, u64 *mask)
{
	unsigned int i;
	u64 m = 0;

	EMU_LANES(exec, i) {
		u32 x = a[i], y = b[i], ci = cin >> i & 1;
		u64 r;
		bool co;

		switch (op) {
		case V_ADD_CO_U32: r = (u64)x + y; co = r >> 32; break;
		case V_SUB_CO_U32: r = (u32)(x - y); co = y > x; break;
		case V_SUBREV_CO_U32: r = (u32)(y - x); co = x > y; break;
		case V_ADDC_CO_U32: r = (u64)x + y + ci; co = r >> 32; break;
		case V_SUBB_CO_U32: r = (u32)(x - y - ci); co = (u64)y + ci > x; break;
		case V_SUBBREV_CO_U32: r = (u32)(y - x - ci); co = (u64)x + ci > y; break;
		case V_MAD_U64_U32:
			r = (u64)x * y + c[i];
			co = r < c[i];
			break;
		case V_MAD_I64_I32: {
			s64 p = (s64)(s32)x * (s32)y, sum;

			co = __builtin_add_overflow(p, (s64)c[i], &sum);
			r = sum;
			break;
		}
		default:
			return false;
		}
		d[i] = op >= V_MAD_U64_U32 ? r : (u32)r;
		if (co)
			m |= 1ull << i;
	}
	*mask = m;
	return true;
}

static bool is_carry_op(unsigned int op)
{
	return (op >= V_ADD_CO_U32 && op <= V_SUBBREV_CO_U32) ||
	       op == V_MAD_U64_U32 || op == V_MAD_I64_I32;
}

static bool is_cmpx(unsigned int op)
{
	return op < V_CMP_F_F16 ? op & 1 : op & 0x10;
}

/* the lane operations: a scalar in or out */
static bool lane_op(struct emu_exec *c, const struct valu *v, bool *done)
{
	struct emu_wave *w = c->w;
	u64 *s = w->tmp[0], lane, val;
	unsigned int i;
	u32 *r, *q;

	*done = true;
	switch (v->op) {
	case V_NOP:
	case V_CLREXCP:
		return true;
	case V_READFIRSTLANE_B32:
		if (!emu_vread(c, v->src[0], EMU_B32, s) || !emu_sdst_ok(v->vdst, false))
			return emu_illegal(c);
		emu_swrite(w, v->vdst, false, s[w->exec ? __builtin_ctzll(w->exec) : 0]);
		return true;
	case V_READLANE_B32:
		if (!emu_vread(c, v->src[0], EMU_B32, s) || !emu_sread(c, v->src[1], EMU_B32, &lane) ||
		    !emu_sdst_ok(v->vdst, false))
			return emu_illegal(c);
		emu_swrite(w, v->vdst, false, s[lane & 63]);
		return true;
	case V_WRITELANE_B32:
		if (!emu_sread(c, v->src[0], EMU_B32, &val) || !emu_sread(c, v->src[1], EMU_B32, &lane) ||
		    !(r = emu_vreg(w, v->vdst, false)))
			return emu_illegal(c);
		r[lane & 63] = val;
		return true;
	case V_SWAP_B32:
		r = emu_vreg(w, v->vdst, false);
		q = v->src[0] >= 256 ? emu_vreg(w, v->src[0] - 256, false) : NULL;
		if (!r || !q)
			return emu_illegal(c);
		EMU_LANES(w->exec, i) {
			u32 t = r[i];

			r[i] = q[i];
			q[i] = t;
		}
		return true;
	case V_ACCVGPR_MOV_B32:
		if (w->isa == EMU_ISA_GFX908)
			return emu_illegal(c);
		r = emu_vreg(w, v->vdst, true);
		q = v->src[0] >= 256 ? emu_vreg(w, v->src[0] - 256, true) : NULL;
		if (!r || !q)
			return emu_illegal(c);
		EMU_LANES(w->exec, i)
			r[i] = q[i];
		return true;
	}
	*done = false;
	return true;
}

static bool float_op(struct emu_exec *c, const struct valu *v, unsigned int op, u64 *const s[3],
		     const enum emu_opnd kind[3], u64 *d, u64 *mask)
{
	struct emu_fp_args a = {
		.op = op, .exec = c->w->exec, .vcc = c->w->vcc,
		.src = { s[0], s[1], s[2] }, .dst = d,
		.clamp = v->clamp, .omod = v->omod,
	};
	unsigned int k;
	bool ok;

	for (k = 0; k < 3; k++)
		modifiers(s[k], kind[k], v->abs >> k & 1, v->neg >> k & 1);
	EMU_FPU_BEGIN();
	ok = emu_fp_valu(&a);
	EMU_FPU_END();
	*mask = a.mask;
	return ok;
}

/* The operations one target has and another has not (the rest are common to all) */
static bool op_exists(enum emu_isa_target isa, unsigned int op)
{
	switch (op) {
	case V_MOV_B64: case V_LSHL_ADD_U64:
		return isa == EMU_ISA_GFX942;
	case V_MAC_F32: case V_MAD_F32: case V_MAD_LEGACY_F32:
		return isa != EMU_ISA_GFX942;
	}
	return true;
}

static bool valu_run(struct emu_exec *c, struct valu *v)
{
	struct emu_wave *w = c->w;
	u64 *s[3] = { w->tmp[0], w->tmp[1], w->tmp[2] }, *d = w->tmp[3];
	u64 exec = w->exec, mask = 0, cin = 0;
	enum emu_opnd kind[3] = { EMU_B32, EMU_B32, EMU_B32 };
	unsigned int op = v->op, k, nsrc = v->nsrc;
	bool done, d64, carry, accumulate;

	/* gfx908 has v_mul_legacy_f32 where gfx90a has v_fmac_f64 */
	if (op == V_FMAC_F64 && w->isa == EMU_ISA_GFX908)
		op = V_MUL_LEGACY_F32;
	if (!op_exists(w->isa, op))
		return emu_illegal(c);
	if (!lane_op(c, v, &done) || done)
		return w->state == EMU_WAVE_RUNNING;
	carry = is_carry_op(op);
	d64 = dst_is64(op);
	/* the accumulating forms read their destination as the third source */
	accumulate = op == V_MAC_F32 || op == V_FMAC_F32 || op == V_MAC_F16 ||
		     op == V_FMAC_F64;
	for (k = 0; k < 3; k++)
		kind[k] = src_kind(op, k);
	for (k = 0; k < nsrc; k++) {
		/* a literal in VOP3 is gfx10's */
		if ((v->vop3 && v->src[k] == 255) || !emu_vread(c, v->src[k], kind[k], s[k]))
			return emu_illegal(c);
	}
	if (accumulate && !emu_vread(c, 256 + v->vdst, kind[2], s[2]))
		return emu_illegal(c);
	if ((op == V_CNDMASK_B32 || op == V_ADDC_CO_U32 || op == V_SUBB_CO_U32 ||
	     op == V_SUBBREV_CO_U32) && !emu_sread(c, v->mask_in, EMU_B64, &cin))
		return emu_illegal(c);

	if (op < 0x100) {
		/* compares: a mask to sdst (and EXEC for v_cmpx) */
		if (!emu_sdst_ok(v->sdst, true))
			return emu_illegal(c);
		if (!int_cmp(op, s[0], s[1], exec, &mask) &&
		    !float_op(c, v, op, s, kind, d, &mask))
			return emu_illegal(c);
		mask &= exec;
		emu_swrite(w, v->sdst, true, mask);
		if (is_cmpx(op))
			w->exec = mask;
		return true;
	}
	if (!emu_vdst_ok(w, v->vdst, false, d64) ||
	    ((carry || op == V_DIV_SCALE_F32 || op == V_DIV_SCALE_F64) &&
	     !emu_sdst_ok(v->sdst, true)))
		return emu_illegal(c);
	if (carry) {
		carry_op(op, s[0], s[1], s[2], cin, d, exec, &mask);
		emu_swrite(w, v->sdst, true, mask);
	} else if (op == V_CNDMASK_B32) {
		modifiers(s[0], EMU_B32, v->abs & 1, v->neg & 1);
		modifiers(s[1], EMU_B32, v->abs & 2, v->neg & 2);
		EMU_LANES(exec, k)
			d[k] = (cin >> k & 1) ? s[1][k] : s[0][k];
	} else if (!int_op(op, s[0], s[1], s[2], d, exec)) {
		if (!float_op(c, v, op, s, kind, d, &mask))
			return emu_illegal(c);
		if (op == V_DIV_SCALE_F32 || op == V_DIV_SCALE_F64)
			emu_swrite(w, v->sdst, true, mask & exec);
	}
	emu_vwrite(w, v->vdst, false, d64, d, exec);
	return true;
}

/* --- the encodings --- */

bool emu_exec_vop2(struct emu_exec *c)
{
	u32 w0 = c->word[0];
	unsigned int src0 = w0 & 0x1ff, src1 = 256 + ((w0 >> 9) & 0xff);
	struct valu v = {
		.op = 0x100 + ((w0 >> 25) & 0x3f),
		.nsrc = 2, .src = { src0, src1 },
		.vdst = (w0 >> 17) & 0xff, .sdst = 106, .mask_in = 106,
	};

	/* the constant K is the dword after the instruction */
	if (v.op == V_MADMK_F32 || v.op == V_MADMK_F16) {
		v.nsrc = 3;
		v.src[1] = 255;
		v.src[2] = src1;
	} else if (v.op == V_MADAK_F32 || v.op == V_MADAK_F16) {
		v.nsrc = 3;
		v.src[2] = 255;
	}
	/* gfx942's v_fmamk_f32 and v_fmaak_f32: the same operands, fused */
	if (c->w->isa == EMU_ISA_GFX942 && (v.op == V_MADMK_F32 || v.op == V_MADAK_F32))
		v.op = V_FMA_F32;
	return valu_run(c, &v);
}

bool emu_exec_vop1(struct emu_exec *c)
{
	u32 w0 = c->word[0];
	struct valu v = {
		.op = 0x140 + ((w0 >> 9) & 0xff),
		.nsrc = 1, .src = { w0 & 0x1ff },
		.vdst = (w0 >> 17) & 0xff,
	};

	if (v.op >= 0x1c0)
		return emu_illegal(c);
	return valu_run(c, &v);
}

bool emu_exec_vopc(struct emu_exec *c)
{
	u32 w0 = c->word[0];
	struct valu v = {
		.op = (w0 >> 17) & 0xff,
		.nsrc = 2, .src = { w0 & 0x1ff, 256 + ((w0 >> 9) & 0xff) },
		.sdst = 106,
	};

	return valu_run(c, &v);
}

static bool is_vop3b(unsigned int op)
{
	return is_carry_op(op) || op == V_DIV_SCALE_F32 || op == V_DIV_SCALE_F64;
}

bool emu_exec_vop3(struct emu_exec *c)
{
	u32 w0 = c->word[0], w1 = c->word[1];
	struct valu v = {
		.op = (w0 >> 16) & 0x3ff, .vop3 = true,
		.src = { w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff },
		.vdst = w0 & 0xff, .abs = (w0 >> 8) & 7, .clamp = (w0 >> 15) & 1,
		.omod = (w1 >> 27) & 3, .neg = w1 >> 29,
	};

	if (v.op < 0x100) {
		v.sdst = v.vdst;
		v.nsrc = 2;
	} else if (v.op < 0x140) {
		v.nsrc = 2;
		v.mask_in = v.src[2];
		if (v.op == V_MADMK_F32 || v.op == V_MADAK_F32 || v.op == V_MADMK_F16 ||
		    v.op == V_MADAK_F16)
			return emu_illegal(c);
	} else if (v.op < 0x1c0) {
		v.nsrc = 1;
	} else if (v.op < 0x280) {
		v.nsrc = 3;
	} else {
		v.nsrc = 2;
	}
	if (is_vop3b(v.op)) {
		v.sdst = (w0 >> 8) & 0x7f;
		v.abs = 0;
	}
	return valu_run(c, &v);
}

static u32 pk16(unsigned int op, u32 a, u32 b, u32 c)
{
	switch (op) {
	case VP_PK_MAD_I16: case VP_PK_MAD_U16: return a * b + c;
	case VP_PK_MUL_LO_U16: return a * b;
	case VP_PK_ADD_I16: case VP_PK_ADD_U16: return a + b;
	case VP_PK_SUB_I16: case VP_PK_SUB_U16: return a - b;
	case VP_PK_LSHLREV_B16: return b << (a & 15);
	case VP_PK_LSHRREV_B16: return b >> (a & 15);
	case VP_PK_ASHRREV_I16: return (u32)((s16)b >> (a & 15));
	case VP_PK_MAX_I16: return (s16)a > (s16)b ? a : b;
	case VP_PK_MIN_I16: return (s16)a < (s16)b ? a : b;
	case VP_PK_MAX_U16: return a > b ? a : b;
	default: return a < b ? a : b;		/* VP_PK_MIN_U16 */
	}
}

/* the f32 operation of each half of v_pk_{fma,mul,add}_f32 */
static unsigned int pk_f32_op(unsigned int op)
{
	switch (op) {
	case VP_PK_FMA_F32: return V_FMA_F32;
	case VP_PK_MUL_F32: return V_MUL_F32;
	case VP_PK_ADD_F32: return V_ADD_F32;
	}
	return 0;
}

/*
 * Packed operations: the low half of the result takes each source's half
 * op_sel selects, the high half the one op_sel_hi selects.
 */
bool emu_exec_vop3p(struct emu_exec *c)
{
	struct emu_wave *w = c->w;
	u32 w0 = c->word[0], w1 = c->word[1];
	unsigned int op = (w0 >> 16) & 0x7f, vdst = w0 & 0xff, k, i, nsrc = 3;
	unsigned int src[3] = { w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff };
	unsigned int opsel = (w0 >> 11) & 7, opsel_hi = ((w1 >> 27) & 3) | ((w0 >> 12) & 4);
	u64 *s[3] = { w->tmp[0], w->tmp[1], w->tmp[2] }, *d = w->tmp[3], exec = w->exec;
	bool wide = op == VP_PK_MOV_B32 || pk_f32_op(op);
	u32 *r;

	if (op == VP_ACCVGPR_READ_B32 || op == VP_ACCVGPR_WRITE_B32) {
		bool rd = op == VP_ACCVGPR_READ_B32;
		u32 *q = NULL;

		/* read: AccVGPR to VGPR; write: VGPR or constant to AccVGPR */
		r = emu_vreg(w, vdst, !rd);
		if (rd)
			q = src[0] >= 256 ? emu_vreg(w, src[0] - 256, true) : NULL;
		else if (src[0] == 255 || !emu_vread(c, src[0], EMU_B32, s[0]))
			return emu_illegal(c);
		if (!r || (rd && !q))
			return emu_illegal(c);
		EMU_LANES(exec, i)
			r[i] = rd ? q[i] : (u32)s[0][i];
		return true;
	}
	if (wide && w->isa == EMU_ISA_GFX908)
		return emu_illegal(c);
	if (op == VP_PK_MOV_B32 || op == VP_PK_MUL_F32 || op == VP_PK_ADD_F32)
		nsrc = 2;
	else if (op > VP_PK_MIN_U16 && op != VP_PK_FMA_F32)
		return emu_illegal(c);	/* f16, mix, dot, MFMA */
	for (k = 0; k < nsrc; k++)
		if (src[k] == 255 || !emu_vread(c, src[k], wide ? EMU_B64 : EMU_B32, s[k]))
			return emu_illegal(c);
	if (!emu_vdst_ok(w, vdst, false, wide))
		return emu_illegal(c);
	if (pk_f32_op(op)) {
		u64 *h[3] = { w->tmp[4], w->tmp[5], w->tmp[2] };
		u64 *lo = w->tmp[2];
		struct valu v = { .clamp = (w0 >> 15) & 1 };
		enum emu_opnd kind[3] = { EMU_B32, EMU_B32, EMU_B32 };
		u64 mask;

		if (nsrc == 3)
			return emu_illegal(c);	/* v_pk_fma_f32: no third scratch array yet */
		/* two f32 operations on the selected halves (tmp[4..5]); the low result kept in tmp[2] */
		for (k = 0; k < 2; k++) {
			unsigned int sel = k ? opsel_hi : opsel;

			EMU_LANES(exec, i) {
				h[0][i] = (u32)(s[0][i] >> ((sel & 1) ? 32 : 0));
				h[1][i] = (u32)(s[1][i] >> ((sel & 2) ? 32 : 0));
			}
			v.neg = (k ? w0 >> 8 : w1 >> 29) & 3;
			if (!float_op(c, &v, pk_f32_op(op), h, kind, d, &mask))
				return emu_illegal(c);
			if (!k)
				EMU_LANES(exec, i)
					lo[i] = d[i];
		}
		EMU_LANES(exec, i)
			d[i] = (u32)lo[i] | d[i] << 32;
	} else if (op == VP_PK_MOV_B32) {
		EMU_LANES(exec, i)
			d[i] = (u32)(s[0][i] >> ((opsel & 1) ? 32 : 0)) |
			       (s[1][i] >> ((opsel & 2) ? 32 : 0)) << 32;
	} else {
		EMU_LANES(exec, i) {
			u32 in[2][3], res[2];
			unsigned int half;

			for (half = 0; half < 2; half++) {
				unsigned int sel = half ? opsel_hi : opsel;

				for (k = 0; k < 3; k++)
					in[half][k] = (sel >> k & 1) ? s[k][i] >> 16 : s[k][i] & 0xffff;
				res[half] = pk16(op, in[half][0], in[half][1], in[half][2]) & 0xffff;
			}
			d[i] = res[0] | res[1] << 16;
		}
	}
	emu_vwrite(w, vdst, false, wide, d, exec);
	return true;
}

/* --- what the vector ALU executes, for listings (VOP3 numbering) --- */

static const struct emu_op_name valu_ops[] = {
	EMU_OP(V_CNDMASK_B32), EMU_OP(V_CMP_CLASS_F32), EMU_OP(V_CMPX_CLASS_F32),
	EMU_OP(V_CMP_CLASS_F64), EMU_OP(V_CMPX_CLASS_F64), EMU_OP(V_CMP_CLASS_F16),
	EMU_OP(V_CMPX_CLASS_F16), EMU_OP(V_CMP_F_F16), EMU_OP(V_CMP_LT_F16),
	EMU_OP(V_CMP_EQ_F16), EMU_OP(V_CMP_LE_F16), EMU_OP(V_CMP_GT_F16),
	EMU_OP(V_CMP_LG_F16), EMU_OP(V_CMP_GE_F16), EMU_OP(V_CMP_O_F16),
	EMU_OP(V_CMP_U_F16), EMU_OP(V_CMP_NGE_F16), EMU_OP(V_CMP_NLG_F16),
	EMU_OP(V_CMP_NGT_F16), EMU_OP(V_CMP_NLE_F16), EMU_OP(V_CMP_NEQ_F16),
	EMU_OP(V_CMP_NLT_F16), EMU_OP(V_CMP_TRU_F16), EMU_OP(V_CMPX_F_F16),
	EMU_OP(V_CMPX_LT_F16), EMU_OP(V_CMPX_EQ_F16), EMU_OP(V_CMPX_LE_F16),
	EMU_OP(V_CMPX_GT_F16), EMU_OP(V_CMPX_LG_F16), EMU_OP(V_CMPX_GE_F16),
	EMU_OP(V_CMPX_O_F16), EMU_OP(V_CMPX_U_F16), EMU_OP(V_CMPX_NGE_F16),
	EMU_OP(V_CMPX_NLG_F16), EMU_OP(V_CMPX_NGT_F16), EMU_OP(V_CMPX_NLE_F16),
	EMU_OP(V_CMPX_NEQ_F16), EMU_OP(V_CMPX_NLT_F16), EMU_OP(V_CMPX_TRU_F16),
	EMU_OP(V_CMP_F_F32), EMU_OP(V_CMP_LT_F32), EMU_OP(V_CMP_EQ_F32),
	EMU_OP(V_CMP_LE_F32), EMU_OP(V_CMP_GT_F32), EMU_OP(V_CMP_LG_F32),
	EMU_OP(V_CMP_GE_F32), EMU_OP(V_CMP_O_F32), EMU_OP(V_CMP_U_F32),
	EMU_OP(V_CMP_NGE_F32), EMU_OP(V_CMP_NLG_F32), EMU_OP(V_CMP_NGT_F32),
	EMU_OP(V_CMP_NLE_F32), EMU_OP(V_CMP_NEQ_F32), EMU_OP(V_CMP_NLT_F32),
	EMU_OP(V_CMP_TRU_F32), EMU_OP(V_CMPX_F_F32), EMU_OP(V_CMPX_LT_F32),
	EMU_OP(V_CMPX_EQ_F32), EMU_OP(V_CMPX_LE_F32), EMU_OP(V_CMPX_GT_F32),
	EMU_OP(V_CMPX_LG_F32), EMU_OP(V_CMPX_GE_F32), EMU_OP(V_CMPX_O_F32),
	EMU_OP(V_CMPX_U_F32), EMU_OP(V_CMPX_NGE_F32), EMU_OP(V_CMPX_NLG_F32),
	EMU_OP(V_CMPX_NGT_F32), EMU_OP(V_CMPX_NLE_F32), EMU_OP(V_CMPX_NEQ_F32),
	EMU_OP(V_CMPX_NLT_F32), EMU_OP(V_CMPX_TRU_F32), EMU_OP(V_CMP_F_F64),
	EMU_OP(V_CMP_LT_F64), EMU_OP(V_CMP_EQ_F64), EMU_OP(V_CMP_LE_F64),
	EMU_OP(V_CMP_GT_F64), EMU_OP(V_CMP_LG_F64), EMU_OP(V_CMP_GE_F64),
	EMU_OP(V_CMP_O_F64), EMU_OP(V_CMP_U_F64), EMU_OP(V_CMP_NGE_F64),
	EMU_OP(V_CMP_NLG_F64), EMU_OP(V_CMP_NGT_F64), EMU_OP(V_CMP_NLE_F64),
	EMU_OP(V_CMP_NEQ_F64), EMU_OP(V_CMP_NLT_F64), EMU_OP(V_CMP_TRU_F64),
	EMU_OP(V_CMPX_F_F64), EMU_OP(V_CMPX_LT_F64), EMU_OP(V_CMPX_EQ_F64),
	EMU_OP(V_CMPX_LE_F64), EMU_OP(V_CMPX_GT_F64), EMU_OP(V_CMPX_LG_F64),
	EMU_OP(V_CMPX_GE_F64), EMU_OP(V_CMPX_O_F64), EMU_OP(V_CMPX_U_F64),
	EMU_OP(V_CMPX_NGE_F64), EMU_OP(V_CMPX_NLG_F64), EMU_OP(V_CMPX_NGT_F64),
	EMU_OP(V_CMPX_NLE_F64), EMU_OP(V_CMPX_NEQ_F64), EMU_OP(V_CMPX_NLT_F64),
	EMU_OP(V_CMPX_TRU_F64), EMU_OP(V_CMP_F_I16), EMU_OP(V_CMP_LT_I16),
	EMU_OP(V_CMP_EQ_I16), EMU_OP(V_CMP_LE_I16), EMU_OP(V_CMP_GT_I16),
	EMU_OP(V_CMP_NE_I16), EMU_OP(V_CMP_GE_I16), EMU_OP(V_CMP_T_I16),
	EMU_OP(V_CMP_F_U16), EMU_OP(V_CMP_LT_U16), EMU_OP(V_CMP_EQ_U16),
	EMU_OP(V_CMP_LE_U16), EMU_OP(V_CMP_GT_U16), EMU_OP(V_CMP_NE_U16),
	EMU_OP(V_CMP_GE_U16), EMU_OP(V_CMP_T_U16), EMU_OP(V_CMPX_F_I16),
	EMU_OP(V_CMPX_LT_I16), EMU_OP(V_CMPX_EQ_I16), EMU_OP(V_CMPX_LE_I16),
	EMU_OP(V_CMPX_GT_I16), EMU_OP(V_CMPX_NE_I16), EMU_OP(V_CMPX_GE_I16),
	EMU_OP(V_CMPX_T_I16), EMU_OP(V_CMPX_F_U16), EMU_OP(V_CMPX_LT_U16),
	EMU_OP(V_CMPX_EQ_U16), EMU_OP(V_CMPX_LE_U16), EMU_OP(V_CMPX_GT_U16),
	EMU_OP(V_CMPX_NE_U16), EMU_OP(V_CMPX_GE_U16), EMU_OP(V_CMPX_T_U16),
	EMU_OP(V_CMP_F_I32), EMU_OP(V_CMP_LT_I32), EMU_OP(V_CMP_EQ_I32),
	EMU_OP(V_CMP_LE_I32), EMU_OP(V_CMP_GT_I32), EMU_OP(V_CMP_NE_I32),
	EMU_OP(V_CMP_GE_I32), EMU_OP(V_CMP_T_I32), EMU_OP(V_CMP_F_U32),
	EMU_OP(V_CMP_LT_U32), EMU_OP(V_CMP_EQ_U32), EMU_OP(V_CMP_LE_U32),
	EMU_OP(V_CMP_GT_U32), EMU_OP(V_CMP_NE_U32), EMU_OP(V_CMP_GE_U32),
	EMU_OP(V_CMP_T_U32), EMU_OP(V_CMPX_F_I32), EMU_OP(V_CMPX_LT_I32),
	EMU_OP(V_CMPX_EQ_I32), EMU_OP(V_CMPX_LE_I32), EMU_OP(V_CMPX_GT_I32),
	EMU_OP(V_CMPX_NE_I32), EMU_OP(V_CMPX_GE_I32), EMU_OP(V_CMPX_T_I32),
	EMU_OP(V_CMPX_F_U32), EMU_OP(V_CMPX_LT_U32), EMU_OP(V_CMPX_EQ_U32),
	EMU_OP(V_CMPX_LE_U32), EMU_OP(V_CMPX_GT_U32), EMU_OP(V_CMPX_NE_U32),
	EMU_OP(V_CMPX_GE_U32), EMU_OP(V_CMPX_T_U32), EMU_OP(V_CMP_F_I64),
	EMU_OP(V_CMP_LT_I64), EMU_OP(V_CMP_EQ_I64), EMU_OP(V_CMP_LE_I64),
	EMU_OP(V_CMP_GT_I64), EMU_OP(V_CMP_NE_I64), EMU_OP(V_CMP_GE_I64),
	EMU_OP(V_CMP_T_I64), EMU_OP(V_CMP_F_U64), EMU_OP(V_CMP_LT_U64),
	EMU_OP(V_CMP_EQ_U64), EMU_OP(V_CMP_LE_U64), EMU_OP(V_CMP_GT_U64),
	EMU_OP(V_CMP_NE_U64), EMU_OP(V_CMP_GE_U64), EMU_OP(V_CMP_T_U64),
	EMU_OP(V_CMPX_F_I64), EMU_OP(V_CMPX_LT_I64), EMU_OP(V_CMPX_EQ_I64),
	EMU_OP(V_CMPX_LE_I64), EMU_OP(V_CMPX_GT_I64), EMU_OP(V_CMPX_NE_I64),
	EMU_OP(V_CMPX_GE_I64), EMU_OP(V_CMPX_T_I64), EMU_OP(V_CMPX_F_U64),
	EMU_OP(V_CMPX_LT_U64), EMU_OP(V_CMPX_EQ_U64), EMU_OP(V_CMPX_LE_U64),
	EMU_OP(V_CMPX_GT_U64), EMU_OP(V_CMPX_NE_U64), EMU_OP(V_CMPX_GE_U64),
	EMU_OP(V_CMPX_T_U64), EMU_OP(V_ADD_F32), EMU_OP(V_SUB_F32),
	EMU_OP(V_SUBREV_F32), EMU_OP(V_MUL_F32), EMU_OP(V_MUL_I32_I24),
	EMU_OP(V_MUL_HI_I32_I24), EMU_OP(V_MUL_U32_U24), EMU_OP(V_MUL_HI_U32_U24),
	EMU_OP(V_MIN_F32), EMU_OP(V_MAX_F32), EMU_OP(V_MIN_I32), EMU_OP(V_MAX_I32),
	EMU_OP(V_MIN_U32), EMU_OP(V_MAX_U32), EMU_OP(V_LSHRREV_B32),
	EMU_OP(V_ASHRREV_I32), EMU_OP(V_LSHLREV_B32), EMU_OP(V_AND_B32),
	EMU_OP(V_OR_B32), EMU_OP(V_XOR_B32), EMU_OP(V_MAC_F32), EMU_OP(V_MADMK_F32),
	EMU_OP(V_MADAK_F32), EMU_OP(V_ADD_CO_U32), EMU_OP(V_SUB_CO_U32),
	EMU_OP(V_SUBREV_CO_U32), EMU_OP(V_ADDC_CO_U32), EMU_OP(V_SUBB_CO_U32),
	EMU_OP(V_SUBBREV_CO_U32), EMU_OP(V_ADD_F16), EMU_OP(V_SUB_F16),
	EMU_OP(V_SUBREV_F16), EMU_OP(V_MUL_F16), EMU_OP(V_MAC_F16), EMU_OP(V_ADD_U16),
	EMU_OP(V_SUB_U16), EMU_OP(V_SUBREV_U16), EMU_OP(V_MUL_LO_U16),
	EMU_OP(V_LSHLREV_B16), EMU_OP(V_LSHRREV_B16), EMU_OP(V_ASHRREV_I16),
	EMU_OP(V_MAX_F16), EMU_OP(V_MIN_F16), EMU_OP(V_MAX_U16), EMU_OP(V_MAX_I16),
	EMU_OP(V_MIN_U16), EMU_OP(V_MIN_I16), EMU_OP(V_LDEXP_F16), EMU_OP(V_ADD_U32),
	EMU_OP(V_SUB_U32), EMU_OP(V_SUBREV_U32), EMU_OP(V_FMAC_F32),
	EMU_OP(V_XNOR_B32), EMU_OP(V_NOP), EMU_OP(V_MOV_B32),
	EMU_OP(V_READFIRSTLANE_B32), EMU_OP(V_CVT_I32_F64), EMU_OP(V_CVT_F64_I32),
	EMU_OP(V_CVT_F32_I32), EMU_OP(V_CVT_F32_U32), EMU_OP(V_CVT_U32_F32),
	EMU_OP(V_CVT_I32_F32), EMU_OP(V_CVT_F16_F32), EMU_OP(V_CVT_F32_F16),
	EMU_OP(V_CVT_RPI_I32_F32), EMU_OP(V_CVT_FLR_I32_F32), EMU_OP(V_CVT_OFF_F32_I4),
	EMU_OP(V_CVT_F32_F64), EMU_OP(V_CVT_F64_F32), EMU_OP(V_CVT_F32_UBYTE0),
	EMU_OP(V_CVT_F32_UBYTE1), EMU_OP(V_CVT_F32_UBYTE2), EMU_OP(V_CVT_F32_UBYTE3),
	EMU_OP(V_CVT_U32_F64), EMU_OP(V_CVT_F64_U32), EMU_OP(V_TRUNC_F64),
	EMU_OP(V_CEIL_F64), EMU_OP(V_RNDNE_F64), EMU_OP(V_FLOOR_F64),
	EMU_OP(V_FRACT_F32), EMU_OP(V_TRUNC_F32), EMU_OP(V_CEIL_F32),
	EMU_OP(V_RNDNE_F32), EMU_OP(V_FLOOR_F32), EMU_OP(V_EXP_F32), EMU_OP(V_LOG_F32),
	EMU_OP(V_RCP_F32), EMU_OP(V_RCP_IFLAG_F32), EMU_OP(V_RSQ_F32),
	EMU_OP(V_RCP_F64), EMU_OP(V_RSQ_F64), EMU_OP(V_SQRT_F32), EMU_OP(V_SQRT_F64),
	EMU_OP(V_SIN_F32), EMU_OP(V_COS_F32), EMU_OP(V_NOT_B32), EMU_OP(V_BFREV_B32),
	EMU_OP(V_FFBH_U32), EMU_OP(V_FFBL_B32), EMU_OP(V_FFBH_I32),
	EMU_OP(V_FREXP_EXP_I32_F64), EMU_OP(V_FREXP_MANT_F64), EMU_OP(V_FRACT_F64),
	EMU_OP(V_FREXP_EXP_I32_F32), EMU_OP(V_FREXP_MANT_F32), EMU_OP(V_CLREXCP), EMU_OP(V_MOV_B64),
	EMU_OP(V_CVT_F16_U16), EMU_OP(V_CVT_F16_I16), EMU_OP(V_CVT_U16_F16),
	EMU_OP(V_CVT_I16_F16), EMU_OP(V_RCP_F16), EMU_OP(V_SQRT_F16),
	EMU_OP(V_FLOOR_F16), EMU_OP(V_CEIL_F16), EMU_OP(V_TRUNC_F16),
	EMU_OP(V_RNDNE_F16), EMU_OP(V_EXP_LEGACY_F32), EMU_OP(V_LOG_LEGACY_F32),
	EMU_OP(V_SWAP_B32), EMU_OP(V_ACCVGPR_MOV_B32), EMU_OP(V_MAD_LEGACY_F32),
	EMU_OP(V_MAD_F32), EMU_OP(V_MAD_I32_I24), EMU_OP(V_MAD_U32_U24),
	EMU_OP(V_BFE_U32), EMU_OP(V_BFE_I32), EMU_OP(V_BFI_B32), EMU_OP(V_FMA_F32),
	EMU_OP(V_FMA_F64), EMU_OP(V_ALIGNBIT_B32), EMU_OP(V_ALIGNBYTE_B32),
	EMU_OP(V_MIN3_F32), EMU_OP(V_MIN3_I32), EMU_OP(V_MIN3_U32), EMU_OP(V_MAX3_F32),
	EMU_OP(V_MAX3_I32), EMU_OP(V_MAX3_U32), EMU_OP(V_MED3_F32), EMU_OP(V_MED3_I32),
	EMU_OP(V_MED3_U32), EMU_OP(V_SAD_U8), EMU_OP(V_SAD_HI_U8), EMU_OP(V_SAD_U16),
	EMU_OP(V_SAD_U32), EMU_OP(V_DIV_FIXUP_F32), EMU_OP(V_DIV_FIXUP_F64),
	EMU_OP(V_DIV_SCALE_F32), EMU_OP(V_DIV_SCALE_F64), EMU_OP(V_DIV_FMAS_F32),
	EMU_OP(V_DIV_FMAS_F64), EMU_OP(V_MAD_U64_U32), EMU_OP(V_MAD_I64_I32),
	EMU_OP(V_MAD_LEGACY_U16), EMU_OP(V_MAD_LEGACY_I16), EMU_OP(V_PERM_B32),
	EMU_OP(V_MAD_U32_U16), EMU_OP(V_MAD_I32_I16), EMU_OP(V_XAD_U32),
	EMU_OP(V_MIN3_I16), EMU_OP(V_MIN3_U16), EMU_OP(V_MAX3_I16), EMU_OP(V_MAX3_U16),
	EMU_OP(V_MED3_I16), EMU_OP(V_MED3_U16), EMU_OP(V_LSHL_ADD_U32),
	EMU_OP(V_ADD_LSHL_U32), EMU_OP(V_ADD3_U32), EMU_OP(V_LSHL_OR_B32),
	EMU_OP(V_AND_OR_B32), EMU_OP(V_OR3_B32), EMU_OP(V_MAD_F16), EMU_OP(V_MAD_U16),
	EMU_OP(V_MAD_I16), EMU_OP(V_FMA_F16), EMU_OP(V_LSHL_ADD_U64), EMU_OP(V_ADD_F64), EMU_OP(V_MUL_F64),
	EMU_OP(V_MIN_F64), EMU_OP(V_MAX_F64), EMU_OP(V_LDEXP_F64),
	EMU_OP(V_MUL_LO_U32), EMU_OP(V_MUL_HI_U32), EMU_OP(V_MUL_HI_I32),
	EMU_OP(V_LDEXP_F32), EMU_OP(V_READLANE_B32), EMU_OP(V_WRITELANE_B32),
	EMU_OP(V_BCNT_U32_B32), EMU_OP(V_MBCNT_LO_U32_B32), EMU_OP(V_MBCNT_HI_U32_B32),
	EMU_OP(V_LSHLREV_B64), EMU_OP(V_LSHRREV_B64), EMU_OP(V_ASHRREV_I64),
	EMU_OP(V_BFM_B32), EMU_OP(V_CVT_PKRTZ_F16_F32), EMU_OP(V_ADD_I32),
	EMU_OP(V_SUB_I32), EMU_OP(V_ADD_I16), EMU_OP(V_SUB_I16),
	EMU_OP(V_PACK_B32_F16), EMU_OP(V_MUL_LEGACY_F32), EMU_OP(V_FMAC_F64),
};

static const struct emu_op_name vop3p_ops[] = {
	EMU_OP(VP_PK_MAD_I16), EMU_OP(VP_PK_MUL_LO_U16), EMU_OP(VP_PK_ADD_I16),
	EMU_OP(VP_PK_SUB_I16), EMU_OP(VP_PK_LSHLREV_B16), EMU_OP(VP_PK_LSHRREV_B16),
	EMU_OP(VP_PK_ASHRREV_I16), EMU_OP(VP_PK_MAX_I16), EMU_OP(VP_PK_MIN_I16),
	EMU_OP(VP_PK_MAD_U16), EMU_OP(VP_PK_ADD_U16), EMU_OP(VP_PK_SUB_U16),
	EMU_OP(VP_PK_MAX_U16), EMU_OP(VP_PK_MIN_U16), EMU_OP(VP_PK_MUL_F32),
	EMU_OP(VP_PK_ADD_F32), EMU_OP(VP_PK_MOV_B32), EMU_OP(VP_ACCVGPR_READ_B32),
	EMU_OP(VP_ACCVGPR_WRITE_B32),
};

const struct emu_op_table emu_vector_tables[] = {
	{ "VOP3", "v_", valu_ops, sizeof(valu_ops) / sizeof(valu_ops[0]) },
	{ "VOP3P", "v_", vop3p_ops, sizeof(vop3p_ops) / sizeof(vop3p_ops[0]) },
};
const unsigned int emu_vector_ntables = 2;
