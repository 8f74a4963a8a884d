// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --async-aware --mode wall: the waiting tasks of an event loop thread that
 * is off CPU, read while it cannot run. See async_wait.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "async_wait.h"
#include "clock.h"
#include "dump.h"
#include "hmap.h"
#include "remote.h"
#include "util.h"

#define WAIT_MAX_TASKS	1024	/* tasks listed per thread */
#define WAIT_SCAN_S	0.2	/* which threads have tasks: looked for this often */
#define WAIT_ID_SEED	0x6173796e63776169ULL	/* apart from the BPF side's ids */

struct loop_thread {
	uint32_t target, tid;
	uint64_t tstate;
	uint64_t tried;		/* the interval (its start) last read */
};

struct async_waits {
	struct loop_thread *v;
	size_t n, cap;
	double next_scan;
	struct hmap snaps;	/* tid -> struct wait_snap * */
	uint64_t taken;
};

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
	uint64_t next = load_u64(buf + b->task_awaited_by - b->task_lo), m[TB_SET_SMALL];
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
		if (remote_read(t->pid, task + b->task_lo, buf, sizeof(buf)))
			break;
		if (i && buf[b->task_is_task - b->task_lo] != 1) {
			rec->tasks[i - 1].flags |= TB_TASK_NOT_TASK;
			break;
		}
		tk = &rec->tasks[i];
		tk->task = task;
		tk->coro = load_u64(buf + b->task_coro - b->task_lo);
		tk->name = load_u64(buf + b->task_name - b->task_lo);
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
	out->rec->kind = TB_REC_STACK;
	out->rec->pid = (uint32_t)t->pid;
	out->rec->depth = nf;
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

/* Does thread state tstate have tasks in its list? */
static int has_tasks(const struct target *t, uint64_t tstate)
{
	uint64_t head = tstate + t->layout.async.ts_tasks_head, node;

	return !remote_read(t->pid, head, &node, 8) && node && node != head;
}

static uint64_t tried_before(const struct loop_thread *old, size_t n, uint32_t tid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (old[i].tid == tid)
			return old[i].tried;
	return 0;
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
			aw->v[aw->n++] = (struct loop_thread){
				.target = t->id, .tid = (uint32_t)th[k].tid,
				.tstate = th[k].tstate,
				.tried = tried_before(old, nold, (uint32_t)th[k].tid),
			};
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

	if (sampler_offcpu_get(s, lt->tid, &oc) || !oc.away || oc.pid != (uint32_t)t->pid ||
	    oc.since == lt->tried)
		return;
	lt->tried = oc.since;
	w = async_wait_snapshot(t, sym, lt->tstate);
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
