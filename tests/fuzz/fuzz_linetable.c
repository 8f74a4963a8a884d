// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fuzz the line-table decoders (user/linetable.c, user/linetable_old.c).
 * Input: a 4-byte header, then the table bytes, read from a target. A
 * header whose top two bits are 01 or 10 selects 3.8/3.9's co_lnotab or
 * 3.10's co_linetable (first line: its low 30 bits; then 4 bytes of code
 * length in units, masked); otherwise it is a 3.11+ co_firstlineno.
 *
 * Besides "no crash, no overflow", the decoder is checked against a
 * reference written here from CPython's Objects/locations.md, one line per
 * code unit: both must accept and reject the same tables, and
 * linetable_line() must give the reference's line for every index. The
 * decoded ranges must be sorted, contiguous from 0 and merged.
 */
#include "fuzz.h"
#include "linetable.h"

#define NO_LINE	(-1)

struct ref {
	const uint8_t *p, *end;
};

/* Entry bytes after the header never have bit 7 set. */
static int ref_byte(struct ref *r, uint8_t *b)
{
	if (r->p == r->end || (*r->p & 0x80))
		return -1;
	*b = *r->p++;
	return 0;
}

/* At most 6 groups of 6 bits; the value must fit 32 bits. */
static int ref_varint(struct ref *r, uint64_t *v)
{
	uint8_t b;
	int groups = 0;

	*v = 0;
	do {
		if (groups == 6 || ref_byte(r, &b))
			return -1;
		*v |= (uint64_t)(b & 0x3f) << (6 * groups++);
	} while (b & 0x40);
	return *v > UINT32_MAX ? -1 : 0;
}

/*
 * Lines per code unit into lines[] (cap entries); returns the number of
 * units, or -1 if the table is malformed. -2: more units than cap.
 */
static long ref_decode(const uint8_t *t, size_t n, int32_t first, int32_t *lines,
		       size_t cap)
{
	struct ref r = { t, t + n };
	int64_t line = first;
	size_t units = 0;

	while (r.p < r.end) {
		uint8_t h = *r.p++, b;
		int code = (h >> 3) & 15, len = (h & 7) + 1, i;
		int32_t this_line;
		uint64_t v;

		if (!(h & 0x80))
			return -1;
		if (code == 15) {
			this_line = NO_LINE;
		} else {
			if (code <= 9) {
				if (ref_byte(&r, &b))
					return -1;
			} else if (code <= 12) {
				line += code - 10;
				if (ref_byte(&r, &b) || ref_byte(&r, &b))
					return -1;
			} else {
				if (ref_varint(&r, &v))
					return -1;
				line += (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
				if (code == 14) {
					for (i = 0; i < 3; i++)
						if (ref_varint(&r, &v))
							return -1;
				}
			}
			if (line < INT32_MIN || line > INT32_MAX)
				return -1;
			this_line = (int32_t)line;
		}
		for (i = 0; i < len; i++) {
			if (units == cap)
				return -2;
			lines[units++] = this_line;
		}
	}
	return (long)units;
}

/* ---- 3.8-3.10: per byte address, as CPython's own lookups walk them ---- */

#define OLD_MAX_BYTES	4096
#define OLD_UNITS_MASK	0xffff

/* Pairs of (address delta, line delta); -1: malformed. */
static int ref_old_check(int fmt, const uint8_t *t, size_t n, int32_t first, int64_t code_bytes)
{
	int64_t addr = 0, line = first;
	size_t i;

	if (n & 1)
		return -1;
	for (i = 0; i < n; i += 2) {
		addr += t[i];
		if (code_bytes && addr > code_bytes)
			return -1;
		if (fmt == LINETABLE_310 && (int8_t)t[i + 1] == -128)
			continue;
		line += (int8_t)t[i + 1];
		if (line < INT32_MIN || line > INT32_MAX)
			return -1;
	}
	return 0;
}

/*
 * A sweep over byte addresses q = 0, 2, 4, ... (each call the next one):
 * co_lnotab's line is first plus the increments of every pair whose running
 * address is <= q; 3.10's is the line of the non-empty range [start, end)
 * holding q, none past the table.
 */
struct sweep {
	const uint8_t *t;
	size_t n, i;		/* next pair */
	int64_t addr, line;	/* running address and line through pair i - 1 */
	int32_t cur;		/* 3.10: the line of the range ending at addr */
};

static int32_t sweep_lnotab(struct sweep *w, int64_t q)
{
	while (w->i < w->n && w->addr + w->t[w->i] <= q) {
		w->addr += w->t[w->i];
		w->line += (int8_t)w->t[w->i + 1];
		w->i += 2;
	}
	return (int32_t)w->line;
}

static int32_t sweep_310(struct sweep *w, int64_t q)
{
	while (w->addr <= q) {
		int d;

		if (w->i >= w->n)
			return NO_LINE;
		d = (int8_t)w->t[w->i + 1];
		w->addr += w->t[w->i];
		if (d != -128)
			w->line += d;
		w->cur = d == -128 ? NO_LINE : (int32_t)w->line;
		w->i += 2;
	}
	return w->cur;
}

static void fuzz_old(int fmt, const uint8_t *data, size_t size)
{
	const uint8_t *t = data + 8;
	size_t n = size - 8, i;
	int64_t span = 0, u, last;
	struct linetable lt;
	struct sweep w;
	uint32_t h, cu;
	int32_t first, units;
	int ret, want_ok;

	memcpy(&h, data, 4);
	memcpy(&cu, data + 4, 4);
	first = (int32_t)(h & 0x3fffffff);
	units = (int32_t)(cu & OLD_UNITS_MASK);

	if (n > OLD_MAX_BYTES)
		return;
	ret = linetable_decode_fmt(fmt, t, n, first, units, &lt);
	want_ok = !ref_old_check(fmt, t, n, first, 2 * (int64_t)units);
	FUZZ_CHECK((ret == 0) == want_ok, "old format %d: decoder says %d, reference %d", fmt,
		   ret, want_ok);
	if (ret) {
		FUZZ_CHECK(lt.r == NULL && lt.n == 0, "error left ranges behind");
		return;
	}
	for (i = 0; i < n; i += 2)
		span += t[i];
	last = units ? units : span / 2 + 4;	/* an open co_lnotab runs on */
	for (i = 0; i < lt.n; i++) {
		FUZZ_CHECK(lt.r[i].start < lt.r[i].end, "empty range %zu", i);
		FUZZ_CHECK(lt.r[i].start == (i ? lt.r[i - 1].end : 0), "range %zu starts at %d",
			   i, lt.r[i].start);
		FUZZ_CHECK(!i || lt.r[i].line != lt.r[i - 1].line, "ranges %zu, %zu not merged",
			   i - 1, i);
	}
	FUZZ_CHECK(linetable_line(&lt, -1) == first, "not-started frame");
	w = (struct sweep){ .t = t, .n = n, .line = first, .cur = NO_LINE };
	for (u = 0; u <= last; u++) {
		int32_t want = fmt == LINETABLE_LNOTAB ? sweep_lnotab(&w, 2 * u) :
			sweep_310(&w, 2 * u);

		if (units && u >= units)
			want = NO_LINE;
		FUZZ_CHECK(linetable_line(&lt, (int32_t)u) == want, "format %d unit %lld: line %d, want %d",
			   fmt, (long long)u, linetable_line(&lt, (int32_t)u), want);
	}
	linetable_free(&lt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int32_t want[8 * 65536];
	struct linetable lt;
	int32_t first = 0;
	const uint8_t *t;
	size_t n, i;
	long units;
	int ret;

	if (size < 4)
		return 0;
	memcpy(&first, data, 4);
	if ((((uint32_t)first >> 30) == 1 || ((uint32_t)first >> 30) == 2)) {
		if (size >= 8)
			fuzz_old((uint32_t)first >> 30 == 1 ? LINETABLE_LNOTAB : LINETABLE_310,
				 data, size);
		return 0;
	}
	t = data + 4;
	n = size - 4;
	if (n > 65536)
		return 0;

	ret = linetable_decode(t, n, first, &lt);
	units = ref_decode(t, n, first, want, sizeof(want) / sizeof(want[0]));
	FUZZ_CHECK(units != -2, "reference buffer too small");
	FUZZ_CHECK((ret == 0) == (units >= 0),
		   "decoder says %d, reference says %ld (%zu bytes)", ret, units, n);
	if (ret) {
		FUZZ_CHECK(lt.r == NULL && lt.n == 0, "error left ranges behind");
		return 0;
	}
	FUZZ_CHECK(lt.n <= n, "%zu ranges from %zu bytes", lt.n, n);
	for (i = 0; i < lt.n; i++) {
		FUZZ_CHECK(lt.r[i].start < lt.r[i].end, "empty range %zu", i);
		FUZZ_CHECK(lt.r[i].start == (i ? lt.r[i - 1].end : 0),
			   "range %zu starts at %d", i, lt.r[i].start);
		FUZZ_CHECK(!i || lt.r[i].line != lt.r[i - 1].line,
			   "ranges %zu and %zu not merged", i - 1, i);
	}
	FUZZ_CHECK((lt.n ? lt.r[lt.n - 1].end : 0) == units,
		   "ranges cover %d units, reference %ld",
		   lt.n ? lt.r[lt.n - 1].end : 0, units);
	FUZZ_CHECK(linetable_line(&lt, -1) == first, "not-started frame");
	for (i = 0; i < (size_t)units; i++)
		FUZZ_CHECK(linetable_line(&lt, (int32_t)i) == want[i],
			   "unit %zu: line %d, reference %d", i,
			   linetable_line(&lt, (int32_t)i), want[i]);
	FUZZ_CHECK(linetable_line(&lt, (int32_t)units) == NO_LINE, "past the end");
	FUZZ_CHECK(linetable_line(&lt, INT32_MAX) == NO_LINE, "far past the end");
	linetable_free(&lt);
	return 0;
}
