/* SPDX-License-Identifier: GPL-2.0 */
/*
 * amdgpu_emu: the shader core of the emulated GPU — one wave's architectural
 * state and the interpreter that runs it, instruction by instruction.
 *
 * Built twice: into the module (with the kernel's types) and into the host's
 * unit tests (test/emu/shader-tests/, with <stdint.h>), so nothing here may
 * depend on the rest of the emulator.  Memory is reached only through
 * struct emu_shader_mem: the dispatcher (emu_dispatch.c) translates through
 * the process's GPU VM, the tests through a flat buffer.
 *
 * The register file is what the gfx9 ISA documents (AMD "Vega" and
 * "CDNA 2 Instruction Set Architecture" reference guides): 102 SGPRs,
 * VCC, EXEC, M0, FLAT_SCRATCH, XNACK_MASK, 16 trap temporaries, the
 * hardware registers MODE, STATUS (SCC is its bit 0) and TRAPSTS, and per
 * lane the VGPRs and (gfx90a) AccVGPRs.  That is also what a context save
 * (CWSR, emu_cwsr.c) writes out and reads back.
 */
#ifndef EMU_SHADER_H
#define EMU_SHADER_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
typedef uint8_t u8;
typedef int8_t s8;
typedef int16_t s16;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;
#endif

#define EMU_WAVE_LANES		64
#define EMU_WAVE_SGPRS		102	/* s0..s101 */
#define EMU_WAVE_TTMPS		16
#define EMU_WAVE_MAX_VGPRS	512	/* gfx90a: 256 VGPRs + 256 AccVGPRs */

/* HW_REG_STATUS bits the core keeps */
#define EMU_STATUS_SCC		(1u << 0)

enum emu_isa_target {
	EMU_ISA_GFX908,			/* MI100 */
	EMU_ISA_GFX90A,			/* MI200 (MI210/MI250) */
	EMU_ISA_GFX942,			/* MI300X/MI325X (gfx940..942 share one encoding) */
};

/* gfx90a and later: one register file of VGPRs then AccVGPRs, work-item ids packed in v0 */
static inline bool emu_isa_unified_vgprs(enum emu_isa_target isa)
{
	return isa != EMU_ISA_GFX908;
}

enum emu_wave_state {
	EMU_WAVE_RUNNING,	/* can issue its next instruction at pc */
	EMU_WAVE_BARRIER,	/* issued s_barrier; pc is past it; waits for its workgroup */
	EMU_WAVE_ENDED,		/* s_endpgm */
	EMU_WAVE_ILLEGAL,	/* the instruction at fault_pc is not one the core executes */
	EMU_WAVE_MEMVIOL,	/* the access to fault_addr is not permitted by the GPU VM */
};

struct emu_wave {
	/* architectural state: what CWSR saves and restores */
	u64 pc;
	u64 exec;
	u64 vcc;
	u64 flat_scratch;
	u64 xnack_mask;
	u32 m0;
	u32 mode;		/* HW_REG_MODE */
	u32 status;		/* HW_REG_STATUS; bit 0 is SCC */
	u32 trapsts;		/* HW_REG_TRAPSTS */
	u32 sgpr[EMU_WAVE_SGPRS];
	u32 ttmp[EMU_WAVE_TTMPS];
	u32 nvgpr;		/* architected VGPRs the kernel descriptor allocated */
	u32 nagpr;		/* AccVGPRs (gfx90a: after the VGPRs in the unified file) */
	u32 (*vgpr)[EMU_WAVE_LANES];	/* nvgpr + nagpr registers, [reg][lane] */

	/* the workgroup's local data share, shared by its waves */
	u8 *lds;
	u32 lds_size;

	/*
	 * The process's LDS and scratch apertures (4 GiB each; 0: none), as
	 * KFD reports them: flat addresses inside the LDS aperture reach
	 * @lds, src_shared_base / src_private_base read their high halves.
	 */
	u64 lds_aperture;
	u64 scratch_aperture;

	enum emu_isa_target isa;
	u32 xcc_id;		/* gfx942: the XCC the wave runs on (HW_REG_XCC_ID) */
	enum emu_wave_state state;
	u64 fault_pc;		/* ILLEGAL, MEMVIOL: the instruction */
	u64 fault_addr;		/* MEMVIOL: the address */
	u64 retired;		/* instructions executed, for the rate the emulator reports */

	/* the interpreter's working space for one instruction; not state */
	u64 tmp[6][EMU_WAVE_LANES];
};

enum emu_mem_access { EMU_MEM_READ, EMU_MEM_WRITE, EMU_MEM_EXEC };

struct emu_shader_mem {
	void *ctx;
	/*
	 * The host address of the byte at GPU virtual address @va, if the VM
	 * maps it with the permission @access needs; *room is how many bytes
	 * from there are contiguous in the host (at least 1).  NULL: a memory
	 * violation.  The pointer stays valid until the next call to
	 * emu_wave_run() returns.
	 */
	u8 *(*map)(void *ctx, u64 va, enum emu_mem_access access, u32 *room);
};

/*
 * Runs @w from its pc for at most @budget instructions, or until it stops
 * being EMU_WAVE_RUNNING.  Returns the number of instructions retired.  A wave
 * in EMU_WAVE_BARRIER is made RUNNING again by its dispatcher once every wave
 * of its workgroup has arrived.
 */
u32 emu_wave_run(struct emu_wave *w, const struct emu_shader_mem *mem, u32 budget);

/*
 * The opcodes the core executes, from its decoder tables, for listings:
 * calls @fn once per (encoding, opcode, mnemonic).  The encoding is a
 * name such as "SOP2", "VOP3" or "FLAT".
 */
void emu_shader_for_each_op(void (*fn)(void *arg, const char *enc, unsigned int op,
				       const char *name), void *arg);

#endif
