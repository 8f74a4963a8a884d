/* SPDX-License-Identifier: GPL-2.0 */
/*
 * proc - /proc/PID parsing and locating the CPython runtime in a live process.
 */
#ifndef TACHYON_PROC_H
#define TACHYON_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "layout.h"

/* One line of /proc/PID/maps. */
struct proc_map {
	uint64_t start, end, offset;
	uint64_t inode;
	unsigned dev_major, dev_minor;
	char perms[5];
	char path[4096];	/* "" when anonymous; " (deleted)" kept */
	bool deleted;		/* path ends with " (deleted)" */
};

/*
 * Parse one /proc/PID/maps line (trailing newline optional); 0 ok, -EINVAL
 * malformed.  Paths may contain spaces.  Pure function.
 */
int proc_parse_maps_line(const char *line, struct proc_map *m);

/*
 * The file behind mapping m of pid as the process sees it (its mount
 * namespace too): its /proc/PID/map_files entry, else the path under
 * /proc/PID/root; the vDSO's is the profiler's own copy (vdso.h). 0, or -1
 * for a mapping without one (anonymous memory: a JIT's).
 */
int proc_map_file(pid_t pid, const struct proc_map *m, char *buf, size_t len);

/* Has mapping m a file proc_map_file() gives (a path, or the vDSO)? */
bool proc_map_has_file(const struct proc_map *m);

/* Where the interpreter lives in a process. */
struct py_location {
	uint64_t runtime_addr;		/* absolute &_PyRuntime in the process */
	uint64_t runtime_size;
	uint64_t code_type_addr;	/* absolute &PyCode_Type, 0 if unknown */
	uint64_t py_version_addr;	/* absolute &Py_Version, 0 if unknown */
	uint64_t eval_addr, eval_size;	/* absolute, the eval function's main part; 0 if unknown */
	uint64_t sym_addr[LAYOUT_SYM_NR]; /* absolute, what the layout asked pyelf for */
	uint64_t bias;			/* load bias of the object holding _PyRuntime */
	char path[4096];		/* that object's path as the process's maps show it */
	char version_hint[16];		/* from a file name ("3.13") or marker symbols ("2.7"), may be "" */
};

enum proc_err {
	PROC_OK = 0,
	PROC_NO_PROCESS = -1,
	PROC_NOT_PYTHON = -2,
	PROC_ACCESS = -3,
	PROC_ERROR = -4,
};

/*
 * Find the interpreter in process @pid.  Candidates, each file opened at
 * most once: mapped files named python* / libpython*, then other names
 * containing "python", then /proc/PID/exe, then any other file with an
 * executable mapping (embedded or statically linked interpreters).  Files
 * are opened through /proc/PID/root (containers) and, when that path no
 * longer leads to the mapped inode, through /proc/PID/map_files.  Returns
 * an enum proc_err; on failure @err holds a short reason.
 */
int proc_locate_python(pid_t pid, struct py_location *loc, char *err, size_t errlen);

/* The fields of /proc/PID/stat (or .../task/TID/stat) we use. */
struct proc_stat {
	char state;		/* field 3: 'R', 'S', 'D', 'Z', ... */
	pid_t ppid;		/* field 4; 0 if unparsable */
	uint64_t cpu_ticks;	/* fields 14 + 15, utime + stime, clock ticks */
	uint64_t start_time;	/* field 22, clock ticks; 0 if unparsable */
};

/* Parse a stat line (pure): 0, or -EINVAL if not even the state is there. */
int proc_parse_stat(const char *buf, struct proc_stat *st);
/* Read and parse the stat of @pid (@tid > 0: of that thread): 0, -ENOENT
 * if unreadable (gone), -EINVAL if malformed. */
int proc_read_stat(pid_t pid, pid_t tid, struct proc_stat *st);

/* /proc/PID/cmdline, NUL-terminated (@len >= 1): bytes read, or -errno. */
ssize_t proc_cmdline(pid_t pid, char *buf, size_t len);

/*
 * A cheap fingerprint of the files a process maps (never 0): an
 * interpreter loaded later (dlopen) changes it.
 */
uint64_t proc_maps_fingerprint(pid_t pid);

/* Call fn(ctx, pid) for every process in /proc: how many, or -errno. */
int proc_each_pid(void (*fn)(void *ctx, pid_t pid), void *ctx);

/* Start time (/proc/PID/stat field 22, clock ticks) to detect pid reuse; 0 on error. */
uint64_t proc_start_time(pid_t pid);

/* 1 if /proc/PID exists, 0 if not. */
int proc_exists(pid_t pid);
/* Exited, reaped or not (a zombie). */
bool proc_gone(pid_t pid);

/* The state letter of /proc/PID/task/TID/stat ('R', 'S', 'D', ...); 0 if
 * the thread is gone, '?' if unreadable. */
char proc_thread_state(pid_t pid, pid_t tid);

/* A thread's tid in the kernel's (our) pid namespace and in its own. */
struct proc_nstid {
	uint32_t global, inner;
};

/* The NSpid line of a status file (pure): its first field into *global,
 * its last (the thread's own namespace) into *inner; 0, or -EINVAL. */
int proc_parse_nspid(const char *status, uint32_t *global, uint32_t *inner);
/*
 * Every thread of pid as (global, inner) pairs, sorted by inner, at most
 * max: how many, or -errno. A process in another pid namespace names its
 * threads by inner tids (native_thread_id); the kernel's hooks by global.
 */
int proc_ns_tids(pid_t pid, struct proc_nstid *out, int max);
/* The global tid of inner tid in proc_ns_tids()'s table; 0 if absent. */
uint32_t proc_ns_tid_global(const struct proc_nstid *map, int n, uint32_t inner);

/*
 * Call fn(ctx, pid) for every process descending from one of roots (not
 * the roots themselves), by each /proc entry's chain of parents. Returns
 * how many, or -errno if /proc cannot be read.
 */
int proc_each_descendant(const pid_t *roots, int nroots, void (*fn)(void *ctx, pid_t pid),
			 void *ctx);

/* The process (thread group) thread @tid belongs to; -1 if unknown. */
pid_t proc_tgid(pid_t tid);

/* comm of @tid in @pid (@tid <= 0: the process itself); 0 ok, -errno. */
int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len);

#endif /* TACHYON_PROC_H */
