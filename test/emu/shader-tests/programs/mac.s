// v_mac_f32 (gfx908, gfx90a): gone from gfx942, illegal there.
	v_mov_b32 v1, 2.0
	v_mac_f32 v1, v1, v1
	s_endpgm
