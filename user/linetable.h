/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Decoders for the CPython 3.11+ location table (code.co_linetable, PEP 626
 * and PEP 657), 3.10's co_linetable and 3.8/3.9's co_lnotab. Only line
 * numbers are kept: columns are parsed and dropped.
 *
 * The table is read from another process, so it is treated as untrusted:
 * decoding never reads outside the buffer, does work linear in its length
 * and rejects anything CPython could not have written.
 */
#ifndef TACHYON_LINETABLE_H
#define TACHYON_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* Longer tables are refused: no real co_linetable comes close. */
#define LINETABLE_MAX_BYTES	(16u << 20)

/* Instructions [start, end), in code units, all on `line`; -1 = no line. */
struct lt_range {
	int32_t start, end;
	int32_t line;
};

/* Sorted, contiguous ranges starting at 0; adjacent ranges differ in line. */
struct linetable {
	struct lt_range *r;
	size_t n;
	int32_t firstlineno;
};

/*
 * Decode a 3.11+ co_linetable. Returns 0, -EINVAL on malformed input (truncated
 * varint, bad entry header, overflow) or -ENOMEM. Never reads
 * outside buf[0..len). On error *out is empty and needs no free.
 */
int linetable_decode(const uint8_t *buf, size_t len, int32_t firstlineno,
		     struct linetable *out);

/* How a version encodes lines: the table at co_linetable (co_lnotab). */
enum linetable_format {
	LINETABLE_LOCATIONS = 0,	/* 3.11+ location table (above) */
	LINETABLE_LNOTAB,		/* 3.8, 3.9 co_lnotab */
	LINETABLE_310,			/* 3.10 co_linetable */
};

/*
 * Decode a table of any format into code-unit ranges. The 3.8-3.10 tables
 * count bytes (two per code unit). co_lnotab does not say where the code
 * ends: code_units, if not 0, closes its last range there (and a table
 * that goes past it is refused); 0 leaves the last line running on. Same
 * returns and guarantees as linetable_decode().
 */
int linetable_decode_fmt(int format, const uint8_t *buf, size_t len, int32_t firstlineno,
			 int32_t code_units, struct linetable *out);

/*
 * Line of instruction index idx (code units). idx < 0 (a frame that has not
 * started) gives firstlineno; past the end or a no-line range gives -1.
 */
int32_t linetable_line(const struct linetable *lt, int32_t idx);

void linetable_free(struct linetable *lt);

#endif /* TACHYON_LINETABLE_H */
