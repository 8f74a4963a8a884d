/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The command of `tachyon-bpf ... -- CMD`: forked before sampling starts,
 * held before its exec until sampling is on (so nothing it runs is
 * missed), reaped when it exits, ended with SIGTERM then SIGKILL if it
 * outlives the run.
 */
#ifndef TB_CHILD_H
#define TB_CHILD_H

#include <sys/types.h>

struct child;

/*
 * Fork cmd (argv, NULL-terminated; kept, not copied), held before its
 * exec. own_stdout: 0 sends its stdout to our stderr (ours carries the
 * profile). NULL with errno set on failure.
 */
struct child *child_spawn(char *const *cmd, int own_stdout);
/* Let it exec: sampling is on. Says why on stderr if that failed. */
void child_release(struct child *c);
pid_t child_pid(const struct child *c);
/* A pidfd readable once it exits, or -1 (kernel without pidfd_open). */
int child_pidfd(const struct child *c);
/* Reap it if it has exited: 1 if reaped (now or before), 0 if running. */
int child_reap(struct child *c);
/* Its wait status, once reaped. */
int child_status(const struct child *c);
/* It outlived the run: SIGTERM, and SIGKILL after a grace period. */
void child_end(struct child *c);
/* Close what we hold of it (it is not signalled). */
void child_free(struct child *c);

#endif
