// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tachyon-bpf: the in-kernel half.
 *
 * One perf_event program. On every sample that lands in a profiled process
 * it finds the interrupted thread's PyThreadState, walks the Python frame
 * chain with the offsets userspace put in `procs`, hashes the frames into a
 * stack id and pushes a small sample record. The frames themselves travel
 * once per stack id (see `sent`), so the steady state costs one tstate read
 * plus two reads per frame and a 40-byte ring buffer record.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "tachyon.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by userspace before load. */
const volatile __u64 wakeup_bytes = 256 * 1024;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TB_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct tb_walk);
} procs SEC(".maps");

/* tid -> PyThreadState*, re-validated by native_thread_id on every use. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} tstates SEC(".maps");

/* Stack ids whose frames were already pushed to userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} sent SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[TB_NR_COUNTERS]);
} counters SEC(".maps");

#define BUF_MASK (TB_READ_MAX - 1)

/*
 * Per-CPU work area. A plain array indexed by CPU rather than a per-CPU
 * array: per-CPU values are limited to 32 KiB and a full stack is 64 KiB.
 * perf_event programs never nest on one CPU, so one slot per CPU is enough.
 */
struct scratch {
	struct tb_stack stack;
	struct tb_walk walk;
	__u8 buf[TB_READ_MAX + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);	/* resized to the number of CPUs by userspace */
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct walk_ctx {
	struct scratch *s;
	__u64 *cnt;
	__u64 frame;
	__u64 hash;
	__u32 depth;
	__u32 flags;
};

struct find_ctx {
	struct scratch *s;
	__u64 ts;
	__u64 found;
	__u32 tid;
	int err;
};

static __always_inline __u64 get_u64(struct scratch *s, __u32 off)
{
	return *(__u64 *)&s->buf[off & BUF_MASK];
}

static __always_inline __u32 get_u32(struct scratch *s, __u32 off)
{
	return *(__u32 *)&s->buf[off & BUF_MASK];
}

static __always_inline int read_into(struct scratch *s, __u32 size, __u64 addr)
{
	if (size > TB_READ_MAX)
		size = TB_READ_MAX;
	return bpf_probe_read_user(s->buf, size, (void *)addr);
}

static __always_inline void count(__u64 *cnt, int idx)
{
	if (idx >= 0 && idx < TB_NR_COUNTERS)
		cnt[idx]++;
}

static __always_inline __u64 mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/* One step of the thread list: does this PyThreadState belong to tid? */
static long find_step(__u32 i, void *arg)
{
	struct find_ctx *f = arg;
	struct scratch *s = f->s;
	struct tb_walk *L = &s->walk;

	if (!f->ts)
		return 1;
	if (read_into(s, L->ts_read, f->ts)) {
		f->err = 1;
		return 1;
	}
	if (get_u64(s, L->ts_native_tid) == f->tid) {
		f->found = f->ts;
		return 1;
	}
	f->ts = get_u64(s, L->ts_next);
	return 0;
}

/*
 * Find tid's PyThreadState: the cached one if it still names this thread,
 * else a walk of every interpreter's thread list. The thread-local "current
 * tstate" is not used: it is NULL whenever a thread has released the GIL.
 * On success the tstate's first ts_read bytes are left in s->buf.
 */
static __always_inline __u64 find_tstate(struct scratch *s, __u64 *cnt, __u32 tid)
{
	struct tb_walk *L = &s->walk;
	struct find_ctx f = { .s = s, .tid = tid };
	__u64 *cached, interp = 0;
	int i;

	cached = bpf_map_lookup_elem(&tstates, &tid);
	if (cached && !read_into(s, L->ts_read, *cached) &&
	    get_u64(s, L->ts_native_tid) == tid)
		return *cached;

	count(cnt, TB_C_TSTATE_MISS);
	if (bpf_probe_read_user(&interp, sizeof(interp),
				(void *)(L->runtime_addr + L->rt_interp_head)))
		return 0;
	for (i = 0; i < TB_MAX_INTERPS && interp && !f.found; i++) {
		if (bpf_probe_read_user(&f.ts, sizeof(f.ts),
					(void *)(interp + L->interp_threads_head)))
			break;
		bpf_loop(TB_MAX_THREADS, find_step, &f, 0);
		if (f.found)
			break;
		if (bpf_probe_read_user(&interp, sizeof(interp),
					(void *)(interp + L->interp_next)))
			break;
	}
	if (!f.found)
		return 0;
	bpf_map_update_elem(&tstates, &tid, &f.found, BPF_ANY);
	return f.found;
}

/* The frame the thread is executing, from the tstate bytes in s->buf. */
static __always_inline __u64 current_frame(struct scratch *s)
{
	struct tb_walk *L = &s->walk;
	__u64 p = get_u64(s, L->ts_frame), frame = 0;

	if (L->cframe_frame == TB_NO_OFFSET || !p)
		return p;
	/* 3.11/3.12: tstate->cframe->current_frame */
	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)(p + L->cframe_frame)))
		return 0;
	return frame;
}

/* Record the code object of the frame whose bytes are in s->buf. */
static __always_inline void record_frame(struct walk_ctx *c, __u64 code, __u64 instr)
{
	struct scratch *s = c->s;
	struct tb_walk *L = &s->walk;
	struct tb_frame *out;
	__u32 fp = 0;
	__s64 idx;

	idx = (__s64)(instr - (code + L->co_adaptive)) >> 1;
	if (idx < -1 || idx > 0x3fffffff)
		idx = -1;

	if (read_into(s, L->co_read, code)) {
		/* Keep the frame: userspace will try again and say <unknown>. */
		count(c->cnt, TB_C_READ_CODE);
	} else {
		if (L->code_type_addr && get_u64(s, L->co_type) != L->code_type_addr) {
			count(c->cnt, TB_C_BAD_CODE);
			return;
		}
		fp = get_u32(s, L->co_fp);
		if (L->co_fp2 != TB_NO_OFFSET)
			fp ^= get_u32(s, L->co_fp2);
	}

	out = &s->stack.frames[c->depth & (TB_MAX_DEPTH - 1)];
	out->code = code;
	out->instr = (__s32)idx;
	out->fp = fp;
	c->hash = mix(c->hash, code);
	c->hash = mix(c->hash, ((__u64)(__u32)idx << 32) | fp);
	c->depth++;
}

static long walk_step(__u32 i, void *arg)
{
	struct walk_ctx *c = arg;
	struct scratch *s = c->s;
	struct tb_walk *L = &s->walk;
	__u64 code, instr, frame = c->frame;
	__u8 owner;

	if (!frame)
		return 1;
	if (c->depth >= TB_MAX_DEPTH) {
		c->flags |= TB_SF_TRUNCATED;
		return 1;
	}
	if (read_into(s, L->fr_read, frame)) {
		c->flags |= TB_SF_PARTIAL;
		return 1;
	}
	owner = s->buf[L->fr_owner & BUF_MASK];
	c->frame = get_u64(s, L->fr_previous);
	if (owner == L->owner_stop) {
		c->frame = 0;
		return 1;
	}
	if (owner >= L->owner_skip)
		return 0;	/* C-stack / entry shim: not a Python frame */

	code = get_u64(s, L->fr_code) & L->exec_mask;
	instr = get_u64(s, L->fr_instr);
	if (!code)
		return 0;
	record_frame(c, code, instr);
	return 0;
}

static __always_inline int push_stack(struct scratch *s, __u64 id, __u32 depth)
{
	__u64 size = TB_STACK_HDR_SIZE + (__u64)depth * sizeof(struct tb_frame);
	__u8 one = 1;

	if (bpf_map_lookup_elem(&sent, &id))
		return 0;
	if (size > sizeof(s->stack))
		size = sizeof(s->stack);
	s->stack.kind = TB_REC_STACK;
	s->stack.depth = depth;
	s->stack.stack_id = id;
	if (bpf_ringbuf_output(&events, &s->stack, size, BPF_RB_FORCE_WAKEUP))
		return -1;
	bpf_map_update_elem(&sent, &id, &one, BPF_ANY);
	return 1;
}

static __always_inline int push_sample(struct walk_ctx *c, __u32 pid, __u32 tid, __u64 now)
{
	struct tb_sample *r;
	__u64 wake;

	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r)
		return -1;
	r->kind = TB_REC_SAMPLE;
	r->pid = pid;
	r->tid = tid;
	r->cpu = bpf_get_smp_processor_id();
	r->time_ns = now;	/* the interrupt's time: one clock read less */
	r->stack_id = c->hash;
	r->flags = c->flags;
	r->depth = c->depth;
	/* Wake the consumer only when there is a batch worth reading. */
	wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
		BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(r, wake);
	return 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), t0, ts;
	__u32 pid = id >> 32, tid = (__u32)id, zero = 0, cpu;
	struct walk_ctx c = {};
	struct tb_walk *L;
	struct scratch *s;
	int ret;

	L = bpf_map_lookup_elem(&procs, &pid);
	if (!L)
		return 0;
	t0 = bpf_ktime_get_ns();
	c.cnt = bpf_map_lookup_elem(&counters, &zero);
	cpu = bpf_get_smp_processor_id();
	s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!c.cnt || !s)
		return 0;
	c.s = s;
	count(c.cnt, TB_C_EVENTS);
	__builtin_memcpy(&s->walk, L, sizeof(*L));

	ts = find_tstate(s, c.cnt, tid);
	if (!ts) {
		count(c.cnt, TB_C_NO_TSTATE);
		goto out;
	}
	c.frame = current_frame(s);
	if (!c.frame) {
		count(c.cnt, TB_C_NO_FRAMES);
		goto out;
	}
	c.hash = 0xcbf29ce484222325ULL;
	bpf_loop(2 * TB_MAX_DEPTH, walk_step, &c, 0);
	if (c.flags & TB_SF_PARTIAL)
		count(c.cnt, TB_C_READ_FRAME);
	if (c.flags & TB_SF_TRUNCATED)
		count(c.cnt, TB_C_TRUNCATED);
	if (!c.depth && !(c.flags & TB_SF_PARTIAL)) {
		count(c.cnt, TB_C_NO_FRAMES);
		goto out;
	}
	c.hash = mix(c.hash, c.flags);

	ret = push_stack(s, c.hash, c.depth);
	if (ret < 0 || push_sample(&c, pid, tid, t0) < 0) {
		count(c.cnt, TB_C_LOST);
		goto out;
	}
	if (ret > 0)
		count(c.cnt, TB_C_STACKS);
	count(c.cnt, TB_C_SAMPLES);
out:
	c.cnt[TB_C_BPF_NS] += bpf_ktime_get_ns() - t0;
	return 0;
}
