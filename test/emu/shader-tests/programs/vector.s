// Vector ALU: v0 = lane id, s[0:1] = a buffer of 64 dwords, s2 = 3; the
// harness checks the VGPRs and the buffer.
	v_mov_b32_e32 v1, 5
	v_add_u32_e32 v2, v0, v1			// lane + 5
	v_mul_lo_u32 v3, v0, v0				// lane * lane
	v_lshlrev_b32_e32 v4, 2, v0			// lane * 4
	v_add_co_u32_e32 v5, vcc, -1, v0		// lane - 1, carry when lane != 0
	v_mov_b32_e32 v6, 0
	v_addc_co_u32_e32 v6, vcc, 0, v6, vcc		// that carry
	v_cmp_gt_u32_e32 vcc, 32, v0			// lanes 0..31
	v_cndmask_b32_e64 v7, 10, 20, vcc		// 20 there, 10 elsewhere
	v_and_b32_e32 v8, 1, v0
	v_cmp_ne_u32_e64 s[4:5], 0, v8			// odd lanes
	v_mbcnt_lo_u32_b32 v9, -1, 0
	v_mbcnt_hi_u32_b32 v9, -1, v9			// lane id again
	v_readfirstlane_b32 s6, v2			// 5
	v_readlane_b32 s7, v3, 7			// 49
	v_mov_b32_e32 v10, 0
	v_writelane_b32 v10, s2, 3			// lane 3: 3
	v_alignbit_b32 v11, v0, 0, 4			// lane << 28
	v_mov_b32_e32 v14, 100
	v_mov_b32_e32 v15, 0
	v_mad_u64_u32 v[12:13], s[8:9], v0, s2, v[14:15]	// 3 * lane + 100
	v_lshlrev_b64 v[16:17], 33, v[14:15]		// 100 << 33: lo 0, hi 200
	v_pk_mov_b32 v[18:19], v[14:15], v[2:3] op_sel:[0,1]	// lo 100, hi lane * lane
	v_cvt_f32_u32_e32 v20, v0
	v_mul_f32_e32 v21, 0.5, v20
	v_fmac_f32_e32 v21, 2.0, v20			// 2.5 * lane
	v_cvt_u32_f32_e32 v22, v21			// trunc
	v_lshl_add_u32 v23, v0, 2, 1			// lane * 4 + 1
	v_bfe_u32 v24, v0, 1, 3				// bits 3:1
	v_mul_hi_u32 v25, v0, -1			// lane - 1, or 0
	v_cmp_lt_u64_e32 vcc, v[12:13], v[14:15]	// never
	s_mov_b64 s[10:11], vcc
	v_cmp_le_u64_e64 s[12:13], v[12:13], v[16:17]	// 3 lane + 100 <= 200 << 32: all
	v_floor_f32_e32 v26, v21
	v_trunc_f32_e32 v27, -1.5			// -1.0
	v_cvt_f32_ubyte0_e32 v28, 0x1ff			// 255.0
	v_add_f32_e64 v29, -v20, |v27|			// 1 - lane (neg, abs modifiers)
	v_max_i32_e32 v30, -3, v5			// max(lane - 1, -3)
	v_sub_co_u32_e64 v31, s[14:15], v0, 32		// borrow below lane 32
	v_subrev_u32_e32 v32, 1, v0			// lane - 1 (subrev: v0 - 1)
	v_xor_b32_e32 v33, 0xff, v0
	v_cvt_f64_u32_e32 v[34:35], v0
	v_add_f64 v[34:35], v[34:35], 0.5		// lane + 0.5 (f64)
	v_cvt_u32_f64_e32 v36, v[34:35]			// lane
	global_store_dword v4, v3, s[0:1]		// buffer[lane] = lane * lane
	s_endpgm
