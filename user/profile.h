/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Aggregation: (process, thread, stack id, flags) -> count, and the frames
 * of every stack id the BPF side has sent. Folding turns it into
 * "frame;frame;frame count" lines for the writers.
 */
#ifndef TB_PROFILE_H
#define TB_PROFILE_H

#include <stdint.h>
#include "hmap.h"
#include "symbols.h"
#include "tachyon.h"
#include "target.h"

struct stack_frames {
	uint32_t depth;
	struct tb_frame frames[];	/* leaf first */
};

struct agg_key {
	uint32_t target;
	uint32_t tid;
	uint64_t stack_id;
	uint32_t flags;
	uint32_t pad;
};

struct profile {
	struct hmap stacks;	/* stack id -> struct stack_frames * */
	struct hmap counts;	/* struct agg_key -> count */
	uint64_t samples;	/* counted into `counts` */
};

struct folded_line {
	char *stack;
	uint64_t count;
};

struct folded {
	struct folded_line *v;
	size_t n;
	uint64_t total;
};

struct fold_opts {
	int full_paths;
};

int profile_init(struct profile *p);
void profile_free(struct profile *p);
/* Keep the frames of a TB_REC_STACK record (first copy wins). */
int profile_add_stack(struct profile *p, const struct tb_stack *rec, size_t size);
const struct stack_frames *profile_stack(const struct profile *p, uint64_t stack_id);
/* Count one sample. Returns 1 if the key is new, 0 if not, -1 on ENOMEM. */
int profile_count(struct profile *p, const struct agg_key *k, uint64_t n);
/* Labels every sample's frames; identical label stacks are merged and sorted. */
int profile_fold(struct profile *p, struct target *const *targets, uint32_t ntargets,
		 struct symbols *sym, const struct fold_opts *o, struct folded *out);
void folded_free(struct folded *f);
/* Sort by stack and merge equal lines (exposed for the writers' tests). */
void folded_merge(struct folded *f);

#endif
