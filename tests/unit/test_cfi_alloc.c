// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The unwind tables' places in the rows map (user/cfi_alloc.c): the first-fit
 * extent allocator against a bitmap model, its fragmentation under churn,
 * and the holds by process that free a table only when room is needed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "cfi_alloc.h"

/* Free list invariants: sorted, inside [0, cap), never adjacent, sums to cap - used. */
static void check_extents(const struct cfi_extents *x)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < x->nfree; i++) {
		assert_true(x->free[i].n > 0);
		assert_true((uint64_t)x->free[i].first + x->free[i].n <= x->cap);
		if (i)
			assert_true(x->free[i - 1].first + x->free[i - 1].n < x->free[i].first);
		sum += x->free[i].n;
	}
	assert_int_equal(sum, x->cap - x->used);
}

static void test_extents_basic(void **state)
{
	struct cfi_extents x;

	(void)state;
	assert_int_equal(cfi_extents_init(&x, 100), 0);
	assert_int_equal(cfi_extents_alloc(&x, 30), 0);
	assert_int_equal(cfi_extents_alloc(&x, 30), 30);
	assert_int_equal(cfi_extents_alloc(&x, 30), 60);
	assert_int_equal(cfi_extents_alloc(&x, 11), -ENOSPC);
	assert_int_equal(cfi_extents_alloc(&x, 10), 90);
	assert_int_equal(x.nfree, 0);
	assert_int_equal(cfi_extents_alloc(&x, 1), -ENOSPC);
	/* A hole in the middle, then its neighbours: one stretch again. */
	assert_int_equal(cfi_extents_free(&x, 30, 30), 0);
	assert_int_equal(cfi_extents_largest(&x), 30);
	assert_int_equal(cfi_extents_free(&x, 30, 30), -EINVAL);	/* twice */
	assert_int_equal(cfi_extents_free(&x, 50, 20), -EINVAL);	/* overlaps the hole */
	assert_int_equal(cfi_extents_free(&x, 95, 10), -EINVAL);	/* past the end */
	assert_int_equal(cfi_extents_free(&x, 0, 30), 0);
	assert_int_equal(cfi_extents_free(&x, 60, 30), 0);
	assert_int_equal(x.nfree, 1);
	assert_int_equal(cfi_extents_largest(&x), 90);
	/* First fit: the lowest stretch that is long enough. */
	assert_int_equal(cfi_extents_alloc(&x, 5), 0);
	check_extents(&x);
	/* Rows taken by place: a stretch's end, its middle, its start. */
	assert_int_equal(cfi_extents_take(&x, 70, 20), 0);		/* [5, 70) */
	assert_int_equal(cfi_extents_take(&x, 30, 10), 0);		/* [5, 30) [40, 70) */
	assert_int_equal(x.nfree, 2);
	assert_int_equal(cfi_extents_take(&x, 5, 25), 0);		/* [40, 70) */
	assert_int_equal(x.nfree, 1);
	assert_int_equal(cfi_extents_take(&x, 35, 10), -ENOSPC);	/* part in use */
	assert_int_equal(cfi_extents_take(&x, 60, 11), -ENOSPC);
	assert_int_equal(cfi_extents_take(&x, 40, 0), -ENOSPC);
	assert_int_equal(x.used, 70);
	check_extents(&x);
	cfi_extents_release(&x);
}

#define CAP	(1u << 16)
#define LIVE	64

/*
 * Random tables (sizes like a process's libraries: many small, a few large)
 * allocated and freed, checked against a bitmap of the rows in use.
 * Fragmentation: when an allocation fails, how much is free in all, and
 * how long the longest free stretch is.
 */
static void test_extents_model_and_fragmentation(void **state)
{
	static uint8_t used[CAP];
	struct { int64_t first; uint32_t n; } live[LIVE] = { { 0 } };
	struct cfi_extents x;
	unsigned seed = 7;
	uint64_t fails = 0, free_at_fail = 0, allocs = 0;
	uint32_t k, n, i;
	int64_t first;
	int round;

	(void)state;
	memset(used, 0, sizeof(used));
	assert_int_equal(cfi_extents_init(&x, CAP), 0);
	for (round = 0; round < 200000; round++) {
		k = (uint32_t)rand_r(&seed) % LIVE;
		if (live[k].n) {
			assert_int_equal(cfi_extents_free(&x, (uint32_t)live[k].first, live[k].n), 0);
			for (i = 0; i < live[k].n; i++)
				used[live[k].first + i] = 0;
			live[k].n = 0;
			continue;
		}
		n = rand_r(&seed) % 8 ? 1 + (uint32_t)rand_r(&seed) % 1500 :
			4000 + (uint32_t)rand_r(&seed) % 8000;
		first = cfi_extents_alloc(&x, n);
		if (first < 0) {
			assert_int_equal(first, -ENOSPC);
			assert_true(cfi_extents_largest(&x) < n);
			fails++;
			free_at_fail += x.cap - x.used;
			continue;
		}
		allocs++;
		for (i = 0; i < n; i++) {
			assert_int_equal(used[first + i], 0);
			used[first + i] = 1;
		}
		live[k].first = first;
		live[k].n = n;
		if (!(round % 997))
			check_extents(&x);
	}
	check_extents(&x);
	/* Bounded: at most one free stretch more than the live tables. */
	assert_true(x.nfree <= LIVE + 1);
	/* A refusal with most of the map free would mean first fit fragments
	 * badly; measured: about a third of the map free at a refusal (the
	 * live tables hold ~2/3 on average at this load). */
	fprintf(stderr, "extents: %llu allocations, %llu refused, %.0f%% of the rows free at a refusal on average\n",
		(unsigned long long)allocs, (unsigned long long)fails,
		fails ? 100.0 * (double)free_at_fail / (double)fails / CAP : 0.0);
	assert_true(fails < allocs / 10);
	assert_true(!fails || free_at_fail / fails < CAP / 2);
	cfi_extents_release(&x);
}

static const void *forgotten[16];
static int nforgotten;

static void on_forget(void *ctx, const void *key)
{
	(void)ctx;
	if (nforgotten < 16)
		forgotten[nforgotten++] = key;
}

/* Tables stand for files; their keys are any distinct addresses. */
static const char A[1], B[1], C[1], D[1];

static void test_store_holds(void **state)
{
	struct cfi_store s;
	struct cfi_held h;
	uint64_t held, idle;

	(void)state;
	nforgotten = 0;
	assert_int_equal(cfi_store_init(&s, 100, on_forget, NULL), 0);
	/* Two processes map A; one maps B too. */
	assert_int_equal(cfi_store_get(&s, A, 40, &h), 1);
	assert_int_equal(h.first, 0);
	assert_int_equal(cfi_store_get(&s, A, 40, &h), 0);	/* loaded already */
	assert_int_equal(h.refs, 2);
	assert_int_equal(cfi_store_get(&s, B, 30, &h), 1);
	assert_int_equal(h.first, 40);
	/* The second process exits: B is idle, still loaded. */
	cfi_store_put(&s, B);
	cfi_store_put(&s, A);
	cfi_store_rows(&s, &held, &idle);
	assert_int_equal(held, 40);
	assert_int_equal(idle, 30);
	assert_int_equal(nforgotten, 0);
	/* A new process maps B again: no reload. */
	assert_int_equal(cfi_store_get(&s, B, 30, &h), 0);
	assert_int_equal(h.first, 40);
	cfi_store_put(&s, B);
	/* C needs 50 rows: B (idle) is freed for it, A (held) is not. */
	assert_int_equal(cfi_store_get(&s, C, 50, &h), 1);
	assert_int_equal(h.first, 40);
	assert_int_equal(nforgotten, 1);
	assert_ptr_equal(forgotten[0], B);
	assert_int_equal(s.st.freed, 1);
	assert_int_equal(s.st.rows_freed, 30);
	/* D does not fit while A and C are held: refused, and refused once
	 * only however often it is asked for (no rows: no forget hook). */
	assert_int_equal(cfi_store_get(&s, D, 20, &h), 0);
	assert_int_equal(h.n, 0);
	cfi_store_put(&s, D);
	assert_int_equal(cfi_store_get(&s, D, 20, &h), 0);
	cfi_store_put(&s, D);
	assert_int_equal(s.st.refused, 1);
	assert_int_equal(s.ntabs, 3);
	assert_int_equal(nforgotten, 1);
	/* C's process exits; now D fits, in C's rows. */
	cfi_store_put(&s, C);
	assert_int_equal(cfi_store_get(&s, D, 20, &h), 1);
	assert_int_equal(h.first, 40);
	assert_int_equal(h.refs, 1);
	/* A table larger than the map never evicts anything. */
	assert_int_equal(cfi_store_get(&s, B, 101, &h), 0);
	assert_int_equal(h.n, 0);
	assert_int_equal(s.ntabs, 3);	/* A, D, B (C was freed for D) */
	assert_int_equal(s.st.refused, 2);
	cfi_store_put(&s, B);
	/* A load that failed: its place freed at once. */
	assert_int_equal(cfi_store_get(&s, C, 10, &h), 1);
	cfi_store_drop(&s, C);
	cfi_store_rows(&s, &held, &idle);
	assert_int_equal(held, 60);
	assert_int_equal(s.x.used, 60);
	assert_int_equal(s.st.leaked, 0);
	cfi_store_release(&s);
}

/* Least recently released first: the table a process left last stays. */
static void test_store_lru(void **state)
{
	struct cfi_store s;
	struct cfi_held h;

	(void)state;
	nforgotten = 0;
	assert_int_equal(cfi_store_init(&s, 90, on_forget, NULL), 0);
	assert_int_equal(cfi_store_get(&s, A, 30, &h), 1);
	assert_int_equal(cfi_store_get(&s, B, 30, &h), 1);
	assert_int_equal(cfi_store_get(&s, C, 30, &h), 1);
	cfi_store_put(&s, B);
	cfi_store_put(&s, A);
	cfi_store_put(&s, C);
	assert_int_equal(cfi_store_get(&s, D, 30, &h), 1);
	assert_int_equal(h.first, 30);		/* B's rows: released first */
	assert_ptr_equal(forgotten[0], B);
	/* 60 contiguous rows: freed in release order (A, C, then D) until
	 * they are; adjacency is not looked at (no stretch of 60 before D). */
	cfi_store_put(&s, D);
	assert_int_equal(cfi_store_get(&s, B, 60, &h), 1);
	assert_int_equal(h.first, 0);
	assert_int_equal(nforgotten, 4);
	assert_ptr_equal(forgotten[1], A);
	assert_ptr_equal(forgotten[2], C);
	assert_ptr_equal(forgotten[3], D);
	assert_int_equal(s.st.freed, 4);
	cfi_store_release(&s);
}

/* The hooks' calls, for test_store_moves. */
static const void *moved_key;
static uint32_t moved_from, moved_to, nmoves, nreaps;
static int move_err;
static struct cfi_store *reap_store;
static const void *reap_key;

static int on_move(void *ctx, const void *key, uint32_t from, uint32_t to, uint32_t n)
{
	(void)ctx;
	(void)n;
	nmoves++;
	if (move_err)
		return move_err;
	moved_key = key;
	moved_from = from;
	moved_to = to;
	return 0;
}

/* A process found gone: its hold on reap_key (if any) released. */
static int on_reap(void *ctx)
{
	(void)ctx;
	nreaps++;
	if (!reap_key)
		return 0;
	cfi_store_put(reap_store, reap_key);
	reap_key = NULL;
	return 1;
}

/*
 * Room that is free in pieces: the holds of the gone released first, then
 * the held table in the way moved (the fewest rows), or none when none
 * can go.
 */
static void test_store_moves(void **state)
{
	static const char E[1], F[1];
	struct cfi_store s;
	struct cfi_held h;

	(void)state;
	nforgotten = nmoves = nreaps = 0;
	move_err = 0;
	assert_int_equal(cfi_store_init(&s, 100, on_forget, NULL), 0);
	cfi_store_hooks(&s, on_move, on_reap);
	reap_store = &s;
	assert_int_equal(cfi_store_get(&s, A, 30, &h), 1);	/* [0, 30) */
	assert_int_equal(cfi_store_get(&s, B, 10, &h), 1);	/* [30, 40) */
	assert_int_equal(cfi_store_get(&s, C, 30, &h), 1);	/* [40, 70) */
	assert_int_equal(cfi_store_get(&s, D, 30, &h), 1);	/* [70, 100) */
	/* A's holder is gone, its exit not read: reaped when room is short. */
	reap_key = A;
	cfi_store_put(&s, C);
	/* E (50): C (idle) freed, then A reaped and freed: [0, 30) and
	 * [40, 70) free, B between them. Moving B (10 rows, to [50, 70)) or
	 * D (30, to [0, 30)) would make room: B moved, E in [0, 50). */
	assert_int_equal(cfi_store_get(&s, E, 50, &h), 1);
	assert_int_equal(nreaps, 1);
	assert_int_equal(s.st.reaped, 1);
	assert_int_equal(nforgotten, 2);
	assert_int_equal(nmoves, 1);
	assert_ptr_equal(moved_key, B);
	assert_int_equal(moved_from, 30);
	assert_int_equal(moved_to, 50);
	assert_int_equal(s.st.moved, 1);
	assert_int_equal(h.first, 0);
	check_extents(&s.x);
	assert_int_equal(cfi_store_get(&s, B, 10, &h), 0);	/* its new place */
	assert_int_equal(h.first, 50);
	cfi_store_put(&s, B);
	/* F (10) needs no move: [60, 70) is free. */
	assert_int_equal(cfi_store_get(&s, F, 10, &h), 1);
	assert_int_equal(h.first, 60);
	cfi_store_release(&s);

	/* Rows enough in all, but each table in the way too long for the free
	 * rows elsewhere: refused, none moved. */
	nmoves = 0;
	assert_int_equal(cfi_store_init(&s, 100, on_forget, NULL), 0);
	cfi_store_hooks(&s, on_move, NULL);
	assert_int_equal(cfi_store_get(&s, A, 10, &h), 1);	/* [0, 10) */
	assert_int_equal(cfi_store_get(&s, B, 50, &h), 1);	/* [10, 60) */
	assert_int_equal(cfi_store_get(&s, C, 10, &h), 1);	/* [60, 70) */
	assert_int_equal(cfi_store_get(&s, D, 30, &h), 1);	/* [70, 100) */
	cfi_store_put(&s, A);
	cfi_store_put(&s, C);
	/* E (20): A and C freed; emptying [0, 20) takes B to [60, 70), no;
	 * [60, 80) takes D to [0, 10), no; [50, 70) B again. */
	assert_int_equal(cfi_store_get(&s, E, 20, &h), 0);
	assert_int_equal(h.n, 0);
	assert_int_equal(nmoves, 0);
	assert_int_equal(s.st.refused, 1);
	check_extents(&s.x);
	assert_int_equal(s.x.used, 80);
	cfi_store_release(&s);

	/* A move that fails leaves everything in place, the table refused. */
	nmoves = 0;
	assert_int_equal(cfi_store_init(&s, 100, on_forget, NULL), 0);
	cfi_store_hooks(&s, on_move, on_reap);
	assert_int_equal(cfi_store_get(&s, A, 25, &h), 1);	/* [0, 25) */
	assert_int_equal(cfi_store_get(&s, B, 25, &h), 1);	/* [25, 50) */
	assert_int_equal(cfi_store_get(&s, C, 25, &h), 1);	/* [50, 75) */
	assert_int_equal(cfi_store_get(&s, D, 25, &h), 1);	/* [75, 100) */
	cfi_store_put(&s, A);
	cfi_store_put(&s, C);
	/* E (50): B would shift into A's place (or D go there), leaving 50
	 * rows in one piece, but the move fails. */
	move_err = -EIO;
	assert_int_equal(cfi_store_get(&s, E, 50, &h), 0);
	assert_int_equal(h.n, 0);
	assert_int_equal(nmoves, 1);
	assert_int_equal(s.st.moved, 0);
	assert_int_equal(s.st.refused, 1);
	check_extents(&s.x);
	assert_int_equal(s.x.used, 50);
	cfi_store_release(&s);
}

/* Where each key's rows are, as the store's hooks tell it. */
#define NKEYS 48
static const char keys[NKEYS];
static uint32_t where[NKEYS];

static int track_move(void *ctx, const void *key, uint32_t from, uint32_t to, uint32_t n)
{
	size_t k = (size_t)((const char *)key - keys);

	(void)ctx;
	assert_true(k < NKEYS);
	assert_int_equal(where[k], from);
	assert_true(to + n <= from || from + n <= to);	/* never onto itself */
	where[k] = to;
	nmoves++;
	return 0;
}

/*
 * Free rows split by held tables: two tables moved when no single move
 * joins enough, and a table between two holes moved into one of them, past
 * the rows made free (neither hole takes it elsewhere).
 */
static void test_store_moves_shift(void **state)
{
	const void *T = &keys[0], *U = &keys[1], *V = &keys[2], *W = &keys[3];
	const void *X = &keys[4], *Y = &keys[5], *Z = &keys[6];
	struct cfi_store s;
	struct cfi_held h;

	(void)state;
	nmoves = 0;
	assert_int_equal(cfi_store_init(&s, 100, NULL, NULL), 0);
	cfi_store_hooks(&s, track_move, NULL);
	assert_int_equal(cfi_store_get(&s, T, 40, &h), 1);	/* [0, 40) */
	assert_int_equal(cfi_store_get(&s, U, 25, &h), 1);	/* [40, 65) */
	assert_int_equal(cfi_store_get(&s, V, 15, &h), 1);	/* [65, 80) */
	where[1] = 40;
	where[2] = 65;
	cfi_store_put(&s, T);
	/* X (50): T freed: [0, 40) and [80, 100) free, U and V held between. */
	assert_int_equal(cfi_store_get(&s, X, 50, &h), 1);
	/* No single move makes 50 rows; [50, 100) emptied: U (25) to [0, 25),
	 * V (15) to [25, 40); X in [40, 90). */
	assert_int_equal(nmoves, 2);
	assert_int_equal(where[1], 0);
	assert_int_equal(where[2], 25);
	assert_int_equal(h.first, 40);
	assert_int_equal(s.st.moved, 2);
	assert_int_equal(h.n, 50);
	check_extents(&s.x);
	assert_int_equal(s.x.used, 90);
	assert_int_equal(s.st.refused, 0);
	cfi_store_release(&s);

	/* A hole each side of W, neither taking W elsewhere: [0, 55) emptied,
	 * W to the right hole's rows past it (a CI run's refusal before). */
	nmoves = 0;
	assert_int_equal(cfi_store_init(&s, 100, NULL, NULL), 0);
	cfi_store_hooks(&s, track_move, NULL);
	assert_int_equal(cfi_store_get(&s, T, 30, &h), 1);	/* [0, 30) */
	assert_int_equal(cfi_store_get(&s, W, 20, &h), 1);	/* [30, 50) */
	assert_int_equal(cfi_store_get(&s, Y, 30, &h), 1);	/* [50, 80) */
	assert_int_equal(cfi_store_get(&s, Z, 20, &h), 1);	/* [80, 100) */
	where[3] = 30;
	cfi_store_put(&s, T);
	cfi_store_put(&s, Y);
	/* X (55): T and Y freed, W between them; W to [55, 75). */
	assert_int_equal(cfi_store_get(&s, X, 55, &h), 1);
	assert_int_equal(nmoves, 1);
	assert_int_equal(where[3], 55);
	assert_int_equal(h.first, 0);
	check_extents(&s.x);
	/* Too few rows free in all (Z freed: 5 + 20 < 30): refused, none moved. */
	cfi_store_put(&s, Z);
	assert_int_equal(cfi_store_get(&s, V, 30, &h), 0);
	assert_int_equal(h.n, 0);
	assert_int_equal(nmoves, 1);
	assert_int_equal(s.st.refused, 1);
	check_extents(&s.x);
	cfi_store_release(&s);
}

/*
 * Random holds and releases of tables of many sizes, moves tracked by the
 * hook: no two tables ever share a row, no table is on free rows, each is
 * where its moves took it; refusals with enough rows free in all are
 * counted (a table too long for every hole elsewhere).
 */
static void test_store_model(void **state)
{
	static uint8_t owner[CAP / 16];
	uint32_t size[NKEYS], k, i, cap = CAP / 16;
	int held[NKEYS] = { 0 }, round;
	uint64_t refused_room = 0, gets = 0;
	unsigned seed = 11;
	struct cfi_store s;
	struct cfi_held h;

	(void)state;
	for (k = 0; k < NKEYS; k++)
		size[k] = rand_r(&seed) % 6 ? 1 + (uint32_t)rand_r(&seed) % 200 :
			300 + (uint32_t)rand_r(&seed) % 600;
	assert_int_equal(cfi_store_init(&s, cap, NULL, NULL), 0);
	cfi_store_hooks(&s, track_move, NULL);
	for (round = 0; round < 20000; round++) {
		k = (uint32_t)rand_r(&seed) % NKEYS;
		if (held[k]) {
			cfi_store_put(&s, &keys[k]);
			held[k] = 0;
			continue;
		}
		gets++;
		assert_true(cfi_store_get(&s, &keys[k], size[k], &h) >= 0);
		held[k] = 1;
		if (h.n)
			where[k] = h.first;
		else if (s.x.cap - s.x.used >= size[k])
			refused_room++;
		memset(owner, 0, sizeof(owner));
		for (i = 0; i < s.ntabs; i++) {
			const struct cfi_held *t = &s.tabs[i];
			uint32_t r, tk = (uint32_t)((const char *)t->key - keys);

			if (!t->n)
				continue;
			assert_int_equal(t->first, where[tk]);
			for (r = t->first; r < t->first + t->n; r++) {
				assert_int_equal(owner[r], 0);
				owner[r] = 1;
			}
		}
		for (i = 0; i < s.x.nfree; i++)
			for (k = s.x.free[i].first; k < s.x.free[i].first + s.x.free[i].n; k++)
				assert_int_equal(owner[k], 0);
		check_extents(&s.x);
	}
	fprintf(stderr, "store: %llu holds taken, %llu refused with the rows free in pieces, %llu tables moved\n",
		(unsigned long long)gets, (unsigned long long)refused_room,
		(unsigned long long)s.st.moved);
	/* Measured: 438 of 10014 (moving the tables in a window); 818 when a
	 * single table between two holes moved to a third. */
	assert_true(s.st.moved > 0);
	assert_true(refused_room < gets / 16);
	cfi_store_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extents_basic),
		cmocka_unit_test(test_extents_model_and_fragmentation),
		cmocka_unit_test(test_store_holds),
		cmocka_unit_test(test_store_lru),
		cmocka_unit_test(test_store_moves),
		cmocka_unit_test(test_store_moves_shift),
		cmocka_unit_test(test_store_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
