// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The reference unwinder over struct tb_cfi_row: the algorithm the BPF
 * program will mirror, step for step, so that its results can be checked
 * against this one (and this one against gdb).
 */
#include <errno.h>

#include "cfi.h"
#include "remote.h"

struct frame {
	struct cfi_regs r;
	int rbp_known;
	int exact;		/* rip is not a return address (leaf, after a signal) */
};

static const struct cfi_module *module_of(const struct cfi_module *mods, int n, uint64_t pc)
{
	int i;

	for (i = 0; i < n; i++)
		if (pc >= mods[i].start && pc < mods[i].end)
			return &mods[i];
	return NULL;
}

static int read_u64(cfi_read_fn rd, void *ctx, uint64_t addr, uint64_t *v)
{
	return rd(ctx, addr, v, sizeof(*v)) ? CFI_STOP_READ : -1;
}

/* The interrupted registers, from the ucontext __restore_rt's rsp points at. */
static int step_signal(struct frame *f, cfi_read_fn rd, void *ctx)
{
	uint64_t sp = f->r.rsp;
	int stop;

	if ((stop = read_u64(rd, ctx, sp + TB_SIGCTX_RIP, &f->r.rip)) >= 0 ||
	    (stop = read_u64(rd, ctx, sp + TB_SIGCTX_RBP, &f->r.rbp)) >= 0 ||
	    (stop = read_u64(rd, ctx, sp + TB_SIGCTX_RSP, &f->r.rsp)) >= 0)
		return stop;
	f->rbp_known = 1;
	f->exact = 1;	/* the signal came between two instructions */
	return -1;
}

static int cfa_of(const struct tb_cfi_row *row, const struct frame *f, uint64_t *cfa)
{
	switch (row->kind) {
	case TB_CFI_RSP:
		*cfa = f->r.rsp + (int64_t)row->cfa_off;
		return -1;
	case TB_CFI_RBP:
		if (!f->rbp_known)
			return CFI_STOP_UNSUPPORTED;
		*cfa = f->r.rbp + (int64_t)row->cfa_off;
		return -1;
	case TB_CFI_PLT:
		*cfa = f->r.rsp + (int64_t)row->cfa_off + ((f->r.rip & 15) >= row->arg ? 8 : 0);
		return -1;
	}
	return CFI_STOP_UNSUPPORTED;
}

/* One frame up through a CFA row; -1 on success, else the stop reason. */
static int step_cfa(const struct tb_cfi_row *row, struct frame *f, cfi_read_fn rd, void *ctx)
{
	uint64_t cfa = 0, ra, rbp = f->r.rbp;
	int stop;

	if ((stop = cfa_of(row, f, &cfa)) >= 0)
		return stop;
	if ((stop = read_u64(rd, ctx, cfa - 8, &ra)) >= 0)
		return stop;
	if (row->rbp_rule == TB_RBP_AT_CFA &&
	    (stop = read_u64(rd, ctx, cfa + 8 * (int64_t)row->rbp_off8, &rbp)) >= 0)
		return stop;
	/* The stack grows down: a caller's frame lies above its callee's. */
	if (cfa <= f->r.rsp || !ra)
		return CFI_STOP_BAD;
	if (row->rbp_rule == TB_RBP_UNKNOWN)
		f->rbp_known = 0;
	else if (row->rbp_rule == TB_RBP_AT_CFA)
		f->rbp_known = 1;
	f->r.rip = ra;
	f->r.rsp = cfa;
	f->r.rbp = rbp;
	f->exact = 0;
	return -1;
}

static int step(const struct cfi_module *mods, int nmods, struct frame *f,
		cfi_read_fn rd, void *ctx)
{
	const struct cfi_module *m = module_of(mods, nmods, f->r.rip);
	const struct tb_cfi_row *row;
	uint64_t pc;

	if (!m)
		return CFI_STOP_NO_MODULE;
	/* A return address follows its call, which may end the function. */
	pc = f->r.rip - (f->exact ? 0 : 1) - (uint64_t)m->bias;
	row = cfi_lookup(m->table, pc);
	if (!row)
		return CFI_STOP_NO_ROW;
	if (row->kind == TB_CFI_END)
		return CFI_STOP_END;
	if (row->kind == TB_CFI_SIGNAL)
		return step_signal(f, rd, ctx);
	return step_cfa(row, f, rd, ctx);
}

struct cfi_unwind_result cfi_unwind(const struct cfi_module *mods, int nmods,
				    struct cfi_regs regs, cfi_read_fn rd, void *ctx,
				    uint64_t *pcs, int max)
{
	struct cfi_unwind_result res = { .n = 0, .stop = CFI_STOP_MAX };
	struct frame f = { .r = regs, .rbp_known = 1, .exact = 1 };
	int stop;

	while (res.n < max) {
		pcs[res.n++] = f.r.rip;
		stop = step(mods, nmods, &f, rd, ctx);
		if (stop >= 0) {
			res.stop = (enum cfi_stop)stop;
			return res;
		}
		if (!f.r.rip) {
			res.stop = CFI_STOP_BAD;
			return res;
		}
	}
	return res;
}

int cfi_read_remote(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return remote_read(*(const pid_t *)ctx, addr, buf, len);
}

const char *cfi_stop_name(enum cfi_stop s)
{
	static const char *const names[] = {
		[CFI_STOP_END] = "end of stack",
		[CFI_STOP_MAX] = "frame limit",
		[CFI_STOP_NO_MODULE] = "no module",
		[CFI_STOP_NO_ROW] = "no unwind row",
		[CFI_STOP_UNSUPPORTED] = "unsupported rule",
		[CFI_STOP_READ] = "stack not readable",
		[CFI_STOP_BAD] = "stack does not progress",
	};

	if ((unsigned)s < sizeof(names) / sizeof(names[0]) && names[s])
		return names[s];
	return "?";
}
