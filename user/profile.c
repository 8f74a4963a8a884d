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
	sf->refs = 0;
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
	if (added) {
		void **st = hmap_get(&p->stacks, &k->stack_id);

		if (st)
			((struct stack_frames *)*st)->refs++;
	}
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
		if (!(s->frames[s->depth++] = intern(r, name, "", 0, 0)))
			return -1;
	}
	if (o->threads) {
		const char *tn = s->tname;

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
	struct rsample *s;
	const char *tn;
	uint32_t i;

	if (r->nsamples == r->samples_cap) {
		size_t cap = r->samples_cap ? r->samples_cap * 2 : 256;
		struct rsample *g = realloc(r->samples, cap * sizeof(*g));

		if (!g)
			return -1;
		r->samples = g;
		r->samples_cap = cap;
	}
	s = &r->samples[r->nsamples];
	memset(s, 0, sizeof(*s));
	tn = o->thread_name ? o->thread_name(o->ctx, k->target, k->tid) : NULL;
	s->tname = tn ? strdup(tn) : NULL;
	s->frames = calloc(sf->depth + 4 + MAX_KFRAMES, sizeof(*s->frames));
	if (!s->frames || (tn && !s->tname) || prefix_frames(r, s, k, o, t)) {
		free(s->frames);
		free(s->tname);
		return -1;
	}
	for (i = sf->depth; i-- > 0;) {
		const struct tb_frame *f = &sf->frames[i];
		struct sym_frame sf2;

		symbols_frame(symbols_get(sym, t, f), f, t, o->full_paths, &sf2);
		if (sf2.hidden)
			continue;
		if (o->line_mode == LINES_FUNCTION)
			sf2.line = sf2.firstlineno;
		else if (o->line_mode == LINES_NONE)
			sf2.line = RFRAME_NO_LINE;
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

int resolved_init(struct resolved *r)
{
	if (hmap_init(&r->index, sizeof(struct frame_key)))
		return -1;
	return hmap_init(&r->dedup, sizeof(uint64_t) * 2);
}

/* The frame table of dst rebuilt from src's, same ids. */
static int copy_frames(const struct resolved *src, struct resolved *dst)
{
	size_t i;

	for (i = 0; i < src->nframes; i++) {
		const struct rframe *f = src->frames[i];

		if (!intern(dst, f->name, f->file, f->line, f->firstlineno))
			return -1;
	}
	return 0;
}

int resolved_copy(const struct resolved *src, struct resolved *dst)
{
	size_t i;
	uint32_t j;

	dst->event = src->event;
	dst->rate = src->rate;
	dst->start_unix = src->start_unix;
	dst->duration_s = src->duration_s;
	if (resolved_init(dst) || copy_frames(src, dst))
		return -1;
	dst->samples = calloc(src->nsamples + 1, sizeof(*dst->samples));
	if (!dst->samples)
		return -1;
	dst->samples_cap = src->nsamples + 1;
	for (i = 0; i < src->nsamples; i++) {
		const struct rsample *a = &src->samples[i];
		struct rsample *b = &dst->samples[i];

		*b = *a;
		b->tname = a->tname ? strdup(a->tname) : NULL;
		b->frames = calloc(a->depth + 1, sizeof(*b->frames));
		if (!b->frames || (a->tname && !b->tname)) {
			free(b->frames);
			free(b->tname);
			return -1;
		}
		dst->nsamples++;
		for (j = 0; j < a->depth; j++)
			b->frames[j] = dst->frames[a->frames[j]->id];
	}
	dst->total = src->total;
	return 0;
}

static int set_procs(struct resolved *r, const struct rproc *procs, uint32_t n)
{
	struct rproc *g = realloc(r->procs, (n + 1) * sizeof(*g));

	if (!g)
		return -1;
	if (n)	/* procs may be NULL: no process found yet (-s, -- CMD) */
		memcpy(g, procs, n * sizeof(*g));
	r->procs = g;
	r->nprocs = n;
	return 0;
}

int profile_resolve(struct profile *p, struct target *const *targets, uint32_t ntargets,
		    const struct rproc *procs, struct symbols *sym,
		    const struct resolve_opts *o, struct resolved *r)
{
	const struct agg_key *k;
	size_t it = 0;
	void **val;

	if (!r->index.slots && resolved_init(r))
		return -1;
	if (set_procs(r, procs, ntargets))
		return -1;
	while (hmap_next(&p->counts, &it, (const void **)&k, &val)) {
		const struct stack_frames *sf = profile_stack(p, k->stack_id);

		if (!sf || k->target >= ntargets || !targets[k->target])
			continue;
		if (resolve_one(r, k, (uintptr_t)*val, sf, targets[k->target], sym, o))
			return -1;
	}
	return 0;
}

/* The row a frozen sample merges into: same frames and flags, and the same
 * process and thread only where the output can tell them apart. */
static uint64_t row_hash(const struct rsample *s, const struct resolve_opts *o)
{
	uint64_t h = hash_bytes(&s->flags, sizeof(s->flags));
	uint32_t i;

	if (o->show_pids || o->threads)
		h = h * 31 + s->proc;
	if (o->threads)
		h = h * 31 + s->tid;
	for (i = 0; i < s->depth; i++)
		h = h * 1000003 + s->frames[i]->id;
	return h;
}

static int same_row(const struct rsample *a, const struct rsample *b, const struct resolve_opts *o)
{
	if (a->flags != b->flags || a->depth != b->depth)
		return 0;
	if ((o->show_pids || o->threads) && a->proc != b->proc)
		return 0;
	if (o->threads && a->tid != b->tid)
		return 0;
	return !memcmp(a->frames, b->frames, a->depth * sizeof(a->frames[0]));
}

/* Merge the sample just added (the last one) into an identical row. */
static void dedup_last(struct resolved *r, const struct resolve_opts *o)
{
	struct rsample *s = &r->samples[r->nsamples - 1];
	uint64_t key[2] = { row_hash(s, o), 0 };
	void **slot;
	int added;

	for (;;) {
		slot = hmap_put(&r->dedup, key, &added);
		if (!slot)
			return;
		if (added) {
			*slot = (void *)(uintptr_t)r->nsamples;
			return;
		}
		if (same_row(&r->samples[(uintptr_t)*slot - 1], s, o))
			break;
		key[1]++;	/* a different row with the same hash */
	}
	r->samples[(uintptr_t)*slot - 1].count += s->count;
	free(s->frames);
	free(s->tname);
	r->nsamples--;
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
		return -1;
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
				dedup_last(frozen, o);
		}
		hmap_del(&p->counts, &keys[i]);
		unref_stack(p, keys[i].stack_id, *dead, ndead);
	}
	free(keys);
	free(counts);
	return ret;
}

void resolved_free(struct resolved *r)
{
	size_t i;

	for (i = 0; i < r->nsamples; i++) {
		free(r->samples[i].frames);
		free(r->samples[i].tname);
	}
	for (i = 0; i < r->nframes; i++) {
		free(r->frames[i]->name);
		free(r->frames[i]->file);
		free(r->frames[i]);
	}
	free(r->samples);
	free(r->frames);
	free(r->procs);
	hmap_free(&r->index);
	hmap_free(&r->dedup);
	memset(r, 0, sizeof(*r));
}
