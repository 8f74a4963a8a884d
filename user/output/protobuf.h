/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A tiny protocol buffers encoder: just what pprof needs. Messages are built
 * into one growing buffer; a nested message (or a packed repeated field) is
 * opened with pb_begin() and closed with pb_end(), which writes its length.
 * Allocation failure sticks in ->err (ENOMEM); check it once at the end.
 */
#ifndef TB_OUTPUT_PROTOBUF_H
#define TB_OUTPUT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

struct pb {
	uint8_t *buf;
	size_t len;
	size_t cap;
	int err;
};

enum pb_wire {
	PB_VARINT = 0,
	PB_LEN = 2,
};

void pb_init(struct pb *b);
void pb_free(struct pb *b);
void pb_reset(struct pb *b);	/* empty it, keep the memory */
/* A bare varint: an element of a packed field. */
void pb_varint(struct pb *b, uint64_t v);
/* Fields: uint64/int64 (negative int64s take ten bytes, as in protobuf). */
void pb_uint(struct pb *b, uint32_t field, uint64_t v);
void pb_int(struct pb *b, uint32_t field, int64_t v);
void pb_bytes(struct pb *b, uint32_t field, const void *p, size_t n);
void pb_string(struct pb *b, uint32_t field, const char *s);
/* Open a length-delimited field; returns the mark pb_end() takes. */
size_t pb_begin(struct pb *b, uint32_t field);
void pb_end(struct pb *b, size_t mark);

#endif
