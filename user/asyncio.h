/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --async-aware, userspace half: a TB_REC_TASKS record (the chain of tasks
 * the BPF side read in a sample: the running task, then each task awaiting
 * the previous one) made into what the output shows: one label per task
 * ("Task-5 handle_request", from the name bytes copied in the sample and
 * the coroutine's code), each awaiting task's suspended coroutine frames,
 * and where the thread's own frames stop being the running coroutine's and
 * become the event loop's (folded away).
 *
 * Who awaits whom is only ever the kernel's reading; the frames of an
 * awaiting task are read here, when the record arrives, and kept only if
 * the task it awaits still names it then (else the task shows its label
 * alone): a task is never shown under a parent it did not have.
 *
 * Errors: NULL with errno set.
 */
#ifndef TB_ASYNCIO_H
#define TB_ASYNCIO_H

#include <stdint.h>
#include <stddef.h>
#include "symbols.h"
#include "tachyon.h"
#include "target.h"

/* Coroutine frames followed per awaiting task. */
#define TASK_FRAMES_MAX	32

struct task_view {
	char *label;		/* "Task-5 handle_request" */
	uint32_t flags;		/* enum tb_task_flags */
	uint32_t awaiters;	/* TB_TASK_SEVERAL: how many await it */
	uint32_t nframes;	/* its suspended coroutines, outermost first */
	struct tb_frame frames[TASK_FRAMES_MAX];
};

struct task_chain {
	uint64_t code;		/* the running coroutine's code object */
	uint32_t depth;		/* tasks */
	uint32_t flags;		/* enum tb_task_flags of the outermost task */
	struct task_view tasks[];	/* running task first */
};

/* The chain of one record (code objects resolved into sym). */
struct task_chain *asyncio_decode(const struct target *t, struct symbols *sym,
				  const struct tb_tasks *rec, size_t size);
void asyncio_free(struct task_chain *c);
/*
 * Of a stack's frames (leaf first), how many belong to the running task:
 * up to the outermost frame running its coroutine's code. 0 if none does:
 * the task's C step itself called back into the event loop (scheduling a
 * callback, finishing): the sample is the loop's, not the task's.
 */
uint32_t asyncio_keep(const struct task_chain *c, const struct tb_frame *frames, uint32_t depth);
/* A marker for the root, or NULL: "<awaited by several tasks>" etc. */
const char *asyncio_root_marker(const struct task_chain *c);
/* A marker between task i's label and the task awaiting it, or NULL:
 * "<awaited by 2 tasks: the lowest-address one shown>". */
const char *asyncio_link_marker(const struct task_chain *c, uint32_t i, char *buf, size_t len);
/*
 * A task's name from its name object's bytes (a str, or an int N for
 * "Task-N"); "<task 0x...>" if neither. Reads the type's name only.
 */
void asyncio_task_name(const struct target *t, const uint8_t *obj, size_t have, uint64_t addr,
		       char *out, size_t outsz);
/* Its suspended coroutine chain from coro, outermost first; how many frames. */
uint32_t asyncio_coro_frames(const struct target *t, uint64_t coro, struct tb_frame *out,
			     uint32_t max);

/* The tasks of the task_awaited_by set at `set` (a small one: at most
 * TB_SET_SMALL slots) into out: how many, or -EFAULT. */
int asyncio_set_members(const struct target *t, uint64_t set, uint64_t *out);
/* One task of a thread's list, as read now. */
struct async_task {
	uint64_t addr, coro, name;
	uint64_t parent;	/* task_awaited_by: the awaiting task, or a set of them */
	int several;		/* parent is a set: several tasks await it */
};

/*
 * The tasks of thread state tstate's list (asyncio_tasks_head), in list
 * order, up to max; *running gets the thread's running task (0: none).
 * How many, or a negative errno if the list is unreadable.
 */
int asyncio_list_tasks(const struct target *t, uint64_t tstate, struct async_task *v, int max,
		       uint64_t *running);

#endif
