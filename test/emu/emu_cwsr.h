/* SPDX-License-Identifier: GPL-2.0 */
/*
 * amdgpu_emu: compute-wave save and restore (CWSR) of a queue's resident
 * waves, in the layout a gfx9 GPU (gfx908, gfx90a, gfx942) and amdkfd use.
 * amdkfd's gfx9.4.3 trap handler (gfx942) saves exactly as gfx90a's: the
 * same record, state word and register order (it differs in the cache bits
 * of its own stores and in keeping its replay state in ttmp13).  A queue of
 * an MI300 partition with several XCCs has one save area, one control stack
 * and one MQD per XCC, each in this layout (emu_dispatch.c).
 *
 * When a queue is preempted the hardware empties it into two places:
 *
 *  - the control stack, in the kernel's MQD buffer one page after the MQD
 *    (gfx9 keeps it out of user memory), ctl_stack_size bytes long and filled
 *    downward: the used part is [cntl_stack_offset, ctl_stack_size);
 *  - the wave area of the queue's context save area, the user memory the
 *    thunk registered at CREATE_QUEUE: [ctl_stack_size, wg_state_offset),
 *    filled upward.  Bytes [0, 40) of that memory are the thunk's header
 *    (HsaUserContextSaveAreaHeader).
 *
 * cntl_stack_offset and wg_state_offset are the MQD's cp_hqd_cntl_stack_offset
 * and cp_hqd_wg_state_offset; an empty queue has both equal to ctl_stack_size.
 * GET_QUEUE_WAVE_STATE reports ctl_stack_size - cntl_stack_offset and
 * wg_state_offset - ctl_stack_size; CRIU carries the whole control stack area
 * (ctl_stack_size bytes) after the MQD, while the wave area travels as the
 * process's memory.
 *
 * The control stack, read upward from cntl_stack_offset, is 2 words the
 * firmware keeps for itself, then one word per entry: a RELAUNCH_STATE (bit
 * 31) gives the register and LDS allocation of the waves after it, a
 * RELAUNCH_WAVE stands for one saved wave, with bit 17 on the first wave of
 * its workgroup and bit 16 on the last; bit 30 marks events, which carry no
 * wave.  The n-th wave entry owns the n-th record counted down from
 * wg_state_offset.  A record is, from its lowest address: the VGPRs (256
 * bytes each, lane-major), the AccVGPRs, the SGPRs, 16 dwords of hardware
 * registers (M0, PC lo/hi, EXEC lo/hi, STATUS, TRAPSTS, XNACK_MASK lo/hi,
 * MODE), 16 dwords of trap temporaries, the workgroup's LDS (first wave
 * only) and 64 bytes the trap handler does not write.  This is the layout of
 * amdkfd's gfx9 trap handler (cwsr_trap_handler_gfx9.asm) as ROCdbgapi reads
 * it back (architecture.cpp, control_stack_iterate and register_address).
 *
 * Followed exactly: every offset and size above; the RELAUNCH_STATE fields
 * (VGPR blocks [5:0], SGPR blocks [8:6] counting the 16 trap temporaries, LDS
 * in 512-byte units from bit 9, gfx90a's AccVGPR offset [29:24]); the
 * RELAUNCH_WAVE first/last bits; the SGPR aliases (with 112 saved SGPRs:
 * FLAT_SCRATCH in s102-103, a copy of XNACK_MASK in s104-105, VCC in
 * s106-107); ttmp4-11 and ttmp13 in their slots, ttmp8-10 holding the
 * workgroup id and ttmp11[5:0] the wave's position in it, as the SPI
 * initialises them for the debugger (emu_cwsr_spi_ttmps()).
 *
 * Ours, in places the real layout leaves to the implementation:
 *  - the 2 firmware words: a marker and the number of saved waves;
 *  - the record's last 64 bytes: what the emulator knows of a wave beyond
 *    its registers (struct emu_wave's state, fault_pc, fault_addr, retired);
 *  - ttmp0-3, 12, 14 and 15 are stored in their slots, which the hardware
 *    handler leaves unwritten (they hold its own temporaries);
 *  - RELAUNCH_WAVE's scratch and shader-engine fields are 0.
 * Not in the save area at all: how far the dispatch has got (which
 * workgroups are still to launch) — that is the MQD's, as on hardware.
 *
 * Register counts come back rounded to the hardware's granules: VGPRs to 4,
 * gfx90a's unified VGPR file to 8 (the AccVGPRs take the difference), gfx908's
 * AccVGPRs to the VGPR count (its files are allocated alike), LDS to 512
 * bytes; the padding reads back as zero.  The encoder always saves the full
 * SGPR allocation (8 blocks).
 *
 * Every function here only computes (no allocation, no locking, no user
 * access), so that it builds into the module and into the host's unit tests
 * (test/emu/cwsr-tests/).  Decoding reads memory the process can write and
 * CRIU images: it validates every count, offset and field first and returns
 * -EINVAL without touching its outputs when anything is off.
 */
#ifndef EMU_CWSR_H
#define EMU_CWSR_H

#include "emu_shader.h"

#define EMU_CWSR_PAGE_SIZE		4096
#define EMU_CWSR_HEADER_SIZE		40	/* the thunk's HsaUserContextSaveAreaHeader */
#define EMU_CWSR_WAVE_STATE_HEADER_SIZE	16	/* its first 4 words, written by 6.8+ kernels */
#define EMU_CWSR_FW_WORDS		2	/* control stack words kept by the firmware */
#define EMU_CWSR_MAX_GROUP_WAVES	16	/* 1024 work-items of 64 lanes */
#define EMU_CWSR_MAX_LDS		65536	/* LDS per workgroup on gfx9 */
#define EMU_CWSR_MAX_CTL_STACK		(1u << 20)
#define EMU_CWSR_SAVED_SGPRS		112	/* 8 blocks of 16, less the 16 ttmps */

/* The sizes amdkfd (kfd_queue.c) and the thunk (queues.c) give a queue's save area. */
struct emu_cwsr_sizes {
	u32 cu_num;
	u32 wave_num;		/* waves the control stack is sized for */
	u32 ctl_stack_size;	/* CREATE_QUEUE's ctl_stack_size */
	u32 wg_data_size;	/* the wave area's room */
	u32 ctx_save_size;	/* CREATE_QUEUE's ctx_save_restore_size (thunk 6.x) */
	u32 debug_memory_size;	/* debugger room the thunk adds after it */
};

int emu_cwsr_sizes(enum emu_isa_target isa, u32 simd_count, u32 simd_per_cu,
		   u32 array_count, u32 simd_arrays_per_engine,
		   struct emu_cwsr_sizes *s);

/* One queue's save area, from what CREATE_QUEUE registered. */
struct emu_cwsr_area {
	enum emu_isa_target isa;
	u32 ctl_stack_size;
	/*
	 * The wave area may use [ctl_stack_size, wave_area_end).  Thunks before
	 * 6.0 put their debugger memory at the end of ctx_save_restore_size
	 * (header DebugOffset): lower this to DebugOffset there.
	 */
	u32 wave_area_end;
};

int emu_cwsr_area_init(struct emu_cwsr_area *a, enum emu_isa_target isa,
		       u32 ctx_save_size, u32 ctl_stack_size);

/* The MQD's cp_hqd_cntl_stack_offset and cp_hqd_wg_state_offset. */
struct emu_cwsr_state {
	u32 cntl_stack_offset;
	u32 wg_state_offset;
};

static inline void emu_cwsr_state_empty(const struct emu_cwsr_area *a,
					struct emu_cwsr_state *st)
{
	st->cntl_stack_offset = a->ctl_stack_size;
	st->wg_state_offset = a->ctl_stack_size;
}

/* GET_QUEUE_WAVE_STATE's ctl_stack_used_size and save_area_used_size */
static inline u32 emu_cwsr_ctl_stack_used(const struct emu_cwsr_area *a,
					  const struct emu_cwsr_state *st)
{
	return a->ctl_stack_size - st->cntl_stack_offset;
}

static inline u32 emu_cwsr_save_area_used(const struct emu_cwsr_area *a,
					  const struct emu_cwsr_state *st)
{
	return st->wg_state_offset - a->ctl_stack_size;
}

/* -EINVAL unless @st can describe a saved queue of @a. */
int emu_cwsr_state_check(const struct emu_cwsr_area *a, const struct emu_cwsr_state *st);

/*
 * The 16 bytes a 6.8+ kernel writes at the start of the save area at
 * GET_QUEUE_WAVE_STATE: control stack offset and used size, wave state end
 * offset and used size, little-endian.
 */
void emu_cwsr_wave_state_header(const struct emu_cwsr_area *a,
				 const struct emu_cwsr_state *st, u8 out[16]);

/*
 * What the SPI puts in a wave's trap temporaries at launch when the
 * debugger's setup is on, and what the save area keeps: the workgroup id in
 * ttmp8-10, the wave's position in its workgroup in ttmp11[5:0].  The
 * dispatcher calls it when it launches a wave; the encoder takes each
 * wave's workgroup and position from there.
 */
void emu_cwsr_spi_ttmps(struct emu_wave *w, const u32 group_id[3], u32 position);

/*
 * A workgroup with waves in flight: waves[first_wave .. first_wave + n_waves),
 * the first of them the one whose record carries the LDS.
 */
struct emu_cwsr_group {
	u32 id[3];
	u32 first_wave;
	u32 n_waves;
	u8 *lds;		/* encode: its contents; decode: room for lds_size bytes */
	u32 lds_size;
};

/*
 * Checks what is to be saved (waves of @a's target, not ENDED, register
 * counts within the hardware's, ttmps agreeing with their group, groups of
 * 1..16 waves in increasing disjoint ranges of @waves) and returns in
 * *wave_bytes the size of the wave area it takes.  -EINVAL for input the
 * hardware could not have saved, -ENOSPC when it does not fit the control
 * stack or the wave area.
 */
int emu_cwsr_encode_size(const struct emu_cwsr_area *a,
			 const struct emu_wave *waves, u32 n_waves,
			 const struct emu_cwsr_group *groups, u32 n_groups,
			 u32 *wave_bytes);

/*
 * Saves the waves: writes the used part of the control stack into
 * @ctl_stack (a->ctl_stack_size bytes, the MQD's copy; the rest is left
 * alone) and the records into @wave_area (*wave_bytes of emu_cwsr_encode_size,
 * to be stored at save area + ctl_stack_size), and sets *st.  The groups'
 * ids must be those in their waves' ttmps.
 */
int emu_cwsr_encode(const struct emu_cwsr_area *a,
		    const struct emu_wave *waves, u32 n_waves,
		    const struct emu_cwsr_group *groups, u32 n_groups,
		    u8 *ctl_stack, u8 *wave_area, struct emu_cwsr_state *st);

/*
 * First half of a restore: reads the control stack only.  Returns the
 * number of saved workgroups and waves in *n_groups and *n_waves; when the
 * arrays are given (at least that long), also each group's first_wave,
 * n_waves and lds_size and each wave's nvgpr, nagpr and isa, so that the
 * caller can give every wave (nvgpr + nagpr) registers of storage and every
 * group lds_size bytes before emu_cwsr_decode().  Groups and waves come in
 * the order they were encoded.
 */
int emu_cwsr_scan(const struct emu_cwsr_area *a, const u8 *ctl_stack,
		  const struct emu_cwsr_state *st,
		  struct emu_cwsr_group *groups, u32 max_groups,
		  struct emu_wave *waves, u32 max_waves,
		  u32 *n_groups, u32 *n_waves);

/*
 * Second half: fills the waves and groups emu_cwsr_scan() described (their
 * vgpr and lds storage set by the caller) from the wave area's
 * wave_area_size bytes (save area + ctl_stack_size onward; it must be
 * exactly emu_cwsr_save_area_used()).  Each wave's lds points at its
 * group's.  Validates everything before it writes anything.
 */
int emu_cwsr_decode(const struct emu_cwsr_area *a, const u8 *ctl_stack,
		    const struct emu_cwsr_state *st,
		    const u8 *wave_area, u32 wave_area_size,
		    struct emu_cwsr_group *groups, u32 n_groups,
		    struct emu_wave *waves, u32 n_waves);

#endif
