/* SPDX-License-Identifier: GPL-2.0 */
/*
 * amdgpu_emu: the floating-point half of the shader core, private to
 * emu_shader.c.
 *
 * Why a unit of its own: in the kernel, floating point is allowed only
 * between kernel_fpu_begin() and kernel_fpu_end(), and a file compiled with
 * SSE enabled may use SSE registers anywhere (gcc vectorises plain integer
 * loops with them).  So only this file is built with the FPU flags, and
 * emu_shader.c, built without them, calls into it only inside a
 * begin/end pair that holds no sleeping call (the VM's map callback is never
 * called in between).
 */
#ifndef EMU_SHADER_FP_H
#define EMU_SHADER_FP_H

#include "emu_shader.h"

/*
 * One VALU instruction's float work over the lanes in @exec.  @op is the
 * instruction's VOP3 opcode (emu_shader_ops.h); sources and results are one
 * u64 per lane (32- and 16-bit values in the low bits), input modifiers
 * already applied.  @vcc is v_div_fmas's per-lane scale flag.
 */
struct emu_fp_args {
	unsigned int op;
	u64 exec;
	u64 vcc;
	const u64 *src[3];
	u64 *dst;
	u64 mask;		/* out: compares, v_cmp_class, v_div_scale's VCC */
	bool clamp;
	unsigned int omod;	/* 0 none, 1 *2, 2 *4, 3 /2 */
};

/* false: @op is no float operation this unit knows */
bool emu_fp_valu(struct emu_fp_args *a);

/* memory and LDS atomics (ops: EMU_FP_ATOMIC_*) */
enum {
	EMU_FP_ADD,
	EMU_FP_MIN,
	EMU_FP_MAX,
};
u32 emu_fp_atomic32(unsigned int op, u32 old, u32 val);
u64 emu_fp_atomic64(unsigned int op, u64 old, u64 val);
u32 emu_fp_pk_add_f16(u32 old, u32 val);
bool emu_fp_eq32(u32 a, u32 b);
bool emu_fp_eq64(u64 a, u64 b);

#endif
