// s[0:1] = a refused page; s[2:3] = 128 bytes before the end of a writable range
	v_mov_b32_e32 v1, 7
	v_lshlrev_b32_e32 v2, 2, v0
	s_cmp_eq_u32 s4, 1
	s_cbranch_scc1 .Lstore
	global_load_dword v1, v2, s[0:1]		// lane 0's address faults first
	s_endpgm
.Lstore:
	global_store_dword v2, v1, s[2:3]		// lanes 32..63 fall past the end
	s_endpgm
