/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One profiled process: where its interpreter is, which layout it has, and
 * what identifies this incarnation of the pid.
 */
#ifndef TB_TARGET_H
#define TB_TARGET_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include "layout.h"
#include "proc.h"

struct target {
	uint32_t id;		/* index in the session's target list */
	pid_t pid;
	uint64_t start_time;	/* tells a recycled pid from this process */
	int pidfd;		/* readable when the process exits; -1 if none */
	int exited;
	struct py_location loc;
	struct py_layout layout; /* walk.addr filled in */
	char version[32];	/* "3.13.0" */
	char name[64];		/* script or module, else executable: the root frame */
	char cwd[PATH_MAX];	/* for shortening file names */
	size_t cwd_len;
	double names_next;	/* session: earliest next read of threading's names */
	uint64_t cpu_ticks;	/* session: its CPU time when sampling began for it */
	double threads_next;	/* ingest: next read of its thread list into the BPF cache; 0: none due */
	int version_partial;	/* refused as too old by "X.Y" from a file name
				 * alone: a libpython still loading may name it fully */
};

/* Errors: negative errnos, one per kind of message (target_report). */
enum target_err {
	TARGET_OK = 0,
	TARGET_NO_PROCESS = -ESRCH,
	TARGET_NOT_PYTHON = -ENOEXEC,
	TARGET_ACCESS = -EACCES,
	TARGET_UNSUPPORTED = -ENOTSUP,
	TARGET_ERROR = -EIO,
};

/* Find the interpreter of pid and its layout. On failure err holds
 * "<why> (<what to do>)" for a one-line message. */
int target_open(pid_t pid, unsigned layout_flags, struct target *t,
		char *err, size_t errlen);
void target_close(struct target *t);
/* The one-line message for a target_open() failure. */
void target_report(pid_t pid, int ret, const char *detail);
/* A copy of parent for a forked child (same image, same addresses). */
int target_fork(const struct target *parent, pid_t pid, struct target *t);
/* Retry what needs a running interpreter (GIL, GC addresses); 1 if it changed. */
int target_refresh(struct target *t);
/* The process's name as a stable root frame: `python3 -m http.server` ->
 * "http.server", `python3 app/x.py` -> "x.py", else the executable's name. */
void target_name_from_cmdline(const char *cmdline, size_t len, char *out, size_t outlen);

#endif
