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
#include "session.h"

struct stats_summary {
	uint64_t collected, written, lost, dropped;
};

void stats_summarize(const struct session *s, uint64_t written, struct stats_summary *out);
/* Human lines on stderr. */
void stats_print(const struct session *s, uint64_t written);
/* --stats FILE: the same as JSON. */
void stats_write_json(const struct session *s, uint64_t written);

#endif
