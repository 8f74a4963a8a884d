// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Protocol buffers wire format, encoding only. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "output/protobuf.h"
#include "util.h"

void pb_init(struct pb *b)
{
	memset(b, 0, sizeof(*b));
}

void pb_free(struct pb *b)
{
	free(b->buf);
	pb_init(b);
}

void pb_reset(struct pb *b)
{
	b->len = 0;
}

/* Room for n more bytes; on failure the buffer stays as it was. */
static int reserve(struct pb *b, size_t n)
{
	if (b->err)
		return -b->err;
	if (array_grow(&b->buf, &b->cap, b->len + n, 1, 256)) {
		b->err = ENOMEM;
		return -ENOMEM;
	}
	return 0;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p = (uint8_t)v;
}

void pb_varint(struct pb *b, uint64_t v)
{
	size_t n = varint_len(v);

	if (reserve(b, n))
		return;
	put_varint(b->buf + b->len, v);
	b->len += n;
}

static void key(struct pb *b, uint32_t field, enum pb_wire wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

void pb_uint(struct pb *b, uint32_t field, uint64_t v)
{
	key(b, field, PB_VARINT);
	pb_varint(b, v);
}

void pb_int(struct pb *b, uint32_t field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

void pb_bytes(struct pb *b, uint32_t field, const void *p, size_t n)
{
	key(b, field, PB_LEN);
	pb_varint(b, n);
	if (reserve(b, n))
		return;
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

void pb_string(struct pb *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/*
 * One byte is kept for the length, enough for most messages; pb_end() moves
 * the body up when the length needs more, so lengths stay minimal varints.
 */
size_t pb_begin(struct pb *b, uint32_t field)
{
	key(b, field, PB_LEN);
	if (reserve(b, 1))
		return b->len;
	b->buf[b->len++] = 0;
	return b->len;
}

void pb_end(struct pb *b, size_t mark)
{
	size_t body, n;

	if (b->err)
		return;
	body = b->len - mark;
	n = varint_len(body);
	if (n > 1) {
		if (reserve(b, n - 1))
			return;
		memmove(b->buf + mark + n - 1, b->buf + mark, body);
		b->len += n - 1;
	}
	put_varint(b->buf + mark - 1, body);
}
