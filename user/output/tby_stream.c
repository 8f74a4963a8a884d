// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The recording while the run goes on (doc/tby-format.md, "Streaming"):
 * each snapshot of the profile is appended as a journal segment, the
 * difference from what the file already holds: new strings, frames, rows
 * and threads, the rows' count changes, the ticks not written yet. The
 * journal keeps its own tables (frames interned, rows by what they show),
 * append-only, so that every id in the file stays valid: a run killed
 * with SIGKILL leaves a file that replays up to its last segment. A run
 * that ends normally writes the whole recording over it (output_binary).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "output/tby.h"
#include "output/tby_writer.h"
#include "util.h"

struct tby_stream {
	struct tby_writer w;
	struct resolved j;	/* the journal's tables, as written */
	struct hmap rows;	/* (hash, probe) -> 1 + row of j */
	struct hmap threads;	/* (hash, probe) -> 1 + thread of j */
	struct hmap ticks;	/* (time, end, tid:cpu) -> 1: written */
	size_t nframes, nrows, nthreads;	/* written */
	size_t rows_cap, threads_cap;
	uint64_t *snap;		/* by row of j: its count in this snapshot */
	size_t snap_cap;
	int started;
};

struct tby_stream *tby_stream_new(FILE *out)
{
	struct tby_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	if (tby_writer_init(&st->w, out) || resolved_init(&st->j) ||
	    hmap_init(&st->rows, 2 * sizeof(uint64_t)) ||
	    hmap_init(&st->threads, 2 * sizeof(uint64_t)) ||
	    hmap_init(&st->ticks, 3 * sizeof(uint64_t))) {
		tby_stream_free(st);
		errno = ENOMEM;
		return NULL;
	}
	return st;
}

void tby_stream_free(struct tby_stream *st)
{
	if (!st)
		return;
	tby_writer_free(&st->w);
	resolved_free(&st->j);
	hmap_free(&st->rows);
	hmap_free(&st->threads);
	hmap_free(&st->ticks);
	free(st->snap);
	free(st);
}

static int same_row(const struct rsample *a, const struct rsample *b)
{
	return a->proc == b->proc && a->tid == b->tid && a->flags == b->flags &&
	       a->depth == b->depth && !(a->tname ? !b->tname || strcmp(a->tname, b->tname) :
				       !!b->tname) &&
	       !memcmp(a->frames, b->frames, a->depth * sizeof(*a->frames));
}

static uint64_t row_hash(const struct rsample *s)
{
	uint64_t h = hash_bytes(s->frames, s->depth * sizeof(*s->frames));

	h = h * 31 + ((uint64_t)s->proc << 32 | s->tid);
	h = h * 31 + s->flags;
	return s->tname ? h * 31 + hash_bytes(s->tname, strlen(s->tname)) : h;
}

/* s's frames as the journal's own; NULL with errno. */
static struct rframe **journal_frames(struct tby_stream *st, const struct rsample *s)
{
	struct rframe **fr = calloc(s->depth + 1, sizeof(*fr));
	uint32_t i;

	for (i = 0; fr && i < s->depth; i++) {
		const struct rframe *f = s->frames[i];

		fr[i] = resolved_intern_op(&st->j, f->name, f->file, f->line, f->firstlineno,
					   f->op);
		if (!fr[i]) {
			free(fr);
			return NULL;
		}
	}
	return fr;
}

/* The journal's row of snapshot row s, added (count 0) if new; -ENOMEM. */
static int64_t journal_row(struct tby_stream *st, const struct rsample *s)
{
	struct rsample key = *s, *slot;
	uint64_t hk[2];
	void **v;
	int added;

	key.frames = journal_frames(st, s);
	if (!key.frames)
		return -ENOMEM;
	hk[0] = row_hash(&key);
	for (hk[1] = 0;; hk[1]++) {
		v = hmap_put(&st->rows, hk, &added);
		if (!v || added)
			break;
		if (same_row(&st->j.samples[(uintptr_t)*v - 1], &key)) {
			free(key.frames);
			return (int64_t)(uintptr_t)*v - 1;
		}
	}
	slot = v ? resolved_slot(&st->j) : NULL;
	if (!slot || array_grow(&st->snap, &st->snap_cap, st->j.nsamples + 1, sizeof(*st->snap),
				256) || (s->tname && !(key.tname = strdup(s->tname)))) {
		free(key.frames);
		return -ENOMEM;
	}
	key.count = 0;
	*slot = key;
	st->snap[st->j.nsamples] = 0;
	*v = (void *)(uintptr_t)++st->j.nsamples;
	return (int64_t)st->j.nsamples - 1;
}

/* The journal's thread of t, added if new; -ENOMEM. */
static int64_t journal_thread(struct tby_stream *st, const struct rthread *t)
{
	struct resolved *j = &st->j;
	uint64_t hk[2] = { ((uint64_t)t->proc << 32 | t->tid) * 31 +
			   (t->name ? hash_bytes(t->name, strlen(t->name)) : 0), 0 };
	const struct rthread *o;
	void **v;
	int added;

	for (;; hk[1]++) {
		v = hmap_put(&st->threads, hk, &added);
		if (!v)
			return -ENOMEM;
		if (added)
			break;
		o = &j->threads[(uintptr_t)*v - 1];
		if (o->proc == t->proc && o->tid == t->tid &&
		    !(o->name ? !t->name || strcmp(o->name, t->name) : !!t->name))
			return (int64_t)(uintptr_t)*v - 1;
	}
	if (array_grow(&j->threads, &st->threads_cap, j->nthreads + 1, sizeof(*j->threads), 16))
		return -ENOMEM;
	j->threads[j->nthreads] = (struct rthread){ .proc = t->proc, .tid = t->tid,
						    .name = t->name ? strdup(t->name) : NULL };
	if (t->name && !j->threads[j->nthreads].name)
		return -ENOMEM;
	*v = (void *)(uintptr_t)++j->nthreads;
	return (int64_t)j->nthreads - 1;
}

/* Each snapshot row's journal row into map; their counts into st->snap. */
static int map_rows(struct tby_stream *st, const struct resolved *r, uint32_t *map)
{
	size_t i;

	if (st->j.nsamples)
		memset(st->snap, 0, st->j.nsamples * sizeof(*st->snap));
	for (i = 0; i < r->nsamples; i++) {
		int64_t row = journal_row(st, &r->samples[i]);

		if (row < 0)
			return (int)row;
		map[i] = (uint32_t)row;
		st->snap[row] += r->samples[i].count;
	}
	for (i = st->nrows; i < st->j.nsamples; i++) {
		st->j.samples[i].count = st->snap[i];
		st->j.total += st->snap[i];
	}
	return 0;
}

/* COUNTS: how the counts of rows already written changed since. */
static void write_counts(struct tby_stream *st)
{
	struct rsample *rows = st->j.samples;
	size_t i, n = 0;

	for (i = 0; i < st->nrows; i++)
		n += st->snap[i] != rows[i].count;
	if (!n)
		return;
	tby_put_varint(&st->w.rec, n);
	for (i = 0; i < st->nrows; i++) {
		if (st->snap[i] == rows[i].count)
			continue;
		tby_put_varint(&st->w.rec, i);
		tby_put_signed(&st->w.rec, (int64_t)(st->snap[i] - rows[i].count));
		st->j.total += st->snap[i] - rows[i].count;
		rows[i].count = st->snap[i];
	}
	tby_end_record(&st->w, TBY_COUNTS);
}

/* The snapshot's ticks not written yet, in the journal's rows and threads. */
static int new_ticks(struct tby_stream *st, const struct resolved *r, const uint32_t *rows,
		     struct rtick *out, size_t *n)
{
	size_t i;

	*n = 0;
	for (i = 0; i < r->nticks; i++) {
		const struct rtick *k = &r->ticks[i];
		uint64_t key[3] = { k->t_ns, k->end_ns, (uint64_t)k->tid << 32 | k->cpu };
		int64_t th;
		int added;

		if (!hmap_put(&st->ticks, key, &added))
			return -ENOMEM;
		if (!added)
			continue;
		th = journal_thread(st, &r->threads[k->thread]);
		if (th < 0)
			return (int)th;
		out[*n] = *k;
		out[*n].sample = rows[k->sample];
		out[(*n)++].thread = (uint32_t)th;
	}
	return 0;
}

static int write_segment(struct tby_stream *st, const struct resolved *r, uint32_t *rows,
			 struct rtick *ticks)
{
	struct tby_writer *w = &st->w;
	size_t nticks;
	int ret;

	if (!st->started) {
		st->started = 1;
		tby_write_header(w);
		tby_write_meta(w, r);
	}
	tby_put_f64(&w->rec, r->duration_s);
	tby_end_record(w, TBY_JOURNAL);
	tby_write_procs(w, r);
	ret = map_rows(st, r, rows) ?: new_ticks(st, r, rows, ticks, &nticks);
	if (ret)
		return ret;
	tby_write_frames(w, &st->j, st->nframes);
	tby_write_samples(w, &st->j, st->nrows);
	write_counts(st);
	tby_write_threads(w, &st->j, st->nthreads);
	tby_write_ticks(w, &st->j, ticks, nticks);
	st->nframes = st->j.nframes;
	st->nrows = st->j.nsamples;
	st->nthreads = st->j.nthreads;
	if (!w->err)
		w->err = tby_flush_chunk(w);
	if (!w->err && fflush(w->out))
		w->err = -EPIPE;
	return w->err;
}

int tby_stream_started(const struct tby_stream *st)
{
	return st->started;
}

int tby_stream_append(struct tby_stream *st, const struct resolved *r)
{
	uint32_t *rows;
	struct rtick *ticks;
	int ret;

	if (st->w.err)
		return st->w.err;
	if (resolved_check(r))
		return -EINVAL;
	rows = calloc(r->nsamples + 1, sizeof(*rows));
	ticks = calloc(r->nticks + 1, sizeof(*ticks));
	ret = rows && ticks ? write_segment(st, r, rows, ticks) : -ENOMEM;
	free(rows);
	free(ticks);
	if (ret)
		st->w.err = ret;
	return ret;
}
