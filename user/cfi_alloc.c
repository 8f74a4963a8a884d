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

int64_t cfi_extents_alloc_apart(struct cfi_extents *x, uint32_t n, uint32_t first, uint32_t len)
{
	const struct cfi_extent *e;
	size_t i;

	for (i = 0; n && i < x->nfree; i++) {
		e = &x->free[i];
		if (e->n >= n && e->first + e->n != first && e->first != first + len)
			return take(x, i, n);
	}
	return -ENOSPC;
}

uint32_t cfi_extents_around(const struct cfi_extents *x, uint32_t first, uint32_t len)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < x->nfree; i++)
		if (x->free[i].first + x->free[i].n == first || x->free[i].first == first + len)
			n += x->free[i].n;
	return n;
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

/* The longest free stretch not next to h's rows. */
static uint32_t largest_apart(const struct cfi_extents *x, const struct cfi_held *h)
{
	uint32_t best = 0;
	size_t i;

	for (i = 0; i < x->nfree; i++)
		if (x->free[i].n > best && x->free[i].first + x->free[i].n != h->first &&
		    x->free[i].first != h->first + h->n)
			best = x->free[i].n;
	return best;
}

/*
 * The held table cheapest to move (fewest rows) whose place and the free
 * stretches on either side of it make n rows, and that a free stretch
 * elsewhere takes; NULL if none.
 */
static struct cfi_held *in_the_way(struct cfi_store *s, uint32_t n)
{
	struct cfi_held *h, *best = NULL;
	size_t i;

	for (i = 0; i < s->ntabs; i++) {
		h = &s->tabs[i];
		if (!h->n || (best && h->n >= best->n) ||
		    (uint64_t)h->n + cfi_extents_around(&s->x, h->first, h->n) < n ||
		    largest_apart(&s->x, h) < h->n)
			continue;
		best = h;
	}
	return best;
}

/*
 * Free space in pieces too short for n rows while a held table sits between
 * them (first fit leaves such holes): that table moved elsewhere by the
 * owner's move hook, its place freed. 0, or -ENOSPC / the hook's error.
 */
static int move_one(struct cfi_store *s, uint32_t n)
{
	struct cfi_held *h;
	int64_t to;
	int err;

	if (!s->move || !(h = in_the_way(s, n)))
		return -ENOSPC;
	to = cfi_extents_alloc_apart(&s->x, h->n, h->first, h->n);
	if (to < 0)
		return (int)to;
	err = s->move(s->ctx, h->key, h->first, (uint32_t)to, h->n);
	if (err) {
		cfi_extents_free(&s->x, (uint32_t)to, h->n);
		return err;
	}
	if (cfi_extents_free(&s->x, h->first, h->n))
		s->st.leaked += h->n;
	h->first = (uint32_t)to;
	s->st.moved++;
	return 0;
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
	int reaped = !s->reap, r;
	size_t moves = 0;

	while (first < 0 && n <= s->x.cap) {
		if ((h = oldest_idle(s))) {
			s->st.freed++;
			s->st.rows_freed += h->n;
			forget(s, h);
		} else if (!reaped) {
			reaped = 1;
			r = s->reap(s->ctx);
			s->st.reaped += r > 0 ? (uint64_t)r : 0;
		} else if (moves++ > s->ntabs || move_one(s, n)) {
			break;
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
