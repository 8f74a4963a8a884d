/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Checkers of what the writers produce, shared by the unit tests
 * (tests/unit/test_output_formats.c) and the fuzz targets
 * (tests/fuzz/fuzz_output.c): UTF-8, control characters, XML nesting and
 * escaping, JSON syntax, gzip, and a protobuf wire-format reader. Each
 * works on a buffer and its length (no NUL needed) and says what is wrong
 * rather than asserting, so either harness reports it its own way.
 */
#ifndef TB_TESTS_OUTCHECK_H
#define TB_TESTS_OUTCHECK_H

#include <stddef.h>
#include <stdint.h>

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
int oc_utf8_valid(const uint8_t *s, size_t n);
/* A control character but newline (and tab if allow_tab), or DEL. */
int oc_has_controls(const char *s, size_t n, int allow_tab);

/*
 * Well-formed enough XML: tags nest and close by name, <?...?> and CDATA
 * skipped, outside CDATA every '&' starts an entity (in attributes too)
 * and no '>' stands outside a tag. NULL if so, else why, with the byte
 * offset in *at.
 */
const char *oc_xml(const char *s, size_t n, size_t *at);
/* One JSON value and nothing but white space after it: NULL, or why and where. */
const char *oc_json(const char *s, size_t n, size_t *at);

/* The gunzipped bytes of a gzip stream (malloc'd), at most max; NULL if bad. */
uint8_t *oc_gunzip(const void *in, size_t n, size_t max, size_t *out_len);

/* A protobuf message being read. */
struct pb_rd {
	const uint8_t *p, *end;
};

/* A varint: 0, or -1 when it runs past the end or over 64 bits. */
int pb_rd_varint(struct pb_rd *r, uint64_t *v);
/*
 * The next field: 1, 0 at the end, -1 if malformed (field 0, a group, a
 * length past the end). *wire is 0 (varint in *v), 1 or 5 (the fixed
 * bits in *v) or 2 (the bytes in *sub).
 */
int pb_rd_field(struct pb_rd *r, uint32_t *field, int *wire, uint64_t *v, struct pb_rd *sub);

#endif
