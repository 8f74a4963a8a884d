/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The progress line: elapsed time, samples, rate and lost samples on
 * stderr, redrawn in place about twice a second while recording. Only
 * when stderr is a terminal: a log file or a pipe gets nothing.
 */
#ifndef TB_PROGRESS_H
#define TB_PROGRESS_H

#include "session.h"

struct progress {
	int on;			/* stderr is a terminal */
	int drawn;		/* a line is on the screen */
	double last;		/* monotonic time of the last redraw */
};

void progress_init(struct progress *p);
/* Redraw if due; called from the session tick. */
void progress_tick(struct progress *p, struct session *s);
/* Erase the line, so the next message starts on a clean one. */
void progress_clear(struct progress *p);

#endif
