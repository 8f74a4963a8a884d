// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The unwind tables' places in the `cfi_rows` map and their holders
 * (cfi_alloc.h). Linear scans: a run holds tens to a few hundred tables.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi_alloc.h"

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap = *cap ? *cap * 2 : 16;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, ncap * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}

int cfi_extents_init(struct cfi_extents *x, uint32_t cap)
{
	memset(x, 0, sizeof(*x));
	x->cap = cap;
	if (!cap)
		return 0;
	if (grow((void **)&x->free, &x->capfree, 0, sizeof(*x->free)))
		return -ENOMEM;
	x->free[0] = (struct cfi_extent){ .first = 0, .n = cap };
	x->nfree = 1;
	return 0;
}

void cfi_extents_release(struct cfi_extents *x)
{
	free(x->free);
	memset(x, 0, sizeof(*x));
}

/* The first n rows of free stretch i (at least n long). */
static uint32_t take(struct cfi_extents *x, size_t i, uint32_t n)
{
	struct cfi_extent *e = &x->free[i];
	uint32_t first = e->first;

	e->first += n;
	e->n -= n;
	if (!e->n) {
		memmove(e, e + 1, (x->nfree - i - 1) * sizeof(*e));
		x->nfree--;
	}
	x->used += n;
	return first;
}

int64_t cfi_extents_alloc(struct cfi_extents *x, uint32_t n)
{
	size_t i;

	for (i = 0; n && i < x->nfree; i++)
		if (x->free[i].n >= n)
			return take(x, i, n);
	return -ENOSPC;
}

int cfi_extents_take(struct cfi_extents *x, uint32_t first, uint32_t n)
{
	struct cfi_extent *e;
	size_t i;

	for (i = 0; n && i < x->nfree; i++) {
		e = &x->free[i];
		if (e->first > first || (uint64_t)first + n > (uint64_t)e->first + e->n)
			continue;
		if (e->first == first) {
			take(x, i, n);
		} else if (first + n == e->first + e->n) {
			e->n -= n;
			x->used += n;
		} else {	/* from its middle: split in two */
			if (grow((void **)&x->free, &x->capfree, x->nfree, sizeof(*x->free)))
				return -ENOMEM;
			e = &x->free[i];
			memmove(e + 1, e, (x->nfree - i) * sizeof(*e));
			x->nfree++;
			e->n = first - e->first;
			e[1].n -= first + n - e[1].first;
			e[1].first = first + n;
			x->used += n;
		}
		return 0;
	}
	return -ENOSPC;
}

int cfi_extents_free(struct cfi_extents *x, uint32_t first, uint32_t n)
{
	struct cfi_extent *prev, *next;
	size_t i;

	if (!n || first > x->cap || n > x->cap - first || n > x->used)
		return -EINVAL;
	for (i = 0; i < x->nfree && x->free[i].first < first; i++)
		;
	prev = i ? &x->free[i - 1] : NULL;
	next = i < x->nfree ? &x->free[i] : NULL;
	/* Part of it free already: not an allocation of ours. */
	if ((prev && prev->first + prev->n > first) || (next && first + n > next->first))
		return -EINVAL;
	if (prev && prev->first + prev->n == first) {
		prev->n += n;
		if (next && first + n == next->first) {
			prev->n += next->n;
			memmove(next, next + 1, (x->nfree - i - 1) * sizeof(*next));
			x->nfree--;
		}
	} else if (next && first + n == next->first) {
		next->first = first;
		next->n += n;
	} else {
		if (grow((void **)&x->free, &x->capfree, x->nfree, sizeof(*x->free)))
			return -ENOMEM;
		memmove(&x->free[i + 1], &x->free[i], (x->nfree - i) * sizeof(*x->free));
		x->free[i] = (struct cfi_extent){ .first = first, .n = n };
		x->nfree++;
	}
	x->used -= n;
	return 0;
}

uint32_t cfi_extents_largest(const struct cfi_extents *x)
{
	uint32_t best = 0;
	size_t i;

	for (i = 0; i < x->nfree; i++)
		if (x->free[i].n > best)
			best = x->free[i].n;
	return best;
}

/* ---- The tables held ---------------------------------------------------- */

int cfi_store_init(struct cfi_store *s, uint32_t cap, cfi_forget_fn forget, void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->forget = forget;
	s->ctx = ctx;
	return cfi_extents_init(&s->x, cap);
}

void cfi_store_hooks(struct cfi_store *s, cfi_move_fn move, cfi_reap_fn reap)
{
	s->move = move;
	s->reap = reap;
}

void cfi_store_release(struct cfi_store *s)
{
	cfi_extents_release(&s->x);
	free(s->tabs);
	memset(s, 0, sizeof(*s));
}

static struct cfi_held *find(struct cfi_store *s, const void *key)
{
	size_t i;

	for (i = 0; i < s->ntabs; i++)
		if (s->tabs[i].key == key)
			return &s->tabs[i];
	return NULL;
}

/* Forget h: its rows (if any) freed, its entry gone. */
static void forget(struct cfi_store *s, struct cfi_held *h)
{
	const void *key = h->key;
	uint32_t n = h->n;

	if (n && cfi_extents_free(&s->x, h->first, n))
		s->st.leaked += n;
	*h = s->tabs[--s->ntabs];
	if (n && s->forget)
		s->forget(s->ctx, key);
}

/* The table nobody holds released longest ago, if any. */
static struct cfi_held *oldest_idle(struct cfi_store *s)
{
	struct cfi_held *best = NULL;
	size_t i;

	for (i = 0; i < s->ntabs; i++)
		if (!s->tabs[i].refs && s->tabs[i].n &&
		    (!best || s->tabs[i].released < best->released))
			best = &s->tabs[i];
	return best;
}

/* A planned move: h's rows to to. */
struct cfi_move {
	struct cfi_held *h;
	uint32_t to;
};

static int by_rows_desc(const void *a, const void *b)
{
	uint32_t x = ((const struct cfi_move *)a)->h->n, y = ((const struct cfi_move *)b)->h->n;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The free stretches' parts outside rows [lo, hi), into room: how many. */
static size_t room_outside(const struct cfi_extents *x, uint64_t lo, uint64_t hi,
			   struct cfi_extent *room, uint64_t *inside)
{
	uint64_t a, b;
	size_t i, n = 0;

	*inside = 0;
	for (i = 0; i < x->nfree; i++) {
		a = x->free[i].first;
		b = a + x->free[i].n;
		if (a < lo)
			room[n++] = (struct cfi_extent){ (uint32_t)a, (uint32_t)((b < lo ? b : lo) - a) };
		if (b > hi)
			room[n++] = (struct cfi_extent){ (uint32_t)(a > hi ? a : hi),
							 (uint32_t)(b - (a > hi ? a : hi)) };
		if (a < hi && b > lo)
			*inside += (b < hi ? b : hi) - (a > lo ? a : lo);
	}
	return n;
}

/*
 * The moves that empty rows [lo, hi): every held table there (in whole or
 * in part) to the free rows outside, the largest first, each to the
 * shortest free piece left that takes it. The rows they move, or
 * UINT64_MAX if the tables do not all go, or rows there are neither free
 * nor a table's (leaked).
 */
static uint64_t plan_window(const struct cfi_store *s, uint64_t lo, uint64_t hi,
			    struct cfi_extent *room, struct cfi_move *plan, size_t *nplan)
{
	uint64_t covered, rows = 0;
	size_t nroom = room_outside(&s->x, lo, hi, room, &covered), i, j, best;
	struct cfi_held *h;

	*nplan = 0;
	for (i = 0; i < s->ntabs; i++) {
		h = &s->tabs[i];
		if (!h->n || h->first >= hi || h->first + h->n <= lo)
			continue;
		plan[(*nplan)++].h = h;
		covered += (h->first + h->n < hi ? h->first + h->n : hi) - (h->first > lo ? h->first : lo);
	}
	if (covered != hi - lo)
		return UINT64_MAX;
	qsort(plan, *nplan, sizeof(*plan), by_rows_desc);
	for (j = 0; j < *nplan; j++) {
		best = nroom;
		for (i = 0; i < nroom; i++)
			if (room[i].n >= plan[j].h->n && (best == nroom || room[i].n < room[best].n))
				best = i;
		if (best == nroom)
			return UINT64_MAX;
		plan[j].to = room[best].first;
		room[best].first += plan[j].h->n;
		room[best].n -= plan[j].h->n;
		rows += plan[j].h->n;
	}
	return rows;
}

/* h's rows to to (free, outside them) by the owner's hook. 0 or -errno. */
static int move_to(struct cfi_store *s, struct cfi_held *h, uint32_t to)
{
	int err = cfi_extents_take(&s->x, to, h->n);

	if (err)
		return err;
	err = s->move(s->ctx, h->key, h->first, to, h->n);
	if (err) {
		cfi_extents_free(&s->x, to, h->n);
		return err;
	}
	if (cfi_extents_free(&s->x, h->first, h->n))
		s->st.leaked += h->n;
	h->first = to;
	s->st.moved++;
	return 0;
}

/*
 * Free rows enough for n but in pieces, held tables between them (first
 * fit leaves such holes): n rows made free in one piece by moving the
 * tables in the way. The rows tried are those starting where a free
 * stretch starts or ending where one ends; the plan that moves the fewest
 * rows is carried out. 0, or -ENOSPC / -ENOMEM / the hook's error (the
 * tables moved until then stay where they went).
 */
static int make_room(struct cfi_store *s, uint32_t n)
{
	struct cfi_extent *room = malloc((2 * s->x.nfree + 1) * sizeof(*room));
	struct cfi_move *plan = malloc((s->ntabs + 1) * sizeof(*plan));
	struct cfi_move *best = malloc((s->ntabs + 1) * sizeof(*best));
	uint64_t lo, end, rows, fewest = UINT64_MAX;
	size_t nplan, nbest = 0, i, side;
	int err = -ENOMEM;

	if (!room || !plan || !best)
		goto out;
	for (i = 0; i < s->x.nfree; i++) {
		for (side = 0; side < 2; side++) {
			end = (uint64_t)s->x.free[i].first + s->x.free[i].n;
			lo = side ? end - n : s->x.free[i].first;
			if ((side && end < n) || lo + n > s->x.cap)
				continue;
			rows = plan_window(s, lo, lo + n, room, plan, &nplan);
			if (rows < fewest) {
				fewest = rows;
				nbest = nplan;
				memcpy(best, plan, nplan * sizeof(*plan));
			}
		}
	}
	err = fewest == UINT64_MAX ? -ENOSPC : 0;
	for (i = 0; !err && i < nbest; i++)
		err = move_to(s, best[i].h, best[i].to);
out:
	free(room);
	free(plan);
	free(best);
	return err;
}

/*
 * A place for n rows: tables nobody holds freed for it while they last,
 * then (once) the holds of processes known gone released (the owner's reap
 * hook: an exit not read yet), then held tables moved out of the way.
 */
static int64_t place(struct cfi_store *s, uint32_t n)
{
	int64_t first = cfi_extents_alloc(&s->x, n);
	struct cfi_held *h;
	int reaped = !s->reap, moved = !s->move, r;

	while (first < 0 && n <= s->x.cap) {
		if ((h = oldest_idle(s))) {
			s->st.freed++;
			s->st.rows_freed += h->n;
			forget(s, h);
		} else if (!reaped) {
			reaped = 1;
			r = s->reap(s->ctx);
			s->st.reaped += r > 0 ? (uint64_t)r : 0;
		} else if (moved || s->x.cap - s->x.used < n || make_room(s, n)) {
			break;
		} else {
			moved = 1;
		}
		first = cfi_extents_alloc(&s->x, n);
	}
	return first;
}

int cfi_store_get(struct cfi_store *s, const void *key, uint32_t nrows, struct cfi_held *out)
{
	struct cfi_held *h = find(s, key);
	int64_t first;

	if (h && h->n) {
		h->refs++;
		*out = *h;
		return 0;
	}
	if (h) {	/* refused before: room again? (counted refused once) */
		first = nrows ? place(s, nrows) : -ENOSPC;
		h = find(s, key);	/* freeing moves entries */
		h->refs++;
		if (first >= 0) {
			h->first = (uint32_t)first;
			h->n = nrows;
			s->st.loaded++;
		}
		*out = *h;
		return h->n ? 1 : 0;
	}
	if (grow((void **)&s->tabs, &s->captabs, s->ntabs, sizeof(*s->tabs)))
		return -ENOMEM;
	first = nrows ? place(s, nrows) : -ENOSPC;
	h = &s->tabs[s->ntabs++];
	*h = (struct cfi_held){ .key = key, .refs = 1 };
	if (first < 0) {
		s->st.refused++;
	} else {
		h->first = (uint32_t)first;
		h->n = nrows;
		s->st.loaded++;
	}
	*out = *h;
	return h->n ? 1 : 0;
}

void cfi_store_put(struct cfi_store *s, const void *key)
{
	struct cfi_held *h = find(s, key);

	if (!h || !h->refs || --h->refs)
		return;
	h->released = ++s->clock;
}

void cfi_store_drop(struct cfi_store *s, const void *key)
{
	struct cfi_held *h = find(s, key);

	if (!h)
		return;
	if (h->n)
		s->st.loaded--;
	forget(s, h);
}

void cfi_store_rows(const struct cfi_store *s, uint64_t *held, uint64_t *idle)
{
	size_t i;

	*held = *idle = 0;
	for (i = 0; i < s->ntabs; i++)
		*(s->tabs[i].refs ? held : idle) += s->tabs[i].n;
}
