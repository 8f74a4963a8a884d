// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * the frames once in shared.frames, then one "sampled" profile per
 * (process, thread) whose samples are frame-index arrays, root first, and
 * whose weights are the sample counts (unit "none"), so every format of one
 * run adds up to the same total.
 *
 * Samples carry no time order here (they are aggregated), so each profile
 * lists its stacks sorted by frame label: speedscope's "Time Order" view
 * then shows a flame chart with equal prefixes side by side.
 *
 * With --timeline (the profile has ticks) it is py-spy's shape instead:
 * one profile per thread, its samples in the order they were taken, each
 * weighing its periods in seconds (unit "seconds"): "Time Order" is then
 * the run as it happened, gaps while the thread did not run left out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include "output/output.h"
#include "output/emit.h"

/* The name, and with --opcodes its instruction as in collapsed output:
 * speedscope shows frames by name, so it must be there to tell them apart. */
static void frame_name(struct emit *e, const struct rframe *f)
{
	char op[FRAME_OP_MAX];

	frame_op_suffix(f, op, sizeof(op));
	emit_json_cat(e, f->name, op);
}

static void frames(struct emit *e, const struct resolved *r)
{
	size_t i;

	emit_str(e, "\"shared\":{\"frames\":[");
	for (i = 0; i < r->nframes; i++) {
		const struct rframe *f = r->frames[i];

		emit_str(e, i ? ",\n{\"name\":" : "\n{\"name\":");
		frame_name(e, f);
		if (!frame_is_marker(f)) {
			emit_str(e, ",\"file\":");
			emit_json(e, f->file);
			if (f->line != RFRAME_NO_LINE)
				emit_printf(e, ",\"line\":%d", f->line);
		}
		emit_str(e, "}");
	}
	emit_str(e, "]},\n");
}

static void profile_name(struct emit *e, const struct resolved *r, const struct rsample *s)
{
	char proc[160], buf[320];

	proc[0] = 0;
	if (s->proc < r->nprocs)
		proc_describe(&r->procs[s->proc], proc, sizeof(proc));
	snprintf(buf, sizeof(buf), "%s%stid %u%s%s", proc, proc[0] ? " " : "", s->tid,
		 s->tname ? " " : "", s->tname ? s->tname : "");
	emit_json(e, buf);
}

/* One sample's frame indexes, root first. */
static void stack_row(struct emit *e, const struct rsample *s, int first)
{
	uint32_t j;

	emit_str(e, first ? "\n[" : ",\n[");
	for (j = 0; j < s->depth; j++)
		emit_u64(e, j ? ',' : 0, s->frames[j]->id);
	emit_str(e, "]");
}

/* One profile: the samples idx[0..n), all of one process and thread. */
static void profile(struct emit *e, const struct resolved *r, const size_t *idx, size_t n)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += r->samples[idx[i]].count;
	emit_str(e, "{\"type\":\"sampled\",\"name\":");
	profile_name(e, r, &r->samples[idx[0]]);
	emit_printf(e, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":%" PRIu64 ",\n\"samples\":[",
		    sum);
	for (i = 0; i < n; i++)
		stack_row(e, &r->samples[idx[i]], !i);
	emit_str(e, "],\n\"weights\":[");
	for (i = 0; i < n; i++)
		emit_u64(e, i ? ',' : 0, r->samples[idx[i]].count);
	emit_str(e, "]}");
}

static void profiles(struct emit *e, const struct resolved *r, const size_t *idx)
{
	size_t i, start = 0, nprof = 0;

	emit_str(e, "\"profiles\":[");
	for (i = 1; i <= r->nsamples; i++) {
		const struct rsample *a = &r->samples[idx[start]];
		const struct rsample *b = i < r->nsamples ? &r->samples[idx[i]] : NULL;

		if (b && b->proc == a->proc && b->tid == a->tid)
			continue;
		if (nprof++)
			emit_str(e, ",\n");
		profile(e, r, idx + start, i - start);
		start = i;
	}
	/* speedscope refuses a file without profiles: say there was nothing. */
	if (!r->nsamples)
		emit_str(e, "{\"type\":\"sampled\",\"name\":\"no samples\",\"unit\":\"none\","
			 "\"startValue\":0,\"endValue\":0,\"samples\":[],\"weights\":[]}");
	emit_str(e, "]");
}

/* One thread's samples in time order, weights in seconds. */
static void thread_profile(struct emit *e, const struct resolved *r, uint32_t th,
			   const size_t *idx, size_t n)
{
	const struct rthread *t = &r->threads[th];
	double period = resolved_period_s(r), sum = 0;
	char proc[160], name[160], buf[400];
	size_t i;

	for (i = 0; i < n; i++)
		sum += r->ticks[idx[i]].weight * period;
	proc[0] = 0;
	if (t->proc < r->nprocs)
		proc_describe(&r->procs[t->proc], proc, sizeof(proc));
	thread_describe(t, name, sizeof(name));
	snprintf(buf, sizeof(buf), "%s%s%s (tid %u)", proc, proc[0] ? " " : "", name, t->tid);
	emit_str(e, "{\"type\":\"sampled\",\"name\":");
	emit_json(e, buf);
	emit_printf(e, ",\"unit\":\"seconds\",\"startValue\":0,\"endValue\":%.9g,\n\"samples\":[",
		    sum);
	for (i = 0; i < n; i++)
		stack_row(e, &r->samples[r->ticks[idx[i]].sample], !i);
	emit_str(e, "],\n\"weights\":[");
	for (i = 0; i < n; i++)
		emit_printf(e, "%s%.9g", i ? "," : "", r->ticks[idx[i]].weight * period);
	emit_str(e, "]}");
}

static int timeline_profiles(struct emit *e, const struct resolved *r)
{
	struct tick_groups g;
	size_t nprof = 0;
	uint32_t t;
	int ret = ticks_by_thread(r, &g);

	if (ret)
		return ret;
	emit_str(e, "\"profiles\":[");
	for (t = 0; t < r->nthreads; t++) {
		if (g.start[t + 1] == g.start[t])
			continue;
		if (nprof++)
			emit_str(e, ",\n");
		thread_profile(e, r, t, g.idx + g.start[t], g.start[t + 1] - g.start[t]);
	}
	if (!nprof)
		emit_str(e, "{\"type\":\"sampled\",\"name\":\"no samples\",\"unit\":\"seconds\","
			 "\"startValue\":0,\"endValue\":0,\"samples\":[],\"weights\":[]}");
	emit_str(e, "]");
	tick_groups_free(&g);
	return 0;
}

int output_speedscope(FILE *out, const struct resolved *r)
{
	struct emit e;
	char name[160], what[96];
	size_t *idx = samples_sorted(r, 1);
	int ret = 0;

	if (!idx)
		return -errno;

	emit_init(&e, out);
	emit_str(&e, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n");
	resolved_what(r, what, sizeof(what));
	snprintf(name, sizeof(name), "tachyon-bpf: %s, %.1f s", what, r->duration_s);
	emit_str(&e, "\"name\":");
	emit_json(&e, name);
	emit_str(&e, ",\"exporter\":\"tachyon-bpf\",\"activeProfileIndex\":0,\n");
	frames(&e, r);
	if (r->timeline)
		ret = timeline_profiles(&e, r);
	else
		profiles(&e, r, idx);
	emit_str(&e, "}\n");
	free(idx);
	return ret ? ret : emit_done(&e);
}
