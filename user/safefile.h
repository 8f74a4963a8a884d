/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Output files opened safely when running as root: never through a symbolic
 * link, never a FIFO or device, never a file someone else owns or that has
 * other hard links (a file planted in /tmp), created 0644 (less the umask),
 * and not truncated until the caller has something to write.
 */
#ifndef TB_SAFEFILE_H
#define TB_SAFEFILE_H

#include <stddef.h>
#include <stdio.h>

/* A FILE for writing path, positioned at 0, NOT truncated; NULL with a
 * short reason in why (errno set). */
FILE *safe_open(const char *path, char *why, size_t whylen);
/* Drop what the file held before: call right before writing. 0 or a negative errno (errno set too). */
int safe_truncate(FILE *f);
/*
 * Remove each file safe_open created that was never truncated for writing
 * (a run that wrote no profile): at exit. Files that existed are kept.
 */
void safe_remove_unwritten(void);
/*
 * Replacing a file whole (a streamed recording's final form): a new file
 * beside path, written, then renamed over it, so a kill at any moment leaves
 * either the old content or the new, never a file cut in between. NULL with
 * errno if the directory takes no new file; *tmp is the name to pass on.
 */
FILE *safe_sibling(const char *path, char *tmp, size_t tmplen);
/* Close f (written under tmp) and rename it to path; 0 or a negative errno. */
int safe_replace(FILE *f, const char *tmp, const char *path);
/* 1 if a and b name one file (an existing one, or the same new path);
 * /dev/null is never the same as anything. */
int safe_same_file(const char *a, const char *b);
/*
 * At start: each of fds 0-2 that is closed opened on /dev/null, so that no
 * file opened later takes its number (an -o file written to as stderr).
 */
void safe_std_fds(void);
/* 1 if stdout was closed when safe_std_fds() ran. */
int safe_stdout_closed(void);

#endif
