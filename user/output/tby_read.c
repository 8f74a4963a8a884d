// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The binary recording's reader (doc/tby-format.md). Everything is checked
 * before it is used: counts against the bytes left, ids against the tables
 * read so far, times against overflow; a chunk is inflated only if its
 * size is sane and its CRC matches.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "output/tby.h"
#include "util.h"

struct cur {
	const uint8_t *p, *end;
	int bad;
};

struct reader {
	struct tby_file *f;
	char *why;
	size_t whylen;
	int got_meta, got_end;
	int journal;		/* a streamed recording (JOURNAL records) */
};

static uint64_t get_varint(struct cur *c)
{
	uint64_t v = 0;
	int shift;

	for (shift = 0; shift < 64 && c->p < c->end; shift += 7) {
		uint8_t b = *c->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	c->bad = 1;
	return 0;
}

static int64_t get_signed(struct cur *c)
{
	uint64_t u = get_varint(c);

	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* A count of items of at least `unit` bytes each: no more than fit. */
static uint64_t get_count(struct cur *c, size_t unit)
{
	uint64_t n = get_varint(c);

	if (n > (uint64_t)(c->end - c->p) / unit)
		c->bad = 1;
	return c->bad ? 0 : n;
}

/* n bytes as a NUL-terminated copy; a NUL inside is corruption. */
static char *get_bytes(struct cur *c, uint64_t n)
{
	char *s;

	if (c->bad || n > (uint64_t)(c->end - c->p) || memchr(c->p, 0, n)) {
		c->bad = 1;
		return NULL;
	}
	s = malloc(n + 1);
	if (!s) {
		c->bad = 1;
		return NULL;
	}
	memcpy(s, c->p, n);
	s[n] = 0;
	c->p += n;
	return s;
}

static char *get_str(struct cur *c)
{
	return get_bytes(c, get_varint(c));
}

/* 0: NULL (not an error); else length + 1. */
static char *get_opt_str(struct cur *c)
{
	uint64_t n = get_varint(c);

	return n ? get_bytes(c, n - 1) : NULL;
}

static double get_f64(struct cur *c)
{
	uint64_t u = 0;
	double d;
	int i;

	if (c->end - c->p < 8) {
		c->bad = 1;
		return 0;
	}
	for (i = 0; i < 8; i++)
		u |= (uint64_t)c->p[i] << (8 * i);
	c->p += 8;
	memcpy(&d, &u, sizeof(d));
	return d;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A string of the table by id; opt: 0 is NULL, else id + 1. */
static const char *str_at(struct cur *c, const struct tby_file *f, int opt)
{
	uint64_t id = get_varint(c);

	if (opt && !id)
		return NULL;
	id -= !!opt;
	if (id >= f->nstr) {
		c->bad = 1;
		return "";
	}
	return f->strs[id];
}

static int bad(struct reader *rd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rd->why, rd->whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Also false for NaN. */
static int in_range(double d, double lo, double hi)
{
	return d >= lo && d <= hi;
}

static int read_meta(struct reader *rd, struct cur *c)
{
	struct tby_file *f = rd->f;

	f->tool = get_str(c);
	f->kernel = get_str(c);
	f->event = get_opt_str(c);
	f->mode = get_opt_str(c);
	f->rate_text = get_opt_str(c);
	f->r.rate = get_f64(c);
	f->r.start_unix = get_f64(c);
	f->r.duration_s = get_f64(c);
	f->r.timeline = !!get_varint(c);
	f->r.event = f->event;
	f->r.mode = f->mode;
	f->r.rate_text = f->rate_text;
	rd->got_meta = 1;
	/* What a run can have made: the writers convert these to integers. */
	if (!in_range(f->r.rate, 1e-3, 1e10) && f->r.rate != 0)
		return bad(rd, "a sampling rate of %g Hz", f->r.rate);
	if (!in_range(f->r.start_unix, 0, 9e9) || !in_range(f->r.duration_s, 0, 1e8))
		return bad(rd, "a start time of %g s or a duration of %g s", f->r.start_unix,
			   f->r.duration_s);
	return 0;
}

/* A string into a fixed field: too long for it is corruption. */
static void get_fixed(struct cur *c, char *dst, size_t size)
{
	char *s = get_str(c);

	if (s && strlen(s) < size)
		strcpy(dst, s);
	else
		c->bad = 1;
	free(s);
}

static int read_procs(struct reader *rd, struct cur *c)
{
	uint64_t n = get_count(c, 4), i;
	struct rproc *p;
	int ret;

	/* A journal's segments each give the table, which only grows. */
	if ((rd->f->r.nprocs || rd->f->r.nsamples) && (!rd->journal || n < rd->f->r.nprocs))
		return bad(rd, "a second process table");
	p = calloc(n + 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (i = 0; i < n && !c->bad; i++) {
		int64_t pid = get_signed(c);

		p[i].pid = (int32_t)pid;
		c->bad |= pid != p[i].pid;
		get_fixed(c, p[i].version, sizeof(p[i].version));
		get_fixed(c, p[i].name, sizeof(p[i].name));
		get_fixed(c, p[i].cwd, sizeof(p[i].cwd));
	}
	ret = c->bad ? 0 : resolved_set_procs(&rd->f->r, p, (uint32_t)n);
	free(p);
	return ret;
}

static int read_strings(struct reader *rd, struct cur *c)
{
	struct tby_file *f = rd->f;
	uint64_t n = get_count(c, 1), i;

	if (array_grow(&f->strs, &f->str_cap, f->nstr + n, sizeof(*f->strs), 256))
		return -ENOMEM;
	for (i = 0; i < n && !c->bad; i++) {
		char *s = get_str(c);

		if (s)
			f->strs[f->nstr++] = s;
	}
	return 0;
}

/* A frame as recorded: the table is rebuilt as it was, not re-interned. */
static int add_frame(struct tby_file *f, const char *name, const char *file, int32_t line,
		     int32_t first, const char *op)
{
	struct resolved *r = &f->r;
	struct rframe *fr;

	if (array_grow(&r->frames, &f->frames_cap, r->nframes + 1, sizeof(*r->frames), 256))
		return -ENOMEM;
	fr = calloc(1, sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	*fr = (struct rframe){ .name = strdup(name), .file = strdup(file), .line = line,
			       .firstlineno = first, .op = op ? strdup(op) : NULL,
			       .id = (uint32_t)r->nframes };
	r->frames[r->nframes++] = fr;
	return fr->name && fr->file && (!op || fr->op) ? 0 : -ENOMEM;
}

static int read_frames(struct reader *rd, struct cur *c)
{
	uint64_t n = get_count(c, 5), i;
	int ret = 0;

	for (i = 0; i < n && !c->bad && !ret; i++) {
		const char *name = str_at(c, rd->f, 0), *file = str_at(c, rd->f, 0), *op;
		int64_t line = get_signed(c);
		/* Wrapping: an out-of-range sum fails the int32 check below. */
		int64_t first = (int64_t)((uint64_t)line + (uint64_t)get_signed(c));

		op = str_at(c, rd->f, 1);
		if (c->bad || line != (int32_t)line || first != (int32_t)first)
			break;
		ret = add_frame(rd->f, name, file, (int32_t)line, (int32_t)first, op);
	}
	return ret;
}

/* Frames root first: `common` of the previous row's, then new ids. */
static int get_stack(struct cur *c, const struct resolved *r, struct rsample *s,
		     const struct rsample *prev)
{
	uint64_t common = get_varint(c), rest = get_count(c, 1), j;

	if (common > (prev ? prev->depth : 0) || c->bad)
		return -EINVAL;
	s->depth = (uint32_t)(common + rest);
	s->frames = calloc(s->depth + 1, sizeof(*s->frames));
	if (!s->frames)
		return -ENOMEM;
	if (common)
		memcpy(s->frames, prev->frames, common * sizeof(*s->frames));
	for (j = common; j < s->depth; j++) {
		uint64_t id = get_varint(c);

		if (id >= r->nframes)
			return -EINVAL;
		s->frames[j] = r->frames[id];
	}
	return c->bad ? -EINVAL : 0;
}

static int read_sample(struct reader *rd, struct cur *c, const struct rsample *prev)
{
	struct resolved *r = &rd->f->r;
	struct rsample *s = resolved_slot(r);
	uint64_t v[4];
	const char *tname;
	int i, ret;

	if (!s)
		return -ENOMEM;
	for (i = 0; i < 4; i++)
		v[i] = get_varint(c);
	tname = str_at(c, rd->f, 1);
	if (c->bad || v[0] > UINT32_MAX || v[1] > UINT32_MAX || v[2] > UINT32_MAX ||
	    (v[0] >= r->nprocs && r->nprocs) || r->total + v[3] < r->total)
		return bad(rd, "sample %zu: bad fields", r->nsamples);
	*s = (struct rsample){ .proc = (uint32_t)v[0], .tid = (uint32_t)v[1],
			       .flags = (uint32_t)v[2], .count = v[3] };
	ret = get_stack(c, r, s, prev);
	if (!ret && tname && !(s->tname = strdup(tname)))
		ret = -ENOMEM;
	if (ret) {
		free(s->frames);
		free(s->tname);
		return ret == -EINVAL ? bad(rd, "sample %zu: bad stack", r->nsamples) : ret;
	}
	r->nsamples++;
	r->total += s->count;
	return 0;
}

static int read_samples(struct reader *rd, struct cur *c)
{
	struct resolved *r = &rd->f->r;
	uint64_t n = get_count(c, 7), i;
	int ret = 0;

	for (i = 0; i < n && !ret && !c->bad; i++)
		ret = read_sample(rd, c, i ? &r->samples[r->nsamples - 1] : NULL);
	return ret;
}

static int read_threads(struct reader *rd, struct cur *c)
{
	struct tby_file *f = rd->f;
	struct resolved *r = &f->r;
	uint64_t n = get_count(c, 3), i;

	if (array_grow(&r->threads, &f->threads_cap, r->nthreads + n, sizeof(*r->threads), 16))
		return -ENOMEM;
	for (i = 0; i < n && !c->bad; i++) {
		struct rthread *t = &r->threads[r->nthreads];
		uint64_t proc = get_varint(c), tid = get_varint(c);
		const char *name = str_at(c, f, 1);

		if (c->bad || proc > UINT32_MAX || tid > UINT32_MAX)
			return bad(rd, "thread %zu: bad fields", r->nthreads);
		*t = (struct rthread){ .proc = (uint32_t)proc, .tid = (uint32_t)tid };
		if (name && !(t->name = strdup(name)))
			return -ENOMEM;
		r->nthreads++;
	}
	return resolved_number_lanes(r);	/* not recorded: their order says it */
}

/* One column of n ticks: each value checked, then stored by `set`. */
static int tick_column(struct reader *rd, struct cur *c, struct rtick *t, uint64_t n, int col)
{
	const struct resolved *r = &rd->f->r;
	uint64_t prev_t = r->nticks ? r->ticks[r->nticks - 1].t_ns : 0, i;
	int64_t prev_s = r->nticks ? r->ticks[r->nticks - 1].sample : 0;

	for (i = 0; i < n && !c->bad; i++) {
		uint64_t u = col == 0 || col == 2 ? 0 : get_varint(c);
		int64_t s = col == 0 || col == 2 ? get_signed(c) : 0;

		switch (col) {
		case 0:	/* the row, from the previous tick's */
			prev_s += s;
			c->bad |= prev_s < 0 || (uint64_t)prev_s >= r->nsamples;
			t[i].sample = (uint32_t)prev_s;
			break;
		case 1:
			c->bad |= u >= r->nthreads;
			t[i].thread = (uint32_t)u;
			break;
		case 2:	/* tid, from its thread's */
			s += c->bad ? 0 : r->threads[t[i].thread].tid;
			c->bad |= s < 0 || s > UINT32_MAX;
			t[i].tid = (uint32_t)s;
			break;
		case 3:
			c->bad |= u > UINT32_MAX;
			t[i].cpu = (uint32_t)u;
			break;
		case 4:	/* time, from the previous tick's */
			c->bad |= prev_t + u < prev_t;
			t[i].t_ns = prev_t += u;
			break;
		case 5:
			c->bad |= t[i].t_ns + u < u;
			t[i].end_ns = t[i].t_ns + u;
			break;
		case 6:
			t[i].weight = u;
			break;
		}
	}
	return c->bad ? bad(rd, "tick %zu: bad fields", r->nticks + i) : 0;
}

static int read_ticks(struct reader *rd, struct cur *c)
{
	struct tby_file *f = rd->f;
	struct resolved *r = &f->r;
	uint64_t n = get_count(c, 7);
	int col, ret = 0;

	if (!n)
		return 0;
	if (array_grow(&r->ticks, &f->ticks_cap, r->nticks + n, sizeof(*r->ticks), 1024))
		return -ENOMEM;
	for (col = 0; col < 7 && !ret; col++)
		ret = tick_column(rd, c, r->ticks + r->nticks, n, col);
	if (!ret)
		r->nticks += n;
	return ret;
}

enum { TC_THREAD, TC_ROW, TC_TID, TC_CPU, TC_DUR, TC_WEIGHT, TC_Q, TC_REM, TC_N };

/* t = base + (q * period + rem) * unit, each step checked. */
static int tick_time(uint64_t base, int64_t q, int64_t rem, uint64_t unit, uint64_t period,
		     uint64_t *t)
{
	int64_t d, x;

	if (__builtin_mul_overflow(q, (int64_t)period, &d) || __builtin_add_overflow(d, rem, &d) ||
	    __builtin_mul_overflow(d, (int64_t)unit, &d) ||
	    __builtin_add_overflow((int64_t)base, d, &x) || x < 0)
		return -EINVAL;
	*t = (uint64_t)x;
	return 0;
}

/* One value of a TICKS2 column into tick k (see tby_ticks.h). */
static int tick2_value(struct reader *rd, struct rtick *k, int col, uint64_t u, uint64_t unit,
		       uint64_t period)
{
	struct tby_tick_state *st = &rd->f->tstate;
	const struct resolved *r = &rd->f->r;
	struct tby_tick_thread *th = col ? &st->th[k->thread] : NULL;
	int64_t s = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);

	switch (col) {
	case TC_THREAD:
		k->thread = (uint32_t)u;
		return u < r->nthreads ? 0 : -EINVAL;
	case TC_ROW:
		return tby_row_of(th, u, r->nsamples, &k->sample);
	case TC_TID:
		s += r->threads[k->thread].tid;
		k->tid = (uint32_t)s;
		return s < 0 || s > UINT32_MAX ? -EINVAL : 0;
	case TC_CPU:
		k->cpu = th->cpu = u ? (uint32_t)(u - 1) : th->cpu;
		return u > (uint64_t)UINT32_MAX + 1 ? -EINVAL : 0;
	case TC_DUR:	/* end - t, kept in end_ns until the time is known */
	case TC_WEIGHT:
		*(col == TC_DUR ? &k->end_ns : &k->weight) = u;
		return col == TC_DUR && u > (UINT64_MAX >> 2) / unit ? -EINVAL : 0;
	case TC_Q:	/* kept in t_ns until the remainder comes */
		k->t_ns = (uint64_t)s;
		return 0;
	}
	if (tick_time(tby_time_base(st, th, k->cpu, k->end_ns), (int64_t)k->t_ns, s, unit, period,
		      &k->t_ns) ||
	    __builtin_add_overflow(k->t_ns, k->end_ns * unit, &k->end_ns))
		return -EINVAL;
	return tby_time_note(st, th, k->cpu, k->t_ns, k->end_ns);
}

/* A TICKS2 record: n, unit, period, then TC_N columns of n values. */
static int read_ticks2(struct reader *rd, struct cur *c)
{
	struct tby_file *f = rd->f;
	struct resolved *r = &f->r;
	uint64_t n = get_count(c, TC_N), unit = get_varint(c), period = get_varint(c), i;
	int col, ret = 0;

	if (c->bad || !unit || unit > 1000000000 || period > TBY_PERIOD_MAX)
		return bad(rd, "tick %zu: bad unit or period", r->nticks);
	if (array_grow(&r->ticks, &f->ticks_cap, r->nticks + n + 1, sizeof(*r->ticks), 1024) ||
	    tby_ticks_grow(&f->tstate, r->nthreads))
		return -ENOMEM;
	memset(r->ticks + r->nticks, 0, n * sizeof(*r->ticks));
	for (col = 0; col < TC_N && !ret; col++)
		for (i = 0; i < n && !ret; i++)
			ret = tick2_value(rd, &r->ticks[r->nticks + i], col, get_varint(c), unit,
					  period) ?: (c->bad ? -EINVAL : 0);
	if (ret)
		return ret == -ENOMEM ? ret : bad(rd, "tick %zu: bad fields", r->nticks + (size_t)i - 1);
	r->nticks += n;
	return 0;
}

/* JOURNAL: a segment of a streamed recording; the run had lasted this long. */
static int read_journal(struct reader *rd, struct cur *c)
{
	double d = get_f64(c);

	if (!in_range(d, 0, 1e8))
		return bad(rd, "a journal segment at %g s", d);
	rd->journal = 1;
	rd->f->r.duration_s = d;
	return 0;
}

/* COUNTS: rows whose counts changed since they were written. */
static int read_counts(struct reader *rd, struct cur *c)
{
	struct resolved *r = &rd->f->r;
	uint64_t n = get_count(c, 2), i, row, count;
	int64_t delta;

	for (i = 0; i < n && !c->bad; i++) {
		row = get_varint(c);
		delta = get_signed(c);
		if (c->bad || row >= r->nsamples)
			return bad(rd, "count change %llu: no row %llu", (unsigned long long)i,
				   (unsigned long long)row);
		count = r->samples[row].count + (uint64_t)delta;
		if ((delta < 0 && count > r->samples[row].count) ||
		    (delta > 0 && count < r->samples[row].count) ||
		    r->total - r->samples[row].count + count < r->total - r->samples[row].count)
			return bad(rd, "count change %llu: out of range", (unsigned long long)i);
		r->total = r->total - r->samples[row].count + count;
		r->samples[row].count = count;
	}
	return 0;
}

/* Rows of one thread with the same flags and frames sort together. */
static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct rsample *s = arg;
	const struct rsample *x = &s[*(const uint32_t *)a], *y = &s[*(const uint32_t *)b];

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->flags != y->flags)
		return x->flags < y->flags ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return memcmp(x->frames, y->frames, x->depth * sizeof(*x->frames));
}

/* The live row (in the sorted live[]) like row i, or UINT32_MAX. */
static uint32_t row_like(const struct rsample *s, const uint32_t *live, size_t n, uint32_t i)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = row_cmp(&i, &live[mid], (void *)s);

		if (!c)
			return live[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return UINT32_MAX;
}

/*
 * Where each row goes once the rows whose count went to 0 are dropped:
 * a live row to its new place; a dropped one to the live row of the same
 * thread, flags and frames if there is one (a thread renamed later: its
 * earlier samples moved to the new name's rows, as in the live run's
 * timeline), else nowhere (UINT32_MAX).
 */
static int journal_row_map(const struct resolved *r, uint32_t *map)
{
	uint32_t *live = malloc((r->nsamples + 1) * sizeof(*live));
	size_t i, n = 0;

	if (!live)
		return -ENOMEM;
	for (i = 0; i < r->nsamples; i++)
		if (r->samples[i].count) {
			map[i] = (uint32_t)n;
			live[n++] = (uint32_t)i;
		}
	qsort_r(live, n, sizeof(*live), row_cmp, (void *)r->samples);
	for (i = 0; i < r->nsamples; i++) {
		uint32_t j;

		if (r->samples[i].count)
			continue;
		j = row_like(r->samples, live, n, (uint32_t)i);
		map[i] = j == UINT32_MAX ? UINT32_MAX : map[j];
	}
	free(live);
	return 0;
}

/*
 * A segment reads the kernel's counts, then the ring: each row has a tick
 * for every sample counted and may have a few of samples taken after the
 * counts were read. Those, a row's latest ticks past its count, go, so the
 * timeline and the counts agree as at the end of a run (fewer ticks than
 * counted stay: ticks the ring had no room for). seen: nsamples entries.
 */
static void trim_ticks(struct resolved *r, uint32_t *seen)
{
	size_t i, n = 0;

	memset(seen, 0, r->nsamples * sizeof(*seen));
	for (i = 0; i < r->nticks; i++) {
		uint32_t row = r->ticks[i].sample;

		if (seen[row]++ < r->samples[row].count)
			r->ticks[n++] = r->ticks[i];
	}
	r->nticks = n;
}

/*
 * A journal read to its last complete segment: rows whose count went to
 * 0 (merged into others by a later snapshot) go, their ticks to the row
 * they moved to (journal_row_map) or with them; the ticks, appended
 * segment by segment, are put in time order.
 */
static int finish_journal(struct tby_file *f)
{
	struct resolved *r = &f->r;
	uint32_t *map = calloc(r->nsamples + 1, sizeof(*map));
	size_t i, n = 0;
	int err;

	if (!map)
		return -ENOMEM;
	err = journal_row_map(r, map);
	if (err) {
		free(map);
		return err;
	}
	for (i = 0; i < r->nsamples; i++) {
		if (r->samples[i].count) {
			r->samples[n++] = r->samples[i];
			continue;
		}
		free(r->samples[i].frames);
		free(r->samples[i].tname);
	}
	r->nsamples = n;
	for (i = n = 0; i < r->nticks; i++)
		if (map[r->ticks[i].sample] != UINT32_MAX) {
			r->ticks[n] = r->ticks[i];
			r->ticks[n++].sample = map[r->ticks[i].sample];
		}
	r->nticks = n;
	if (n)	/* no ticks: r->ticks may be NULL, which qsort may not take */
		qsort(r->ticks, r->nticks, sizeof(*r->ticks), rtick_cmp);
	trim_ticks(r, map);
	free(map);
	return 0;
}

static int read_end(struct reader *rd, struct cur *c)
{
	const struct resolved *r = &rd->f->r;
	uint64_t ns = get_varint(c), nt = get_varint(c), total = get_varint(c);

	if (!c->bad && (ns != r->nsamples || nt != r->nticks || total != r->total))
		return bad(rd, "the end record counts %llu rows, %llu ticks, %llu samples; the file holds %zu, %zu, %llu",
			   (unsigned long long)ns, (unsigned long long)nt,
			   (unsigned long long)total, r->nsamples, r->nticks,
			   (unsigned long long)r->total);
	rd->got_end = 1;
	return 0;
}

static int read_record(struct reader *rd, uint64_t type, struct cur *c)
{
	static int (*const readers[])(struct reader *, struct cur *) = {
		[TBY_META] = read_meta, [TBY_PROCS] = read_procs,
		[TBY_STRINGS] = read_strings, [TBY_FRAMES] = read_frames,
		[TBY_SAMPLES] = read_samples, [TBY_THREADS] = read_threads,
		[TBY_TICKS] = read_ticks, [TBY_TICKS2] = read_ticks2,
		[TBY_JOURNAL] = read_journal, [TBY_COUNTS] = read_counts, [TBY_END] = read_end,
	};
	int ret;

	if (rd->got_end)
		return bad(rd, "records after the end record");
	if (!rd->got_meta && type != TBY_META)
		return bad(rd, "no header record first");
	/* Unknown types are for later minor additions: skipped. */
	if (type >= sizeof(readers) / sizeof(readers[0]) || !readers[type])
		return 0;
	if (type == TBY_META && rd->got_meta)
		return bad(rd, "a second header record");
	ret = readers[type](rd, c);
	if (!ret && (c->bad || c->p != c->end))
		return bad(rd, "record of type %llu: bad length or fields", (unsigned long long)type);
	return ret;
}

static int read_chunk_records(struct reader *rd, const uint8_t *p, size_t n)
{
	struct cur c = { p, p + n, 0 };
	int ret = 0;

	while (c.p < c.end && !ret) {
		uint64_t type = get_varint(&c), len = get_varint(&c);
		struct cur rec;

		if (c.bad || len > (uint64_t)(c.end - c.p))
			return bad(rd, "a record runs past its chunk");
		rec = (struct cur){ c.p, c.p + len, 0 };
		c.p += len;
		ret = read_record(rd, type, &rec);
	}
	return ret;
}

/* The chunk at p: 1 and *used if complete; 0 if the file ends inside it. */
static int read_chunk(struct reader *rd, const uint8_t *p, size_t left, size_t *used)
{
	uint32_t raw, clen, crc;
	uLongf out_len;
	uint8_t *out;
	int ret;

	if (left < TBY_CHUNK_HEAD)
		return 0;
	raw = le32(p);
	clen = le32(p + 4);
	crc = le32(p + 8);
	if (raw > TBY_CHUNK_MAX || clen > TBY_CHUNK_MAX)
		return bad(rd, "chunk %zu: sizes %u/%u out of bounds", rd->f->chunks, raw, clen);
	if (left - TBY_CHUNK_HEAD < clen)
		return 0;
	out = malloc(raw ? raw : 1);
	if (!out)
		return -ENOMEM;
	out_len = raw;
	if (uncompress(out, &out_len, p + TBY_CHUNK_HEAD, clen) != Z_OK || out_len != raw ||
	    crc32(0, out, raw) != crc)
		ret = bad(rd, "chunk %zu: does not decompress to its checksum", rd->f->chunks);
	else
		ret = read_chunk_records(rd, out, raw);
	free(out);
	*used = TBY_CHUNK_HEAD + clen;
	return ret ? ret : 1;
}

static int read_all(struct reader *rd, const uint8_t *data, size_t len)
{
	size_t off = TBY_HEADER_SIZE, used = 0;
	int ret;

	if (len < TBY_HEADER_SIZE || memcmp(data, TBY_MAGIC, 4))
		return bad(rd, "not a tachyon-bpf recording (no TBY header)");
	if (data[4] > TBY_VERSION) {
		snprintf(rd->why, rd->whylen,
			 "format version %u, written by a newer tachyon-bpf (this one reads up to version %d)",
			 data[4], TBY_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (!data[4])
		return bad(rd, "format version 0 does not exist");
	while (off < len) {
		ret = read_chunk(rd, data + off, len - off, &used);
		if (ret <= 0) {
			if (ret < 0)
				return ret;
			break;	/* cut inside a chunk: what came before stands */
		}
		off += used;
		rd->f->chunks++;
	}
	if (!rd->got_meta)
		return bad(rd, "no complete chunk (the recording was cut short before its first)");
	rd->f->partial = !rd->got_end;
	if (rd->journal && !rd->got_end && (ret = finish_journal(rd->f)))
		return ret;
	if (resolved_check(&rd->f->r))
		return bad(rd, "inconsistent tables");
	return 0;
}

int tby_read(const uint8_t *data, size_t len, struct tby_file *f, char *why, size_t whylen)
{
	struct reader rd = { .f = f, .why = why, .whylen = whylen };
	int ret;

	memset(f, 0, sizeof(*f));
	if (resolved_init(&f->r)) {
		snprintf(why, whylen, "out of memory");
		tby_free(f);
		return -ENOMEM;
	}
	ret = read_all(&rd, data, len);
	if (ret == -ENOMEM)
		snprintf(why, whylen, "out of memory");
	if (ret)
		tby_free(f);
	return ret;
}

void tby_free(struct tby_file *f)
{
	size_t i;

	resolved_free(&f->r);
	tby_ticks_free(&f->tstate);
	for (i = 0; i < f->nstr; i++)
		free(f->strs[i]);
	free(f->strs);
	free(f->tool);
	free(f->kernel);
	free(f->event);
	free(f->mode);
	free(f->rate_text);
	memset(f, 0, sizeof(*f));
}
