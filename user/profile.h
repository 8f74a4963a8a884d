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
	uint32_t refs;		/* aggregation keys that use it */
	struct tb_frame frames[];	/* leaf first */
};

struct agg_key {
	uint32_t target;
	uint32_t tid;
	uint64_t stack_id;
	uint32_t flags;
	int32_t kstack;		/* kernel stack id, < 0 if none */
};

struct profile {
	struct hmap stacks;	/* stack id -> struct stack_frames * */
	struct hmap counts;	/* struct agg_key -> count */
	uint64_t samples;	/* counted into `counts` */
};

/*
 * The resolved profile every writer takes: frames interned (same name, file
 * and line = same frame), samples as root-first frame lists with counts.
 */
/* A frame's line with --nolineno: labels show "name (file)". */
#define RFRAME_NO_LINE	(-1)

struct rframe {
	char *name;		/* qualname; "[truncated]" etc. for marker frames */
	char *file;		/* "" for marker frames and unknown code */
	int32_t line;		/* RFRAME_NO_LINE with --nolineno */
	int32_t firstlineno;
	uint32_t id;		/* index in resolved.frames */
};

struct rproc {
	int32_t pid;
	char version[32];	/* "3.13.0" */
	char name[64];		/* script, module or executable */
	/* Its working directory as it sees it, ending in '/' (file names are
	 * shortened against it); "" if unknown or longer than this. */
	char cwd[256];
};

struct rsample {
	uint32_t proc;		/* index in resolved.procs */
	uint32_t tid;
	uint32_t flags;		/* enum tb_sample_flags */
	uint32_t depth;
	uint64_t count;
	struct rframe **frames;	/* root first */
	char *tname;		/* the thread's name (Python's, else comm), or NULL */
};

struct resolved {
	struct rsample *samples;
	size_t nsamples;
	struct rframe **frames;
	size_t nframes;
	struct rproc *procs;
	size_t nprocs;
	uint64_t total;		/* sum of counts */
	/* what the counts mean */
	const char *event;	/* "cpu-clock" */
	double rate;		/* samples per second per CPU, as sampled (-F, or HZ/N ticks) */
	const char *mode;	/* "cpu", "wall", "gil"; NULL: unknown */
	const char *rate_text;	/* how the rate was asked and used: "-F 99", "-c 1000000" */
	double start_unix;	/* wall-clock start, seconds */
	double duration_s;
	struct hmap index;	/* (name, file, line) -> rframe, while building */
	size_t samples_cap;
	struct hmap dedup;	/* frozen profiles: identical samples share a row */
};

/* What a frame's line is: per line (default), per function, none. */
enum frame_lines {
	LINES_EACH = 0,
	LINES_FUNCTION,		/* --function: the function's first line */
	LINES_NONE,		/* --nolineno: no line, "name (file)" */
};

struct resolve_opts {
	int full_paths;
	int line_mode;	/* enum frame_lines */
	int threads;		/* a root frame "thread TID NAME" */
	int gc_frames;		/* a "<GC>" leaf on samples taken during a collection */
	int proc_root;		/* a root frame naming the process */
	int show_pids;		/* ... with its pid */
	/* Optional: the name of a thread; kernel frame names of a stack id. */
	const char *(*thread_name)(void *ctx, uint32_t target, uint32_t tid);
	int (*kernel_frames)(void *ctx, int32_t kstack, const char **names, int max);
	void *ctx;
};

int profile_init(struct profile *p);
void profile_free(struct profile *p);
/* Keep the frames of a TB_REC_STACK record (first copy wins). */
int profile_add_stack(struct profile *p, const struct tb_stack *rec, size_t size);
const struct stack_frames *profile_stack(const struct profile *p, uint64_t stack_id);
/* Count one sample. Returns 1 if the key is new, 0 if not, -1 on ENOMEM. */
int profile_count(struct profile *p, const struct agg_key *k, uint64_t n);
/* An empty resolved profile to add to. */
int resolved_init(struct resolved *r);
/* A deep copy of src (metadata included) that can be added to. */
int resolved_copy(const struct resolved *src, struct resolved *dst);
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
void resolved_free(struct resolved *r);

#endif
