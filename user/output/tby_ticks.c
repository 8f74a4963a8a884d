// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Per-thread prediction of the time-ordered samples (tby_ticks.h): a
 * thread's next sample is about one period after its previous one ended,
 * on the same CPU, with one of the few stacks it had lately. Only the
 * surprise goes into the file; zlib then squeezes the runs of zeros.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "output/tby_ticks.h"
#include "util.h"

int tby_ticks_grow(struct tby_tick_state *s, size_t n)
{
	if (n <= s->nth)
		return 0;
	if (array_grow(&s->th, &s->cap, n, sizeof(*s->th), 16))
		return -ENOMEM;
	memset(s->th + s->nth, 0, (n - s->nth) * sizeof(*s->th));
	s->nth = n;
	return 0;
}

void tby_ticks_free(struct tby_tick_state *s)
{
	free(s->th);
	free(s->cpu_t);
	memset(s, 0, sizeof(*s));
}

/* Row to the front of t's MRU, from position pos (nmru: new, the oldest drops). */
static void to_front(struct tby_tick_thread *t, uint32_t pos, uint32_t row)
{
	if (pos == t->nmru) {
		if (t->nmru < TBY_MRU)
			t->nmru++;
		pos = t->nmru - 1;
	}
	memmove(t->mru + 1, t->mru, pos * sizeof(*t->mru));
	t->mru[0] = row;
}

uint64_t tby_row_code(struct tby_tick_thread *t, uint32_t row)
{
	uint32_t i;
	uint64_t code;

	for (i = 0; i < t->nmru && t->mru[i] != row; i++)
		;
	code = i < t->nmru ? i : TBY_MRU + (uint64_t)row;
	to_front(t, i, row);
	return code;
}

int tby_row_of(struct tby_tick_thread *t, uint64_t code, uint64_t nrows, uint32_t *row)
{
	uint32_t pos = t->nmru;

	if (code < TBY_MRU) {
		if (code >= t->nmru)
			return -EINVAL;
		pos = (uint32_t)code;
		*row = t->mru[pos];
	} else if (code - TBY_MRU < nrows) {
		*row = (uint32_t)(code - TBY_MRU);
	} else {
		return -EINVAL;
	}
	to_front(t, pos, *row);
	return 0;
}

uint64_t tby_time_base(const struct tby_tick_state *s, const struct tby_tick_thread *t,
		       uint32_t cpu, uint64_t dur)
{
	if (!dur && cpu < s->ncpu && s->cpu_t[cpu])
		return s->cpu_t[cpu] - 1;
	return t->seen ? t->next : s->prev_t;
}

int tby_time_note(struct tby_tick_state *s, struct tby_tick_thread *t, uint32_t cpu,
		  uint64_t time, uint64_t end)
{
	size_t cap = s->ncpu;

	t->next = end;
	t->seen = 1;
	s->prev_t = time;
	/* Off-CPU intervals start when the thread left, not on a tick. */
	if (end != time || cpu >= TBY_CPUS)
		return 0;
	if (cpu >= s->ncpu) {
		if (array_grow(&s->cpu_t, &cap, (size_t)cpu + 1, sizeof(*s->cpu_t), 64))
			return -ENOMEM;
		memset(s->cpu_t + s->ncpu, 0, (cap - s->ncpu) * sizeof(*s->cpu_t));
		s->ncpu = cap;
	}
	s->cpu_t[cpu] = time + 1;
	return 0;
}

void tby_split(int64_t d, uint64_t period, int64_t *q, int64_t *rem)
{
	int64_t p = (int64_t)period;

	*q = 0;
	if (p > 0)
		*q = d >= 0 ? (d + p / 2) / p : -((-d + p / 2) / p);
	*rem = d - *q * p;
}
