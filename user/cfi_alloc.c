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

int64_t cfi_extents_alloc(struct cfi_extents *x, uint32_t n)
{
	struct cfi_extent *e;
	uint32_t first;
	size_t i;

	for (i = 0; n && i < x->nfree; i++) {
		e = &x->free[i];
		if (e->n < n)
			continue;
		first = e->first;
		e->first += n;
		e->n -= n;
		if (!e->n) {
			memmove(e, e + 1, (x->nfree - i - 1) * sizeof(*e));
			x->nfree--;
		}
		x->used += n;
		return first;
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

/* A place for n rows, freeing idle tables for it while they last. */
static int64_t place(struct cfi_store *s, uint32_t n)
{
	int64_t first = cfi_extents_alloc(&s->x, n);
	struct cfi_held *h;

	while (first < 0 && n <= s->x.cap && (h = oldest_idle(s))) {
		s->st.freed++;
		s->st.rows_freed += h->n;
		forget(s, h);
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
