/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Aggregation: (process, thread, stack id, flags) -> count, and the frames
 * of every stack id the BPF side has sent. profile_resolve() and
 * profile_freeze() symbolize it into the writers' model
 * (output/model.h): the one place that maps the BPF ABI onto it.
 *
 * Errors: 0 (or a count) on success, a negative errno on failure.
 */
#ifndef TB_PROFILE_H
#define TB_PROFILE_H

#include <stdint.h>
#include "hmap.h"
#include "native.h"
#include "output/model.h"
#include "symbols.h"
#include "tachyon.h"
#include "target.h"

struct task_chain;

/*
 * --native: a stack's native callers (the record's addresses but the first:
 * the BPF side's stack id covers these) and the merged stack for each leaf
 * pc its samples came with (the leaf is in the aggregation key).
 */
struct stack_native {
	int32_t nips;		/* callers; -1: no native stack was captured */
	uint64_t *ips;		/* callers, innermost first */
	uint8_t *entry;		/* per Python frame: 1 if TB_CODE_ENTRY was set */
	struct hmap plans;	/* leaf pc -> struct native_plan * (owned) */
};

struct stack_frames {
	uint32_t depth;
	uint32_t refs;		/* aggregation keys that use it */
	struct task_chain *tasks;	/* --async-aware: the tasks it ran in, or NULL */
	uint64_t exc_type;	/* --mode exception: the exception's type object, or 0 */
	struct stack_native *native;	/* --native: its native part, or NULL */
	struct tb_frame frames[];	/* leaf first (TB_CODE_ENTRY bits cleared) */
};

struct agg_key {
	uint32_t target;
	uint32_t tid;
	uint64_t stack_id;
	uint32_t flags;		/* enum tb_sample_flags */
	int32_t kstack;		/* kernel stack id, < 0 if none */
	uint64_t leaf;		/* --native: the sampled pc (tb_sample.leaf), 0 if none */
};

struct profile {
	struct hmap stacks;	/* stack id -> struct stack_frames * */
	struct hmap counts;	/* struct agg_key -> count */
	uint64_t samples;	/* counted into `counts` */
	/* --async-aware: stack id -> struct task_chain * whose stack record
	 * has not come yet (records of other CPUs may come in between) */
	struct hmap pending_tasks;
};

struct resolve_opts {
	int full_paths;
	int line_mode;	/* enum frame_lines */
	int opcodes;	/* enum frame_opcodes */
	int threads;		/* a root frame "thread TID NAME" */
	int gc_frames;		/* a "<GC>" leaf on samples taken during a collection */
	int proc_root;		/* a root frame naming the process */
	int show_pids;		/* ... with its pid */
	/* Optional: the name of a thread; kernel frame names of a stack id. */
	const char *(*thread_name)(void *ctx, uint32_t target, uint32_t tid);
	int (*kernel_frames)(void *ctx, int32_t kstack, const char **names, int max);
	/* Optional (--timeline): the row of r a key was resolved into. */
	void (*row)(void *ctx, const struct agg_key *k, size_t row);
	/* --mode exception: the name of a target's exception type, or NULL. */
	const char *(*exc_name)(void *ctx, uint32_t target, uint64_t type);
	void *ctx;
};

int profile_init(struct profile *p);
void profile_free(struct profile *p);
/* --async-aware: the chain of a TB_REC_TASKS record, for the stack record
 * of the same id that follows it (owned by the profile from now on). */
void profile_pending_tasks(struct profile *p, uint64_t id, struct task_chain *c);
/* Keep the frames of a TB_REC_STACK record (first copy wins). */
int profile_add_stack(struct profile *p, const struct tb_stack *rec, size_t size);
const struct stack_frames *profile_stack(const struct profile *p, uint64_t stack_id);
/* --native: the native callers of rec's stack (copied; n < 0: none
 * captured), and which of its frames were marked TB_CODE_ENTRY. */
int profile_set_native(struct profile *p, const struct tb_stack *rec, const uint64_t *callers,
		       int32_t n);
/* --native: sf's Python frames into py, their TB_CODE_ENTRY bits set again. */
void profile_entry_frames(const struct stack_frames *sf, struct tb_frame *py);
/* --native: the merged stack of sf with this leaf pc, NULL if not made yet. */
const struct native_plan *profile_native_plan(const struct stack_frames *sf, uint64_t leaf);
/* --native: keep plan as stack_id's with this leaf (owned by the profile
 * from now on, kept or not). */
int profile_add_plan(struct profile *p, uint64_t stack_id, uint64_t leaf,
		     struct native_plan *plan);
/* Count one sample. Returns 1 if the key is new, 0 if not, -ENOMEM. */
int profile_count(struct profile *p, const struct agg_key *k, uint64_t n);
/* Symbolize every counted sample and add it to r. procs[i] describes target
 * id i (targets[i] may be NULL once its samples have been frozen). */
int profile_resolve(struct profile *p, struct target *const *targets, uint32_t ntargets,
		    const struct rproc *procs, struct symbols *sym,
		    const struct resolve_opts *o, struct resolved *r);
/*
 * A process is gone: move its samples, symbolized, into `frozen` (identical
 * rows merged; pids and tids kept only when the options show them), drop
 * them here, and return the stack ids nobody uses any more (*dead, malloc'd).
 * Their frames stay until profile_release().
 */
int profile_freeze(struct profile *p, struct target *t, struct symbols *sym,
		   const struct resolve_opts *o, struct resolved *frozen,
		   uint64_t **dead, size_t *ndead);
/* Free the frames of stack id if no sample uses them; 1 if freed. */
int profile_release(struct profile *p, uint64_t id);

#endif
