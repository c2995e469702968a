// the HIP workload's iterate loop: s1 iterations of y = a*x + y, x = c*x + d
// (s2 = a, s3 = c, s0 = d; v6 = x, v4 = y)
	v_mov_b32_e32 v6, v0
	v_mov_b32_e32 v4, 0
	v_mov_b32_e32 v5, 0
.Lloop:
	s_waitcnt vmcnt(0)
	v_mad_u64_u32 v[4:5], s[4:5], v6, s2, v[4:5]
	v_mul_lo_u32 v5, v6, s3
	s_add_i32 s1, s1, -1
	s_cmp_eq_u32 s1, 0
	v_add_u32_e32 v6, s0, v5
	s_cbranch_scc0 .Lloop
	s_endpgm
