// the word HIP's --illegal-instruction=invalid kernel puts after its first load: SOP1 opcode 0xff
	s_mov_b32 s2, 1
	.long 0xbe80ff80
	s_mov_b32 s2, 2
	s_endpgm
