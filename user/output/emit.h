/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers the writers share: a stream whose first error sticks (so a long
 * writer checks once, at the end, and still reports the errno of the write
 * that failed, EPIPE included), XML and JSON string escaping over UTF-8
 * that may be invalid, and a function table (frames grouped by function).
 */
#ifndef TB_OUTPUT_EMIT_H
#define TB_OUTPUT_EMIT_H

#include <stdint.h>
#include <stdio.h>
#include "profile.h"

struct emit {
	FILE *f;
	int err;	/* errno of the first failed write, 0 if none */
};

void emit_init(struct emit *e, FILE *f);
void emit_printf(struct emit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void emit_write(struct emit *e, const void *p, size_t n);
void emit_str(struct emit *e, const char *s);
/* Text with controls as spaces and bad UTF-8 as U+FFFD: one line, printable. */
void emit_text(struct emit *e, const char *s);
/* Text escaped for XML character data and attribute values. */
void emit_xml(struct emit *e, const char *s);
/* A JSON string literal, quotes included. */
void emit_json(struct emit *e, const char *s);
/* Flush; 0, or -1 with errno set to the first error. */
int emit_done(struct emit *e);

/*
 * Next code point of a NUL-terminated UTF-8 string: returns the number of
 * bytes it takes (0 at the end) and stores it in *cp. Malformed bytes
 * (overlong forms, surrogates, stray continuation bytes) count as one byte
 * of U+FFFD, so any byte string comes out as valid UTF-8.
 */
size_t utf8_next(const char *s, uint32_t *cp);

/* Frames grouped into functions: same name, file and first line. */
struct func_table {
	uint32_t *of_frame;		/* rframe id -> function index */
	const struct rframe **funcs;	/* a frame of each function, sorted by name, file */
	size_t n;
};

int funcs_build(const struct resolved *r, struct func_table *ft);
void funcs_free(struct func_table *ft);

/* Each frame's rank when sorted by name, file, line (malloc'd, by id). */
uint32_t *frames_rank(const struct resolved *r);

/* Every sample's frames are r->frames[f->id]: what the writers rely on. */
int resolved_check(const struct resolved *r);

/* Frames the profiler made up rather than read: [truncated], <unknown 0x..>. */
int frame_is_marker(const struct rframe *f);

#endif
