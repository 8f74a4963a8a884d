// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "errors.h"
#include "progress.h"

#define REDRAW_S	0.45	/* ~2 redraws a second at a 0.5 s tick */

static struct progress *active;

static void clear_active(void)
{
	if (active)
		progress_clear(active);
}

void progress_init(struct progress *p)
{
	p->on = isatty(STDERR_FILENO);
	if (p->on) {
		active = p;
		tb_before_message = clear_active;
	}
	p->drawn = 0;
	p->last = 0;
}

void progress_tick(struct progress *p, struct session *s)
{
	uint64_t c[TB_NR_COUNTERS] = {0};
	struct session_view v;
	double now = mono_now(), secs;
	uint64_t lost;

	if (!p->on || now - p->last < REDRAW_S)
		return;
	p->last = now;
	session_snapshot(s, &v);
	secs = wall_now() - v.st.start_unix;
	if (secs < 0.001)
		secs = 0.001;
	session_counters(s, c);
	lost = c[TB_C_LOST] + c[TB_C_OFFCPU_LOST];
	/* The cursor goes back to column 0, so a message printed by someone
	 * else overwrites the line instead of being glued to its end. */
	fprintf(stderr, "\rtachyon-bpf: %.1f s, %" PRIu64 " samples (%.0f/s), lost %" PRIu64
		", %u process%s (Ctrl-C to stop)\033[K\r", secs, v.samples, v.samples / secs, lost,
		v.alive, v.alive == 1 ? "" : "es");
	fflush(stderr);
	p->drawn = 1;
}

void progress_clear(struct progress *p)
{
	if (!p->drawn)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->drawn = 0;
}
