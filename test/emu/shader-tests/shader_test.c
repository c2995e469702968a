// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the emulated GPU's shader core (emu_shader*.c, built here
 * with <stdint.h>): programs assembled by llvm-mc at build time, and one
 * OpenCL C kernel compiled by clang, run on waves over a flat memory map;
 * every test asserts what the program computes (registers, memory, the
 * state the wave stops in).
 *
 *   shader_test [--list] [DIR]     DIR holds the built programs (default .)
 *
 * Prints "PASS: name" or "FAIL: name" per test and "N passed, N failed"
 * last; --list prints every opcode the core executes.
 */
#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "../emu_shader.h"

/* --- the GPU's memory: one flat range in 4 KiB pages --- */

#define VM_BASE		0x100000000ull	/* above 4 GiB: addresses need 64 bits */
#define VM_SIZE		(8u << 20)
#define PAGE		4096u
#define CODE_VA		(VM_BASE + 0x10000)
#define DATA_VA		(VM_BASE + 0x100000)
#define HOLE_VA		(VM_BASE + 0x700000)	/* one page the VM refuses */
#define RO_VA		(VM_BASE + 0x702000)	/* one page it maps read-only */
#define LDS_APERTURE	0x1000000000000ull

static u8 *vm;
static unsigned long map_calls;

static u8 *vm_map(void *ctx, u64 va, enum emu_mem_access access, u32 *room)
{
	(void)ctx;
	map_calls++;
	if (va < VM_BASE || va >= VM_BASE + VM_SIZE)
		return NULL;
	if (va >= HOLE_VA && va < HOLE_VA + PAGE)
		return NULL;
	if (access == EMU_MEM_WRITE && va >= RO_VA && va < RO_VA + PAGE)
		return NULL;
	/* one page at a time, so that accesses across pages take the slow path */
	*room = PAGE - (va & (PAGE - 1));
	return vm + (va - VM_BASE);
}

static const struct emu_shader_mem mem = { .map = vm_map };

static void *host(u64 va)
{
	return vm + (va - VM_BASE);
}

/* --- reporting --- */

static const char *dir = ".";
static int passed, failed;
static bool test_failed;

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	test_failed = true;
	va_start(ap, fmt);
	fprintf(stderr, "  ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static void run_test(const char *name, void (*fn)(void))
{
	test_failed = false;
	fn();
	if (test_failed) {
		failed++;
		printf("FAIL: %s\n", name);
	} else {
		passed++;
		printf("PASS: %s\n", name);
	}
	fflush(stdout);
}

/* --- waves --- */

static struct emu_wave *wave_new(enum emu_isa_target isa, u32 nvgpr, u32 nagpr)
{
	struct emu_wave *w = calloc(1, sizeof(*w));
	unsigned int i;

	w->isa = isa;
	w->nvgpr = nvgpr;
	w->nagpr = nagpr;
	w->vgpr = calloc(nvgpr + nagpr, sizeof(*w->vgpr));
	w->exec = ~0ull;
	w->pc = CODE_VA;
	w->lds_aperture = LDS_APERTURE;
	for (i = 0; i < EMU_WAVE_LANES; i++)
		w->vgpr[0][i] = i;	/* v0: the lane's id, as a dispatch sets it */
	return w;
}

static void wave_free(struct emu_wave *w)
{
	free(w->vgpr);
	free(w);
}

static void set_s64(struct emu_wave *w, unsigned int n, u64 v)
{
	w->sgpr[n] = (u32)v;
	w->sgpr[n + 1] = v >> 32;
}

/* a built program's code at @va; its size */
static size_t load_program(const char *name, u64 va)
{
	char path[512];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	f = fopen(path, "rb");
	if (!f) {
		check(false, "cannot open %s", path);
		return 0;
	}
	n = fread(host(va), 1, 0x10000, f);
	fclose(f);
	return n;
}

/* runs @w to its end, at most @budget instructions */
static u32 run(struct emu_wave *w, u32 budget)
{
	u32 n = 0, k;

	while (n < budget && w->state == EMU_WAVE_RUNNING) {
		k = emu_wave_run(w, &mem, budget - n);
		n += k;
		if (!k)
			break;
	}
	return n;
}

static void expect_state(struct emu_wave *w, enum emu_wave_state state)
{
	check(w->state == state, "wave state %d at pc 0x%llx, expected %d (fault_pc 0x%llx)",
	      w->state, (unsigned long long)w->pc, state, (unsigned long long)w->fault_pc);
}

/* VGPR @n of every lane equals f(lane) */
#define EXPECT_LANES(w, n, expr) do {						\
	unsigned int lane_, bad_ = 0;						\
	for (lane_ = 0; lane_ < EMU_WAVE_LANES; lane_++) {			\
		u32 lane = lane_, want_ = (expr);				\
		(void)lane;							\
		if ((w)->vgpr[n][lane_] != want_ && !bad_++)			\
			check(false, "v%u lane %u: 0x%x, expected 0x%x", n,	\
			      lane_, (w)->vgpr[n][lane_], want_);		\
	}									\
} while (0)

/* --- the tests --- */

static void test_scalar(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 4, 0);
	size_t n = load_program("scalar", CODE_VA), off;
	u64 getpc = 0;

	w->sgpr[39] = 1000;
	w->sgpr[42] = 0x10;
	set_s64(w, 0, DATA_VA + 16);
	((u32 *)host(DATA_VA))[3] = 0xcafe;
	((u32 *)host(DATA_VA))[6] = 0xbeef;
	((u32 *)host(DATA_VA))[7] = 0xf00d;
	w->mode = 0xf0;
	run(w, 1000);
	expect_state(w, EMU_WAVE_ENDED);
	for (off = 0; off + 4 <= n; off += 4)
		if (*(u32 *)host(CODE_VA + off) == 0xbe961c00)	/* s_getpc_b64 s[22:23] */
			getpc = CODE_VA + off + 4;
	check(w->sgpr[3] == 6 && w->sgpr[10] == 1, "s_add_u32 6 / carry: %u %u", w->sgpr[3],
	      w->sgpr[10]);
	check(w->sgpr[4] == 42, "s_mul_i32: %u", w->sgpr[4]);
	check(w->sgpr[6] == 0x34567800 && w->sgpr[7] == 0x12, "s_lshl_b64: %x %x", w->sgpr[6],
	      w->sgpr[7]);
	check(w->sgpr[8] == ~0u && w->sgpr[9] == 3, "s_sub_u32/s_subb_u32: %x %u", w->sgpr[8],
	      w->sgpr[9]);
	check(w->sgpr[11] == (u32)-8, "s_add_i32: %d", w->sgpr[11]);
	check(w->sgpr[12] == ~0u && w->sgpr[13] == ~0u, "s_cmp_gt_i32 + s_cselect_b64");
	check(w->sgpr[14] == 2, "s_cmp_eq_u64: %u", w->sgpr[14]);
	check(w->sgpr[15] == 0xffff8000, "s_movk_i32: %x", w->sgpr[15]);
	check(w->sgpr[16] == (u32)__builtin_popcountll(0x1234567800ull), "s_bcnt1: %u",
	      w->sgpr[16]);
	check(w->sgpr[17] == 0x20 && w->sgpr[18] == 0x23, "s_and/s_bfe: %x %x", w->sgpr[17],
	      w->sgpr[18]);
	check(w->sgpr[19] == 8 && w->sgpr[20] == 0x80000000, "s_ff1/s_brev: %u %x", w->sgpr[19],
	      w->sgpr[20]);
	check(getpc && (w->sgpr[22] | (u64)w->sgpr[23] << 32) == getpc, "s_getpc_b64: %x", w->sgpr[22]);
	check(w->sgpr[24] == ~0u && w->sgpr[25] == ~0u, "exec as a source");
	check(w->sgpr[26] == ~0u && w->sgpr[27] == ~0u, "s_not_b64");
	check(w->sgpr[28] == 15 && w->sgpr[29] == 0xf8000000, "shifts: %u %x", w->sgpr[28],
	      w->sgpr[29]);
	check(w->sgpr[30] == 3 && w->sgpr[31] == 3 && w->sgpr[32] == 17, "min/max/abs");
	check(w->sgpr[33] == 0xffffff80, "s_sext_i32_i8: %x", w->sgpr[33]);
	check(w->sgpr[34] == ~0x34567800u && w->sgpr[35] == ~0x12u, "s_xor_b64");
	check(w->sgpr[36] == 3 && w->sgpr[37] == 112 && w->sgpr[38] == 31,
	      "s_mul_hi_u32/s_lshl2_add_u32/s_flbit: %u %u %u", w->sgpr[36], w->sgpr[37],
	      w->sgpr[38]);
	check(w->sgpr[39] == 1000 && w->sgpr[41] == 6, "s_addk/s_addc: %u %u", w->sgpr[39],
	      w->sgpr[41]);
	check(w->sgpr[42] == 0x18, "s_bitset1: %x", w->sgpr[42]);
	check(w->sgpr[43] == 0xf5 && w->mode == 0xf5, "s_setreg/s_getreg: %x", w->sgpr[43]);
	check(w->sgpr[44] == 0xcafe, "s_load_dword at -4: %x", w->sgpr[44]);
	check(w->sgpr[46] == 0xbeef && w->sgpr[47] == 0xf00d, "s_load_dwordx2: %x %x",
	      w->sgpr[46], w->sgpr[47]);
	wave_free(w);
}

static void test_vector(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 40, 0);
	u32 *buf = host(DATA_VA);

	memset(buf, 0, 256);
	load_program("vector", CODE_VA);
	set_s64(w, 0, DATA_VA);
	w->sgpr[2] = 3;
	run(w, 1000);
	expect_state(w, EMU_WAVE_ENDED);
	EXPECT_LANES(w, 2, lane + 5);
	EXPECT_LANES(w, 3, lane * lane);
	EXPECT_LANES(w, 4, lane * 4);
	EXPECT_LANES(w, 5, lane - 1);
	EXPECT_LANES(w, 6, lane != 0);
	EXPECT_LANES(w, 7, lane < 32 ? 20 : 10);
	check(w->sgpr[4] == 0xaaaaaaaa && w->sgpr[5] == 0xaaaaaaaa, "v_cmp_ne_u32_e64: %x",
	      w->sgpr[4]);
	EXPECT_LANES(w, 9, lane);
	check(w->sgpr[6] == 5 && w->sgpr[7] == 49, "readfirstlane/readlane: %u %u", w->sgpr[6],
	      w->sgpr[7]);
	EXPECT_LANES(w, 10, lane == 3 ? 3 : 0);
	EXPECT_LANES(w, 11, lane << 28);
	EXPECT_LANES(w, 12, 3 * lane + 100);
	EXPECT_LANES(w, 13, 0);
	check(w->sgpr[8] == 0 && w->sgpr[9] == 0, "v_mad_u64_u32 carry-out");
	EXPECT_LANES(w, 16, 0);
	EXPECT_LANES(w, 17, 200);
	EXPECT_LANES(w, 18, 100);
	EXPECT_LANES(w, 19, lane * lane);
	EXPECT_LANES(w, 22, lane * 5 / 2);
	EXPECT_LANES(w, 23, lane * 4 + 1);
	EXPECT_LANES(w, 24, (lane >> 1) & 7);
	EXPECT_LANES(w, 25, lane ? lane - 1 : 0);
	check(w->sgpr[10] == 0 && w->sgpr[11] == 0, "v_cmp_lt_u64 (never)");
	check(w->sgpr[12] == ~0u && w->sgpr[13] == ~0u, "v_cmp_le_u64_e64 (all)");
	EXPECT_LANES(w, 27, 0xbf800000);		/* -1.0 */
	EXPECT_LANES(w, 28, 0x437f0000);		/* 255.0 */
	{
		unsigned int i;

		for (i = 0; i < 64; i++) {
			float f = 1.0f - (float)i, g = (float)(i * 5 / 2), h;
			u32 u, v;

			memcpy(&u, &f, 4);
			memcpy(&h, &w->vgpr[26][i], 4);
			memcpy(&v, &w->vgpr[29][i], 4);
			check(u == v, "v_add_f32 with modifiers, lane %u: %x", i, v);
			check(h == g, "v_floor_f32 lane %u", i);
			check(buf[i] == i * i, "global_store_dword lane %u: %u", i, buf[i]);
		}
	}
	EXPECT_LANES(w, 30, (s32)(lane - 1) > -3 ? lane - 1 : (u32)-3);
	EXPECT_LANES(w, 31, lane - 32);
	check(w->sgpr[14] == ~0u && w->sgpr[15] == 0, "v_sub_co_u32 borrow: %x %x", w->sgpr[14],
	      w->sgpr[15]);
	EXPECT_LANES(w, 32, lane - 1);
	EXPECT_LANES(w, 33, lane ^ 0xff);
	EXPECT_LANES(w, 36, lane);
	wave_free(w);
}

static void test_saxpy(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 8, 0);
	float *x = host(DATA_VA), *y = host(DATA_VA + 0x10000), a = 1.5f;
	unsigned int i, n = 1024;

	for (i = 0; i < n; i++) {
		x[i] = (float)i;
		y[i] = 0.25f * (float)i;
	}
	load_program("saxpy", CODE_VA);
	set_s64(w, 0, DATA_VA);
	set_s64(w, 2, DATA_VA + 0x10000);
	memcpy(&w->sgpr[4], &a, 4);
	w->sgpr[5] = n;
	run(w, 100000);
	expect_state(w, EMU_WAVE_ENDED);
	for (i = 0; i < n; i++)
		if (y[i] != 1.75f * (float)i) {
			check(false, "y[%u] = %g, expected %g", i, y[i], 1.75f * (float)i);
			break;
		}
	check(w->retired == 3 + 9 * n / 64, "retired %llu", (unsigned long long)w->retired);
	wave_free(w);
}

/*
 * A workgroup as the dispatcher runs one: each wave in turn until it ends or
 * waits at a barrier; the barrier opens when every wave that has not ended
 * waits there.
 */
static void run_workgroup(struct emu_wave **waves, unsigned int n, u32 slice)
{
	unsigned int i, rounds;

	for (rounds = 0; rounds < 100000; rounds++) {
		unsigned int waiting = 0, ended = 0;

		for (i = 0; i < n; i++)
			if (waves[i]->state == EMU_WAVE_RUNNING)
				emu_wave_run(waves[i], &mem, slice);
		for (i = 0; i < n; i++) {
			waiting += waves[i]->state == EMU_WAVE_BARRIER;
			ended += waves[i]->state == EMU_WAVE_ENDED;
		}
		if (ended == n)
			return;
		if (waiting && waiting + ended == n)
			for (i = 0; i < n; i++)
				if (waves[i]->state == EMU_WAVE_BARRIER)
					waves[i]->state = EMU_WAVE_RUNNING;
		for (i = 0; i < n; i++)
			if (waves[i]->state != EMU_WAVE_RUNNING && waves[i]->state != EMU_WAVE_BARRIER &&
			    waves[i]->state != EMU_WAVE_ENDED)
				return;
	}
}

static void test_lds_reduce(void)
{
	struct emu_wave *waves[4];
	u8 lds[1024];
	u32 *in = host(DATA_VA), *out = host(DATA_VA + 0x1000), sum = 0;
	unsigned int i, k;

	for (i = 0; i < 256; i++) {
		in[i] = i * 7 + 1;
		sum += in[i];
	}
	*out = 0;
	memset(lds, 0xee, sizeof(lds));
	load_program("lds_reduce", CODE_VA);
	for (k = 0; k < 4; k++) {
		waves[k] = wave_new(EMU_ISA_GFX90A, 12, 0);
		for (i = 0; i < 64; i++)
			waves[k]->vgpr[0][i] = k * 64 + i;
		set_s64(waves[k], 0, DATA_VA);
		set_s64(waves[k], 2, DATA_VA + 0x1000);
		waves[k]->lds = lds;
		waves[k]->lds_size = sizeof(lds);
	}
	/* slices of 3 instructions interleave the waves between barriers */
	run_workgroup(waves, 4, 3);
	for (k = 0; k < 4; k++)
		expect_state(waves[k], EMU_WAVE_ENDED);
	check(*out == sum, "sum %u, expected %u", *out, sum);
	/* lds[64] kept the first step's sum */
	check(waves[0]->vgpr[7][0] == in[64] + in[192],
	      "ds_read2st64_b32's second dword: %u", waves[0]->vgpr[7][0]);
	for (k = 0; k < 4; k++)
		wave_free(waves[k]);
}

static void test_exec_branches(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 4, 0);

	load_program("exec", CODE_VA);
	run(w, 1000);
	expect_state(w, EMU_WAVE_ENDED);
	EXPECT_LANES(w, 2, lane & 1 ? 1 : 2);
	EXPECT_LANES(w, 3, lane < 4 ? 7 : 0);
	check(w->exec == ~0ull, "exec restored: %llx", (unsigned long long)w->exec);
	wave_free(w);
}

static void test_atomics(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 24, 0);
	u32 *buf = host(DATA_VA);
	u8 lds[512];
	u64 seen = 0, zero_lanes = 0, lds_seen = 0;
	unsigned int i;
	float f;

	memset(buf, 0, 64);
	memset(lds, 0, sizeof(lds));
	w->lds = lds;
	w->lds_size = sizeof(lds);
	load_program("atomics", CODE_VA);
	set_s64(w, 0, DATA_VA);
	run(w, 1000);
	expect_state(w, EMU_WAVE_ENDED);
	check(buf[0] == 64 && buf[1] == 64, "global_atomic_add: %u %u", buf[0], buf[1]);
	check((buf[2] | (u64)buf[3] << 32) == 320, "global_atomic_add_x2: %u", buf[2]);
	check(buf[4] == 63 && buf[5] == 42, "umax/cmpswap: %u %u", buf[4], buf[5]);
	memcpy(&f, &buf[6], 4);
	check(f == 64.0f, "global_atomic_add_f32: %g", f);
	for (i = 0; i < 64; i++) {
		seen |= 1ull << (w->vgpr[3][i] & 63);
		lds_seen |= 1ull << (w->vgpr[11][i] & 63);
		zero_lanes += w->vgpr[8][i] == 0;
	}
	check(seen == ~0ull, "returned old values are not 0..63 once each");
	check(lds_seen == ~0ull, "ds_add_rtn_u32's old values are not 0..63 once each");
	check(zero_lanes == 1, "cmpswap: %llu lanes saw the old 0", (unsigned long long)zero_lanes);
	EXPECT_LANES(w, 12, 64);
	EXPECT_LANES(w, 20, 63);
	EXPECT_LANES(w, 21, 1);
	EXPECT_LANES(w, 17, lane ^ 1);
	EXPECT_LANES(w, 18, lane ^ 2);
	EXPECT_LANES(w, 19, lane);
	wave_free(w);
}

/* address of the first instruction word @word in the loaded program */
static u64 find_word(u64 va, size_t n, u32 word)
{
	size_t off;

	for (off = 0; off + 4 <= n; off += 4)
		if (*(u32 *)host(va + off) == word)
			return va + off;
	return 0;
}

static void test_illegal_dpp(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 4, 0);
	size_t n = load_program("illegal", CODE_VA);
	u32 *buf = host(DATA_VA);
	u64 at = find_word(CODE_VA, n, 0x7e0202fa);	/* v_mov_b32_dpp v1, ... */

	buf[0] = 0;
	set_s64(w, 0, DATA_VA);
	run(w, 100);
	expect_state(w, EMU_WAVE_ILLEGAL);
	check(at && w->fault_pc == at, "fault_pc 0x%llx, expected 0x%llx",
	      (unsigned long long)w->fault_pc, (unsigned long long)at);
	check(w->pc == at, "pc 0x%llx stays at the instruction", (unsigned long long)w->pc);
	EXPECT_LANES(w, 1, 1);
	check(buf[0] == 1, "the store before it: %u", buf[0]);
	check(w->retired == 3, "retired %llu", (unsigned long long)w->retired);
	wave_free(w);
}

static void test_illegal_invalid(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX908, 4, 0);
	size_t n = load_program("invalid", CODE_VA);
	u64 at = find_word(CODE_VA, n, 0xbe80ff80);

	run(w, 100);
	expect_state(w, EMU_WAVE_ILLEGAL);
	check(at && w->fault_pc == at, "fault_pc 0x%llx", (unsigned long long)w->fault_pc);
	check(w->sgpr[2] == 1, "s2 %u: the instruction after it ran", w->sgpr[2]);
	wave_free(w);
}

static void test_memviol_load(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 4, 0);
	size_t n = load_program("memviol", CODE_VA);
	u64 at = find_word(CODE_VA, n, 0xdc508000);	/* global_load_dword */

	set_s64(w, 0, HOLE_VA);
	run(w, 100);
	expect_state(w, EMU_WAVE_MEMVIOL);
	check(w->fault_addr == HOLE_VA, "fault_addr 0x%llx", (unsigned long long)w->fault_addr);
	check(at && w->fault_pc == at, "fault_pc 0x%llx", (unsigned long long)w->fault_pc);
	EXPECT_LANES(w, 1, 7);
	wave_free(w);
}

static void test_memviol_store(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 4, 0);
	u64 base = RO_VA - 128;		/* lanes 32..63 reach the read-only page */
	u32 *buf = host(base);

	memset(buf, 0, 256);
	load_program("memviol", CODE_VA);
	set_s64(w, 2, base);
	w->sgpr[4] = 1;
	run(w, 100);
	expect_state(w, EMU_WAVE_MEMVIOL);
	check(w->fault_addr == RO_VA, "fault_addr 0x%llx", (unsigned long long)w->fault_addr);
	check(buf[0] == 0 && buf[31] == 0, "lanes before the fault wrote: %u %u", buf[0], buf[31]);
	wave_free(w);
}

/* gfx942's own instructions, and the ones it no longer has */
static void test_gfx942(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX942, 20, 0);
	size_t n = load_program("gfx942", CODE_VA);
	u64 *buf = host(DATA_VA), at;
	unsigned int i;

	memset(buf, 0, 64 * 8);
	set_s64(w, 0, DATA_VA);
	w->xcc_id = 5;
	run(w, 100);
	expect_state(w, EMU_WAVE_ENDED);
	EXPECT_LANES(w, 2, 0x34567890);
	EXPECT_LANES(w, 3, 0x12);
	EXPECT_LANES(w, 6, (u32)(DATA_VA + 0x1234567890ull));
	EXPECT_LANES(w, 7, (u32)((DATA_VA + 0x1234567890ull) >> 32));
	for (i = 0; i < 64; i++)
		if (buf[i] != 0x1234567890ull) {
			check(false, "v_lshl_add_u64 addresses: lane %u stored 0x%llx", i,
			      (unsigned long long)buf[i]);
			break;
		}
	/* fused: (1 + 2^-23)^2 - (1 + 2^-22) is 2^-46, where an unfused product rounds it away */
	EXPECT_LANES(w, 14, 0x28800000);
	EXPECT_LANES(w, 15, 0x28800000);
	EXPECT_LANES(w, 16, 5);
	wave_free(w);

	/* the same code on gfx90a stops at its first gfx942 instruction, v_mov_b64 */
	w = wave_new(EMU_ISA_GFX90A, 20, 0);
	at = find_word(CODE_VA, n, 0x7e047002);
	set_s64(w, 0, DATA_VA);
	run(w, 100);
	expect_state(w, EMU_WAVE_ILLEGAL);
	check(at && w->fault_pc == at, "gfx90a: fault_pc 0x%llx, expected 0x%llx",
	      (unsigned long long)w->fault_pc, (unsigned long long)at);
	wave_free(w);

	/* and v_mac_f32, which gfx90a has, is illegal on gfx942 */
	n = load_program("mac", CODE_VA);
	w = wave_new(EMU_ISA_GFX942, 4, 0);
	at = find_word(CODE_VA, n, 0x2c020301);	/* v_mac_f32 v1, v1, v1 */
	run(w, 100);
	expect_state(w, EMU_WAVE_ILLEGAL);
	check(at && w->fault_pc == at, "gfx942: v_mac_f32 fault_pc 0x%llx, expected 0x%llx",
	      (unsigned long long)w->fault_pc, (unsigned long long)at);
	wave_free(w);
	w = wave_new(EMU_ISA_GFX90A, 4, 0);
	run(w, 100);
	expect_state(w, EMU_WAVE_ENDED);
	EXPECT_LANES(w, 1, 0x40c00000);		/* 2 * 2 + 2 */
	wave_free(w);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_loop_rate(void)
{
	struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 8, 0);
	u32 iters = 200000, a = 3, c = 5, d = 7, budget = 1000;
	unsigned long calls_before = map_calls;
	unsigned int i, k;
	u64 total = 0;
	double t;

	load_program("loop", CODE_VA);
	w->sgpr[0] = d;
	w->sgpr[1] = iters;
	w->sgpr[2] = a;
	w->sgpr[3] = c;
	t = now();
	/* slices as a dispatcher gives them */
	while (w->state == EMU_WAVE_RUNNING)
		total += emu_wave_run(w, &mem, budget);
	t = now() - t;
	expect_state(w, EMU_WAVE_ENDED);
	check(total == 4 + 7ull * iters, "retired %llu", (unsigned long long)total);
	for (i = 0; i < 64; i++) {
		u32 x = i, y = 0;

		for (k = 0; k < iters; k++) {
			y = x * a + y;
			x = c * x + d;
		}
		if (w->vgpr[6][i] != x || w->vgpr[4][i] != y) {
			check(false, "lane %u: x %u y %u, expected %u %u", i, w->vgpr[6][i],
			      w->vgpr[4][i], x, y);
			break;
		}
	}
	printf("rate: %.1f M wave-instructions/s (%llu in %.3f s, %lu map calls)\n",
	       total / t / 1e6, (unsigned long long)total, t, map_calls - calls_before);
	wave_free(w);
}

/* the code object's PT_LOAD segments at @base; the address of symbol @name */
static u64 load_code_object(const char *file, u64 base, const char *name)
{
	char path[512];
	u8 *elf;
	long size;
	FILE *f;
	u64 found = 0;
	unsigned int i, j;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "rb");
	if (!f) {
		check(false, "cannot open %s", path);
		return 0;
	}
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	elf = malloc(size);
	if (fread(elf, 1, size, f) != (size_t)size)
		size = 0;
	fclose(f);
	{
		Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
		Elf64_Phdr *ph = (Elf64_Phdr *)(elf + eh->e_phoff);
		Elf64_Shdr *sh = (Elf64_Shdr *)(elf + eh->e_shoff);

		for (i = 0; size && i < eh->e_phnum; i++)
			if (ph[i].p_type == PT_LOAD)
				memcpy(host(base + ph[i].p_vaddr), elf + ph[i].p_offset,
				       ph[i].p_filesz);
		for (i = 0; size && i < eh->e_shnum && !found; i++) {
			Elf64_Sym *sym = (Elf64_Sym *)(elf + sh[i].sh_offset);
			const char *str = (const char *)elf + sh[sh[i].sh_link].sh_offset;

			if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
				continue;
			for (j = 0; j < sh[i].sh_size / sizeof(*sym); j++)
				if (!strcmp(str + sym[j].st_name, name))
					found = base + sym[j].st_value;
		}
	}
	free(elf);
	check(found, "no symbol %s in %s", name, path);
	return found;
}

/*
 * The kernel as a dispatch starts it (amdhsa kernel descriptor, code object
 * v4/v5 layout): user SGPRs in the order the descriptor enables them, the
 * workgroup id after them, the work-item id in v0.
 */
static void test_opencl_kernel(void)
{
	u64 base = VM_BASE + 0x200000, kd = load_code_object("kernel.so", base, "scale_add.kd");
	u64 kernarg = DATA_VA + 0x8000, out = DATA_VA, in = DATA_VA + 0x4000;
	s32 *o = host(out), *x = host(in), n = 200, k = -3;
	unsigned int g, i, s;

	if (!kd)
		return;
	for (i = 0; i < 256; i++) {
		x[i] = i * 11 - 500;
		o[i] = 0x5a5a5a5a;
	}
	memcpy(host(kernarg), &out, 8);
	memcpy(host(kernarg + 8), &in, 8);
	memcpy(host(kernarg + 16), &n, 4);
	memcpy(host(kernarg + 20), &k, 4);
	for (g = 0; g < 4; g++) {
		struct emu_wave *w = wave_new(EMU_ISA_GFX90A, 32, 0);
		u32 rsrc2 = *(u32 *)host(kd + 0x34);
		u16 props = *(u16 *)host(kd + 0x38);

		w->pc = kd + *(s64 *)host(kd + 16);
		s = 0;
		if (props & 1)		/* private segment buffer: no scratch here */
			s += 4;
		if (props & 2)
			s += 2;		/* dispatch ptr */
		if (props & 4)
			s += 2;		/* queue ptr */
		if (props & 8) {
			set_s64(w, s, kernarg);
			s += 2;
		}
		check(s == ((rsrc2 >> 1) & 0x1f), "user SGPRs %u, descriptor says %u", s,
		      (rsrc2 >> 1) & 0x1f);
		if (rsrc2 & 0x80)
			w->sgpr[s] = g;	/* workgroup id x */
		run(w, 10000);
		expect_state(w, EMU_WAVE_ENDED);
		wave_free(w);
	}
	for (i = 0; i < 256; i++) {
		s32 want = (s32)i < n ? x[i] * k + (s32)(i & 5) : 0x5a5a5a5a;

		if (o[i] != want) {
			check(false, "out[%u] = %d, expected %d", i, o[i], want);
			break;
		}
	}
}

static void list_op(void *arg, const char *enc, unsigned int op, const char *name)
{
	unsigned int *count = arg;

	if (count)
		(*count)++;
	else
		printf("%-6s 0x%03x %s\n", enc, op, name);
}

/* one instruction of a listed opcode, with registers that exist */
static unsigned int encode(const char *enc, unsigned int op, u32 *word)
{
	if (!strcmp(enc, "SOP2")) {
		word[0] = 0x80000000 | op << 23 | 10 << 16 | 4 << 8 | 2;
	} else if (!strcmp(enc, "SOPK")) {
		word[0] = 0xb0000000 | op << 23 | 10 << 16;
		word[1] = 0;	/* s_setreg_imm32_b32's literal */
		return 2;
	} else if (!strcmp(enc, "SOP1")) {
		word[0] = 0xbe800000 | 10 << 16 | op << 8 | 2;
	} else if (!strcmp(enc, "SOPC")) {
		word[0] = 0xbf000000 | op << 16 | 4 << 8 | 2;
	} else if (!strcmp(enc, "SOPP")) {
		word[0] = 0xbf800000 | op << 16;
	} else if (!strcmp(enc, "SMEM")) {
		/* s[4:7]: an address, or a buffer descriptor */
		word[0] = 0xc0000000 | op << 18 | 1 << 17 | 10 << 6 | 2;
		word[1] = 0;
	} else if (!strcmp(enc, "VOP3") && (op == 0x117 || op == 0x118)) {
		/* v_madmk_f32, v_madak_f32: VOP2 only, with the constant after */
		word[0] = (op - 0x100) << 25 | 10 << 17 | 2 << 9 | 257;
		word[1] = 0x3f800000;
	} else if (!strcmp(enc, "VOP3")) {
		/* readlane/writelane take a scalar lane select and value */
		unsigned int src0 = op == 0x28a ? 4 : 257, src1 = op >= 0x289 && op <= 0x28a ? 3 : 258;

		word[0] = 0xd0000000 | op << 16 | 20 << 8 | (op < 0x100 || op == 0x142 || op == 0x289 ? 20 : 10);
		/* src2: v[4:5], or s[20:21] where it is a lane mask */
		word[1] = src0 | src1 << 9 | (op >= 0x100 && op < 0x140 ? 20 : 260) << 18;
	} else if (!strcmp(enc, "VOP3P")) {
		word[0] = 0xd3800000 | op << 16 | 1 << 14 | 10;
		word[1] = 258 | 260 << 9 | 262 << 18 | 3 << 27;
	} else if (!strcmp(enc, "DS")) {
		word[0] = 0xd8000000 | op << 17 | 4;
		word[1] = 1 | 2 << 8 | 3 << 16 | 10 << 24;
	} else if (!strcmp(enc, "FLAT")) {
		word[0] = 0xdc000000 | op << 18 | 2 << 14;
		word[1] = 4 | 6 << 8 | 0x7f << 16 | 10 << 24;
	} else if (!strcmp(enc, "MUBUF")) {
		word[0] = 0xe0000000 | op << 18;
		word[1] = 0;
	} else {
		return 0;
	}
	return 2;
}

struct listing {
	unsigned int count, refused;
};

/* one listed opcode on a wave of @isa: true if it did not stop the wave */
static bool op_runs(enum emu_isa_target isa, const u32 *word)
{
	struct emu_wave *w = wave_new(isa, 32, 16);
	u8 lds[1024];
	unsigned int i;
	bool ran;

	memcpy(host(CODE_VA), word, 8);
	memset(host(CODE_VA + 8), 0, 8);
	w->lds = lds;
	w->lds_size = sizeof(lds);
	set_s64(w, 2, DATA_VA);
	set_s64(w, 4, DATA_VA);
	w->sgpr[6] = 1024;
	for (i = 0; i < 64; i++) {
		w->vgpr[1][i] = 4 * i;
		w->vgpr[2][i] = i;
		w->vgpr[4][i] = (u32)DATA_VA + 8 * i;
		w->vgpr[5][i] = DATA_VA >> 32;
	}
	emu_wave_run(w, &mem, 1);
	ran = w->state != EMU_WAVE_ILLEGAL && w->state != EMU_WAVE_MEMVIOL;
	wave_free(w);
	return ran;
}

/*
 * every listed opcode executes on gfx90a or gfx942 (the few that exist on one
 * of them only, test_gfx942 checks by target): its instruction does not stop
 * the wave as illegal
 */
static void try_op(void *arg, const char *enc, unsigned int op, const char *name)
{
	struct listing *l = arg;
	u32 word[2];

	l->count++;
	if (!encode(enc, op, word)) {
		check(false, "%s: no encoder for %s", name, enc);
		return;
	}
	if (!op_runs(EMU_ISA_GFX90A, word) && !op_runs(EMU_ISA_GFX942, word)) {
		l->refused++;
		check(false, "%s (%s 0x%x) listed but stops the wave", name, enc, op);
	}
}

static void test_listing(void)
{
	struct listing l = { 0 };

	emu_shader_for_each_op(try_op, &l);
	check(l.count > 400, "only %u opcodes listed", l.count);
}

int main(int argc, char **argv)
{
	static char self[4096];
	ssize_t n;
	int i;

	/* the programs are built beside the runner: find them from wherever it is run */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		if (strrchr(self, '/'))
			*strrchr(self, '/') = 0;
		dir = self;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--list")) {
			emu_shader_for_each_op(list_op, NULL);
			return 0;
		}
		dir = argv[i];
	}
	vm = calloc(1, VM_SIZE);
	run_test("scalar ALU", test_scalar);
	run_test("vector ALU", test_vector);
	run_test("saxpy loop", test_saxpy);
	run_test("LDS tree reduction over 4 waves with s_barrier", test_lds_reduce);
	run_test("EXEC-masked branches", test_exec_branches);
	run_test("global and LDS atomics", test_atomics);
	run_test("DPP is illegal at its pc, nothing written", test_illegal_dpp);
	run_test("an unassigned SOP1 opcode is illegal (gfx908)", test_illegal_invalid);
	run_test("a load from a refused page is a MEMVIOL, no register written", test_memviol_load);
	run_test("a store reaching a read-only page writes no lane", test_memviol_store);
	run_test("gfx942: v_mov_b64, v_lshl_add_u64, fused v_fmamk/v_fmaak, XCC_ID; v_mac_f32 gone",
		 test_gfx942);
	run_test("the iterate loop, and its rate", test_loop_rate);
	run_test("OpenCL C kernel compiled by clang", test_opencl_kernel);
	run_test("opcode listing", test_listing);
	printf("%d passed, %d failed\n", passed, failed);
	free(vm);
	return failed ? 1 : 0;
}
