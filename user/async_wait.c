// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --async-aware --mode wall: the waiting tasks of an event loop thread that
 * is off CPU, read while it cannot run. See async_wait.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "async_wait.h"
#include "hmap.h"
#include "remote.h"
#include "util.h"

#define WAIT_MAX_TASKS	1024	/* tasks listed per thread */
#define WAIT_ID_SEED	0x6173796e63776169ULL	/* apart from the BPF side's ids */

/* Is the task field at off (size bytes) inside the TB_TASK_READ bytes read? */
static int in_read(const struct tb_async *b, uint16_t off, unsigned size)
{
	return off >= b->task_lo && off - b->task_lo + size <= TB_TASK_READ;
}

/* Who awaits task tk (from its bytes): the lowest-address awaiter if
 * several do, as the BPF side picks it (pick_awaiter); 0 if none. */
static uint64_t awaiter(const struct target *t, const uint8_t *buf, struct tb_task *tk)
{
	const struct tb_async *b = &t->layout.async.bpf;
	uint64_t next = load_u64(buf + (b->task_awaited_by - b->task_lo)), m[TB_SET_SMALL];
	int k, n;

	if (!next || !buf[b->task_is_set - b->task_lo])
		return next;
	tk->flags |= TB_TASK_SEVERAL;
	n = asyncio_set_members(t, next, m);
	tk->awaiters = n > 0 ? (uint32_t)n : 0;
	for (next = 0, k = 0; k < n; k++)
		if (!next || m[k] < next)
			next = m[k];
	return next;
}

/*
 * The chain from `task` up through the tasks awaiting it, into rec as the
 * BPF side fills it in a sample (task_step, push_tasks): 0 or -ENOENT.
 */
static int chain_record(const struct target *t, uint64_t task, struct tb_tasks *rec)
{
	const struct tb_async *b = &t->layout.async.bpf;
	uint8_t buf[TB_TASK_READ];
	struct tb_task *tk;
	uint64_t code;
	uint32_t i;

	memset(rec, 0, sizeof(*rec));
	rec->kind = TB_REC_TASKS;
	rec->pid = (uint32_t)t->pid;
	if (!in_read(b, b->task_awaited_by, 8) || !in_read(b, b->task_coro, 8) ||
	    !in_read(b, b->task_name, 8) || !in_read(b, b->task_is_set, 1) ||
	    !in_read(b, b->task_is_task, 1))
		return -ENOENT;
	for (i = 0; task && i < TB_ASYNC_DEPTH; i++) {
		if (remote_read(t->pid, task + b->task_lo, buf, sizeof(buf)) ||
		    (i && buf[b->task_is_task - b->task_lo] != 1)) {
			if (i)	/* as the BPF side marks it */
				rec->tasks[i - 1].flags |= TB_TASK_NOT_TASK;
			break;
		}
		tk = &rec->tasks[i];
		tk->task = task;
		tk->coro = load_u64(buf + (b->task_coro - b->task_lo));
		tk->name = load_u64(buf + (b->task_name - b->task_lo));
		if (remote_read(t->pid, tk->name, tk->name_bytes, TB_TASK_NAME_READ))
			memset(tk->name_bytes, 0, TB_TASK_NAME_READ);
		if (!remote_read(t->pid, tk->coro + b->coro_code, &code, 8))
			tk->code = code & t->layout.walk.off.exec_mask;
		rec->depth = i + 1;
		task = awaiter(t, buf, tk);
		if (task && i + 1 >= TB_ASYNC_DEPTH)
			tk->flags |= TB_TASK_DEEP;
	}
	return rec->depth ? 0 : -ENOENT;
}

/* Everything the output shows of one waiting task's stack, hashed: its
 * frames, each task of the chain (name bytes past the reference count)
 * and each awaiting task's frames. */
static uint64_t wait_id(const struct tb_stack *st, const struct tb_tasks *rec,
			const struct task_chain *c)
{
	uint64_t h = TB_HASH_SEED ^ WAIT_ID_SEED;
	uint32_t i, j, k;

	for (i = 0; i < st->depth; i++) {
		h = tb_hash_mix(h, st->frames[i].code);
		h = tb_hash_mix(h, (uint32_t)st->frames[i].instr);
	}
	for (i = 0; i < rec->depth; i++) {
		const struct tb_task *tk = &rec->tasks[i];

		h = tb_hash_mix(tb_hash_mix(h, tk->task), tk->coro);
		for (k = 1; k < TB_TASK_NAME_READ / 8; k++)
			h = tb_hash_mix(h, load_u64(tk->name_bytes + 8 * k));
		h = tb_hash_mix(h, tk->code);
		h = tb_hash_mix(h, (uint64_t)tk->awaiters << 32 | tk->flags);
	}
	for (i = 0; i < c->depth; i++)
		for (j = 0; j < c->tasks[i].nframes; j++)
			h = tb_hash_mix(tb_hash_mix(h, c->tasks[i].frames[j].code),
					(uint32_t)c->tasks[i].frames[j].instr);
	return h;
}

/* One waiting task's stack: its suspended frames and the chain above it. */
static int wait_stack(const struct target *t, struct symbols *sym, uint64_t task, uint64_t coro,
		      struct wait_stack *out)
{
	struct tb_frame fr[TASK_FRAMES_MAX];
	struct tb_tasks rec;
	uint32_t nf, j;

	nf = asyncio_coro_frames(t, coro, fr, TASK_FRAMES_MAX);
	if (!nf || chain_record(t, task, &rec))
		return -ENOENT;	/* finished (its frame cleared), or gone */
	out->chain = asyncio_decode(t, sym, &rec,
				    TB_TASKS_HDR_SIZE + rec.depth * sizeof(struct tb_task));
	if (!out->chain)
		return -errno;
	out->size = TB_STACK_HDR_SIZE + nf * sizeof(struct tb_frame);
	out->rec = calloc(1, out->size);
	if (!out->rec) {
		asyncio_free(out->chain);
		out->chain = NULL;
		return -ENOMEM;
	}
	out->task = task;
	out->rec->kind = TB_REC_STACK;
	out->rec->pid = (uint32_t)t->pid;
	out->rec->depth = nf;
	out->rec->ustack = -1;	/* no native stack: read from memory, not taken */
	for (j = 0; j < nf; j++)
		out->rec->frames[j] = fr[nf - 1 - j];	/* leaf first */
	symbols_resolve(sym, t, out->rec->frames, nf);
	out->rec->stack_id = wait_id(out->rec, &rec, out->chain);
	return 0;
}

/* awaits[i]: some task of v awaits v[i] (it is not a waiting leaf). */
static int mark_awaiters(const struct target *t, const struct async_task *v, int n,
			 uint8_t *awaits)
{
	struct hmap at;
	uint64_t m[TB_SET_SMALL];
	void **slot;
	int i, k, nm;

	if (hmap_init(&at, sizeof(uint64_t)))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		slot = hmap_put(&at, &v[i].addr, NULL);
		if (!slot) {
			hmap_free(&at);
			return -ENOMEM;
		}
		*slot = (void *)(uintptr_t)(i + 1);
	}
	for (i = 0; i < n; i++) {
		if (!v[i].parent)
			continue;
		nm = 1;
		m[0] = v[i].parent;
		if (v[i].several)
			nm = asyncio_set_members(t, v[i].parent, m);
		for (k = 0; k < nm; k++)
			if ((slot = hmap_get(&at, &m[k])))
				awaits[(uintptr_t)*slot - 1] = 1;
	}
	hmap_free(&at);
	return 0;
}

void async_wait_free(struct wait_snap *w)
{
	uint32_t i;

	if (!w)
		return;
	for (i = 0; i < w->n; i++) {
		free(w->v[i].rec);
		asyncio_free(w->v[i].chain);
	}
	free(w);
}

static struct wait_snap *snap_of(const struct target *t, struct symbols *sym,
				 const struct async_task *v, int n)
{
	uint8_t *awaits = calloc((size_t)n, 1);
	struct wait_snap *w = calloc(1, sizeof(*w) + (size_t)n * sizeof(w->v[0]));
	int i;

	if (!awaits || !w || mark_awaiters(t, v, n, awaits)) {
		free(awaits);
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (!awaits[i] && !wait_stack(t, sym, v[i].addr, v[i].coro, &w->v[w->n]))
			w->n++;
	free(awaits);
	if (!w->n) {
		free(w);
		errno = ENOENT;
		return NULL;
	}
	return w;
}

struct wait_snap *async_wait_snapshot(const struct target *t, struct symbols *sym,
				      uint64_t tstate)
{
	struct async_task *v = calloc(WAIT_MAX_TASKS, sizeof(*v));
	struct wait_snap *w = NULL;
	uint64_t running = 0;
	int n;

	if (!v) {
		errno = ENOMEM;
		return NULL;
	}
	n = asyncio_list_tasks(t, tstate, v, WAIT_MAX_TASKS, &running);
	/* a task running: its own stack is the thread's, in the kernel's sample */
	if (n > 0 && !running)
		w = snap_of(t, sym, v, n);
	else
		errno = ENOENT;
	free(v);
	return w;
}
