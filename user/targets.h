/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The target registry: every process profiled in a run (each incarnation:
 * an exec makes a new one), found by pid or by id; discovery of the
 * processes that may become Python (exec'd, forked, started, --all-python
 * scans) with its retries; the non-Python roots of -s.
 *
 * The registry knows nothing of BPF: a registered target is handed to the
 * `added` hook, which starts sampling it.
 */
#ifndef TB_TARGETS_H
#define TB_TARGETS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cli.h"
#include "profile.h"
#include "target.h"

struct targets;

struct targets_hooks {
	void (*added)(void *ctx, struct target *t);	/* registered: sample it */
	void *ctx;
};

/* NULL with errno set if out of memory. */
struct targets *targets_new(const struct options *o, const struct targets_hooks *h);
/* Closes and frees every target still held. */
void targets_free(struct targets *ts);

/* The processes of -p (with -s, a non-Python one becomes a root): 0, or
 * -errno after the one-line message. */
int targets_open(struct targets *ts);
/* Make t (calloc'd; the registry owns it now) the current incarnation of
 * its pid: 0, or -ENOMEM (t is not kept). */
int targets_add(struct targets *ts, struct target *t);
/* The current incarnation of pid, if profiled. */
struct target *targets_by_pid(const struct targets *ts, uint32_t pid);
/* Target `id`; NULL once dropped. */
struct target *targets_get(const struct targets *ts, uint32_t id);
/* Ids run from 0 to this, dropped ones included. */
uint32_t targets_count(const struct targets *ts);
/* Targets still running. */
uint32_t targets_alive(const struct targets *ts);
/* For the resolved profile: every target by id (NULL: dropped), and what
 * each id was (kept after it is dropped). */
struct target *const *targets_all(const struct targets *ts);
const struct rproc *targets_procs(const struct targets *ts);
/* t exited or exec'd: no longer its pid's current incarnation. */
void targets_ended(struct targets *ts, struct target *t);
/* Close and free t (its samples are folded): targets_get(id) is NULL. */
void targets_drop(struct targets *ts, struct target *t);
/*
 * Retry what needs a running interpreter; changed(ctx, t) for each target
 * whose addresses changed. Returns how many running targets still have no
 * GIL address.
 */
uint32_t targets_refresh(struct targets *ts, void (*changed)(void *ctx, struct target *t),
			 void *ctx);

/* A process that may become Python: looked at (again) at a growing
 * interval; announce: say why on stderr if it never is. */
void targets_discover_later(struct targets *ts, int32_t pid, int announce);
/* How many are waiting to be looked at. */
size_t targets_discovering(const struct targets *ts);
/* Look at those that are due. */
void targets_run_discovery(struct targets *ts);
/* --all-python: every process not looked at, or whose mapped files changed. */
void targets_scan_all(struct targets *ts);
/* When the next scan is due (monotonic seconds). */
double targets_next_scan(const struct targets *ts);

/* -s: the roots (pids of non-Python processes whose descendants count). */
size_t targets_nroots(const struct targets *ts);
pid_t targets_root(const struct targets *ts, size_t i);
/* Is a root still running? Its descendants may yet come. */
int targets_roots_alive(const struct targets *ts);
/* Once the first descendants were looked at: say once if none is Python. */
void targets_note_roots(struct targets *ts);

/* The -- command's pid: why its Python is refused is kept, not printed. */
void targets_set_command(struct targets *ts, int32_t pid);
/* Why the -- command's interpreter was refused, or NULL. */
const char *targets_refused_command(const struct targets *ts);

#endif
