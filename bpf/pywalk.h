/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The rules of a Python stack walk, written once (the libbpf-tools `.bpf.h`
 * pattern): pure functions over the bytes already read and struct tb_walk,
 * compiled into the BPF program (bpf/tachyon.bpf.c, clang -target bpf) and
 * into userspace (user/dump.c walks a thread the same way, user/symbols.c
 * checks a code object the same way). Reading memory is the caller's job;
 * what to make of the bytes, when to stop, what to flag, is decided here,
 * so `dump` reports exactly what a sample would.
 *
 * A walk, by the caller:
 *
 *	tb_chain_init(&ch);
 *	read the thread state (ts_read bytes): ch.flags |= tb_ts_flags(w, ts);
 *	ch.frame = tb_ts_frame(w, ts), or through the cframe (tb_chain_cframe);
 *	0: the thread runs no Python code, there is nothing to walk
 *	for (i = 0; i < 2 * TB_MAX_DEPTH && !tb_chain_done(&ch); i++) {
 *		read fr_read bytes at ch.frame (tb_frame_addr_ok), else
 *		tb_chain_broken() and stop;
 *		step = tb_chain_frame(w, &ch, fr);
 *		TB_STEP_PYTHON: read its code object (tb_code_checked() says how
 *			much, tb_code_parse() takes it in), then tb_chain_push(), or
 *			tb_chain_bad_frame() if the code or tb_chain_linked() failed;
 *		TB_STEP_END stops; after TB_STEP_SHIM or _NEXT, if tb_entry_due(), read
 *		tb_entry_expect_addr() and tb_chain_restart() if misplaced.
 *	}
 *	stack id: tb_chain_id(&ch)
 *
 * Every buffer holds at least TB_READ_MAX bytes: offsets are masked into
 * it, and to their alignment, which also lets the BPF backend emit one load
 * per field.
 */
#ifndef TB_PYWALK_H
#define TB_PYWALK_H

#include "tachyon.h"
#ifndef __bpf__
#include <string.h>
#endif

#define TB_INLINE static inline __attribute__((always_inline))

/* Bytes of a _PyCFrame read (TB_F_CFRAME): previous and current_frame. */
#define TB_CFRAME_READ		24
/* Bytes of the GIL struct read: locked and last_holder. */
#define TB_GIL_READ		32
/*
 * An instruction index at or above this (in code units) is no index into
 * the frame's own bytecode: its code pointer is off, or the frame half
 * built. Larger than any code object CPython makes.
 */
#define TB_CODE_UNITS_MAX	(1 << 24)

/* ---- Loads from a buffer of TB_READ_MAX bytes ---------------------------- */

/*
 * Cast as `*(__u64 *)&buf[i]`, clang takes the array element's alignment
 * (1), and the BPF backend splits each load into 8 byte loads and 14 shifts
 * and ors. The fields are naturally aligned at aligned bases (reads start
 * at object and frame addresses), so masking the offset to its alignment
 * makes the assumption true by construction; userspace copies.
 */
TB_INLINE __u64 tb_ld64(const __u8 *b, __u32 off)
{
	const __u8 *p = b + (off & (TB_READ_MAX - 1) & ~7U);
#ifdef __bpf__
	return *(const __u64 *)__builtin_assume_aligned(p, 8);
#else
	__u64 v;

	memcpy(&v, p, sizeof(v));
	return v;
#endif
}

TB_INLINE __u32 tb_ld32(const __u8 *b, __u32 off)
{
	const __u8 *p = b + (off & (TB_READ_MAX - 1) & ~3U);
#ifdef __bpf__
	return *(const __u32 *)__builtin_assume_aligned(p, 4);
#else
	__u32 v;

	memcpy(&v, p, sizeof(v));
	return v;
#endif
}

TB_INLINE __u8 tb_ld8(const __u8 *b, __u32 off)
{
	return b[off & (TB_READ_MAX - 1)];
}

/* ---- Thread state (ts_read bytes) ---------------------------------------- */

TB_INLINE __u64 tb_ts_next(const struct tb_walk *w, const __u8 *ts)
{
	return tb_ld64(ts, w->off.ts_next);
}

TB_INLINE __u64 tb_ts_tid(const struct tb_walk *w, const __u8 *ts)
{
	return tb_ld64(ts, w->off.ts_native_tid);
}

TB_INLINE __u64 tb_ts_interp(const struct tb_walk *w, const __u8 *ts)
{
	return tb_ld64(ts, w->off.ts_interp);
}

/*
 * 0 if the thread state is not tid's (with TB_F_PTHREAD_ID, tid is the
 * thread's pthread_self()), 1 if it is tid's and the one tid
 * runs (or the version cannot tell), 2 if it is tid's but detached. A
 * thread has one thread state per interpreter it has entered; the one it
 * runs has _status.active set (as has no other of the same thread), and so
 * has a thread that released the GIL none.
 */
TB_INLINE int tb_ts_owner(const struct tb_walk *w, const __u8 *ts, __u64 tid)
{
	if (tb_ts_tid(w, ts) != tid)
		return 0;
	if (w->off.ts_status == TB_NO_OFFSET || (tb_ld32(ts, w->off.ts_status) & TB_TS_ACTIVE))
		return 1;
	return 2;
}

/* Sample flags the thread state itself tells: an exception being raised. */
TB_INLINE __u32 tb_ts_flags(const struct tb_walk *w, const __u8 *ts)
{
	if (w->off.ts_exc != TB_NO_OFFSET && tb_ld64(ts, w->off.ts_exc))
		return TB_SF_EXC;
	return 0;
}

/* The frame the thread executes; with TB_F_CFRAME, its _PyCFrame instead. */
TB_INLINE __u64 tb_ts_frame(const struct tb_walk *w, const __u8 *ts)
{
	return tb_ld64(ts, w->off.ts_frame);
}

TB_INLINE int tb_via_cframe(const struct tb_walk *w)
{
	return !!(w->off.features & TB_F_CFRAME);
}

/* ---- The chain ------------------------------------------------------------ */

/* A code object as the walk checked it. */
struct tb_code {
	__u64 addr;		/* 0 = none yet */
	__u32 fp;		/* its fingerprint */
	__u32 words;		/* its frames' size in words (tb_chain_linked) */
};

/* Where a walk stands. */
struct tb_chain {
	__u64 frame;		/* the next frame to visit; 0 = the chain ended */
	__u64 hash;		/* the stack id so far */
	__u64 leaf;		/* a leaf that had not started (check_next) */
	__u64 cframe_prev;	/* TB_F_CFRAME: tstate->cframe->previous */
	__u32 depth;		/* frames recorded */
	__u32 flags;		/* enum tb_sample_flags */
	__u32 bottom_ok;	/* the last frame seen may end a chain */
	__u32 check_next;	/* the leaf had not started: vouch for its caller */
	__u32 check_entry;	/* the first entry frame is still to be vouched for */
	__u32 empty_eval;	/* --native: a shim with no frame above it, for the next frame */
	struct tb_code code;	/* the code object of the last frame recorded */
};

/* What to do after a frame. */
enum tb_step {
	TB_STEP_NEXT,		/* recorded; go on at ch->frame (tb_entry_due may apply) */
	TB_STEP_SHIM,		/* a shim skipped; go on at ch->frame (tb_entry_due may apply) */
	TB_STEP_SKIP,		/* go on at ch->frame, nothing else */
	TB_STEP_END,		/* the walk is over; ch->flags say how */
	TB_STEP_PYTHON,		/* a Python frame: its code object is wanted */
};

/* What a frame is, by its owner byte. */
enum tb_frame_kind {
	TB_FRAME_PYTHON,	/* a Python function's frame: recorded */
	TB_FRAME_SHIM,		/* C-stack / entry shim: skipped */
	TB_FRAME_STOP,		/* the sentinel at the bottom: the chain ends there */
	TB_FRAME_GARBAGE,	/* not a frame at all: a stale or torn chain */
};

TB_INLINE void tb_chain_init(struct tb_chain *ch)
{
	__builtin_memset(ch, 0, sizeof(*ch));
	ch->hash = TB_HASH_SEED;
}

/*
 * TB_F_CFRAME (3.11/3.12): from the TB_CFRAME_READ bytes of the _PyCFrame
 * the thread state points to, the frame it executes; remember `previous`
 * for the entry check.
 */
TB_INLINE __u64 tb_chain_cframe(const struct tb_walk *w, struct tb_chain *ch, const __u8 *cf)
{
	ch->cframe_prev = tb_ld64(cf, w->off.cframe_prev);
	ch->check_entry = 1;
	return tb_ld64(cf, w->off.cframe_frame);
}

/* Before reading ch->frame: 1 if the walk is over (complete, or too deep). */
TB_INLINE int tb_chain_done(struct tb_chain *ch)
{
	if (!ch->frame) {
		/* The chain ended: did it end where a chain may end? */
		if (!ch->bottom_ok)
			ch->flags |= TB_SF_PARTIAL;
		return 1;
	}
	if (ch->depth >= TB_MAX_DEPTH) {
		ch->flags |= TB_SF_TRUNCATED;
		return 1;
	}
	return 0;
}

/* A frame holds pointers: an unaligned address is no frame. */
TB_INLINE int tb_frame_addr_ok(__u64 frame)
{
	return !(frame & 7);
}

/* The frame at ch->frame could not be read: the stack ends early. */
TB_INLINE void tb_chain_broken(struct tb_chain *ch)
{
	ch->flags |= TB_SF_PARTIAL;
}

TB_INLINE int tb_frame_kind(const struct tb_walk *w, __u8 owner)
{
	if (owner > w->off.owner_max)
		return TB_FRAME_GARBAGE;
	if (owner == w->off.owner_stop)
		return TB_FRAME_STOP;
	if (owner >= w->off.owner_skip)
		return TB_FRAME_SHIM;
	return TB_FRAME_PYTHON;
}

/* TB_F_ENTRY_FLAG (3.11): is this frame its eval's first? */
TB_INLINE int tb_frame_is_entry(const struct tb_walk *w, const __u8 *fr)
{
	return (w->off.features & TB_F_ENTRY_FLAG) && tb_ld8(fr, w->off.fr_entry);
}

/* May this frame be the last of a complete chain? */
TB_INLINE __u32 tb_can_end(const struct tb_walk *w, const __u8 *fr, __u8 owner)
{
	if (w->off.features & TB_F_BOTTOM_SHIM)
		return owner >= w->off.owner_skip;
	if (w->off.features & TB_F_ENTRY_FLAG)
		return tb_ld8(fr, w->off.fr_entry) != 0;
	return 1;
}

TB_INLINE __u64 tb_frame_code(const struct tb_walk *w, const __u8 *fr)
{
	return tb_ld64(fr, w->off.fr_code) & w->off.exec_mask;
}

/*
 * TB_F_CODE_TAG: what else the frame says of its code object, kept with a
 * fingerprint and compared before the kept one stands for a code object
 * read in an earlier walk (3.11 has no counter of code objects born or
 * dead). A code object born at a dead one's address passes only with its
 * function object and globals also born at the dead ones' addresses; the
 * fingerprint it stands for (the name's and line table's addresses) has
 * the same blind spot. 0 where the layout has no tag.
 */
TB_INLINE __u32 tb_frame_tag(const struct tb_walk *w, const __u8 *fr)
{
	__u64 h;

	if (!(w->off.features & TB_F_CODE_TAG))
		return 0;
	h = tb_ld64(fr, w->off.fr_tag) * 0x9e3779b97f4a7c15ULL ^ tb_ld64(fr, w->off.fr_tag + 8);
	h *= 0xff51afd7ed558ccdULL;
	return (__u32)(h >> 32) | 1;	/* never 0: 0 is "no tag" */
}

TB_INLINE __u64 tb_frame_instr(const struct tb_walk *w, const __u8 *fr)
{
	return tb_ld64(fr, w->off.fr_instr);
}

/* ---- Frame objects (TB_F_FRAME_OBJECT: 3.8 to 3.10) ---------------------- */

TB_INLINE int tb_frameobj(const struct tb_walk *w)
{
	return !!(w->off.features & TB_F_FRAME_OBJECT);
}

/*
 * A heap PyFrameObject: every frame of the chain is a Python function's
 * (generators and coroutines link theirs in while they run), and the chain
 * ends where f_back is NULL, the outermost frame: any frame may end it.
 */
TB_INLINE int tb_frameobj_step(const struct tb_walk *w, struct tb_chain *ch, const __u8 *fr)
{
	ch->frame = tb_ld64(fr, w->off.fr_previous);
	ch->bottom_ok = 1;
	return TB_STEP_PYTHON;
}

/*
 * The instruction index in code units from f_lasti, the last instruction
 * started (-1: none yet). 3.10 counts code units, 3.8/3.9 bytes.
 */
TB_INLINE __s64 tb_frameobj_instr(const struct tb_walk *w, const __u8 *fr)
{
	__s32 lasti = (__s32)tb_ld32(fr, w->off.fr_instr);

	if (lasti < 0)
		return -1;
	return (w->off.features & TB_F_LASTI_BYTES) ? lasti / 2 : lasti;
}

/*
 * Frame objects lie anywhere on the heap, each caller on its own: a window
 * of the frame's page brings in no caller, only bytes to copy. Read the
 * frame alone.
 */
TB_INLINE int tb_frame_stack_window(const struct tb_walk *w)
{
	return !tb_frameobj(w);
}

/* The frame's fr_read bytes are in fr: step past it. */
TB_INLINE int tb_chain_frame(const struct tb_walk *w, struct tb_chain *ch, const __u8 *fr)
{
	__u8 owner = tb_ld8(fr, w->off.fr_owner);

	if (tb_frameobj(w))
		return tb_frameobj_step(w, ch, fr);

	ch->frame = tb_ld64(fr, w->off.fr_previous);
	ch->bottom_ok = tb_can_end(w, fr, owner);
	switch (tb_frame_kind(w, owner)) {
	case TB_FRAME_GARBAGE:
		ch->flags |= TB_SF_PARTIAL;
		return TB_STEP_END;
	case TB_FRAME_STOP:
		ch->frame = 0;
		return TB_STEP_END;
	case TB_FRAME_SHIM:
		ch->check_next = 0;	/* called from C: the link was set first */
		return TB_STEP_SHIM;
	}
	return TB_STEP_PYTHON;
}

/* ---- The code object of a Python frame ---------------------------------- */

/* Instruction index in code units of `instr` in the bytecode at `base`. */
TB_INLINE __s64 tb_instr_index_at(__u64 base, __u64 instr)
{
	return (__s64)(instr - base) >> 1;
}

/* Instruction index in code units from the frame's instruction pointer. */
TB_INLINE __s64 tb_instr_index(const struct tb_walk *w, __u64 code, __u64 instr)
{
	return tb_instr_index_at(code + w->off.co_adaptive, instr);
}

/*
 * TB_F_TLBC (3.14t): which copy of the bytecode the frame runs, from its
 * tlbc_index; 0 is the code object's own co_code_adaptive, where
 * tb_instr_index() counts from. Any other runs a thread's copy: read the
 * pointer at tb_tlbc_array_addr(), then the copy's address at
 * tb_tlbc_entry_addr(), and count from there (tb_instr_index_at()).
 */
TB_INLINE __u32 tb_frame_tlbc(const struct tb_walk *w, const __u8 *fr)
{
	if (!(w->off.features & TB_F_TLBC))
		return 0;
	return tb_ld32(fr, w->off.fr_tlbc);
}

TB_INLINE __u64 tb_tlbc_array_addr(const struct tb_walk *w, __u64 code)
{
	return code + w->off.co_tlbc;
}

/* _PyCodeArray: Py_ssize_t size, then char *entries[size]. The size is
 * not read (one more read per frame): an index no array has (a torn frame)
 * gives no address, and a stale copy an index out of bounds, recorded -1. */
#define TB_TLBC_ENTRIES		8
#define TB_TLBC_MAX		(1 << 20)

TB_INLINE __u64 tb_tlbc_entry_addr(__u64 array, __u32 tlbc)
{
	if (!array || tlbc >= TB_TLBC_MAX)
		return 0;
	return array + TB_TLBC_ENTRIES + (__u64)tlbc * 8;
}

/* Of the frame whose bytes are in fr, running `code`: its instruction index. */
TB_INLINE __s64 tb_frame_index(const struct tb_walk *w, __u64 code, const __u8 *fr)
{
	if (tb_frameobj(w))
		return tb_frameobj_instr(w, fr);
	return tb_instr_index(w, code, tb_frame_instr(w, fr));
}

/* Does the instruction pointer lie in the code object's bytecode (or just
 * before it: -1, a frame that has not started)? */
TB_INLINE int tb_instr_in_code(__s64 idx)
{
	return idx >= -1 && idx < TB_CODE_UNITS_MAX;
}

/* The index recorded: -1 ("not started") when it is out of bounds. */
TB_INLINE __s32 tb_instr_recorded(__s64 idx)
{
	return tb_instr_in_code(idx) ? (__s32)idx : -1;
}

/*
 * A frame's cost is mostly the cache lines it touches, and the code object
 * is the cold one. A caller whose instruction pointer lies in the bytecode
 * of the code object it names is a frame that ran: its code pointer is
 * right (the frame holds a reference), so only the fingerprint is read
 * ([co_fp_lo, +co_fp_read), one cache line). The leaf (it may be half
 * built), a frame whose pointer is off, and the caller of a leaf that has
 * not started (its frame size is needed) get the whole read (co_read bytes
 * from the object's start) and the type check: TB_CODE_WHOLE.
 *
 * A fingerprint kept from an earlier walk (the BPF side's memo and code
 * table, valid while no code object is born or dies) may stand for the
 * frame's code object when the address names one read before, which is all
 * a whole read's type check would prove, so the leaf may take one too; not
 * a frame whose pointer is off, nor the caller of a leaf that has not
 * started, whose frame size is needed: TB_CODE_KEPT.
 *
 * Scalars in, so the BPF walk stores them and code_of(), checked once,
 * decides: computed in the walk, the branches split the verifier's states
 * of the unrolled walk of Linux 5.10-5.16 past its limit (E2BIG).
 */
enum tb_code_how {
	TB_CODE_WHOLE = 1,	/* read whole, type checked */
	TB_CODE_KEPT = 2,	/* a kept fingerprint may stand for it */
};

TB_INLINE __u32 tb_code_how(__u32 depth, __u32 check_next, __s64 idx)
{
	int in = tb_instr_in_code(idx);

	return (!depth || check_next || !in ? TB_CODE_WHOLE : 0) |
	       (!check_next && in ? TB_CODE_KEPT : 0);
}

TB_INLINE int tb_code_checked(const struct tb_chain *ch, __s64 idx)
{
	return tb_code_how(ch->depth, ch->check_next, idx) & TB_CODE_WHOLE;
}

/* Where the code object read starts (from the object), and its length. */
TB_INLINE __u32 tb_code_base(const struct tb_walk *w, int check)
{
	return check ? 0 : w->off.co_fp_lo;
}

TB_INLINE __u32 tb_code_len(const struct tb_walk *w, int check)
{
	return check ? w->off.co_read : w->off.co_fp_read;
}

/*
 * The walk already knows this code object: the frame just recorded ran the
 * same one (recursion). A chain holds a reference to each of its code
 * objects, so within one walk an address names one object. Not for the
 * caller of a leaf that has not started (check_next) if what is known has
 * no frame size: a fingerprint kept from an earlier walk carries none, and
 * tb_chain_linked() needs it (a recursive 3.11 call caught starting was
 * [partial] in ~1 % of churn.py's samples before this check).
 */
TB_INLINE int tb_code_known(const struct tb_code *seen, __u64 code, __u32 check_next)
{
	return code && code == seen->addr && (!check_next || seen->words);
}

/* Is the object read from its start of type PyCode_Type (when known)? */
TB_INLINE int tb_code_type_ok(const struct tb_walk *w, const __u8 *co)
{
	return !w->addr.code_type_addr || tb_ld64(co, w->off.co_type) == w->addr.code_type_addr;
}

/* The fingerprint, from bytes read at the object + base. */
TB_INLINE __u32 tb_code_fp(const struct tb_walk *w, const __u8 *co, __u32 base)
{
	__u32 fp = tb_ld32(co, w->off.co_fp - base);

	if (w->off.co_fp2 != TB_NO_OFFSET)
		fp ^= tb_ld32(co, w->off.co_fp2 - base);
	return fp;
}

/* Its frames' size in words, from bytes read at the object's start. */
TB_INLINE __u32 tb_code_words(const struct tb_walk *w, const __u8 *co)
{
	__u32 words;

	if (w->off.co_fs_a == TB_NO_OFFSET)
		return 0;
	words = tb_ld32(co, w->off.co_fs_a) + w->off.co_fs_add;
	if (w->off.co_fs_b != TB_NO_OFFSET)
		words += tb_ld32(co, w->off.co_fs_b);
	return words;
}

/*
 * Take in the tb_code_len() bytes read at code + tb_code_base(). Returns 0,
 * or TB_C_BAD_CODE if a checked pointer is no code object.
 */
TB_INLINE int tb_code_parse(const struct tb_walk *w, struct tb_code *seen, const __u8 *co,
			    __u64 code, int check)
{
	if (check && !tb_code_type_ok(w, co))
		return TB_C_BAD_CODE;
	seen->fp = tb_code_fp(w, co, tb_code_base(w, check));
	seen->words = check ? tb_code_words(w, co) : 0;
	seen->addr = code;
	return 0;
}

/*
 * A frame that has not run its first instruction may not be linked to its
 * caller yet (TB_F_LATE_LINK) and hold a stale link. Its real caller sits
 * right below it on the frame stack: trust the link only if the caller's
 * frame (ch->code, just read) ends exactly where the leaf begins.
 */
TB_INLINE int tb_chain_linked(const struct tb_chain *ch, __u64 frame)
{
	return !ch->check_next || frame + (__u64)ch->code.words * 8 == ch->leaf;
}

/*
 * Record the Python frame at `frame`, whose code object is ch->code, into
 * *out, and into the stack id: h = mix(h, code), h = mix(h, instr << 32 |
 * fp) per frame, leaf first.
 */
TB_INLINE void tb_chain_push(const struct tb_walk *w, struct tb_chain *ch, struct tb_frame *out,
			     __u64 frame, __u64 code, __s32 instr)
{
	__u32 fp = ch->code.fp;

	out->code = code;
	out->instr = instr;
	out->fp = fp;
	ch->hash = tb_hash_mix(ch->hash, code);
	ch->hash = tb_hash_mix(ch->hash, ((__u64)(__u32)instr << 32) | fp);
	ch->depth++;
	ch->check_next = 0;
	if ((w->off.features & TB_F_LATE_LINK) && ch->depth == 1 && instr == -1) {
		ch->check_next = 1;
		ch->leaf = frame;
	}
}

/*
 * A Python frame whose code pointer is no code object, or unreadable, or
 * whose link failed tb_chain_linked(): the leaf, first thing in the walk
 * (step i), is being built and skipped; anywhere else the chain holds stale
 * data, and the walk stops rather than report garbage.
 */
TB_INLINE int tb_chain_bad_frame(struct tb_chain *ch, __u32 i)
{
	if (!ch->depth && !i)
		return TB_STEP_SKIP;
	ch->flags |= TB_SF_PARTIAL;
	return TB_STEP_END;
}

/* ---- The entry check (TB_F_CFRAME) ---------------------------------------- */

/*
 * 3.11/3.12 publish a new eval's _PyCFrame before writing its
 * current_frame: in that window current_frame is whatever the C stack held,
 * often a dead frame whose chain still looks complete. Every eval links its
 * first frame to the caller's current_frame, so the first entry frame of a
 * live chain (a shim, or with TB_F_ENTRY_FLAG a Python frame) points
 * exactly where cframe->previous->current_frame does. Due after a shim
 * or a recorded frame (`step`, TB_STEP_SHIM or TB_STEP_NEXT).
 */
TB_INLINE int tb_entry_due(const struct tb_walk *w, const struct tb_chain *ch, const __u8 *fr,
			   int step)
{
	return ch->check_entry && (step == TB_STEP_SHIM || tb_frame_is_entry(w, fr));
}

/* Where to read (8 bytes) the frame the chain must go on at; 0: at none,
 * the outermost eval. The check is done once: check_entry is cleared. */
TB_INLINE __u64 tb_entry_expect_addr(const struct tb_walk *w, struct tb_chain *ch)
{
	ch->check_entry = 0;
	return ch->cframe_prev ? ch->cframe_prev + w->off.cframe_frame : 0;
}

TB_INLINE int tb_entry_misplaced(const struct tb_chain *ch, __u64 expect)
{
	return ch->frame != expect;
}

/* Start over from the caller's frame: the new eval has not begun. */
TB_INLINE void tb_chain_restart(struct tb_chain *ch, __u64 frame)
{
	ch->frame = frame;
	ch->depth = 0;
	ch->hash = TB_HASH_SEED;
	ch->check_next = 0;
	ch->bottom_ok = 1;
	ch->code.addr = 0;	/* it came from the dead chain */
	ch->empty_eval = 1;	/* that eval runs, with no frame of its own yet */
}

/* The stack id: the frames' hash, then the flags that are its identity. */
TB_INLINE __u64 tb_chain_id(const struct tb_chain *ch)
{
	return tb_hash_mix(ch->hash, ch->flags & TB_SF_STACK_MASK);
}

/* ---- Interpreter status --------------------------------------------------- */

/* From the TB_GIL_READ bytes of the GIL struct: who holds it. */
TB_INLINE __u32 tb_gil_flags(const struct tb_walk *w, const __u8 *gil, __u64 tstate)
{
	__u32 flags = TB_SF_STATUS_KNOWN;

	if (tb_ld32(gil, w->off.gil_locked)) {
		flags |= TB_SF_GIL_LOCKED;
		if (tb_ld64(gil, w->off.gil_holder) == tstate)
			flags |= TB_SF_GIL;
	}
	return flags;
}

TB_INLINE __u32 tb_gc_flags(int collecting)
{
	return collecting ? TB_SF_GC : 0;
}

/*
 * The code generation a walk runs at, from the counter's value (`raw`, 0 if
 * it could not be read) and the thread's interpreter; 0 = unknown: nothing
 * from an earlier walk may be trusted.
 */
TB_INLINE __u64 tb_code_gen(const struct tb_walk *w, __u64 raw, __u64 interp)
{
	/* No counter, entries checked by tag instead: a generation that
	 * never moves, in every interpreter of the process. */
	if (!w->addr.code_gen_addr)
		return (w->off.features & TB_F_CODE_TAG) ? 1 : 0;
	/* A count of deaths starts at 0; a count of births that reached 0
	 * ran out and stands still for good. */
	if (w->off.features & TB_F_CODE_DEATHS)
		raw++;
	/* Per-interpreter counters (3.13+) say nothing of a subinterpreter. */
	if (w->addr.main_interp && interp != w->addr.main_interp)
		raw = 0;
	return raw;
}

#endif /* TB_PYWALK_H */
