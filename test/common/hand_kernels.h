/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernels assembled by hand, for tests that dispatch on the (emulated) GPU
 * without a compiler: an amdhsa kernel descriptor (the 64-byte record a code
 * object's loader places in GPU memory; AMDGPU "amdhsa" code object ABI) with
 * its code KERNEL_ENTRY bytes after it, written into memory the GPU reads.
 *
 * The descriptor is valid on gfx908 (MI100), gfx90a (MI200) and gfx942
 * (MI300) alike: one register granule (gfx908: 4 VGPRs and as many
 * AccVGPRs; gfx90a and gfx942: 8 registers of one file, the AccVGPRs from v4
 * on, which accum_offset 0 in rsrc3 says), the kernarg segment pointer
 * preloaded in s[0:1] (two user SGPRs), the workgroup id x in s2, the
 * work-item id x in v0, no scratch, no LDS.  The instructions below encode
 * the same on the three targets (llvm-mc -mcpu=gfx908, gfx90a and gfx940
 * agree).
 */
#ifndef TEST_COMMON_HAND_KERNELS_H
#define TEST_COMMON_HAND_KERNELS_H

#include <stdint.h>
#include <string.h>

/* The descriptor's fields, byte offsets */
#define KD_GROUP_SEGMENT_SIZE 0
#define KD_PRIVATE_SEGMENT_SIZE 4
#define KD_KERNARG_SIZE 8
#define KD_ENTRY_OFFSET 16 /* s64, from the descriptor */
#define KD_PGM_RSRC3 44
#define KD_PGM_RSRC1 48
#define KD_PGM_RSRC2 52
#define KD_CODE_PROPERTIES 56 /* u16 */
#define KERNEL_ENTRY 256      /* where the code goes: the entry is 256-byte aligned */

/* float modes 0xf0 (no flushing), DX10_CLAMP, IEEE_MODE; SGPR granule 1 (32); VGPR granule 0 */
#define KERNEL_RSRC1 0x00af0040u
/* USER_SGPR_COUNT 2 (bits 5:1), ENABLE_SGPR_WORKGROUP_ID_X (bit 7); work-item id x only */
#define KERNEL_RSRC2 (2u << 1 | 1u << 7)
#define KERNEL_KERNARG_PTR (1u << 3)

/*
 * store_ids: each work-item stores its global id (workgroup id * 256 + its
 * id in the group) to out[global id]; the kernarg is the 64-bit out pointer.
 * Dispatch it in workgroups of STORE_IDS_WG: the size is built into the code.
 */
#define STORE_IDS_WG 256
static const uint32_t store_ids_code[] = {
	0xc0060100, 0x00000000, /* s_load_dwordx2 s[4:5], s[0:1], 0x0 */
	0x8e038802,		/* s_lshl_b32 s3, s2, 8 */
	0x68020003,		/* v_add_u32 v1, s3, v0 */
	0x24040282,		/* v_lshlrev_b32 v2, 2, v1 */
	0xbf8cc07f,		/* s_waitcnt lgkmcnt(0) */
	0xdc708000, 0x00040102, /* global_store_dword v2, v1, s[4:5] */
	0xbf810000,		/* s_endpgm */
};

/*
 * mfma: an MFMA first, v_mfma_f32_4x4x1f32 (gfx942: v_mfma_f32_4x4x1_16b_f32)
 * with v0 as both sources; gfx908 reads its accumulators as a[0:3], gfx90a and
 * gfx942 (acc_cd clear) as v[0:3].  The GPUs execute it; the emulated GPU's
 * shader core does not (matrix
 * instructions are outside what it executes), so there it is the
 * instruction a wave stops at as illegal.
 */
static const uint32_t mfma_code[] = {
	0xd3c20000, 0x04020100, /* v_mfma_f32_4x4x1f32 */
	0xbf810000,		/* s_endpgm */
};

/* The descriptor and @code (@code_bytes) at @kd, which has KERNEL_ENTRY + code_bytes of room */
static inline void hand_kernel_write(uint8_t *kd, const uint32_t *code, size_t code_bytes)
{
	const uint32_t rsrc3 = 0, rsrc1 = KERNEL_RSRC1, rsrc2 = KERNEL_RSRC2, kernarg = sizeof(uint64_t);
	const uint16_t properties = KERNEL_KERNARG_PTR;
	const int64_t entry = KERNEL_ENTRY;

	memset(kd, 0, KERNEL_ENTRY + code_bytes);
	memcpy(kd + KD_KERNARG_SIZE, &kernarg, sizeof(kernarg));
	memcpy(kd + KD_ENTRY_OFFSET, &entry, sizeof(entry));
	memcpy(kd + KD_PGM_RSRC3, &rsrc3, sizeof(rsrc3));
	memcpy(kd + KD_PGM_RSRC1, &rsrc1, sizeof(rsrc1));
	memcpy(kd + KD_PGM_RSRC2, &rsrc2, sizeof(rsrc2));
	memcpy(kd + KD_CODE_PROPERTIES, &properties, sizeof(properties));
	memcpy(kd + KERNEL_ENTRY, code, code_bytes);
}

#endif /* TEST_COMMON_HAND_KERNELS_H */
