/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One profiling run: targets, the BPF sampler, the event loop that consumes
 * the ring buffer (epoll: ring buffer, signals, target exits, a closed
 * stdout), aggregation and symbolization as samples arrive.
 */
#ifndef TB_SESSION_H
#define TB_SESSION_H

#include <stdint.h>
#include "cli.h"
#include "hmap.h"
#include "profile.h"
#include "sampler.h"
#include "symbols.h"
#include "target.h"

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
	double seconds;
	double start_unix;		/* wall clock at the start */
	int ncpus;			/* online CPUs sampled */
};

struct session {
	const struct options *opt;
	struct sampler sampler;
	struct profile prof;
	struct symbols sym;
	struct target *targets[CLI_MAX_PIDS];
	uint32_t ntargets;
	uint32_t alive;
	struct hmap by_pid;		/* pid -> target index + 1 */
	struct agg_key *pend;		/* samples waiting for their stack */
	size_t npend, pend_cap;
	int epfd, sigfd;
	enum stop_reason stop;
	int signo;
	struct session_stats st;
};

/* Open every target; on failure prints the one-line message, returns an exit code. */
int session_open_targets(struct session *s, const struct options *o);
/* Load and attach BPF; returns 0 or an exit code. */
int session_start(struct session *s);
/* Run until a stop condition; then stop sampling and drain. */
void session_run(struct session *s);
void session_close(struct session *s);

#endif
