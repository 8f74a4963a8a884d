// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "profile.h"

int profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
	if (hmap_init(&p->stacks, sizeof(uint64_t)))
		return -1;
	return hmap_init(&p->counts, sizeof(struct agg_key));
}

void profile_free(struct profile *p)
{
	size_t it = 0;
	void **val;

	while (hmap_next(&p->stacks, &it, NULL, &val))
		free(*val);
	hmap_free(&p->stacks);
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
		return -1;
	slot = hmap_put(&p->stacks, &rec->stack_id, &added);
	if (!slot)
		return -1;
	if (!added)
		return 0;
	bytes = depth * sizeof(struct tb_frame);
	sf = malloc(sizeof(*sf) + bytes);
	if (!sf) {
		hmap_del(&p->stacks, &rec->stack_id);
		return -1;
	}
	sf->depth = depth;
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
		return -1;
	*slot = (void *)((uintptr_t)*slot + n);
	p->samples += n;
	return added;
}

/* Interning key: frames are equal when name, file and line are. */
struct frame_key {
	uint64_t hash;
	int32_t line;
	int32_t pad;
};

static struct rframe *intern(struct resolved *r, const char *name, const char *file,
			     int32_t line, int32_t firstlineno)
{
	struct frame_key k = { .line = line };
	struct rframe *f, **grown;
	size_t nl = strlen(name);
	void **slot;
	int added;

	/* Hash both strings; collisions are resolved by comparing them below. */
	k.hash = hash_bytes(name, nl) * 31 + hash_bytes(file, strlen(file));
	for (;;) {
		slot = hmap_put(&r->index, &k, &added);
		if (!slot)
			return NULL;
		if (added)
			break;
		f = *slot;
		if (!strcmp(f->name, name) && !strcmp(f->file, file))
			return f;
		k.pad++;	/* a different frame with the same hash: probe on */
	}
	f = calloc(1, sizeof(*f));
	grown = realloc(r->frames, (r->nframes + 1) * sizeof(*grown));
	if (!f || !grown) {
		free(f);
		hmap_del(&r->index, &k);
		return NULL;
	}
	r->frames = grown;
	f->name = strdup(name);
	f->file = strdup(file);
	f->line = line;
	f->firstlineno = firstlineno;
	f->id = (uint32_t)r->nframes;
	r->frames[r->nframes++] = f;
	*slot = f;
	return f->name && f->file ? f : NULL;
}

static const char *marker(uint32_t flags)
{
	if (flags & TB_SF_TRUNCATED)
		return "[truncated]";
	if (flags & TB_SF_PARTIAL)
		return "[partial]";
	return NULL;
}

#define MAX_KFRAMES 127

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
		if (!(s->frames[s->depth++] = intern(r, name, "", 0, 0)))
			return -1;
	}
	if (o->threads) {
		const char *tn = o->thread_name ? o->thread_name(o->ctx, k->target, k->tid) : NULL;

		snprintf(name, sizeof(name), "thread %u%s%s", k->tid, tn ? " " : "", tn ? tn : "");
		if (!(s->frames[s->depth++] = intern(r, name, "", 0, 0)))
			return -1;
	}
	if (mark && !(s->frames[s->depth++] = intern(r, mark, "", 0, 0)))
		return -1;
	return 0;
}

/* Frames below the Python leaf: <GC>, then the kernel stack, outermost first. */
static int suffix_frames(struct resolved *r, struct rsample *s, const struct agg_key *k,
			 const struct resolve_opts *o)
{
	const char *kf[MAX_KFRAMES];
	char name[256];
	int n = 0;

	if (o->gc_frames && (k->flags & TB_SF_GC) &&
	    !(s->frames[s->depth++] = intern(r, "<GC>", "", 0, 0)))
		return -1;
	if (k->kstack >= 0 && o->kernel_frames)
		n = o->kernel_frames(o->ctx, k->kstack, kf, MAX_KFRAMES);
	while (n-- > 0) {
		snprintf(name, sizeof(name), "%s [k]", kf[n]);
		if (!(s->frames[s->depth++] = intern(r, name, "", 0, 0)))
			return -1;
	}
	return 0;
}

static int resolve_one(struct resolved *r, const struct agg_key *k, uint64_t count,
		       const struct stack_frames *sf, struct target *t,
		       struct symbols *sym, const struct resolve_opts *o)
{
	struct rsample *s = &r->samples[r->nsamples];
	uint32_t i;

	s->frames = calloc(sf->depth + 4 + MAX_KFRAMES, sizeof(*s->frames));
	if (!s->frames || prefix_frames(r, s, k, o, t))
		return -1;
	for (i = sf->depth; i-- > 0;) {
		const struct tb_frame *f = &sf->frames[i];
		struct sym_frame sf2;

		symbols_frame(symbols_get(sym, t, f), f, t, o->full_paths, &sf2);
		if (sf2.hidden)
			continue;
		s->frames[s->depth] = intern(r, sf2.name, sf2.file, sf2.line, sf2.firstlineno);
		if (!s->frames[s->depth++])
			return -1;
	}
	if (suffix_frames(r, s, k, o))
		return -1;
	s->proc = t->id;
	s->tid = k->tid;
	s->flags = k->flags;
	s->count = count;
	r->total += count;
	r->nsamples++;
	return 0;
}

int profile_resolve(struct profile *p, struct target *const *targets, uint32_t ntargets,
		    struct symbols *sym, const struct resolve_opts *o, struct resolved *r)
{
	const struct agg_key *k;
	size_t it = 0;
	uint32_t i;
	void **val;

	if (hmap_init(&r->index, sizeof(struct frame_key)))
		return -1;
	r->samples = calloc(p->counts.len + 1, sizeof(*r->samples));
	r->procs = calloc(ntargets + 1, sizeof(*r->procs));
	if (!r->samples || !r->procs)
		return -1;
	for (i = 0; i < ntargets; i++) {
		r->procs[i].pid = targets[i]->pid;
		snprintf(r->procs[i].version, sizeof(r->procs[i].version), "%s", targets[i]->version);
		snprintf(r->procs[i].name, sizeof(r->procs[i].name), "%s", targets[i]->name);
	}
	r->nprocs = ntargets;
	while (hmap_next(&p->counts, &it, (const void **)&k, &val)) {
		const struct stack_frames *sf = profile_stack(p, k->stack_id);

		if (!sf || k->target >= ntargets)
			continue;
		if (resolve_one(r, k, (uintptr_t)*val, sf, targets[k->target], sym, o))
			return -1;
	}
	hmap_free(&r->index);
	return 0;
}

void resolved_free(struct resolved *r)
{
	size_t i;

	for (i = 0; i < r->nsamples; i++)
		free(r->samples[i].frames);
	for (i = 0; i < r->nframes; i++) {
		free(r->frames[i]->name);
		free(r->frames[i]->file);
		free(r->frames[i]);
	}
	free(r->samples);
	free(r->frames);
	free(r->procs);
	hmap_free(&r->index);
	memset(r, 0, sizeof(*r));
}
