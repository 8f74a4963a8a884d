// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tachyon-bpf: the in-kernel half.
 *
 * on_sample (perf_event): on every sample that lands in a profiled process,
 * find the interrupted thread's PyThreadState, walk the Python frame chain
 * with the offsets userspace put in `procs`, hash the frames into a stack
 * id and count the sample under it in `counts` (or, while userspace reads
 * that map, push a small sample record). The frames themselves travel once
 * per stack id (see sent_slots), so the steady state costs one tstate read, one
 * read per page of frame stack, one read per distinct code object in a row
 * and one hash map increment.
 *
 * on_tick (the scheduler tick's hrtimer, -e tick): the same, on every Nth
 * tick of each CPU, instead of a perf event of our own.
 *
 * on_switch (tp_btf/sched_switch, wall mode): capture a profiled thread's
 * stack when it leaves the CPU and credit the time it was away, in sample
 * periods, when it comes back.
 *
 * on_fork/on_exec/on_exit: keep `procs` true to the processes (a forked
 * child of a followed process is sampled from its first event; an exec'd
 * image is forgotten at once) and tell userspace.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "tachyon.h"
#include "pywalk.h"
#include "latprobe.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Bumped by userspace whenever it forgets stacks (their process is gone, or
 * a compaction folded them): the per-CPU caches of sent ids start over. A
 * sent_slots entry written under an older sent_floor counts as never sent,
 * so userspace can forget every stack at once by raising the floor.
 */
volatile __u64 sent_epoch;
volatile __u64 sent_floor;

/* Set by userspace before load. */
const volatile __u64 wakeup_bytes = 256 * 1024;
const volatile __u32 mode = TB_MODE_CPU;
const volatile __u64 period_ns = 10101010;	/* 1e9 / -F */
const volatile __u8 kernel_stacks = 0;
const volatile __u8 read_status = 1;		/* read GIL and GC state per sample */
const volatile __u8 report_all_exec = 0;	/* --all-python: every exec matters */
const volatile __u32 tick_every = 1;		/* -e tick: sample every Nth tick per CPU */
const volatile __u64 tick_handler = 0;		/* -e tick: the tick hrtimer's function */
const volatile __u8 timeline = 0;		/* --timeline: every sample a timed record */
const volatile __u8 native_stacks = 0;		/* --native: user stacks, frame pointers */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TB_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct tb_walk);
} procs SEC(".maps");

/*
 * Processes whose exec/fork/exit userspace wants to hear about: the targets
 * and, with --subprocesses or -- CMD, their descendants. Value: 1 if children
 * are followed too.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TB_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u8);
} watch SEC(".maps");

/* tid -> PyThreadState*, re-validated by native_thread_id on every use. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} tstates SEC(".maps");

/*
 * Stack ids whose frames were already pushed to userspace, direct-mapped:
 * slot id % TB_SENT_SLOTS holds sent_tag() of the last stack sent there. A
 * collision only sends a stack again (userspace keeps the first). Not an
 * LRU hash: its update takes a lock and moves list nodes, and on a real
 * application most samples are a new stack (measured in doc/performance.md).
 * Global data, not an array map: no key on sample_done's stack, no helper
 * call, and userspace empties a slot through the mapped page.
 */
volatile __u64 sent_slots[TB_SENT_SLOTS];

/*
 * The id mixed with the floor of when it was sent: one 8-byte word, so a
 * slot is never seen half written, and raising sent_floor turns every
 * older entry into "never sent" at once.
 */
static __always_inline __u64 sent_tag(__u64 id, __u64 floor)
{
	return id ^ ((floor + 1) * 0x9e3779b97f4a7c15ULL);
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

/*
 * In-kernel aggregation: a sample that finds its key adds one to it. Two
 * maps take turns in count_slot; replacing one there with the other (a
 * map-in-map update) makes the kernel wait until no program still holds
 * the old one, so userspace can then read and clear it without losing an
 * increment, while samples keep counting in the other.
 */
struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);	/* sized by userspace from -F and the CPUs */
	__type(key, struct tb_count_key);
	__type(value, __u64);
};

struct counts_map counts SEC(".maps");
struct counts_map counts2 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct counts_map);
} count_slot SEC(".maps") = {
	.values = { &counts },
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[TB_NR_COUNTERS]);
} counters SEC(".maps");

#include "rings.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1);		/* sized by userspace when --kernel */
	__type(key, __u32);
	__uint(value_size, TB_KSTACK_DEPTH * sizeof(__u64));
} kstacks SEC(".maps");

/* Wall mode: where a thread was when it left the CPU (see tachyon.h). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct tb_offcpu);
} offcpu SEC(".maps");

static const struct tb_offcpu offcpu_zero;	/* a new entry, carry 0 */

#define EFAULT 14

/*
 * Per-CPU work area. A plain array indexed by CPU rather than a per-CPU
 * array: per-CPU values are limited to 32 KiB and a full stack is 64 KiB.
 * perf_event and tracing programs never nest on one CPU (the kernel's
 * bpf_prog_active guard), so one slot per CPU is enough.
 */
#define RECENT 64	/* stack ids this CPU knows were sent: skips an LRU lookup */
/*
 * A thread's frames sit on its frame stack, each caller just below its
 * callee: one read of the leaf's page, up to the leaf's fields, brings in
 * the callers on that page too. The window never reaches below that page,
 * so it never touches memory the thread has not used. Measured on 3.12 at
 * depth 100: 5.95 -> 5.27 us per sample against one read per frame.
 */
#define WIN 4096

struct recent {
	__u64 id;
	__u64 epoch;
};

/*
 * The code objects of the last walk on this CPU and their fingerprints, in
 * walk order, two buffers used in turn (one is read while the other is
 * written). Valid for the next walk only in the same process image and
 * while the interpreter's code generation counter has not moved: then no
 * code object has been born (or died) since, so an address names the same
 * object, and the fingerprint read then still holds. Measured side by
 * side (ns per sample, depth 30 / 100): 3.12 2087 -> 1774 / 4158 -> 3084,
 * 3.13 1876 -> 1649 / 3249 -> 2794.
 */
#define MEMO 128

struct memo {
	__u64 frame;
	__u64 code;
	__u32 fp;
	__u32 tag;		/* tb_frame_tag() of the frame that ran it */
};

/*
 * One memo per process parity: the workers of a pre-fork server (gunicorn,
 * uwsgi) take turns on a CPU, and with one memo each walk found the other
 * process's and read every code object again.
 */
#define MEMO_SETS 2

/*
 * Where each memo set stands; in the scratch area's first page with the
 * other fields every sample touches.
 */
struct memo_head {
	__u32 n[2];		/* entries of each buffer */
	__u32 cur;		/* the buffer the last walk wrote */
	__u32 pid;		/* ... in this process */
	__u32 inc;		/* ... image (tb_walk.incarnation) */
	__u32 epoch;		/* of the code table: older entries are stale */
	__u64 gen;		/* ... at this code generation; 0 = none */
};

/*
 * The two buffers side by side, entry by entry: a walk reads depth d of
 * one and writes depth d of the other, so a ~45-frame walk stays on one
 * page (two 3 KiB buffers one after the other took two). A page of its
 * own per set.
 */
struct memo_set {
	struct memo m[MEMO][2];
} __attribute__((aligned(4096)));

/*
 * Fingerprints of the code objects this CPU has read, by address, one
 * table per memo set, valid under the memo's rule (same process image,
 * code generation standing still: an address names one object). The memo
 * finds a caller only where the last walk had it; an application's leaf
 * side wanders among hundreds of functions, and the callers the memo
 * misses were mostly read by some walk before. On a Django request under
 * gunicorn (3.13.0) the memo took 76 % of the callers' fingerprints, the
 * two together 97 % (~9.5 code objects fewer read per ~44-frame sample);
 * 16 KiB per set and CPU.
 */
#define CODE_SLOTS 1024

struct code_slot {
	__u64 code;
	__u32 fp;
	/* memo_head.epoch ^ the tb_frame_tag() of the frame that ran it, when
	 * written (0 on 3.12+): a slot stays 16 bytes, the table 16 KiB */
	__u32 epoch;
};

struct code_table {
	struct code_slot e[CODE_SLOTS];
} __attribute__((aligned(4096)));

/*
 * Thread states of the threads this CPU ran last, by pid << 32 | tid: the
 * workers of a pre-fork server take turns on a CPU, and one entry (the
 * last thread) sent every other sample to the `tstates` hash.
 */
#ifndef TSC
#define TSC 8
#endif

struct ts_slot {
	__u64 id;
	__u64 ts;
};

/*
 * The area is page-aligned (BPF_F_MMAPABLE) and a multiple of pages per
 * CPU, and what a sample touches is packed onto as few pages as possible:
 * in this nested VM each cold page (a TLB miss and cache misses) costs
 * ~80 ns or more, and between two samples an application evicts them
 * all. A sample touches the first page (the walk, the caches' heads, buf,
 * recent), one page of its memo set and up to one per caller the memo
 * misses in its code table (3.11+), the window's page, the page of frames
 * read aside (3.12+: shims) and the stack record's first page (its frames,
 * after the window's tail).
 */
struct scratch {
	/*
	 * Small and hot first: a BPF load or store takes a 16-bit signed
	 * offset, so a field beyond 32 KiB costs two more instructions on
	 * every access. The 64 KiB stack record goes last.
	 */
	struct tb_walk walk;
	__u64 last_tstate;	/* the thread state find_tstate() found */
	__u64 woke_ns;		/* when a new stack last woke the consumer */
	__u64 weight;		/* periods this sample is worth: 1, or tick_weight()'s */
	struct memo_head mh[MEMO_SETS];
	struct ts_slot tsc[TSC];
	__u8 buf[TB_READ_MAX + 8] __attribute__((aligned(8)));
	struct recent recent[RECENT];
	struct memo_set memo[MEMO_SETS];
	struct code_table codes[MEMO_SETS];
	__u8 win[2 * WIN + TB_READ_MAX + 8] __attribute__((aligned(4096)));
	struct tb_stack stack;
} __attribute__((aligned(4096)));

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);	/* resized to the number of CPUs by userspace */
	__uint(map_flags, BPF_F_MMAPABLE);	/* values page-aligned (never mapped) */
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* The slot of thread id (pid << 32 | tid) in s->tsc. */
static __always_inline struct ts_slot *ts_slot(struct scratch *s, __u64 id)
{
	return &s->tsc[(id * 0x9e3779b97f4a7c15ULL) >> 61 & (TSC - 1)];
}


/* What s->win holds: [base, base + len) of the thread's memory. */
struct window {
	__u64 base;
	__u64 len;		/* 0 = nothing */
	__u64 fo;		/* the current frame's offset in s->win (WIN: read aside) */
	__u64 side;		/* the frame read aside, at s->win + WIN; 0 = none */
};

/* Where a walk stands with the memo (scalars only: global functions get it). */
struct memo_cursor {
	__u64 gen;		/* the code generation now; 0 = unknown */
	__u32 cur;		/* the buffer this walk writes */
	__u32 ok;		/* the other one may be used */
	__u32 j;		/* where in it the next frame is looked for */
	__u32 hits;		/* fingerprints taken from it (counted once per walk) */
	__u32 set;		/* the memo set of this process */
	__u32 epoch;		/* the code table's entries written under this rule */
	/* code_of()'s tb_code_how() and tb_frame_tag(), for the frame at hand */
	__u32 tag;
	__u32 depth;
	__u32 check_next;
	__s64 idx;
};

struct walk_ctx {
	struct scratch *s;
	__u64 *cnt;
	__u64 tstate;
	__u64 interp;		/* the thread's PyInterpreterState */
	struct tb_chain ch;	/* the walk, by the rules of pywalk.h */
	struct window w;	/* the frame stack bytes in s->win */
	struct memo_cursor m;
};

struct find_ctx {
	struct scratch *s;
	__u64 ts;
	__u64 found;
	__u64 tid;		/* native tid, or with TB_F_PTHREAD_ID pthread_self() */
	int want;		/* 1: the one tid runs, 2: any of tid's (ts_owner) */
	int err;
};

/*
 * Fields are read out of byte arrays with pywalk.h's loads (one load per
 * field: three byte-wise loads per frame were a fifth of a 3.11 walk).
 * The current frame's bytes, in the window (fo is a multiple of 8):
 */
static __always_inline const __u8 *frame_buf(struct walk_ctx *c)
{
	return &c->s->win[c->w.fo & (2 * WIN - 8)];
}

/*
 * Far enough from the window to lie elsewhere than on its frame stack
 * chunk (16 KiB in 3.11+) or the C stack page around it.
 */
#define NEAR (16 * 1024)

static __always_inline int far_from(__u64 frame, __u64 base, __u64 len)
{
	return frame + NEAR < base || frame > base + len + NEAR;
}

/*
 * Make the frame's first fr_read bytes readable at frame_buf(): from the
 * window when it holds them (a caller on the leaf's page), else with a new
 * window. A frame far from the window is read alone, aside, and the window
 * kept: on 3.12+ the entry frame of each eval invocation (a shim) lives on
 * the C stack, a generator's frame in its object, and the next caller is
 * back on the frame stack the window holds. A Django request on 3.13.0
 * took 13.3 window reads (33.6 KB copied) per ~44-frame sample, a new one
 * at each of its 6 shims and another one back; 3.11, no shims, took 2.
 * Two far frames in a row near each other (the walk went on to an older
 * frame stack chunk) take a window there. Returns 0, or -1 if the frame
 * cannot be read. A global function: the verifier checks it once rather
 * than on every path of the walk.
 */
__noinline int frame_bytes(struct scratch *s, struct window *w, __u64 frame)
{
	__u64 need, end, start, size, t;

	if (!s || !w || !tb_frame_addr_ok(frame))
		return -1;
	need = s->walk.off.fr_read;
	end = frame + need;
	if (frame >= w->base && end <= w->base + w->len) {
		w->fo = frame - w->base;
		w->side = 0;
		return 0;
	}
	if (tb_frame_stack_window(&s->walk) && w->len && far_from(frame, w->base, w->len) &&
	    !(w->side && !far_from(frame, w->side, need))) {
		lat_read(frame, need);
		lat_window(need);
		t = lat_rd0();
		if (bpf_probe_read_user(&s->win[WIN], need > TB_READ_MAX ? TB_READ_MAX : need,
					(void *)frame))
			return -1;
		lat_rd1(t, 0);
		w->side = frame;
		w->fo = WIN;
		return 0;
	}
	w->side = 0;
	start = frame & ~4095ULL;
	if (!tb_frame_stack_window(&s->walk))
		start = frame;	/* a heap frame object: no caller around it */
	if (end - start > WIN)
		start = (end - WIN + 7) & ~7ULL;	/* keeps fo a multiple of 8 */
	size = end - start;
	if (size > WIN)
		size = WIN;
	lat_read(start, size);
	lat_window(size);
	t = lat_rd0();
	if (bpf_probe_read_user(s->win, size, (void *)start)) {
		/* Not all of it readable: the frame alone, then. */
		start = frame;
		size = need > TB_READ_MAX ? TB_READ_MAX : need;
		if (bpf_probe_read_user(s->win, size, (void *)start)) {
			w->len = 0;
			return -1;
		}
	}
	lat_rd1(t, 0);
	w->base = start;
	w->len = size;
	w->fo = frame - start;
	return 0;
}

static __always_inline int read_into(struct scratch *s, __u32 size, __u64 addr)
{
	__u64 t = lat_rd0();
	long err;

	if (size > TB_READ_MAX)
		size = TB_READ_MAX;
	lat_read(addr, size);
	err = bpf_probe_read_user(s->buf, size, (void *)addr);
	lat_rd1(t, 1);
	return err;
}

static __always_inline void count(__u64 *cnt, int idx)
{
	if (idx >= 0 && idx < TB_NR_COUNTERS)
		cnt[idx]++;
}

/* Of the thread state whose bytes are in s->buf: tb_ts_owner(). */
static __always_inline int ts_owner(struct scratch *s, __u64 tid)
{
	return tb_ts_owner(&s->walk, s->buf, tid);
}

/* One step of the thread list: does this PyThreadState belong to tid? */
static long find_step(__u32 i, void *arg)
{
	struct find_ctx *f = arg;
	struct scratch *s = f->s;
	struct tb_walk *L = &s->walk;
	int m;

	if (!f->ts)
		return 1;
	if (read_into(s, L->off.ts_read, f->ts)) {
		f->err = 1;
		return 1;
	}
	m = ts_owner(s, f->tid);
	if (m && m <= f->want) {
		f->found = f->ts;
		return 1;
	}
	f->ts = tb_ts_next(L, s->buf);
	return 0;
}

/* Has the process more than one interpreter? (Two reads, on a detached
 * thread state only: one interpreter means one thread state per thread.) */
static __always_inline int several_interps(struct tb_walk *L)
{
	__u64 head = 0, next = 0;

	if (bpf_probe_read_user(&head, sizeof(head),
				(void *)(L->addr.runtime_addr + L->off.rt_interp_head)) ||
	    !head || bpf_probe_read_user(&next, sizeof(next), (void *)(head + L->off.interp_next)))
		return 0;
	return next != 0;
}

/* The thread id as the target's own namespace sees it (native_thread_id). */
static __always_inline __u32 ns_tid(struct tb_walk *L, __u32 tid)
{
	struct bpf_pidns_info ns = {};

	if (!L->addr.pidns_ino)
		return tid;
	if (bpf_get_ns_current_pid_tgid(L->addr.pidns_dev, L->addr.pidns_ino, &ns, sizeof(ns)))
		return 0;
	return ns.pid;
}

/*
 * What the thread states name the current thread by: its tid as its pid
 * namespace sees it, or with TB_F_PTHREAD_ID its pthread_self(), the FS
 * base the kernel set at clone (CLONE_SETTLS) and keeps in thread_struct.
 */
static __always_inline __u64 thread_key(struct tb_walk *L, __u32 tid)
{
	struct task_struct *task;

	if (!(L->off.features & TB_F_PTHREAD_ID))
		return ns_tid(L, tid);
	/* not bpf_get_current_task_btf(): Linux 5.11 */
	task = (struct task_struct *)bpf_get_current_task();
	return BPF_CORE_READ(task, thread.fsbase);
}

/* The thread state found for thread id: this CPU's cache and last_tstate. */
static __always_inline void ts_keep(struct scratch *s, __u64 id, __u64 ts)
{
	struct ts_slot *e = ts_slot(s, id);

	e->id = id;
	e->ts = ts;
	s->last_tstate = ts;
}

/* The cached thread state of tid, read into s->buf, as ts_owner() says. */
static __always_inline int ts_cached(struct scratch *s, __u64 id, __u32 gtid, __u64 tid,
				     __u64 *ts)
{
	struct tb_walk *L = &s->walk;
	struct ts_slot *e = ts_slot(s, id);
	__u64 *cached;
	int m;

	*ts = e->id == id ? e->ts : 0;
	if (*ts && !read_into(s, L->off.ts_read, *ts) && (m = ts_owner(s, tid)))
		return m;
	cached = bpf_map_lookup_elem(&tstates, &gtid);
	*ts = cached ? *cached : 0;
	if (*ts && !read_into(s, L->off.ts_read, *ts))
		return ts_owner(s, tid);
	return 0;
}

/*
 * Find tid's PyThreadState: the cached one if it still names this thread
 * and is the one it runs (or the process has one interpreter), else a walk
 * of every interpreter's thread list, newest interpreter first, for the
 * one it runs. The thread-local "current tstate" is not used: it is NULL
 * whenever a thread has released the GIL. On success the tstate's first
 * ts_read bytes are left in s->buf and the tstate in s->last_tstate.
 * Returns 0 (none), 1 (from the caches) or 2 (after a search). Global: the
 * verifier checks it once, not once per path of each program using it.
 */
#define TS_CACHED	1
#define TS_SEARCHED	2

/*
 * Every interpreter's thread list, newest interpreter first, for a thread
 * state of tid that ts_owner() rates `want` or better. Returns it, or 0.
 * Global, checked once.
 */
__noinline __u64 search_tstate(struct scratch *s, __u64 tid, int want)
{
	struct find_ctx f = { .s = s, .tid = tid, .want = want };
	struct tb_walk *L;
	__u64 interp = 0;
	int i;

	if (!s)
		return 0;
	L = &s->walk;
	if (bpf_probe_read_user(&interp, sizeof(interp),
				(void *)(L->addr.runtime_addr + L->off.rt_interp_head)))
		return 0;
	for (i = 0; i < TB_MAX_INTERPS && interp; i++) {
		if (bpf_probe_read_user(&f.ts, sizeof(f.ts),
					(void *)(interp + L->off.interp_threads_head)))
			break;
		bpf_loop(TB_MAX_THREADS, find_step, &f, 0);
		if (f.found)
			return f.found;
		if (bpf_probe_read_user(&interp, sizeof(interp),
					(void *)(interp + L->off.interp_next)))
			break;
	}
	return 0;
}

/*
 * The walker without bpf_loop (Linux 5.10 to 5.16): search_tstate() with
 * bounded loops, TC_THREADS thread states of a list per call (more at once
 * and the verifier's work grows past its limit). Global functions with
 * scalar arguments only (5.10 takes no pointer in a global function's
 * arguments): each is verified once, not once per iteration of its caller.
 */
#define TC_THREADS	64

struct tc_search {
	__u64 next;		/* the thread state search_chunk_tc() stopped at; 0: none */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tc_search);
} tc_search SEC(".maps");

/* From thread state ts on: tid's, as search_tstate() wants it, or 0. */
__noinline __u64 search_chunk_tc(__u64 ts, __u64 tid, int want)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id(), i;
	struct find_ctx f = { .ts = ts, .tid = tid, .want = want };
	struct tc_search *at = bpf_map_lookup_elem(&tc_search, &zero);

	f.s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!f.s || !at)
		return 0;
	for (i = 0; i < TC_THREADS; i++)
		if (find_step(i, &f))
			break;
	at->next = f.found || f.err ? 0 : f.ts;
	return f.found;
}

__noinline __u64 search_tstate_tc(__u64 tid, int want)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	__u64 interp = 0, ts = 0, found;
	struct tc_search *at;
	struct scratch *s;
	struct tb_walk *L;
	int i, j;

	s = bpf_map_lookup_elem(&scratch, &cpu);
	at = bpf_map_lookup_elem(&tc_search, &zero);
	if (!s || !at)
		return 0;
	L = &s->walk;
	if (bpf_probe_read_user(&interp, sizeof(interp),
				(void *)(L->addr.runtime_addr + L->off.rt_interp_head)))
		return 0;
	for (i = 0; i < TB_MAX_INTERPS && interp; i++) {
		if (bpf_probe_read_user(&ts, sizeof(ts),
					(void *)(interp + L->off.interp_threads_head)))
			break;
		for (j = 0; j < TB_MAX_THREADS / TC_THREADS && ts; j++) {
			found = search_chunk_tc(ts, tid, want);
			if (found)
				return found;
			ts = at->next;
		}
		if (bpf_probe_read_user(&interp, sizeof(interp),
					(void *)(interp + L->off.interp_next)))
			break;
	}
	return 0;
}

/*
 * find_tstate()'s body, with the thread search of either walker: loopless
 * (a constant) names the one without bpf_loop, so the other one's code is
 * not in that walker's programs at all.
 */
static __always_inline int find_tstate_by(struct scratch *s, __u64 id, const int loopless)
{
	__u32 gtid = (__u32)id;		/* cache key */
	__u64 tid;			/* compare key */
	struct tb_walk *L;
	__u64 ts, found;
	int m;

	L = &s->walk;
	tid = thread_key(L, gtid);
	m = ts_cached(s, id, gtid, tid, &ts);
	/* A detached one is still the right one unless the thread may have
	 * entered another interpreter since. */
	if (m == 1 || (m == 2 && !several_interps(L))) {
		ts_keep(s, id, ts);
		return TS_CACHED;
	}
	/* The one it runs; if none, the one already cached, else any. */
	found = loopless ? search_tstate_tc(tid, 1) : search_tstate(s, tid, 1);
	if (!found)
		found = m == 2 ? ts : loopless ? search_tstate_tc(tid, 2) : search_tstate(s, tid, 2);
	if (!found || read_into(s, L->off.ts_read, found))
		return 0;
	bpf_map_update_elem(&tstates, &gtid, &found, BPF_ANY);
	ts_keep(s, id, found);
	return TS_SEARCHED;
}

__noinline int find_tstate(struct scratch *s, __u64 id)
{
	return s ? find_tstate_by(s, id, 0) : 0;
}

/*
 * The frame the thread is executing, from the tstate bytes in s->buf;
 * with TB_F_CFRAME through tstate->cframe, a struct on the C stack.
 */
static __always_inline __u64 current_frame(struct walk_ctx *c)
{
	struct scratch *s = c->s;
	struct tb_walk *L = &s->walk;
	__u64 p = tb_ts_frame(L, s->buf);

	if (!tb_via_cframe(L) || !p)
		return p;
	if (read_into(s, TB_CFRAME_READ, p))
		return 0;
	return tb_chain_cframe(L, &c->ch, s->buf);
}

/* The entry check (pywalk.h): start over where the chain must go on. */
static __always_inline void check_entry(struct walk_ctx *c)
{
	__u64 expect = 0, at = tb_entry_expect_addr(&c->s->walk, &c->ch);

	if (at && bpf_probe_read_user(&expect, sizeof(expect), (void *)at))
		return;	/* cannot tell: keep the walk */
	if (!tb_entry_misplaced(&c->ch, expect))
		return;
	count(c->cnt, TB_C_STALE_CFRAME);
	tb_chain_restart(&c->ch, expect);
	c->m.j = 0;
}

/*
 * Read the code object into *seen: whole, with the type check, if `check`
 * (tb_code_how()'s TB_CODE_WHOLE), else its fingerprint's cache line.
 * Returns 0, or the counter that says why the pointer is no code object.
 * Global, so the verifier checks it once. Measured side by
 * side against reading every code object whole (ns per sample, depth 30 /
 * 100): 3.11 2357 -> 1947 / 5825 -> 4411, 3.12 2150 -> 1999 / 4654 ->
 * 4183, 3.13 2322 -> 1916.
 */
__noinline int code_info(struct scratch *s, struct tb_code *seen, __u64 code, int check)
{
	struct tb_walk *L;

	if (!s || !seen)
		return TB_C_READ_CODE;
	L = &s->walk;
	if (read_into(s, tb_code_len(L, check), code + tb_code_base(L, check)))
		return TB_C_READ_CODE;
	return tb_code_parse(L, seen, s->buf, code, check);
}

/*
 * The fingerprint of `code` from the last walk, if the generation allows.
 * Two samples of an application share the bottom of their stacks, not the
 * top: the leaf side differs in depth and path from sample to sample (a
 * Django request: ~40-50 frames, hundreds of distinct stacks in seconds).
 * A frame keeps its address on the frame stack while it lives, and a
 * walk's frames come in falling address order (a caller sits below its
 * callee), so the search looks for this frame's address in the last walk:
 * first at the entry after the last match (the common case), then by
 * bisection of the rest, and takes the fingerprint if that frame ran the
 * same code object. A frame off the frame stack (a generator's) breaks the
 * order and may be missed: its code object is read. The first probe also
 * takes the same code object at another address (a caller moved by a leaf
 * side of another depth). Looking only for the same code object in the
 * next 4 positions found 51 % of callers on a Django request under
 * gunicorn (now 81 %), 66 % on a 40-deep chain under a leaf side of 0-24
 * frames (now 76 %). Returns 1 with seen->fp set on a hit. Global, checked
 * once.
 */
#define MEMO_PROBES 9	/* the next entry, then log2(MEMO) + 1 halvings */

__noinline int memo_find(struct scratch *s, struct memo_cursor *mc, struct tb_code *seen,
			 __u64 frame, __u64 code)
{
	__u32 prev, lo, hi, mid, t;
	struct memo_set *ms;
	struct memo *m;

	if (!s || !mc || !seen || !mc->ok)
		return 0;
	ms = &s->memo[mc->set & (MEMO_SETS - 1)];
	prev = (mc->cur ^ 1) & 1;
	lo = mc->j;
	hi = s->mh[mc->set & (MEMO_SETS - 1)].n[prev];
	for (t = 0; t < MEMO_PROBES; t++) {
		if (lo >= hi || hi > MEMO)
			return 0;
		mid = t ? lo + (hi - lo) / 2 : lo;
		m = &ms->m[mid & (MEMO - 1)][prev];
		if (!t && m->code == code && m->tag == mc->tag && m->frame != frame)
			break;	/* the same caller, moved: a leaf side of another depth */
		if (m->frame > frame) {
			lo = mid + 1;	/* returned from since: look below */
			continue;
		}
		if (m->frame < frame) {
			hi = mid;
			continue;
		}
		break;
	}
	if (t == MEMO_PROBES)
		return 0;
	mc->j = mid + 1;	/* aligned, whatever code it ran then */
	if (m->code != code || m->tag != mc->tag)
		return 0;
	seen->addr = code;
	seen->fp = m->fp;
	seen->words = 0;
	mc->hits++;
	return 1;
}

/* The code table's slot of `code` (heap objects: 16-byte aligned). */
static __always_inline struct code_slot *code_slot(struct scratch *s, struct memo_cursor *mc,
						   __u64 code)
{
	__u32 i = (__u32)((code >> 4) * 0x9e3779b97f4a7c15ULL >> 54) & (CODE_SLOTS - 1);

	return &s->codes[mc->set & (MEMO_SETS - 1)].e[i];
}

/* The fingerprint of `code` from the code table. Returns 1 on a hit.
 * Global, checked once. */
__noinline int code_cached(struct scratch *s, struct memo_cursor *mc, struct tb_code *seen,
			   __u64 code)
{
	struct code_slot *e;

	if (!s || !mc || !seen || !mc->gen || !code)
		return 0;
	e = code_slot(s, mc, code);
	if (e->code != code || e->epoch != (mc->epoch ^ mc->tag))
		return 0;
	seen->addr = code;
	seen->fp = e->fp;
	seen->words = 0;
	mc->hits++;
	return 1;
}

/* Keep a code object just read in the code table. Global, checked once. */
__noinline int code_keep(struct scratch *s, struct memo_cursor *mc, struct tb_code *seen)
{
	struct code_slot *e;

	if (!s || !mc || !seen || !mc->gen)
		return 0;
	e = code_slot(s, mc, seen->addr);
	e->code = seen->addr;
	e->fp = seen->fp;
	e->epoch = mc->epoch ^ mc->tag;
	return 0;
}

/*
 * The fingerprint of the frame's code object into *seen: from the memo or
 * the code table when they hold it, else read (and kept in the table).
 * Returns 0, or the counter of why the pointer is no code object. One
 * global function: the walk's verifier states do not split on where a
 * fingerprint came from (split in the walk, they doubled the time the
 * kernel took to load the program, 0.28 -> 0.54 s of CPU).
 */
__noinline int code_of(struct scratch *s, struct memo_cursor *mc, struct tb_code *seen,
		       __u64 frame, __u64 code)
{
	__u32 how;
	int err;

	if (!s || !mc || !seen)
		return TB_C_READ_CODE;
	/* The frame before ran it too (recursion): already known and kept.
	 * Per-walk state only, on the stack: a table in the map would add a
	 * cold cache line per frame. */
	if (tb_code_known(seen, code, mc->check_next))
		return 0;
	how = tb_code_how(mc->depth, mc->check_next, mc->idx);
	if ((how & TB_CODE_KEPT) &&
	    ((mc->ok && memo_find(s, mc, seen, frame, code)) || code_cached(s, mc, seen, code)))
		return 0;
	err = code_info(s, seen, code, how & TB_CODE_WHOLE);
	if (!err)
		code_keep(s, mc, seen);
	return err;
}

/* Remember a recorded frame's code object. Global: the verifier checks the
 * depth bound here once, instead of tracking depth through the walk. */
__noinline int memo_put(struct scratch *s, struct memo_cursor *mc, __u32 depth, __u64 frame,
			struct tb_code *seen)
{
	struct memo *m;

	if (!s || !mc || !seen || depth >= MEMO)
		return 0;
	/* Hide the bound from clang, which would drop the mask the verifier needs. */
	asm volatile("" : "+r"(depth));
	m = &s->memo[mc->set & (MEMO_SETS - 1)].m[depth & (MEMO - 1)][mc->cur & 1];
	m->frame = frame;
	m->code = seen->addr;
	m->fp = seen->fp;
	m->tag = mc->tag;
	return 0;
}

/*
 * TB_F_TLBC: the bytecode copy a frame with a nonzero tlbc_index runs
 * (pywalk.h); 0 if unreadable, which leaves the index out of bounds (-1).
 * Global, checked once.
 */
__noinline __u64 tlbc_base(struct scratch *s, __u64 code, __u32 tlbc)
{
	__u64 array = 0, base = 0, at;

	if (!s || bpf_probe_read_user(&array, sizeof(array),
				      (void *)tb_tlbc_array_addr(&s->walk, code)))
		return 0;
	at = tb_tlbc_entry_addr(array, tlbc);
	if (!at || bpf_probe_read_user(&base, sizeof(base), (void *)at))
		return 0;
	return base;
}

/* The Python frame at `frame` (bytes in fr), step i of the walk. */
static __always_inline int record_frame(struct walk_ctx *c, __u64 frame, const __u8 *fr,
					__u32 i)
{
	struct scratch *s = c->s;
	struct tb_walk *L = &s->walk;
	struct tb_chain *ch = &c->ch;
	__u64 code = tb_frame_code(L, fr);
	__u32 tlbc = tb_frame_tlbc(L, fr);
	__s64 idx = tlbc ? tb_instr_index_at(tlbc_base(s, code, tlbc), tb_frame_instr(L, fr)) :
			   tb_frame_index(L, code, fr);
	int err;

	c->m.tag = tb_frame_tag(L, fr);
	c->m.depth = ch->depth;
	c->m.check_next = ch->check_next;
	c->m.idx = idx;
	err = code_of(s, &c->m, &ch->code, frame, code);
	if (err)
		count(c->cnt, err == TB_C_BAD_CODE ? TB_C_BAD_CODE : TB_C_READ_CODE);
	/* One exit for both failures: one path for the verifier to follow. */
	if (err || !tb_chain_linked(ch, frame))
		return tb_chain_bad_frame(ch, i);
	if (c->m.gen)
		memo_put(s, &c->m, ch->depth, frame, &ch->code);
	tb_chain_push(L, ch, &s->stack.frames[ch->depth & (TB_MAX_DEPTH - 1)], frame, code,
		      tb_instr_recorded(idx));
	return TB_STEP_NEXT;
}

/*
 * --native: is the frame just stepped past the first of an eval invocation?
 * A shim (3.12+) sits under the first frame of its eval; 3.11 flags that
 * frame itself; 3.8-3.10 run every frame in an eval of its own.
 */
static __always_inline int entry_step(struct tb_walk *L, const __u8 *fr, int step)
{
	if (step == TB_STEP_SHIM)
		return 1;
	return step == TB_STEP_NEXT && (tb_frameobj(L) || tb_frame_is_entry(L, fr));
}

/* --native: mark the frame recorded last (TB_CODE_ENTRY, TB_CODE_EMPTY_EVAL). */
static __always_inline void mark_frame(struct walk_ctx *c, __u64 bit)
{
	struct tb_frame *f = &c->s->stack.frames[(c->ch.depth - 1) & (TB_MAX_DEPTH - 1)];

	f->code |= bit;
	c->ch.hash = tb_hash_mix(c->ch.hash, bit);
}

/*
 * --native: mark the frame recorded last as its eval's first. A shim with
 * no frame above it (the leaf, or right after another shim) is an eval
 * invocation without Python frames: said on the next frame recorded. Two
 * in a row are not said: the merge then finds an eval too many and marks
 * the stack unmatched rather than pairing wrongly.
 */
static __always_inline void mark_entry(struct walk_ctx *c, int step)
{
	if (c->ch.depth && !(c->s->stack.frames[(c->ch.depth - 1) &
						 (TB_MAX_DEPTH - 1)].code & TB_CODE_ENTRY)) {
		mark_frame(c, TB_CODE_ENTRY);
		return;
	}
	if (step == TB_STEP_SHIM)
		c->ch.empty_eval = 1;
}

static long walk_step(__u32 i, void *arg)
{
	struct walk_ctx *c = arg;
	struct scratch *s = c->s;
	struct tb_walk *L = &s->walk;
	__u64 frame = c->ch.frame;
	const __u8 *fr;
	int step;

	if (tb_chain_done(&c->ch))
		return 1;
	if (frame_bytes(s, &c->w, frame)) {
		tb_chain_broken(&c->ch);
		return 1;
	}
	fr = frame_buf(c);
	step = tb_chain_frame(L, &c->ch, fr);
	if (step == TB_STEP_PYTHON)
		step = record_frame(c, frame, fr, i);
	if (native_stacks && step == TB_STEP_NEXT && c->ch.empty_eval) {
		mark_frame(c, TB_CODE_EMPTY_EVAL);
		c->ch.empty_eval = 0;
	}
	if (native_stacks && entry_step(L, fr, step))
		mark_entry(c, step);
	if (i == 0)
		lat_phase(7);
	if (step == TB_STEP_END)
		return 1;
	if (step != TB_STEP_SKIP && tb_entry_due(L, &c->ch, fr, step))
		check_entry(c);
	return 0;
}

/*
 * The code generation now, and whether the last walk's memo still holds.
 * Global: the walk is verified once, not once per combination of these.
 */
__noinline int memo_begin(struct scratch *s, struct memo_cursor *mc, __u32 pid, __u64 interp)
{
	struct memo_head *ms;
	struct tb_walk *L;
	__u64 gen = 0;

	if (!s || !mc)
		return 0;
	L = &s->walk;
	mc->set = pid & (MEMO_SETS - 1);
	ms = &s->mh[mc->set];
	mc->cur = (ms->cur ^ 1) & 1;
	mc->j = 0;
	mc->hits = 0;
	if (L->addr.code_gen_addr &&
	    bpf_probe_read_user(&gen, L->addr.code_gen_size == 4 ? 4 : 8,
				(void *)L->addr.code_gen_addr))
		gen = 0;
	gen = tb_code_gen(L, gen, interp);
	mc->gen = gen;
	mc->ok = gen && gen == ms->gen && pid == ms->pid && L->reg.incarnation == ms->inc;
	if (!mc->ok)
		ms->epoch++;	/* the code table starts over */
	mc->epoch = ms->epoch;
	return 0;
}

static __always_inline void memo_end(struct walk_ctx *c, __u32 pid)
{
	struct memo_head *ms = &c->s->mh[c->m.set & (MEMO_SETS - 1)];

	c->cnt[TB_C_CODE_MEMO] += c->m.hits;
	c->cnt[TB_C_FRAMES] += c->ch.depth;
	ms->cur = c->m.cur;
	ms->n[c->m.cur & 1] = !c->m.gen ? 0 : c->ch.depth < MEMO ? c->ch.depth : MEMO;
	ms->gen = c->m.gen;
	ms->pid = pid;
	ms->inc = c->s->walk.reg.incarnation;
}

/*
 * Walk the current thread's Python stack into s->stack and c. Returns 0, or
 * the counter that says why there is nothing to report.
 */
static __always_inline int walk_begin(struct walk_ctx *c, __u32 pid, __u32 tid,
				      const int loopless)
{
	struct scratch *s = c->s;
	struct tb_walk *L = &s->walk;
	__u64 id = (__u64)pid << 32 | tid;
	int ret;

	ret = loopless ? find_tstate_by(s, id, 1) : find_tstate(s, id);
	lat_phase(1);
	if (ret != TS_CACHED)
		count(c->cnt, TB_C_TSTATE_MISS);
	if (!ret)
		return TB_C_NO_TSTATE;
	c->tstate = s->last_tstate;
	c->interp = tb_ts_interp(L, s->buf);
	tb_chain_init(&c->ch);
	/* Stored only when set: written either way, the verifier carried two
	 * states of the flags through the whole walk (a fifth more to verify). */
	ret = tb_ts_flags(L, s->buf);
	if (ret)
		c->ch.flags |= ret;
	c->ch.frame = current_frame(c);
	lat_phase(2);
	if (!c->ch.frame)
		return TB_C_NO_FRAMES;
	return 0;
}

/* GIL held (by us / anybody) and GC running: two small reads, when asked. */
static __always_inline void read_gil_gc(struct walk_ctx *c)
{
	struct scratch *s = c->s;
	struct tb_walk *L = &s->walk;
	int collecting = 0;

	if (!read_status || !L->addr.gil_addr)
		return;
	if (read_into(s, TB_GIL_READ, L->addr.gil_addr))
		return;
	c->ch.flags |= tb_gil_flags(L, s->buf, c->tstate);
	if (L->addr.gc_addr && !bpf_probe_read_user(&collecting, sizeof(collecting),
						    (void *)L->addr.gc_addr))
		c->ch.flags |= tb_gc_flags(collecting);
}

/*
 * Wake the consumer only when there is a batch of samples worth reading:
 * it reads the ring anyway at least every POLL_MS, before it reads the
 * counts. (A new stack's record wakes it at once, see push_stack().)
 */
static __always_inline __u64 wake_flag(void)
{
	return rings_avail() >= wakeup_bytes ?
		BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

#include "asyncio.bpf.h"

/* After the steps: the counters, and the stack id. */
static __always_inline int walk_end(struct walk_ctx *c, __u32 pid)
{
	memo_end(c, pid);
	if (c->ch.flags & TB_SF_PARTIAL)
		count(c->cnt, TB_C_READ_FRAME);
	if (c->ch.flags & TB_SF_TRUNCATED)
		count(c->cnt, TB_C_TRUNCATED);
	if (!c->ch.depth && !(c->ch.flags & TB_SF_PARTIAL))
		return TB_C_NO_FRAMES;
	c->ch.hash = tb_chain_id(&c->ch);	/* the stack id from here on */
	/* Here rather than in the drivers' ends: async_chain's frame then
	 * adds to the walk's end, not to sample_done's (the tail-call
	 * walker's 512-byte chain, tc_close). */
	read_gil_gc(c);
	async_chain(c, pid);
	return 0;
}

static __always_inline int walk_current(struct walk_ctx *c, __u32 pid, __u32 tid)
{
	int ret = walk_begin(c, pid, tid, 0);

	if (ret)
		return ret;
	memo_begin(c->s, &c->m, pid, c->interp);
	lat_phase(3);
	bpf_loop(2 * TB_MAX_DEPTH, walk_step, c, 0);
	lat_phase(4);
	return walk_end(c, pid);
}

/* Py_TPFLAGS_BASE_EXC_SUBCLASS: BaseException and its subclasses have it. */
#define TB_TPFLAGS_BASE_EXC	(1ULL << 30)
/* _PyErr_StackItem entries looked at: the thread's own, plus one per
 * generator or coroutine running on its stack. */
#define EXC_ITEMS 32

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* type if it is an exception class, else 0 (None's type, garbage). */
static __always_inline __u64 exc_class(const struct tb_offsets *o, __u64 type)
{
	return read_u64(type ? type + o->tp_flags : 0) & TB_TPFLAGS_BASE_EXC ? type : 0;
}

/*
 * --mode exception: the type of the exception the thread has in flight,
 * or 0. Being raised or propagating: tstate's current exception (3.11:
 * curexc_type, the type itself). Else being handled: the first exc_value
 * down the stack of _PyErr_StackItem that is an exception (NULL and None
 * mean "none here": a generator that handles nothing leaves its caller's
 * except block in force, as sys.exception() sees it). Global, checked once.
 */
__noinline __u64 exc_in_flight(struct scratch *s, __u64 tstate)
{
	const struct tb_offsets *o;
	__u64 v, item, type;
	int i;

	if (!s || !tstate)
		return 0;
	o = &s->walk.off;
	if (o->ts_exc_info == TB_NO_OFFSET || o->ts_exc == TB_NO_OFFSET)
		return 0;
	v = read_u64(tstate + o->ts_exc);
	if (v && (o->features & TB_F_EXC_TYPE))
		type = exc_class(o, v);
	else
		type = exc_class(o, read_u64(v ? v + o->co_type : 0));
	if (type)
		return type;
	item = read_u64(tstate + o->ts_exc_info);
	for (i = 0; i < EXC_ITEMS && item; i++) {
		v = read_u64(item + o->si_exc_value);
		type = exc_class(o, read_u64(v ? v + o->co_type : 0));
		if (type)
			return type;
		item = read_u64(item + o->si_previous);
	}
	return 0;
}

/* --mode exception: the type in flight, or 0 (the sample is dropped);
 * the type joins the stack id (one stack record per type). */
static __always_inline __u64 exception_of(struct walk_ctx *c)
{
	__u64 exc = exc_in_flight(c->s, c->tstate);

	if (exc)
		c->ch.hash = tb_hash_mix(c->ch.hash, exc);
	return exc;
}

/*
 * A new stack's record wakes the consumer, which reads its code objects
 * while the process still lives, but at most once per TB_STACK_WAKE_MS on
 * this CPU (or when the warm ring is half full): a forced wake-up is an irq_work
 * self-IPI, ~4 us of the program's time in this nested VM, and on a real
 * application most samples are a new stack (Django under gunicorn: ~85 %
 * at -F 999). Not the samples' batch threshold: past it, while the consumer
 * reads, every record would raise one again. A consumer that read a stack
 * looks again within TB_STACK_WAKE_MS without being woken.
 */
static __always_inline __u64 stack_wake(struct scratch *s)
{
	__u64 now = bpf_ktime_get_ns();

	if (now - s->woke_ns < TB_STACK_WAKE_MS * 1000000ULL &&
	    rings_avail() < bpf_ringbuf_query(&warm, BPF_RB_RING_SIZE) / 2)
		return BPF_RB_NO_WAKEUP;
	s->woke_ns = now;
	return BPF_RB_FORCE_WAKEUP;
}

/* Push the frames of a stack id the consumer may not have yet. */
static __noinline int push_stack(struct scratch *s, __u32 pid, __u64 id, __u32 depth,
				      __u64 exc)
{
	__u64 size = TB_STACK_HDR_SIZE + (__u64)depth * sizeof(struct tb_frame) +
		     (s->stack.ustack > 0 ? (__u64)s->stack.ustack * sizeof(__u64) : 0);
	struct recent *seen = &s->recent[id & (RECENT - 1)];
	__u64 epoch = sent_epoch, tag = sent_tag(id, sent_floor), *when;

	if ((seen->id == id && seen->epoch == epoch) || lat_skipping())
		return 0;
	when = (__u64 *)&sent_slots[id & (TB_SENT_SLOTS - 1)];
	if (*when == tag) {
		seen->id = id;
		seen->epoch = epoch;
		return 0;
	}
	if (size > sizeof(s->stack))
		size = sizeof(s->stack);
	s->stack.kind = TB_REC_STACK;
	s->stack.depth = depth;
	s->stack.stack_id = id;
	s->stack.pid = pid;
	s->stack.exc_type = exc;
	if (push_tasks(id, pid, s->walk.off.exec_mask))
		return -1;
	/* Wake the consumer soon: it reads a new stack's code objects while
	 * the process still lives (with the ring buffer's own rule, 0, a
	 * process living 0.4 s kept 1-2 stacks of <unknown> frames). */
	if (rec_output(&s->stack, size, sizeof(s->stack), stack_wake(s)))
		return -1;
	*when = tag;
	seen->id = id;
	seen->epoch = epoch;
	return 1;
}

/*
 * The sample that the next stack record carries (struct tb_stack): weight
 * 1 when the sample would be counted in the kernel, so that a new stack's
 * first sample costs no new key in the counts map, only a few more bytes
 * of a record pushed anyway (on a real application most samples are a new
 * stack: doc/performance.md); 0 when it goes as a record of its own or
 * there is none (a switch-out). Only read if push_stack() returns 1.
 */
static __always_inline void stack_sample(struct scratch *s, __u32 tid, __u32 flags,
					 __s32 kstack, __u64 leaf, __u32 weight)
{
	s->stack.tid = tid;
	s->stack.flags = flags;
	s->stack.kstack = kstack;
	s->stack.weight = weight;
	s->stack.leaf = leaf;
}

static __always_inline void fill_sample(struct tb_sample *r, __u32 kind, __u32 pid, __u32 tid,
					__u64 stack_id, __u32 flags, __u32 weight, __s32 kstack,
					__u64 leaf)
{
	r->kind = kind;
	r->pid = pid;
	r->tid = tid;
	r->flags = flags;
	r->stack_id = stack_id;
	r->weight = weight;
	r->kstack = kstack;
	r->leaf = leaf;
}

static __always_inline int push_sample(__u32 pid, __u32 tid, __u64 stack_id,
				       __u32 flags, __u32 weight, __s32 kstack, __u64 leaf)
{
	struct tb_sample *r;

	r = rec_reserve(sizeof(*r));
	if (!r)
		return -1;
	fill_sample(r, TB_REC_SAMPLE, pid, tid, stack_id, flags, weight, kstack, leaf);
	bpf_ringbuf_submit(r, wake_flag());
	return 0;
}

/* --timeline: the sample with its time and CPU; since: off CPU from then. */
static __always_inline int push_timed(__u32 pid, __u32 tid, __u64 stack_id, __u32 flags,
				      __u32 weight, __s32 kstack, __u64 since, __u64 leaf)
{
	struct tb_timed *r;

	r = rec_reserve(sizeof(*r));
	if (!r)
		return -1;
	fill_sample(&r->s, TB_REC_TIMED, pid, tid, stack_id, flags, weight, kstack, leaf);
	r->time_ns = bpf_ktime_get_ns();
	r->start_ns = since ? since : r->time_ns;
	r->cpu = bpf_get_smp_processor_id();
	r->pad = 0;
	bpf_ringbuf_submit(r, wake_flag());
	return 0;
}

/* A sample record: timed with --timeline, else the small one. */
static __always_inline int push_record(__u32 pid, __u32 tid, __u64 stack_id, __u32 flags,
				       __u32 weight, __s32 kstack, __u64 since, __u64 leaf)
{
	/* --async-aware wall mode: an off-CPU credit says which interval it
	 * closes (since), for userspace to give it to the tasks that waited. */
	if (timeline || (async_aware && since))
		return push_timed(pid, tid, stack_id, flags, weight, kstack, since, leaf);
	return push_sample(pid, tid, stack_id, flags, weight, kstack, leaf);
}

/*
 * Count the sample in the map in count_slot. Returns 0, 1 where it added
 * the key (userspace keeps a key counted since its last read: a new one
 * costs a cold bucket and a free element, ~1 us here), or -1 if the sample
 * must travel as a record: the map is full (or the slot empty).
 */
static __always_inline int count_sample(__u32 pid, __u32 tid, __u64 stack_id, __u32 flags,
					__s32 kstack, __u64 leaf, __u64 weight)
{
	struct tb_count_key k = {
		.pid = pid, .tid = tid, .stack_id = stack_id, .flags = flags, .kstack = kstack,
		.leaf = leaf,
	};
	__u64 *n;
	__u32 zero = 0;
	void *m;

	m = bpf_map_lookup_elem(&count_slot, &zero);
	if (!m)
		return -1;
	n = bpf_map_lookup_elem(m, &k);
	if (n) {
		__sync_fetch_and_add(n, weight);
		return 0;
	}
	if (!bpf_map_update_elem(m, &k, &weight, BPF_NOEXIST))
		return 1;
	n = bpf_map_lookup_elem(m, &k);	/* another CPU added it first */
	if (!n)
		return -1;
	__sync_fetch_and_add(n, weight);
	return 0;
}

#include "fpstack.bpf.h"
#include "unwind.bpf.h"

/*
 * --native: the thread's user stack by the unwind tables (unwind.bpf.h) or
 * frame pointers (fpstack.bpf.h; bpf_get_stack() before 5.15),
 * written after the Python frames of the stack record (which carries their
 * number in `ustack`). The callers' return addresses and their number are
 * mixed into the stack id; the leaf, the sampled pc itself, is not: it
 * differs nearly every sample, and as part of the id made each sample a
 * new stack record (~700 bytes, 3-9 us here: 171-226 stacks a run instead
 * of 9-15). It travels in the count key and the sample record instead
 * (native_leaf()). At ~30 frames the frame-pointer walk costs ~0.8 us a
 * sample here, bpf_get_stack() ~1.6, bpf_get_stackid() and its stack map
 * ~7 (measured side by side, doc/performance.md). A Python stack too deep to leave room goes
 * without. Without --native the record says "none".
 */
static __always_inline void native_stack(void *ctx, struct walk_ctx *c)
{
	__u32 depth = c->ch.depth;
	__u64 *ips, h;
	long n, i;

	c->s->stack.ustack = -1;
	if (!native_stacks || depth > TB_MAX_DEPTH - TB_USTACK_DEPTH / 2 - 1)
		return;
	ips = (__u64 *)&c->s->stack.frames[depth];
	n = user_stack(ctx, ips, depth);
	if (n < 0) {
		count(c->cnt, TB_C_USTACK_ERR);
		return;
	}
	n /= sizeof(__u64);
	lat_native(n);
	/* tb_addrs' eval_lo: a leaf in the eval loop is one pc, one count key
	 * (a flagged leaf, TB_LEAF_EVAL_CALLER, is never in it) */
	if (n > 0 && in_eval(&c->s->walk.addr, ips[0]))
		ips[0] = c->s->walk.addr.eval_lo[0];
	h = c->ch.hash;
	for (i = 1; i < TB_USTACK_DEPTH && i < n; i++)
		h = tb_hash_mix(h, ips[i]);
	h = tb_hash_mix(h, (__u64)n);
	retag_tasks(c->ch.hash, h);
	c->ch.hash = h;
	c->s->stack.ustack = (__s32)n;
}

/* --native: the sample's leaf pc native_stack() took, 0 if none. */
static __always_inline __u64 native_leaf(struct walk_ctx *c)
{
	__u32 depth = c->ch.depth;

	if (c->s->stack.ustack <= 0 || depth >= TB_MAX_DEPTH)
		return 0;
	return *(__u64 *)&c->s->stack.frames[depth];
}

static __always_inline __s32 kernel_stack(void *ctx, __u64 *cnt)
{
	long id;

	if (!kernel_stacks)
		return -1;
	id = bpf_get_stackid(ctx, &kstacks, 0);
	if (id < 0 && id != -EFAULT)	/* -EFAULT: interrupted in user mode */
		count(cnt, TB_C_KSTACK_ERR);
	return (__s32)id;
}

/* The common start: counters, this CPU's scratch, the process's layout. */
static __always_inline struct scratch *begin(struct walk_ctx *c, struct tb_walk *L)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	struct scratch *s;

	c->cnt = bpf_map_lookup_elem(&counters, &zero);
	s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!c->cnt || !s)
		return NULL;
	c->s = s;
	__builtin_memcpy(&s->walk, L, sizeof(*L));
	return s;
}

/*
 * The program times one event in TIME_EVERY (the clock reads cost about
 * 5 % of a sample) and counts that time TIME_EVERY times: an estimate for
 * --stats, next to the kernel's own run-time statistics.
 */
#define TIME_EVERY 16

/*
 * -e tick, weighted by run time. The tick samples whoever runs when it
 * fires, so a task that wakes just after ticks and sleeps before the next
 * (timer wake-ups coalesce with the tick's hrtimer expiry) is never seen,
 * and the thread it interrupts gets its time: a busy thread sharing its CPU
 * with a process that slept 1 ms and ran 1 ms was counted 2.05 s for its
 * 1.73 s of CPU (+18 %), per-thread cpu-clock 1.82 s. So a thread that left
 * the CPU since its last sample (its context-switch counts moved) has that
 * sample weighted by the CPU time it ran since (the scheduler's
 * sum_exec_runtime), in whole periods, the rest carried: 0 periods, no
 * sample; 3, a sample counted 3 times. A thread that stayed on the CPU ran
 * the whole period: one, as unweighted. (Weighting that one too skewed
 * shares inside a busy thread by 3-5 points: sum_exec_runtime is as of the
 * last update_curr(), which the tick makes only after this hook and a
 * wake-up on the CPU makes at any time, so its steps jitter by a period and
 * a sample got 0 or 2 by the update's timing, not by where the thread ran.)
 * Task storage: freed with the thread, one pointer away from current.
 */
struct tick_rt {
	__u64 credited;		/* run time its samples stood for so far, 0: none yet */
	__u64 switches;		/* nvcsw + nivcsw at its last sample */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tick_rt);
} tick_rt SEC(".maps");

#define TICK_WEIGHT_MAX 0xffffff	/* a record's weight is 32 bits */

/*
 * The periods this tick's sample of current is worth, in s->weight; 0 if
 * none (no sample). A thread's first sample is worth one. `credited` moves
 * by what was credited, not to sum_exec_runtime: that lags (see above), and
 * what it has not caught up with yet goes to a later sample.
 */
static __always_inline int tick_weight(struct scratch *s)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 now = task->se.sum_exec_runtime, sw = task->nvcsw + task->nivcsw, periods;
	struct tick_rt *rt;

	rt = bpf_task_storage_get(&tick_rt, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!rt)
		return 1;	/* no memory: one period, as unweighted */
	if (!rt->credited || sw == rt->switches) {
		/* first seen, or on the CPU the whole period: one */
		rt->credited = rt->credited ? rt->credited + period_ns : now;
		rt->switches = sw;
		return 1;
	}
	rt->switches = sw;
	if (now <= rt->credited)
		return 0;
	periods = (now - rt->credited) / period_ns;
	if (!periods)
		return 0;
	if (periods > TICK_WEIGHT_MAX)
		periods = TICK_WEIGHT_MAX;
	rt->credited += periods * period_ns;
	s->weight = periods;
	return 1;
}

/*
 * One sample of the current thread, from either driver: a perf event
 * (on_sample) or the scheduler tick (on_tick). ctx is the driver's context,
 * only used for the kernel stack.
 */
/* A sample of a profiled process starts: c set up, the clock read or 0. */
static __always_inline struct tb_walk *sample_begin(struct walk_ctx *c, __u32 pid, __u64 *t0,
						    const int weighted)
{
	struct tb_walk *L = bpf_map_lookup_elem(&procs, &pid);

	if (!L)
		return NULL;
	lat_begin(pid);
	if (!begin(c, L))
		return NULL;
	/* In the scratch area, not in c: the tail-call walker's chain of
	 * frames (tc_close -> sample_done -> push_stack) has no 8 bytes to
	 * spare. --timeline keeps one period a sample: its samples are
	 * points in time, and a weighted one would stand for time before it. */
	c->s->weight = 1;
	if (weighted && !timeline && !tick_weight(c->s))
		return NULL;
	lat_pretouch_k(c->s, sizeof(struct scratch));
	lat_phase(0);
	count(c->cnt, TB_C_EVENTS);
	*t0 = 0;
	if (!(c->cnt[TB_C_EVENTS] & (TIME_EVERY - 1)))
		*t0 = bpf_ktime_get_ns();
	return L;
}

/*
 * The walk's outcome (0, or the counter of why there is no stack) counted.
 * A function of its own: the tail-call walker's programs call it after
 * tc_chunk(), and its frame must not add to that chain's (512 bytes at most
 * for a program and the subprograms it calls).
 */
static __noinline void sample_done(void *ctx, struct walk_ctx *c, __u64 pid_tid, int ret,
				   __u64 t0)
{
	__u32 pid = pid_tid >> 32, tid = (__u32)pid_tid;
	__u64 exc = 0;
	__s32 kstack;
	int ok = !ret, counted, kept;

	if (ret) {
		count(c->cnt, ret);
		goto out;
	}
	/* Only a sample whose GIL state was read can be judged: before its
	 * address is known (an interpreter starting up) it is kept. */
	if (mode == TB_MODE_GIL && (c->ch.flags & TB_SF_STATUS_KNOWN) && !(c->ch.flags & TB_SF_GIL)) {
		count(c->cnt, TB_C_FILTERED);
		goto out;
	}
	if (mode == TB_MODE_EXC && !(exc = exception_of(c))) {
		count(c->cnt, TB_C_FILTERED);
		goto out;
	}
	native_stack(ctx, c);
	lat_mark();
	kstack = kernel_stack(ctx, c->cnt);
	counted = !timeline && c->s->walk.reg.acked;
	stack_sample(c->s, tid, c->ch.flags, kstack, native_leaf(c),
		     counted ? c->s->weight : 0);
	ret = push_stack(c->s, pid, c->ch.hash, c->ch.depth, exc);
	if (ret > 0)
		lat_phase(5);
	else
		lat_phase(6);
	if (ret < 0) {
		count(c->cnt, TB_C_LOST);
		goto out;
	}
	if (ret > 0 && counted)
		goto sent;	/* in the stack record */
	kept = counted ? count_sample(pid, tid, c->ch.hash, c->ch.flags, kstack,
				      native_leaf(c), c->s->weight) : -1;
	if (kept >= 0) {
		count(c->cnt, TB_C_AGGREGATED);
		if (kept)
			count(c->cnt, TB_C_COUNT_NEW);
	} else {
		/* A record of its own (--timeline, a full map) is worth one
		 * period: a weight here overflows the tail-call walker's 512
		 * bytes of frames (tc_close -> sample_done -> push_stack). */
		c->s->weight = 1;
		if (push_record(pid, tid, c->ch.hash, c->ch.flags, 1, kstack, 0,
				native_leaf(c)) < 0) {
			count(c->cnt, TB_C_LOST);
			goto out;
		}
	}
sent:
	if (ret > 0)
		count(c->cnt, TB_C_STACKS);
	count(c->cnt, TB_C_SAMPLES);
	c->cnt[TB_C_TICK_EXTRA] += c->s->weight - 1;
out:
	lat_end(ok, pid);
	if (t0)
		c->cnt[TB_C_BPF_NS] += (bpf_ktime_get_ns() - t0) * TIME_EVERY;
}

static __always_inline int sample_current(void *ctx, const int weighted)
{
	__u64 id = bpf_get_current_pid_tgid(), t0;
	__u32 pid = id >> 32, tid = (__u32)id;
	struct walk_ctx c = {};

	if (!sample_begin(&c, pid, &t0, weighted))
		return 0;
	sample_done(ctx, &c, id, walk_current(&c, pid, tid), t0);
	return 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	LAT_TWICE(sample_current(ctx, 0));
	return sample_current(ctx, 0);
}

/*
 * Tick sampling (-e tick): the scheduler tick already interrupts every busy
 * CPU HZ times a second, in the context of the task it interrupts, so a
 * sample taken there costs the walk and nothing else: no timer of ours, no
 * interrupt of a CPU that runs no profiled thread (idle CPUs do not tick
 * under NO_HZ). Every tick_every-th tick of each CPU is a sample, whoever
 * it interrupts: a clock of HZ / tick_every per CPU. The tick is an
 * hrtimer whose handler userspace finds in /proc/kallsyms (tick_handler);
 * sched_tick itself cannot be traced (the scheduler is built without ftrace
 * hooks), the hrtimer tracepoint fires in the tick's interrupt, with the
 * interrupted task as current.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ticks SEC(".maps");

/* Is this hrtimer the tick, and its tick the tick_every-th of this CPU? */
static __always_inline int tick_due(struct hrtimer *timer)
{
	__u32 zero = 0, *n;

	if ((__u64)BPF_CORE_READ(timer, function) != tick_handler)
		return 0;
	n = bpf_map_lookup_elem(&ticks, &zero);
	if (!n)
		return 0;
	if (++*n < tick_every)
		return 0;
	*n = 0;
	return 1;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_tick, struct hrtimer *timer)
{
	if (!tick_due(timer))
		return 0;
	LAT_TWICE(sample_current(ctx, 0));
	return sample_current(ctx, 1);
}

/* The walk of a thread leaving the CPU done (ret: as sample_done's); a
 * function of its own for the reason sample_done is. */
static __noinline void switch_out_done(void *ctx, struct walk_ctx *c, __u64 pid_tid, int ret,
				       __u64 now)
{
	__u32 pid = pid_tid >> 32, tid = (__u32)pid_tid;
	struct tb_offcpu *oc;

	if (ret) {
		count(c->cnt, TB_C_OFFCPU_SKIPPED);
		return;
	}
	native_stack(ctx, c);
	c->s->stack.weight = 0;	/* no sample: the credit comes at switch-in */
	if (push_stack(c->s, pid, c->ch.hash, c->ch.depth, 0) < 0) {
		count(c->cnt, TB_C_OFFCPU_SKIPPED);	/* ring buffer full */
		return;
	}
	count(c->cnt, TB_C_OFFCPU_WALKS);
	/*
	 * Filled in place, not built on the stack: 48 bytes more here made
	 * 5.10's chain on_switch_tc -> tc_close -> this -> the unwinder 544
	 * bytes (the limit is 512). Only this thread's own switches touch its
	 * entry, and they do not overlap.
	 */
	oc = bpf_map_lookup_elem(&offcpu, &tid);
	if (!oc) {
		if (bpf_map_update_elem(&offcpu, &tid, &offcpu_zero, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&offcpu, &tid)) {
			count(c->cnt, TB_C_OFFCPU_SKIPPED);	/* map full */
			return;
		}
		oc = bpf_map_lookup_elem(&offcpu, &tid);
		if (!oc)
			return;
	}
	oc->since = now;
	oc->stack_id = c->ch.hash;
	oc->flags = c->ch.flags | TB_SF_OFFCPU;
	oc->kstack = kernel_stack(ctx, c->cnt);
	oc->leaf = native_leaf(c);
	oc->pid = pid;
	oc->away = 1;
}

/* Wall mode, prev leaving the CPU: remember its stack. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev, __u64 now)
{
	__u32 pid = BPF_CORE_READ(prev, tgid), tid = BPF_CORE_READ(prev, pid);
	struct walk_ctx c = {};
	struct tb_walk *L;

	L = bpf_map_lookup_elem(&procs, &pid);
	if (!L || !begin(&c, L))
		return;
	/* prev is still current here: its user memory is the one we read. */
	switch_out_done(ctx, &c, (__u64)pid << 32 | tid, walk_current(&c, pid, tid), now);
}

/*
 * Wall mode, next coming back: credit the time away in whole periods. A
 * function of its own: its frame is then not on_switch_tc's, which calls
 * tc_close() (the 512-byte chain, see there).
 */
static __noinline void switch_in(struct task_struct *next, __u64 now)
{
	__u32 tid = BPF_CORE_READ(next, pid), zero = 0;
	struct tb_offcpu *oc = bpf_map_lookup_elem(&offcpu, &tid);
	__u64 *cnt, away, periods;

	if (!oc || !oc->away)
		return;
	oc->away = 0;
	away = now - oc->since + oc->carry;
	periods = away / period_ns;
	oc->carry = away - periods * period_ns;
	if (!periods)
		return;
	if (periods > 0xffffffffULL)
		periods = 0xffffffffULL;
	cnt = bpf_map_lookup_elem(&counters, &zero);
	if (!cnt)
		return;
	if (push_record(oc->pid, tid, oc->stack_id, oc->flags, (__u32)periods, oc->kstack,
			oc->since, oc->leaf)) {
		cnt[TB_C_OFFCPU_LOST] += periods;
		return;
	}
	cnt[TB_C_OFFCPU_WEIGHT] += periods;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();

	switch_out(ctx, prev, now);
	switch_in(next, now);
	return 0;
}

/*
 * ---- The walker without bpf_loop (Linux 5.10 to 5.16) ----
 *
 * The same walk_step(), driven by bounded loops: TC_STEPS steps per call of
 * tc_chunk(), TC_CHUNKS calls per program; a walk that goes on continues in
 * the next program by a tail call (the *_more programs, in a program array
 * of one), its state in tc_state. 16 programs make the 2 * TB_MAX_DEPTH
 * steps of bpf_loop's walk (a kernel runs up to 33 in a row), so a stack
 * ends where, and as, that walk ends it: same truncation, same marks.
 * Userspace loads these programs instead of on_sample, on_tick and
 * on_switch when the kernel has no bpf_loop (or TACHYON_WALKER=tailcall
 * says so), and the others not at all: 5.10 rejects a program that so much
 * as names bpf_loop. The memo of the last walk is not used (its global
 * functions take pointers, which 5.10 refuses): every fingerprint is read,
 * the same one.
 */
#define TC_STEPS	32
#define TC_CHUNKS	16

struct tc_state {
	struct tb_chain ch;
	struct window w;
	__u64 tstate;
	__u64 interp;
	__u64 t0;		/* a sample's clock at its start; 0: not timed */
	__u64 now;		/* a switch's time */
	__u32 pid;
	__u32 tid;
	__u32 step;		/* steps taken, walk_step's i */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tc_state);
} tc_state SEC(".maps");

/* One per driver: a program array holds programs of one type and hook. */
struct tc_next {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
};

struct tc_next tc_next_sample SEC(".maps");
struct tc_next tc_next_tick SEC(".maps");
struct tc_next tc_next_switch SEC(".maps");

enum tc_kind { TC_SAMPLE, TC_SWITCH };

/* The walk so far: c's pointers and thread from tc_state, which it returns. */
static __always_inline struct tc_state *tc_resume(struct walk_ctx *c)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	struct tc_state *st = bpf_map_lookup_elem(&tc_state, &zero);

	c->cnt = bpf_map_lookup_elem(&counters, &zero);
	c->s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!st || !c->cnt || !c->s)
		return NULL;
	c->tstate = st->tstate;
	c->interp = st->interp;
	return st;
}

/*
 * TC_STEPS steps of the walk in tc_state, or fewer if it ends: returns 1
 * then. A global function without arguments (5.10 takes no pointer there):
 * verified once, as bpf_loop's callback is, whatever walk it continues.
 */
__noinline int tc_chunk(void)
{
	struct walk_ctx c = {};	/* the memo stays off: c.m.ok == 0 */
	struct tc_state *st = tc_resume(&c);
	int ret = 0;
	__u32 n;

	if (!st)
		return 1;
	for (n = 0; n < TC_STEPS && !ret; n++) {
		/*
		 * Each step from the map, the compiler kept from knowing
		 * better: the verifier then checks a step of any walk, not
		 * every walk of up to TC_STEPS frames (their states multiply
		 * past its limits).
		 */
		asm volatile("" ::: "memory");
		__builtin_memcpy(&c.ch, &st->ch, sizeof(c.ch));
		__builtin_memcpy(&c.w, &st->w, sizeof(c.w));
		ret = walk_step(st->step++, &c);
		__builtin_memcpy(&st->ch, &c.ch, sizeof(c.ch));
		__builtin_memcpy(&st->w, &c.w, sizeof(c.w));
	}
	return ret || st->step >= 2 * TB_MAX_DEPTH;
}

/*
 * The drivers' frames stay small and the walk's state lives in tc_state:
 * 5.10 allows 512 bytes of stack for a program and the chain of subprograms
 * it calls, rounded up to 32 bytes each, and a driver holding a walk_ctx
 * (240-264 bytes) over tc_chunk (192), walk_step and memo_find came to
 * 544-608. So a walk's start and end are subprograms of their own, each
 * with its own walk_ctx, and the driver holds none.
 */

/*
 * A walk of pid's thread tid starts (t0: a sample's clock, now: a switch's
 * time) in tc_state. Returns 0 if tc_chunk() goes on with it, the counter
 * of why there is no stack, or -1 if the event is not ours at all.
 */
static __noinline int tc_open(__u64 pid_tid, __u64 now, const int kind)
{
	__u32 zero = 0, pid = pid_tid >> 32, tid = (__u32)pid_tid;
	struct tc_state *st = bpf_map_lookup_elem(&tc_state, &zero);
	struct walk_ctx c = {};
	struct tb_walk *L;
	__u64 t0 = 0;
	int ret;

	if (!st)
		return -1;
	if (kind == TC_SWITCH) {
		L = bpf_map_lookup_elem(&procs, &pid);
		if (!L || !begin(&c, L))
			return -1;
	} else if (!sample_begin(&c, pid, &t0, 0)) {
		return -1;
	}
	st->pid = pid;
	st->tid = tid;
	st->t0 = t0;
	st->now = now;
	st->step = 0;
	ret = walk_begin(&c, pid, tid, 1);
	if (ret)
		return ret;
	st->tstate = c.tstate;
	st->interp = c.interp;
	__builtin_memcpy(&st->ch, &c.ch, sizeof(c.ch));
	__builtin_memcpy(&st->w, &c.w, sizeof(c.w));
	return 0;
}

/* The walk in tc_state is over (ret: 0, or why there is no stack): the
 * driver's own end, a sample's or a switch's. */
static __noinline void tc_close(void *ctx, int ret, const int kind)
{
	struct walk_ctx c = {};
	struct tc_state *st = tc_resume(&c);
	__u64 pid_tid;

	if (!st)
		return;
	pid_tid = (__u64)st->pid << 32 | st->tid;
	if (!ret) {
		__builtin_memcpy(&c.ch, &st->ch, sizeof(c.ch));
		ret = walk_end(&c, st->pid);
	}
	if (kind == TC_SWITCH)
		switch_out_done(ctx, &c, pid_tid, ret, st->now);
	else
		sample_done(ctx, &c, pid_tid, ret, st->t0);
}

/*
 * The walk in tc_state goes on here (ret: 0; else why there is none), up to
 * TC_CHUNKS chunks of steps per program, then in the next program, until it
 * ends; then the driver's own end (kind, a constant).
 */
static __always_inline int tc_walk(void *ctx, int ret, void *next, const int kind)
{
	__u32 zero = 0, n;
	struct tc_state *st;

	for (n = 0; !ret && n < TC_CHUNKS; n++)
		if (tc_chunk())
			break;
	if (!ret && n == TC_CHUNKS) {
		bpf_tail_call(ctx, next, 0);
		/* No program there, or no tail call left: the walk was cut. */
		st = bpf_map_lookup_elem(&tc_state, &zero);
		if (st)
			st->ch.flags |= TB_SF_TRUNCATED;
	}
	tc_close(ctx, ret, kind);
	return 0;
}

static __always_inline int tc_sample(void *ctx, void *next)
{
	int ret = tc_open(bpf_get_current_pid_tgid(), 0, TC_SAMPLE);

	return ret < 0 ? 0 : tc_walk(ctx, ret, next, TC_SAMPLE);
}

SEC("perf_event")
int on_sample_tc(struct bpf_perf_event_data *ctx)
{
	return tc_sample(ctx, &tc_next_sample);
}

SEC("perf_event")
int on_sample_tc_more(struct bpf_perf_event_data *ctx)
{
	return tc_walk(ctx, 0, &tc_next_sample, TC_SAMPLE);
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_tick_tc, struct hrtimer *timer)
{
	return tick_due(timer) ? tc_sample(ctx, &tc_next_tick) : 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int on_tick_tc_more(void *ctx)
{
	return tc_walk(ctx, 0, &tc_next_tick, TC_SAMPLE);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_tc, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 pid = BPF_CORE_READ(prev, tgid), tid = BPF_CORE_READ(prev, pid);
	__u64 now = bpf_ktime_get_ns();
	int ret;

	/* next first: prev's walk may end in another program. */
	switch_in(next, now);
	ret = tc_open((__u64)pid << 32 | tid, now, TC_SWITCH);
	return ret < 0 ? 0 : tc_walk(ctx, ret, &tc_next_switch, TC_SWITCH);
}

SEC("tp_btf/sched_switch")
int on_switch_tc_more(void *ctx)
{
	return tc_walk(ctx, 0, &tc_next_switch, TC_SWITCH);
}

static __always_inline void proc_event(__u32 event, __u32 pid, __u32 ppid, __u32 followed)
{
	struct tb_proc *r = rec_reserve(sizeof(*r));
	__u32 zero = 0;
	__u64 *cnt;

	if (!r) {
		cnt = bpf_map_lookup_elem(&counters, &zero);
		if (cnt)
			cnt[TB_C_PROC_LOST]++;
		return;
	}
	r->kind = TB_REC_PROC;
	r->event = event;
	r->pid = pid;
	r->ppid = ppid;
	r->time_ns = bpf_ktime_get_ns();
	r->followed = followed;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

/*
 * Per-task perf events are opened on each thread and inherited by the
 * threads it starts later (with -s, by the processes it forks too). A task
 * started while userspace is still opening them (task_setup) may have
 * inherited one or not, depending on whether its creator had its event yet:
 * the fork tracepoint comes after the inheritance, so it records whether
 * the new task has a perf context, and userspace opens an event only for
 * those that have none.
 */
volatile __u8 task_setup;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);	/* tid */
	__type(value, __u8);	/* 1: it inherited perf events */
} newthreads SEC(".maps");

/*
 * A task's perf context: one pointer since 6.2, one per kind (hardware,
 * software) before. Each shape is its own flavour, so the one this kernel
 * lacks relocates to "no such field" and is never read (a type mismatch
 * on the plain field would fail the load on 6.1).
 */
struct task_struct___ctx1 {
	struct perf_event_context *perf_event_ctxp;
} __attribute__((preserve_access_index));

struct task_struct___ctx2 {
	struct perf_event_context *perf_event_ctxp[2];
} __attribute__((preserve_access_index));

static __always_inline __u8 has_perf_context(struct task_struct *t)
{
	struct task_struct___ctx1 *one = (void *)t;
	struct task_struct___ctx2 *two = (void *)t;

	if (bpf_core_field_exists(one->perf_event_ctxp))
		return !!BPF_CORE_READ(one, perf_event_ctxp);
	if (bpf_core_field_exists(two->perf_event_ctxp))
		return BPF_CORE_READ(two, perf_event_ctxp[0]) || BPF_CORE_READ(two, perf_event_ctxp[1]);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid), pid = BPF_CORE_READ(child, tgid);
	struct tb_walk *L;
	__u8 *follow;

	if (task_setup) {	/* a thread, or a process's first thread */
		__u32 tid = BPF_CORE_READ(child, pid);
		__u8 inherited = has_perf_context(child);

		bpf_map_update_elem(&newthreads, &tid, &inherited, BPF_ANY);
	}
	if (pid == ppid)
		return 0;	/* a new thread, not a new process */
	follow = bpf_map_lookup_elem(&watch, &ppid);
	if (!follow || !*follow)
		return 0;
	bpf_map_update_elem(&watch, &pid, follow, BPF_ANY);
	/* The child has the parent's memory image: same layout, same addresses,
	 * so it is sampled from its first event, before userspace hears of it. */
	L = bpf_map_lookup_elem(&procs, &ppid);
	if (L) {
		struct tb_walk w = *L;

		w.reg.acked = 0;
		bpf_map_update_elem(&procs, &pid, &w, BPF_ANY);
	}
	proc_event(TB_PROC_FORK, pid, ppid, !!L);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = BPF_CORE_READ(p, tgid);
	__u32 ppid = BPF_CORE_READ(p, real_parent, tgid);
	int sampled = !bpf_map_delete_elem(&procs, &pid);	/* the old offsets mean nothing now */

	if (sampled || report_all_exec || bpf_map_lookup_elem(&watch, &pid))
		proc_event(TB_PROC_EXEC, pid, ppid, 0);
	return 0;
}

/*
 * The tracepoint's group_dead argument is new (Linux 6.16); before, the
 * tracepoint has the task only. do_exit() counts the thread out of
 * signal->live before the tracepoint in every version, so live == 0 is
 * group_dead. Two last threads exiting at once may both see 0: the second
 * finds nothing left to delete and reports nothing.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);
	int known;

	bpf_map_delete_elem(&offcpu, &tid);
	bpf_map_delete_elem(&tstates, &tid);
	/* The last thread of the process, not just its main thread. */
	if (BPF_CORE_READ(p, signal, live.counter))
		return 0;
	known = !bpf_map_delete_elem(&procs, &pid);
	known |= !bpf_map_delete_elem(&watch, &pid);
	if (known)
		proc_event(TB_PROC_EXIT, pid, 0, 0);
	return 0;
}
