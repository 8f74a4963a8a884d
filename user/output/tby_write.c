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
#include "output/tby_writer.h"
#include "util.h"

#ifndef TB_VERSION
#define TB_VERSION "0.1.0"
#endif

#define CHUNK_RAW	(64u << 10)	/* close a chunk past this many bytes */
#define BATCH		1024		/* frames or samples per record */
#define TICK_BATCH	4096

static void put_bytes(struct tbuf *b, const void *p, size_t n)
{
	if (b->err || array_grow(&b->p, &b->cap, b->n + n, 1, 4096)) {
		b->err = -ENOMEM;
		return;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

void tby_put_varint(struct tbuf *b, uint64_t v)
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
uint64_t tby_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void tby_put_signed(struct tbuf *b, int64_t v)
{
	tby_put_varint(b, tby_zigzag(v));
}

static void put_str(struct tbuf *b, const char *s)
{
	size_t n = strlen(s);

	tby_put_varint(b, n);
	put_bytes(b, s, n);
}

/* NULL as 0, a string as its length + 1. */
static void put_opt_str(struct tbuf *b, const char *s)
{
	if (!s) {
		tby_put_varint(b, 0);
		return;
	}
	tby_put_varint(b, strlen(s) + 1);
	put_bytes(b, s, strlen(s));
}

/* A double as its IEEE-754 bits, little-endian: replay gets it exactly. */
void tby_put_f64(struct tbuf *b, double d)
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
int tby_flush_chunk(struct tby_writer *w)
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
	tby_put_varint(&w->chunk, (uint64_t)type);
	tby_put_varint(&w->chunk, b->n);
	put_bytes(&w->chunk, b->p, b->n);
}

/* The record in w->rec, after the strings it introduced. */
void tby_end_record(struct tby_writer *w, int type)
{
	struct tbuf head = { 0 };

	if (w->err)
		return;
	if (w->nstrs) {
		tby_put_varint(&head, w->nstrs);
		put_bytes(&head, w->strs.p, w->strs.n);
		append_record(w, TBY_STRINGS, &head);
		free(head.p);
		w->strs.n = w->nstrs = 0;
	}
	append_record(w, type, &w->rec);
	w->rec.n = 0;
	w->err = w->chunk.err ?: w->rec.err ?: w->strs.err;
	if (!w->err && w->chunk.n >= CHUNK_RAW)
		w->err = tby_flush_chunk(w);
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

void tby_write_meta(struct tby_writer *w, const struct resolved *r)
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
	tby_put_f64(b, r->rate);
	tby_put_f64(b, r->start_unix);
	tby_put_f64(b, r->duration_s);
	tby_put_varint(b, (uint64_t)!!r->timeline);
	tby_end_record(w, TBY_META);
}

void tby_write_procs(struct tby_writer *w, const struct resolved *r)
{
	size_t i;

	tby_put_varint(&w->rec, r->nprocs);
	for (i = 0; i < r->nprocs; i++) {
		tby_put_signed(&w->rec, r->procs[i].pid);
		put_str(&w->rec, r->procs[i].version);
		put_str(&w->rec, r->procs[i].name);
		put_str(&w->rec, r->procs[i].cwd);
	}
	tby_end_record(w, TBY_PROCS);
}

void tby_write_frames(struct tby_writer *w, const struct resolved *r, size_t from)
{
	size_t i, j, n;

	for (i = from; i < r->nframes; i += n) {
		n = r->nframes - i < BATCH ? r->nframes - i : BATCH;
		tby_put_varint(&w->rec, n);
		for (j = i; j < i + n; j++) {
			const struct rframe *f = r->frames[j];

			tby_put_varint(&w->rec, str_id(w, f->name));
			tby_put_varint(&w->rec, str_id(w, f->file));
			tby_put_signed(&w->rec, f->line);
			tby_put_signed(&w->rec, (int64_t)f->firstlineno - f->line);
			tby_put_varint(&w->rec, opt_id(w, f->op));
		}
		tby_end_record(w, TBY_FRAMES);
	}
}

/* Frames root first: the part shared with the previous row's, then the rest. */
static void put_stack(struct tbuf *b, const struct rsample *s, const struct rsample *prev)
{
	uint32_t common = 0, j;

	while (prev && common < s->depth && common < prev->depth &&
	       s->frames[common] == prev->frames[common])
		common++;
	tby_put_varint(b, common);
	tby_put_varint(b, s->depth - common);
	for (j = common; j < s->depth; j++)
		tby_put_varint(b, s->frames[j]->id);
}

void tby_write_samples(struct tby_writer *w, const struct resolved *r, size_t from)
{
	size_t i, j, n;

	for (i = from; i < r->nsamples; i += n) {
		n = r->nsamples - i < BATCH ? r->nsamples - i : BATCH;
		tby_put_varint(&w->rec, n);
		for (j = i; j < i + n; j++) {
			const struct rsample *s = &r->samples[j];

			tby_put_varint(&w->rec, s->proc);
			tby_put_varint(&w->rec, s->tid);
			tby_put_varint(&w->rec, s->flags);
			tby_put_varint(&w->rec, s->count);
			tby_put_varint(&w->rec, opt_id(w, s->tname));
			put_stack(&w->rec, s, j > i ? s - 1 : NULL);
		}
		tby_end_record(w, TBY_SAMPLES);
	}
}

void tby_write_threads(struct tby_writer *w, const struct resolved *r, size_t from)
{
	size_t i;

	if (from >= r->nthreads && from)
		return;
	tby_put_varint(&w->rec, r->nthreads - from);
	for (i = from; i < r->nthreads; i++) {
		tby_put_varint(&w->rec, r->threads[i].proc);
		tby_put_varint(&w->rec, r->threads[i].tid);
		tby_put_varint(&w->rec, opt_id(w, r->threads[i].name));
	}
	tby_end_record(w, TBY_THREADS);
}

/* The unit of the times: TBY_UNIT_NS if every value allows it, else 1 ns. */
static uint64_t tick_unit(const struct tby_tick_state *st, const struct rtick *t, size_t n)
{
	size_t i;

	if (st->prev_t % TBY_UNIT_NS)
		return 1;
	for (i = 0; i < st->ncpu; i++)
		if (st->cpu_t[i] && (st->cpu_t[i] - 1) % TBY_UNIT_NS)
			return 1;
	for (i = 0; i < st->nth; i++)
		if (st->th[i].next % TBY_UNIT_NS)
			return 1;
	for (i = 0; i < n; i++)
		if (t[i].t_ns % TBY_UNIT_NS || t[i].end_ns % TBY_UNIT_NS)
			return 1;
	return TBY_UNIT_NS;
}

enum { TC_THREAD, TC_ROW, TC_TID, TC_CPU, TC_DUR, TC_WEIGHT, TC_Q, TC_REM, TC_N };

/* One tick's column values (signed ones zigzagged), the state moved on. */
static int tick_values(struct tby_tick_state *st, const struct resolved *r,
			const struct rtick *k, uint64_t unit, uint64_t period, uint64_t *v)
{
	struct tby_tick_thread *th = &st->th[k->thread];
	uint64_t base = tby_time_base(st, th, k->cpu, k->end_ns - k->t_ns);
	int64_t d, q, rem;

	d = k->t_ns >= base ? (int64_t)((k->t_ns - base) / unit) :
			      -(int64_t)((base - k->t_ns) / unit);
	tby_split(d, period, &q, &rem);
	v[TC_THREAD] = k->thread;
	v[TC_ROW] = tby_row_code(th, k->sample);
	v[TC_TID] = tby_zigzag((int64_t)k->tid - r->threads[k->thread].tid);
	v[TC_CPU] = k->cpu == th->cpu ? 0 : (uint64_t)k->cpu + 1;
	v[TC_DUR] = (k->end_ns - k->t_ns) / unit;
	v[TC_WEIGHT] = k->weight;
	v[TC_Q] = tby_zigzag(q);
	v[TC_REM] = tby_zigzag(rem);
	th->cpu = k->cpu;
	return tby_time_note(st, th, k->cpu, k->t_ns, k->end_ns);
}

/* Ticks t[0..n) as one TICKS2 record: each field a column (see tby_ticks.h). */
static void put_ticks(struct tby_writer *w, const struct resolved *r, const struct rtick *t,
		      size_t n)
{
	uint64_t unit = tick_unit(&w->ticks, t, n), period = 0, *v;
	size_t i, c;

	/* Within what a reader takes (TBY_PERIOD_MAX); beyond, no prediction. */
	if (r->rate > 0 && 1e9 / r->rate / (double)unit < (double)TBY_PERIOD_MAX)
		period = (uint64_t)(1e9 / r->rate / (double)unit + 0.5);
	v = malloc(n * TC_N * sizeof(*v));
	if (!v || tby_ticks_grow(&w->ticks, r->nthreads)) {
		free(v);
		w->err = -ENOMEM;
		return;
	}
	for (i = 0; i < n && !w->err; i++)
		w->err = tick_values(&w->ticks, r, &t[i], unit, period, v + i * TC_N);
	tby_put_varint(&w->rec, n);
	tby_put_varint(&w->rec, unit);
	tby_put_varint(&w->rec, period);
	for (c = 0; c < TC_N; c++)
		for (i = 0; i < n; i++)
			tby_put_varint(&w->rec, v[i * TC_N + c]);
	free(v);
	tby_end_record(w, TBY_TICKS2);
}

void tby_write_ticks(struct tby_writer *w, const struct resolved *r, const struct rtick *t,
		     size_t n)
{
	size_t i, k;

	for (i = 0; i < n && !w->err; i += k) {
		k = n - i < TICK_BATCH ? n - i : TICK_BATCH;
		put_ticks(w, r, t + i, k);
	}
}

int tby_write_header(struct tby_writer *w)
{
	uint8_t head[TBY_HEADER_SIZE] = { 0 };

	memcpy(head, TBY_MAGIC, 4);
	head[4] = TBY_VERSION;
	w->err = write_all(w, head, sizeof(head));
	return w->err;
}

static int write_file(struct tby_writer *w, const struct resolved *r)
{
	tby_write_header(w);
	tby_write_meta(w, r);
	tby_write_procs(w, r);
	tby_write_frames(w, r, 0);
	tby_write_samples(w, r, 0);
	tby_write_threads(w, r, 0);
	/* The tables in chunks of their own: a file cut inside the ticks
	 * still holds every count. */
	if (!w->err)
		w->err = tby_flush_chunk(w);
	tby_write_ticks(w, r, r->ticks, r->nticks);
	tby_put_varint(&w->rec, r->nsamples);
	tby_put_varint(&w->rec, r->nticks);
	tby_put_varint(&w->rec, r->total);
	tby_end_record(w, TBY_END);
	if (!w->err)
		w->err = tby_flush_chunk(w);
	if (!w->err && fflush(w->out))
		w->err = -EPIPE;
	return w->err;
}

int tby_writer_init(struct tby_writer *w, FILE *out)
{
	*w = (struct tby_writer){ .out = out };
	return hmap_init(&w->ids, 2 * sizeof(uint64_t)) ? -ENOMEM : 0;
}

void tby_writer_free(struct tby_writer *w)
{
	free(w->chunk.p);
	free(w->rec.p);
	free(w->strs.p);
	free(w->strings);
	hmap_free(&w->ids);
	tby_ticks_free(&w->ticks);
}

int output_binary(FILE *out, const struct resolved *r)
{
	struct tby_writer w;
	int ret;

	if (resolved_check(r))
		return -EINVAL;
	if (tby_writer_init(&w, out))
		return -ENOMEM;
	ret = write_file(&w, r);
	tby_writer_free(&w);
	return ret;
}
