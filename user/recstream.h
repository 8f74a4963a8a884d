/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A binary recording (-o prof.tby) written while the run goes on: every
 * second or so the profile so far is appended to the file as a journal
 * segment (output/tby.h, tby_stream), so that a run killed with SIGKILL
 * leaves a recording that replays up to then. The normal end writes the
 * whole recording over it.
 */
#ifndef TB_RECSTREAM_H
#define TB_RECSTREAM_H

#include <stdio.h>
#include "output/model.h"
#include "session.h"

struct tby_stream;

struct rec_stream {
	struct tby_stream *ts;
	FILE *out;		/* NULL: no recording to stream */
	double next;		/* when the next segment is due (mono_now) */
	double every;		/* seconds between segments */
};

/* What the profile of a run says about itself: event, mode, rate, times. */
void rec_profile_meta(const struct session_view *v, struct resolved *r, char *rate, size_t len);
/*
 * Stream into out if it is a regular file (a pipe or a terminal gets the
 * recording at the end, as other formats do). Nothing on failure: the
 * recording is then written at the end only.
 */
void rec_stream_init(struct rec_stream *rs, FILE *out);
/* From the session's tick: a segment if one is due. */
void rec_stream_tick(struct rec_stream *rs, struct session *s);
/* The file being streamed into (its final form replaces it whole), or NULL. */
static inline FILE *rec_stream_file(const struct rec_stream *rs)
{
	return rs->out;
}
void rec_stream_free(struct rec_stream *rs);

#endif
