/* SPDX-License-Identifier: GPL-2.0 */
/*
 * amdgpu_emu: what the interpreter's units (emu_shader.c for the scalar
 * side and the loop, emu_shader_vector.c for the VALU, emu_shader_memory.c
 * for SMEM, DS and FLAT) share: the instruction being executed, memory
 * through the map callback with a one-entry cache per kind of access, and
 * operand decoding.  Private to those files.
 *
 * Every executor decodes and reads all it needs before it writes anything,
 * so an instruction found illegal half-way leaves the wave as it was: it
 * returns emu_illegal(c), which records the instruction's pc.
 */
#ifndef EMU_SHADER_INTERNAL_H
#define EMU_SHADER_INTERNAL_H

#include "emu_shader.h"
#include "emu_shader_ops.h"
#include "emu_shader_fp.h"

#ifdef __KERNEL__
#include <linux/string.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <asm/fpu/api.h>
/* the float unit runs between these (see emu_shader_fp.h) */
#define EMU_FPU_BEGIN()	kernel_fpu_begin()
#define EMU_FPU_END()	kernel_fpu_end()
#else
#include <string.h>
#include <time.h>
#define EMU_FPU_BEGIN()	do { } while (0)
#define EMU_FPU_END()	do { } while (0)
#define fallthrough	__attribute__((__fallthrough__))
#endif

/* lanes of @exec, lowest first */
#define EMU_LANES(exec, i) \
	for (u64 _m = (exec); _m && ((i) = __builtin_ctzll(_m), 1); _m &= _m - 1)

/* one translation kept between accesses: [va, va + room) is at host */
struct emu_map_cache {
	u64 va;
	u8 *host;
	u32 room;
};

/* the instruction being executed */
struct emu_exec {
	struct emu_wave *w;
	const struct emu_shader_mem *mem;
	u64 pc;			/* its address */
	u64 next_pc;		/* where the wave continues; set by branches */
	bool jumped;		/* next_pc was set */
	bool yield;		/* s_sleep: give the issue slot back to the dispatcher */
	u32 word[2];		/* its first one or two dwords */
	u32 len;		/* its size in bytes, without a literal */
	bool has_literal;	/* a source is the literal constant (code 255) */
	u32 literal;
	struct emu_map_cache ic, rd, wr;
};

/* --- stopping the wave --- */

/* (a literal that could not be fetched already made it a MEMVIOL) */
static inline bool emu_illegal(struct emu_exec *c)
{
	if (c->w->state == EMU_WAVE_RUNNING) {
		c->w->state = EMU_WAVE_ILLEGAL;
		c->w->fault_pc = c->pc;
	}
	return false;
}

static inline bool emu_memviol(struct emu_exec *c, u64 va)
{
	c->w->state = EMU_WAVE_MEMVIOL;
	c->w->fault_pc = c->pc;
	c->w->fault_addr = va;
	return false;
}

/* --- memory (emu_shader.c) --- */

/*
 * The host address of [va, va + size) if the VM maps all of it contiguously
 * for @acc; NULL otherwise (a violation, or a range that straddles two
 * host pieces: the byte-wise helpers below tell which).
 */
u8 *emu_map_range(struct emu_exec *c, struct emu_map_cache *mc, u64 va, u32 size,
		  enum emu_mem_access acc);
/* false: a violation, recorded as the wave's state (nothing read past it) */
bool emu_mem_read(struct emu_exec *c, u64 va, void *buf, u32 size);
/* false: a violation; bytes before the faulting one may have been written */
bool emu_mem_write(struct emu_exec *c, u64 va, const void *buf, u32 size);
/* the dword at @va of the instruction stream */
bool emu_fetch(struct emu_exec *c, u64 va, u32 *word);

static inline u64 emu_now_ns(void)
{
#ifdef __KERNEL__
	return ktime_get_raw_ns();
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
#endif
}

/* set bits (libgcc's __popcountdi2 is not in the kernel) */
static inline unsigned int emu_popcount(u64 v)
{
	v = v - (v >> 1 & 0x5555555555555555ull);
	v = (v & 0x3333333333333333ull) + (v >> 2 & 0x3333333333333333ull);
	v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (v * 0x0101010101010101ull) >> 56;
}

static inline u64 emu_brev64(u64 v)
{
	v = (v >> 1 & 0x5555555555555555ull) | (v & 0x5555555555555555ull) << 1;
	v = (v >> 2 & 0x3333333333333333ull) | (v & 0x3333333333333333ull) << 2;
	v = (v >> 4 & 0x0f0f0f0f0f0f0f0full) | (v & 0x0f0f0f0f0f0f0f0full) << 4;
	return __builtin_bswap64(v);
}

/* --- operands (emu_shader.c) --- */

/* how an operand is read: its width, and which inline float constants apply */
enum emu_opnd {
	EMU_B32,		/* 32-bit integer or f32 */
	EMU_F16,		/* 16-bit float: inline floats are halves */
	EMU_B64,		/* 64-bit integer: literal zero-extended */
	EMU_F64,		/* f64: inline floats are doubles, a literal the high half */
};

static inline bool emu_opnd_is64(enum emu_opnd k)
{
	return k == EMU_B64 || k == EMU_F64;
}

/*
 * A scalar source: SGPR, special register, inline constant or literal.
 * false: @code names no readable operand (the caller reports illegal).
 */
bool emu_sread(struct emu_exec *c, unsigned int code, enum emu_opnd kind, u64 *v);
/* whether @code is a writable scalar destination of 32 or 64 bits */
bool emu_sdst_ok(unsigned int code, bool is64);
void emu_swrite(struct emu_wave *w, unsigned int code, bool is64, u64 v);

static inline bool emu_scc(const struct emu_wave *w)
{
	return w->status & EMU_STATUS_SCC;
}

static inline void emu_set_scc(struct emu_wave *w, bool scc)
{
	w->status = (w->status & ~EMU_STATUS_SCC) | (scc ? EMU_STATUS_SCC : 0);
}

/*
 * VGPR n (v0 is n = 0), or AccVGPR n with @acc; NULL when the wave has no
 * such register (the kernel descriptor allocated fewer): the caller
 * reports illegal rather than reach past the register file.
 */
static inline u32 *emu_vreg(struct emu_wave *w, unsigned int n, bool acc)
{
	if (acc) {
		if (n >= w->nagpr)
			return NULL;
		n += w->nvgpr;
	} else if (n >= w->nvgpr) {
		return NULL;
	}
	return w->vgpr[n];
}

/* a VALU source (9-bit code; 256 + n is VGPR n) for every lane */
bool emu_vread(struct emu_exec *c, unsigned int code, enum emu_opnd kind, u64 *out);
/* writes @d to the lanes of @exec; emu_vreg() must have accepted the registers */
void emu_vwrite(struct emu_wave *w, unsigned int n, bool acc, bool is64, const u64 *d,
		u64 exec);
static inline bool emu_vdst_ok(struct emu_wave *w, unsigned int n, bool acc, bool is64)
{
	return emu_vreg(w, n, acc) && (!is64 || emu_vreg(w, n + 1, acc));
}

/* --- executors: true when the instruction completed (emu_exec's next_pc) --- */

bool emu_exec_sop2(struct emu_exec *c);
bool emu_exec_sopk(struct emu_exec *c);
bool emu_exec_sop1(struct emu_exec *c);
bool emu_exec_sopc(struct emu_exec *c);
bool emu_exec_sopp(struct emu_exec *c);
bool emu_exec_vop1(struct emu_exec *c);
bool emu_exec_vop2(struct emu_exec *c);
bool emu_exec_vopc(struct emu_exec *c);
bool emu_exec_vop3(struct emu_exec *c);
bool emu_exec_vop3p(struct emu_exec *c);
bool emu_exec_smem(struct emu_exec *c);
bool emu_exec_ds(struct emu_exec *c);
bool emu_exec_flat(struct emu_exec *c);
bool emu_exec_mubuf(struct emu_exec *c);

/* --- listings: each unit's table of what it executes --- */

/* an opcode and its enum's name in emu_shader_ops.h (EMU_OP) */
struct emu_op_name {
	unsigned short op;
	const char *name;
};

#define EMU_OP(x)	{ x, #x }

/*
 * The mnemonic is the enum's name in lower case, its first word replaced by
 * @prefix: SOP2_ADD_U32 with "s_" is s_add_u32.
 */
struct emu_op_table {
	const char *enc;
	const char *prefix;
	const struct emu_op_name *ops;
	unsigned int count;
};

extern const struct emu_op_table emu_vector_tables[];
extern const unsigned int emu_vector_ntables;
extern const struct emu_op_table emu_memory_tables[];
extern const unsigned int emu_memory_ntables;

#endif
