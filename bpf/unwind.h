/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The native unwinder's step rule, defined once: the BPF program
 * (bpf/unwind.bpf.h) and the userspace reference (user/cfi_unwind.c, which
 * tests/integration/test_cfi.py checks against gdb) both include this file,
 * so the reference tests keep checking what the kernel side runs.
 *
 * One step takes a frame's registers (rip, rsp, rbp) to its caller's, by
 * the unwind row governing rip (struct tb_cfi_row, bpf/tachyon.h) or, where
 * rip has none, by the frame-pointer convention (saved rbp at [rbp], return
 * address at [rbp + 8]).
 *
 * The includer defines TB_UW_READ(ctx, addr, u64 *dst): 0 when the 8 bytes
 * of the target at addr were read, else nonzero; and TB_UW_READ2(ctx, addr,
 * u64 *lo, u64 *hi), the same for the 16 bytes there in one read (a read
 * of the target's memory is most of a step's cost: one for a frame whose
 * rbp sits right below its return address, as a frame pointer's does).
 */
#ifndef TB_UNWIND_H
#define TB_UNWIND_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Why a walk stopped; TB_UW_GO: it goes on. */
enum tb_uw_stop {
	TB_UW_GO = -1,
	TB_UW_END = 0,		/* the outermost frame (undefined return address) */
	TB_UW_MAX,		/* max frames recorded */
	TB_UW_NO_MODULE,	/* pc in no table, and no frame pointer to follow */
	TB_UW_NO_ROW,		/* pc in a gap of its table, and no frame pointer */
	TB_UW_UNSUPPORTED,	/* a row we cannot follow, or rbp lost */
	TB_UW_READ,		/* the stack could not be read */
	TB_UW_BAD,		/* the stack does not progress, or pc 0 */
};

struct tb_uw_frame {
	__u64 rip;
	__u64 rsp;
	__u64 rbp;
	__u32 rbp_known;	/* rbp holds the caller-saved value the rows describe */
	__u32 exact;		/* rip is not a return address (leaf, after a signal) */
};

/*
 * The address (ELF vaddr) whose row governs the frame: a return address
 * follows its call, which may be the last instruction of the function, so
 * it is looked up one byte back.
 */
static __always_inline __u64 tb_uw_lookup_pc(const struct tb_uw_frame *f, __u64 bias)
{
	return f->rip - (f->exact ? 0 : 1) - bias;
}

/* __restore_rt: the interrupted registers, from the ucontext at rsp. */
static __always_inline int tb_uw_signal(struct tb_uw_frame *f, void *ctx)
{
	__u64 sp = f->rsp, rip = 0, rbp = 0, rsp = 0;

	if (TB_UW_READ(ctx, sp + TB_SIGCTX_RIP, &rip) ||
	    TB_UW_READ(ctx, sp + TB_SIGCTX_RBP, &rbp) ||
	    TB_UW_READ(ctx, sp + TB_SIGCTX_RSP, &rsp))
		return TB_UW_READ;
	f->rip = rip;
	f->rbp = rbp;
	f->rsp = rsp;
	f->rbp_known = 1;
	f->exact = 1;	/* the signal came between two instructions */
	return TB_UW_GO;
}

/* The frame's CFA by its row; TB_UW_GO, or why not. */
static __always_inline int tb_uw_cfa(const struct tb_cfi_row *row, const struct tb_uw_frame *f,
				     __u64 *cfa)
{
	__s64 off = row->cfa_off;

	if (row->kind == TB_CFI_RSP) {
		*cfa = f->rsp + off;
	} else if (row->kind == TB_CFI_RBP) {
		if (!f->rbp_known)
			return TB_UW_UNSUPPORTED;
		*cfa = f->rbp + off;
	} else if (row->kind == TB_CFI_PLT) {
		*cfa = f->rsp + off + ((f->rip & 15) >= row->arg ? 8 : 0);
	} else {
		return TB_UW_UNSUPPORTED;
	}
	return TB_UW_GO;
}

/* One frame up through a CFA row. */
static __always_inline int tb_uw_cfa_step(const struct tb_cfi_row *row, struct tb_uw_frame *f,
					  void *ctx)
{
	__u64 cfa = 0, ra = 0, rbp = f->rbp;
	int stop = tb_uw_cfa(row, f, &cfa);

	if (stop != TB_UW_GO)
		return stop;
	if (row->rbp_rule == TB_RBP_AT_CFA && row->rbp_off8 == -2) {
		if (TB_UW_READ2(ctx, cfa - 16, &rbp, &ra))
			return TB_UW_READ;
	} else if (TB_UW_READ(ctx, cfa - 8, &ra) ||
		   (row->rbp_rule == TB_RBP_AT_CFA &&
		    TB_UW_READ(ctx, cfa + 8 * (__s64)row->rbp_off8, &rbp))) {
		return TB_UW_READ;
	}
	/* The stack grows down: a caller's frame lies above its callee's. */
	if (cfa <= f->rsp || !ra)
		return TB_UW_BAD;
	if (row->rbp_rule == TB_RBP_UNKNOWN)
		f->rbp_known = 0;
	else if (row->rbp_rule == TB_RBP_AT_CFA)
		f->rbp_known = 1;
	f->rip = ra;
	f->rsp = cfa;
	f->rbp = rbp;
	f->exact = 0;
	return TB_UW_GO;
}

/*
 * One frame up by the frame pointer, for a pc no table covers (why: the
 * stop reported if there is no frame pointer to follow either). The frame
 * must lie above rsp: a function without frame pointers leaves rbp to
 * whatever its callers put there, often not an address on the stack.
 */
static __always_inline int tb_uw_fp_step(struct tb_uw_frame *f, void *ctx, int why)
{
	__u64 fp = f->rbp, up = 0, ra = 0;

	if (!f->rbp_known || fp < f->rsp || (fp & 7))
		return why;
	if (TB_UW_READ2(ctx, fp, &up, &ra))
		return TB_UW_READ;
	if (!ra)
		return TB_UW_END;
	f->rip = ra;
	f->rsp = fp + 16;
	f->rbp = up;
	f->rbp_known = 1;
	f->exact = 0;
	return TB_UW_GO;
}

/* One frame up from the row governing rip (NULL: its table has none). */
static __always_inline int tb_uw_step(const struct tb_cfi_row *row, struct tb_uw_frame *f,
				      void *ctx)
{
	if (!row || row->kind == TB_CFI_GAP)
		return tb_uw_fp_step(f, ctx, TB_UW_NO_ROW);
	if (row->kind == TB_CFI_END)
		return TB_UW_END;
	if (row->kind == TB_CFI_SIGNAL)
		return tb_uw_signal(f, ctx);
	return tb_uw_cfa_step(row, f, ctx);
}

#endif /* TB_UNWIND_H */
