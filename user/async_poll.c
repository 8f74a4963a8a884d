// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --async-aware --mode wall: which threads to look at, when to read their
 * waiting tasks (async_wait.c), and the snapshots kept until their
 * interval's credit comes. See async_wait.h.
 */
#include <errno.h>
#include <stdlib.h>
#include "async_wait.h"
#include "clock.h"
#include "dump.h"
#include "hmap.h"
#include "remote.h"
#include "util.h"

#define WAIT_SCAN_S	0.2	/* which threads have tasks: looked for this often */
/* A read that cost d seconds of CPU is followed by none for WAIT_SHARE * d:
 * with thousands of tasks the reads take at most about 1/WAIT_SHARE of a
 * CPU per event loop (the intervals skipped keep the loop's stack). */
#define WAIT_SHARE	10

/* This thread's CPU time (s): a read's cost, not the time it was preempted. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct loop_thread {
	uint32_t target, tid;
	uint64_t tstate;
	uint64_t tried;		/* the interval (its start) last read */
	double next_ok;		/* no read before (mono_now()): see WAIT_SHARE */
};

struct async_waits {
	struct loop_thread *v;
	size_t n, cap;
	double next_scan;
	struct hmap snaps;	/* tid -> struct wait_snap * */
	uint64_t taken;
};

struct async_waits *async_waits_new(void)
{
	struct async_waits *aw = calloc(1, sizeof(*aw));

	if (aw && hmap_init(&aw->snaps, sizeof(uint32_t))) {
		free(aw);
		aw = NULL;
	}
	if (!aw)
		errno = ENOMEM;
	return aw;
}

static void free_snap(void *w)
{
	async_wait_free(w);
}

void async_waits_free(struct async_waits *aw)
{
	if (!aw)
		return;
	hmap_free_values(&aw->snaps, free_snap);
	free(aw->v);
	free(aw);
}

uint64_t async_waits_taken(const struct async_waits *aw)
{
	return aw ? aw->taken : 0;
}

int async_waits_is_loop(const struct async_waits *aw, uint32_t tid)
{
	size_t i;

	for (i = 0; i < aw->n; i++)
		if (aw->v[i].tid == tid)
			return 1;
	return 0;
}

/* Is tstate still lt's thread (a thread state freed and reused is not)? */
static int same_thread(const struct target *t, const struct loop_thread *lt)
{
	uint64_t tid;

	return !remote_read(t->pid, lt->tstate + t->layout.walk.off.ts_native_tid, &tid, 8) &&
	       tid == lt->tid;
}

/* Does thread state tstate have tasks in its list? */
static int has_tasks(const struct target *t, uint64_t tstate)
{
	uint64_t head = tstate + t->layout.async.ts_tasks_head, node;

	return !remote_read(t->pid, head, &node, 8) && node && node != head;
}

/* What an earlier scan knew of thread tid (or nothing). */
static void carry_over(const struct loop_thread *old, size_t n, struct loop_thread *lt)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (old[i].tid == lt->tid && old[i].target == lt->target) {
			lt->tried = old[i].tried;
			lt->next_ok = old[i].next_ok;
		}
}

/* The threads with asyncio tasks of every target that has asyncio. */
static void scan(struct async_waits *aw, struct targets *ts)
{
	static struct dump_thread th[DUMP_MAX_THREADS];
	struct loop_thread *old = aw->v;
	size_t nold = aw->n, cap = 0;
	uint32_t i;
	int n, k;

	aw->v = NULL;
	aw->n = 0;
	for (i = 0; i < targets_count(ts); i++) {
		struct target *t = targets_get(ts, i);

		/* the offcpu map is keyed by our tids: not another namespace's */
		if (!t || t->exited || !t->layout.async.ok || t->layout.walk.addr.pidns_ino)
			continue;
		n = dump_threads(t, th, DUMP_MAX_THREADS);
		for (k = 0; k < n; k++) {
			if (!has_tasks(t, th[k].tstate) ||
			    array_grow(&aw->v, &cap, aw->n + 1, sizeof(*aw->v), 8))
				continue;
			aw->v[aw->n] = (struct loop_thread){
				.target = t->id, .tid = (uint32_t)th[k].tid,
				.tstate = th[k].tstate,
			};
			carry_over(old, nold, &aw->v[aw->n++]);
		}
	}
	free(old);
}

static void keep_snap(struct async_waits *aw, struct wait_snap *w)
{
	int added;
	void **slot = hmap_put(&aw->snaps, &w->tid, &added);

	if (!slot) {
		async_wait_free(w);
		return;
	}
	if (!added)
		async_wait_free(*slot);	/* its interval's credit never came */
	*slot = w;
	aw->taken++;
}

/* One thread: if it is away in an interval not read yet, read its tasks,
 * and keep them only if it stayed away all the while. */
static void poll_thread(struct async_waits *aw, struct loop_thread *lt, struct target *t,
			struct sampler *s, struct symbols *sym)
{
	struct tb_offcpu oc, after;
	struct wait_snap *w;
	double now = mono_now(), c0;

	if (now < lt->next_ok || sampler_offcpu_get(s, lt->tid, &oc) || !oc.away ||
	    oc.pid != (uint32_t)t->pid || oc.since == lt->tried)
		return;
	lt->tried = oc.since;
	if (!same_thread(t, lt))
		return;
	c0 = cpu_now();
	w = async_wait_snapshot(t, sym, lt->tstate);
	lt->next_ok = now + WAIT_SHARE * (cpu_now() - c0);
	if (!w)
		return;
	if (sampler_offcpu_get(s, lt->tid, &after) || !after.away || after.since != oc.since) {
		async_wait_free(w);	/* it ran meanwhile: the read may be torn */
		return;
	}
	w->pid = oc.pid;
	w->tid = lt->tid;
	w->since = oc.since;
	keep_snap(aw, w);
}

void async_waits_poll(struct async_waits *aw, struct targets *ts, struct sampler *s,
		      struct symbols *sym)
{
	double now = mono_now();
	size_t i;

	if (now >= aw->next_scan) {
		scan(aw, ts);
		aw->next_scan = now + WAIT_SCAN_S;
	}
	for (i = 0; i < aw->n; i++) {
		struct target *t = targets_get(ts, aw->v[i].target);

		if (t && !t->exited)
			poll_thread(aw, &aw->v[i], t, s, sym);
	}
}

struct wait_snap *async_waits_take(struct async_waits *aw, uint32_t tid, uint64_t since)
{
	void **slot = hmap_get(&aw->snaps, &tid);
	struct wait_snap *w;

	if (!slot)
		return NULL;
	w = *slot;
	if (w->since > since)
		return NULL;	/* the credit of an earlier interval */
	hmap_del(&aw->snaps, &tid);
	if (w->since == since)
		return w;
	async_wait_free(w);	/* its credit went by (lost, or under a period) */
	return NULL;
}
