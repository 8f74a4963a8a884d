// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The walk rules of bpf/pywalk.h (shared by the BPF walker, dump and the
 * symbolizer) on frames and code objects built in byte buffers: each rule
 * alone, then whole walks over a small fake address space.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "pywalk.h"

#define NO TB_NO_OFFSET
#define CODE_TYPE 0x5000ULL

/* A 3.12-like layout: cframe hop, late link, entry shim at the bottom. */
static struct tb_walk layout312(void)
{
	struct tb_walk w;

	memset(&w, 0, sizeof(w));
	w.off = (struct tb_offsets){
		.exec_mask = ~0ULL,
		.features = TB_F_CFRAME | TB_F_LATE_LINK | TB_F_BOTTOM_SHIM,
		.ts_next = 8, .ts_interp = 16, .ts_status = 24, .ts_frame = 56, .ts_exc = 96,
		.ts_native_tid = 144, .ts_read = 168,
		.cframe_frame = 0, .cframe_prev = 8,
		.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70, .fr_entry = NO,
		.fr_read = 71,
		.co_type = 8, .co_fs_a = 76, .co_fs_b = NO, .co_fp = 92, .co_fp2 = NO,
		.co_adaptive = 192, .co_read = 96, .co_fp_lo = 92, .co_fp_read = 4,
		.gil_holder = 8, .gil_locked = 16,
		.owner_skip = 3, .owner_stop = TB_NO_OWNER, .owner_max = 3,
	};
	w.addr.code_type_addr = CODE_TYPE;
	return w;
}

/* A 3.15-like layout: no cframe, a sentinel frame (owner 4) at the bottom. */
static struct tb_walk layout315(void)
{
	struct tb_walk w = layout312();

	w.off.features = TB_F_BOTTOM_SHIM;
	w.off.owner_skip = 3;
	w.off.owner_stop = 4;
	w.off.owner_max = 4;
	w.off.exec_mask = ~3ULL;
	w.off.co_fs_a = NO;
	return w;
}

static void put64(uint8_t *b, unsigned off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static void put32(uint8_t *b, unsigned off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

/* ---- A fake address space --------------------------------------------- */

#define REGIONS 32
#define REGION 1024

static struct region {
	uint64_t addr;
	uint8_t b[REGION];
} mem[REGIONS];
static int nmem;

static uint8_t *region_at(uint64_t addr)
{
	memset(&mem[nmem], 0, sizeof(mem[0]));
	mem[nmem].addr = addr;
	return mem[nmem++].b;
}

/* Reads from the nearest region at or below addr (regions overlap). */
static int mem_read(uint64_t addr, uint8_t *buf, uint32_t len)
{
	struct region *r = NULL;
	int i;

	memset(buf, 0, TB_READ_MAX + 8);
	for (i = 0; i < nmem; i++)
		if (addr >= mem[i].addr && (!r || mem[i].addr > r->addr))
			r = &mem[i];
	if (!r || addr + len > r->addr + REGION)
		return -1;
	memcpy(buf, r->b + (addr - r->addr), len);
	return 0;
}

/* A code object at addr: PyCode_Type, fingerprint, frame size in words. */
static void make_code(uint64_t addr, uint32_t fp, uint32_t words)
{
	uint8_t *c = region_at(addr);

	put64(c, 8, CODE_TYPE);
	put32(c, 92, fp);
	put32(c, 76, words);
}

/* A frame at addr running `code`, `instr` code units in (-1: not started). */
static uint8_t *make_frame(uint64_t addr, uint64_t prev, uint64_t code, int64_t instr,
			   uint8_t owner)
{
	uint8_t *f = region_at(addr);

	put64(f, 0, code);
	put64(f, 8, prev);
	put64(f, 56, code + 192 + (uint64_t)(instr * 2));
	f[70] = owner;
	return f;
}

/* What the walk recorded, leaf first. */
static struct tb_frame out[8];

/* The walk as user/dump.c drives it, over the fake address space. */
static struct tb_chain walk(const struct tb_walk *w, uint64_t tstate)
{
	uint8_t ts[TB_READ_MAX + 8], fr[TB_READ_MAX + 8], co[TB_READ_MAX + 8];
	struct tb_chain ch;
	uint64_t frame, code, expect;
	uint32_t i;
	int64_t idx;
	int step, check;

	tb_chain_init(&ch);
	assert_int_equal(mem_read(tstate, ts, w->off.ts_read), 0);
	ch.flags |= tb_ts_flags(w, ts);
	ch.frame = tb_ts_frame(w, ts);
	if (tb_via_cframe(w) && ch.frame)
		ch.frame = mem_read(ch.frame, fr, TB_CFRAME_READ) ? 0 : tb_chain_cframe(w, &ch, fr);
	for (i = 0; i < 2 * TB_MAX_DEPTH && !tb_chain_done(&ch); i++) {
		frame = ch.frame;
		if (!tb_frame_addr_ok(frame) || mem_read(frame, fr, w->off.fr_read)) {
			tb_chain_broken(&ch);
			break;
		}
		step = tb_chain_frame(w, &ch, fr);
		if (step == TB_STEP_PYTHON) {
			code = tb_frame_code(w, fr);
			idx = tb_instr_index(w, code, tb_frame_instr(w, fr));
			check = tb_code_checked(&ch, idx);
			if (!tb_code_known(&ch.code, code, ch.check_next) &&
			    (mem_read(code + tb_code_base(w, check), co, tb_code_len(w, check)) ||
			     tb_code_parse(w, &ch.code, co, code, check)))
				step = tb_chain_bad_frame(&ch, i);
			else if (!tb_chain_linked(&ch, frame))
				step = tb_chain_bad_frame(&ch, i);
			else
				tb_chain_push(w, &ch, &out[ch.depth], frame, code, tb_instr_recorded(idx));
			if (step == TB_STEP_PYTHON)
				step = TB_STEP_NEXT;
		}
		if (step == TB_STEP_END)
			break;
		if (step != TB_STEP_SKIP && tb_entry_due(w, &ch, fr, step)) {
			uint64_t at = tb_entry_expect_addr(w, &ch);

			expect = 0;
			if (at) {
				if (mem_read(at, co, 8))
					continue;	/* cannot tell: keep the walk */
				memcpy(&expect, co, 8);
			}
			if (tb_entry_misplaced(&ch, expect))
				tb_chain_restart(&ch, expect);
		}
	}
	return ch;
}

/* A thread state at 0x1000 whose cframe (0x2000) names `frame`, whose
 * previous cframe (0x2100, if prev_frame) names prev_frame. */
static void make_thread(uint64_t frame, uint64_t prev_frame)
{
	uint8_t *ts = region_at(0x1000), *cf = region_at(0x2000);

	put64(ts, 56, 0x2000);
	put64(ts, 144, 77);
	put64(cf, 0, frame);
	if (prev_frame) {
		put64(cf, 8, 0x2100);
		put64(region_at(0x2100), 0, prev_frame);
	}
}

/* thread -> leaf (0x4100) -> caller (0x4000) -> entry shim (0x3f00) */
static void chain3(uint64_t leaf_code, int64_t leaf_instr, uint64_t caller_code,
		   int64_t caller_instr)
{
	make_thread(0x4100, 0);
	make_frame(0x4100, 0x4000, leaf_code, leaf_instr, 0);
	make_frame(0x4000, 0x3f00, caller_code, caller_instr, 0);
	make_frame(0x3f00, 0, 0x7200, 0, 3);
}

static int reset(void **state)
{
	(void)state;
	nmem = 0;
	return 0;
}

/* ---- Single rules ----------------------------------------------------- */

static void test_fingerprint(void **state)
{
	struct tb_walk w = layout312();
	uint8_t co[TB_READ_MAX + 8] = { 0 };

	(void)state;
	put32(co, 92, 0x1234);
	assert_int_equal(tb_code_fp(&w, co, 0), 0x1234);
	/* The fingerprint-only read starts at co_fp_lo. */
	assert_int_equal(tb_code_fp(&w, co + 92, 92), 0x1234);
	/* 3.11: two u32 xor-ed. */
	w.off.co_fp = 128;
	w.off.co_fp2 = 136;
	put32(co, 128, 0xff00ff00);
	put32(co, 136, 0x0f0f0f0f);
	assert_int_equal(tb_code_fp(&w, co, 0), 0xff00ff00 ^ 0x0f0f0f0f);
}

static void test_instr_index(void **state)
{
	struct tb_walk w = layout312();
	uint64_t code = 0x7000, start = code + 192;
	struct tb_chain ch;

	(void)state;
	tb_chain_init(&ch);
	ch.depth = 1;	/* a caller */
	assert_int_equal(tb_instr_index(&w, code, start + 20), 10);
	assert_int_equal(tb_instr_index(&w, code, start - 2), -1);	/* not started */
	assert_true(tb_instr_in_code(-1));
	assert_false(tb_instr_in_code(-2));
	assert_true(tb_instr_in_code(TB_CODE_UNITS_MAX - 1));
	assert_false(tb_instr_in_code(TB_CODE_UNITS_MAX));	/* the BPF bound, not 2^30 */
	assert_int_equal(tb_instr_recorded(TB_CODE_UNITS_MAX), -1);
	assert_int_equal(tb_instr_recorded(-5), -1);
	assert_int_equal(tb_instr_recorded(7), 7);
	/* A caller in its bytecode: only the fingerprint is read. */
	assert_false(tb_code_checked(&ch, 10));
	assert_int_equal(tb_code_base(&w, 0), 92);
	assert_int_equal(tb_code_len(&w, 0), 4);
	/* Out of bounds, the leaf, a leaf's unvouched caller: read whole, checked. */
	assert_true(tb_code_checked(&ch, TB_CODE_UNITS_MAX));
	assert_true(tb_code_checked(&ch, -2));
	ch.check_next = 1;
	assert_true(tb_code_checked(&ch, 10));
	ch.check_next = 0;
	ch.depth = 0;
	assert_true(tb_code_checked(&ch, 10));
	/* A kept fingerprint: for the leaf and callers in their bytecode, not
	 * for a pointer that is off nor a not-started leaf's caller. */
	assert_int_equal(tb_code_how(0, 0, 10), TB_CODE_WHOLE | TB_CODE_KEPT);
	assert_int_equal(tb_code_how(3, 0, 10), TB_CODE_KEPT);
	assert_int_equal(tb_code_how(3, 0, -2), TB_CODE_WHOLE);
	assert_int_equal(tb_code_how(0, 0, TB_CODE_UNITS_MAX), TB_CODE_WHOLE);
	assert_int_equal(tb_code_how(3, 1, 10), TB_CODE_WHOLE);
	assert_int_equal(tb_code_base(&w, 1), 0);
	assert_int_equal(tb_code_len(&w, 1), 96);
}

/* 3.14t: a frame's tlbc_index picks the copy of the bytecode its
 * instruction pointer lies in; 0 (and any layout without TB_F_TLBC) counts
 * from co_code_adaptive. */
static void test_tlbc(void **state)
{
	struct tb_walk w = layout315();
	uint8_t fr[TB_READ_MAX] = { 0 };
	uint64_t code = 0x7000, array = 0x9000, copy = 0xa000;

	(void)state;
	put32(fr, 72, 2);
	assert_int_equal(tb_frame_tlbc(&w, fr), 0);	/* a GIL build: no copies */
	w.off.features |= TB_F_TLBC;
	w.off.fr_tlbc = 72;
	w.off.co_tlbc = 224;
	assert_int_equal(tb_frame_tlbc(&w, fr), 2);
	assert_int_equal(tb_tlbc_array_addr(&w, code), code + 224);
	/* _PyCodeArray: size, then entries[]: entries[2] at +8 + 2 * 8 */
	assert_int_equal(tb_tlbc_entry_addr(array, 2), array + 24);
	assert_int_equal(tb_tlbc_entry_addr(0, 2), 0);		/* no array */
	assert_int_equal(tb_tlbc_entry_addr(array, TB_TLBC_MAX), 0);	/* a torn index */
	assert_int_equal(tb_instr_index_at(copy, copy + 30), 15);
	assert_int_equal(tb_instr_index_at(copy, copy - 2), -1);
	/* Counted against the code object's own bytecode, the copy's pointer
	 * is far out of bounds: the index the walk would record without it. */
	assert_int_equal(tb_instr_recorded(tb_instr_index(&w, code, copy + 30)), 6063);
	put32(fr, 72, 0);
	assert_int_equal(tb_frame_tlbc(&w, fr), 0);
}

static void test_code_parse(void **state)
{
	struct tb_walk w = layout312();
	uint8_t co[TB_READ_MAX + 8] = { 0 };
	struct tb_code seen = { 0 };

	(void)state;
	put64(co, 8, 0x9999);	/* not PyCode_Type */
	put32(co, 92, 42);
	put32(co, 76, 11);
	assert_int_equal(tb_code_parse(&w, &seen, co, 0x7000, 1), TB_C_BAD_CODE);
	assert_int_equal(seen.addr, 0);
	/* Unchecked (fingerprint-only read at co_fp_lo): no type check. */
	assert_int_equal(tb_code_parse(&w, &seen, co + 92, 0x7000, 0), 0);
	assert_int_equal(seen.fp, 42);
	assert_int_equal(seen.words, 0);
	put64(co, 8, CODE_TYPE);
	assert_int_equal(tb_code_parse(&w, &seen, co, 0x7000, 1), 0);
	assert_int_equal(seen.words, 11);
	assert_true(tb_code_known(&seen, 0x7000, 0));
	assert_true(tb_code_known(&seen, 0x7000, 1));
	assert_false(tb_code_known(&seen, 0x7008, 0));
	/* Kept, no frame size: not for the caller of a leaf caught starting. */
	seen.words = 0;
	assert_true(tb_code_known(&seen, 0x7000, 0));
	assert_false(tb_code_known(&seen, 0x7000, 1));
	seen.addr = 0;
	assert_false(tb_code_known(&seen, 0, 0));	/* a null pointer is never known */
	/* Type unknown: anything goes. */
	w.addr.code_type_addr = 0;
	put64(co, 8, 0x9999);
	assert_true(tb_code_type_ok(&w, co));
	/* 3.11 frame size: nlocalsplus + stacksize + specials. */
	w.off.co_fs_b = 68;
	w.off.co_fs_add = 9;
	put32(co, 68, 5);
	assert_int_equal(tb_code_words(&w, co), 11 + 5 + 9);
	w.off.co_fs_a = NO;
	assert_int_equal(tb_code_words(&w, co), 0);
}

static void test_frame_kind(void **state)
{
	struct tb_walk w = layout315();
	uint8_t fr[TB_READ_MAX + 8] = { 0 };
	struct tb_chain ch;

	(void)state;
	assert_int_equal(tb_frame_kind(&w, 0), TB_FRAME_PYTHON);
	assert_int_equal(tb_frame_kind(&w, 3), TB_FRAME_SHIM);
	assert_int_equal(tb_frame_kind(&w, 4), TB_FRAME_STOP);
	assert_int_equal(tb_frame_kind(&w, 5), TB_FRAME_GARBAGE);
	/* Garbage ends the walk partial. */
	tb_chain_init(&ch);
	put64(fr, 8, 0x4000);
	fr[70] = 9;
	assert_int_equal(tb_chain_frame(&w, &ch, fr), TB_STEP_END);
	assert_true(ch.flags & TB_SF_PARTIAL);
	/* The sentinel ends it complete, whatever its link says. */
	tb_chain_init(&ch);
	fr[70] = 4;
	assert_int_equal(tb_chain_frame(&w, &ch, fr), TB_STEP_END);
	assert_int_equal(ch.frame, 0);
	assert_int_equal(ch.flags, 0);
	/* A shim is stepped over and vouches for its callee's link. */
	tb_chain_init(&ch);
	ch.check_next = 1;
	fr[70] = 3;
	assert_int_equal(tb_chain_frame(&w, &ch, fr), TB_STEP_SHIM);
	assert_int_equal(ch.frame, 0x4000);
	assert_int_equal(ch.check_next, 0);
	assert_int_equal(ch.bottom_ok, 1);
	/* A Python frame wants its code; it may not end a chain here. */
	fr[70] = 0;
	assert_int_equal(tb_chain_frame(&w, &ch, fr), TB_STEP_PYTHON);
	assert_int_equal(ch.bottom_ok, 0);
	/* Tag bits of a 3.14+ _PyStackRef are cleared. */
	put64(fr, 0, 0x7001);
	assert_int_equal(tb_frame_code(&w, fr), 0x7000);
}

static void test_can_end(void **state)
{
	struct tb_walk w = layout312();
	uint8_t fr[TB_READ_MAX + 8] = { 0 };

	(void)state;
	assert_false(tb_can_end(&w, fr, 0));
	assert_true(tb_can_end(&w, fr, 3));
	/* 3.11: is_entry marks the bottom. */
	w.off.features = TB_F_CFRAME | TB_F_LATE_LINK | TB_F_ENTRY_FLAG;
	w.off.fr_entry = 68;
	assert_false(tb_can_end(&w, fr, 0));
	assert_false(tb_frame_is_entry(&w, fr));
	fr[68] = 1;
	assert_true(tb_can_end(&w, fr, 0));
	assert_true(tb_frame_is_entry(&w, fr));
	/* A version with neither: any frame may end it. */
	w.off.features = 0;
	fr[68] = 0;
	assert_true(tb_can_end(&w, fr, 0));
	assert_false(tb_frame_is_entry(&w, fr));
}

static void test_chain_end(void **state)
{
	struct tb_chain ch;

	(void)state;
	tb_chain_init(&ch);
	assert_true(tb_chain_done(&ch));	/* ended where no chain may end */
	assert_true(ch.flags & TB_SF_PARTIAL);
	tb_chain_init(&ch);
	ch.bottom_ok = 1;
	assert_true(tb_chain_done(&ch));
	assert_int_equal(ch.flags, 0);
	tb_chain_init(&ch);
	ch.frame = 0x4000;
	assert_false(tb_chain_done(&ch));
	ch.depth = TB_MAX_DEPTH;
	assert_true(tb_chain_done(&ch));
	assert_int_equal(ch.flags, TB_SF_TRUNCATED);
	assert_true(tb_frame_addr_ok(0x4000));
	assert_false(tb_frame_addr_ok(0x4004));
	/* A bad leaf at the first step is skipped; anywhere else it ends the walk. */
	tb_chain_init(&ch);
	assert_int_equal(tb_chain_bad_frame(&ch, 0), TB_STEP_SKIP);
	assert_int_equal(ch.flags, 0);
	assert_int_equal(tb_chain_bad_frame(&ch, 1), TB_STEP_END);
	assert_int_equal(ch.flags, TB_SF_PARTIAL);
}

static void test_late_link(void **state)
{
	struct tb_walk w = layout312();
	struct tb_frame out[2];
	struct tb_chain ch;

	(void)state;
	tb_chain_init(&ch);
	ch.code.fp = 5;
	tb_chain_push(&w, &ch, &out[0], 0x4100, 0x7000, -1);	/* leaf, not started */
	assert_int_equal(ch.check_next, 1);
	assert_int_equal(ch.leaf, 0x4100);
	/* Its caller's frame (10 words) must end where the leaf begins. */
	ch.code.words = 10;
	assert_true(tb_chain_linked(&ch, 0x4100 - 80));
	assert_false(tb_chain_linked(&ch, 0x4100 - 88));
	tb_chain_push(&w, &ch, &out[1], 0x4100 - 80, 0x7100, 3);
	assert_int_equal(ch.check_next, 0);
	assert_true(tb_chain_linked(&ch, 0x1234));
	/* A leaf that started, or a version that links first, needs no check. */
	tb_chain_init(&ch);
	tb_chain_push(&w, &ch, &out[0], 0x4100, 0x7000, 0);
	assert_int_equal(ch.check_next, 0);
	w.off.features &= ~TB_F_LATE_LINK;
	tb_chain_init(&ch);
	tb_chain_push(&w, &ch, &out[0], 0x4100, 0x7000, -1);
	assert_int_equal(ch.check_next, 0);
}

static void test_hash(void **state)
{
	struct tb_walk w = layout315();
	struct tb_frame out[2];
	struct tb_chain ch;
	uint64_t h = TB_HASH_SEED;

	(void)state;
	tb_chain_init(&ch);
	ch.code.fp = 0xabc;
	tb_chain_push(&w, &ch, &out[0], 0x4100, 0x7000, -1);
	ch.code.fp = 0xdef;
	tb_chain_push(&w, &ch, &out[1], 0x4000, 0x7100, 12);
	ch.flags = TB_SF_PARTIAL | TB_SF_GIL | TB_SF_EXC;
	h = tb_hash_mix(h, 0x7000);
	h = tb_hash_mix(h, (uint64_t)0xffffffff << 32 | 0xabc);
	h = tb_hash_mix(h, 0x7100);
	h = tb_hash_mix(h, (uint64_t)12 << 32 | 0xdef);
	assert_int_equal(tb_chain_id(&ch), tb_hash_mix(h, TB_SF_PARTIAL));
	assert_int_equal(out[1].code, 0x7100);
	assert_int_equal(out[1].instr, 12);
	assert_int_equal(out[1].fp, 0xdef);
	assert_int_equal(ch.depth, 2);
}

static void test_thread_state(void **state)
{
	struct tb_walk w = layout312();
	uint8_t ts[TB_READ_MAX + 8] = { 0 };

	(void)state;
	put64(ts, 144, 77);
	assert_int_equal(tb_ts_owner(&w, ts, 78), 0);
	assert_int_equal(tb_ts_owner(&w, ts, 77), 2);	/* detached */
	put32(ts, 24, TB_TS_ACTIVE);
	assert_int_equal(tb_ts_owner(&w, ts, 77), 1);
	w.off.ts_status = NO;	/* 3.11 cannot tell */
	put32(ts, 24, 0);
	assert_int_equal(tb_ts_owner(&w, ts, 77), 1);
	assert_int_equal(tb_ts_flags(&w, ts), 0);
	put64(ts, 96, 0xdead);
	assert_int_equal(tb_ts_flags(&w, ts), TB_SF_EXC);
	w.off.ts_exc = NO;
	assert_int_equal(tb_ts_flags(&w, ts), 0);
}

static void test_gil_gc(void **state)
{
	struct tb_walk w = layout312();
	uint8_t gil[TB_READ_MAX + 8] = { 0 };

	(void)state;
	assert_int_equal(tb_gil_flags(&w, gil, 0x1000), TB_SF_STATUS_KNOWN);
	put32(gil, 16, 1);
	put64(gil, 8, 0x2000);
	assert_int_equal(tb_gil_flags(&w, gil, 0x1000), TB_SF_STATUS_KNOWN | TB_SF_GIL_LOCKED);
	put64(gil, 8, 0x1000);
	assert_int_equal(tb_gil_flags(&w, gil, 0x1000),
			 TB_SF_STATUS_KNOWN | TB_SF_GIL_LOCKED | TB_SF_GIL);
	/* A stale holder of an unlocked GIL holds nothing. */
	put32(gil, 16, 0);
	assert_int_equal(tb_gil_flags(&w, gil, 0x1000), TB_SF_STATUS_KNOWN);
	assert_int_equal(tb_gc_flags(1), TB_SF_GC);
	assert_int_equal(tb_gc_flags(0), 0);
}

static void test_code_gen(void **state)
{
	struct tb_walk w = layout312();

	(void)state;
	/* A count of births: as read; 0 (ran out, or unreadable) = unknown. */
	w.addr.code_gen_addr = 0x8000;
	assert_int_equal(tb_code_gen(&w, 5, 0x9000), 5);
	assert_int_equal(tb_code_gen(&w, 0, 0x9000), 0);
	/* A count of deaths starts at 0. */
	w.off.features |= TB_F_CODE_DEATHS;
	assert_int_equal(tb_code_gen(&w, 0, 0x9000), 1);
	w.addr.code_gen_addr = 0;	/* no counter */
	assert_int_equal(tb_code_gen(&w, 0, 0x9000), 0);
	/* Per-interpreter: a subinterpreter's thread learns nothing. */
	w.addr.code_gen_addr = 0x8000;
	w.addr.main_interp = 0x9000;
	assert_int_equal(tb_code_gen(&w, 3, 0x9000), 4);
	assert_int_equal(tb_code_gen(&w, 3, 0xa000), 0);
	/* No counter but a tag (3.11): one generation in every interpreter. */
	w = layout312();
	w.off.features |= TB_F_CODE_TAG;
	w.addr.main_interp = 0x9000;
	assert_int_equal(tb_code_gen(&w, 0, 0x9000), 1);
	assert_int_equal(tb_code_gen(&w, 0, 0xa000), 1);
}

/* The tag: never 0 with TB_F_CODE_TAG, 0 without; either pointer moves it. */
static void test_frame_tag(void **state)
{
	struct tb_walk w = layout312();
	uint8_t fr[TB_READ_MAX] = { 0 };
	uint32_t t, t_func, t_glob;

	(void)state;
	put64(fr, 16, 0x7f0000001000);	/* function object */
	put64(fr, 24, 0x7f0000002000);	/* globals */
	w.off.fr_tag = 16;
	assert_int_equal(tb_frame_tag(&w, fr), 0);
	w.off.features |= TB_F_CODE_TAG;
	t = tb_frame_tag(&w, fr);
	assert_int_not_equal(t, 0);
	put64(fr, 16, 0x7f0000001040);
	t_func = tb_frame_tag(&w, fr);
	assert_int_not_equal(t_func, t);
	put64(fr, 16, 0x7f0000001000);
	assert_int_equal(tb_frame_tag(&w, fr), t);
	put64(fr, 24, 0x7f0000002040);
	t_glob = tb_frame_tag(&w, fr);
	assert_int_not_equal(t_glob, t);
	assert_int_not_equal(t_glob, t_func);
	/* Swapped pointers are another tag. */
	put64(fr, 16, 0x7f0000002040);
	put64(fr, 24, 0x7f0000001000);
	assert_int_not_equal(tb_frame_tag(&w, fr), t);
	memset(fr, 0, sizeof(fr));
	assert_int_not_equal(tb_frame_tag(&w, fr), 0);
}

/* ---- Whole walks -------------------------------------------------------- */

/* leaf (0x4100) -> caller (0x4000) -> entry shim (0x3f00): complete. */
static void test_walk_complete(void **state)
{
	struct tb_walk w = layout312();
	struct tb_chain ch;

	(void)state;
	make_code(0x7000, 11, 20);
	make_code(0x7100, 22, 32);
	chain3(0x7000, 4, 0x7100, 9);
	ch = walk(&w, 0x1000);
	assert_int_equal(ch.depth, 2);
	assert_int_equal(ch.flags, 0);
	assert_int_equal(out[0].fp, 11);
	assert_int_equal(out[0].instr, 4);
	assert_int_equal(out[1].code, 0x7100);
	assert_int_equal(out[1].fp, 22);
	assert_int_equal(out[1].instr, 9);
}

/* A chain that ends on a Python frame (no entry shim): partial. */
static void test_walk_ends_early(void **state)
{
	struct tb_walk w = layout312();
	struct tb_chain ch;

	(void)state;
	make_code(0x7000, 11, 20);
	make_thread(0x4100, 0);
	make_frame(0x4100, 0, 0x7000, 4, 0);
	ch = walk(&w, 0x1000);
	assert_int_equal(ch.depth, 1);
	assert_int_equal(ch.flags, TB_SF_PARTIAL);
}

/* An unreadable caller's code object ends the walk [partial]; an
 * unreadable leaf's is skipped. */
static void test_walk_unreadable_code(void **state)
{
	struct tb_walk w = layout312();
	struct tb_chain ch;

	(void)state;
	make_code(0x7000, 11, 20);
	chain3(0x7000, 4, 0x6660000, 9);	/* nothing at the caller's */
	ch = walk(&w, 0x1000);
	assert_int_equal(ch.depth, 1);
	assert_int_equal(ch.flags, TB_SF_PARTIAL);

	nmem = 0;
	make_code(0x7100, 22, 32);
	chain3(0x6660000, 4, 0x7100, 9);	/* a leaf being built */
	ch = walk(&w, 0x1000);
	assert_int_equal(ch.depth, 1);
	assert_int_equal(out[0].code, 0x7100);
	assert_int_equal(ch.flags, 0);
}

/* A leaf that has not started, linked to a caller that does not sit right
 * below it: a stale link, the walk stops [partial]. Adjacent: complete. */
static void test_walk_adjacency(void **state)
{
	struct tb_walk w = layout312();
	struct tb_chain ch;

	(void)state;
	make_code(0x7000, 11, 20);
	make_code(0x7100, 22, 32);	/* caller frames: 32 words, 0x4000 + 256 = 0x4100 */
	chain3(0x7000, -1, 0x7100, 9);
	ch = walk(&w, 0x1000);
	assert_int_equal(ch.depth, 2);
	assert_int_equal(ch.flags, 0);
	assert_int_equal(out[0].instr, -1);

	nmem = 0;
	make_code(0x7000, 11, 20);
	make_code(0x7100, 22, 16);	/* 128 bytes: ends at 0x4080, not 0x4100 */
	chain3(0x7000, -1, 0x7100, 9);
	ch = walk(&w, 0x1000);
	assert_int_equal(ch.depth, 1);
	assert_int_equal(ch.flags, TB_SF_PARTIAL);
}

/* An out-of-bounds instruction pointer: recorded as -1, code type-checked;
 * a caller whose pointer is no code object ends the walk. */
static void test_walk_instr_out_of_bounds(void **state)
{
	struct tb_walk w = layout312();
	struct tb_chain ch;

	(void)state;
	w.off.features &= ~TB_F_LATE_LINK;
	make_code(0x7000, 11, 20);
	make_code(0x7100, 22, 32);
	region_at(0x7400);	/* readable, but no PyCode_Type */
	make_thread(0x4100, 0);
	make_frame(0x4100, 0x4000, 0x7000, 4, 0);
	make_frame(0x4000, 0x3f00, 0x7100, (int64_t)TB_CODE_UNITS_MAX + 5, 0);
	make_frame(0x3f00, 0x3e00, 0x7400, (int64_t)1 << 40, 0);
	make_frame(0x3e00, 0, 0x7200, 0, 3);
	ch = walk(&w, 0x1000);
	assert_int_equal(ch.depth, 2);
	assert_int_equal(out[1].instr, -1);
	assert_int_equal(out[1].fp, 22);
	assert_int_equal(ch.flags, TB_SF_PARTIAL);
}

/* 3.11/3.12: a chain whose entry frame does not link to the previous
 * cframe's frame is a dead one; the walk starts over from there. */
static void test_walk_entry_misplaced(void **state)
{
	struct tb_walk w = layout312();
	struct tb_chain ch;

	(void)state;
	make_code(0x7000, 11, 20);
	make_code(0x7100, 22, 32);
	make_code(0x7300, 33, 32);
	make_thread(0x4100, 0x5000);	/* the previous eval runs 0x5000 */
	make_frame(0x4100, 0x3f00, 0x7000, 4, 0);	/* dead chain */
	make_frame(0x3f00, 0x4000, 0x7200, 0, 3);	/* its entry links to 0x4000 */
	make_frame(0x4000, 0, 0x7100, 9, 0);
	make_frame(0x5000, 0x4f00, 0x7300, 2, 0);	/* the live one */
	make_frame(0x4f00, 0, 0x7200, 0, 3);
	ch = walk(&w, 0x1000);
	assert_int_equal(ch.depth, 1);
	assert_int_equal(out[0].code, 0x7300);
	assert_int_equal(ch.flags, 0);
}

/* 3.15: the sentinel frame ends the chain; shims are skipped. */
static void test_walk_sentinel(void **state)
{
	struct tb_walk w = layout315();
	struct tb_chain ch;
	uint8_t *ts;

	(void)state;
	make_code(0x7000, 11, 0);
	make_code(0x7100, 22, 0);
	ts = region_at(0x1000);
	put64(ts, 56, 0x4100);	/* no cframe */
	make_frame(0x4100, 0x4080, 0x7001, 4, 0);	/* tagged pointer */
	make_frame(0x4080, 0x4000, 0x7200, 0, 3);	/* shim */
	make_frame(0x4000, 0x3f00, 0x7100, 1, 0);
	make_frame(0x3f00, 0x1, 0x7200, 0, 4);	/* sentinel, its link ignored */
	ch = walk(&w, 0x1000);
	assert_int_equal(ch.depth, 2);
	assert_int_equal(out[0].code, 0x7000);
	assert_int_equal(ch.flags, 0);
}

/*
 * 3.8-3.10: heap frame objects (no owner byte: any frame is a Python one,
 * f_back NULL ends a complete chain), f_lasti in bytes or code units, and
 * thread states named by pthread_self(), a 64-bit key.
 */
static void test_frame_objects(void **state)
{
	struct tb_walk w = layout312();
	uint8_t fr[TB_READ_MAX + 8] = { 0 }, ts[TB_READ_MAX + 8] = { 0 };
	struct tb_chain ch;

	(void)state;
	w.off.features = TB_F_FRAME_OBJECT | TB_F_LASTI_BYTES | TB_F_PTHREAD_ID;
	w.off.fr_previous = 24;
	w.off.fr_code = 32;
	w.off.fr_instr = 104;
	w.off.fr_owner = 0;
	w.off.ts_native_tid = 176;
	w.off.ts_status = NO;		/* no _status before 3.12 */
	put64(fr, 0, 0xff);		/* ob_refcnt: no owner byte to misread */
	put64(fr, 24, 0x9000);
	put64(fr, 32, 0x7000);
	put32(fr, 104, 20);		/* byte 20: code unit 10 */
	tb_chain_init(&ch);
	assert_int_equal(tb_chain_frame(&w, &ch, fr), TB_STEP_PYTHON);
	assert_int_equal(ch.frame, 0x9000);
	assert_int_equal(tb_frame_code(&w, fr), 0x7000);
	assert_int_equal(tb_frame_index(&w, 0x7000, fr), 10);
	assert_false(tb_frame_stack_window(&w));
	w.off.features &= ~TB_F_LASTI_BYTES;	/* 3.10 counts code units */
	assert_int_equal(tb_frame_index(&w, 0x7000, fr), 20);
	put32(fr, 104, (uint32_t)-1);		/* not started */
	assert_int_equal(tb_frame_index(&w, 0x7000, fr), -1);
	w.off.features |= TB_F_LASTI_BYTES;
	assert_int_equal(tb_frame_index(&w, 0x7000, fr), -1);
	/* The outermost frame: f_back NULL, a complete chain. */
	put64(fr, 24, 0);
	assert_int_equal(tb_chain_frame(&w, &ch, fr), TB_STEP_PYTHON);
	assert_true(tb_chain_done(&ch));
	assert_int_equal(ch.flags, 0);
	/* thread_id is pthread_self(): all 64 bits count. */
	put64(ts, 176, 0x7f0012345678ULL);
	assert_int_equal(tb_ts_owner(&w, ts, 0x7f0012345678ULL), 1);
	assert_int_equal(tb_ts_owner(&w, ts, 0x12345678ULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_fingerprint, reset),
		cmocka_unit_test_setup(test_instr_index, reset),
		cmocka_unit_test_setup(test_tlbc, reset),
		cmocka_unit_test_setup(test_code_parse, reset),
		cmocka_unit_test_setup(test_frame_kind, reset),
		cmocka_unit_test_setup(test_can_end, reset),
		cmocka_unit_test_setup(test_chain_end, reset),
		cmocka_unit_test_setup(test_late_link, reset),
		cmocka_unit_test_setup(test_hash, reset),
		cmocka_unit_test_setup(test_thread_state, reset),
		cmocka_unit_test_setup(test_gil_gc, reset),
		cmocka_unit_test_setup(test_code_gen, reset),
		cmocka_unit_test_setup(test_frame_tag, reset),
		cmocka_unit_test_setup(test_walk_complete, reset),
		cmocka_unit_test_setup(test_walk_ends_early, reset),
		cmocka_unit_test_setup(test_walk_unreadable_code, reset),
		cmocka_unit_test_setup(test_walk_adjacency, reset),
		cmocka_unit_test_setup(test_walk_instr_out_of_bounds, reset),
		cmocka_unit_test_setup(test_walk_entry_misplaced, reset),
		cmocka_unit_test_setup(test_walk_sentinel, reset),
		cmocka_unit_test_setup(test_frame_objects, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
