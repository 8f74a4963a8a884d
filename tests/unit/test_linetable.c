// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests for user/linetable.c: every code unit of every fixture code
 * object (generated from real 3.11/3.12/3.13 interpreters by
 * scripts/gen-linetable-fixtures.py, and from 3.8/3.9/3.10 by
 * scripts/gen-linetable-fixtures-old.py), the worked examples of
 * python-internals.md §6, and malformed or random input.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "linetable.h"
#include "fixtures/linetable_311.h"
#include "fixtures/linetable_312.h"
#include "fixtures/linetable_313.h"
#include "fixtures/linetable_38.h"
#include "fixtures/linetable_39.h"
#include "fixtures/linetable_310.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Ranges start at 0, are contiguous, non-empty, and neighbours differ. */
static void assert_well_formed(const struct linetable *lt, size_t len)
{
	size_t i;

	assert_true(lt->n <= len);
	for (i = 0; i < lt->n; i++) {
		assert_true(lt->r[i].start < lt->r[i].end);
		assert_int_equal(lt->r[i].start, i ? lt->r[i - 1].end : 0);
		if (i)
			assert_int_not_equal(lt->r[i].line, lt->r[i - 1].line);
	}
}

/* Every code unit of the fixture on the line its interpreter gave. */
static void assert_fixture_lines(const struct linetable *lt, const struct lt_fixture *f)
{
	size_t i;

	for (i = 0; i < f->n_units; i++) {
		int32_t got = linetable_line(lt, (int32_t)i);

		if (got != f->lines[i])
			fail_msg("%s (first %d): unit %zu: line %d, want %d",
				 f->name, f->firstlineno, i, got, f->lines[i]);
	}
}

static void check_fixture(const struct lt_fixture *f)
{
	struct linetable lt;
	int32_t end;

	if (linetable_decode(f->table, f->table_len, f->firstlineno, &lt))
		fail_msg("%s: decode failed", f->name);
	assert_well_formed(&lt, f->table_len);
	assert_int_equal(linetable_line(&lt, -1), f->firstlineno);

	assert_fixture_lines(&lt, f);
	/* The table covers the code exactly; anything past it has no line. */
	end = lt.n ? lt.r[lt.n - 1].end : 0;
	assert_int_equal(end, (int32_t)f->n_units);
	assert_int_equal(linetable_line(&lt, end), -1);
	assert_int_equal(linetable_line(&lt, INT32_MAX), -1);
	linetable_free(&lt);
}

static void check_fixtures(const struct lt_fixture *f, size_t n)
{
	size_t i;

	assert_true(n > 0);
	for (i = 0; i < n; i++)
		check_fixture(&f[i]);
}

static void test_fixtures_311(void **state)
{
	(void)state;
	check_fixtures(lt_fixtures_311, ARRAY_SIZE(lt_fixtures_311));
}

static void test_fixtures_312(void **state)
{
	(void)state;
	check_fixtures(lt_fixtures_312, ARRAY_SIZE(lt_fixtures_312));
}

static void test_fixtures_313(void **state)
{
	(void)state;
	check_fixtures(lt_fixtures_313, ARRAY_SIZE(lt_fixtures_313));
}

/*
 * The §6 examples (3.12.1, co_firstlineno 46) chained into one table, with
 * two filler entries (0xdf: one-line +1 over 8 units; e0: one-line +2) so
 * that each example starts from the running line the doc describes.
 */
static const uint8_t worked[] = {
	0x80, 0x00,			/* [0,1)   46 RESUME */
	0xd8, 0x08, 0x09,		/* [1,2)   47 cols 8-9 */
	0x88, 0x41,			/* [2,3)   47 cols 12-13 */
	0xdf, 0x00, 0x01,		/* [3,11)  48 filler */
	0xdc, 0x1f, 0x24,		/* [11,16) 49 cols 31-36 */
	0xe0, 0x00, 0x01,		/* [16,17) 51 filler */
	0xf0, 0x03, 0x01, 0x0c, 0x0f,	/* [17,18) 50 long form, Δ -1 */
	0xf9,				/* [18,20) none, running line 50 */
	0xf2, 0x03, 0x00, 0x10, 0x29,	/* [20,23) 49 long form, Δ -1 */
};

static void test_worked_examples(void **state)
{
	static const int32_t want[23] = {
		46, 47, 47, 48, 48, 48, 48, 48, 48, 48, 48,
		49, 49, 49, 49, 49, 51, 50, -1, -1, 49, 49, 49,
	};
	struct linetable lt;
	size_t i;

	(void)state;
	assert_int_equal(linetable_decode(worked, sizeof(worked), 46, &lt), 0);
	assert_well_formed(&lt, sizeof(worked));
	for (i = 0; i < ARRAY_SIZE(want); i++)
		assert_int_equal(linetable_line(&lt, (int32_t)i), want[i]);
	assert_int_equal(linetable_line(&lt, 23), -1);
	assert_int_equal(linetable_line(&lt, -1), 46);
	/* 47 twice and 49 five units in one entry are single ranges. */
	assert_int_equal(lt.n, 8);
	assert_int_equal(lt.r[1].start, 1);
	assert_int_equal(lt.r[1].end, 3);
	linetable_free(&lt);
}

static void test_negative_index(void **state)
{
	struct linetable lt;

	(void)state;
	assert_int_equal(linetable_decode(worked, sizeof(worked), 46, &lt), 0);
	assert_int_equal(linetable_line(&lt, -1), 46);
	assert_int_equal(linetable_line(&lt, INT32_MIN), 46);
	linetable_free(&lt);
}

static void test_empty(void **state)
{
	struct linetable lt;

	(void)state;
	assert_int_equal(linetable_decode(NULL, 0, 7, &lt), 0);
	assert_null(lt.r);
	assert_int_equal(lt.n, 0);
	assert_int_equal(linetable_line(&lt, -1), 7);
	assert_int_equal(linetable_line(&lt, 0), -1);
	linetable_free(&lt);
	linetable_free(&lt);	/* idempotent */
	linetable_free(NULL);
}

/* Only cuts that fall on an entry boundary of `worked` leave it valid. */
static void test_truncated(void **state)
{
	static const size_t boundary[] = { 0, 2, 5, 7, 10, 13, 16, 21, 22 };
	struct linetable lt;
	size_t cut, b = 0;

	(void)state;
	for (cut = 0; cut < sizeof(worked); cut++) {
		int ok = b < ARRAY_SIZE(boundary) && boundary[b] == cut;
		int rc = linetable_decode(worked, cut, 46, &lt);

		if (ok) {
			b++;
			assert_int_equal(rc, 0);
		} else {
			if (rc != -EINVAL)
				fail_msg("cut at %zu decoded", cut);
			assert_null(lt.r);
			assert_int_equal(lt.n, 0);
		}
		linetable_free(&lt);
	}
}

static int decode_bytes(const uint8_t *buf, size_t len, int32_t first)
{
	struct linetable lt;
	int rc = linetable_decode(buf, len, first, &lt);

	linetable_free(&lt);
	return rc;
}

#define DECODE(first, ...) ({						\
	static const uint8_t b_[] = { __VA_ARGS__ };			\
	decode_bytes(b_, sizeof(b_), first);				\
})

static void test_malformed(void **state)
{
	(void)state;
	/* Header without bit 7; extra byte with bit 7 set. */
	assert_int_equal(DECODE(1, 0x00), -EINVAL);
	assert_int_equal(DECODE(1, 0x80, 0x80), -EINVAL);
	assert_int_equal(DECODE(1, 0xd8, 0x08, 0x89), -EINVAL);
	/* Varint stops short: continuation flag on the last byte. */
	assert_int_equal(DECODE(1, 0xe8, 0x41), -EINVAL);
	assert_int_equal(DECODE(1, 0xf0, 0x03, 0x01, 0x4c), -EINVAL);
	/* Varint longer than 6 groups, or wider than 32 bits. */
	assert_int_equal(DECODE(1, 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,
				0x00), -EINVAL);
	assert_int_equal(DECODE(1, 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f),
			 -EINVAL);
	/* Even when the extra groups are zero (CPython never pads). */
	assert_int_equal(DECODE(1, 0xe8, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
				0x00), -EINVAL);
	assert_int_equal(DECODE(1, 0xe8, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00),
			 0);
	/* Widest legal varint: 0xffffffff, i.e. Δ = -(2^31 - 1). */
	assert_int_equal(DECODE(INT32_MAX, 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,
				0x03), 0);
	/* Running line leaves int32. */
	assert_int_equal(DECODE(INT32_MAX, 0xd8, 0x00, 0x01), -EINVAL);
	assert_int_equal(DECODE(INT32_MIN, 0xe8, 0x03), -EINVAL);
	assert_int_equal(DECODE(0, 0xe8, 0x03), 0);	/* line -1 is fine */
	/* Bad arguments. */
	assert_int_equal(linetable_decode(NULL, 1, 0, NULL), -EINVAL);
}

static void test_no_column_and_none(void **state)
{
	/* 13: Δ +100 (svarint 200 = 0x48 0x03), then none, then 13: Δ -1. */
	static const uint8_t t[] = { 0xe8, 0x48, 0x03, 0xf8, 0xf9, 0xe9, 0x03 };
	struct linetable lt;

	(void)state;
	assert_int_equal(linetable_decode(t, sizeof(t), 10, &lt), 0);
	assert_int_equal(linetable_line(&lt, 0), 110);
	/* Two "none" entries merge into one range of 3 units. */
	assert_int_equal(lt.n, 3);
	assert_int_equal(linetable_line(&lt, 1), -1);
	assert_int_equal(linetable_line(&lt, 3), -1);
	/* The running line was not touched by "none": 110 - 1. */
	assert_int_equal(linetable_line(&lt, 4), 109);
	assert_int_equal(linetable_line(&lt, 5), 109);
	assert_int_equal(linetable_line(&lt, 6), -1);
	linetable_free(&lt);
}

static void test_size_cap(void **state)
{
	size_t len = LINETABLE_MAX_BYTES;
	struct linetable lt;
	uint8_t *buf;
	size_t i;

	(void)state;
	buf = malloc(len + 2);
	assert_non_null(buf);
	for (i = 0; i + 1 < len + 2; i += 2) {
		buf[i] = 0x87;	/* short form, 8 units */
		buf[i + 1] = 0x00;
	}
	assert_int_equal(linetable_decode(buf, len, 5, &lt), 0);
	assert_int_equal(lt.n, 1);
	assert_int_equal(lt.r[0].end, (int32_t)(len / 2 * 8));
	assert_int_equal(linetable_line(&lt, lt.r[0].end - 1), 5);
	linetable_free(&lt);
	assert_int_equal(linetable_decode(buf, len + 2, 5, &lt), -EINVAL);
	free(buf);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void poke(const uint8_t *buf, size_t len)
{
	struct linetable lt;
	int k;

	if (linetable_decode(buf, len, (int32_t)xorshift(), &lt)) {
		assert_null(lt.r);
		return;
	}
	assert_well_formed(&lt, len);
	for (k = 0; k < 16; k++)
		linetable_line(&lt, (int32_t)(xorshift() % (8 * len + 16)) - 8);
	linetable_free(&lt);
}

/* Random bytes, biased towards plausible headers, must never crash. */
static void test_garbage(void **state)
{
	uint8_t buf[256];
	int iter;
	size_t i;

	(void)state;
	for (iter = 0; iter < 20000; iter++) {
		size_t len = xorshift() % sizeof(buf);

		for (i = 0; i < len; i++) {
			uint64_t x = xorshift();

			buf[i] = (x & 0x300) ? (uint8_t)x & 0x7f : (uint8_t)x;
		}
		poke(buf, len);
	}
}

/* Bit flips and cuts of real tables. */
static void test_mutated_fixtures(void **state)
{
	const struct lt_fixture *f;
	uint8_t buf[4096];
	size_t n = ARRAY_SIZE(lt_fixtures_312), i;
	int iter;

	(void)state;
	for (iter = 0; iter < 5000; iter++) {
		f = &lt_fixtures_312[xorshift() % n];
		if (f->table_len > sizeof(buf) || !f->table_len)
			continue;
		memcpy(buf, f->table, f->table_len);
		for (i = 0; i < 3; i++) {
			size_t at = xorshift() % f->table_len;

			buf[at] ^= 1u << (xorshift() % 8);
		}
		poke(buf, f->table_len - xorshift() % (f->table_len / 4 + 1));
	}
}

/* A 3.8-3.10 table: the interpreter's line for every code unit. */
static void check_old_fixture(int format, const struct lt_fixture *f)
{
	struct linetable lt;

	if (linetable_decode_fmt(format, f->table, f->table_len, f->firstlineno,
				 (int32_t)f->n_units, &lt))
		fail_msg("%s: decode failed", f->name);
	assert_well_formed(&lt, f->table_len / 2 + 1);
	assert_int_equal(linetable_line(&lt, -1), f->firstlineno);
	assert_fixture_lines(&lt, f);
	/* Nothing past the code, whose length closes the last range. */
	assert_int_equal(linetable_line(&lt, (int32_t)f->n_units), -1);
	linetable_free(&lt);
	/* Without the code's length a co_lnotab's last line runs on. */
	if (format != LINETABLE_LNOTAB || !f->n_units)
		return;
	assert_int_equal(linetable_decode_fmt(format, f->table, f->table_len, f->firstlineno,
					      0, &lt), 0);
	assert_int_equal(linetable_line(&lt, (int32_t)f->n_units + 1000),
			 f->lines[f->n_units - 1]);
	linetable_free(&lt);
}

static void check_old_fixtures(int format, const struct lt_fixture *f, size_t n)
{
	size_t i;

	assert_true(n > 0);
	for (i = 0; i < n; i++)
		check_old_fixture(format, &f[i]);
}

static void test_fixtures_38(void **state)
{
	(void)state;
	check_old_fixtures(LINETABLE_LNOTAB, lt_fixtures_38, ARRAY_SIZE(lt_fixtures_38));
}

static void test_fixtures_39(void **state)
{
	(void)state;
	check_old_fixtures(LINETABLE_LNOTAB, lt_fixtures_39, ARRAY_SIZE(lt_fixtures_39));
}

static void test_fixtures_310(void **state)
{
	(void)state;
	check_old_fixtures(LINETABLE_310, lt_fixtures_310, ARRAY_SIZE(lt_fixtures_310));
}

/*
 * Hand-made tables for what the fixtures may not show: co_lnotab's split
 * entries (address 255 + 45, line +127 + 3, negative deltas), 3.10's
 * no-line ranges and zero-length entries, and what CPython never writes.
 */
static void test_old_forms(void **state)
{
	/* 3.8: +300 bytes in two entries, then +130 lines in two, then -5. */
	static const uint8_t lnotab[] = { 0xff, 0x00, 0x2d, 0x7f, 0x00, 0x03, 0x04, 0xfb };
	/* 3.10: [0,4) +1, [4,8) none, [8,8) +200 split, [8,12) +0 */
	static const uint8_t lt310[] = { 0x04, 0x01, 0x04, 0x80, 0x00, 0x7f, 0x00, 0x49,
					 0x04, 0x00 };
	struct linetable lt;

	(void)state;
	assert_int_equal(linetable_decode_fmt(LINETABLE_LNOTAB, lnotab, sizeof(lnotab), 10,
					      200, &lt), 0);
	assert_int_equal(linetable_line(&lt, 0), 10);
	assert_int_equal(linetable_line(&lt, 149), 10);		/* byte 298 */
	assert_int_equal(linetable_line(&lt, 150), 140);	/* byte 300: +127 +3 */
	assert_int_equal(linetable_line(&lt, 151), 140);
	assert_int_equal(linetable_line(&lt, 152), 135);	/* byte 304: -5 */
	assert_int_equal(linetable_line(&lt, 199), 135);
	assert_int_equal(linetable_line(&lt, 200), -1);
	linetable_free(&lt);
	/* A table past the end of the code is no table of this code. */
	assert_int_equal(linetable_decode_fmt(LINETABLE_LNOTAB, lnotab, sizeof(lnotab), 10,
					      100, &lt), -EINVAL);
	assert_int_equal(linetable_decode_fmt(LINETABLE_310, lt310, sizeof(lt310), 1, 6, &lt), 0);
	assert_int_equal(linetable_line(&lt, 0), 2);
	assert_int_equal(linetable_line(&lt, 1), 2);
	assert_int_equal(linetable_line(&lt, 2), -1);
	assert_int_equal(linetable_line(&lt, 3), -1);
	assert_int_equal(linetable_line(&lt, 4), 202);
	assert_int_equal(linetable_line(&lt, 5), 202);
	assert_int_equal(linetable_line(&lt, 6), -1);
	linetable_free(&lt);
	/* Half a pair, an unknown format: refused, nothing left behind. */
	assert_int_equal(linetable_decode_fmt(LINETABLE_310, lt310, 3, 1, 0, &lt), -EINVAL);
	assert_null(lt.r);
	assert_int_equal(linetable_decode_fmt(7, lt310, 2, 1, 0, &lt), -EINVAL);
	assert_int_equal(linetable_decode_fmt(LINETABLE_LNOTAB, NULL, 0, 5, 0, &lt), 0);
	assert_int_equal(linetable_line(&lt, 12345), 5);	/* all on the def line */
	linetable_free(&lt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures_311),
		cmocka_unit_test(test_fixtures_312),
		cmocka_unit_test(test_fixtures_313),
		cmocka_unit_test(test_fixtures_38),
		cmocka_unit_test(test_fixtures_39),
		cmocka_unit_test(test_fixtures_310),
		cmocka_unit_test(test_old_forms),
		cmocka_unit_test(test_worked_examples),
		cmocka_unit_test(test_negative_index),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_no_column_and_none),
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_mutated_fixtures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
