// A workgroup of 4 waves sums 256 dwords through the LDS: v0 = local id,
// s[0:1] = in, s[2:3] = out (one dword)
	v_lshlrev_b32_e32 v1, 2, v0
	global_load_dword v2, v1, s[0:1]
	s_waitcnt vmcnt(0)
	ds_write_b32 v1, v2
	s_waitcnt lgkmcnt(0)
	s_barrier
	s_movk_i32 s5, 0x80
.Lstep:
	v_cmp_gt_u32_e32 vcc, s5, v0
	s_and_saveexec_b64 s[6:7], vcc
	s_cbranch_execz .Lskip
	s_lshl_b32 s8, s5, 2
	v_add_u32_e32 v3, s8, v1
	ds_read_b32 v4, v1
	ds_read_b32 v5, v3
	s_waitcnt lgkmcnt(0)
	v_add_u32_e32 v4, v4, v5
	ds_write_b32 v1, v4
.Lskip:
	s_or_b64 exec, exec, s[6:7]
	s_waitcnt lgkmcnt(0)
	s_barrier
	s_lshr_b32 s5, s5, 1
	s_cmp_lg_u32 s5, 0
	s_cbranch_scc1 .Lstep
	v_cmp_eq_u32_e32 vcc, 0, v0
	s_and_saveexec_b64 s[6:7], vcc
	s_cbranch_execz .Ldone
	ds_read2st64_b32 v[6:7], v1 offset1:1		// lds[0] and lds[64]
	s_waitcnt lgkmcnt(0)
	v_mov_b32_e32 v8, 0
	global_store_dword v8, v6, s[2:3]
.Ldone:
	s_endpgm
