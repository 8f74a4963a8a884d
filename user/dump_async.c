// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dump --async: a thread's asyncio tasks as a tree, each task with the
 * coroutine frames it is suspended in (the running one's are the thread's
 * own, printed above). The tasks are the thread state's list of tasks
 * (asyncio_tasks_head, one llist_node per TaskObj); who awaits whom is each
 * task's task_awaited_by. Read once with process_vm_readv: a task that ends
 * meanwhile is simply missing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asyncio.h"
#include "dump_async.h"
#include "remote.h"
#include "util.h"

/* Tasks listed per thread. */
#define DUMP_MAX_TASKS	4096

struct dtasks {
	struct async_task *v;
	int n;
	uint64_t running;
};

static void print_task(const struct target *t, struct symbols *sym, int full_paths,
		       const struct dtasks *ts, int k, int level)
{
	const struct async_task *d = &ts->v[k];
	struct tb_frame fr[TASK_FRAMES_MAX];
	uint8_t nb[TB_TASK_NAME_READ];
	char name[128];
	struct sym_frame sf;
	uint32_t n = 0, j;
	int i;

	memset(nb, 0, sizeof(nb));
	if (remote_read(t->pid, d->name, nb, sizeof(nb)))
		memset(nb, 0, sizeof(nb));
	asyncio_task_name(t, nb, sizeof(nb), d->name, name, sizeof(name));
	printf("%*s%s%s%s\n", 4 + 2 * level, "", name, d->addr == ts->running ? " (running)" : "",
	       d->several ? " (awaited by several tasks)" : "");
	if (d->addr != ts->running)
		n = asyncio_coro_frames(t, d->coro, fr, TASK_FRAMES_MAX);
	symbols_resolve(sym, t, fr, n);
	for (j = n; j-- > 0;) {
		symbols_frame(symbols_get(sym, t, &fr[j]), &fr[j], t, full_paths, &sf);
		printf("%*s  File \"%s\", line %d, in %s\n", 4 + 2 * level, "", sf.file, sf.line,
		       sf.name);
	}
	if (level >= 32)
		return;
	for (i = 0; i < ts->n; i++)
		if (ts->v[i].parent == d->addr && !ts->v[i].several)
			print_task(t, sym, full_paths, ts, i, level + 1);
}

void dump_async_thread(const struct target *t, struct symbols *sym, int full_paths,
		       uint64_t tstate)
{
	struct dtasks ts = { .v = calloc(DUMP_MAX_TASKS, sizeof(struct async_task)) };
	int i;

	if (ts.v)
		ts.n = asyncio_list_tasks(t, tstate, ts.v, DUMP_MAX_TASKS, &ts.running);
	if (!ts.v || ts.n < 0) {
		printf("  asyncio tasks: unreadable\n");
		free(ts.v);
		return;
	}
	if (!ts.n) {
		free(ts.v);
		return;
	}
	printf("  asyncio tasks (%d), innermost frame first:\n", ts.n);
	for (i = 0; i < ts.n; i++) {
		const struct async_task *d = &ts.v[i];
		int j, known = 0;

		for (j = 0; j < ts.n && d->parent && !d->several; j++)
			known |= ts.v[j].addr == d->parent;
		/* awaited by nobody, by several, or from another thread: a root */
		if (!known)
			print_task(t, sym, full_paths, &ts, i, 0);
	}
	free(ts.v);
}
