// Scalar ALU: the harness checks the SGPRs after s_endpgm.
	s_mov_b32 s2, 7
	s_add_u32 s3, s2, -1			// 6, scc = 1 (carry out)
	s_cselect_b32 s10, 1, 2			// 1
	s_mul_i32 s4, s3, s2			// 42
	s_mov_b64 s[6:7], 0x12345678
	s_lshl_b64 s[6:7], s[6:7], 8		// 0x12_34567800
	s_sub_u32 s8, 0, 1			// 0xffffffff, scc = 1 (borrow)
	s_subb_u32 s9, 5, 1			// 5 - 1 - 1 = 3
	s_add_i32 s11, s4, -50			// -8
	s_cmp_gt_i32 s11, -9
	s_cselect_b64 s[12:13], -1, 0		// all ones
	s_cmp_eq_u64 s[6:7], s[12:13]
	s_cselect_b32 s14, 1, 2			// 2
	s_movk_i32 s15, 0x8000			// sign-extended: 0xffff8000
	s_bcnt1_i32_b64 s16, s[6:7]		// popcount
	s_and_b32 s17, s4, 0xf0			// 0x20
	s_mov_b32 s18, 0xabcd1234
	s_bfe_u32 s18, s18, 0x80004		// 8 bits from bit 4: 0x23
	s_ff1_i32_b32 s19, 0x100		// 8
	s_brev_b32 s20, 1			// 0x80000000
	s_getpc_b64 s[22:23]
	s_mov_b64 s[24:25], exec
	s_not_b64 s[26:27], 0
	s_lshr_b32 s28, -1, 28			// 15
	s_ashr_i32 s29, 0x80000000, 4		// 0xf8000000
	s_min_u32 s30, 5, 3
	s_max_i32 s31, -5, 3
	s_abs_i32 s32, -17
	s_sext_i32_i8 s33, 0x80			// 0xffffff80
	s_xor_b64 s[34:35], s[6:7], -1
	s_mul_hi_u32 s36, 0x80000000, 6		// 3
	s_lshl2_add_u32 s37, 3, 100		// 112
	s_flbit_i32_b32 s38, 1			// 31
	s_addk_i32 s39, 0			// s39 preset by the harness + 0
	s_mov_b32 s40, 0
	s_cmp_eq_u32 s40, 0			// scc = 1
	s_addc_u32 s41, 5, 0			// 6
	s_bitset1_b32 s42, 3			// s42 |= 8
	s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 4), 5
	s_getreg_b32 s43, hwreg(HW_REG_MODE, 0, 8)
	s_load_dword s44, s[0:1], -4		// s[0:1] preset: a negative offset
	s_load_dwordx2 s[46:47], s[0:1], 0x8
	s_waitcnt lgkmcnt(0)
	s_endpgm
