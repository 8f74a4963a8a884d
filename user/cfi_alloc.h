/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cfi_alloc - where the unwind tables go in the `cfi_rows` array map, and
 * which are held: no BPF here, so it is unit-tested alone
 * (tests/unit/test_cfi_alloc.c).
 *
 * cfi_extents: the free stretches of [0, cap), first fit, coalesced on
 * free. Its free list never holds two adjacent stretches, so it has at most
 * one more entry than there are allocations: bounded by the tables loaded.
 *
 * cfi_store: the tables in the map, by key (the cache's table: one per build
 * id), each with the count of process mappings that hold it. A table no
 * process holds any more stays loaded (the next process of the same
 * program maps the same libraries) until its rows are wanted for another:
 * then the least recently released ones are freed, one at a time, until
 * the new table fits; if it still does not, the holds of processes that
 * are gone are released (their exit not read yet), and then, when enough
 * rows are free but in pieces, the held tables in the way are moved to
 * free rows elsewhere (a hook): the fewest rows that make room.
 */
#ifndef TB_CFI_ALLOC_H
#define TB_CFI_ALLOC_H

#include <stddef.h>
#include <stdint.h>

struct cfi_extent {
	uint32_t first;
	uint32_t n;
};

struct cfi_extents {
	uint32_t cap;			/* rows [0, cap) */
	uint32_t used;			/* rows allocated */
	struct cfi_extent *free;	/* sorted by first, none adjacent */
	size_t nfree, capfree;
};

int cfi_extents_init(struct cfi_extents *x, uint32_t cap);
void cfi_extents_release(struct cfi_extents *x);
/* The first row of the lowest free stretch of n rows (n > 0), or -ENOSPC. */
int64_t cfi_extents_alloc(struct cfi_extents *x, uint32_t n);
/* Rows [first, first + n) free again: 0, -EINVAL (not allocated), -ENOMEM. */
int cfi_extents_free(struct cfi_extents *x, uint32_t first, uint32_t n);
/* The longest free stretch: what a table may take now without eviction. */
uint32_t cfi_extents_largest(const struct cfi_extents *x);
/* Rows [first, first + n), inside one free stretch, taken: 0, -ENOSPC or -ENOMEM. */
int cfi_extents_take(struct cfi_extents *x, uint32_t first, uint32_t n);

struct cfi_held {
	const void *key;
	uint32_t first;
	uint32_t n;		/* 0: did not fit (refused) */
	uint32_t refs;		/* process mappings that hold it */
	uint64_t released;	/* the store's clock when refs fell to 0 */
};

struct cfi_store_stats {
	uint64_t loaded;	/* tables given rows, over the run */
	uint64_t freed;		/* tables whose rows were freed for others */
	uint64_t rows_freed;
	uint64_t refused;	/* tables that did not fit even after freeing (once each) */
	uint64_t leaked;	/* rows lost to a failed free (out of memory) */
	uint64_t moved;		/* held tables moved to join free stretches */
	uint64_t reaped;	/* holders found gone before their exit was read */
};

/* Told of each table whose rows the store frees. */
typedef void (*cfi_forget_fn)(void *ctx, const void *key);
/*
 * Copies key's n rows at from to to (free, not overlapping them) and points
 * every holder there; from is freed when it returns. 0 or -errno.
 */
typedef int (*cfi_move_fn)(void *ctx, const void *key, uint32_t from, uint32_t to, uint32_t n);
/* Releases (cfi_store_put) the holds of holders known to be gone: how many. */
typedef int (*cfi_reap_fn)(void *ctx);

struct cfi_store {
	struct cfi_extents x;
	struct cfi_held *tabs;
	size_t ntabs, captabs;
	uint64_t clock;
	struct cfi_store_stats st;
	cfi_forget_fn forget;	/* may be NULL */
	cfi_move_fn move;	/* may be NULL: nothing held moves */
	cfi_reap_fn reap;	/* may be NULL */
	void *ctx;
};

int cfi_store_init(struct cfi_store *s, uint32_t cap, cfi_forget_fn forget, void *ctx);
/*
 * When a table does not fit once the idle ones are freed: reap releases
 * the holds of the gone, move takes a held table out of the way.
 */
void cfi_store_hooks(struct cfi_store *s, cfi_move_fn move, cfi_reap_fn reap);
void cfi_store_release(struct cfi_store *s);
/*
 * One more hold on key's table of nrows rows (nrows > 0). *out: its place;
 * out->n 0 if it does not fit. Returns 1 if the rows are new (the caller
 * writes them at out->first, then), 0 if they were there, or -ENOMEM.
 * Freeing for room may overwrite tables nobody holds (each told to forget).
 */
int cfi_store_get(struct cfi_store *s, const void *key, uint32_t nrows, struct cfi_held *out);
/*
 * One hold fewer. A refused table stays known (counted refused once), its
 * next hold tries for room again.
 */
void cfi_store_put(struct cfi_store *s, const void *key);
/*
 * A new place that the caller could not fill after all (its rows failed to
 * load): freed, and the table forgotten.
 */
void cfi_store_drop(struct cfi_store *s, const void *key);
/* Rows of tables held by some process, and of tables nobody holds. */
void cfi_store_rows(const struct cfi_store *s, uint64_t *held, uint64_t *idle);

#endif
