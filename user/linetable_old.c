// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The line tables of CPython 3.8 to 3.10, both pairs of bytes whose
 * addresses count bytes of bytecode (two per code unit):
 *
 *   co_lnotab (3.8, 3.9): (address increment, unsigned; line increment,
 *   signed). The line of byte address q is co_firstlineno plus the line
 *   increments of every pair whose running address is <= q; the last line
 *   runs on to the end of the code, which the table does not know.
 *
 *   co_linetable (3.10): (range length, unsigned; line delta, signed),
 *   each pair one range [end, end + length) from where the previous ended,
 *   on the running line plus delta; a delta of -128 means the range has no
 *   line and leaves the running line alone. Empty ranges only move the
 *   running line.
 *
 * Both become the code-unit ranges of struct linetable: unit u is byte 2u,
 * so a byte range [a, b) holds units [ceil(a / 2), ceil(b / 2)).
 */
#include <errno.h>
#include <stdlib.h>

#include "linetable.h"

#define LT_NO_LINE	(-1)
#define LT_310_NONE	(-128)
/* An open end (co_lnotab with no code length): beyond any index. */
#define LT_OPEN_END	INT32_MAX

/* Where the conversion stands: ranges so far (counted, or written to r). */
struct lt_build {
	struct lt_range *r;	/* NULL: count only */
	size_t n;
	int32_t last;		/* the line of range n - 1 */
};

/* Add byte range [a, e) on `line` as code units, merged with its neighbour. */
static void add_bytes(struct lt_build *b, int64_t a, int64_t e, int32_t line)
{
	int32_t start = (int32_t)((a + 1) / 2);
	int32_t end = e == LT_OPEN_END ? LT_OPEN_END : (int32_t)((e + 1) / 2);

	if (start >= end)
		return;
	if (b->n && b->last == line) {
		if (b->r)
			b->r[b->n - 1].end = end;
		return;
	}
	if (b->r) {
		b->r[b->n].start = start;
		b->r[b->n].end = end;
		b->r[b->n].line = line;
	}
	b->n++;
	b->last = line;
}

static int line_ok(int64_t line)
{
	return line >= INT32_MIN && line <= INT32_MAX;
}

static int walk_lnotab(const uint8_t *buf, size_t len, int32_t first, int64_t code_bytes,
		       struct lt_build *b)
{
	int64_t addr = 0, line = first;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		int64_t next = addr + buf[i];

		if (next > INT32_MAX || (code_bytes && next > code_bytes))
			return -EINVAL;
		add_bytes(b, addr, next, (int32_t)line);
		addr = next;
		line += (int8_t)buf[i + 1];
		if (!line_ok(line))
			return -EINVAL;
	}
	add_bytes(b, addr, code_bytes ? code_bytes : LT_OPEN_END, (int32_t)line);
	return 0;
}

static int walk_310(const uint8_t *buf, size_t len, int32_t first, int64_t code_bytes,
		    struct lt_build *b)
{
	int64_t addr = 0, line = first;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		int64_t next = addr + buf[i];
		int32_t delta = (int8_t)buf[i + 1];

		if (next > INT32_MAX || (code_bytes && next > code_bytes))
			return -EINVAL;
		if (delta != LT_310_NONE) {
			line += delta;
			if (!line_ok(line))
				return -EINVAL;
		}
		add_bytes(b, addr, next, delta == LT_310_NONE ? LT_NO_LINE : (int32_t)line);
		addr = next;
	}
	return 0;
}

static int walk_old(int format, const uint8_t *buf, size_t len, int32_t first,
		    int64_t code_bytes, struct lt_build *b)
{
	if (len & 1)
		return -EINVAL;	/* pairs only: CPython never writes half of one */
	if (format == LINETABLE_LNOTAB)
		return walk_lnotab(buf, len, first, code_bytes, b);
	return walk_310(buf, len, first, code_bytes, b);
}

static int decode_old(int format, const uint8_t *buf, size_t len, int32_t first,
		      int32_t code_units, struct linetable *out)
{
	int64_t code_bytes = code_units > 0 ? 2 * (int64_t)code_units : 0;
	struct lt_build b = { .r = NULL, .n = 0, .last = 0 };
	size_t n;

	if (walk_old(format, buf, len, first, code_bytes, &b))
		return -EINVAL;
	if (!b.n)
		return 0;
	n = b.n;
	b.r = calloc(n, sizeof(*b.r));
	if (!b.r)
		return -ENOMEM;
	b.n = 0;
	if (walk_old(format, buf, len, first, code_bytes, &b) || b.n != n) {
		free(b.r);
		return -EINVAL;
	}
	out->r = b.r;
	out->n = n;
	return 0;
}

int linetable_decode_fmt(int format, const uint8_t *buf, size_t len, int32_t firstlineno,
			 int32_t code_units, struct linetable *out)
{
	if (format == LINETABLE_LOCATIONS)
		return linetable_decode(buf, len, firstlineno, out);
	if (!out)
		return -EINVAL;
	out->r = NULL;
	out->n = 0;
	out->firstlineno = firstlineno;
	if ((format != LINETABLE_LNOTAB && format != LINETABLE_310) || (!buf && len) ||
	    len > LINETABLE_MAX_BYTES || code_units < 0)
		return -EINVAL;
	return decode_old(format, buf, len, firstlineno, code_units, out);
}
