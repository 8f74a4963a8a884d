// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The resolved profile: interning, copies, rows, functions and their counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "output/model.h"
#include "util.h"

/* Interning key: frames are equal when name, file, line and op are. */
struct frame_key {
	uint64_t hash;
	int32_t line;
	int32_t pad;
};

int resolved_init(struct resolved *r)
{
	if (hmap_init(&r->index, sizeof(struct frame_key)))
		return -ENOMEM;
	if (hmap_init(&r->dedup, sizeof(uint64_t) * 2))
		return -ENOMEM;
	return 0;
}

static int same_op(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

struct rframe *resolved_intern(struct resolved *r, const char *name, const char *file,
			       int32_t line, int32_t firstlineno)
{
	return resolved_intern_op(r, name, file, line, firstlineno, NULL);
}

struct rframe *resolved_intern_op(struct resolved *r, const char *name, const char *file,
				  int32_t line, int32_t firstlineno, const char *op)
{
	struct frame_key k = { .line = line };
	struct rframe *f, **grown;
	size_t nl = strlen(name);
	void **slot;
	int added;

	/* Hash both strings; collisions are resolved by comparing them below. */
	k.hash = hash_bytes(name, nl) * 31 + hash_bytes(file, strlen(file));
	if (op)
		k.hash = k.hash * 31 + hash_bytes(op, strlen(op));
	for (;;) {
		slot = hmap_put(&r->index, &k, &added);
		if (!slot)
			goto nomem;
		if (added)
			break;
		f = *slot;
		if (!strcmp(f->name, name) && !strcmp(f->file, file) && same_op(f->op, op))
			return f;
		k.pad++;	/* a different frame with the same hash: probe on */
	}
	f = calloc(1, sizeof(*f));
	grown = realloc(r->frames, (r->nframes + 1) * sizeof(*grown));
	if (!f || !grown) {
		free(f);
		hmap_del(&r->index, &k);
		goto nomem;
	}
	r->frames = grown;
	f->name = strdup(name);
	f->file = strdup(file);
	f->line = line;
	f->firstlineno = firstlineno;
	f->op = op ? strdup(op) : NULL;
	f->id = (uint32_t)r->nframes;
	r->frames[r->nframes++] = f;
	*slot = f;
	if (f->name && f->file && (!op || f->op))
		return f;
nomem:
	errno = ENOMEM;
	return NULL;
}

struct rsample *resolved_slot(struct resolved *r)
{
	struct rsample *s;

	if (array_grow(&r->samples, &r->samples_cap, r->nsamples + 1, sizeof(*s), 256))
		return NULL;
	s = &r->samples[r->nsamples];
	memset(s, 0, sizeof(*s));
	return s;
}

/* The frame table of dst rebuilt from src's, same ids. */
static int copy_frames(const struct resolved *src, struct resolved *dst)
{
	size_t i;

	for (i = 0; i < src->nframes; i++) {
		const struct rframe *f = src->frames[i];

		if (!resolved_intern_op(dst, f->name, f->file, f->line, f->firstlineno, f->op))
			return -ENOMEM;
	}
	return 0;
}

int resolved_copy(const struct resolved *src, struct resolved *dst)
{
	size_t i;
	uint32_t j;
	int ret;

	dst->event = src->event;
	dst->rate = src->rate;
	dst->start_unix = src->start_unix;
	dst->duration_s = src->duration_s;
	ret = resolved_init(dst);
	if (ret || (ret = copy_frames(src, dst)))
		return ret;
	dst->samples = calloc(src->nsamples + 1, sizeof(*dst->samples));
	if (!dst->samples)
		return -ENOMEM;
	dst->samples_cap = src->nsamples + 1;
	for (i = 0; i < src->nsamples; i++) {
		const struct rsample *a = &src->samples[i];
		struct rsample *b = &dst->samples[i];

		*b = *a;
		b->tname = a->tname ? strdup(a->tname) : NULL;
		b->frames = calloc(a->depth + 1, sizeof(*b->frames));
		if (!b->frames || (a->tname && !b->tname)) {
			free(b->frames);
			free(b->tname);
			return -ENOMEM;
		}
		dst->nsamples++;
		for (j = 0; j < a->depth; j++)
			b->frames[j] = dst->frames[a->frames[j]->id];
	}
	dst->total = src->total;
	return 0;
}

int resolved_set_procs(struct resolved *r, const struct rproc *procs, uint32_t n)
{
	struct rproc *g = realloc(r->procs, (n + 1) * sizeof(*g));

	if (!g)
		return -ENOMEM;
	if (n)	/* procs may be NULL: no process found yet (-s, -- CMD) */
		memcpy(g, procs, n * sizeof(*g));
	r->procs = g;
	r->nprocs = n;
	return 0;
}

/* The row a sample merges into: same frames and flags, and the same
 * process and thread only where the output can tell them apart. */
static uint64_t row_hash(const struct rsample *s, int by_proc, int by_thread)
{
	uint64_t h = hash_bytes(&s->flags, sizeof(s->flags));
	uint32_t i;

	if (by_proc)
		h = h * 31 + s->proc;
	if (by_thread)
		h = h * 31 + s->tid;
	for (i = 0; i < s->depth; i++)
		h = h * 1000003 + s->frames[i]->id;
	return h;
}

static int same_row(const struct rsample *a, const struct rsample *b, int by_proc,
		    int by_thread)
{
	if (a->flags != b->flags || a->depth != b->depth)
		return 0;
	if (by_proc && a->proc != b->proc)
		return 0;
	if (by_thread && a->tid != b->tid)
		return 0;
	return !memcmp(a->frames, b->frames, a->depth * sizeof(a->frames[0]));
}

size_t resolved_merge_last(struct resolved *r, int by_proc, int by_thread)
{
	struct rsample *s = &r->samples[r->nsamples - 1];
	uint64_t key[2] = { row_hash(s, by_proc, by_thread), 0 };
	void **slot;
	int added;

	for (;;) {
		slot = hmap_put(&r->dedup, key, &added);
		if (!slot)
			return r->nsamples - 1;
		if (added) {
			*slot = (void *)(uintptr_t)r->nsamples;
			return r->nsamples - 1;
		}
		if (same_row(&r->samples[(uintptr_t)*slot - 1], s, by_proc, by_thread))
			break;
		key[1]++;	/* a different row with the same hash */
	}
	r->samples[(uintptr_t)*slot - 1].count += s->count;
	free(s->frames);
	free(s->tname);
	r->nsamples--;
	return (uintptr_t)*slot - 1;
}

int resolved_check(const struct resolved *r)
{
	size_t i;
	uint32_t j;

	for (i = 0; i < r->nsamples; i++) {
		const struct rsample *s = &r->samples[i];

		if (s->proc >= r->nprocs && r->nprocs)
			return -EINVAL;
		for (j = 0; j < s->depth; j++) {
			const struct rframe *f = s->frames[j];

			if (f->id >= r->nframes || r->frames[f->id] != f)
				return -EINVAL;
		}
	}
	for (i = 0; i < r->nticks; i++)
		if (r->ticks[i].sample >= r->nsamples || r->ticks[i].thread >= r->nthreads ||
		    r->ticks[i].end_ns < r->ticks[i].t_ns ||
		    (i && r->ticks[i].t_ns < r->ticks[i - 1].t_ns))
			return -EINVAL;
	return 0;
}

int resolved_lane_bases(struct resolved *r, int64_t *base)
{
	struct hmap seen;
	void **slot;
	uintptr_t v;
	size_t i;

	if (hmap_init(&seen, 2 * sizeof(uint32_t)))
		return -ENOMEM;
	for (i = 0; i < r->nthreads; i++) {
		struct rthread *t = &r->threads[i];
		uint32_t key[2] = { t->proc, t->tid };

		slot = hmap_put(&seen, key, NULL);
		if (!slot) {
			hmap_free(&seen);
			return -ENOMEM;
		}
		/* the value: how many came before (high 32 bits), the first's
		 * index + 1 (low 32 bits) */
		v = *slot ? (uintptr_t)*slot : (uintptr_t)(i + 1);
		t->lane = (uint32_t)(v >> 32);
		if (base)
			base[i] = (int64_t)(v & 0xffffffffu) - 1;
		*slot = (void *)(v + ((uintptr_t)1 << 32));
	}
	hmap_free(&seen);
	return 0;
}

int resolved_number_lanes(struct resolved *r)
{
	return resolved_lane_bases(r, NULL);
}

void resolved_free(struct resolved *r)
{
	size_t i;

	for (i = 0; i < r->nsamples; i++) {
		free(r->samples[i].frames);
		free(r->samples[i].tname);
	}
	for (i = 0; i < r->nframes; i++) {
		free(r->frames[i]->name);
		free(r->frames[i]->file);
		free(r->frames[i]->op);
		free(r->frames[i]);
	}
	for (i = 0; i < r->nthreads; i++)
		free(r->threads[i].name);
	free(r->threads);
	free(r->ticks);
	free(r->samples);
	free(r->frames);
	free(r->procs);
	hmap_free(&r->index);
	hmap_free(&r->dedup);
	memset(r, 0, sizeof(*r));
}

int rframe_cmp_place(const struct rframe *x, const struct rframe *y)
{
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->file, y->file);
}

static int cmp_func(const void *a, const void *b)
{
	const struct rframe *x = *(const struct rframe *const *)a;
	const struct rframe *y = *(const struct rframe *const *)b;
	int c = rframe_cmp_place(x, y);

	if (c)
		return c;
	if (x->firstlineno != y->firstlineno)
		return x->firstlineno < y->firstlineno ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int same_func(const struct rframe *x, const struct rframe *y)
{
	return x->firstlineno == y->firstlineno && !strcmp(x->name, y->name) &&
	       !strcmp(x->file, y->file);
}

/*
 * Sorting groups the frames of one function together: the first line keeps
 * two functions apart that share a name in one file (lambdas, redefinitions).
 */
int funcs_build(const struct resolved *r, struct func_table *ft)
{
	const struct rframe **sorted;
	size_t i;

	memset(ft, 0, sizeof(*ft));
	sorted = malloc((r->nframes + 1) * sizeof(*sorted));
	ft->of_frame = malloc((r->nframes + 1) * sizeof(*ft->of_frame));
	ft->funcs = malloc((r->nframes + 1) * sizeof(*ft->funcs));
	if (!sorted || !ft->of_frame || !ft->funcs) {
		free(sorted);
		funcs_free(ft);
		return -ENOMEM;
	}
	for (i = 0; i < r->nframes; i++)
		sorted[i] = r->frames[i];
	qsort(sorted, r->nframes, sizeof(*sorted), cmp_func);
	for (i = 0; i < r->nframes; i++) {
		if (!ft->n || !same_func(ft->funcs[ft->n - 1], sorted[i]))
			ft->funcs[ft->n++] = sorted[i];
		ft->of_frame[sorted[i]->id] = (uint32_t)(ft->n - 1);
	}
	free(sorted);
	return 0;
}

void funcs_free(struct func_table *ft)
{
	free(ft->of_frame);
	free(ft->funcs);
	memset(ft, 0, sizeof(*ft));
}

int resolved_function_totals(const struct resolved *r, const struct func_table *ft,
			     struct func_count *counts)
{
	/* 1 + the index of the last sample that counted in a function's total */
	size_t *stamp = calloc(ft->n + 1, sizeof(*stamp)), i;
	uint32_t j;

	if (!stamp)
		return -ENOMEM;
	memset(counts, 0, ft->n * sizeof(*counts));
	for (i = 0; i < r->nsamples; i++) {
		const struct rsample *s = &r->samples[i];

		if (!s->depth)
			continue;
		counts[ft->of_frame[s->frames[s->depth - 1]->id]].self += s->count;
		for (j = 0; j < s->depth; j++) {
			uint32_t f = ft->of_frame[s->frames[j]->id];

			if (stamp[f] == i + 1)
				continue;
			stamp[f] = i + 1;
			counts[f].total += s->count;
		}
	}
	free(stamp);
	return 0;
}

int rtick_cmp(const void *a, const void *b)
{
	const struct rtick *x = a, *y = b;

	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->sample < y->sample ? -1 : x->sample > y->sample;
}
