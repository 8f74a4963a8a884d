/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tachyon-bpf top: a live table of functions, like py-spy top. Each second
 * (the session tick) the profile so far is resolved and grouped by
 * function; the difference from the previous second gives the window's
 * %Self and %Total, the totals give cumulative seconds. Keys arrive on
 * stdin through the session's extra fd.
 */
#ifndef TB_TOP_H
#define TB_TOP_H

#include <stddef.h>
#include <stdint.h>
#include "session.h"

/* One function: cumulative samples, and those of the last window. */
struct top_fn {
	char *label;		/* "qualname (file:firstline)" */
	uint64_t self, total;
	uint64_t wself, wtotal;
};

enum top_sort { TOP_WSELF, TOP_WTOTAL, TOP_SELF, TOP_TOTAL, TOP_NR_SORT };

struct top {
	struct session *s;
	const struct options *opt;
	void *screen;		/* SCREEN * while curses is on */
	struct top_fn *fn;	/* sorted by label */
	size_t n;
	size_t *order;		/* display order */
	uint64_t total;		/* samples so far */
	uint64_t wtotal;	/* samples in the last window */
	double wsecs;		/* length of the last window */
	double last;		/* monotonic time of the last refresh */
	int sort;		/* enum top_sort */
	int paused;
	int quit;		/* q pressed */
	int refreshes;
};

/* Hook t into s (after session_open_targets, before session_start).
 * Returns 0, or an exit code after a one-line message. */
int top_attach(struct top *t, struct session *s, const struct options *o);
/* Take over the terminal (after session_start). 0 or an exit code. */
int top_begin(struct top *t);
/* Give the terminal back; say why it ended if nobody asked for it. */
void top_end(struct top *t);

#endif
