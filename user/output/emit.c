// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Helpers the writers share: sticky-error output, escaping, orderings. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "output/emit.h"

void emit_init(struct emit *e, FILE *f)
{
	e->f = f;
	e->err = 0;
}

/* stdio sets errno on a failed write; keep the first one. */
static void emit_failed(struct emit *e)
{
	if (!e->err)
		e->err = errno ? errno : EIO;
}

void emit_printf(struct emit *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (e->err)
		return;
	va_start(ap, fmt);
	n = vfprintf(e->f, fmt, ap);
	va_end(ap);
	if (n < 0)
		emit_failed(e);
}

void emit_write(struct emit *e, const void *p, size_t n)
{
	if (e->err || !n)
		return;
	if (fwrite(p, 1, n, e->f) != n)
		emit_failed(e);
}

void emit_str(struct emit *e, const char *s)
{
	emit_write(e, s, strlen(s));
}

void emit_u64(struct emit *e, char sep, uint64_t v)
{
	char buf[24], *p = buf + sizeof(buf);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (sep)
		*--p = sep;
	emit_write(e, p, (size_t)(buf + sizeof(buf) - p));
}

int emit_done(struct emit *e)
{
	if (!e->err && fflush(e->f))
		emit_failed(e);
	return -e->err;
}

static int is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t utf8_next(const char *str, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t c = s[0];

	*cp = 0xfffd;
	if (!c)
		return 0;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf && is_cont(s[1])) {
		*cp = (c & 0x1f) << 6 | (s[1] & 0x3f);
		return 2;
	}
	if (c >= 0xe0 && c <= 0xef && is_cont(s[1]) && is_cont(s[2])) {
		c = (c & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
		if (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))
			return 1;
		*cp = c;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4 && is_cont(s[1]) && is_cont(s[2]) && is_cont(s[3])) {
		c = (c & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 |
		    (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
		if (c < 0x10000 || c > 0x10ffff)
			return 1;
		*cp = c;
		return 4;
	}
	return 1;
}

static const char replacement[] = "\xef\xbf\xbd";

/* Whether the n bytes at s are exactly the code point they encode. */
static int intact(const char *s, size_t n, uint32_t cp)
{
	return cp != 0xfffd || (n == 3 && !memcmp(s, replacement, 3));
}

/*
 * One escaping loop for every format: `pick` says what replaces a code
 * point (NULL: copy it as is); runs between replacements are written whole.
 */
typedef const char *(*pick_fn)(uint32_t cp, const char *s, size_t n, char *buf);

static void emit_escaped(struct emit *e, const char *s, pick_fn pick)
{
	const char *run = s, *rep;
	char buf[8];
	uint32_t cp;
	size_t n;

	while ((n = utf8_next(s, &cp))) {
		rep = pick(cp, s, n, buf);
		if (rep) {
			emit_write(e, run, (size_t)(s - run));
			emit_str(e, rep);
			run = s + n;
		}
		s += n;
	}
	emit_write(e, run, (size_t)(s - run));
}

/* Controls become spaces, as in collapsed output; broken UTF-8 U+FFFD. */
static const char *pick_text(uint32_t cp, const char *s, size_t n, char *buf)
{
	(void)buf;
	if (cp < 0x20 || cp == 0x7f)
		return " ";
	return intact(s, n, cp) ? NULL : replacement;
}

void emit_text(struct emit *e, const char *s)
{
	emit_escaped(e, s, pick_text);
}

/* XML 1.0 forbids C0 controls (even as references) and U+FFFE/U+FFFF. */
static const char *pick_xml(uint32_t cp, const char *s, size_t n, char *buf)
{
	switch (cp) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&#39;";
	case 0xfffe: case 0xffff: return replacement;
	}
	return pick_text(cp, s, n, buf);
}

void emit_xml(struct emit *e, const char *s)
{
	emit_escaped(e, s, pick_xml);
}

static const char *pick_json(uint32_t cp, const char *s, size_t n, char *buf)
{
	switch (cp) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '\n': return "\\n";
	case '\t': return "\\t";
	case '\r': return "\\r";
	}
	if (cp < 0x20) {
		snprintf(buf, 8, "\\u%04x", cp);
		return buf;
	}
	return intact(s, n, cp) ? NULL : replacement;
}

void emit_json(struct emit *e, const char *s)
{
	emit_json_cat(e, s, "");
}

void emit_json_cat(struct emit *e, const char *s, const char *tail)
{
	emit_write(e, "\"", 1);
	emit_escaped(e, s, pick_json);
	emit_escaped(e, tail, pick_json);
	emit_write(e, "\"", 1);
}

int frame_is_marker(const struct rframe *f)
{
	return !f->file[0];
}

void frame_tail(const struct rframe *f, int32_t line, char *out, size_t len)
{
	if (f->line == RFRAME_NO_LINE)
		snprintf(out, len, ")");
	else
		snprintf(out, len, ":%d)", line);
}

void frame_op_suffix(const struct rframe *f, char *out, size_t len)
{
	if (f->op)
		snprintf(out, len, " [%s]", f->op);
	else if (len)
		out[0] = 0;
}

int frame_is_kernel(const struct rframe *f)
{
	size_t n = strlen(f->name);

	return !f->file[0] && n > 4 && !strcmp(f->name + n - 4, " [k]");
}

void proc_describe(const struct rproc *p, char *out, size_t len)
{
	snprintf(out, len, "pid %d%s%s (Python %s)", p->pid, p->name[0] ? " " : "", p->name,
		 p->version);
}

#define PROCS_SHOWN 4

void emit_procs(struct emit *e, const struct resolved *r, int xml)
{
	char buf[160];
	size_t i;

	for (i = 0; i < r->nprocs && i < PROCS_SHOWN; i++) {
		proc_describe(&r->procs[i], buf, sizeof(buf));
		emit_str(e, i ? ", " : "; ");
		if (xml)	/* process names come from the target: escape them */
			emit_xml(e, buf);
		else
			emit_text(e, buf);
	}
	if (r->nprocs > PROCS_SHOWN)
		emit_printf(e, " and %zu more processes", r->nprocs - PROCS_SHOWN);
}

static int cmp_label(const void *a, const void *b)
{
	const struct rframe *x = *(const struct rframe *const *)a;
	const struct rframe *y = *(const struct rframe *const *)b;
	int c = rframe_cmp_place(x, y);

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	/* --opcodes: one line's instructions, in name order */
	if (!x->op || !y->op)
		return !!x->op - !!y->op;
	return strcmp(x->op, y->op);
}

uint32_t *frames_rank(const struct resolved *r)
{
	const struct rframe **sorted = malloc((r->nframes + 1) * sizeof(*sorted));
	uint32_t *rank = malloc((r->nframes + 1) * sizeof(*rank));
	size_t i;

	if (!sorted || !rank) {
		free(sorted);
		free(rank);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < r->nframes; i++)
		sorted[i] = r->frames[i];
	qsort(sorted, r->nframes, sizeof(*sorted), cmp_label);
	for (i = 0; i < r->nframes; i++)
		rank[sorted[i]->id] = (uint32_t)i;
	free(sorted);
	return rank;
}

struct order {
	const struct resolved *r;
	const uint32_t *rank;
	int by_thread;
};

static int32_t sample_pid(const struct resolved *r, const struct rsample *s)
{
	return s->proc < r->nprocs ? r->procs[s->proc].pid : 0;
}

static int cmp_thread(const struct resolved *r, const struct rsample *x,
		      const struct rsample *y)
{
	int32_t px = sample_pid(r, x), py = sample_pid(r, y);

	if (px != py)
		return px < py ? -1 : 1;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return 0;
}

static int cmp_sample(const void *a, const void *b, void *arg)
{
	const struct order *o = arg;
	const struct rsample *x = &o->r->samples[*(const size_t *)a];
	const struct rsample *y = &o->r->samples[*(const size_t *)b];
	uint32_t i, n = x->depth < y->depth ? x->depth : y->depth;
	int c = o->by_thread ? cmp_thread(o->r, x, y) : 0;

	if (c)
		return c;
	for (i = 0; i < n; i++) {
		uint32_t fx = o->rank[x->frames[i]->id], fy = o->rank[y->frames[i]->id];

		if (fx != fy)
			return fx < fy ? -1 : 1;
	}
	/* a stack after its extensions: a frame's own samples go to its right */
	return x->depth > y->depth ? -1 : x->depth < y->depth;
}

size_t *samples_sorted(const struct resolved *r, int by_thread)
{
	struct order o = { .r = r, .by_thread = by_thread };
	size_t *idx, i;
	uint32_t *rank;
	int err = resolved_check(r);

	if (err) {
		errno = -err;
		return NULL;
	}
	idx = malloc((r->nsamples + 1) * sizeof(*idx));
	rank = frames_rank(r);
	if (!idx || !rank) {
		free(idx);
		free(rank);
		errno = ENOMEM;
		return NULL;
	}
	o.rank = rank;
	for (i = 0; i < r->nsamples; i++)
		idx[i] = i;
	qsort_r(idx, r->nsamples, sizeof(*idx), cmp_sample, &o);
	free(rank);
	return idx;
}

void resolved_what(const struct resolved *r, char *buf, size_t len)
{
	const char *event = r->event ? r->event : "samples";

	if (r->mode && r->rate_text)
		snprintf(buf, len, "%s mode, %s, %s", r->mode, event, r->rate_text);
	else
		snprintf(buf, len, "%s at %.6g Hz", event, r->rate);
}

double resolved_period_s(const struct resolved *r)
{
	return r->rate > 0 ? 1.0 / r->rate : 0.01;
}

void thread_describe(const struct rthread *t, char *out, size_t len)
{
	if (t->name)
		snprintf(out, len, "%s", t->name);
	else
		snprintf(out, len, "tid %u", t->tid);
}

uint64_t thread_track_id(const struct rthread *t)
{
	return (uint64_t)t->lane << 32 | t->tid;
}

/* A counting sort by thread keeps each thread's ticks in time order. */
int ticks_by_thread(const struct resolved *r, struct tick_groups *g)
{
	size_t *fill, i;
	int err = resolved_check(r);

	memset(g, 0, sizeof(*g));
	if (err)
		return err;
	g->idx = malloc((r->nticks + 1) * sizeof(*g->idx));
	g->start = calloc(r->nthreads + 2, sizeof(*g->start));
	fill = calloc(r->nthreads + 1, sizeof(*fill));
	if (!g->idx || !g->start || !fill) {
		free(fill);
		tick_groups_free(g);
		return -ENOMEM;
	}
	for (i = 0; i < r->nticks; i++)
		g->start[r->ticks[i].thread + 1]++;
	for (i = 0; i < r->nthreads; i++)
		g->start[i + 1] += g->start[i];
	for (i = 0; i < r->nticks; i++) {
		uint32_t t = r->ticks[i].thread;

		g->idx[g->start[t] + fill[t]++] = i;
	}
	free(fill);
	return 0;
}

void tick_groups_free(struct tick_groups *g)
{
	free(g->idx);
	free(g->start);
	memset(g, 0, sizeof(*g));
}
