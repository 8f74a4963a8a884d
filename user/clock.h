/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Seconds as doubles: monotonic for intervals, wall clock for timestamps. */
#ifndef TB_CLOCK_H
#define TB_CLOCK_H

#include <time.h>

static inline double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
