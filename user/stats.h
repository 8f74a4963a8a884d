/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The closing statistics. Every sample is accounted for:
 *   collected = written + lost + dropped
 * where collected counts perf events that hit a profiled process plus the
 * sample periods credited to off-CPU time (wall mode).
 */
#ifndef TB_STATS_H
#define TB_STATS_H

#include <stdint.h>
#include <stdio.h>
#include "session.h"

struct stats_summary {
	uint64_t collected, written, lost, dropped;
};

void stats_summarize(const struct session_view *s, uint64_t written, struct stats_summary *out);
/* The one closing line: samples, rate, processes, losses, and where the
 * profile went (wrote: a file name, "stdout", or NULL if nowhere). */
void stats_line(const struct session_view *s, uint64_t written, const char *wrote);
/* A run that profiled nothing: one error line saying why and what to do. */
void stats_explain_empty(const struct session_view *s);
/* -v: the details, several lines on stderr. */
void stats_print(const struct session_view *s, uint64_t written);
/* --stats FILE: opened before the run (NULL after a one-line error), not
 * truncated until written. */
FILE *stats_open(const char *path);
/* The statistics as JSON to f. */
void stats_write_json(FILE *f, const struct session_view *s, uint64_t written);

#endif
