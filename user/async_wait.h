/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --async-aware --mode wall: the tasks that wait while their event loop's
 * thread is off CPU (blocked in select, or preempted between tasks).
 *
 * While a thread is off CPU none of its tasks can move: what its task
 * list holds then holds for the whole interval. So, for a thread that
 * runs no task and is off CPU, the list is read (process_vm_readv, as
 * `dump --async` does) and kept only if the BPF side's `offcpu` entry
 * still says the thread has been away since the same moment after the
 * read: the snapshot then describes the whole interval exactly, and no
 * task is shown under a parent it did not have. When the interval's
 * credit arrives (it names its start), each waiting task's stack (its
 * chain of awaiting tasks, then the frames its coroutines are suspended
 * in) gets the whole interval, as its own wall time, instead of the
 * loop's idle stack. Intervals that end before a snapshot is taken keep
 * the loop's stack.
 *
 * Errors: NULL with errno set, or a negative errno.
 */
#ifndef TB_ASYNC_WAIT_H
#define TB_ASYNC_WAIT_H

#include <stddef.h>
#include <stdint.h>
#include "asyncio.h"
#include "sampler.h"
#include "symbols.h"
#include "targets.h"

/* Threads looked at this often for waits (the poll of the event loop). */
#define ASYNC_WAIT_POLL_MS	2

/* One waiting task: its stack record (frames leaf first) and chain. */
struct wait_stack {
	struct tb_stack *rec;	/* rec->stack_id: the frames and the chain */
	size_t size;		/* of rec */
	struct task_chain *chain;	/* NULL once handed over */
	uint64_t task;		/* its address */
};

/* The waiting tasks of one thread during one off-CPU interval. */
struct wait_snap {
	uint32_t pid, tid;
	uint64_t since;		/* the interval's start (the offcpu entry's) */
	uint32_t n;
	struct wait_stack v[];
};

struct async_waits;

struct async_waits *async_waits_new(void);
void async_waits_free(struct async_waits *aw);
/* Look at every event loop thread of ts's targets now (see above). */
void async_waits_poll(struct async_waits *aw, struct targets *ts, struct sampler *s,
		      struct symbols *sym);
/* The snapshot of tid's interval that started at `since`, taken (the
 * caller frees it), or NULL. */
struct wait_snap *async_waits_take(struct async_waits *aw, uint32_t tid, uint64_t since);
void async_wait_free(struct wait_snap *w);
/* Is tid an event loop thread (one with tasks, at the last look)? */
int async_waits_is_loop(const struct async_waits *aw, uint32_t tid);
/* Snapshots taken and kept, since the start. */
uint64_t async_waits_taken(const struct async_waits *aw);

/* The waiting tasks of thread state tstate (one running no task), with
 * each one's stack; NULL (errno ENOENT) if there are none. */
struct wait_snap *async_wait_snapshot(const struct target *t, struct symbols *sym,
				      uint64_t tstate);

#endif
