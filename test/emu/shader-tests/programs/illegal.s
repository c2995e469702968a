// s[0:1] = a buffer; the DPP move stops the wave with v1 unchanged
	v_mov_b32_e32 v1, 1
	v_mov_b32_e32 v2, 0
	global_store_dword v2, v1, s[0:1]
	v_mov_b32_dpp v1, v0 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf
	global_store_dword v2, v0, s[0:1]
	s_endpgm
