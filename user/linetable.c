// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CPython 3.11+ location table decoder.
 *
 * The table is a sequence of entries. Each starts with a header byte
 * 1CCCCLLL: C is the entry kind, L + 1 the number of code units covered.
 * The kind decides which extra bytes follow and how the running line
 * (starting at co_firstlineno) moves:
 *
 *   0-9    short form, 1 byte of columns       line unchanged
 *   10-12  one-line form, 2 column bytes       line += kind - 10
 *   13     no columns: svarint delta           line += delta
 *   14     long form: svarint delta, then      line += delta
 *          varints end-line delta, col+1, end-col+1
 *   15     no location                         range has no line, running
 *                                              line unchanged
 *
 * varint: 6-bit groups, least significant first, 0x40 = more follow.
 * svarint: varint v, value v >> 1, negated when v & 1.
 *
 * Only the header byte has bit 7 set, which lets us reject garbage early
 * (e.g. a stale pointer that now points at unrelated memory).
 */
#include <errno.h>
#include <stdlib.h>

#include "linetable.h"

/* Values fit 32 bits, i.e. at most 6 groups of 6 bits. */
#define LT_VARINT_MAX_SHIFT 30
#define LT_NO_LINE	(-1)

enum {
	LT_ONE_LINE0 = 10,
	LT_ONE_LINE2 = 12,
	LT_NO_COLUMNS = 13,
	LT_LONG = 14,
	LT_NONE = 15,
};

struct lt_cursor {
	const uint8_t *p;
	const uint8_t *end;
};

/* A byte inside an entry: present and with bit 7 clear. */
static int next_byte(struct lt_cursor *c, uint8_t *b)
{
	if (c->p >= c->end || (*c->p & 0x80))
		return -EINVAL;
	*b = *c->p++;
	return 0;
}

static int skip_bytes(struct lt_cursor *c, int n)
{
	uint8_t b;

	while (n-- > 0) {
		if (next_byte(c, &b))
			return -EINVAL;
	}
	return 0;
}

static int read_varint(struct lt_cursor *c, uint32_t *out)
{
	uint64_t val = 0;
	unsigned int shift;
	uint8_t b;

	for (shift = 0;; shift += 6) {
		/* A run of continuation bytes is an error, not a loop. */
		if (shift > LT_VARINT_MAX_SHIFT || next_byte(c, &b))
			return -EINVAL;
		val |= (uint64_t)(b & 63) << shift;
		if (!(b & 64))
			break;
	}
	if (val > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)val;
	return 0;
}

static int read_svarint(struct lt_cursor *c, int64_t *out)
{
	uint32_t v;

	if (read_varint(c, &v))
		return -EINVAL;
	*out = (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
	return 0;
}

static int skip_varints(struct lt_cursor *c, int n)
{
	uint32_t v;

	while (n-- > 0) {
		if (read_varint(c, &v))
			return -EINVAL;
	}
	return 0;
}

/* Parse the bytes after the header of a kind 0-14 entry: the line delta. */
static int entry_delta(struct lt_cursor *c, int kind, int64_t *delta)
{
	*delta = 0;
	switch (kind) {
	case LT_LONG:
		/* Δline, then Δend-line, column + 1, end column + 1. */
		return read_svarint(c, delta) || skip_varints(c, 3) ? -EINVAL : 0;
	case LT_NO_COLUMNS:
		return read_svarint(c, delta);
	case LT_ONE_LINE0 ... LT_ONE_LINE2:
		*delta = kind - LT_ONE_LINE0;
		return skip_bytes(c, 2);	/* column, end column */
	default:
		return skip_bytes(c, 1);	/* short form: columns only */
	}
}

/*
 * Consume one entry (c->p < c->end on entry). Updates the running *line and
 * reports the units covered and the range's line (LT_NO_LINE for kind 15,
 * which leaves the running line alone).
 */
static int next_entry(struct lt_cursor *c, int64_t *line, int *units,
		      int32_t *range_line)
{
	uint8_t hdr = *c->p++;
	int kind = (hdr >> 3) & 15;
	int64_t delta;

	if (!(hdr & 0x80))
		return -EINVAL;
	*units = (hdr & 7) + 1;
	if (kind == LT_NONE) {
		*range_line = LT_NO_LINE;
		return 0;
	}
	if (entry_delta(c, kind, &delta))
		return -EINVAL;

	/* |delta| < 2^31 so this cannot overflow; keep lines in int32. */
	*line += delta;
	if (*line < INT32_MIN || *line > INT32_MAX)
		return -EINVAL;
	*range_line = (int32_t)*line;
	return 0;
}

/*
 * Walk the whole table, merging neighbours with equal lines. With dst NULL
 * only count the ranges, so the caller can allocate exactly once.
 */
static int walk(const uint8_t *buf, size_t len, int32_t firstlineno,
		struct lt_range *dst, size_t *count)
{
	struct lt_cursor c = { buf, buf + len };
	int64_t line = firstlineno;
	int64_t addr = 0;
	int32_t prev = 0;
	size_t n = 0;

	while (c.p < c.end) {
		int32_t rl;
		int units;

		if (next_entry(&c, &line, &units, &rl))
			return -EINVAL;
		if (addr + units > INT32_MAX)
			return -EINVAL;
		if (n && rl == prev) {
			if (dst)
				dst[n - 1].end = (int32_t)(addr + units);
		} else {
			if (dst) {
				dst[n].start = (int32_t)addr;
				dst[n].end = (int32_t)(addr + units);
				dst[n].line = rl;
			}
			n++;
		}
		prev = rl;
		addr += units;
	}
	*count = n;
	return 0;
}

int linetable_decode(const uint8_t *buf, size_t len, int32_t firstlineno,
		     struct linetable *out)
{
	struct lt_range *r;
	size_t n, filled;

	if (!out)
		return -EINVAL;
	out->r = NULL;
	out->n = 0;
	out->firstlineno = firstlineno;
	if ((!buf && len) || len > LINETABLE_MAX_BYTES)
		return -EINVAL;
	if (!len)
		return 0;	/* no table, no ranges (and no NULL + 0) */
	if (walk(buf, len, firstlineno, NULL, &n))
		return -EINVAL;
	if (!n)
		return 0;

	/* n <= len: every entry takes at least one byte. */
	r = calloc(n, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (walk(buf, len, firstlineno, r, &filled) || filled != n) {
		free(r);
		return -EINVAL;
	}
	out->r = r;
	out->n = n;
	return 0;
}

int32_t linetable_line(const struct linetable *lt, int32_t idx)
{
	size_t lo = 0, hi;

	if (!lt)
		return LT_NO_LINE;
	if (idx < 0)
		return lt->firstlineno;
	if (!lt->n || idx >= lt->r[lt->n - 1].end)
		return LT_NO_LINE;

	/* First range whose end is past idx; ranges are contiguous from 0. */
	hi = lt->n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lt->r[mid].end <= idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lt->r[lo].start <= idx ? lt->r[lo].line : LT_NO_LINE;
}

void linetable_free(struct linetable *lt)
{
	if (!lt)
		return;
	free(lt->r);
	lt->r = NULL;
	lt->n = 0;
}
