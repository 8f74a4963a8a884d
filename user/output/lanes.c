// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The waiting tasks' lanes of a timeline, bounded (see model.h): a server
 * makes thousands of short tasks, and one lane (one thread of gecko, one
 * track of a trace) each would bury the few that matter. So per thread
 * the LANES_OWN - 1 tasks that waited longest keep a lane of their own,
 * and the others share pooled lanes: each of their intervals goes into
 * the first pooled lane free at its start (the task's previous one if it
 * is), so a pooled lane never holds two intervals at once and there are
 * only as many as tasks waited at the same time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "output/model.h"
#include "util.h"

#define LANES_OWN	32	/* lanes per thread before pooling */

struct pooled {
	uint64_t busy;		/* the end of its last interval */
	uint32_t thread;	/* its index in the new threads */
};

struct pool {
	struct pooled *v;
	size_t n, cap;
};

struct plan {
	uint64_t *waited;	/* per thread: periods on its lane */
	int64_t *base;		/* per thread: its thread's own (lane 0) index */
	uint8_t *own;		/* per lane: keeps a lane of its own */
	uint32_t *to;		/* old thread index -> new (own lanes, threads) */
	int64_t *last;		/* per lane: the pooled lane it was last in, or -1 */
	struct pool *pools;	/* per thread (by lane 0 index) */
};

static int by_waited_desc(const void *a, const void *b, void *ctx)
{
	const uint64_t *w = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return w[x] != w[y] ? (w[x] < w[y] ? 1 : -1) : (x > y) - (x < y);
}

/* Which lanes keep their own: the LANES_OWN - 1 longest of each thread. */
static int pick_own(const struct resolved *r, struct plan *p)
{
	uint32_t *order = malloc((r->nthreads + 1) * sizeof(*order));
	uint32_t *kept = calloc(r->nthreads + 1, sizeof(*kept));	/* per base */
	size_t i, n = 0;

	if (!order || !kept) {
		free(order);
		free(kept);
		return -ENOMEM;
	}
	for (i = 0; i < r->nthreads; i++)
		if (r->threads[i].lane)
			order[n++] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), by_waited_desc, p->waited);
	for (i = 0; i < n; i++)
		if (kept[p->base[order[i]]] < LANES_OWN - 1) {
			kept[p->base[order[i]]]++;
			p->own[order[i]] = 1;
		}
	free(order);
	free(kept);
	return 0;
}

/* The name of pooled lane k of thread t. */
static char *pool_name(const struct rthread *t, size_t k)
{
	char *out;

	int n = t->name ? asprintf(&out, "%s: waiting tasks (%zu)", t->name, k + 1) :
			  asprintf(&out, "tid %u: waiting tasks (%zu)", t->tid, k + 1);

	return n < 0 ? NULL : out;
}

/* The pooled lane of tick k (of a pooled task), added to out if new. */
static int64_t pool_lane(const struct resolved *r, struct plan *p, const struct rtick *k,
			 struct rthread **out, size_t *nout, size_t *cap)
{
	struct pool *pl = &p->pools[p->base[k->thread]];
	int64_t j = p->last[k->thread];

	if (j < 0 || pl->v[j].busy > k->t_ns)
		for (j = 0; (size_t)j < pl->n && pl->v[j].busy > k->t_ns; j++)
			;
	if ((size_t)j == pl->n) {
		if (array_grow(&pl->v, &pl->cap, pl->n + 1, sizeof(*pl->v), 8) ||
		    array_grow(out, cap, *nout + 1, sizeof(**out), 16))
			return -ENOMEM;
		(*out)[*nout] = (struct rthread){
			.proc = r->threads[k->thread].proc, .tid = r->threads[k->thread].tid,
			/* its thread's own track, moved there already */
			.name = pool_name(&(*out)[p->to[p->base[k->thread]]], pl->n),
		};
		pl->v[pl->n++].thread = (uint32_t)(*nout)++;
	}
	pl->v[j].busy = k->end_ns;
	p->last[k->thread] = j;
	return pl->v[j].thread;
}

static int plan_init(struct resolved *r, struct plan *p)
{
	size_t n = r->nthreads + 1, i;

	*p = (struct plan){
		.waited = calloc(n, sizeof(uint64_t)), .base = calloc(n, sizeof(int64_t)),
		.own = calloc(n, 1), .to = calloc(n, sizeof(uint32_t)),
		.last = calloc(n, sizeof(int64_t)), .pools = calloc(n, sizeof(struct pool)),
	};
	if (!p->waited || !p->base || !p->own || !p->to || !p->last || !p->pools ||
	    resolved_lane_bases(r, p->base))
		return -ENOMEM;
	for (i = 0; i < r->nthreads; i++)
		p->last[i] = -1;
	for (i = 0; i < r->nticks; i++)
		p->waited[r->ticks[i].thread] += r->ticks[i].weight;
	return pick_own(r, p);
}

static void plan_free(const struct resolved *r, struct plan *p)
{
	size_t i;

	for (i = 0; p->pools && i < r->nthreads; i++)
		free(p->pools[i].v);
	free(p->waited);
	free(p->base);
	free(p->own);
	free(p->to);
	free(p->last);
	free(p->pools);
}

/* The new threads: every thread and own lane as it was, then the pooled
 * lanes; each tick moved to its new thread. */
static int rebuild(struct resolved *r, struct plan *p, struct rthread **out, size_t *nout)
{
	size_t i, cap = 0;
	int64_t j;

	*out = NULL;
	*nout = 0;
	for (i = 0; i < r->nthreads; i++) {
		if (r->threads[i].lane && !p->own[i])
			continue;
		if (array_grow(out, &cap, *nout + 1, sizeof(**out), 16))
			return -ENOMEM;
		(*out)[*nout] = r->threads[i];
		r->threads[i].name = NULL;	/* moved */
		p->to[i] = (uint32_t)(*nout)++;
	}
	for (i = 0; i < r->nticks; i++) {
		struct rtick *k = &r->ticks[i];

		if (!r->threads[k->thread].lane || p->own[k->thread]) {
			k->thread = p->to[k->thread];
			continue;
		}
		j = pool_lane(r, p, k, out, nout, &cap);
		if (j < 0)
			return (int)j;
		k->thread = (uint32_t)j;
	}
	return 0;
}

int resolved_pool_lanes(struct resolved *r)
{
	struct rthread *threads = NULL;
	struct plan p;
	size_t n = 0, i;
	int ret = plan_init(r, &p);

	if (!ret)
		ret = rebuild(r, &p, &threads, &n);
	plan_free(r, &p);
	for (i = 0; i < r->nthreads; i++)
		free(r->threads[i].name);
	free(r->threads);
	r->threads = threads;
	r->nthreads = n;
	if (ret) {
		r->nticks = 0;	/* their threads are gone */
		return ret;
	}
	return resolved_number_lanes(r);
}
