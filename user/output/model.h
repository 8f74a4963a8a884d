/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The resolved profile every writer, top and the summary take: frames
 * interned (same name, file and line = same frame), samples as root-first
 * frame lists with counts. It knows nothing of the BPF ABI or of the
 * targets: user/profile.c is the one bridge that fills it.
 *
 * Errors: functions returning int give 0 (or a count) on success and a
 * negative errno on failure; those returning a pointer give NULL with
 * errno set.
 */
#ifndef TB_OUTPUT_MODEL_H
#define TB_OUTPUT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "hmap.h"

/* A frame's line with --nolineno: labels show "name (file)". */
#define RFRAME_NO_LINE	(-1)

/* What a frame's line is: per line (default), per function, none. */
enum frame_lines {
	LINES_EACH = 0,
	LINES_FUNCTION,		/* --function: the function's first line */
	LINES_NONE,		/* --nolineno: no line, "name (file)" */
};

/* Which frames carry the instruction they were executing (--opcodes). */
enum frame_opcodes {
	OPCODES_NONE = 0,
	OPCODES_LEAF,		/* --opcodes: the leaf frame */
	OPCODES_ALL,		/* --opcodes=all: every Python frame */
};

/* What was true when a sample was taken (the model's own names). */
enum rsample_flags {
	RS_TRUNCATED = 1 << 0,	/* the stack was deeper than the walker goes */
	RS_PARTIAL = 1 << 1,	/* a frame could not be read: the stack ends early */
	RS_GIL = 1 << 2,	/* the thread held the GIL */
	RS_GIL_TAKEN = 1 << 3,	/* some thread held the GIL */
	RS_GC = 1 << 4,		/* the garbage collector was running */
	RS_EXC = 1 << 5,	/* an exception was being raised */
	RS_OFFCPU = 1 << 6,	/* time off CPU (wall mode) */
};

struct rframe {
	char *name;		/* qualname; "[truncated]" etc. for marker frames */
	char *file;		/* "" for marker frames and unknown code */
	int32_t line;		/* RFRAME_NO_LINE with --nolineno */
	int32_t firstlineno;
	uint32_t id;		/* index in resolved.frames */
	/* --opcodes: the instruction executing ("BINARY_OP_ADD_INT"), part of
	 * the frame's identity; NULL without --opcodes or when unknown. */
	char *op;
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
	uint32_t flags;		/* enum rsample_flags */
	uint32_t depth;
	uint64_t count;
	struct rframe **frames;	/* root first */
	char *tname;		/* the thread's name (Python's, else comm), or NULL */
};

/*
 * A thread of the time-ordered samples (--timeline). With --async-aware in
 * wall mode a thread also has one lane per asyncio task that waited while
 * it was off CPU (the tasks wait at the same time, so each needs a track
 * of its own): the same proc and tid, lane 1, 2, ... in the order they
 * appear in resolved.threads, after the thread's own (lane 0).
 */
struct rthread {
	uint32_t proc;		/* index in resolved.procs */
	uint32_t tid;
	char *name;		/* Python's name, else comm; NULL if unknown */
	uint32_t lane;		/* 0: the thread itself; else a waiting task's */
};

/*
 * One sample in time order (--timeline): which row it counted in, which
 * thread took it, when. A wall-mode off-CPU sample (its row RS_OFFCPU) is
 * an interval, [t_ns, end_ns), that `weight` periods stand for.
 */
struct rtick {
	uint32_t sample;	/* index in resolved.samples: frames and flags */
	uint32_t thread;	/* index in resolved.threads */
	uint64_t t_ns;		/* taken at, ns since the start of the run */
	uint64_t end_ns;	/* off CPU: when the thread came back; else t_ns */
	uint64_t weight;	/* sample periods: 1 on CPU */
	uint32_t tid;
	uint32_t cpu;
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
	/* --timeline: every sample in time order (sorted by t_ns), summing to
	 * total; the threads they name. nticks = 0 and timeline = 0 without. */
	int timeline;
	struct rtick *ticks;
	size_t nticks;
	struct rthread *threads;
	size_t nthreads;
	struct hmap index;	/* (name, file, line) -> rframe, while building */
	size_t samples_cap;
	struct hmap dedup;	/* frozen profiles: identical samples share a row */
};

/* An empty resolved profile to add to. */
int resolved_init(struct resolved *r);
/* A deep copy of src (metadata included) that can be added to. */
int resolved_copy(const struct resolved *src, struct resolved *dst);
void resolved_free(struct resolved *r);
/* The frame (name, file, line), added if new. NULL with errno set. */
struct rframe *resolved_intern(struct resolved *r, const char *name, const char *file,
			       int32_t line, int32_t firstlineno);
/* The same with the instruction executing (op may be NULL: as above). */
struct rframe *resolved_intern_op(struct resolved *r, const char *name, const char *file,
				  int32_t line, int32_t firstlineno, const char *op);
/* A zeroed sample at the end (not yet counted in nsamples); NULL, ENOMEM. */
struct rsample *resolved_slot(struct resolved *r);
/* The process table: a copy of procs[0..n). */
int resolved_set_procs(struct resolved *r, const struct rproc *procs, uint32_t n);
/*
 * Merge the last sample into an earlier one with the same frames and flags
 * (and process if by_proc, thread if by_thread): frozen profiles keep one
 * row per stack the output can tell apart. Returns the row it is now.
 */
size_t resolved_merge_last(struct resolved *r, int by_proc, int by_thread);
/*
 * What the writers rely on: every sample's frames are the profile's own
 * (r->frames[f->id] == f). 0, or -EINVAL.
 */
int resolved_check(const struct resolved *r);

/* Ticks in time order, then by thread, then row (qsort): < 0, 0, > 0. */
int rtick_cmp(const void *a, const void *b);
/* Each thread's lane: how many threads of the same proc and tid come
 * before it in r->threads (see struct rthread). 0 or -ENOMEM. */
int resolved_number_lanes(struct resolved *r);
/* The same, and each thread's own track (its lane 0) into base[i]. */
int resolved_lane_bases(struct resolved *r, int64_t *base);
/* Bound the lanes (output/lanes.c): per thread, the tasks that waited
 * longest keep theirs, the others share pooled lanes. Ticks sorted by
 * time, lanes numbered. 0 or -ENOMEM (then no ticks are left). */
int resolved_pool_lanes(struct resolved *r);

/* Frames ordered by name, then file (strcmp): < 0, 0, > 0. */
int rframe_cmp_place(const struct rframe *x, const struct rframe *y);

/* Frames grouped into functions: same name, file and first line. */
struct func_table {
	uint32_t *of_frame;		/* rframe id -> function index */
	const struct rframe **funcs;	/* a frame of each function, sorted by name, file */
	size_t n;
};

int funcs_build(const struct resolved *r, struct func_table *ft);
void funcs_free(struct func_table *ft);

/* A function's samples: as the leaf (self), anywhere on the stack (total). */
struct func_count {
	uint64_t self;
	uint64_t total;
};

/*
 * Self and total of each function of ft into counts[0..ft->n) (zeroed
 * first): a function is counted once per sample however deep it recurses.
 * 0 or -ENOMEM.
 */
int resolved_function_totals(const struct resolved *r, const struct func_table *ft,
			     struct func_count *counts);

#endif
