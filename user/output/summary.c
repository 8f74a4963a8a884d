// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Top functions, like pstats: lines of one function merged, self = samples
 * with the function as leaf, total = samples with it anywhere on the stack,
 * counted once per sample however deep it recurses.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "output/output.h"
#include "output/emit.h"

#define SUMMARY_TOP 30
#define SUMMARY_OPS 10	/* instructions listed with --opcodes */

struct fstat {
	uint64_t self;
	uint64_t total;
	uint32_t func;
};

static int cmp_fstat(const void *a, const void *b)
{
	const struct fstat *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

static double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}

static void header(struct emit *e, const struct resolved *r)
{
	char what[128];

	if (r->mode && r->rate_text)
		resolved_what(r, what, sizeof(what));
	else
		snprintf(what, sizeof(what), "%s, %.6g Hz", r->event ? r->event : "samples",
			 r->rate);
	emit_printf(e, "# %" PRIu64 " samples in %.1f s (%s)", r->total, r->duration_s, what);
	emit_procs(e, r, 0);
	emit_str(e, "\n");
	emit_printf(e, "%7s %7s %9s %9s  %s\n", "self%", "total%", "self", "total",
		    "function (file:firstline)");
}

static void row(struct emit *e, const struct resolved *r, const struct fstat *f,
		const struct rframe *fr)
{
	emit_printf(e, "%6.2f%% %6.2f%% %9" PRIu64 " %9" PRIu64 "  ", pct(f->self, r->total),
		    pct(f->total, r->total), f->self, f->total);
	emit_text(e, fr->name);
	if (!frame_is_marker(fr)) {
		emit_str(e, " (");
		char tail[32];

		emit_text(e, fr->file);
		frame_tail(fr, fr->firstlineno, tail, sizeof(tail));
		emit_str(e, tail);
	}
	emit_str(e, "\n");
}

/* The deepest frame with an instruction (--opcodes): the Python leaf. */
static const struct rframe *op_leaf(const struct rsample *s)
{
	uint32_t j;

	for (j = s->depth; j-- > 0;)
		if (s->frames[j]->op)
			return s->frames[j];
	return NULL;
}

/*
 * --opcodes: the hottest instructions as the leaf, one row per frame
 * (function, line and instruction). Nothing without the option.
 */
static int instructions(struct emit *e, const struct resolved *r)
{
	struct fstat *st = calloc(r->nframes + 1, sizeof(*st));
	size_t i, n = 0;

	if (!st)
		return -ENOMEM;
	for (i = 0; i < r->nframes; i++)
		st[i].func = (uint32_t)i;
	for (i = 0; i < r->nsamples; i++) {
		const struct rframe *f = op_leaf(&r->samples[i]);

		if (f)
			st[f->id].self += r->samples[i].count;
	}
	qsort(st, r->nframes, sizeof(*st), cmp_fstat);
	while (n < r->nframes && n < SUMMARY_OPS && st[n].self)
		n++;
	if (n)
		emit_printf(e, "%7s %9s  %s\n", "self%", "self",
			    "instruction  function (file:line)");
	for (i = 0; i < n; i++) {
		const struct rframe *f = r->frames[st[i].func];
		char tail[32];

		emit_printf(e, "%6.2f%% %9" PRIu64 "  %s  ", pct(st[i].self, r->total),
			    st[i].self, f->op);
		emit_text(e, f->name);
		emit_str(e, " (");
		emit_text(e, f->file);
		frame_tail(f, f->line, tail, sizeof(tail));
		emit_str(e, tail);
		emit_str(e, "\n");
	}
	free(st);
	return 0;
}

int output_summary(FILE *out, const struct resolved *r)
{
	struct func_table ft;
	struct func_count *fc;
	struct fstat *st;
	struct emit e;
	uint64_t rest = 0;
	size_t i;
	int ret = resolved_check(r);

	if (ret || (ret = funcs_build(r, &ft)))
		return ret;
	st = calloc(ft.n + 1, sizeof(*st));
	fc = calloc(ft.n + 1, sizeof(*fc));
	if (!st || !fc || resolved_function_totals(r, &ft, fc)) {
		free(st);
		free(fc);
		funcs_free(&ft);
		return -ENOMEM;
	}
	for (i = 0; i < ft.n; i++)
		st[i] = (struct fstat){ .self = fc[i].self, .total = fc[i].total,
					.func = (uint32_t)i };
	free(fc);
	qsort(st, ft.n, sizeof(*st), cmp_fstat);

	emit_init(&e, out);
	header(&e, r);
	for (i = 0; i < ft.n; i++) {
		if (i < SUMMARY_TOP)
			row(&e, r, &st[i], ft.funcs[st[i].func]);
		else
			rest += st[i].self;
	}
	if (ft.n > SUMMARY_TOP)
		emit_printf(&e, "# %zu more functions with %.2f%% self\n", ft.n - SUMMARY_TOP,
			    pct(rest, r->total));
	free(st);
	funcs_free(&ft);
	ret = instructions(&e, r);
	return ret ? ret : emit_done(&e);
}
