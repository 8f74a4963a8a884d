/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The recording's writer, inside: shared by the one-shot writer
 * (tby_write.c, output_binary) and the stream a run appends to while it
 * records (tby_stream.c). Not for the writers of other formats.
 */
#ifndef TB_OUTPUT_TBY_WRITER_H
#define TB_OUTPUT_TBY_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include "hmap.h"
#include "output/model.h"
#include "output/tby_ticks.h"

struct tbuf {
	uint8_t *p;
	size_t n, cap;
	int err;
};

struct tby_writer {
	FILE *out;
	struct tbuf chunk;	/* records of the chunk being filled */
	struct tbuf rec;	/* the record being built */
	struct tbuf strs;	/* strings it interned, not yet written */
	size_t nstrs;		/* ... how many */
	struct hmap ids;	/* (hash, probe) -> 1 + string id */
	const char **strings;	/* by id: the profile's own strings */
	size_t nids, ids_cap;
	struct tby_tick_state ticks;	/* what the tick columns predict from */
	int err;
};

int tby_writer_init(struct tby_writer *w, FILE *out);
void tby_writer_free(struct tby_writer *w);
uint64_t tby_zigzag(int64_t v);
void tby_put_varint(struct tbuf *b, uint64_t v);
void tby_put_signed(struct tbuf *b, int64_t v);
void tby_put_f64(struct tbuf *b, double d);
/* The record in w->rec, after the strings it introduced; a full chunk goes out. */
void tby_end_record(struct tby_writer *w, int type);
/* The chunk so far, compressed, to the file. */
int tby_flush_chunk(struct tby_writer *w);
int tby_write_header(struct tby_writer *w);
void tby_write_meta(struct tby_writer *w, const struct resolved *r);
void tby_write_procs(struct tby_writer *w, const struct resolved *r);
/* The tables from entry `from` on (the strings they name go first). */
void tby_write_frames(struct tby_writer *w, const struct resolved *r, size_t from);
void tby_write_samples(struct tby_writer *w, const struct resolved *r, size_t from);
void tby_write_threads(struct tby_writer *w, const struct resolved *r, size_t from);
/* Ticks t[0..n) of r's rows and threads. */
void tby_write_ticks(struct tby_writer *w, const struct resolved *r, const struct rtick *t,
		     size_t n);

#endif
