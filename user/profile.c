// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "asyncio.h"
#include "profile.h"

int profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
	if (hmap_init(&p->stacks, sizeof(uint64_t)) ||
	    hmap_init(&p->counts, sizeof(struct agg_key)) ||
	    hmap_init(&p->pending_tasks, sizeof(uint64_t)))
		return -ENOMEM;
	return 0;
}

static void free_native(struct stack_native *sn)
{
	if (!sn)
		return;
	hmap_free_values(&sn->plans, free);
	free(sn->ips);
	free(sn->entry);
	free(sn);
}

static void free_stack(void *v)
{
	struct stack_frames *sf = v;

	if (sf) {
		asyncio_free(sf->tasks);
		free_native(sf->native);
	}
	free(sf);
}

static void free_chain(void *c)
{
	asyncio_free(c);
}

void profile_free(struct profile *p)
{
	hmap_free_values(&p->stacks, free_stack);
	hmap_free(&p->counts);
	hmap_free_values(&p->pending_tasks, free_chain);
}

void profile_pending_tasks(struct profile *p, uint64_t id, struct task_chain *c)
{
	void **slot;
	int added;

	if (!c)
		return;
	slot = hmap_put(&p->pending_tasks, &id, &added);
	if (!slot) {
		asyncio_free(c);
		return;
	}
	if (!added)
		asyncio_free(*slot);	/* sent again (a compaction): the newer one */
	*slot = c;
}

/* The chain that came for this stack id, taken; NULL if none. */
static struct task_chain *take_tasks(struct profile *p, uint64_t id)
{
	return p->pending_tasks.slots ? hmap_del(&p->pending_tasks, &id) : NULL;
}

int profile_add_stack(struct profile *p, const struct tb_stack *rec, size_t size)
{
	struct stack_frames *sf;
	uint32_t depth = rec->depth;
	size_t bytes;
	void **slot;
	int added;
	struct task_chain *tasks = take_tasks(p, rec->stack_id);

	if (size < TB_STACK_HDR_SIZE || depth > TB_MAX_DEPTH ||
	    size < TB_STACK_HDR_SIZE + depth * sizeof(struct tb_frame))
		goto fail;
	slot = hmap_put(&p->stacks, &rec->stack_id, &added);
	if (!slot || !added) {
		asyncio_free(tasks);
		return slot ? 0 : -ENOMEM;
	}
	bytes = depth * sizeof(struct tb_frame);
	sf = malloc(sizeof(*sf) + bytes);
	if (!sf) {
		hmap_del(&p->stacks, &rec->stack_id);
		asyncio_free(tasks);
		return -ENOMEM;
	}
	sf->depth = depth;
	sf->refs = 0;
	sf->tasks = tasks;
	sf->exc_type = rec->exc_type;
	sf->native = NULL;
	memcpy(sf->frames, rec->frames, bytes);
	while (depth-- > 0)
		sf->frames[depth].code &= ~TB_CODE_MARKS;	/* --native's, in the plan */
	*slot = sf;
	return 1;
fail:
	asyncio_free(tasks);
	return -EINVAL;
}

const struct stack_frames *profile_stack(const struct profile *p, uint64_t stack_id)
{
	void **slot = hmap_get(&p->stacks, &stack_id);

	return slot ? *slot : NULL;
}

int profile_set_native(struct profile *p, const struct tb_stack *rec, const uint64_t *callers,
		       int32_t n)
{
	void **slot = hmap_get(&p->stacks, &rec->stack_id);
	struct stack_frames *sf = slot ? *slot : NULL;
	struct stack_native *sn;
	uint32_t i;

	if (!sf)
		return 0;
	sn = calloc(1, sizeof(*sn));
	if (!sn || hmap_init(&sn->plans, sizeof(uint64_t)) ||
	    !(sn->entry = malloc(sf->depth + 1)))
		goto fail;
	for (i = 0; i < sf->depth; i++)
		sn->entry[i] = rec->frames[i].code & TB_CODE_MARKS;
	sn->nips = n;
	if (n > 0) {
		sn->ips = malloc((size_t)n * sizeof(*sn->ips));
		if (!sn->ips)
			goto fail;
		memcpy(sn->ips, callers, (size_t)n * sizeof(*sn->ips));
	}
	free_native(sf->native);
	sf->native = sn;
	return 0;
fail:
	free_native(sn);
	return -ENOMEM;
}

void profile_entry_frames(const struct stack_frames *sf, struct tb_frame *py)
{
	uint32_t i;

	for (i = 0; i < sf->depth; i++) {
		py[i] = sf->frames[i];
		if (sf->native)
			py[i].code |= sf->native->entry[i];
	}
}

const struct native_plan *profile_native_plan(const struct stack_frames *sf, uint64_t leaf)
{
	void **slot = sf->native ? hmap_get(&sf->native->plans, &leaf) : NULL;

	return slot ? *slot : NULL;
}

int profile_add_plan(struct profile *p, uint64_t stack_id, uint64_t leaf,
		     struct native_plan *plan)
{
	void **slot = hmap_get(&p->stacks, &stack_id);
	struct stack_frames *sf = slot ? *slot : NULL;
	int added;

	slot = sf && sf->native ? hmap_put(&sf->native->plans, &leaf, &added) : NULL;
	if (!slot) {
		free(plan);
		return sf && sf->native ? -ENOMEM : 0;
	}
	if (!added)
		free(*slot);
	*slot = plan;
	return 0;
}

int profile_count(struct profile *p, const struct agg_key *k, uint64_t n)
{
	int added;
	void **slot = hmap_put(&p->counts, k, &added);

	if (!slot)
		return -ENOMEM;
	*slot = (void *)((uintptr_t)*slot + n);
	p->samples += n;
	if (added) {
		void **st = hmap_get(&p->stacks, &k->stack_id);

		if (st)
			((struct stack_frames *)*st)->refs++;
	}
	return added;
}

/* The model's flags of a sample's TB_SF_* bits (the only place that knows both). */
static uint32_t model_flags(uint32_t sf)
{
	static const struct {
		uint32_t sf, rs;
	} map[] = {
		{ TB_SF_TRUNCATED, RS_TRUNCATED },
		{ TB_SF_PARTIAL, RS_PARTIAL },
		{ TB_SF_GIL, RS_GIL },
		{ TB_SF_GIL_LOCKED, RS_GIL_TAKEN },
		{ TB_SF_GC, RS_GC },
		{ TB_SF_EXC, RS_EXC },
		{ TB_SF_OFFCPU, RS_OFFCPU },
	};
	uint32_t rs = 0;
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (sf & map[i].sf)
			rs |= map[i].rs;
	return rs;
}

static const char *marker(uint32_t flags)
{
	if (flags & TB_SF_TRUNCATED)
		return "[truncated]";
	if (flags & TB_SF_PARTIAL)
		return "[partial]";
	return NULL;
}

#define MAX_KFRAMES TB_KSTACK_DEPTH

/* Frames around the Python ones: thread root, truncation marker. */
static int prefix_frames(struct resolved *r, struct rsample *s, const struct agg_key *k,
			 const struct resolve_opts *o, const struct target *t)
{
	const char *mark = marker(k->flags);
	char name[128];

	if (o->proc_root) {
		if (o->show_pids)
			snprintf(name, sizeof(name), "%s [%d]", t->name, t->pid);
		else
			snprintf(name, sizeof(name), "%s", t->name);
		if (!(s->frames[s->depth++] = resolved_intern(r, name, "", 0, 0)))
			return -ENOMEM;
	}
	if (o->threads) {
		const char *tn = s->tname;

		snprintf(name, sizeof(name), "thread %u%s%s", k->tid, tn ? " " : "", tn ? tn : "");
		if (!(s->frames[s->depth++] = resolved_intern(r, name, "", 0, 0)))
			return -ENOMEM;
	}
	if (mark && !(s->frames[s->depth++] = resolved_intern(r, mark, "", 0, 0)))
		return -ENOMEM;
	return 0;
}

/* --mode exception: "<ValueError>", the type in flight, as the leaf marker. */
static int exc_frame(struct resolved *r, struct rsample *s, const struct agg_key *k,
		     const struct stack_frames *sf, const struct resolve_opts *o)
{
	const char *type;
	char name[96];

	if (!sf->exc_type)
		return 0;
	type = o->exc_name ? o->exc_name(o->ctx, k->target, sf->exc_type) : NULL;
	if (type)
		snprintf(name, sizeof(name), "<%s>", type);
	else
		snprintf(name, sizeof(name), "<exception 0x%llx>", (unsigned long long)sf->exc_type);
	s->frames[s->depth] = resolved_intern(r, name, "", 0, 0);
	return s->frames[s->depth++] ? 0 : -ENOMEM;
}

/* Frames below the Python leaf: the exception, <GC>, then the kernel stack,
 * outermost first. */
static int suffix_frames(struct resolved *r, struct rsample *s, const struct agg_key *k,
			 const struct stack_frames *sf, const struct resolve_opts *o)
{
	const char *kf[MAX_KFRAMES];
	char name[256];
	int n = 0;

	if (exc_frame(r, s, k, sf, o))
		return -ENOMEM;
	if (o->gc_frames && (k->flags & TB_SF_GC) &&
	    !(s->frames[s->depth++] = resolved_intern(r, "<GC>", "", 0, 0)))
		return -ENOMEM;
	if (k->kstack >= 0 && o->kernel_frames)
		n = o->kernel_frames(o->ctx, k->kstack, kf, MAX_KFRAMES);
	while (n-- > 0) {
		snprintf(name, sizeof(name), "%s [k]", kf[n]);
		if (!(s->frames[s->depth++] = resolved_intern(r, name, "", 0, 0)))
			return -ENOMEM;
	}
	return 0;
}

/* One Python frame, symbolized, at the end of s (leaf: --opcodes' frame). */
static int python_frame(struct resolved *r, struct rsample *s, const struct tb_frame *f,
			int leaf, struct target *t, struct symbols *sym,
			const struct resolve_opts *o)
{
	const struct code_info *ci = symbols_get(sym, t, f);
	const char *op = NULL;
	struct sym_frame sf2;
	char opbuf[16];

	symbols_frame(ci, f, t, o->full_paths, &sf2);
	if (sf2.hidden)
		return 0;
	if (o->line_mode == LINES_FUNCTION)
		sf2.line = sf2.firstlineno;
	else if (o->line_mode == LINES_NONE)
		sf2.line = RFRAME_NO_LINE;
	if (o->opcodes == OPCODES_ALL || (o->opcodes == OPCODES_LEAF && leaf))
		op = symbols_opcode(ci, f, t, opbuf, sizeof(opbuf));
	s->frames[s->depth] = resolved_intern_op(r, sf2.name, sf2.file, sf2.line,
						 sf2.firstlineno, op);
	return s->frames[s->depth++] ? 0 : -ENOMEM;
}

/* Frames the task chain adds: a root marker, and per task a label and its frames. */
static uint32_t task_frames_max(const struct task_chain *c)
{
	uint32_t i, n = 1;

	for (i = 0; c && i < c->depth; i++)
		n += 2 + c->tasks[i].nframes;	/* label, link marker, frames */
	return n;
}

/* --async-aware: the outermost task first, each task's label (a marker
 * frame) followed by the coroutine frames it is suspended in. */
static int task_frames(struct resolved *r, struct rsample *s, const struct task_chain *c,
		       struct target *t, struct symbols *sym, const struct resolve_opts *o)
{
	const char *root = asyncio_root_marker(c), *link;
	const struct task_view *v;
	char buf[80];
	uint32_t i, j;

	if (root && !(s->frames[s->depth++] = resolved_intern(r, root, "", 0, 0)))
		return -ENOMEM;
	for (i = c->depth; i-- > 0;) {
		v = &c->tasks[i];
		link = asyncio_link_marker(c, i, buf, sizeof(buf));
		if (link && !(s->frames[s->depth++] = resolved_intern(r, link, "", 0, 0)))
			return -ENOMEM;
		if (!(s->frames[s->depth++] = resolved_intern(r, v->label, "", 0, 0)))
			return -ENOMEM;
		for (j = 0; j < v->nframes; j++)
			if (python_frame(r, s, &v->frames[j], 0, t, sym, o))
				return -ENOMEM;
	}
	return 0;
}

/*
 * --native: the merged stack p, outermost first (native frames by name),
 * from its Python frame `from` on (-1: all of it). Under an asyncio task
 * chain, from is the task's coroutine: what p has above it is the event
 * loop's, Python and native, and the chain stands for it.
 */
static int native_frames(struct resolved *r, struct rsample *s, const struct stack_frames *sf,
			 const struct native_plan *p, int32_t from, struct target *t,
			 struct symbols *sym, const struct resolve_opts *o)
{
	uint32_t i = 0;
	int32_t py;

	while (from >= 0 && i < p->n && p->it[i].py != from)
		i++;
	for (; i < p->n; i++) {
		py = p->it[i].py;
		if (py >= 0 && (uint32_t)py < sf->depth) {
			if (python_frame(r, s, &sf->frames[py], i + 1 == p->n, t, sym, o))
				return -ENOMEM;
		} else if (py < 0 && !(s->frames[s->depth++] =
				       resolved_intern(r, p->it[i].name, "", 0, 0))) {
			return -ENOMEM;
		}
	}
	return 0;
}

static int resolve_one(struct resolved *r, const struct agg_key *k, uint64_t count,
		       const struct stack_frames *sf, struct target *t,
		       struct symbols *sym, const struct resolve_opts *o)
{
	/* a task's own frames stop at its coroutine: below are the loop's */
	uint32_t keep = sf->tasks ? asyncio_keep(sf->tasks, sf->frames, sf->depth) : 0;
	const struct task_chain *tc = keep ? sf->tasks : NULL;
	uint32_t i = keep ? keep : sf->depth;
	const struct native_plan *plan = profile_native_plan(sf, k->leaf);
	struct rsample *s;
	const char *tn;

	s = resolved_slot(r);
	if (!s)
		return -ENOMEM;
	tn = o->thread_name ? o->thread_name(o->ctx, k->target, k->tid) : NULL;
	s->tname = tn ? strdup(tn) : NULL;
	s->frames = calloc(sf->depth + 5 + MAX_KFRAMES + task_frames_max(tc) +
			   (plan ? plan->n : 0),
			   sizeof(*s->frames));
	if (!s->frames || (tn && !s->tname) || prefix_frames(r, s, k, o, t)) {
		free(s->frames);
		free(s->tname);
		return -ENOMEM;
	}
	if (tc && task_frames(r, s, tc, t, sym, o))
		return -ENOMEM;
	if (plan) {
		if (native_frames(r, s, sf, plan, tc ? (int32_t)keep - 1 : -1, t, sym, o))
			return -ENOMEM;
	} else {
		while (i-- > 0)
			if (python_frame(r, s, &sf->frames[i], !i, t, sym, o))
				return -ENOMEM;
	}
	if (suffix_frames(r, s, k, sf, o))
		return -ENOMEM;
	s->proc = t->id;
	s->tid = k->tid;
	s->flags = model_flags(k->flags);
	s->count = count;
	r->total += count;
	r->nsamples++;
	return 0;
}

int profile_resolve(struct profile *p, struct target *const *targets, uint32_t ntargets,
		    const struct rproc *procs, struct symbols *sym,
		    const struct resolve_opts *o, struct resolved *r)
{
	const struct agg_key *k;
	size_t it = 0;
	void **val;
	int ret;

	if (!r->index.slots && (ret = resolved_init(r)))
		return ret;
	if ((ret = resolved_set_procs(r, procs, ntargets)))
		return ret;
	while (hmap_next(&p->counts, &it, (const void **)&k, &val)) {
		const struct stack_frames *sf = profile_stack(p, k->stack_id);

		if (!sf || k->target >= ntargets || !targets[k->target])
			continue;
		ret = resolve_one(r, k, (uintptr_t)*val, sf, targets[k->target], sym, o);
		if (ret)
			return ret;
		if (o->row)
			o->row(o->ctx, k, r->nsamples - 1);
	}
	return 0;
}

static void unref_stack(struct profile *p, uint64_t id, uint64_t *dead, size_t *ndead)
{
	void **slot = hmap_get(&p->stacks, &id);
	struct stack_frames *sf;

	if (!slot)
		return;
	sf = *slot;
	if (sf->refs && --sf->refs)
		return;
	dead[(*ndead)++] = id;	/* freed by profile_release(), when it is safe */
}

int profile_release(struct profile *p, uint64_t id)
{
	void **slot = hmap_get(&p->stacks, &id);
	struct stack_frames *sf;

	if (!slot)
		return 0;
	sf = *slot;
	if (sf->refs)
		return 0;
	hmap_del(&p->stacks, &id);
	free_stack(sf);
	return 1;
}

int profile_freeze(struct profile *p, struct target *t, struct symbols *sym,
		   const struct resolve_opts *o, struct resolved *frozen,
		   uint64_t **dead, size_t *ndead)
{
	struct agg_key *keys;
	uint64_t *counts;
	const struct agg_key *k;
	size_t it = 0, n = 0, i, row = 0;
	void **val;
	int ret = 0;

	*dead = NULL;
	*ndead = 0;
	keys = malloc((p->counts.len + 1) * sizeof(*keys));
	counts = malloc((p->counts.len + 1) * sizeof(*counts));
	*dead = malloc((p->counts.len + 1) * sizeof(**dead));
	if (!keys || !counts || !*dead) {
		free(keys);
		free(counts);
		return -ENOMEM;
	}
	while (hmap_next(&p->counts, &it, (const void **)&k, &val)) {
		if (k->target != t->id)
			continue;
		keys[n] = *k;
		counts[n++] = (uintptr_t)*val;
	}
	for (i = 0; i < n; i++) {
		const struct stack_frames *sf = profile_stack(p, keys[i].stack_id);

		if (sf && !ret) {
			ret = resolve_one(frozen, &keys[i], counts[i], sf, t, sym, o);
			if (!ret)
				row = resolved_merge_last(frozen, o->show_pids || o->threads,
							  o->threads);
			if (!ret && o->row)
				o->row(o->ctx, &keys[i], row);
		}
		hmap_del(&p->counts, &keys[i]);
		unref_stack(p, keys[i].stack_id, *dead, ndead);
	}
	free(keys);
	free(counts);
	return ret;
}
