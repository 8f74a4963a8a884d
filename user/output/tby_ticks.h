/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The tick columns of a version-2 recording (doc/tby-format.md, TICKS2):
 * what the writer and the reader both track per thread, so that each
 * value is written as what was not predictable from the ticks before it.
 *
 * Errors: 0 on success, a negative errno on failure.
 */
#ifndef TB_OUTPUT_TBY_TICKS_H
#define TB_OUTPUT_TBY_TICKS_H

#include <stddef.h>
#include <stdint.h>

#define TBY_MRU		16	/* rows remembered per thread */
#define TBY_UNIT_NS	1000	/* the unit of the times when they allow it */
#define TBY_CPUS	4096	/* CPUs whose timer phase is followed */
#define TBY_PERIOD_MAX	(1ull << 40)	/* in units: a reader refuses more */

struct tby_tick_thread {
	uint64_t next;		/* its previous tick's end (or time): the base */
	uint32_t cpu;		/* its previous tick's CPU */
	uint32_t nmru;
	uint32_t mru[TBY_MRU];	/* its rows, most recent first */
	int seen;		/* it had a tick before */
};

/* State carried from tick to tick, and from record to record. */
struct tby_tick_state {
	struct tby_tick_thread *th;
	size_t nth, cap;
	uint64_t prev_t;	/* the previous tick's time */
	uint64_t *cpu_t;	/* by CPU: 1 + its previous on-CPU tick's time, 0: none */
	size_t ncpu;
};

/* Room for threads [0, n). 0 or -ENOMEM. */
int tby_ticks_grow(struct tby_tick_state *s, size_t n);
void tby_ticks_free(struct tby_tick_state *s);
/* The code of row in t's MRU (its position, else TBY_MRU + row); row to the front. */
uint64_t tby_row_code(struct tby_tick_thread *t, uint32_t row);
/* The row of a code; row to the front. 0, or -EINVAL for a position not held. */
int tby_row_of(struct tby_tick_thread *t, uint64_t code, uint64_t nrows, uint32_t *row);
/*
 * The time a tick is predicted from: the previous on-CPU tick of its CPU
 * (each CPU's timer fires a whole number of periods after its last
 * firing, whoever runs), else its thread's previous tick's end, else the
 * previous tick's time.
 */
uint64_t tby_time_base(const struct tby_tick_state *s, const struct tby_tick_thread *t,
		       uint32_t cpu, uint64_t dur);
/* A tick of t at [time, end) on cpu was read or written. 0 or -ENOMEM. */
int tby_time_note(struct tby_tick_state *s, struct tby_tick_thread *t, uint32_t cpu,
		  uint64_t time, uint64_t end);
/* d (in units) as q periods and a remainder: d = q * period + rem. */
void tby_split(int64_t d, uint64_t period, int64_t *q, int64_t *rem);

#endif
