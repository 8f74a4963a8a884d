/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers the writers share: a stream whose first error sticks (so a long
 * writer checks once, at the end, and still reports the errno of the write
 * that failed, EPIPE included); XML and JSON escaping of UTF-8 that may be
 * invalid; frames and samples in label order.
 */
#ifndef TB_OUTPUT_EMIT_H
#define TB_OUTPUT_EMIT_H

#include <stdint.h>
#include <stdio.h>
#include "output/model.h"

struct emit {
	FILE *f;
	int err;	/* errno of the first failed write, 0 if none */
};

void emit_init(struct emit *e, FILE *f);
void emit_printf(struct emit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void emit_write(struct emit *e, const void *p, size_t n);
void emit_str(struct emit *e, const char *s);
/* A decimal number, after sep unless sep is 0: cheaper than printf in bulk. */
void emit_u64(struct emit *e, char sep, uint64_t v);
/* Text with controls as spaces and bad UTF-8 as U+FFFD: one line, printable. */
void emit_text(struct emit *e, const char *s);
/* Text escaped for XML character data and attribute values. */
void emit_xml(struct emit *e, const char *s);
/* A JSON string literal, quotes included. */
void emit_json(struct emit *e, const char *s);
/* One JSON string literal of s followed by tail. */
void emit_json_cat(struct emit *e, const char *s, const char *tail);
/* Flush; 0, or the first error as a negative errno. */
int emit_done(struct emit *e);

/*
 * Next code point of a NUL-terminated UTF-8 string: returns the number of
 * bytes it takes (0 at the end) and stores it in *cp. Malformed bytes
 * (overlong forms, surrogates, stray continuation bytes) count as one byte
 * of U+FFFD, so any byte string comes out as valid UTF-8.
 */
size_t utf8_next(const char *s, uint32_t *cp);

/* Each frame's rank when sorted by name, file, line (malloc'd, by id). */
uint32_t *frames_rank(const struct resolved *r);

/* "pid 123 app.py (Python 3.13.0)"; the name is left out when unknown. */
void proc_describe(const struct rproc *p, char *out, size_t len);
/* "; pid 1 (Python 3.13.0), pid 2 (...)": the first few processes. */
void emit_procs(struct emit *e, const struct resolved *r, int xml);

/*
 * Sample indexes sorted by stack, frame by frame from the root in label
 * order (and first by pid and tid if by_thread), a stack after those that
 * extend it: stacks sharing a prefix end up next to each other.
 * malloc'd; NULL with errno set on failure (EINVAL: the profile fails
 * resolved_check()).
 */
size_t *samples_sorted(const struct resolved *r, int by_thread);

/*
 * Frames with no source file: made up by the profiler ([truncated],
 * <unknown 0x..>, <GC>, process and thread roots) or kernel functions.
 */
int frame_is_marker(const struct rframe *f);
/*
 * The end of a frame label: ":LINE)", or ")" when the profile has no lines
 * (--nolineno). `line` is the frame's line or its function's first line.
 */
void frame_tail(const struct rframe *f, int32_t line, char *out, size_t len);
/* " [BINARY_OP_ADD_INT]" after a label with --opcodes, else "". */
void frame_op_suffix(const struct rframe *f, char *out, size_t len);
/* Room for frame_op_suffix(): the longest names are about 45 bytes. */
#define FRAME_OP_MAX	80
/* A kernel function, "name [k]". */
int frame_is_kernel(const struct rframe *f);

/* What a count means, for titles: "wall mode, cpu-clock, -F 999", or
 * "cpu-clock at 999 Hz" when the mode is not known. */
void resolved_what(const struct resolved *r, char *buf, size_t len);

/* --timeline helpers (resolved.ticks). */

/* Seconds one sample period stands for: 1 / rate. */
double resolved_period_s(const struct resolved *r);
/* A thread's display name: its Python name, else "tid N". */
void thread_describe(const struct rthread *t, char *out, size_t len);
/* The tid a trace viewer keys a track by: the thread's own, and for a
 * waiting task's lane one no thread has (the lane above the 32 bits). */
uint64_t thread_track_id(const struct rthread *t);

/* The ticks of each thread, in time order: thread t's are
 * idx[start[t] .. start[t + 1]). */
struct tick_groups {
	size_t *idx;
	size_t *start;
};

/* 0, or -ENOMEM/-EINVAL (the profile fails resolved_check()). */
int ticks_by_thread(const struct resolved *r, struct tick_groups *g);
void tick_groups_free(struct tick_groups *g);

#endif
