// EXEC-masked control flow: v0 = lane id; the harness checks v2, v3
	v_and_b32_e32 v1, 1, v0
	v_cmp_eq_u32_e32 vcc, 1, v1			// odd lanes
	v_mov_b32_e32 v2, 0
	v_mov_b32_e32 v3, 0
	s_and_saveexec_b64 s[2:3], vcc
	s_cbranch_execz .Lelse
	v_mov_b32_e32 v2, 1				// odd lanes
.Lelse:
	s_andn2_b64 exec, s[2:3], exec			// the other lanes
	s_cbranch_execz .Lend
	v_mov_b32_e32 v2, 2				// even lanes
.Lend:
	s_or_b64 exec, exec, s[2:3]
	v_cmp_gt_u32_e32 vcc, 0, v0			// no lane
	s_and_saveexec_b64 s[4:5], vcc
	s_cbranch_execz .Lskip
	v_mov_b32_e32 v2, 99				// skipped
.Lskip:
	s_mov_b64 exec, s[4:5]
	v_cmpx_gt_u32_e32 vcc, 4, v0			// lanes 0..3
	v_mov_b32_e32 v3, 7
	s_mov_b64 exec, -1
	s_endpgm
