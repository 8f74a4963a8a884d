// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * PyUnicode / bytes decoding from copied object bytes.
 *
 * A compact str keeps its characters right after the header: after
 * PyASCIIObject when the ascii bit is set, after PyCompactUnicodeObject
 * otherwise, `length` characters of `kind` bytes each. Non-compact strings
 * (str subclasses, 3.11 legacy strings) keep a pointer there instead; code
 * object names and filenames are always compact, so we refuse the others
 * rather than chase a pointer read from a racing process.
 */
#include <errno.h>
#include <string.h>

#include "pystr.h"
#include "util.h"

/* Bits of the (shifted) state word; only its low byte is meaningful. */
#define PYSTR_KIND_SHIFT	2
#define PYSTR_KIND_MASK		7
#define PYSTR_COMPACT		(1u << 5)
#define PYSTR_ASCII		(1u << 6)

#define UTF8_REPLACEMENT	0xfffd

/* The n bytes at off are inside the copy of the object. */
static int inside(const uint8_t *obj, size_t have, size_t off, size_t n)
{
	return obj && off + n <= have;
}

int pystr_locate(const struct pystr_layout *l, const uint8_t *obj, size_t have,
		 size_t max_len, size_t *data_off, size_t *nbytes, int *kind,
		 int *ascii)
{
	uint32_t state;
	int64_t len;
	int k, is_ascii;

	if (!l || l->state_shift >= 32 || !inside(obj, have, l->length, sizeof(len)) ||
	    !inside(obj, have, l->state, sizeof(state)))
		return -EINVAL;
	len = (int64_t)load_u64(obj + l->length);
	state = load_u32(obj + l->state);

	/* The bits above the low byte are padding that holds garbage. */
	state = (state >> l->state_shift) & 0xff;
	k = (state >> PYSTR_KIND_SHIFT) & PYSTR_KIND_MASK;
	is_ascii = !!(state & PYSTR_ASCII);
	if (!(state & PYSTR_COMPACT))
		return -EINVAL;
	if (k != 1 && k != 2 && k != 4)
		return -EINVAL;
	if (is_ascii && k != 1)
		return -EINVAL;
	if (len < 0 || (uint64_t)len > max_len || (uint64_t)len > SIZE_MAX / 4)
		return -EINVAL;

	if (data_off)
		*data_off = is_ascii ? l->ascii_size : l->compact_size;
	if (nbytes)
		*nbytes = (size_t)len * (size_t)k;
	if (kind)
		*kind = k;
	if (ascii)
		*ascii = is_ascii;
	return 0;
}

static uint32_t read_char(const uint8_t *p, int kind)
{
	switch (kind) {
	case 1:
		return p[0];
	case 2:
		return load_u16(p);
	default:
		return load_u32(p);
	}
}

/* Encode cp as UTF-8 into buf (4 bytes); returns the length. */
static size_t utf8_encode(uint32_t cp, uint8_t *buf)
{
	/* Surrogates cannot be encoded: a str may hold lone ones. */
	if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		cp = UTF8_REPLACEMENT;
	if (cp < 0x80) {
		buf[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		buf[0] = (uint8_t)(0xc0 | cp >> 6);
		buf[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		buf[0] = (uint8_t)(0xe0 | cp >> 12);
		buf[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		buf[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	buf[0] = (uint8_t)(0xf0 | cp >> 18);
	buf[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
	buf[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
	buf[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

size_t pystr_to_utf8(const uint8_t *data, size_t nbytes, int kind, char *out,
		     size_t outsz)
{
	size_t i, w = 0;

	if (!out || !outsz)
		return 0;
	out[0] = '\0';
	if (!data || (kind != 1 && kind != 2 && kind != 4))
		return 0;

	/* Whole characters only: a trailing partial one is dropped. */
	for (i = 0; nbytes - i >= (size_t)kind; i += kind) {
		uint8_t buf[4];
		size_t n = utf8_encode(read_char(data + i, kind), buf);

		/* Stop before a character that would not fit with the NUL. */
		if (n >= outsz - w)
			break;
		memcpy(out + w, buf, n);
		w += n;
	}
	out[w] = '\0';
	return w;
}

int pybytes_locate(const struct pystr_layout *l, const uint8_t *obj,
		   size_t have, size_t max_len, size_t *data_off,
		   size_t *nbytes)
{
	int64_t size;

	if (!l || !inside(obj, have, l->bytes_size, sizeof(size)))
		return -EINVAL;
	size = (int64_t)load_u64(obj + l->bytes_size);
	if (size < 0 || (uint64_t)size > max_len)
		return -EINVAL;
	if (data_off)
		*data_off = l->bytes_data;
	if (nbytes)
		*nbytes = (size_t)size;
	return 0;
}
