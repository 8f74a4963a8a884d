// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Chrome's Trace Event Format as py-spy's chrometrace writes it: a JSON
 * array of events, a "thread_name" (and "process_name") metadata event per
 * thread, then per thread a "B" event where a frame starts and an "E" event
 * where it ends, root first, times in microseconds since the run began.
 * chrome://tracing, Perfetto and speedscope read it.
 *
 * Each sample holds its stack for its weight in periods, from when it was
 * taken (or from the end of the previous one, if that came later: two
 * samples never overlap), so every thread's frames add up to its samples
 * times the period: the totals a viewer shows are the other formats'
 * counts, in seconds. A thread that was not sampled for longer than that
 * shows a gap.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include "output/output.h"
#include "output/emit.h"

#define LABEL_LEN 4096

struct trace {
	struct emit *e;
	const struct resolved *r;
	const struct rthread *t;
	int32_t pid;
	size_t nev;		/* events written: a comma before all but the first */
};

static void event_head(struct trace *tr, const char *ph, const char *name, double us)
{
	emit_str(tr->e, tr->nev++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
	emit_str(tr->e, ph);
	emit_str(tr->e, "\",\"name\":");
	emit_json(tr->e, name);
	emit_printf(tr->e, ",\"pid\":%d,\"tid\":%" PRIu64, tr->pid, thread_track_id(tr->t));
	if (us >= 0)
		emit_printf(tr->e, ",\"ts\":%.3f", us);
}

/* "B" or "E" of a frame: its name, and where it is as py-spy puts it. */
static void frame_event(struct trace *tr, const char *ph, const struct rframe *f, double us)
{
	char op[FRAME_OP_MAX];

	frame_op_suffix(f, op, sizeof(op));
	emit_str(tr->e, tr->nev++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
	emit_str(tr->e, ph);
	emit_str(tr->e, "\",\"name\":");
	emit_json_cat(tr->e, f->name, op);
	emit_printf(tr->e, ",\"cat\":\"python\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f",
		    tr->pid, thread_track_id(tr->t), us);
	if (!frame_is_marker(f)) {
		emit_str(tr->e, ",\"args\":{\"filename\":");
		emit_json(tr->e, f->file);
		if (f->line != RFRAME_NO_LINE)
			emit_printf(tr->e, ",\"line\":%d", f->line);
		emit_str(tr->e, "}");
	}
	emit_str(tr->e, "}");
}

static void names(struct trace *tr)
{
	char name[LABEL_LEN];

	if (tr->t->proc < tr->r->nprocs) {
		event_head(tr, "M", "process_name", -1);
		emit_str(tr->e, ",\"args\":{\"name\":");
		emit_json(tr->e, tr->r->procs[tr->t->proc].name);
		emit_str(tr->e, "}}");
	}
	thread_describe(tr->t, name, sizeof(name));
	event_head(tr, "M", "thread_name", -1);
	emit_str(tr->e, ",\"args\":{\"name\":");
	emit_json(tr->e, name);
	emit_str(tr->e, "}}");
}

/* Close the open frames above depth `keep`, leaf first. */
static void close_to(struct trace *tr, const struct rsample *open, uint32_t keep, double us)
{
	uint32_t j;

	for (j = open ? open->depth : 0; j-- > keep;)
		frame_event(tr, "E", open->frames[j], us);
}

/* One thread's samples idx[0..n), in time order. */
static void thread_events(struct trace *tr, const size_t *idx, size_t n)
{
	const struct resolved *r = tr->r;
	const struct rsample *open = NULL;
	double period_us = resolved_period_s(r) * 1e6, end = 0;
	size_t i;
	uint32_t j, same;

	names(tr);
	for (i = 0; i < n; i++) {
		const struct rtick *k = &r->ticks[idx[i]];
		const struct rsample *s = &r->samples[k->sample];
		double at = k->t_ns / 1e3;

		if (open && at > end) {	/* a gap: what was open ended */
			close_to(tr, open, 0, end);
			open = NULL;
		}
		if (at < end)
			at = end;
		same = 0;
		while (open && same < open->depth && same < s->depth &&
		       open->frames[same] == s->frames[same])
			same++;
		close_to(tr, open, same, at);
		for (j = same; j < s->depth; j++)
			frame_event(tr, "B", s->frames[j], at);
		open = s;
		end = at + k->weight * period_us;
	}
	close_to(tr, open, 0, end);
}

int output_chrometrace(FILE *out, const struct resolved *r)
{
	struct tick_groups g;
	struct emit e;
	struct trace tr = { .e = &e, .r = r };
	uint32_t t;
	int ret = ticks_by_thread(r, &g);

	if (ret)
		return ret;
	emit_init(&e, out);
	emit_str(&e, "[");
	for (t = 0; t < r->nthreads; t++) {
		tr.t = &r->threads[t];
		tr.pid = tr.t->proc < r->nprocs ? r->procs[tr.t->proc].pid : 0;
		thread_events(&tr, g.idx + g.start[t], g.start[t + 1] - g.start[t]);
	}
	emit_str(&e, "\n]\n");
	tick_groups_free(&g);
	return emit_done(&e);
}
