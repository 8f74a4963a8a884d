/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --async-aware, the kernel half (included by tachyon.bpf.c after the walk).
 *
 * After a sample's frames are walked, the thread state's running asyncio
 * task and the chain of tasks awaiting it (task_awaited_by, one Task each)
 * are read, in the sample, and mixed into the stack id: a task, its
 * coroutine and its name object's bytes name one task at one moment even
 * when the allocator hands a finished task's memory to a new one (the name
 * differs: "Task-N" counts up). The chain travels as a TB_REC_TASKS record
 * just before the stack record of a new stack id, so userspace never pairs
 * a task with a parent it had not at the time of the sample.
 */
#ifndef TB_ASYNCIO_BPF_H
#define TB_ASYNCIO_BPF_H

/* Set by userspace before load: --async-aware (off: not one instruction). */
const volatile __u8 async_aware = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TB_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct tb_async);
} asyncs SEC(".maps");

/* This CPU's chain of the sample being taken (depth 0: none), and room to
 * read a task_awaited_by set's table. */
struct task_scratch {
	struct tb_tasks rec;
	__u64 set[2 * TB_SET_SMALL];	/* (key, hash) entries */
	__u64 hdr[2];			/* mask, table */
	__u8 buf[TB_TASK_READ] __attribute__((aligned(8)));	/* async_ctx's */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct task_scratch);
} task_chain SEC(".maps");

struct async_ctx {
	struct tb_tasks *rec;
	struct task_scratch *ts;
	const struct tb_async *a;
	__u64 task;		/* the next task to read; 0: done */
	__u64 hash;
	__u32 loaded;		/* buf already holds the next task's bytes */
	__u32 pad;
	__u8 *buf;		/* the task's bytes, in ts (off the stack) */
};

static __always_inline __u64 task_u64(const struct async_ctx *x, __u16 off)
{
	return *(const __u64 *)&x->buf[(off - x->a->task_lo) & (TB_TASK_READ - 8)];
}

static __always_inline __u8 task_u8(const struct async_ctx *x, __u16 off)
{
	return x->buf[(off - x->a->task_lo) & (TB_TASK_READ - 1)];
}

/*
 * Several tasks await this one (task_awaited_by is a set): the awaiter at
 * the lowest address, so that every sample of it picks the same; 0 if the
 * set is larger than TB_SET_SMALL entries or unreadable. A removed entry
 * keeps a dummy key with hash -1.
 */
static __always_inline __u64 pick_awaiter(struct async_ctx *x, __u64 set, struct tb_task *t)
{
	struct task_scratch *ts = x->ts;
	__u64 best = 0, key;
	__u32 used = 0, k;

	if (bpf_probe_read_user(ts->hdr, sizeof(ts->hdr), (void *)(set + x->a->set_mask)) ||
	    ts->hdr[0] >= TB_SET_SMALL ||
	    bpf_probe_read_user(&used, sizeof(used), (void *)(set + x->a->set_used)) ||
	    bpf_probe_read_user(ts->set, sizeof(ts->set), (void *)ts->hdr[1]))
		return 0;
	t->awaiters = used;
	for (k = 0; k < TB_SET_SMALL; k++) {
		key = ts->set[2 * k];
		if (key && ts->set[2 * k + 1] != (__u64)-1 && (!best || key < best))
			best = key;
	}
	return best;
}

/* One task of the chain: read it, mix it in, go on to who awaits it. */
static __noinline long task_step(__u32 i, struct async_ctx *x)
{
	const struct tb_async *a = x->a;
	struct tb_task *t;
	__u64 next;
	__u32 k;

	if (!x->task)
		return 1;
	t = &x->rec->tasks[i & (TB_ASYNC_DEPTH - 1)];
	if (!x->loaded && bpf_probe_read_user(x->buf, TB_TASK_READ, (void *)(x->task + a->task_lo)))
		return 1;
	t->task = x->task;
	t->coro = task_u64(x, a->task_coro);
	t->name = task_u64(x, a->task_name);
	t->code = 0;
	t->flags = 0;
	t->awaiters = 0;
	if (bpf_probe_read_user(t->name_bytes, TB_TASK_NAME_READ, (void *)t->name))
		__builtin_memset(t->name_bytes, 0, TB_TASK_NAME_READ);
	x->hash = tb_hash_mix(x->hash, t->task);
	x->hash = tb_hash_mix(x->hash, t->coro);
	/* From the type on: the reference count moves without meaning. */
	for (k = 1; k < TB_TASK_NAME_READ / 8; k++)
		x->hash = tb_hash_mix(x->hash, *(__u64 *)&t->name_bytes[k * 8]);
	x->rec->depth = i + 1;
	next = task_u64(x, a->task_awaited_by);
	if (next && task_u8(x, a->task_is_set)) {
		t->flags |= TB_TASK_SEVERAL;
		next = pick_awaiter(x, next, t);
	}
	if (next && i + 1 >= TB_ASYNC_DEPTH) {
		t->flags |= TB_TASK_DEEP;
		next = 0;
	}
	x->task = next;
	x->loaded = 1;
	if (next && (bpf_probe_read_user(x->buf, TB_TASK_READ, (void *)(next + a->task_lo)) ||
		     task_u8(x, a->task_is_task) != 1)) {
		t->flags |= TB_TASK_NOT_TASK;
		x->task = 0;
	}
	x->hash = tb_hash_mix(x->hash, (__u64)t->awaiters << 32 | t->flags);
	return 0;
}

/*
 * The running task's chain into task_chain, mixed into c->ch.hash (the
 * stack id). Threads running no task keep their id and an empty chain.
 * A function of its own, its async_ctx in its own frame, and a bounded
 * loop rather than bpf_loop: the tail-call walker (kernels without
 * bpf_loop) runs it too, under the 512-byte limit on the stack of a
 * program and the subprograms it calls (tc_chunk's chain).
 */
static __noinline void async_chain(struct walk_ctx *c, __u32 pid)
{
	struct async_ctx x = {};
	__u32 zero = 0, i;

	if (!async_aware)
		return;
	x.ts = bpf_map_lookup_elem(&task_chain, &zero);
	if (!x.ts)
		return;
	x.rec = &x.ts->rec;
	x.buf = x.ts->buf;
	x.rec->depth = 0;
	x.a = bpf_map_lookup_elem(&asyncs, &pid);
	if (!x.a || bpf_probe_read_user(&x.task, sizeof(x.task), (void *)(c->tstate + x.a->ts_task)))
		return;
	x.hash = c->ch.hash;
	for (i = 0; i < TB_ASYNC_DEPTH; i++)
		if (task_step(i, &x))
			break;
	if (!x.rec->depth)
		return;
	c->ch.hash = x.hash;
	x.rec->stack_id = x.hash;
}

/*
 * --native: the stack id moved from old to id (the native callers mixed in
 * after the chain): the chain read for old is the one of id.
 */
static __always_inline void retag_tasks(__u64 old, __u64 id)
{
	struct task_scratch *ts;
	__u32 zero = 0;

	if (!async_aware)
		return;
	ts = bpf_map_lookup_elem(&task_chain, &zero);
	if (ts && ts->rec.depth && ts->rec.stack_id == old)
		ts->rec.stack_id = id;
}

/*
 * Before the stack record of a new stack id: its chain, if the sample ran
 * a task. The coroutines' code objects are read only here (a coroutine
 * runs one code object for life): they name the tasks, and userspace cuts
 * the event loop's frames below the running one. 0, or -1 if the ring
 * buffer is full.
 */
static __always_inline int push_tasks(__u64 id, __u32 pid, __u64 exec_mask)
{
	const struct tb_async *a;
	struct task_scratch *ts;
	struct tb_tasks *rec;
	__u32 zero = 0, depth, i;
	__u64 code;

	if (!async_aware)
		return 0;
	ts = bpf_map_lookup_elem(&task_chain, &zero);
	if (!ts || !ts->rec.depth || ts->rec.stack_id != id)
		return 0;
	rec = &ts->rec;
	a = bpf_map_lookup_elem(&asyncs, &pid);
	if (!a)
		return 0;
	depth = rec->depth;
	if (depth > TB_ASYNC_DEPTH)
		depth = TB_ASYNC_DEPTH;
	for (i = 0; i < TB_ASYNC_DEPTH && i < depth; i++) {
		code = 0;
		bpf_probe_read_user(&code, sizeof(code), (void *)(rec->tasks[i].coro + a->coro_code));
		rec->tasks[i].code = code & exec_mask;
	}
	rec->kind = TB_REC_TASKS;
	rec->pid = pid;
	rec->pad = 0;
	return rec_output(rec, TB_TASKS_HDR_SIZE + depth * sizeof(struct tb_task), sizeof(*rec),
			  0) ? -1 : 0;
}

#endif /* TB_ASYNCIO_BPF_H */
