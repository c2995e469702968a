// Atomics: v0 = lane id, s[0:1] = 8 dwords of zeros
	v_mov_b32_e32 v1, 0
	v_mov_b32_e32 v2, 1
	global_atomic_add v1, v2, s[0:1]			// [0] += 64
	global_atomic_add v3, v1, v2, s[0:1] offset:4 glc	// [1]: each lane gets a distinct old value
	v_mov_b32_e32 v4, 5
	v_mov_b32_e32 v5, 0
	global_atomic_add_x2 v1, v[4:5], s[0:1] offset:8	// u64 [2:3] += 320
	global_atomic_umax v1, v0, s[0:1] offset:16		// [4] = 63
	v_mov_b32_e32 v6, 42
	v_mov_b32_e32 v7, 0
	global_atomic_cmpswap v8, v1, v[6:7], s[0:1] offset:20 glc	// one lane sees 0
	v_mov_b32_e32 v9, 1.0
	global_atomic_add_f32 v1, v9, s[0:1] offset:24		// [6] = 64.0
	ds_write_b32 v1, v1					// lds[0] = 0
	ds_add_rtn_u32 v11, v1, v2				// distinct 0..63
	ds_read_b32 v12, v1					// 64
	ds_write2_b32 v1, v0, v2 offset0:4 offset1:8		// lds[16] = 63 (last lane), lds[32] = 1
	ds_read2_b32 v[20:21], v1 offset0:4 offset1:8
	v_lshlrev_b32_e32 v15, 2, v0
	ds_write_b32 v15, v0 offset:64				// lds[64 + 4 lane] = lane
	v_xor_b32_e32 v16, 4, v15				// the neighbour's address (lane ^ 1)
	ds_bpermute_b32 v17, v16, v0				// lane ^ 1
	ds_swizzle_b32 v18, v0 offset:swizzle(SWAP,2)		// lane ^ 2
	ds_read_u8 v19, v15 offset:64				// lane's low byte
	s_endpgm
