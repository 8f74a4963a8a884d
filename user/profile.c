// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"

#define LABEL_MAX 8192

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

static size_t append(char *buf, size_t pos, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (pos + n + 2 > len)
		n = len > pos + 2 ? len - pos - 2 : 0;
	memcpy(buf + pos, s, n);
	pos += n;
	buf[pos] = 0;
	return pos;
}

/* Root first: frames are stored leaf first. */
static char *fold_one(const struct agg_key *k, const struct stack_frames *sf,
		      struct target *t, struct symbols *sym, const struct fold_opts *o)
{
	size_t cap = 4096, pos = 0;
	char label[LABEL_MAX];
	char *buf = malloc(cap);
	uint32_t i;

	if (!buf)
		return NULL;
	buf[0] = 0;
	if (k->flags & TB_SF_TRUNCATED)
		pos = append(buf, pos, cap, "[truncated];");
	else if (k->flags & TB_SF_PARTIAL)
		pos = append(buf, pos, cap, "[partial];");
	for (i = sf->depth; i-- > 0;) {
		const struct tb_frame *f = &sf->frames[i];

		symbols_label(symbols_get(sym, t, f), f, t, o->full_paths, label, sizeof(label));
		if (pos + strlen(label) + 2 >= cap) {
			char *nb;

			cap = (pos + strlen(label) + 2) * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		pos = append(buf, pos, cap, label);
		if (i)
			pos = append(buf, pos, cap, ";");
	}
	if (pos && buf[pos - 1] == ';')
		buf[--pos] = 0;
	return buf;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack,
		      ((const struct folded_line *)b)->stack);
}

void folded_merge(struct folded *f)
{
	size_t i, j = 0;

	if (!f->n)
		return;
	qsort(f->v, f->n, sizeof(f->v[0]), cmp_line);
	for (i = 1; i < f->n; i++) {
		if (!strcmp(f->v[i].stack, f->v[j].stack)) {
			f->v[j].count += f->v[i].count;
			free(f->v[i].stack);
		} else {
			f->v[++j] = f->v[i];
		}
	}
	f->n = j + 1;
}

int profile_fold(struct profile *p, struct target *const *targets, uint32_t ntargets,
		 struct symbols *sym, const struct fold_opts *o, struct folded *out)
{
	const struct agg_key *k;
	size_t it = 0;
	void **val;

	memset(out, 0, sizeof(*out));
	out->v = calloc(p->counts.len + 1, sizeof(out->v[0]));
	if (!out->v)
		return -1;
	while (hmap_next(&p->counts, &it, (const void **)&k, &val)) {
		const struct stack_frames *sf = profile_stack(p, k->stack_id);
		struct folded_line *l = &out->v[out->n];

		if (!sf || k->target >= ntargets)
			continue;
		l->stack = fold_one(k, sf, targets[k->target], sym, o);
		if (!l->stack)
			return -1;
		l->count = (uintptr_t)*val;
		out->total += l->count;
		out->n++;
	}
	folded_merge(out);
	return 0;
}

void folded_free(struct folded *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		free(f->v[i].stack);
	free(f->v);
	memset(f, 0, sizeof(*f));
}
