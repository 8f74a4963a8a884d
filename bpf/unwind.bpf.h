/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --native without frame pointers: the user stack walked here, frame by
 * frame, with the unwind tables userspace (user/cfi_maps.c) put in
 * `cfi_rows` and `cfi_procs` for the profiled processes, by the step rule
 * of bpf/unwind.h (the one user/cfi_unwind.c, the tested reference, runs).
 * A pc that no table covers takes a frame-pointer step, so code built with
 * frame pointers unwinds as bpf_get_stack() would. A process without
 * tables, or --native=fp, gets a frame-pointer walk (fpstack.bpf.h).
 *
 * uw_stack(), uw_frame() and uw_fill() are global with scalar arguments
 * only: the verifier checks each once (not once per frame of the walk, nor
 * per caller), and Linux 5.10's tail-call walker, which takes no pointer in
 * a global function's arguments, can call them. Their state lives in the per-CPU `uw_state`:
 * their frames stay small under the 512-byte limit of a call chain. It
 * holds the walk, its counters and the memo of rows alike, so a frame
 * costs one map lookup, not three.
 * bpf_task_pt_regs (5.15) is only named where native_cfi, a constant set
 * by userspace where the kernel has it, lets the verifier reach it.
 */

const volatile __u8 native_cfi = 0;	/* --native: walk the unwind tables */

#include "cfi_notify.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* TB_CFI_ROWS with tables */
	__type(key, __u32);
	__type(value, struct tb_cfi_row);
} cfi_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TB_CFI_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC);	/* 4 KiB a process, when it has tables */
	__type(key, __u32);
	__type(value, struct tb_cfi_proc);
} cfi_procs SEC(".maps");

/*
 * Reads land in the per-CPU state (ctx), not on the stack: uw_frame()'s
 * frame then stays small under the 512 bytes of a call chain. They are
 * served from a window of the stack read at once (uw_win()).
 */
static __always_inline int uw_read(void *ctx, __u64 addr, __u64 *dst);
static __always_inline int uw_read2(void *ctx, __u64 addr, __u64 *lo, __u64 *hi);

#define TB_UW_READ(ctx, addr, dst) uw_read(ctx, addr, dst)
#define TB_UW_READ2(ctx, addr, lo, hi) uw_read2(ctx, addr, lo, hi)
#include "unwind.h"

/*
 * The rows found lately, per CPU, by (pc, pid): the same return addresses
 * come back sample after sample, and a hit skips both searches (most of a
 * step's instructions and, in a VM, its TLB misses). uw_gen, bumped by
 * userspace whenever it changes a process's mappings, retires every entry
 * at once.
 */
#define UW_MEMO 512
#define UW_WIN 4096		/* a page: the most of the stack a read takes at once */

struct uw_memo {
	__u64 key;		/* rip, bit 63: looked up at rip itself (exact) */
	__u32 pid;
	__u32 gen;
	struct tb_cfi_row row;	/* kind TB_CFI_GAP: none (a frame-pointer step) */
	__u32 pad;
};

struct uw_state {
	struct tb_uw_frame f;
	__u32 pid;
	__u32 key;		/* a row's index, for its lookup */
	__u32 slot;		/* the frame's entry in memo, */
	__u32 gen;		/* ... its uw_gen */
	__u64 mkey;		/* ... and key */
	__u64 words[2];		/* the words read last */
	__u32 rows;		/* this walk's frames stepped by a row, */
	__u32 fps;		/* ... and by the frame pointer */
	struct uw_memo memo[UW_MEMO];
	__u64 win_lo;		/* the stack window's address, */
	__u64 win_len;		/* ... its bytes (0: none) */
	__u64 win[UW_WIN / 8];
};

/*
 * The index in st->win of the n (8 or 16) bytes at addr, the window read
 * anew from addr to its page's end if they are not in it; -1 if it cannot
 * hold them. The walk goes up the stack, so the frames above a read come
 * next: one bpf_probe_read_user() serves every frame on that page, where
 * each frame's read cost one (~40 ns each here, of a ~100 ns step). The
 * window stops at the page's end: the page above the stack's top is
 * unmapped, and a read failing there would lose the frames below it.
 */
static __always_inline long uw_win(struct uw_state *st, __u64 addr, __u32 n)
{
	__u64 off = addr - st->win_lo, len;

	if (addr & 7)
		return -1;
	if (off < st->win_len && st->win_len - off >= n)
		return off >> 3;
	len = UW_WIN - (addr & (UW_WIN - 1));
	st->win_len = 0;
	if (len < n || bpf_probe_read_user(st->win, len, (void *)addr))
		return -1;
	st->win_lo = addr;
	st->win_len = len;
	return 0;
}

static __always_inline int uw_read(void *ctx, __u64 addr, __u64 *dst)
{
	struct uw_state *st = ctx;
	long i = uw_win(st, addr, 8);

	if (i >= 0) {
		*dst = st->win[i & (UW_WIN / 8 - 1)];
		return 0;
	}
	if (bpf_probe_read_user(st->words, 8, (void *)addr))
		return -1;
	*dst = st->words[0];
	return 0;
}

static __always_inline int uw_read2(void *ctx, __u64 addr, __u64 *lo, __u64 *hi)
{
	struct uw_state *st = ctx;
	long i = uw_win(st, addr, 16);

	if (i >= 0) {
		*lo = st->win[i & (UW_WIN / 8 - 1)];
		*hi = st->win[(i + 1) & (UW_WIN / 8 - 1)];
		return 0;
	}
	if (bpf_probe_read_user(st->words, 16, (void *)addr))
		return -1;
	*lo = st->words[0];
	*hi = st->words[1];
	return 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_state);
} uw_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[TB_UW_NR]);
} uw_stats SEC(".maps");

/* Search steps: enough for TB_CFI_MAPS mappings, and CFI_MAX_ROWS (2^21) rows. */
#define UW_MAP_STEPS	10
#define UW_ROW_STEPS	22

/*
 * 1 if a <= b, without a branch (both below 2^63): a binary search whose
 * steps do not branch is one path for the verifier, not 2^steps.
 */
static __always_inline __u32 uw_le(__u64 a, __u64 b)
{
	return (a - b - 1) >> 63;
}

/* The mapping holding pc: the last whose start is <= pc, if pc is below its end. */
static __always_inline const struct tb_cfi_map *uw_map(const struct tb_cfi_proc *p, __u64 pc)
{
	const struct tb_cfi_map *m;
	__u32 base = 0, len = p->n, half, i;

	if (!len || len > TB_CFI_MAPS)
		return NULL;
	for (i = 0; i < UW_MAP_STEPS && len > 1; i++) {
		half = len / 2;
		base += half * uw_le(p->maps[(base + half) & (TB_CFI_MAPS - 1)].start, pc);
		len -= half;
	}
	m = &p->maps[base & (TB_CFI_MAPS - 1)];
	return m->start <= pc && pc < m->end ? m : NULL;
}

/*
 * The mapping's rows that may govern vaddr pc, by its page index (struct
 * tb_cfi_map): *base and *len narrowed; 0 when pc is below every row.
 */
static __always_inline int uw_pages(struct uw_state *st, const struct tb_cfi_map *m, __u64 pc,
				    __u32 *base, __u32 *len)
{
	const struct tb_cfi_row *ix;
	__u64 page = pc >> TB_CFI_PAGE_SHIFT;
	__u32 lo, hi;

	if (!m->npages)
		return 1;
	if (page < m->page0)
		return 0;
	page -= m->page0;
	st->key = m->first + m->nrows + (page < m->npages ? (__u32)page : m->npages - 1);
	ix = bpf_map_lookup_elem(&cfi_rows, &st->key);
	if (!ix)
		return 0;
	lo = ix->pc;
	hi = (__u32)ix->cfa_off;
	if (lo >= hi || hi > m->nrows)	/* not an index userspace wrote */
		return 1;
	*base = m->first + lo;
	*len = hi - lo;
	return 1;
}

/* The row governing vaddr pc in the mapping's rows (the last at or below it). */
static __always_inline const struct tb_cfi_row *uw_row(struct uw_state *st,
							const struct tb_cfi_map *m, __u64 pc)
{
	__u32 base = m->first, len = m->nrows, half, i;
	const struct tb_cfi_row *r;

	if (pc >> 32 || !len)	/* rows hold 32-bit vaddrs */
		return NULL;
	if (!uw_pages(st, m, pc, &base, &len))
		return NULL;
	for (i = 0; i < UW_ROW_STEPS && len > 1; i++) {
		half = len / 2;
		st->key = base + half;
		r = bpf_map_lookup_elem(&cfi_rows, &st->key);
		if (!r)
			return NULL;
		base += half * uw_le(r->pc, pc);
		len -= half;
	}
	st->key = base;
	r = bpf_map_lookup_elem(&cfi_rows, &st->key);
	return r && r->pc <= pc ? r : NULL;
}

volatile __u64 uw_gen;	/* the memo's generation (struct uw_state) */

/*
 * The pc is in none of the mappings of a process whose mappings are all
 * listed: new code, not described yet. The memo entry stops the walk there
 * (a kind no step follows) until userspace, told now, changes the process's
 * mappings (uw_gen).
 */
static __always_inline void uw_unknown(struct uw_state *st, struct uw_memo *e)
{
	__u32 zero = 0;
	__u64 *cnt = bpf_map_lookup_elem(&uw_stats, &zero);

	e->row.kind = TB_CFI_UNSUPPORTED;
	if (cnt)
		cnt[TB_UW_C_UNKNOWN]++;
	cfi_notify(&st->pid);
}

/* The searches for uw_state's frame, their row kept in its memo entry. */
__noinline int uw_fill(void)
{
	__u32 zero = 0;
	struct uw_state *st = bpf_map_lookup_elem(&uw_state, &zero);
	const struct tb_cfi_row *row = NULL;
	const struct tb_cfi_map *m = NULL;
	const struct tb_cfi_proc *p;
	struct uw_memo *e;

	if (!st)
		return -1;
	e = &st->memo[st->slot & (UW_MEMO - 1)];
	p = bpf_map_lookup_elem(&cfi_procs, &st->pid);
	if (p)
		m = uw_map(p, st->f.rip);
	if (m && m->nrows)
		row = uw_row(st, m, tb_uw_lookup_pc(&st->f, m->bias));
	if (row)
		e->row = *row;
	else if (p && !m && p->complete && !(st->f.rip >> 63))	/* not [vsyscall] */
		uw_unknown(st, e);
	else
		e->row.kind = TB_CFI_GAP;
	e->key = st->mkey;
	e->pid = st->pid;
	e->gen = st->gen;
	return 0;
}

/* uw_frame(): the frame's row is not in the memo; uw_fill() first. */
#define UW_MISS 100

/*
 * One frame of uw_state's walk by its memo entry: TB_UW_GO, why it stops,
 * or UW_MISS (st->slot, mkey and gen then say which entry uw_fill() fills).
 * uw_frame() and uw_fill() are global and uw_stack() calls each in turn:
 * their frames do not add up under the 512-byte limit of a call chain.
 */
__noinline int uw_frame(void)
{
	__u32 zero = 0;
	struct uw_state *st = bpf_map_lookup_elem(&uw_state, &zero);
	struct uw_memo *e;
	__u64 key;

	if (!st)
		return TB_UW_BAD;
	key = st->f.rip | ((__u64)!!st->f.exact << 63);
	/* The pid in the slot too: processes of one non-PIE executable share
	 * its addresses, and sampled in turn on a CPU they evicted each
	 * other's entries (12 % of frames missed with two on Debian's 3.15). */
	/* XORs only, masked last: Linux 5.10's verifier lost the bounds of
	 * a multiplied pid and refused the index. */
	st->slot = (key ^ (key >> 9) ^ (key >> 18) ^ st->pid ^ (st->pid >> 9)) & (UW_MEMO - 1);
	e = &st->memo[st->slot & (UW_MEMO - 1)];
	if (e->key != key || e->pid != st->pid || e->gen != (__u32)uw_gen) {
		st->mkey = key;
		st->gen = (__u32)uw_gen;
		return UW_MISS;
	}
	if (e->row.kind != TB_CFI_GAP)
		st->rows++;
	else
		st->fps++;
	return tb_uw_step(&e->row, &st->f, st);
}

/*
 * The current thread's user stack by the tables, from the user registers
 * the kernel saved at its entry (interrupt or system call alike), into the
 * stack record after its depth Python frames. The number of addresses, or
 * -1 if the tables are off or the process has none.
 */
__noinline int uw_stack(__u32 depth)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id(), i;
	struct uw_state *st = bpf_map_lookup_elem(&uw_state, &zero);
	__u64 *cnt = bpf_map_lookup_elem(&uw_stats, &zero);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &cpu);
	struct pt_regs *regs;
	__u64 *ips;
	int ret = TB_UW_GO;

	if (!native_cfi || !st || !cnt || !s || depth > TB_MAX_DEPTH - TB_USTACK_DEPTH / 2 - 1)
		return -1;
	st->pid = bpf_get_current_pid_tgid() >> 32;
	if (!bpf_map_lookup_elem(&cfi_procs, &st->pid))
		return -1;
	/* The helper's result is a BTF pointer: plain loads, checked by the
	 * verifier, where three bpf_probe_read_kernel() calls were. */
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	st->f.rip = regs->ip;
	st->f.rsp = regs->sp;
	st->f.rbp = regs->bp;
	st->f.rbp_known = 1;
	st->f.exact = 1;
	st->rows = 0;
	st->fps = 0;
	st->win_len = 0;
	/* The record's frames as u64s, each index masked: the verifier then
	 * knows every store is inside (depth was checked above, so none wraps). */
	ips = (__u64 *)s->stack.frames;
	for (i = 0; i < TB_USTACK_DEPTH; i++) {
		ips[(2 * depth + i) & (2 * TB_MAX_DEPTH - 1)] = st->f.rip;
		ret = uw_frame();
		if (ret == UW_MISS)
			ret = uw_fill() ? TB_UW_BAD : uw_frame();
		if (ret != TB_UW_GO || !st->f.rip) {
			i++;
			break;
		}
	}
	/* The walk's counts, once: not a map lookup per frame. */
	cnt[TB_UW_C_STACKS]++;
	cnt[TB_UW_C_ROWS] += st->rows;
	cnt[TB_UW_C_FP] += st->fps;
	if (ret == TB_UW_END)
		cnt[TB_UW_C_ENDS]++;
	return i;
}

/* native_stack()'s addresses, in bytes as bpf_get_stack() gives them. */
static __always_inline long user_stack(void *ctx, __u64 *ips, __u32 depth)
{
	long n = native_cfi ? uw_stack(depth) : -1;

	if (n < 0)
		n = fp_stack(depth);	/* fpstack.bpf.h, where it can */
	if (n >= 0)
		return n * (long)sizeof(__u64);
	return bpf_get_stack(ctx, ips, TB_USTACK_DEPTH * sizeof(__u64), BPF_F_USER_STACK);
}
