// gfx942's own instructions (assembled for gfx940: the three share one encoding).
// s[0:1]: a buffer; the harness checks the VGPRs and the buffer after s_endpgm.
	s_mov_b32 s2, 0x34567890
	s_mov_b32 s3, 0x12
	v_mov_b64 v[2:3], s[2:3]		// every lane: 0x12_34567890
	v_lshlrev_b32 v1, 3, v0			// lane * 8
	v_mov_b32 v4, s0
	v_mov_b32 v5, s1
	v_lshl_add_u64 v[6:7], v[4:5], 0, v[2:3]	// the buffer + 0x12_34567890: a 64-bit add
	v_mov_b32 v8, v0			// the lane
	v_mov_b32 v9, 0
	v_lshl_add_u64 v[10:11], v[8:9], 3, v[4:5]	// the buffer + lane * 8
	global_store_dwordx2 v[10:11], v[2:3], off sc0 sc1 nt
	buffer_wbl2 sc1
	buffer_inv sc1
	s_waitcnt vmcnt(0)
	v_mov_b32 v12, 0x3f800001		// 1 + 2^-23
	v_mov_b32 v13, 0xbf800002		// -(1 + 2^-22)
	v_fmamk_f32 v14, v12, 0x3f800001, v13	// fused: 2^-46; unfused it would be 0
	v_fmaak_f32 v15, v12, v12, 0xbf800002	// the same
	s_getreg_b32 s4, hwreg(HW_REG_XCC_ID)
	v_mov_b32 v16, s4
	s_endpgm
