/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Pushing to a Pyroscope server: every --push-interval seconds, the
 * samples of that interval as collapsed lines, POSTed to
 *   URL/ingest?name=APP&from=UNIX&until=UNIX&sampleRate=HZ
 *              &spyName=tachyon-bpf&format=folded
 * The server is told only what it does not have yet: the counts it has
 * acknowledged are kept, and each push sends the difference. A failed push
 * is reported and its samples stay unacknowledged, so the next push carries
 * them too (from the same `from`). Never fatal.
 */
#ifndef TB_PYROSCOPE_H
#define TB_PYROSCOPE_H

#include <stdint.h>
#include "cli.h"
#include "output/output.h"
#include "session.h"

struct pyroscope {
	const char *url;	/* as given */
	void *curl;		/* CURL *, reused: one connection for every push */
	char *ingest;		/* URL/ingest?name=APP&, the rest per push */
	uint64_t rate;
	double interval;
	double next;		/* monotonic time of the next push */
	int64_t from;		/* unix seconds: start of what the server lacks */
	struct folded acked;	/* cumulative counts the server has */
	uint64_t pushes, failures, samples;
};

/* 0, or a negative errno after a one-line message. */
int pyroscope_init(struct pyroscope *p, const struct options *o);
/* Is the interval over? (Then push; called from the session tick.) */
int pyroscope_due(struct pyroscope *p);
/* Push now (the end of the run). 0 if everything was delivered, else a negative errno. */
int pyroscope_push(struct pyroscope *p, struct session *s, int final);
void pyroscope_free(struct pyroscope *p);

#endif
