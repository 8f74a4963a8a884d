// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Firefox Profiler's Gecko profile format (the JSON Firefox itself
 * writes, which profiler.firefox.com upgrades and processes on import; its
 * shape is src/types/gecko-profile.ts there, docs-developer/
 * gecko-profile-format.md): meta, then one thread per Python thread, named
 * as Python names it, each with its own string, frame and stack tables,
 * its samples with their times (ms since meta.startTime, the run's start)
 * and its markers:
 *
 *   "GC"      an interval while the collector ran in that thread's samples
 *             (from the first such sample to the next one without);
 *   "Off-CPU" wall mode: an interval the thread spent off CPU, from when it
 *             left to when it came back.
 *
 * An off-CPU interval worth N periods is N samples spread over it, so the
 * samples with a stack add up to the other formats' counts; each thread
 * ends with one without (the Gecko profiler's idle sample), where its last
 * sample ends. Version 27 of the format:
 * the profiler's upgraders bring it to the current one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "output/output.h"
#include "output/emit.h"
#include "hmap.h"
#include "util.h"

#define GECKO_VERSION	27
#define LABEL_LEN	4096

/* Category indexes in meta.categories. */
enum { CAT_PYTHON, CAT_OTHER, CAT_GC, CAT_IDLE };

/* Strings before the frames' in every thread's table. */
enum { STR_GC, STR_OFFCPU, STR_FRAMES };

struct gthread {
	const struct resolved *r;
	struct emit *e;
	int32_t *frame_of;	/* resolved frame id -> this thread's frame, or -1 */
	uint32_t *frames;	/* this thread's frames: resolved frame ids */
	uint32_t nframes;
	int64_t *stack_of;	/* resolved sample -> this thread's stack, or -1 */
	struct hmap stacks;	/* {prefix, frame} -> 1 + stack index */
	int64_t (*stack)[2];	/* prefix (-1: none), frame */
	size_t nstacks, stacks_cap;
};

static int local_frame(struct gthread *g, uint32_t id)
{
	if (g->frame_of[id] < 0) {
		g->frame_of[id] = (int32_t)g->nframes;
		g->frames[g->nframes++] = id;
	}
	return g->frame_of[id];
}

/* The stack of resolved sample `s`, its prefixes added first. */
static int64_t local_stack(struct gthread *g, uint32_t s)
{
	const struct rsample *rs = &g->r->samples[s];
	int64_t prefix = -1, key[2];
	uint32_t j;
	void **slot;

	if (g->stack_of[s] >= 0 || !rs->depth)
		return g->stack_of[s];
	for (j = 0; j < rs->depth; j++) {
		key[0] = prefix;
		key[1] = local_frame(g, rs->frames[j]->id);
		slot = hmap_put(&g->stacks, key, NULL);
		if (!slot || array_grow(&g->stack, &g->stacks_cap, g->nstacks + 1,
					sizeof(*g->stack), 256))
			return -ENOMEM;
		if (!*slot) {
			g->stack[g->nstacks][0] = key[0];
			g->stack[g->nstacks][1] = key[1];
			*slot = (void *)(uintptr_t)++g->nstacks;
		}
		prefix = (int64_t)(uintptr_t)*slot - 1;
	}
	g->stack_of[s] = prefix;
	return prefix;
}

/* When a tick's time ends, in ms: its interval's end, or one period on. */
static double last_end(const struct resolved *r, struct rtick k)
{
	if (k.end_ns > k.t_ns)
		return k.end_ns / 1e6;
	return k.t_ns / 1e6 + resolved_period_s(r) * 1e3;
}

static void sample_row(struct gthread *g, int64_t stack, double ms, size_t *n)
{
	emit_str(g->e, (*n)++ ? ",\n[" : "\n[");
	if (stack < 0)
		emit_str(g->e, "null");
	else
		emit_u64(g->e, 0, (uint64_t)stack);
	emit_printf(g->e, ",%.3f,0]", ms);
}

/* The samples, in time order; an off-CPU interval as its periods. */
static int samples(struct gthread *g, const size_t *idx, size_t n)
{
	const struct resolved *r = g->r;
	size_t i, rows = 0;
	uint64_t w;

	emit_str(g->e, "\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"eventDelay\":2},\"data\":[");
	for (i = 0; i < n; i++) {
		const struct rtick *k = &r->ticks[idx[i]];
		int64_t st = local_stack(g, k->sample);
		double span = (double)(k->end_ns - k->t_ns) / 1e6;

		if (st == -ENOMEM)
			return -ENOMEM;
		for (w = 0; w < k->weight; w++)
			sample_row(g, st, k->t_ns / 1e6 + span * w / k->weight, &rows);
	}
	/* Where the last sample ends: viewers draw a sample until the next. */
	if (n)
		sample_row(g, -1, last_end(r, r->ticks[idx[n - 1]]), &rows);
	emit_str(g->e, "]},\n");
	return 0;
}

static void marker(struct gthread *g, int name, double start, double end, int cat,
		   size_t *n)
{
	emit_printf(g->e, "%s[%d,%.3f,%.3f,1,%d,null]", (*n)++ ? ",\n" : "\n", name, start, end,
		    cat);
}

/* GC intervals and, in wall mode, off-CPU intervals. */
static void markers(struct gthread *g, const size_t *idx, size_t n)
{
	const struct resolved *r = g->r;
	double gc_from = -1;
	size_t i, count = 0;

	emit_str(g->e, "\"markers\":{\"schema\":{\"name\":0,\"startTime\":1,\"endTime\":2,"
		 "\"phase\":3,\"category\":4,\"data\":5},\"data\":[");
	for (i = 0; i < n; i++) {
		const struct rtick *k = &r->ticks[idx[i]];
		uint32_t flags = r->samples[k->sample].flags;
		double at = k->t_ns / 1e6;

		if (flags & RS_OFFCPU)
			marker(g, STR_OFFCPU, at, k->end_ns / 1e6, CAT_IDLE, &count);
		if ((flags & RS_GC) && gc_from < 0)
			gc_from = at;
		else if (!(flags & RS_GC) && gc_from >= 0) {
			marker(g, STR_GC, gc_from, at, CAT_GC, &count);
			gc_from = -1;
		}
	}
	if (gc_from >= 0)
		marker(g, STR_GC, gc_from, last_end(r, r->ticks[idx[n - 1]]), CAT_GC, &count);
	emit_str(g->e, "]},\n");
}

static int frame_category(const struct rframe *f)
{
	if (!strcmp(f->name, "<GC>"))
		return CAT_GC;
	return frame_is_marker(f) ? CAT_OTHER : CAT_PYTHON;
}

static void tables(struct gthread *g)
{
	char label[LABEL_LEN];
	uint32_t i;

	emit_str(g->e, "\"frameTable\":{\"schema\":{\"location\":0,\"relevantForJS\":1,"
		 "\"innerWindowID\":2,\"implementation\":3,\"line\":4,\"column\":5,"
		 "\"category\":6,\"subcategory\":7},\"data\":[");
	for (i = 0; i < g->nframes; i++) {
		const struct rframe *f = g->r->frames[g->frames[i]];

		emit_printf(g->e, "%s[%u,false,null,null,", i ? ",\n" : "\n", STR_FRAMES + i);
		if (frame_is_marker(f) || f->line == RFRAME_NO_LINE)
			emit_str(g->e, "null");
		else
			emit_printf(g->e, "%d", f->line);
		emit_printf(g->e, ",null,%d,0]", frame_category(f));
	}
	emit_str(g->e, "]},\n\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[");
	for (i = 0; i < g->nstacks; i++) {
		emit_str(g->e, i ? ",\n[" : "\n[");
		if (g->stack[i][0] < 0)
			emit_str(g->e, "null");
		else
			emit_u64(g->e, 0, (uint64_t)g->stack[i][0]);
		emit_u64(g->e, ',', (uint64_t)g->stack[i][1]);
		emit_str(g->e, "]");
	}
	/* Locations as the profiler reads a function's: "name (file:line)". */
	emit_str(g->e, "]},\n\"stringTable\":[\"GC\",\"Off-CPU\"");
	for (i = 0; i < g->nframes; i++) {
		collapsed_label(g->r->frames[g->frames[i]], label, sizeof(label));
		emit_str(g->e, ",\n");
		emit_json(g->e, label);
	}
	emit_str(g->e, "]");
}

static int thread_begin(struct gthread *g, const struct resolved *r, struct emit *e)
{
	memset(g, 0, sizeof(*g));
	g->r = r;
	g->e = e;
	g->frame_of = malloc((r->nframes + 1) * sizeof(*g->frame_of));
	g->frames = malloc((r->nframes + 1) * sizeof(*g->frames));
	g->stack_of = malloc((r->nsamples + 1) * sizeof(*g->stack_of));
	if (!g->frame_of || !g->frames || !g->stack_of ||
	    hmap_init(&g->stacks, 2 * sizeof(int64_t)))
		return -ENOMEM;
	memset(g->frame_of, 0xff, (r->nframes + 1) * sizeof(*g->frame_of));
	memset(g->stack_of, 0xff, (r->nsamples + 1) * sizeof(*g->stack_of));
	return 0;
}

static void thread_end(struct gthread *g)
{
	free(g->frame_of);
	free(g->frames);
	free(g->stack_of);
	free(g->stack);
	hmap_free(&g->stacks);
}

static int thread(struct emit *e, const struct resolved *r, uint32_t t, const size_t *idx,
		  size_t n)
{
	const struct rthread *th = &r->threads[t];
	const struct rproc *p = th->proc < r->nprocs ? &r->procs[th->proc] : NULL;
	struct gthread g;
	char name[LABEL_LEN];
	int ret = thread_begin(&g, r, e);

	if (!ret) {
		thread_describe(th, name, sizeof(name));
		emit_str(e, t ? ",\n{\"name\":" : "\n{\"name\":");
		emit_json(e, name);
		emit_str(e, ",\"processType\":\"default\",\"processName\":");
		emit_json(e, p ? p->name : "");
		emit_printf(e, ",\"registerTime\":0,\"unregisterTime\":null,\"pid\":%d,\"tid\":%" PRIu64
			    ",\n", p ? p->pid : 0, thread_track_id(th));
		ret = samples(&g, idx, n);
	}
	if (!ret) {
		markers(&g, idx, n);
		tables(&g);
		emit_str(e, "}");
	}
	thread_end(&g);
	return ret;
}

static void meta(struct emit *e, const struct resolved *r)
{
	char what[96];

	resolved_what(r, what, sizeof(what));
	emit_printf(e, "{\"meta\":{\"version\":%d,\"interval\":%.6g,\"startTime\":%.3f,"
		    "\"shutdownTime\":null,\"processType\":0,\"stackwalk\":0,\"debug\":0,"
		    "\"gcpoison\":0,\"asyncstack\":0,\"presymbolicated\":true,"
		    "\"profilingStartTime\":0,\"profilingEndTime\":%.3f,\n\"product\":",
		    GECKO_VERSION, resolved_period_s(r) * 1e3, r->start_unix * 1e3,
		    r->duration_s * 1e3);
	emit_json_cat(e, "tachyon-bpf: ", what);
	emit_str(e, ",\"markerSchema\":[],\n\"categories\":["
		 "{\"name\":\"Python\",\"color\":\"yellow\",\"subcategories\":[\"Other\"]},"
		 "{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
		 "{\"name\":\"GC\",\"color\":\"orange\",\"subcategories\":[\"Other\"]},"
		 "{\"name\":\"Idle\",\"color\":\"transparent\",\"subcategories\":[\"Other\"]}]},\n"
		 "\"libs\":[],\"pausedRanges\":[],\"processes\":[],\n\"threads\":[");
}

int output_gecko(FILE *out, const struct resolved *r)
{
	struct tick_groups g;
	struct emit e;
	uint32_t t;
	int ret = ticks_by_thread(r, &g);

	if (ret)
		return ret;
	emit_init(&e, out);
	meta(&e, r);
	for (t = 0; t < r->nthreads && !ret; t++)
		ret = thread(&e, r, t, g.idx + g.start[t], g.start[t + 1] - g.start[t]);
	emit_str(&e, "]}\n");
	tick_groups_free(&g);
	return ret ? ret : emit_done(&e);
}
