// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The binary recording streamed while the run goes on (recstream.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include "clock.h"
#include "cli.h"
#include "errors.h"
#include "output/tby.h"
#include "recstream.h"
#include "safefile.h"

#define STREAM_FIRST_S	1.0	/* the first segment after this long */
#define STREAM_MIN_S	1.0	/* then at least this far apart ... */
#define STREAM_COST	20	/* ... and this many times what one cost */

void rec_profile_meta(const struct session_view *v, struct resolved *r, char *rate, size_t len)
{
	*r = (struct resolved){
		.event = v->opt->event->name, .rate = v->opt->rate_hz,
		.mode = cli_mode_name(v->opt->mode),
		.rate_text = cli_rate_text(v->opt, rate, len),
		.start_unix = v->st.start_unix, .duration_s = v->st.seconds,
	};
}

void rec_stream_init(struct rec_stream *rs, FILE *out)
{
	struct stat st;

	*rs = (struct rec_stream){ .every = STREAM_MIN_S, .next = mono_now() + STREAM_FIRST_S };
	if (!out || fstat(fileno(out), &st) || !S_ISREG(st.st_mode))
		return;
	rs->ts = tby_stream_new(out);
	if (rs->ts)
		rs->out = out;
}

static void stop_streaming(struct rec_stream *rs, int err)
{
	tb_warn("-o: streaming the recording: %s (it is written at the end only)",
		strerror(-err));
	tby_stream_free(rs->ts);
	rs->ts = NULL;
	rs->out = NULL;
}

/* The profile so far, appended; the first segment replaces what the file held. */
void rec_stream_tick(struct rec_stream *rs, struct session *s)
{
	double t0 = mono_now(), cost;
	struct session_view v;
	struct resolved r;
	char rate[32];
	int err;

	if (!rs->out || t0 < rs->next)
		return;
	session_sync(s);	/* a killed run's ticks then cover its counts */
	session_snapshot(s, &v);
	rec_profile_meta(&v, &r, rate, sizeof(rate));
	r.duration_s = wall_now() - v.st.start_unix;	/* so far */
	if (r.duration_s < 0)
		r.duration_s = 0;
	err = session_resolve(s, &r);
	if (!err && r.total)
		err = tby_stream_started(rs->ts) ? 0 : safe_truncate(rs->out);
	if (!err && r.total)
		err = tby_stream_append(rs->ts, &r);
	resolved_free(&r);
	if (err)
		return stop_streaming(rs, err);
	cost = mono_now() - t0;
	rs->next = mono_now() + (cost * STREAM_COST > rs->every ? cost * STREAM_COST : rs->every);
}

void rec_stream_free(struct rec_stream *rs)
{
	tby_stream_free(rs->ts);
	rs->ts = NULL;
}
