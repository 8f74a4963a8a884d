// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fuzz the str/bytes readers (user/pystr.c) the way user/symbols.c drives
 * them: locate the data in the first bytes of an object copied from the
 * target, then convert the characters to UTF-8.
 *
 * Input: byte 0 picks the layout (3.11, 3.12/3.13, 3.15, 3.14t, or one
 * made of the next 11 bytes), byte 1 the character limit and the output
 * size, the rest is the object (header, then data).
 *
 * Properties: locate never reports data it did not validate (kind 1/2/4,
 * nbytes = length * kind <= limit * 4); conversion always yields valid,
 * terminated UTF-8 that fits the buffer; a smaller buffer yields a prefix of
 * the full conversion, cut on a character boundary; a buffer of
 * 4 * characters + 1 (what symbols.c allocates) converts everything.
 */
#include "fuzz.h"
#include "outcheck.h"
#include "pystr.h"

static const struct pystr_layout layouts[] = {
	/* length, state, ascii_size, compact_size, shift, bytes size, data */
	{ 16, 32, 48, 72, 0, 16, 32 },	/* 3.11 */
	{ 16, 32, 40, 56, 0, 16, 32 },	/* 3.12, 3.13, 3.14 */
	{ 16, 32, 48, 64, 0, 16, 32 },	/* 3.15 (fakepy) */
	{ 16, 32, 40, 56, 6, 16, 32 },	/* 3.14t: kind at bits 8-10 */
};
#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

static void convert(const uint8_t *d, size_t nbytes, int kind, size_t outsz)
{
	size_t nchars = nbytes / kind, full_sz = nchars * 4 + 1, n, m;
	char *full = malloc(full_sz), *part = malloc(outsz ? outsz : 1);

	FUZZ_CHECK(full && part, "malloc");
	memset(full, 0x55, full_sz);
	n = pystr_to_utf8(d, nbytes, kind, full, full_sz);
	FUZZ_CHECK(n < full_sz && full[n] == 0, "%zu bytes into %zu", n, full_sz);
	FUZZ_CHECK(oc_utf8_valid((const uint8_t *)full, n), "invalid UTF-8 out");
	/* every character is 1-4 bytes: the whole string fits */
	FUZZ_CHECK(n >= nchars && n <= nchars * 4, "%zu chars gave %zu bytes", nchars, n);

	memset(part, 0x55, outsz ? outsz : 1);
	m = pystr_to_utf8(d, nbytes, kind, part, outsz);
	if (!outsz) {
		FUZZ_CHECK(m == 0, "wrote %zu bytes into nothing", m);
	} else {
		FUZZ_CHECK(m < outsz && part[m] == 0, "%zu bytes into %zu", m, outsz);
		FUZZ_CHECK(m <= n && !memcmp(part, full, m), "not a prefix");
		/* cut on a boundary: the next byte of the full string starts a character */
		FUZZ_CHECK(m == n || (full[m] & 0xc0) != 0x80, "cut inside a character");
		/* and only when the next character did not fit */
		FUZZ_CHECK(m == n || outsz - m <= 4, "stopped early: %zu of %zu, room %zu",
			   m, n, outsz - m);
	}
	free(full);
	free(part);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pystr_layout custom;
	const struct pystr_layout *l;
	size_t max_len, outsz, off = 0, nbytes = 0, boff = 0, blen = 0, have;
	const uint8_t *obj;
	int kind = 0, ascii = 0;
	struct fz f;
	uint8_t sel, lim;

	fz_init(&f, data, size);
	sel = fz_u8(&f);
	lim = fz_u8(&f);
	if (sel % 5 < NLAYOUTS) {
		l = &layouts[sel % 5];
	} else {
		custom.length = fz_u16(&f) % 512;
		custom.state = fz_u16(&f) % 512;
		custom.ascii_size = fz_u16(&f) % 512;
		custom.compact_size = fz_u16(&f) % 512;
		custom.state_shift = fz_u8(&f) % 40;	/* >= 32 must be refused */
		custom.bytes_size = fz_u16(&f) % 512;
		custom.bytes_data = custom.bytes_size + 8;
		l = &custom;
	}
	max_len = lim & 0x80 ? 4096 : lim;
	outsz = (size_t)(lim & 0x3f) * 3;
	obj = f.p;
	have = f.left;

	if (!pystr_locate(l, obj, have, max_len, &off, &nbytes, &kind, &ascii)) {
		FUZZ_CHECK(kind == 1 || kind == 2 || kind == 4, "kind %d", kind);
		FUZZ_CHECK(!ascii || kind == 1, "ascii with kind %d", kind);
		FUZZ_CHECK(nbytes % kind == 0 && nbytes / kind <= max_len,
			   "%zu bytes of kind %d, limit %zu", nbytes, kind, max_len);
		FUZZ_CHECK(off == (ascii ? l->ascii_size : l->compact_size), "data at %zu", off);
		FUZZ_CHECK(l->state_shift < 32, "accepted shift %u", l->state_shift);
		/* The data as symbols.c has it: from the peeked bytes when they cover it. */
		if (off <= have && nbytes <= have - off)
			convert(obj + off, nbytes, kind, outsz);
	}
	/* Any bytes as any kind, including a trailing partial character. */
	convert(obj, have, 1 + (sel >> 7) * (1 + ((sel >> 6) & 1) * 2), outsz);

	if (!pybytes_locate(l, obj, have, max_len, &boff, &blen)) {
		FUZZ_CHECK(blen <= max_len, "bytes length %zu > %zu", blen, max_len);
		FUZZ_CHECK(boff == l->bytes_data, "bytes data at %zu", boff);
	}
	return 0;
}
