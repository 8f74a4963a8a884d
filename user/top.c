// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* tachyon-bpf top: see top.h. */
#include <curses.h>
#include <errno.h>
#include <term.h>
#include <inttypes.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>
#include "clock.h"
#include "errors.h"
#include "output/output.h"
#include "output/emit.h"
#include "top.h"

#define REFRESH_S	1.0
#define HEADER_ROWS	4	/* title, samples, keys, blank; then the column heads */

static const char *const sort_names[TOP_NR_SORT] = {
	[TOP_WSELF] = "%Self", [TOP_WTOTAL] = "%Total",
	[TOP_SELF] = "Self", [TOP_TOTAL] = "Total",
};

static void fns_free(struct top_fn *fn, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(fn[i].label);
	free(fn);
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct top_fn *)a)->label, ((const struct top_fn *)b)->label);
}

/* Sort by label and merge functions that print the same. */
static size_t fns_merge(struct top_fn *fn, size_t n)
{
	size_t i, j = 0;

	if (!n)
		return 0;
	qsort(fn, n, sizeof(*fn), cmp_label);
	for (i = 1; i < n; i++) {
		if (strcmp(fn[i].label, fn[j].label)) {
			fn[++j] = fn[i];
			continue;
		}
		fn[j].self += fn[i].self;
		fn[j].total += fn[i].total;
		free(fn[i].label);
	}
	return j + 1;
}

static uint64_t sort_key(const struct top_fn *f, int sort)
{
	switch (sort) {
	case TOP_WSELF:
		return f->wself;
	case TOP_WTOTAL:
		return f->wtotal;
	case TOP_SELF:
		return f->self;
	}
	return f->total;
}

/* Descending by the sort column; then by cumulative self, total, label. */
static int cmp_order(const void *a, const void *b, void *ctx)
{
	const struct top *t = ctx;
	const struct top_fn *x = &t->fn[*(const size_t *)a];
	const struct top_fn *y = &t->fn[*(const size_t *)b];
	uint64_t kx = sort_key(x, t->sort), ky = sort_key(y, t->sort);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->label, y->label);
}

static void top_sort(struct top *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		t->order[i] = i;
	qsort_r(t->order, t->n, sizeof(*t->order), cmp_order, t);
}

/* Fold a new cumulative table into t (which takes fn): the window is the
 * difference from the previous one. */
static void top_update(struct top *t, struct top_fn *fn, size_t n, uint64_t total, double secs)
{
	size_t i, j = 0;
	size_t *order;

	n = fns_merge(fn, n);
	/* Both tables are sorted by label: one pass finds each one's past. */
	for (i = 0; i < n; i++) {
		int c = 1;

		while (j < t->n && (c = strcmp(t->fn[j].label, fn[i].label)) < 0)
			j++;
		fn[i].wself = fn[i].self;
		fn[i].wtotal = fn[i].total;
		if (j < t->n && !c) {
			fn[i].wself -= fn[i].self >= t->fn[j].self ? t->fn[j].self : fn[i].self;
			fn[i].wtotal -= fn[i].total >= t->fn[j].total ? t->fn[j].total : fn[i].total;
		}
	}
	order = realloc(t->order, (n + 1) * sizeof(*order));
	if (!order) {
		fns_free(fn, n);
		return;
	}
	fns_free(t->fn, t->n);
	t->order = order;
	t->fn = fn;
	t->n = n;
	t->wtotal = total >= t->total ? total - t->total : 0;
	t->total = total;
	t->wsecs = secs;
	t->refreshes++;
	top_sort(t);
}

/* -------------------------------------------------------------------- */
/* From the session's profile to a table of functions. */

static char *fn_label(const struct rframe *f)
{
	char *out, tail[32];

	if (frame_is_marker(f))
		return strdup(f->name);
	frame_tail(f, f->firstlineno, tail, sizeof(tail));
	if (asprintf(&out, "%s (%s%s", f->name, f->file, tail) < 0)
		return NULL;
	return out;
}

static int table_from(const struct resolved *r, struct top_fn **out, size_t *nout)
{
	struct func_table ft;
	struct func_count *fc;
	struct top_fn *fn;
	size_t i;
	int ret = funcs_build(r, &ft);

	if (ret)
		return ret;
	ret = -ENOMEM;
	fn = calloc(ft.n + 1, sizeof(*fn));
	fc = calloc(ft.n + 1, sizeof(*fc));
	if (!fn || !fc || resolved_function_totals(r, &ft, fc))
		goto out;
	for (i = 0; i < ft.n; i++) {
		if (!(fn[i].label = fn_label(ft.funcs[i])))
			goto out;
		fn[i].self = fc[i].self;
		fn[i].total = fc[i].total;
	}
	*out = fn;
	*nout = ft.n;
	fn = NULL;
	ret = 0;
out:
	if (fn)
		fns_free(fn, ft.n);
	free(fc);
	funcs_free(&ft);
	return ret;
}

static void refresh_table(struct top *t)
{
	struct resolved r = { 0 };
	struct top_fn *fn;
	double now = mono_now();
	size_t n;

	if (!session_resolve(t->s, &r) && !table_from(&r, &fn, &n))
		top_update(t, fn, n, r.total, now - t->last);
	resolved_free(&r);
	t->last = now;
}

/* -------------------------------------------------------------------- */
/* Drawing. */

/* Print s in at most cols columns: UTF-8 aware, controls as spaces. */
static void put_cols(const char *s, int cols)
{
	mbstate_t st;
	wchar_t wc;
	size_t len;
	int w;

	memset(&st, 0, sizeof(st));
	while (*s && cols > 0) {
		len = mbrtowc(&wc, s, strlen(s), &st);
		if (len == (size_t)-1 || len == (size_t)-2 || !len) {
			memset(&st, 0, sizeof(st));
			addch('?');
			s++;
			cols--;
			continue;
		}
		w = wcwidth(wc);
		if (w < 0) {
			addch(' ');
			w = 1;
		} else if (w > cols) {
			break;
		} else {
			addnstr(s, (int)len);
		}
		s += len;
		cols -= w;
	}
}

static void line(int y, int attr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(int y, int attr, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	move(y, 0);
	attrset(attr);
	put_cols(buf, COLS);
	clrtoeol();
	attrset(A_NORMAL);
}

static const char *targets_text(const struct session *s, char *buf, size_t len)
{
	struct session_view v;

	session_snapshot(s, &v);
	if (v.opt->all_python)
		snprintf(buf, len, "all Python processes (%u now)", v.alive);
	else if (v.alive > 1)
		snprintf(buf, len, "%u processes", v.alive);
	else if (v.live_pid)
		snprintf(buf, len, "pid %d %s (Python %s)", v.live_pid, v.live_name, v.live_version);
	else
		snprintf(buf, len, "no process left");
	return buf;
}

static void draw_header(struct top *t)
{
	const struct options *o = t->opt;
	char who[160], rate[32];

	line(0, A_BOLD, "tachyon-bpf top - %s", targets_text(t->s, who, sizeof(who)));
	if (!t->refreshes)
		line(1, A_NORMAL, "waiting for the first second of samples...");
	else
		line(1, A_NORMAL, "Samples: %" PRIu64 " in the last %.1f s, %" PRIu64
		     " in all; %s mode, %s, %s", t->wtotal, t->wsecs, t->total,
		     cli_mode_name(o->mode), o->event->name, cli_rate_text(o, rate, sizeof(rate)));
	line(2, A_NORMAL, "Sort: %s   keys: s t 1-4 sort, p pause, q quit%s",
	     sort_names[t->sort], t->paused ? "   [PAUSED]" : "");
	line(3, A_NORMAL, "%s", "");
}

static double pct(uint64_t n, uint64_t of)
{
	return of ? 100.0 * (double)n / (double)of : 0.0;
}

/* Seconds from samples (-F), or plain samples (-c). */
static void amount(char *buf, size_t len, uint64_t n, const struct options *o)
{
	if (o->period)
		snprintf(buf, len, "%" PRIu64, n);
	else
		snprintf(buf, len, "%.2f", (double)n / o->rate_hz);
}

static void draw_rows(struct top *t)
{
	const struct options *o = t->opt;
	char self[32], total[32];
	int y = HEADER_ROWS + 1;
	size_t i;

	line(HEADER_ROWS, A_REVERSE, "%7s %7s %9s %9s  %s", "%Self", "%Total",
	     o->period ? "Self" : "Self(s)", o->period ? "Total" : "Total(s)",
	     "Function (file:line)");
	move(HEADER_ROWS, 0);
	for (i = 0; i < t->n && y < LINES; i++, y++) {
		const struct top_fn *f = &t->fn[t->order[i]];

		amount(self, sizeof(self), f->self, o);
		amount(total, sizeof(total), f->total, o);
		line(y, A_NORMAL, "%6.1f%% %6.1f%% %9s %9s  %s", pct(f->wself, t->wtotal),
		     pct(f->wtotal, t->wtotal), self, total, f->label);
	}
	move(y, 0);
	clrtobot();
}

static void draw(struct top *t)
{
	draw_header(t);
	draw_rows(t);
	refresh();
}

/* -------------------------------------------------------------------- */
/* Keys and the tick. */

static void key(struct top *t, int ch)
{
	static const char sort_keys[] = "st1234";
	const char *k;

	if (ch == 'q' || ch == 'Q') {
		t->quit = 1;
		session_stop(t->s, STOP_SIGNAL);
		return;
	}
	if (ch == 'p' || ch == 'P' || ch == ' ') {
		t->paused = !t->paused;
		return;
	}
	if (ch > 0 && ch < 128 && (k = strchr(sort_keys, ch))) {
		int i = (int)(k - sort_keys);

		t->sort = i < 2 ? i : i - 2;
		top_sort(t);
	}
}

/* Every key typed so far; 1 if there was any (a resize counts). */
static int read_keys(struct top *t)
{
	int ch, any = 0;

	while ((ch = getch()) != ERR) {
		key(t, ch);
		any = 1;
	}
	return any;
}

static void on_key(struct session *s, void *ctx)
{
	struct top *t = ctx;
	int pending = 0;

	/* Readable with nothing to read: the terminal is gone. */
	if (!ioctl(STDIN_FILENO, FIONREAD, &pending) && !pending) {
		session_stop(s, STOP_SIGNAL);
		return;
	}
	if (read_keys(t) && !t->quit)
		draw(t);
}

static void on_tick(struct session *s, void *ctx)
{
	struct top *t = ctx;
	int changed = 0;

	(void)s;
	if (!t->screen)
		return;
	if (!t->paused && mono_now() - t->last >= REFRESH_S - 0.05) {
		refresh_table(t);
		changed = 1;
	}
	/* getch() is also where ncurses reports a resize (KEY_RESIZE). */
	changed |= read_keys(t);
	if (changed && !t->quit)
		draw(t);
}

static void term_error(const char *what)
{
	tb_error("top: %s '%s' (set TERM to your terminal, e.g. TERM=xterm)", what,
		 getenv("TERM") ? getenv("TERM") : "");
}

/*
 * The table is drawn in place: a terminal that cannot put the cursor
 * where it is wanted (TERM=dumb, a hard-copy one) would show nothing usable.
 */
static int can_place_cursor(void)
{
	char *cup = tigetstr("cup");

	return cup && cup != (char *)-1 && tigetflag("hc") <= 0;
}

int top_attach(struct top *t, struct session *s, const struct options *o)
{
	int err;

	memset(t, 0, sizeof(*t));
	t->s = s;
	t->opt = o;
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		tb_error("top: %s is not a terminal (run top in a terminal; to record a profile, leave 'top' out)",
			 isatty(STDIN_FILENO) ? "stdout" : "stdin");
		return TB_EXIT_RUNTIME;
	}
	/* An unknown TERM is found out now, before BPF is loaded. */
	if (setupterm(NULL, STDOUT_FILENO, &err) != OK) {
		term_error("cannot drive terminal type");
		return TB_EXIT_RUNTIME;
	}
	err = can_place_cursor();
	del_curterm(cur_term);
	if (!err) {
		term_error("cannot move the cursor on terminal type");
		return TB_EXIT_RUNTIME;
	}
	session_set_tick(s, on_tick, t, 0.1);
	session_watch_fd(s, STDIN_FILENO, on_key, t);
	return 0;
}

int top_begin(struct top *t)
{
	SCREEN *scr;

	setlocale(LC_CTYPE, "");
	scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		term_error("cannot drive terminal type");
		return TB_EXIT_RUNTIME;
	}
	t->screen = scr;
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	t->last = mono_now();
	draw(t);
	return 0;
}

void top_end(struct top *t)
{
	struct session_view v;

	if (t->screen) {
		endwin();
		delscreen(t->screen);
		t->screen = NULL;
	}
	fns_free(t->fn, t->n);
	free(t->order);
	t->fn = NULL;
	t->order = NULL;
	t->n = 0;
	session_snapshot(t->s, &v);
	if (v.stop == STOP_TARGETS_EXITED)
		tb_info("top: the profiled process%s exited", v.ntargets > 1 ? "es" : "");
}
