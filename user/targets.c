// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The target registry, discovery and its retries, -s roots: see targets.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "util.h"
#include "errors.h"
#include "hmap.h"
#include "proc.h"
#include "targets.h"

#define RESCAN_S	2.0	/* --all-python: look for interpreters loaded late */

/* When to look again at a process that is not (yet) a Python we can read. */
static const double retry_after[] = { 0.002, 0.01, 0.03, 0.1, 0.3, 1.0 };
#define MAX_ATTEMPTS (int)(sizeof(retry_after) / sizeof(retry_after[0]))

/* A process we expect to become profilable (exec'd, forked, or starting). */
struct discover {
	int32_t pid;
	int attempts;
	double next_try;
	int announce;			/* say why on stderr if it is not Python */
};

/* -s: a target given with -p that is not Python (its descendants are). */
struct root {
	pid_t pid;
	uint64_t start_time;		/* tells a recycled pid from it */
};

struct targets {
	const struct options *opt;
	struct targets_hooks hooks;
	struct target **targets;	/* every incarnation; NULL once dropped */
	struct rproc *procs;		/* what each target id was, kept after it ends */
	uint32_t ntargets, cap;
	uint32_t alive;			/* targets still running */
	struct hmap by_pid;		/* pid -> current target index + 1 */
	/* pid -> 0: an unsupported Python (said once); else the fingerprint
	 * of its mapped files when it was not Python (--all-python). */
	struct hmap refused;
	struct discover *disc;
	size_t ndisc, disc_cap;
	struct root *roots;
	size_t nroots;
	int roots_said;			/* "no Python descendants yet" said (or not needed) */
	double next_scan;		/* --all-python: next /proc rescan */
	int32_t command;		/* -- CMD: its pid; 0 if none */
	char refused_cmd[512];		/* why the command's own Python was refused */
};

struct targets *targets_new(const struct options *o, const struct targets_hooks *h)
{
	struct targets *ts = calloc(1, sizeof(*ts));

	if (!ts)
		return NULL;
	ts->opt = o;
	ts->hooks = *h;
	if (hmap_init(&ts->by_pid, sizeof(uint32_t)) || hmap_init(&ts->refused, sizeof(uint32_t))) {
		targets_free(ts);
		errno = ENOMEM;
		return NULL;
	}
	return ts;
}

void targets_free(struct targets *ts)
{
	uint32_t i;

	if (!ts)
		return;
	for (i = 0; i < ts->ntargets; i++) {
		if (!ts->targets[i])
			continue;
		target_close(ts->targets[i]);
		free(ts->targets[i]);
	}
	free(ts->targets);
	free(ts->procs);
	hmap_free(&ts->by_pid);
	hmap_free(&ts->refused);
	free(ts->disc);
	free(ts->roots);
	free(ts);
}

struct target *targets_by_pid(const struct targets *ts, uint32_t pid)
{
	void **slot = hmap_get(&ts->by_pid, &pid);

	return slot ? ts->targets[(uintptr_t)*slot - 1] : NULL;
}

struct target *targets_get(const struct targets *ts, uint32_t id)
{
	return id < ts->ntargets ? ts->targets[id] : NULL;
}

uint32_t targets_count(const struct targets *ts)
{
	return ts->ntargets;
}

uint32_t targets_alive(const struct targets *ts)
{
	return ts->alive;
}

struct target *const *targets_all(const struct targets *ts)
{
	return ts->targets;
}

const struct rproc *targets_procs(const struct targets *ts)
{
	return ts->procs;
}

static int grow(struct targets *ts)
{
	uint32_t cap = ts->cap ? ts->cap * 2 : 64;
	struct target **g = realloc(ts->targets, cap * sizeof(*g));
	struct rproc *pr;

	if (!g)
		return -ENOMEM;
	ts->targets = g;
	pr = realloc(ts->procs, cap * sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	ts->procs = pr;
	ts->cap = cap;
	return 0;
}

int targets_add(struct targets *ts, struct target *t)
{
	uint32_t pid = (uint32_t)t->pid;
	struct rproc *pr;
	void **slot;

	if (ts->ntargets == ts->cap && grow(ts))
		return -ENOMEM;
	slot = hmap_put(&ts->by_pid, &pid, NULL);
	if (!slot)
		return -ENOMEM;
	t->id = ts->ntargets;
	ts->targets[ts->ntargets++] = t;
	pr = &ts->procs[t->id];
	pr->pid = t->pid;
	snprintf(pr->version, sizeof(pr->version), "%s", t->version);
	snprintf(pr->name, sizeof(pr->name), "%s", t->name);
	pr->cwd[0] = 0;
	if (t->cwd_len < sizeof(pr->cwd))
		memcpy(pr->cwd, t->cwd, t->cwd_len + 1);
	*slot = (void *)(uintptr_t)(t->id + 1);
	ts->alive++;
	ts->hooks.added(ts->hooks.ctx, t);
	return 0;
}

void targets_ended(struct targets *ts, struct target *t)
{
	uint32_t pid = (uint32_t)t->pid;
	void **slot;

	t->exited = 1;
	slot = hmap_get(&ts->by_pid, &pid);
	if (slot && (uintptr_t)*slot == t->id + 1)
		hmap_del(&ts->by_pid, &pid);
	ts->alive--;
}

void targets_drop(struct targets *ts, struct target *t)
{
	ts->targets[t->id] = NULL;
	target_close(t);
	free(t);
}

uint32_t targets_refresh(struct targets *ts, void (*changed)(void *ctx, struct target *t),
			 void *ctx)
{
	uint32_t i, no_gil = 0;

	for (i = 0; i < ts->ntargets; i++) {
		struct target *t = ts->targets[i];

		if (!t || t->exited)
			continue;
		if (target_refresh(t))
			changed(ctx, t);
		no_gil += !t->layout.walk.addr.gil_addr;
	}
	return no_gil;
}

/* ---- discovery ---- */

void targets_discover_later(struct targets *ts, int32_t pid, int announce)
{
	size_t i;

	for (i = 0; i < ts->ndisc; i++) {
		if (ts->disc[i].pid != pid)
			continue;
		/* Another exec: a new image, a new schedule. */
		ts->disc[i].attempts = 0;
		ts->disc[i].next_try = mono_now() + retry_after[0];
		ts->disc[i].announce |= announce;
		return;
	}
	if (array_grow(&ts->disc, &ts->disc_cap, ts->ndisc + 1, sizeof(*ts->disc), 16))
		return;
	ts->disc[ts->ndisc++] = (struct discover){ pid, 0, mono_now() + retry_after[0], announce };
}

size_t targets_discovering(const struct targets *ts)
{
	return ts->ndisc;
}

void targets_set_command(struct targets *ts, int32_t pid)
{
	ts->command = pid;
}

const char *targets_refused_command(const struct targets *ts)
{
	return ts->refused_cmd[0] ? ts->refused_cmd : NULL;
}

static void refuse_once(struct targets *ts, int32_t pid, const char *why)
{
	uint32_t key = (uint32_t)pid;
	int added = 0;

	hmap_put(&ts->refused, &key, &added);
	/* The command itself: if nothing else is profiled, this is the
	 * run's closing error (stats_explain_empty), said once. */
	if (added && pid == ts->command && !ts->refused_cmd[0])
		snprintf(ts->refused_cmd, sizeof(ts->refused_cmd), "%s", why);
	else if (added)
		tb_warn("pid %d: not profiled: %s", pid, why);
}

/*
 * --mode gil samples the threads that hold the GIL: a free-threaded build
 * has none to hold, so every sample would be dropped. 1 (why in `why`) if
 * t is such a process.
 */
static int gil_mode_refused(const struct targets *ts, const struct target *t, char *why,
			    size_t len)
{
	if (ts->opt->mode != TB_MODE_GIL || !layout_no_gil(&t->layout))
		return 0;
	snprintf(why, len, "--mode gil: Python %s has no GIL (free-threaded build) (use -m cpu or -m wall)",
		 t->version);
	return 1;
}

/* One attempt at a process; 1 = done with it (profiled or given up). */
static int try_discover(struct targets *ts, struct discover *d)
{
	struct target *t = calloc(1, sizeof(*t));
	char err[512] = "";
	int ret, partial;

	if (!t)
		return 1;
	ret = target_open(d->pid, ts->opt->layout_flags, t, err, sizeof(err));
	if (ret == TARGET_OK && gil_mode_refused(ts, t, err, sizeof(err)))
		ret = TARGET_UNSUPPORTED;
	if (ret == TARGET_OK && !targets_add(ts, t))
		return 1;
	partial = t->version_partial;
	free(t);
	/* python3.7 just exec'd: its name says 3.7 before ld.so maps the
	 * libpython that says 3.7.16; the refusal waits for the full name. */
	if (ret == TARGET_UNSUPPORTED && partial && d->attempts + 1 < MAX_ATTEMPTS)
		ret = TARGET_NOT_PYTHON;
	if (ret == TARGET_UNSUPPORTED) {
		refuse_once(ts, d->pid, err);
		return 1;
	}
	if (ret == TARGET_NO_PROCESS)
		return 1;
	/* Not Python yet: ld.so may still be mapping libpython. */
	if (++d->attempts >= MAX_ATTEMPTS) {
		if (d->announce)
			tb_warn("pid %d: not a Python process: %s", d->pid, err);
		return 1;
	}
	d->next_try = mono_now() + retry_after[d->attempts];
	return 0;
}

void targets_run_discovery(struct targets *ts)
{
	double now = mono_now();
	size_t i, j = 0;

	for (i = 0; i < ts->ndisc; i++) {
		struct discover d = ts->disc[i];

		if (d.next_try > now || !try_discover(ts, &d))
			ts->disc[j++] = d;
	}
	ts->ndisc = j;
}

/* --all-python: a process we have not looked at, or whose files changed. */
static void scan_one(void *ctx, pid_t p)
{
	struct targets *ts = ctx;
	struct discover d = { 0, MAX_ATTEMPTS - 1, 0, 0 };
	uint32_t pid = (uint32_t)p;
	uintptr_t files;
	void **slot;

	if (p == getpid() || targets_by_pid(ts, pid))
		return;
	slot = hmap_get(&ts->refused, &pid);
	if (slot && !*slot)
		return;	/* an unsupported Python: said once, left alone */
	files = (uintptr_t)proc_maps_fingerprint(p);
	if (slot && (uintptr_t)*slot == files)
		return;	/* not Python, and nothing new mapped */
	d.pid = (int32_t)pid;
	if (try_discover(ts, &d) && !targets_by_pid(ts, pid)) {
		int added;

		/* refuse_once() left 0 for an unsupported one: keep it. */
		slot = hmap_put(&ts->refused, &pid, &added);
		if (slot && (added || *slot))
			*slot = (void *)files;
	}
}

void targets_scan_all(struct targets *ts)
{
	proc_each_pid(scan_one, ts);
	ts->next_scan = mono_now() + RESCAN_S;
}

double targets_next_scan(const struct targets *ts)
{
	return ts->next_scan;
}

/* ---- -p and -s ---- */

/* -s: a non-Python process whose Python descendants are profiled. */
static int add_root(struct targets *ts, pid_t pid)
{
	struct root *g = realloc(ts->roots, (ts->nroots + 1) * sizeof(*g));

	if (!g) {
		tb_error("startup: out of memory (free some memory)");
		return -ENOMEM;
	}
	ts->roots = g;
	ts->roots[ts->nroots].pid = pid;
	ts->roots[ts->nroots++].start_time = proc_start_time(pid);
	return 0;
}

size_t targets_nroots(const struct targets *ts)
{
	return ts->nroots;
}

pid_t targets_root(const struct targets *ts, size_t i)
{
	return ts->roots[i].pid;
}

int targets_roots_alive(const struct targets *ts)
{
	size_t i;

	for (i = 0; i < ts->nroots; i++)
		if (ts->roots[i].start_time &&
		    proc_start_time(ts->roots[i].pid) == ts->roots[i].start_time)
			return 1;
	return 0;
}

void targets_note_roots(struct targets *ts)
{
	size_t i;

	if (ts->roots_said)
		return;
	for (i = 0; i < ts->ndisc; i++)
		if (!ts->disc[i].attempts)
			return;
	ts->roots_said = 1;
	for (i = 0; i < ts->nroots && !ts->alive; i++)
		tb_info("pid %d: not a Python process, nor any of its descendants yet: profiling the Python processes it starts (-s)",
			ts->roots[i].pid);
}

/* target_open()'s refusal as an errno. */
static int target_errno(int ret)
{
	switch (ret) {
	case TARGET_NO_PROCESS:
		return -ESRCH;
	case TARGET_ACCESS:
		return -EPERM;
	case TARGET_ERROR:
		return -EIO;
	}
	return -ENOEXEC;
}

int targets_open(struct targets *ts)
{
	const struct options *o = ts->opt;
	char err[512];
	int i, ret;

	for (i = 0; i < o->npids; i++) {
		struct target *t = calloc(1, sizeof(*t));

		if (!t)
			return -ENOMEM;
		err[0] = 0;
		ret = target_open(o->pids[i], o->layout_flags, t, err, sizeof(err));
		if (ret == TARGET_NOT_PYTHON && o->subprocesses) {
			free(t);
			ret = add_root(ts, o->pids[i]);
			if (ret)
				return ret;
			continue;	/* a shell, a supervisor: its descendants count */
		}
		if (ret) {
			target_report(o->pids[i], ret, err[0] ? err : "unknown reason");
			free(t);
			return target_errno(ret);
		}
		if (gil_mode_refused(ts, t, err, sizeof(err))) {
			tb_error("%s", err);
			free(t);
			return -EINVAL;	/* a usage error: the mode, not the process */
		}
		ret = targets_add(ts, t);
		if (ret) {
			free(t);
			return ret;
		}
	}
	return 0;
}
