/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The binary recording (.tby, doc/tby-format.md): the resolved profile
 * (output/model.h) as it was handed to the writers, so that replaying it
 * through any writer gives the bytes the live run gave.
 *
 * Errors: 0 on success, a negative errno on failure.
 */
#ifndef TB_OUTPUT_TBY_H
#define TB_OUTPUT_TBY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "output/model.h"
#include "output/tby_ticks.h"

#define TBY_MAGIC	"TBY\x1a"
#define TBY_VERSION	2
#define TBY_HEADER_SIZE	8	/* magic, version, 3 bytes zero */
#define TBY_CHUNK_HEAD	12	/* raw size, compressed size, CRC-32 of the raw bytes */
/* A chunk's records decompressed: the writer closes one past 64 KiB; a
 * reader refuses more than this (a zlib bomb, not a recording). */
#define TBY_CHUNK_MAX	(16u << 20)

enum tby_record {
	TBY_META = 1,
	TBY_PROCS = 2,
	TBY_STRINGS = 3,
	TBY_FRAMES = 4,
	TBY_SAMPLES = 5,
	TBY_THREADS = 6,
	TBY_TICKS = 7,		/* version 1's (read, no longer written) */
	TBY_TICKS2 = 8,
	TBY_JOURNAL = 9,	/* a streamed segment begins (tby_stream.c) */
	TBY_COUNTS = 10,	/* a streamed segment's count changes */
	TBY_END = 15,
};

/* A recording read back: the profile and what its header says. */
struct tby_file {
	struct resolved r;	/* event, mode, rate_text point into the fields below */
	char *tool;		/* "tachyon-bpf 0.1.0" */
	char *kernel;		/* "Linux 6.18.0 x86_64" */
	char *event, *mode, *rate_text;
	int partial;		/* no end record: a run that was cut short */
	size_t chunks;		/* complete chunks read */
	/* while reading */
	char **strs;
	size_t nstr, str_cap, frames_cap, threads_cap, ticks_cap;
	struct tby_tick_state tstate;	/* what TICKS2 columns predict from */
};

/*
 * The recording while the run goes on: each call appends what changed
 * since the last (a journal segment) to out, flushed. 0, or the writer's
 * error (then every later call fails with it). output_binary over the
 * same file at the end writes the whole recording instead.
 */
struct tby_stream;
struct tby_stream *tby_stream_new(FILE *out);
int tby_stream_append(struct tby_stream *st, const struct resolved *r);
/* 1 once a segment went out (the file then is the stream's). */
int tby_stream_started(const struct tby_stream *st);
void tby_stream_free(struct tby_stream *st);

/* Write r as a recording. 0, -EPIPE, -ENOMEM or -EIO. */
int output_binary(FILE *out, const struct resolved *r);
/*
 * Read a recording from data[0..len). 0: f filled (f->partial if it ends
 * early, at a chunk boundary or inside a chunk); -EPROTONOSUPPORT: a newer
 * format version; -EINVAL: not a recording, or corrupt; -ENOMEM. On failure
 * why says what, and f is freed.
 */
int tby_read(const uint8_t *data, size_t len, struct tby_file *f, char *why, size_t whylen);
void tby_free(struct tby_file *f);

#endif
