/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One profiling run: targets, the BPF sampler, the event loop that consumes
 * the ring buffer (epoll: ring buffer, signals, target exits, a closed
 * stdout), aggregation and symbolization as samples arrive.
 */
#ifndef TB_SESSION_H
#define TB_SESSION_H

#include <signal.h>
#include <stdint.h>
#include "cli.h"
#include "hmap.h"
#include "ksyms.h"
#include "profile.h"
#include "pythreads.h"
#include "sampler.h"
#include "symbols.h"
#include "target.h"
#include "targets.h"

enum stop_reason {
	STOP_NONE,
	STOP_SIGNAL,
	STOP_DURATION,
	STOP_TARGETS_EXITED,
	STOP_PIPE_CLOSED,
	STOP_ERROR,
};

struct session_stats {
	uint64_t bpf[TB_NR_COUNTERS];	/* summed per-CPU counters */
	uint64_t run_ns, run_cnt;	/* kernel BPF run-time statistics */
	uint64_t received;		/* sample records read */
	uint64_t stacks;		/* stack records read */
	uint64_t unknown_pid;		/* samples of a process no longer tracked */
	uint64_t missing_stack;		/* samples whose frames never arrived */
	uint64_t bad_records;
	uint64_t offcpu_final;		/* periods credited at the end (still blocked) */
	uint64_t offcpu_seeded;		/* threads found blocked, credited from the start */
	uint64_t proc_events;
	uint64_t processes;		/* targets profiled, all incarnations */
	uint64_t compactions;		/* live profiles folded (bounded memory) */
	double seconds;
	double start_unix;		/* wall clock at the start */
	int ncpus;			/* online CPUs sampled */
};

struct thread_key {
	uint32_t target;
	uint32_t tid;
};

struct pend_sample {
	struct agg_key k;
	uint64_t weight;
};

struct session {
	const struct options *opt;
	struct sampler sampler;
	struct profile prof;
	struct symbols sym;
	struct targets *ts;		/* the registry, discovery, -s roots */
	struct resolved frozen;		/* samples of processes that are gone */
	struct hmap thread_names;	/* {target, tid} -> char *, NULL until named */
	struct thread_key *unnamed;	/* threads seen, not named yet */
	struct pythreads_cache pynames;	/* Thread objects read this compaction period */
	size_t nunnamed, unnamed_cap;
	struct hmap limbo;		/* stack ids no sample uses, kept for a thread off CPU */
	struct pend_sample *pend;	/* samples waiting for their stack */
	size_t npend, pend_cap;
	struct kstack_namer kstacks;	/* --kernel frame names */
	struct child *child;		/* -- CMD; NULL if none */
	struct sampler_opts so;		/* how the sampler was set up */
	pid_t event_pids[CLI_MAX_PIDS];	/* per-task events: the processes named */
	int nevent_pids;
	int child_execd;		/* its exec happened (the command could be run) */
	int epfd, sigfd;
	uint64_t start_ns;		/* the run's start (CLOCK_MONOTONIC); 0 before */
	int status_pending;		/* a target's GIL address is still unknown */
	double status_fast_until;	/* ... look for it often until then */
	enum stop_reason stop;
	int signo;
	struct session_stats st;
	/* Optional: called from the loop every tick_interval seconds (live views,
	 * periodic pushes, progress). May set stop. */
	void (*tick)(struct session *s, void *ctx);
	void *tick_ctx;
	double tick_interval;
	/* Optional: an extra fd (e.g. the terminal for `top`) and its handler. */
	int extra_fd;
	void (*on_extra)(struct session *s, void *ctx);
};

/*
 * SIGINT, SIGTERM and SIGHUP end a run cleanly: blocked from the start
 * (also during start-up), read by the event loop's signalfd. out: the set.
 */
void session_block_signals(sigset_t *out);
/* Find the first targets: 0, or -errno after the one-line message. */
int session_open_targets(struct session *s, const struct options *o);
/* Load and attach BPF; start -- CMD: 0, or -errno after the one-line message. */
int session_start(struct session *s);
/* Run until a stop condition; then stop sampling and drain. */
void session_run(struct session *s);
/* The symbolized profile, with the options' extra frames. */
int session_resolve(struct session *s, struct resolved *r);
void session_close(struct session *s);
/* Why the -- command's interpreter was refused, or NULL. */
const char *session_refused_command(const struct session *s);

#endif
