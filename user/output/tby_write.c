// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The binary recording's writer (doc/tby-format.md): records of varints,
 * batched into zlib-compressed chunks that each stand alone, so a file cut
 * short still reads up to its last complete chunk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <zlib.h>
#include "hmap.h"
#include "output/tby.h"
#include "util.h"

#ifndef TB_VERSION
#define TB_VERSION "0.1.0"
#endif

#define CHUNK_RAW	(64u << 10)	/* close a chunk past this many bytes */
#define BATCH		1024		/* frames or samples per record */
#define TICK_BATCH	4096

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
	int err;
};

static void put_bytes(struct tbuf *b, const void *p, size_t n)
{
	if (b->err || array_grow(&b->p, &b->cap, b->n + n, 1, 4096)) {
		b->err = -ENOMEM;
		return;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put_varint(struct tbuf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	put_bytes(b, tmp, n);
}

/* Signed values zigzag-encoded: small magnitudes stay short. */
static void put_signed(struct tbuf *b, int64_t v)
{
	put_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_str(struct tbuf *b, const char *s)
{
	size_t n = strlen(s);

	put_varint(b, n);
	put_bytes(b, s, n);
}

/* NULL as 0, a string as its length + 1. */
static void put_opt_str(struct tbuf *b, const char *s)
{
	if (!s) {
		put_varint(b, 0);
		return;
	}
	put_varint(b, strlen(s) + 1);
	put_bytes(b, s, strlen(s));
}

/* A double as its IEEE-754 bits, little-endian: replay gets it exactly. */
static void put_f64(struct tbuf *b, double d)
{
	uint64_t u;
	uint8_t le[8];
	int i;

	memcpy(&u, &d, sizeof(u));
	for (i = 0; i < 8; i++)
		le[i] = (uint8_t)(u >> (8 * i));
	put_bytes(b, le, sizeof(le));
}

static void le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int write_all(struct tby_writer *w, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, w->out) != n)
		return -EPIPE;
	return 0;
}

/* The chunk so far, compressed, after its head; then an empty chunk. */
static int flush_chunk(struct tby_writer *w)
{
	uLongf clen = compressBound(w->chunk.n);
	uint8_t head[TBY_CHUNK_HEAD], *z;
	int ret = 0;

	if (!w->chunk.n)
		return 0;
	z = malloc(clen);
	if (!z)
		return -ENOMEM;
	if (compress2(z, &clen, w->chunk.p, w->chunk.n, Z_BEST_COMPRESSION) != Z_OK)
		ret = -EIO;
	le32(head, (uint32_t)w->chunk.n);
	le32(head + 4, (uint32_t)clen);
	le32(head + 8, (uint32_t)crc32(0, w->chunk.p, (uInt)w->chunk.n));
	if (!ret && !(ret = write_all(w, head, sizeof(head))))
		ret = write_all(w, z, clen);
	free(z);
	w->chunk.n = 0;
	return ret;
}

static void append_record(struct tby_writer *w, int type, const struct tbuf *b)
{
	put_varint(&w->chunk, (uint64_t)type);
	put_varint(&w->chunk, b->n);
	put_bytes(&w->chunk, b->p, b->n);
}

/* The record in w->rec, after the strings it introduced. */
static void end_record(struct tby_writer *w, int type)
{
	struct tbuf head = { 0 };

	if (w->err)
		return;
	if (w->nstrs) {
		put_varint(&head, w->nstrs);
		put_bytes(&head, w->strs.p, w->strs.n);
		append_record(w, TBY_STRINGS, &head);
		free(head.p);
		w->strs.n = w->nstrs = 0;
	}
	append_record(w, type, &w->rec);
	w->rec.n = 0;
	w->err = w->chunk.err ?: w->rec.err ?: w->strs.err;
	if (!w->err && w->chunk.n >= CHUNK_RAW)
		w->err = flush_chunk(w);
}

/* A string's id in the table, added (to go out before the record) if new. */
static uint64_t str_id(struct tby_writer *w, const char *s)
{
	uint64_t key[2] = { hash_bytes(s, strlen(s)), 0 };
	void **slot;
	int added;

	for (;; key[1]++) {
		slot = hmap_put(&w->ids, key, &added);
		if (!slot)
			goto oom;
		if (added)
			break;
		if (!strcmp(w->strings[(uintptr_t)*slot - 1], s))
			return (uintptr_t)*slot - 1;
	}
	if (array_grow(&w->strings, &w->ids_cap, w->nids + 1, sizeof(*w->strings), 256))
		goto oom;
	w->strings[w->nids] = s;
	*slot = (void *)(uintptr_t)++w->nids;
	put_str(&w->strs, s);
	w->nstrs++;
	return w->nids - 1;
oom:
	w->err = -ENOMEM;
	return 0;
}

/* An optional string by id: 0 for NULL, else id + 1. */
static uint64_t opt_id(struct tby_writer *w, const char *s)
{
	return s ? str_id(w, s) + 1 : 0;
}

static void write_meta(struct tby_writer *w, const struct resolved *r)
{
	struct tbuf *b = &w->rec;
	char kernel[3 * sizeof(((struct utsname *)0)->release) + 8] = "";
	struct utsname u;

	if (!uname(&u))
		snprintf(kernel, sizeof(kernel), "%s %s %s", u.sysname, u.release, u.machine);
	put_str(b, "tachyon-bpf " TB_VERSION);
	put_str(b, kernel);
	put_opt_str(b, r->event);
	put_opt_str(b, r->mode);
	put_opt_str(b, r->rate_text);
	put_f64(b, r->rate);
	put_f64(b, r->start_unix);
	put_f64(b, r->duration_s);
	put_varint(b, (uint64_t)!!r->timeline);
	end_record(w, TBY_META);
}

static void write_procs(struct tby_writer *w, const struct resolved *r)
{
	size_t i;

	put_varint(&w->rec, r->nprocs);
	for (i = 0; i < r->nprocs; i++) {
		put_signed(&w->rec, r->procs[i].pid);
		put_str(&w->rec, r->procs[i].version);
		put_str(&w->rec, r->procs[i].name);
		put_str(&w->rec, r->procs[i].cwd);
	}
	end_record(w, TBY_PROCS);
}

static void write_frames(struct tby_writer *w, const struct resolved *r)
{
	size_t i, j, n;

	for (i = 0; i < r->nframes; i += n) {
		n = r->nframes - i < BATCH ? r->nframes - i : BATCH;
		put_varint(&w->rec, n);
		for (j = i; j < i + n; j++) {
			const struct rframe *f = r->frames[j];

			put_varint(&w->rec, str_id(w, f->name));
			put_varint(&w->rec, str_id(w, f->file));
			put_signed(&w->rec, f->line);
			put_signed(&w->rec, (int64_t)f->firstlineno - f->line);
			put_varint(&w->rec, opt_id(w, f->op));
		}
		end_record(w, TBY_FRAMES);
	}
}

/* Frames root first: the part shared with the previous row's, then the rest. */
static void put_stack(struct tbuf *b, const struct rsample *s, const struct rsample *prev)
{
	uint32_t common = 0, j;

	while (prev && common < s->depth && common < prev->depth &&
	       s->frames[common] == prev->frames[common])
		common++;
	put_varint(b, common);
	put_varint(b, s->depth - common);
	for (j = common; j < s->depth; j++)
		put_varint(b, s->frames[j]->id);
}

static void write_samples(struct tby_writer *w, const struct resolved *r)
{
	size_t i, j, n;

	for (i = 0; i < r->nsamples; i += n) {
		n = r->nsamples - i < BATCH ? r->nsamples - i : BATCH;
		put_varint(&w->rec, n);
		for (j = i; j < i + n; j++) {
			const struct rsample *s = &r->samples[j];

			put_varint(&w->rec, s->proc);
			put_varint(&w->rec, s->tid);
			put_varint(&w->rec, s->flags);
			put_varint(&w->rec, s->count);
			put_varint(&w->rec, opt_id(w, s->tname));
			put_stack(&w->rec, s, j > i ? s - 1 : NULL);
		}
		end_record(w, TBY_SAMPLES);
	}
}

static void write_threads(struct tby_writer *w, const struct resolved *r)
{
	size_t i;

	put_varint(&w->rec, r->nthreads);
	for (i = 0; i < r->nthreads; i++) {
		put_varint(&w->rec, r->threads[i].proc);
		put_varint(&w->rec, r->threads[i].tid);
		put_varint(&w->rec, opt_id(w, r->threads[i].name));
	}
	end_record(w, TBY_THREADS);
}

/* Ticks [i, i + n): each field a column, times as deltas (they are sorted). */
static void put_ticks(struct tbuf *b, const struct resolved *r, size_t i, size_t n)
{
	const struct rtick *t = r->ticks + i, *end = t + n, *k;
	uint64_t prev_t = i ? t[-1].t_ns : 0;
	uint32_t prev_s = i ? t[-1].sample : 0;

	put_varint(b, n);
	for (k = t; k < end; prev_s = k->sample, k++)
		put_signed(b, (int64_t)k->sample - prev_s);
	for (k = t; k < end; k++)
		put_varint(b, k->thread);
	for (k = t; k < end; k++)
		put_signed(b, (int64_t)k->tid - r->threads[k->thread].tid);
	for (k = t; k < end; k++)
		put_varint(b, k->cpu);
	for (k = t; k < end; prev_t = k->t_ns, k++)
		put_varint(b, k->t_ns - prev_t);
	for (k = t; k < end; k++)
		put_varint(b, k->end_ns - k->t_ns);
	for (k = t; k < end; k++)
		put_varint(b, k->weight);
}

static void write_ticks(struct tby_writer *w, const struct resolved *r)
{
	size_t i, n;

	for (i = 0; i < r->nticks; i += n) {
		n = r->nticks - i < TICK_BATCH ? r->nticks - i : TICK_BATCH;
		put_ticks(&w->rec, r, i, n);
		end_record(w, TBY_TICKS);
	}
}

static int write_file(struct tby_writer *w, const struct resolved *r)
{
	uint8_t head[TBY_HEADER_SIZE] = { 0 };

	memcpy(head, TBY_MAGIC, 4);
	head[4] = TBY_VERSION;
	w->err = write_all(w, head, sizeof(head));
	write_meta(w, r);
	write_procs(w, r);
	write_frames(w, r);
	write_samples(w, r);
	write_threads(w, r);
	/* The tables in chunks of their own: a file cut inside the ticks
	 * still holds every count. */
	if (!w->err)
		w->err = flush_chunk(w);
	write_ticks(w, r);
	put_varint(&w->rec, r->nsamples);
	put_varint(&w->rec, r->nticks);
	put_varint(&w->rec, r->total);
	end_record(w, TBY_END);
	if (!w->err)
		w->err = flush_chunk(w);
	if (!w->err && fflush(w->out))
		w->err = -EPIPE;
	return w->err;
}

int output_binary(FILE *out, const struct resolved *r)
{
	struct tby_writer w = { .out = out };
	int ret;

	if (resolved_check(r))
		return -EINVAL;
	if (hmap_init(&w.ids, 2 * sizeof(uint64_t)))
		return -ENOMEM;
	ret = write_file(&w, r);
	free(w.chunk.p);
	free(w.rec.p);
	free(w.strs.p);
	free(w.strings);
	hmap_free(&w.ids);
	return ret;
}
