// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unwind tables (user/cfi*.c) on synthetic CFI: .eh_frame and .debug_frame
 * bytes written here op by op, the rows they must reduce to, the malformed
 * inputs that must cost only their own FDE; the reference unwinder over a
 * fake stack; the .eh_frame_hdr path on this test's own ELF image.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <cmocka.h>

#include "cfi.h"
#include "cfi_maps.h"
#include "evalsplit.h"

#define VADDR	0x10000u	/* where the synthetic section is "loaded" */

struct buf {
	uint8_t b[1024];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void u8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void u32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void u64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void uleb(struct buf *b, uint64_t v)
{
	do {
		uint8_t x = v & 0x7f;

		v >>= 7;
		u8(b, x | (v ? 0x80 : 0));
	} while (v);
}

static void sleb(struct buf *b, int64_t v)
{
	int more = 1;

	while (more) {
		uint8_t x = v & 0x7f;

		v >>= 7;
		more = !((v == 0 && !(x & 0x40)) || (v == -1 && (x & 0x40)));
		u8(b, x | (more ? 0x80 : 0));
	}
}

/* Patches the 4-byte length at start to cover up to the current end. */
static void close_entry(struct buf *b, size_t start)
{
	uint32_t len = (uint32_t)(b->n - start - 4);

	memcpy(b->b + start, &len, 4);
}

/* An .eh_frame CIE: rsp+8, return address at cfa-8, FDE pointers as enc. */
static size_t eh_cie(struct buf *b, const char *aug, uint8_t enc)
{
	size_t at = b->n;

	u32(b, 0);
	u32(b, 0);		/* CIE id */
	u8(b, 1);		/* version */
	put(b, aug, strlen(aug) + 1);
	uleb(b, 1);		/* code alignment */
	sleb(b, -8);		/* data alignment */
	u8(b, 16);		/* return address register */
	uleb(b, 1);		/* augmentation data */
	u8(b, enc);
	u8(b, 0x0c); uleb(b, 7); uleb(b, 8);	/* def_cfa rsp+8 */
	u8(b, 0x80 | 16); uleb(b, 1);		/* offset ra at cfa-8 */
	close_entry(b, at);
	return at;
}

/* FDE header with pc-relative sdata4 pointers; instructions follow. */
static size_t eh_fde(struct buf *b, size_t cie, uint32_t begin, uint32_t range)
{
	size_t at = b->n;

	u32(b, 0);
	u32(b, (uint32_t)(b->n - cie));		/* back to the CIE */
	u32(b, (uint32_t)(begin - (VADDR + b->n)));
	u32(b, range);
	uleb(b, 0);				/* no augmentation data */
	return at;
}

static void parse(struct cfi_table *t, const struct buf *b, int eh, int want_fdes)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(cfi_parse_section(t, b->b, b->n, VADDR, eh, NULL), want_fdes);
	cfi_finish(t);
}

static void row_is(const struct cfi_table *t, uint32_t pc, uint8_t kind, int32_t off,
		   uint8_t rbp_rule, int rbp_off)
{
	const struct tb_cfi_row *r = cfi_lookup(t, pc);

	assert_non_null(r);
	assert_int_equal(r->kind, kind);
	assert_int_equal(r->cfa_off, off);
	assert_int_equal(r->rbp_rule, rbp_rule);
	if (rbp_rule == TB_RBP_AT_CFA)
		assert_int_equal(r->rbp_off8 * 8, rbp_off);
}

/* push rbp; mov rsp,rbp; ... ; leave-like epilogue */
static void test_prologue_epilogue(void **state)
{
	struct cfi_table t;
	struct buf b = { .n = 0 };
	size_t cie = eh_cie(&b, "zR", 0x1b), f;

	(void)state;
	f = eh_fde(&b, cie, 0x1000, 0x40);
	u8(&b, 0x40 | 1);			/* advance 1 */
	u8(&b, 0x0e); uleb(&b, 16);		/* def_cfa_offset 16 */
	u8(&b, 0x80 | 6); uleb(&b, 2);		/* rbp at cfa-16 */
	u8(&b, 0x40 | 3);
	u8(&b, 0x0d); uleb(&b, 6);		/* def_cfa_register rbp */
	u8(&b, 0x02); u8(&b, 0x30);		/* advance_loc1 48 */
	u8(&b, 0x0c); uleb(&b, 7); uleb(&b, 8);	/* def_cfa rsp+8 */
	u8(&b, 0xc0 | 6);			/* restore rbp */
	close_entry(&b, f);
	parse(&t, &b, 1, 1);
	row_is(&t, 0x1000, TB_CFI_RSP, 8, TB_RBP_SAME, 0);
	row_is(&t, 0x1001, TB_CFI_RSP, 16, TB_RBP_AT_CFA, -16);
	row_is(&t, 0x1003, TB_CFI_RSP, 16, TB_RBP_AT_CFA, -16);
	row_is(&t, 0x1004, TB_CFI_RBP, 16, TB_RBP_AT_CFA, -16);
	row_is(&t, 0x1033, TB_CFI_RBP, 16, TB_RBP_AT_CFA, -16);
	row_is(&t, 0x1034, TB_CFI_RSP, 8, TB_RBP_SAME, 0);
	row_is(&t, 0x103f, TB_CFI_RSP, 8, TB_RBP_SAME, 0);
	assert_null(cfi_lookup(&t, 0x1040));	/* the end of the FDE: a gap */
	assert_null(cfi_lookup(&t, 0xfff));
	assert_int_equal(t.nrows, 5);		/* 4 rules and the closing gap */
	assert_int_equal(t.cies, 1);
	assert_int_equal(t.fdes, 1);
	cfi_free(&t);
}

/* An epilogue in the middle: remember_state, unwind, restore_state. */
static void test_remember_restore(void **state)
{
	struct cfi_table t;
	struct buf b = { .n = 0 };
	size_t cie = eh_cie(&b, "zR", 0x1b), f;

	(void)state;
	f = eh_fde(&b, cie, 0x2000, 0x20);
	u8(&b, 0x40 | 1);
	u8(&b, 0x0e); uleb(&b, 16);
	u8(&b, 0x80 | 6); uleb(&b, 2);
	u8(&b, 0x40 | 4);
	u8(&b, 0x0a);				/* remember_state */
	u8(&b, 0x0e); uleb(&b, 8);		/* pop rbp */
	u8(&b, 0xc0 | 6);
	u8(&b, 0x40 | 1);
	u8(&b, 0x0b);				/* restore_state */
	u8(&b, 0x03); u8(&b, 2); u8(&b, 0);	/* advance_loc2 2 */
	u8(&b, 0x13); sleb(&b, -4);		/* def_cfa_offset_sf 32 */
	close_entry(&b, f);
	parse(&t, &b, 1, 1);
	row_is(&t, 0x2001, TB_CFI_RSP, 16, TB_RBP_AT_CFA, -16);
	row_is(&t, 0x2005, TB_CFI_RSP, 8, TB_RBP_SAME, 0);
	row_is(&t, 0x2006, TB_CFI_RSP, 16, TB_RBP_AT_CFA, -16);
	row_is(&t, 0x2008, TB_CFI_RSP, 32, TB_RBP_AT_CFA, -16);
	cfi_free(&t);
}

static const uint8_t plt_expr[] = {
	0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
};

/* The PLT's expression, another expression, a signal frame, the end. */
static void test_special_rows(void **state)
{
	struct cfi_table t;
	struct buf b = { .n = 0 };
	size_t cie = eh_cie(&b, "zR", 0x1b), sig, f;

	(void)state;
	f = eh_fde(&b, cie, 0x3000, 0x10);
	u8(&b, 0x0f); uleb(&b, sizeof(plt_expr)); put(&b, plt_expr, sizeof(plt_expr));
	u8(&b, 0x40 | 8);
	u8(&b, 0x0f); uleb(&b, 2); u8(&b, 0x77); u8(&b, 0x10);	/* rsp+16, not PLT */
	close_entry(&b, f);
	f = eh_fde(&b, cie, 0x3010, 0x10);
	u8(&b, 0x07); uleb(&b, 16);		/* undefined ra: outermost */
	close_entry(&b, f);
	sig = eh_cie(&b, "zRS", 0x1b);
	f = eh_fde(&b, sig, 0x3020, 0x10);
	close_entry(&b, f);
	parse(&t, &b, 1, 3);
	row_is(&t, 0x3000, TB_CFI_PLT, 8, TB_RBP_SAME, 0);
	assert_int_equal(cfi_lookup(&t, 0x3000)->arg, 11);
	row_is(&t, 0x3008, TB_CFI_UNSUPPORTED, 0, TB_RBP_SAME, 0);
	row_is(&t, 0x3010, TB_CFI_END, 0, TB_RBP_SAME, 0);
	row_is(&t, 0x301f, TB_CFI_END, 0, TB_RBP_SAME, 0);
	row_is(&t, 0x3020, TB_CFI_SIGNAL, 0, TB_RBP_SAME, 0);
	assert_int_equal(t.unsupported, 1);
	assert_int_equal(t.cies, 2);
	cfi_free(&t);
}

/* One FDE per pointer encoding: each lands at its own address. */
static void test_pointer_encodings(void **state)
{
	static const uint8_t encs[] = { 0x03, 0x04, 0x0b, 0x0c, 0x01, 0x00, 0x13, 0x1a };
	struct cfi_table t;
	struct buf b = { .n = 0 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(encs); i++) {
		uint32_t begin = 0x15000 + 0x100 * (uint32_t)i, field;
		size_t cie = eh_cie(&b, "zR", encs[i]), f = b.n;

		u32(&b, 0);
		u32(&b, (uint32_t)(b.n - cie));
		field = VADDR + (uint32_t)b.n;
		switch (encs[i]) {
		case 0x03: u32(&b, begin); u32(&b, 0x10); break;
		case 0x04: case 0x0c: case 0x00: u64(&b, begin); u64(&b, 0x10); break;
		case 0x0b: u32(&b, begin); u32(&b, 0x10); break;
		case 0x01: uleb(&b, begin); uleb(&b, 0x10); break;
		case 0x13: u32(&b, begin - field); u32(&b, 0x10); break;
		case 0x1a: u8(&b, (uint8_t)(begin - field)); u8(&b, (uint8_t)((begin - field) >> 8));
			u8(&b, 0x10); u8(&b, 0); break;
		}
		uleb(&b, 0);
		u8(&b, 0x0e); uleb(&b, 8 + 8 * i);
		close_entry(&b, f);
	}
	u32(&b, 0);		/* the terminator: what follows is not read */
	u32(&b, 0xdeadbeef);
	parse(&t, &b, 1, (int)sizeof(encs));
	for (i = 0; i < sizeof(encs); i++)
		row_is(&t, 0x15000 + 0x100 * (uint32_t)i + 0xf, TB_CFI_RSP,
		       8 + 8 * (int32_t)i, TB_RBP_SAME, 0);
	cfi_free(&t);
}

/* .debug_frame: CIE id ~0, version 4, absolute addresses, section offsets. */
static void debug_frame(struct buf *b, uint32_t begin)
{
	size_t cie = b->n, f;

	u32(b, 0);
	u32(b, 0xffffffff);
	u8(b, 4);
	u8(b, 0);		/* no augmentation */
	u8(b, 8);		/* address size */
	u8(b, 0);		/* segment selector size */
	uleb(b, 1);
	sleb(b, -8);
	uleb(b, 16);
	u8(b, 0x0c); uleb(b, 7); uleb(b, 8);
	u8(b, 0x80 | 16); uleb(b, 1);
	close_entry(b, cie);
	f = b->n;
	u32(b, 0);
	u32(b, (uint32_t)cie);
	u64(b, begin);
	u64(b, 0x20);
	u8(b, 0x41);
	u8(b, 0x0e); uleb(b, 16);
	u8(b, 0x11); uleb(b, 6); sleb(b, 2);	/* offset_extended_sf rbp cfa-16 */
	close_entry(b, f);
}

static void test_debug_frame(void **state)
{
	struct cfi_table eh, dbg = { 0 };
	struct buf b = { .n = 0 }, e = { .n = 0 };
	size_t cie = eh_cie(&e, "zR", 0x1b), f;

	(void)state;
	debug_frame(&b, 0x7000);
	debug_frame(&b, 0x8000);
	f = eh_fde(&e, cie, 0x8000, 0x20);	/* .eh_frame covers the second */
	close_entry(&e, f);
	parse(&eh, &e, 1, 1);
	assert_int_equal(cfi_parse_section(&dbg, b.b, b.n, 0, 0, &eh), 1);
	assert_int_equal(dbg.fdes_skipped, 1);
	cfi_finish(&dbg);
	row_is(&dbg, 0x7000, TB_CFI_RSP, 8, TB_RBP_SAME, 0);
	row_is(&dbg, 0x7001, TB_CFI_RSP, 16, TB_RBP_AT_CFA, -16);
	assert_null(cfi_lookup(&dbg, 0x8001));
	cfi_free(&eh);
	cfi_free(&dbg);
}

/* Bad FDEs cost their own rows only; a bad top level is an error. */
static void test_malformed(void **state)
{
	struct cfi_table t;
	struct buf b = { .n = 0 };
	size_t cie = eh_cie(&b, "zR", 0x1b), f;

	(void)state;
	f = eh_fde(&b, cie, 0x9000, 0x10);
	u8(&b, 0x0b);				/* restore_state, nothing remembered */
	close_entry(&b, f);
	f = eh_fde(&b, cie, 0x9100, 0x10);
	u8(&b, 0x0e);				/* operand cut off */
	close_entry(&b, f);
	f = eh_fde(&b, cie, 0x9200, 0x10);
	u8(&b, 0x40 | 4);
	u8(&b, 0x01);				/* set_loc back to 0x9002 */
	u32(&b, 0x9002 - (VADDR + (uint32_t)b.n));
	close_entry(&b, f);
	f = eh_fde(&b, cie, 0x9300, 0x10);
	u8(&b, 0x3f);				/* no such opcode */
	close_entry(&b, f);
	f = eh_fde(&b, (size_t)-0x100, 0x9400, 0x10);	/* CIE pointer outside */
	close_entry(&b, f);
	f = eh_fde(&b, cie, 0x9500, 0x10);	/* a good one */
	close_entry(&b, f);
	parse(&t, &b, 1, 1);
	assert_int_equal(t.fdes_skipped, 5);
	assert_int_equal(t.nrows, 2);
	row_is(&t, 0x9500, TB_CFI_RSP, 8, TB_RBP_SAME, 0);
	assert_null(cfi_lookup(&t, 0x9000));
	cfi_free(&t);

	memset(&t, 0, sizeof(t));
	b.n = 0;
	u32(&b, 0x1000);			/* longer than the section */
	u32(&b, 0);
	assert_int_equal(cfi_parse_section(&t, b.b, b.n, VADDR, 1, NULL), -EINVAL);
	cfi_free(&t);
}

/* ---- The unwinder over a fake stack ---------------------------------------- */

#define STACK	0x7ff000u

struct fake {
	uint64_t w[64];		/* the words at STACK, STACK + 8, ... */
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fake *f = ctx;

	if (addr < STACK || addr + len > STACK + sizeof(f->w))
		return -EFAULT;
	memcpy(buf, (const uint8_t *)f->w + (addr - STACK), len);
	return 0;
}

static void test_unwind(void **state)
{
	/* Module "a" at 0x400000 (bias 0x400000 - 0x1000 for its vaddr 0x1000). */
	static struct tb_cfi_row rows[] = {
		{ .pc = 0x1000, .kind = TB_CFI_RSP, .cfa_off = 24 },		/* leaf */
		{ .pc = 0x1100, .kind = TB_CFI_RBP, .cfa_off = 16,		/* rbp frame */
		  .rbp_rule = TB_RBP_AT_CFA, .rbp_off8 = -2 },
		{ .pc = 0x1200, .kind = TB_CFI_SIGNAL },			/* __restore_rt */
		{ .pc = 0x1300, .kind = TB_CFI_PLT, .cfa_off = 8, .arg = 11 },
		{ .pc = 0x1400, .kind = TB_CFI_END },
		{ .pc = 0x1500, .kind = TB_CFI_GAP },
	};
	struct cfi_table t = { .rows = rows, .nrows = 6 };
	struct cfi_module m = { .start = 0x400000, .end = 0x401000,
				.bias = 0x400000 - 0x1000, .table = &t };
	struct fake f = { { 0 } };
	uint64_t pcs[16];
	struct cfi_unwind_result res;

	(void)state;
	/* leaf at 0x400010, rsp = STACK: CFA = STACK+24, ra at STACK+16 */
	f.w[2] = 0x400150;		/* returns into the rbp frame */
	/* rbp frame: rbp = STACK+40 -> CFA STACK+56, ra at +48, rbp at +40 */
	f.w[5] = STACK + 400;		/* caller's rbp */
	/* __restore_rt is at 0x1201: its FDE starts one byte early so that
	 * the lookup at return address - 1 finds it, as glibc's does. */
	f.w[6] = 0x400201;
	/* __restore_rt's rsp = CFA = STACK+56: the ucontext */
	f.w[7 + TB_SIGCTX_RIP / 8] = 0x400300 + 12;	/* interrupted in the PLT */
	f.w[7 + TB_SIGCTX_RSP / 8] = STACK + 8 * 40;
	f.w[7 + TB_SIGCTX_RBP / 8] = 1;
	/* PLT at offset 12 >= 11: CFA = rsp + 16, ra at rsp + 8 */
	f.w[41] = 0x400400 + 1;		/* into the outermost function */
	res = cfi_unwind(&m, 1, (struct cfi_regs){ .rip = 0x400010, .rsp = STACK,
						   .rbp = STACK + 40 },
			 fake_read, &f, pcs, 16);
	assert_int_equal(res.stop, CFI_STOP_END);
	assert_int_equal(res.n, 5);
	assert_int_equal(pcs[0], 0x400010);
	assert_int_equal(pcs[1], 0x400150);
	assert_int_equal(pcs[2], 0x400201);
	assert_int_equal(pcs[3], 0x40030c);
	assert_int_equal(pcs[4], 0x400401);

	/* A return address just past a gap, a pc outside, a frame limit. */
	res = cfi_unwind(&m, 1, (struct cfi_regs){ .rip = 0x400500, .rsp = STACK },
			 fake_read, &f, pcs, 16);
	assert_int_equal(res.stop, CFI_STOP_NO_ROW);
	res = cfi_unwind(&m, 1, (struct cfi_regs){ .rip = 0x500000, .rsp = STACK },
			 fake_read, &f, pcs, 16);
	assert_int_equal(res.stop, CFI_STOP_NO_MODULE);
	res = cfi_unwind(&m, 1, (struct cfi_regs){ .rip = 0x400010, .rsp = STACK,
						   .rbp = STACK + 40 }, fake_read, &f, pcs, 2);
	assert_int_equal(res.stop, CFI_STOP_MAX);
	assert_int_equal(res.n, 2);
	/* The stack pointer runs off the readable stack. */
	res = cfi_unwind(&m, 1, (struct cfi_regs){ .rip = 0x400010, .rsp = STACK + 8 * 62 },
			 fake_read, &f, pcs, 16);
	assert_int_equal(res.stop, CFI_STOP_READ);
	assert_string_equal(cfi_stop_name(CFI_STOP_END), "end of stack");
}

/* ---- The page index: the rows a lookup searches (bpf/unwind.bpf.h) ---- */

/* The last row at or below pc among rows[lo, hi), or -1. */
static long last_at_or_below(const struct tb_cfi_row *rows, size_t lo, size_t hi, uint64_t pc)
{
	long r = -1;

	for (; lo < hi; lo++)
		if (rows[lo].pc <= pc)
			r = (long)lo;
	return r;
}

/* uw_pages()'s narrowing, then the search in what is left. */
static long by_index(const struct cfi_table *t, const struct tb_cfi_row *ix, uint32_t page0,
		     uint32_t npages, uint64_t pc)
{
	uint64_t page = pc >> TB_CFI_PAGE_SHIFT;
	const struct tb_cfi_row *e;

	if (page < page0)
		return -1;
	page -= page0;
	e = &ix[page < npages ? page : npages - 1];
	assert_true(e->pc < (uint32_t)e->cfa_off && (uint32_t)e->cfa_off <= t->nrows);
	return last_at_or_below(t->rows, e->pc, (uint32_t)e->cfa_off, pc);
}

static void test_page_index(void **state)
{
	/* A first row mid-page, a crowded page, pages without rows, a row on
	 * a page's first byte, a last row with addresses above it. */
	static struct tb_cfi_row rows[] = {
		{ .pc = 0x10800 }, { .pc = 0x10900 }, { .pc = 0x10fff },
		{ .pc = 0x11000 }, { .pc = 0x11001 }, { .pc = 0x11002 }, { .pc = 0x11ff0 },
		{ .pc = 0x14010 }, { .pc = 0x15000 }, { .pc = 0x16abc },
	};
	struct cfi_table t = { .rows = rows, .nrows = sizeof(rows) / sizeof(rows[0]) };
	uint32_t page0 = 0x10, npages = 0x16 - 0x10 + 1;
	struct tb_cfi_row ix[7];
	uint64_t pc;

	(void)state;
	cfi_page_index(&t, page0, npages, ix);
	for (pc = 0xf000; pc < 0x19000; pc++)
		assert_int_equal(by_index(&t, ix, page0, npages, pc),
				 last_at_or_below(rows, 0, t.nrows, pc));
	/* A page searches its own rows, from the one governing its start. */
	assert_int_equal(ix[1].pc, 3);
	assert_int_equal(ix[1].cfa_off, 7);
	assert_int_equal(ix[2].pc, 6);		/* no rows: the one before */
	assert_int_equal(ix[2].cfa_off, 7);
}

/* ---- A real ELF: this test's own image, with and without section headers -- */

static uint8_t *self_image(size_t *len)
{
	FILE *f = fopen("/proc/self/exe", "rb");
	uint8_t *p;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	p = malloc(*len);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, *len, f), *len);
	fclose(f);
	return p;
}

static void test_self_elf(void **state)
{
	struct cfi_table a, b;
	const struct cfi_table *c1, *c2;
	size_t len, n, bytes;
	uint8_t *img = self_image(&len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;

	(void)state;
	assert_int_equal(cfi_from_mem(img, len, &a), 0);
	assert_true(a.nrows > 10);
	assert_int_equal(a.hdr_fdes, a.fdes);
	assert_int_equal(strlen(a.build_id), 40);
	/* Stripped of section headers: .eh_frame through PT_GNU_EH_FRAME. */
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	assert_int_equal(cfi_from_mem(img, len, &b), 0);
	assert_int_equal(b.nrows, a.nrows);
	assert_memory_equal(b.rows, a.rows, cfi_bytes(&a));
	cfi_free(&b);
	/* Not x86-64: refused. */
	eh->e_machine = EM_AARCH64;
	assert_int_equal(cfi_from_mem(img, len, &b), -ENOEXEC);
	cfi_free(&b);
	/* The cache: one parse per build id. */
	c1 = cfi_cache_get("/proc/self/exe");
	c2 = cfi_cache_get("/proc/self/exe");
	assert_non_null(c1);
	assert_ptr_equal(c1, c2);
	assert_int_equal(c1->nrows, a.nrows);
	cfi_cache_stats(&n, &bytes);
	assert_int_equal(n, 1);
	assert_int_equal(bytes, cfi_bytes(&a));
	assert_null(cfi_cache_get("/nonexistent/lib.so"));
	cfi_cache_clear();
	cfi_free(&a);
	free(img);
}

/*
 * The eval function's split parts without symbols: the direct jumps that
 * leave a function, and the FDEs they land in that are no function's entry.
 */
static void test_eval_split(void **state)
{
	/* at 0x1000: jmp +0x100 (out), jne -0x1000 (out), jmp +0 (in), je +0x200 (out) */
	static const uint8_t code[] = {
		0xe9, 0x00, 0x01, 0x00, 0x00,
		0x0f, 0x85, 0x00, 0xf0, 0xff, 0xff,
		0xe9, 0x00, 0x00, 0x00, 0x00,
		0x0f, 0x84, 0x00, 0x02, 0x00, 0x00,
	};
	struct tb_cfi_row entry = { .kind = TB_CFI_RSP, .cfa_off = 8 };
	struct tb_cfi_row rbp = { .kind = TB_CFI_RBP, .cfa_off = 16 };
	struct tb_cfi_row rsp = { .kind = TB_CFI_RSP, .cfa_off = 0x58 };
	uint64_t t[8];
	struct eval_span out[2];
	unsigned hits[2];
	struct eval_split_scan s = { .targets = t, .out = out, .hits = hits, .max = 2 };
	size_t n;

	(void)state;
	n = eval_jump_targets(code, sizeof(code), 0x1000, t, 8);
	assert_int_equal(n, 3);
	assert_int_equal(t[0], 0x1000 + 11 - 0x1000);
	assert_int_equal(t[1], 0x1000 + 5 + 0x100);
	assert_int_equal(t[2], 0x1000 + 22 + 0x200);
	/* targets 0x500, 0x510, 0x520, 0x4000, 0x4010, 0x4020, 0x4030, 0x9000 */
	t[0] = 0x500, t[1] = 0x510, t[2] = 0x520, t[3] = 0x4000;
	t[4] = 0x4010, t[5] = 0x4020, t[6] = 0x4030, t[7] = 0x9000;
	s.ntargets = 8;
	eval_split_fde(&s, 0x500, 0x600, &entry);	/* a function: never */
	assert_int_equal(s.n, 0);
	eval_split_fde(&s, 0x8ff0, 0x9100, &rbp);	/* one jump: a stray match */
	assert_int_equal(s.n, 0);
	eval_split_fde(&s, 0x400, 0x515, &rsp);	/* two jumps */
	assert_int_equal(s.n, 1);
	eval_split_fde(&s, 0x4000, 0x5000, &rbp);	/* four: first */
	assert_int_equal(s.n, 2);
	assert_int_equal(out[0].lo, 0x4000);
	assert_int_equal(hits[0], 4);
	assert_int_equal(out[1].lo, 0x400);
	assert_int_equal(out[1].hi, 0x515);
	eval_split_fde(&s, 0x516, 0x600, &rbp);	/* 0x520 alone: below the bar */
	assert_int_equal(s.n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prologue_epilogue),
		cmocka_unit_test(test_remember_restore),
		cmocka_unit_test(test_special_rows),
		cmocka_unit_test(test_pointer_encodings),
		cmocka_unit_test(test_debug_frame),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_unwind),
		cmocka_unit_test(test_page_index),
		cmocka_unit_test(test_self_elf),
		cmocka_unit_test(test_eval_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
