// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "profile.h"

int profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
	if (hmap_init(&p->stacks, sizeof(uint64_t)) ||
	    hmap_init(&p->counts, sizeof(struct agg_key)))
		return -ENOMEM;
	return 0;
}

void profile_free(struct profile *p)
{
	hmap_free_values(&p->stacks, free);
	hmap_free(&p->counts);
}

int profile_add_stack(struct profile *p, const struct tb_stack *rec, size_t size)
{
	struct stack_frames *sf;
	uint32_t depth = rec->depth;
	size_t bytes;
	void **slot;
	int added;

	if (size < TB_STACK_HDR_SIZE || depth > TB_MAX_DEPTH ||
	    size < TB_STACK_HDR_SIZE + depth * sizeof(struct tb_frame))
		return -EINVAL;
	slot = hmap_put(&p->stacks, &rec->stack_id, &added);
	if (!slot)
		return -ENOMEM;
	if (!added)
		return 0;
	bytes = depth * sizeof(struct tb_frame);
	sf = malloc(sizeof(*sf) + bytes);
	if (!sf) {
		hmap_del(&p->stacks, &rec->stack_id);
		return -ENOMEM;
	}
	sf->depth = depth;
	sf->refs = 0;
	sf->exc_type = rec->exc_type;
	memcpy(sf->frames, rec->frames, bytes);
	*slot = sf;
	return 1;
}

const struct stack_frames *profile_stack(const struct profile *p, uint64_t stack_id)
{
	void **slot = hmap_get(&p->stacks, &stack_id);

	return slot ? *slot : NULL;
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

static int resolve_one(struct resolved *r, const struct agg_key *k, uint64_t count,
		       const struct stack_frames *sf, struct target *t,
		       struct symbols *sym, const struct resolve_opts *o)
{
	struct rsample *s;
	const char *tn;
	uint32_t i;

	s = resolved_slot(r);
	if (!s)
		return -ENOMEM;
	tn = o->thread_name ? o->thread_name(o->ctx, k->target, k->tid) : NULL;
	s->tname = tn ? strdup(tn) : NULL;
	s->frames = calloc(sf->depth + 5 + MAX_KFRAMES, sizeof(*s->frames));
	if (!s->frames || (tn && !s->tname) || prefix_frames(r, s, k, o, t)) {
		free(s->frames);
		free(s->tname);
		return -ENOMEM;
	}
	for (i = sf->depth; i-- > 0;) {
		const struct tb_frame *f = &sf->frames[i];
		const struct code_info *ci = symbols_get(sym, t, f);
		const char *op = NULL;
		struct sym_frame sf2;
		char opbuf[16];

		symbols_frame(ci, f, t, o->full_paths, &sf2);
		if (sf2.hidden)
			continue;
		if (o->line_mode == LINES_FUNCTION)
			sf2.line = sf2.firstlineno;
		else if (o->line_mode == LINES_NONE)
			sf2.line = RFRAME_NO_LINE;
		if (o->opcodes == OPCODES_ALL || (o->opcodes == OPCODES_LEAF && !i))
			op = symbols_opcode(ci, f, t, opbuf, sizeof(opbuf));
		s->frames[s->depth] = resolved_intern_op(r, sf2.name, sf2.file, sf2.line,
							 sf2.firstlineno, op);
		if (!s->frames[s->depth++])
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
	free(sf);
	return 1;
}

int profile_freeze(struct profile *p, struct target *t, struct symbols *sym,
		   const struct resolve_opts *o, struct resolved *frozen,
		   uint64_t **dead, size_t *ndead)
{
	struct agg_key *keys;
	uint64_t *counts;
	const struct agg_key *k;
	size_t it = 0, n = 0, i;
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
				resolved_merge_last(frozen, o->show_pids || o->threads,
						    o->threads);
		}
		hmap_del(&p->counts, &keys[i]);
		unref_stack(p, keys[i].stack_id, *dead, ndead);
	}
	free(keys);
	free(counts);
	return ret;
}
