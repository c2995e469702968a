// y = a * x + y over s5 floats (a multiple of 64): s[0:1] = x, s[2:3] = y,
// s4 = a, v0 = lane id
	v_lshlrev_b32_e32 v1, 2, v0
	s_mov_b32 s6, 0
.Lloop:
	global_load_dword v2, v1, s[0:1]
	global_load_dword v3, v1, s[2:3]
	s_waitcnt vmcnt(0)
	v_fmac_f32_e32 v3, s4, v2
	global_store_dword v1, v3, s[2:3]
	v_add_u32_e32 v1, 0x100, v1
	s_add_i32 s6, s6, 64
	s_cmp_lt_u32 s6, s5
	s_cbranch_scc1 .Lloop
	s_endpgm
