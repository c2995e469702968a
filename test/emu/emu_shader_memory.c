// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu_emu: the shader core's memory instructions — SMEM (scalar loads
 * and s_buffer_load through a buffer descriptor), DS (the workgroup's LDS)
 * and FLAT/GLOBAL (through the GPU VM; flat addresses in the LDS aperture
 * reach the LDS).  See emu_shader.c for the sources.
 *
 * Every access completes before the next instruction issues, so the
 * waitcnt counters the program waits on are always zero.
 *
 * Faults: a load that reaches an address the VM refuses writes no
 * register.  Stores and atomics translate every lane's address before the
 * first lane writes, so a refused one writes nothing either; only a
 * store whose bytes span two host pieces of which the second vanishes
 * between the check and the write could be cut short (the hardware makes
 * no promise across lanes at all).
 *
 * Where it is not the hardware:
 * - LDS: an access past the workgroup's allocation reads 0 and writes
 *   nothing, per lane, as the ISA describes; M0 is not used to clamp.  LDS
 *   atomics are plain read-modify-writes: the waves of a workgroup run one
 *   at a time.  GDS, ds_append/consume, ds_ordered_count are illegal.
 * - Global atomics are host atomics on the mapped page (a compare-and-swap
 *   loop where x86 has no single instruction); an atomic to an address not
 *   aligned to its size is a memory violation.
 * - FLAT offsets: 12 bits unsigned for FLAT, 13 bits signed for GLOBAL, as
 *   gfx908, gfx90a and gfx942 decode them.  SCRATCH, MTBUF, MIMG, the LDS
 *   DMA forms (lds=1, gfx942's global_load_lds_*) are illegal, and so is
 *   MUBUF but for the cache maintenance below.
 * - s_buffer_load honours the descriptor's base and num_records (dwords
 *   past it read 0) and nothing else of the descriptor (no swizzle).
 */
#include "emu_shader_internal.h"

/* --- SMEM --- */

static unsigned int smem_dwords(unsigned int op)
{
	switch (op) {
	case SMEM_LOAD_DWORD: case SMEM_BUFFER_LOAD_DWORD: case SMEM_STORE_DWORD:
		return 1;
	case SMEM_LOAD_DWORDX2: case SMEM_BUFFER_LOAD_DWORDX2: case SMEM_STORE_DWORDX2:
	case SMEM_MEMTIME: case SMEM_MEMREALTIME:
		return 2;
	case SMEM_LOAD_DWORDX4: case SMEM_BUFFER_LOAD_DWORDX4: case SMEM_STORE_DWORDX4:
		return 4;
	case SMEM_LOAD_DWORDX8: case SMEM_BUFFER_LOAD_DWORDX8:
		return 8;
	case SMEM_LOAD_DWORDX16: case SMEM_BUFFER_LOAD_DWORDX16:
		return 16;
	}
	return 0;
}

bool emu_exec_smem(struct emu_exec *c)
{
	struct emu_wave *w = c->w;
	u32 w0 = c->word[0], w1 = c->word[1], data[16];
	unsigned int op = (w0 >> 18) & 0xff, sbase = (w0 & 0x3f) * 2, sdata = (w0 >> 6) & 0x7f;
	unsigned int n = smem_dwords(op), k;
	bool imm = (w0 >> 17) & 1, soe = (w0 >> 14) & 1;
	bool buffer = op >= SMEM_BUFFER_LOAD_DWORD && op <= SMEM_BUFFER_LOAD_DWORDX16;
	bool store = op >= SMEM_STORE_DWORD && op <= SMEM_STORE_DWORDX4;
	u64 base, off, extra, d1, d2;

	if (op == SMEM_DCACHE_INV || op == SMEM_DCACHE_WB || op == SMEM_DCACHE_INV_VOL ||
	    op == SMEM_DCACHE_WB_VOL)
		return true;	/* there is no scalar cache */
	if (!n)
		return emu_illegal(c);
	for (k = 0; k < n; k++)
		if (!emu_sdst_ok(sdata + k, false))
			return emu_illegal(c);
	if (op == SMEM_MEMTIME || op == SMEM_MEMREALTIME) {
		u64 t = emu_now_ns();

		emu_swrite(w, sdata, true, op == SMEM_MEMTIME ? t : t / 10);
		return true;
	}
	/*
	 * The offset: an immediate (21 bits signed, but 20 unsigned for
	 * s_buffer_load, as llvm-mc encodes them for gfx9), or an SGPR; plus
	 * SOFFSET with soe.
	 */
	if (imm)
		off = buffer ? w1 & 0xfffff : (u64)(s64)((s32)(w1 << 11) >> 11);
	else if (!emu_sread(c, w1 & 0xff, EMU_B32, &off))
		return emu_illegal(c);
	if (soe && imm) {
		if (!emu_sread(c, w1 >> 25, EMU_B32, &extra))
			return emu_illegal(c);
		off += extra;
	}
	if (!emu_sread(c, sbase, EMU_B64, &base))
		return emu_illegal(c);
	if (store) {
		for (k = 0; k < n; k++) {
			u64 v;

			emu_sread(c, sdata + k, EMU_B32, &v);
			data[k] = v;
		}
		return emu_mem_write(c, (base + off) & ~3ull, data, n * 4);
	}
	if (buffer) {
		/* a buffer descriptor: base in bits 47:0, num_records in dword 2 */
		if (!emu_sread(c, sbase + 2, EMU_B64, &d2))
			return emu_illegal(c);
		d1 = base;
		base = d1 & 0xffffffffffffull;
		for (k = 0; k < n; k++) {
			u64 o = ((off & ~3ull) + 4 * k);

			data[k] = 0;
			if (o < (u32)d2 && !emu_mem_read(c, base + o, &data[k], 4))
				return false;
		}
	} else if (!emu_mem_read(c, (base + off) & ~3ull, data, n * 4)) {
		return false;
	}
	for (k = 0; k < n; k++)
		emu_swrite(w, sdata + k, false, data[k]);
	return true;
}

/* --- atomics, on LDS and on host memory alike --- */

enum atom {
	A_NONE, A_SWAP, A_CMPSWAP, A_ADD, A_SUB, A_RSUB, A_SMIN, A_UMIN, A_SMAX, A_UMAX,
	A_AND, A_OR, A_XOR, A_INC, A_DEC, A_MSKOR, A_FADD, A_FMIN, A_FMAX, A_PK_FADD,
};

static bool atom_is_float(enum atom a)
{
	return a >= A_FADD;
}

/* the new memory value; @src2 is the compare value or the OR mask */
static u64 atom_new(enum atom a, unsigned int bits, u64 old, u64 src, u64 src2)
{
	bool b64 = bits == 64;
	s64 so = b64 ? (s64)old : (s32)old, ss = b64 ? (s64)src : (s32)src;

	switch (a) {
	case A_SWAP: return src;
	case A_CMPSWAP: return old == src2 ? src : old;
	case A_ADD: return old + src;
	case A_SUB: return old - src;
	case A_RSUB: return src - old;
	case A_SMIN: return so < ss ? old : src;
	case A_UMIN: return old < src ? old : src;
	case A_SMAX: return so > ss ? old : src;
	case A_UMAX: return old > src ? old : src;
	case A_AND: return old & src;
	case A_OR: return old | src;
	case A_XOR: return old ^ src;
	case A_INC: return old >= src ? 0 : old + 1;
	case A_DEC: return old == 0 || old > src ? src : old - 1;
	case A_MSKOR: return (old & ~src) | src2;
	/* the float ones run inside EMU_FPU_BEGIN/END (see the callers) */
	case A_FADD:
		return b64 ? emu_fp_atomic64(EMU_FP_ADD, old, src) :
			     emu_fp_atomic32(EMU_FP_ADD, old, src);
	case A_FMIN:
		return b64 ? emu_fp_atomic64(EMU_FP_MIN, old, src) :
			     emu_fp_atomic32(EMU_FP_MIN, old, src);
	case A_FMAX:
		return b64 ? emu_fp_atomic64(EMU_FP_MAX, old, src) :
			     emu_fp_atomic32(EMU_FP_MAX, old, src);
	case A_PK_FADD: return emu_fp_pk_add_f16(old, src);
	default: return old;
	}
}

/* one atomic read-modify-write of naturally aligned host memory; the old value */
static u64 atom_host(u8 *p, unsigned int bits, enum atom a, u64 src, u64 src2)
{
	if (bits == 64) {
		u64 *q = (u64 *)p, old = __atomic_load_n(q, __ATOMIC_RELAXED);

		while (!__atomic_compare_exchange_n(q, &old, atom_new(a, 64, old, src, src2),
						    false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			;
		return old;
	} else {
		u32 *q = (u32 *)p, old = __atomic_load_n(q, __ATOMIC_RELAXED);

		while (!__atomic_compare_exchange_n(q, &old, (u32)atom_new(a, 32, old, src, src2),
						    false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			;
		return old;
	}
}

/*
 * The lanes of @exec whose tmp[4] holds a host pointer (0: skip, a read of
 * 0) apply @a with tmp[0] (and tmp[1]); the old values land in tmp[3].
 */
static void atom_lanes(struct emu_wave *w, u64 exec, enum atom a, unsigned int bits)
{
	const u64 *ptr = w->tmp[4], *src = w->tmp[0], *src2 = w->tmp[1];
	u64 *old = w->tmp[3];
	unsigned int i;

	if (atom_is_float(a))
		EMU_FPU_BEGIN();
	EMU_LANES(exec, i)
		old[i] = ptr[i] ? atom_host((u8 *)(unsigned long)ptr[i], bits, a, src[i], src2[i]) : 0;
	if (atom_is_float(a))
		EMU_FPU_END();
}

/* DS atomics (the caller has ruled out the writes that share their low bits) */
static enum atom ds_atom(unsigned int op)
{
	static const enum atom base[] = {
		A_ADD, A_SUB, A_RSUB, A_INC, A_DEC, A_SMIN, A_SMAX, A_UMIN, A_UMAX,
		A_AND, A_OR, A_XOR, A_MSKOR,
	};

	/* the same for the _u64 family at +0x40 and the _rtn ones at +0x20 */
	op &= ~0x60u;
	if (op < sizeof(base) / sizeof(base[0]))
		return base[op];
	switch (op) {
	case DS_CMPST_B32: return A_CMPSWAP;
	case DS_MIN_F32: return A_FMIN;
	case DS_MAX_F32: return A_FMAX;
	case DS_ADD_F32: return A_FADD;
	case DS_ADD_F64 & ~0x60u: return A_FADD;
	case DS_WRXCHG_RTN_B32 & ~0x60u: return A_SWAP;
	}
	return A_NONE;
}

static bool ds_is_atomic(unsigned int op)
{
	unsigned int low = op & ~0x60u;

	if (op >= 0x80 || op == DS_WRXCHG2_RTN_B32 || op == DS_WRXCHG2ST64_RTN_B32 ||
	    op == DS_CMPST_F32 || op == DS_CMPST_RTN_F32 || op == DS_WRAP_RTN_B32)
		return false;
	if (low <= DS_MSKOR_B32 || low == DS_CMPST_B32 || low == DS_MIN_F32 ||
	    low == DS_MAX_F32 || (low == DS_ADD_F32 && op < 0x40))
		return true;
	if (op == DS_WRXCHG_RTN_B32 || op == DS_WRXCHG_RTN_B64 || op == DS_ADD_F64 ||
	    op == DS_ADD_RTN_F64)
		return true;
	return false;
}

static u64 lds_read(const struct emu_wave *w, u32 a, unsigned int size)
{
	u64 v = 0;

	if (w->lds && (u64)a + size <= w->lds_size)
		memcpy(&v, w->lds + a, size);
	return v;
}

static void lds_write(struct emu_wave *w, u32 a, unsigned int size, u64 v)
{
	if (w->lds && (u64)a + size <= w->lds_size)
		memcpy(w->lds + a, &v, size);
}

/* registers @n..@n + @count - 1 all exist */
static bool vregs_ok(struct emu_wave *w, unsigned int n, unsigned int count, bool acc)
{
	return count == 0 || (emu_vreg(w, n, acc) && emu_vreg(w, n + count - 1, acc));
}

/* @count dwords per lane from tmp[0..count-1] to VGPRs @n.. */
static void write_dwords(struct emu_wave *w, unsigned int n, unsigned int count, bool acc,
			 u64 exec)
{
	unsigned int k;

	for (k = 0; k < count; k++)
		emu_vwrite(w, n + k, acc, false, w->tmp[k], exec);
}

/* the read and write forms: bytes per element, elements, offset scale */
struct ds_shape {
	unsigned int size, count, scale;
	bool sign;
};

static bool ds_read_shape(unsigned int op, struct ds_shape *s)
{
	*s = (struct ds_shape){ .size = 4, .count = 1 };
	switch (op) {
	case DS_READ_B32: break;
	case DS_READ_B64: s->size = 8; break;
	case DS_READ_B96: s->size = 12; break;
	case DS_READ_B128: s->size = 16; break;
	case DS_READ_I8: s->sign = true; fallthrough;
	case DS_READ_U8: s->size = 1; break;
	case DS_READ_I16: s->sign = true; fallthrough;
	case DS_READ_U16: s->size = 2; break;
	case DS_READ2_B32: s->count = 2; s->scale = 4; break;
	case DS_READ2ST64_B32: s->count = 2; s->scale = 256; break;
	case DS_READ2_B64: s->size = 8; s->count = 2; s->scale = 8; break;
	case DS_READ2ST64_B64: s->size = 8; s->count = 2; s->scale = 512; break;
	default: return false;
	}
	return true;
}

static bool ds_write_shape(unsigned int op, struct ds_shape *s)
{
	*s = (struct ds_shape){ .size = 4, .count = 1 };
	switch (op) {
	case DS_WRITE_B32: break;
	case DS_WRITE_B64: s->size = 8; break;
	case DS_WRITE_B96: s->size = 12; break;
	case DS_WRITE_B128: s->size = 16; break;
	case DS_WRITE_B8: s->size = 1; break;
	case DS_WRITE_B16: s->size = 2; break;
	case DS_WRITE2_B32: s->count = 2; s->scale = 4; break;
	case DS_WRITE2ST64_B32: s->count = 2; s->scale = 256; break;
	case DS_WRITE2_B64: s->size = 8; s->count = 2; s->scale = 8; break;
	case DS_WRITE2ST64_B64: s->size = 8; s->count = 2; s->scale = 512; break;
	default: return false;
	}
	return true;
}

/* ds_swizzle_b32's source lane for lane @i */
static unsigned int swizzle_lane(unsigned int i, u32 off)
{
	if (off & 0x8000)	/* quad mode: two bits per lane of the quad */
		return (i & ~3u) | ((off >> (2 * (i & 3))) & 3);
	/* bit mode, within each half of 32 lanes: and, or, then xor masks */
	return (i & 0x20) | ((((i & 0x1f) & (off & 0x1f)) | ((off >> 5) & 0x1f)) ^
			     ((off >> 10) & 0x1f));
}

/* swizzle, permute, bpermute: lanes exchange data0, through no memory */
static bool ds_cross_lane(struct emu_exec *c, unsigned int op, const u32 *addr,
			  const u32 *data, u32 off, u64 exec)
{
	struct emu_wave *w = c->w;
	u64 *d = w->tmp[0];
	unsigned int i;

	switch (op) {
	case DS_SWIZZLE_B32:
		EMU_LANES(exec, i) {
			unsigned int s = swizzle_lane(i, off);

			d[i] = (exec >> s & 1) ? data[s] : 0;
		}
		return true;
	case DS_BPERMUTE_B32:
		/* the source lane's register, active or not */
		EMU_LANES(exec, i)
			d[i] = data[((addr[i] + off) >> 2) & 63];
		return true;
	case DS_PERMUTE_B32:
		/* each active lane sends to one lane; the highest sender wins */
		for (i = 0; i < EMU_WAVE_LANES; i++)
			d[i] = 0;
		EMU_LANES(exec, i)
			d[((addr[i] + off) >> 2) & 63] = data[i];
		return true;
	}
	return false;
}

static bool ds_atomic_op(struct emu_exec *c, unsigned int op, const u32 *addr, u32 off,
			 unsigned int d0, unsigned int d1, unsigned int vdst, bool acc);

bool emu_exec_ds(struct emu_exec *c)
{
	struct emu_wave *w = c->w;
	u32 w0 = c->word[0], w1 = c->word[1];
	unsigned int op = (w0 >> 17) & 0xff, off0 = w0 & 0xff, off1 = (w0 >> 8) & 0xff;
	unsigned int d0 = (w1 >> 8) & 0xff, d1 = (w1 >> 16) & 0xff, vdst = w1 >> 24, i, k;
	bool acc = emu_isa_unified_vgprs(w->isa) && (w0 >> 25 & 1);
	u32 off = off0 | off1 << 8, *addr = emu_vreg(w, w1 & 0xff, false);
	u64 exec = w->exec;
	struct ds_shape sh;

	if ((w0 >> 16 & 1) || !addr)
		return emu_illegal(c);		/* GDS */
	if (ds_read_shape(op, &sh)) {
		unsigned int dwords = (sh.size * sh.count + 3) / 4, per = (sh.size + 3) / 4;

		if (!vregs_ok(w, vdst, dwords, acc))
			return emu_illegal(c);
		EMU_LANES(exec, i) {
			for (k = 0; k < sh.count; k++) {
				u32 a = sh.count == 1 ? addr[i] + off :
					addr[i] + (k ? off1 : off0) * sh.scale;
				unsigned int j;

				for (j = 0; j < per; j++) {
					unsigned int sz = sh.size < 4 ? sh.size : 4;
					u64 v = lds_read(w, a + 4 * j, sz);

					if (sh.sign)
						v = sz == 1 ? (u32)(s32)(s8)v : (u32)(s32)(s16)v;
					w->tmp[k * per + j][i] = v;
				}
			}
		}
		write_dwords(w, vdst, dwords, acc, exec);
		return true;
	}
	if (ds_write_shape(op, &sh)) {
		unsigned int per = (sh.size + 3) / 4;
		u32 *src[2][4];

		for (k = 0; k < sh.count; k++) {
			unsigned int j, base = k ? d1 : d0;

			if (!vregs_ok(w, base, per, acc))
				return emu_illegal(c);
			for (j = 0; j < per; j++)
				src[k][j] = emu_vreg(w, base + j, acc);
		}
		EMU_LANES(exec, i) {
			for (k = 0; k < sh.count; k++) {
				u32 a = sh.count == 1 ? addr[i] + off :
					addr[i] + (k ? off1 : off0) * sh.scale;
				unsigned int j;

				for (j = 0; j < per; j++)
					lds_write(w, a + 4 * j, sh.size < 4 ? sh.size : 4,
						  src[k][j][i]);
			}
		}
		return true;
	}
	if (op == DS_SWIZZLE_B32 || op == DS_PERMUTE_B32 || op == DS_BPERMUTE_B32) {
		u32 *data = emu_vreg(w, d0, acc);

		if (!data || !vregs_ok(w, vdst, 1, acc))
			return emu_illegal(c);
		ds_cross_lane(c, op, addr, data, off, exec);
		write_dwords(w, vdst, 1, acc, exec);
		return true;
	}
	if (op == DS_NOP)
		return true;
	return ds_atomic_op(c, op, addr, off, d0, d1, vdst, acc);
}

/* @per dwords per lane of VGPRs @n.. as one value into @out */
static void read_value(struct emu_wave *w, unsigned int n, unsigned int per, bool acc, u64 *out)
{
	const u32 *lo = emu_vreg(w, n, acc), *hi = per > 1 ? emu_vreg(w, n + 1, acc) : NULL;
	unsigned int i;

	for (i = 0; i < EMU_WAVE_LANES; i++)
		out[i] = lo[i] | (hi ? (u64)hi[i] << 32 : 0);
}

/* tmp[3]'s 32- or 64-bit values to VGPRs @n.. */
static void write_value(struct emu_wave *w, unsigned int n, bool b64, bool acc, u64 exec)
{
	emu_vwrite(w, n, acc, false, w->tmp[3], exec);
	if (b64) {
		unsigned int i;

		EMU_LANES(exec, i)
			w->tmp[2][i] = w->tmp[3][i] >> 32;
		emu_vwrite(w, n + 1, acc, false, w->tmp[2], exec);
	}
}

static bool ds_atomic_op(struct emu_exec *c, unsigned int op, const u32 *addr, u32 off,
			 unsigned int d0, unsigned int d1, unsigned int vdst, bool acc)
{
	struct emu_wave *w = c->w;
	bool b64 = op >= 0x40, rtn = op & 0x20;
	unsigned int per = b64 ? 2 : 1, size = 4 * per, i;
	enum atom a = ds_is_atomic(op) ? ds_atom(op) : A_NONE;
	bool two = a == A_CMPSWAP || a == A_MSKOR;
	u64 exec = w->exec, *src = w->tmp[0], *src2 = w->tmp[1], *old = w->tmp[3];

	if (a == A_NONE || !vregs_ok(w, d0, per, acc) || (two && !vregs_ok(w, d1, per, acc)) ||
	    (rtn && !vregs_ok(w, vdst, per, acc)))
		return emu_illegal(c);
	/* cmpst compares with data0 and stores data1; mskor masks with data0 */
	read_value(w, a == A_CMPSWAP ? d1 : d0, per, acc, src);
	if (two)
		read_value(w, a == A_CMPSWAP ? d0 : d1, per, acc, src2);
	if (atom_is_float(a))
		EMU_FPU_BEGIN();
	EMU_LANES(exec, i) {
		u32 at = addr[i] + off;

		old[i] = lds_read(w, at, size);
		lds_write(w, at, size, atom_new(a, 8 * size, old[i], src[i], two ? src2[i] : 0));
	}
	if (atom_is_float(a))
		EMU_FPU_END();
	if (rtn)
		write_value(w, vdst, b64, acc, exec);
	return true;
}

/* --- FLAT and GLOBAL --- */

static enum atom flat_atom(unsigned int op)
{
	static const enum atom ops[] = {
		A_SWAP, A_CMPSWAP, A_ADD, A_SUB, A_SMIN, A_UMIN, A_SMAX, A_UMAX,
		A_AND, A_OR, A_XOR, A_INC, A_DEC, A_FADD, A_PK_FADD, A_FADD, A_FMIN, A_FMAX,
	};

	if (op >= FL_ATOMIC_SWAP_X2 && op <= FL_ATOMIC_DEC_X2)
		op -= FL_ATOMIC_SWAP_X2 - FL_ATOMIC_SWAP;
	if (op >= FL_ATOMIC_SWAP && op <= FL_ATOMIC_MAX_F64)
		return ops[op - FL_ATOMIC_SWAP];
	return A_NONE;
}

static unsigned int flat_size(unsigned int op)
{
	switch (op) {
	case FL_LOAD_UBYTE: case FL_LOAD_SBYTE: case FL_STORE_BYTE: case FL_STORE_BYTE_D16_HI:
	case FL_LOAD_UBYTE_D16: case FL_LOAD_UBYTE_D16_HI: case FL_LOAD_SBYTE_D16:
	case FL_LOAD_SBYTE_D16_HI:
		return 1;
	case FL_LOAD_USHORT: case FL_LOAD_SSHORT: case FL_STORE_SHORT: case FL_STORE_SHORT_D16_HI:
	case FL_LOAD_SHORT_D16: case FL_LOAD_SHORT_D16_HI:
		return 2;
	case FL_LOAD_DWORD: case FL_STORE_DWORD: return 4;
	case FL_LOAD_DWORDX2: case FL_STORE_DWORDX2: return 8;
	case FL_LOAD_DWORDX3: case FL_STORE_DWORDX3: return 12;
	case FL_LOAD_DWORDX4: case FL_STORE_DWORDX4: return 16;
	}
	return 0;
}

/* a flat address inside the LDS aperture: its LDS offset */
static bool flat_lds(const struct emu_wave *w, u64 a, bool flat, u32 *lds_off)
{
	if (!flat || !w->lds_aperture || (a >> 32) != (w->lds_aperture >> 32))
		return false;
	*lds_off = (u32)a;
	return true;
}

/* every byte of [a, a + size) writable: checked before the first lane writes */
static bool flat_check_write(struct emu_exec *c, u64 a, unsigned int size)
{
	unsigned int j;

	if (emu_map_range(c, &c->wr, a, size, EMU_MEM_WRITE))
		return true;
	for (j = 0; j < size; j++)
		if (!emu_map_range(c, &c->wr, a + j, 1, EMU_MEM_WRITE))
			return emu_memviol(c, a + j);
	return true;
}

/* a load's value of lane @i as the register sees it (d16 forms merge) */
static u32 load_extend(unsigned int op, u32 v, u32 old)
{
	switch (op) {
	case FL_LOAD_SBYTE: return (u32)(s32)(s8)v;
	case FL_LOAD_SSHORT: return (u32)(s32)(s16)v;
	case FL_LOAD_UBYTE_D16: return (old & 0xffff0000u) | (v & 0xff);
	case FL_LOAD_UBYTE_D16_HI: return (old & 0xffff) | (v & 0xff) << 16;
	case FL_LOAD_SBYTE_D16: return (old & 0xffff0000u) | (u16)(s16)(s8)v;
	case FL_LOAD_SBYTE_D16_HI: return (old & 0xffff) | (u32)(u16)(s16)(s8)v << 16;
	case FL_LOAD_SHORT_D16: return (old & 0xffff0000u) | (v & 0xffff);
	case FL_LOAD_SHORT_D16_HI: return (old & 0xffff) | v << 16;
	}
	return v;
}

static bool flat_load(struct emu_exec *c, unsigned int op, unsigned int vdst, bool acc, bool flat)
{
	struct emu_wave *w = c->w;
	unsigned int size = flat_size(op), dwords = size < 4 ? 1 : size / 4, i, k;
	const u64 *addr = w->tmp[5];
	const u32 *old = emu_vreg(w, vdst, acc);
	u64 exec = w->exec;

	if (!vregs_ok(w, vdst, dwords, acc))
		return emu_illegal(c);
	EMU_LANES(exec, i) {
		u32 buf[4] = { 0 }, lds;

		if (flat_lds(w, addr[i], flat, &lds)) {
			for (k = 0; k < dwords; k++)
				buf[k] = lds_read(w, lds + 4 * k, size < 4 ? size : 4);
		} else if (!emu_mem_read(c, addr[i], buf, size)) {
			return false;
		}
		for (k = 0; k < dwords; k++)
			w->tmp[k][i] = k ? buf[k] : load_extend(op, buf[0], old[i]);
	}
	write_dwords(w, vdst, dwords, acc, exec);
	return true;
}

static bool flat_store(struct emu_exec *c, unsigned int op, unsigned int vdata, bool acc, bool flat)
{
	struct emu_wave *w = c->w;
	unsigned int size = flat_size(op), dwords = size < 4 ? 1 : size / 4, i, k;
	bool hi = op == FL_STORE_BYTE_D16_HI || op == FL_STORE_SHORT_D16_HI;
	const u64 *addr = w->tmp[5];
	u64 exec = w->exec;
	u32 lds;

	if (!vregs_ok(w, vdata, dwords, acc))
		return emu_illegal(c);
	EMU_LANES(exec, i)
		if (!flat_lds(w, addr[i], flat, &lds) && !flat_check_write(c, addr[i], size))
			return false;
	EMU_LANES(exec, i) {
		u32 buf[4];

		for (k = 0; k < dwords; k++)
			buf[k] = emu_vreg(w, vdata + k, acc)[i];
		if (hi)
			buf[0] >>= 16;
		if (flat_lds(w, addr[i], flat, &lds)) {
			for (k = 0; k < dwords; k++)
				lds_write(w, lds + 4 * k, size < 4 ? size : 4, buf[k]);
		} else if (!emu_mem_write(c, addr[i], buf, size)) {
			return false;
		}
	}
	return true;
}

static bool flat_atomic(struct emu_exec *c, unsigned int op, unsigned int vdata,
			unsigned int vdst, bool acc, bool flat, bool rtn)
{
	struct emu_wave *w = c->w;
	enum atom a = flat_atom(op);
	bool b64 = op >= FL_ATOMIC_ADD_F64, two = a == A_CMPSWAP;
	unsigned int per = b64 ? 2 : 1, size = 4 * per, i;
	const u64 *addr = w->tmp[5];
	u64 exec = w->exec, *ptr = w->tmp[4];

	if (a == A_NONE || !vregs_ok(w, vdata, two ? 2 * per : per, acc) ||
	    (rtn && !vregs_ok(w, vdst, per, acc)))
		return emu_illegal(c);
	/* every lane's host pointer first: a refused one stops before any write */
	EMU_LANES(exec, i) {
		u32 lds;
		u8 *p;

		if (flat_lds(w, addr[i], flat, &lds)) {
			ptr[i] = 0;
			if (!(lds & (size - 1)) && w->lds && (u64)lds + size <= w->lds_size)
				ptr[i] = (unsigned long)(w->lds + lds);
			continue;
		}
		if (addr[i] & (size - 1))
			return emu_memviol(c, addr[i]);
		p = emu_map_range(c, &c->wr, addr[i], size, EMU_MEM_WRITE);
		if (!p)
			return emu_memviol(c, addr[i]);
		ptr[i] = (unsigned long)p;
	}
	/* cmpswap's data: the value to store, then the one to compare with */
	read_value(w, vdata, per, acc, w->tmp[0]);
	if (two)
		read_value(w, vdata + per, per, acc, w->tmp[1]);
	atom_lanes(w, exec, a, 8 * size);
	if (rtn)
		write_value(w, vdst, b64, acc, exec);
	return true;
}

bool emu_exec_flat(struct emu_exec *c)
{
	struct emu_wave *w = c->w;
	u32 w0 = c->word[0], w1 = c->word[1];
	unsigned int op = (w0 >> 18) & 0x7f, seg = (w0 >> 14) & 3, i;
	unsigned int vaddr = w1 & 0xff, vdata = (w1 >> 8) & 0xff, saddr = (w1 >> 16) & 0x7f;
	unsigned int vdst = w1 >> 24;
	bool acc = emu_isa_unified_vgprs(w->isa) && (w1 >> 23 & 1), flat = seg == 0;
	s64 off = flat ? (s64)(w0 & 0xfff) : (s64)((s32)(w0 << 19) >> 19);
	const u32 *lo = emu_vreg(w, vaddr, false), *hi = emu_vreg(w, vaddr + 1, false);
	u64 *addr = w->tmp[5], base = 0;

	/* scratch, and the LDS DMA forms */
	if (seg == 1 || seg == 3 || (w0 >> 13 & 1))
		return emu_illegal(c);
	if (!flat && saddr != 0x7f) {
		/* an SGPR pair plus a 32-bit VGPR offset */
		if (!lo || !emu_sread(c, saddr, EMU_B64, &base))
			return emu_illegal(c);
		for (i = 0; i < EMU_WAVE_LANES; i++)
			addr[i] = base + lo[i] + off;
	} else {
		if (!lo || !hi)
			return emu_illegal(c);
		for (i = 0; i < EMU_WAVE_LANES; i++)
			addr[i] = (lo[i] | (u64)hi[i] << 32) + off;
	}
	if ((op >= FL_LOAD_UBYTE && op <= FL_LOAD_DWORDX4) ||
	    (op >= FL_LOAD_UBYTE_D16 && op <= FL_LOAD_SHORT_D16_HI))
		return flat_load(c, op, vdst, acc, flat);
	if (op >= FL_STORE_BYTE && op <= FL_STORE_DWORDX4)
		return flat_store(c, op, vdata, acc, flat);
	return flat_atomic(c, op, vdata, vdst, acc, flat, w0 >> 16 & 1);
}

/* --- MUBUF: only the cache write-backs and invalidations --- */

/*
 * The memory model's fences at agent and system scope: gfx942 code
 * acquires with buffer_inv and releases with buffer_wbl2 (sc0/sc1 choose the
 * scope), gfx90a's with buffer_wbinvl1_vol and buffer_wbl2.  Every access
 * here reaches memory at once, so there is nothing to write back or drop;
 * the instruction only has to exist on the wave's target.  Buffer loads
 * and stores through a descriptor are not emulated.
 */
bool emu_exec_mubuf(struct emu_exec *c)
{
	unsigned int op = (c->word[0] >> 18) & 0x7f;

	switch (op) {
	case MUBUF_WBINVL1:
	case MUBUF_WBINVL1_VOL:
		return true;
	case MUBUF_WBL2:
	case MUBUF_INV:
		if (c->w->isa != EMU_ISA_GFX908)
			return true;
		break;
	}
	return emu_illegal(c);
}

/* --- what the memory unit executes, for listings --- */

static const struct emu_op_name smem_ops[] = {
	EMU_OP(SMEM_LOAD_DWORD), EMU_OP(SMEM_LOAD_DWORDX2), EMU_OP(SMEM_LOAD_DWORDX4),
	EMU_OP(SMEM_LOAD_DWORDX8), EMU_OP(SMEM_LOAD_DWORDX16),
	EMU_OP(SMEM_BUFFER_LOAD_DWORD), EMU_OP(SMEM_BUFFER_LOAD_DWORDX2),
	EMU_OP(SMEM_BUFFER_LOAD_DWORDX4), EMU_OP(SMEM_BUFFER_LOAD_DWORDX8),
	EMU_OP(SMEM_BUFFER_LOAD_DWORDX16), EMU_OP(SMEM_STORE_DWORD),
	EMU_OP(SMEM_STORE_DWORDX2), EMU_OP(SMEM_STORE_DWORDX4),
	EMU_OP(SMEM_DCACHE_INV), EMU_OP(SMEM_DCACHE_WB), EMU_OP(SMEM_DCACHE_INV_VOL),
	EMU_OP(SMEM_DCACHE_WB_VOL), EMU_OP(SMEM_MEMTIME), EMU_OP(SMEM_MEMREALTIME),
};

static const struct emu_op_name ds_ops[] = {
	EMU_OP(DS_ADD_U32), EMU_OP(DS_SUB_U32), EMU_OP(DS_RSUB_U32),
	EMU_OP(DS_INC_U32), EMU_OP(DS_DEC_U32), EMU_OP(DS_MIN_I32), EMU_OP(DS_MAX_I32),
	EMU_OP(DS_MIN_U32), EMU_OP(DS_MAX_U32), EMU_OP(DS_AND_B32), EMU_OP(DS_OR_B32),
	EMU_OP(DS_XOR_B32), EMU_OP(DS_MSKOR_B32), EMU_OP(DS_WRITE_B32),
	EMU_OP(DS_WRITE2_B32), EMU_OP(DS_WRITE2ST64_B32), EMU_OP(DS_CMPST_B32),
	EMU_OP(DS_MIN_F32), EMU_OP(DS_MAX_F32), EMU_OP(DS_NOP), EMU_OP(DS_ADD_F32),
	EMU_OP(DS_WRITE_B8), EMU_OP(DS_WRITE_B16), EMU_OP(DS_ADD_RTN_U32),
	EMU_OP(DS_SUB_RTN_U32), EMU_OP(DS_RSUB_RTN_U32), EMU_OP(DS_INC_RTN_U32),
	EMU_OP(DS_DEC_RTN_U32), EMU_OP(DS_MIN_RTN_I32), EMU_OP(DS_MAX_RTN_I32),
	EMU_OP(DS_MIN_RTN_U32), EMU_OP(DS_MAX_RTN_U32), EMU_OP(DS_AND_RTN_B32),
	EMU_OP(DS_OR_RTN_B32), EMU_OP(DS_XOR_RTN_B32), EMU_OP(DS_MSKOR_RTN_B32),
	EMU_OP(DS_WRXCHG_RTN_B32), EMU_OP(DS_CMPST_RTN_B32), EMU_OP(DS_MIN_RTN_F32),
	EMU_OP(DS_MAX_RTN_F32), EMU_OP(DS_ADD_RTN_F32), EMU_OP(DS_READ_B32),
	EMU_OP(DS_READ2_B32), EMU_OP(DS_READ2ST64_B32), EMU_OP(DS_READ_I8),
	EMU_OP(DS_READ_U8), EMU_OP(DS_READ_I16), EMU_OP(DS_READ_U16),
	EMU_OP(DS_SWIZZLE_B32), EMU_OP(DS_PERMUTE_B32), EMU_OP(DS_BPERMUTE_B32),
	EMU_OP(DS_ADD_U64), EMU_OP(DS_SUB_U64), EMU_OP(DS_RSUB_U64),
	EMU_OP(DS_INC_U64), EMU_OP(DS_DEC_U64), EMU_OP(DS_MIN_I64), EMU_OP(DS_MAX_I64),
	EMU_OP(DS_MIN_U64), EMU_OP(DS_MAX_U64), EMU_OP(DS_AND_B64), EMU_OP(DS_OR_B64),
	EMU_OP(DS_XOR_B64), EMU_OP(DS_MSKOR_B64), EMU_OP(DS_WRITE_B64),
	EMU_OP(DS_WRITE2_B64), EMU_OP(DS_WRITE2ST64_B64), EMU_OP(DS_CMPST_B64),
	EMU_OP(DS_MIN_F64), EMU_OP(DS_MAX_F64), EMU_OP(DS_ADD_F64),
	EMU_OP(DS_ADD_RTN_U64), EMU_OP(DS_SUB_RTN_U64), EMU_OP(DS_RSUB_RTN_U64),
	EMU_OP(DS_INC_RTN_U64), EMU_OP(DS_DEC_RTN_U64), EMU_OP(DS_MIN_RTN_I64),
	EMU_OP(DS_MAX_RTN_I64), EMU_OP(DS_MIN_RTN_U64), EMU_OP(DS_MAX_RTN_U64),
	EMU_OP(DS_AND_RTN_B64), EMU_OP(DS_OR_RTN_B64), EMU_OP(DS_XOR_RTN_B64),
	EMU_OP(DS_MSKOR_RTN_B64), EMU_OP(DS_WRXCHG_RTN_B64), EMU_OP(DS_CMPST_RTN_B64),
	EMU_OP(DS_MIN_RTN_F64), EMU_OP(DS_MAX_RTN_F64), EMU_OP(DS_READ_B64),
	EMU_OP(DS_READ2_B64), EMU_OP(DS_READ2ST64_B64), EMU_OP(DS_ADD_RTN_F64),
	EMU_OP(DS_WRITE_B96), EMU_OP(DS_WRITE_B128), EMU_OP(DS_READ_B96),
	EMU_OP(DS_READ_B128),
};

/* GLOBAL (seg 2) and FLAT (seg 0) share the numbering */
static const struct emu_op_name flat_ops[] = {
	EMU_OP(FL_LOAD_UBYTE), EMU_OP(FL_LOAD_SBYTE), EMU_OP(FL_LOAD_USHORT),
	EMU_OP(FL_LOAD_SSHORT), EMU_OP(FL_LOAD_DWORD), EMU_OP(FL_LOAD_DWORDX2),
	EMU_OP(FL_LOAD_DWORDX3), EMU_OP(FL_LOAD_DWORDX4), EMU_OP(FL_STORE_BYTE),
	EMU_OP(FL_STORE_BYTE_D16_HI), EMU_OP(FL_STORE_SHORT),
	EMU_OP(FL_STORE_SHORT_D16_HI), EMU_OP(FL_STORE_DWORD),
	EMU_OP(FL_STORE_DWORDX2), EMU_OP(FL_STORE_DWORDX3), EMU_OP(FL_STORE_DWORDX4),
	EMU_OP(FL_LOAD_UBYTE_D16), EMU_OP(FL_LOAD_UBYTE_D16_HI),
	EMU_OP(FL_LOAD_SBYTE_D16), EMU_OP(FL_LOAD_SBYTE_D16_HI),
	EMU_OP(FL_LOAD_SHORT_D16), EMU_OP(FL_LOAD_SHORT_D16_HI),
	EMU_OP(FL_ATOMIC_SWAP), EMU_OP(FL_ATOMIC_CMPSWAP), EMU_OP(FL_ATOMIC_ADD),
	EMU_OP(FL_ATOMIC_SUB), EMU_OP(FL_ATOMIC_SMIN), EMU_OP(FL_ATOMIC_UMIN),
	EMU_OP(FL_ATOMIC_SMAX), EMU_OP(FL_ATOMIC_UMAX), EMU_OP(FL_ATOMIC_AND),
	EMU_OP(FL_ATOMIC_OR), EMU_OP(FL_ATOMIC_XOR), EMU_OP(FL_ATOMIC_INC),
	EMU_OP(FL_ATOMIC_DEC), EMU_OP(FL_ATOMIC_ADD_F32), EMU_OP(FL_ATOMIC_PK_ADD_F16),
	EMU_OP(FL_ATOMIC_ADD_F64), EMU_OP(FL_ATOMIC_MIN_F64),
	EMU_OP(FL_ATOMIC_MAX_F64), EMU_OP(FL_ATOMIC_SWAP_X2),
	EMU_OP(FL_ATOMIC_CMPSWAP_X2), EMU_OP(FL_ATOMIC_ADD_X2),
	EMU_OP(FL_ATOMIC_SUB_X2), EMU_OP(FL_ATOMIC_SMIN_X2), EMU_OP(FL_ATOMIC_UMIN_X2),
	EMU_OP(FL_ATOMIC_SMAX_X2), EMU_OP(FL_ATOMIC_UMAX_X2), EMU_OP(FL_ATOMIC_AND_X2),
	EMU_OP(FL_ATOMIC_OR_X2), EMU_OP(FL_ATOMIC_XOR_X2), EMU_OP(FL_ATOMIC_INC_X2),
	EMU_OP(FL_ATOMIC_DEC_X2),
};

static const struct emu_op_name mubuf_ops[] = {
	EMU_OP(MUBUF_WBL2), EMU_OP(MUBUF_INV), EMU_OP(MUBUF_WBINVL1), EMU_OP(MUBUF_WBINVL1_VOL),
};

const struct emu_op_table emu_memory_tables[] = {
	{ "SMEM", "s_", smem_ops, sizeof(smem_ops) / sizeof(smem_ops[0]) },
	{ "DS", "ds_", ds_ops, sizeof(ds_ops) / sizeof(ds_ops[0]) },
	{ "FLAT", "flat_", flat_ops, sizeof(flat_ops) / sizeof(flat_ops[0]) },
	{ "MUBUF", "buffer_", mubuf_ops, sizeof(mubuf_ops) / sizeof(mubuf_ops[0]) },
};
const unsigned int emu_memory_ntables = 4;

