/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One profiling run: its lifecycle (open the targets, start sampling, run
 * the event loop, resolve the profile, close) and a read-only snapshot of
 * its state for the views (stats, progress, top). What it is made of is
 * private to session.c: the registry of targets (targets.h), the samples
 * as they arrive (ingest.h), the -- command (child.h).
 */
#ifndef TB_SESSION_H
#define TB_SESSION_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "cfi_maps.h"
#include "cli.h"
#include "tachyon.h"

struct session;
struct resolved;

enum stop_reason {
	STOP_NONE,
	STOP_SIGNAL,
	STOP_DURATION,
	STOP_TARGETS_EXITED,
	STOP_PIPE_CLOSED,
	STOP_ERROR,
};

/* Counted by the sample ingest (ingest.c). */
struct ingest_counts {
	uint64_t received;		/* sample records read */
	uint64_t stacks;		/* stack records read */
	uint64_t count_keys;		/* in-kernel count entries read (distinct keys per interval) */
	uint64_t unknown_pid;		/* samples of a process no longer tracked */
	uint64_t missing_stack;		/* samples whose frames never arrived */
	uint64_t bad_records;
	uint64_t offcpu_final;		/* periods credited at the end (still blocked) */
	uint64_t offcpu_seeded;		/* threads found blocked, credited from the start */
	uint64_t tstates_seeded;	/* thread states entered in the BPF side's cache (seed_tstates) */
	uint64_t async_wait_credits;	/* --async-aware wall: off-CPU intervals given to waiting tasks */
	uint64_t async_wait_periods;	/* ... their periods, once per task (a task's own wall time) */
	uint64_t async_wait_copies;	/* ... of which past each interval's first task */
	uint64_t async_wait_kept;	/* event loop threads' intervals not read in time: */
	uint64_t async_wait_kept_periods;	/* ... their periods, under the loop's stack */
	uint64_t compactions;		/* live profiles folded (bounded memory) */
	uint64_t timeline_lost;		/* --timeline: samples counted but not timed (no memory) */
	uint64_t native_merged;		/* --native: stacks whose native frames were merged */
	uint64_t native_unmatched;	/* ... kept unmatched, marked */
	uint64_t native_bytes;		/* --native: symbol tables and names held now */
	uint64_t native_peak;		/* ... at most */
	uint64_t native_limit;		/* ... their bound (NATIVE_MEM_MAX) */
	uint64_t native_dropped;	/* ... files whose symbols were dropped past it */
};

struct session_stats {
	uint64_t bpf[TB_NR_COUNTERS];	/* summed per-CPU counters, read at the end */
	uint64_t run_ns, run_cnt;	/* kernel BPF run-time statistics */
	struct ingest_counts in;
	uint64_t proc_events;
	uint64_t processes;		/* targets profiled, all incarnations */
	double seconds;
	double target_cpu;		/* CPU seconds the targets used while sampled */
	int stopped_in_setup;		/* a signal came before sampling began */
	double start_unix;		/* wall clock at the start */
	int ncpus;			/* online CPUs sampled */
	int cfi_on;			/* --native's unwind tables were in use: */
	struct cfi_maps_stats cfi;	/* ... what they held and did */
};

/* The code-object cache, for -v and --stats. */
struct session_symstats {
	uint64_t lookups, reads, failures;
	uint64_t evicted;		/* dropped as unused */
	size_t cached;			/* held now */
};

/* What the views may know of a run: a copy, taken when asked. */
struct session_view {
	const struct options *opt;
	enum stop_reason stop;
	struct session_stats st;
	struct session_symstats sym;
	uint64_t samples;		/* counted so far (the live part of the profile) */
	uint32_t alive;			/* targets running now */
	uint32_t ntargets;		/* targets so far, all incarnations */
	int per_task;			/* perf events follow threads, not CPUs */
	int task_events;		/* per-thread events opened */
	const char *walker;		/* the BPF stack walker: sampler_walker() */
	/* A target still running (the last found), for a one-line title. */
	int32_t live_pid;		/* 0: none */
	char live_name[64];
	char live_version[32];
	const char *refused_command;	/* why the -- command's Python was refused, or NULL */
	int command_ended;		/* -- CMD exited on its own (not ended by us): */
	int command_status;		/* ... its wait status */
};

/*
 * SIGINT, SIGTERM and SIGHUP end a run cleanly: blocked from the start
 * (also during start-up), read by the event loop's signalfd. out: the set.
 */
void session_block_signals(sigset_t *out);
/* A run with these options: NULL with errno set (out of memory). */
struct session *session_new(const struct options *o);
/* Find the first targets: 0, or -errno after the one-line message. */
int session_open_targets(struct session *s);
/* Load and attach BPF; start -- CMD: 0, or -errno after the one-line message. */
int session_start(struct session *s);
/* Run until a stop condition; then stop sampling and drain. */
void session_run(struct session *s);
/* The symbolized profile, with the options' extra frames: 0 or -ENOMEM. */
int session_resolve(struct session *s, struct resolved *r);
/*
 * Mid-run: the kernel's counts read, then the records in the ring, so every
 * sample counted has its tick in (a few later ones too), as at the end.
 */
void session_sync(struct session *s);
/* The run's state now. */
void session_snapshot(const struct session *s, struct session_view *v);
/* The BPF counters now (a map read; the snapshot has those of the end). */
int session_counters(struct session *s, uint64_t c[TB_NR_COUNTERS]);
/* End the run at the loop's next round (a view's own reason to stop). */
void session_stop(struct session *s, enum stop_reason why);
/*
 * Hooks, set before session_start. tick: called from the loop every
 * `interval` seconds (live views, periodic pushes, progress). on_fd: an
 * extra fd (e.g. the terminal for `top`) and what to do when readable.
 */
void session_set_tick(struct session *s, void (*tick)(struct session *s, void *ctx),
		      void *ctx, double interval);
void session_watch_fd(struct session *s, int fd, void (*on_fd)(struct session *s, void *ctx),
		      void *ctx);
void session_free(struct session *s);

#endif
