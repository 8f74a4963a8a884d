// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A self-contained HTML page: the source of the hottest functions with each
 * line's self samples (the line was executing) and total samples (the line
 * was on the stack: executing, or calling what was), coloured by share, and
 * a table of those functions linking to their lines. CPython's own sampler
 * calls this view "heatmap"; it answers "which line" where a flame graph
 * answers "which path".
 *
 * Sources are read when the page is written: from the target's filesystem
 * root (/proc/PID/root, so a container's files are its own) while it runs,
 * else from the path as we see it. A file that cannot be read still gets its
 * counted lines, without text.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "output/output.h"
#include "util.h"
#include "output/emit.h"

#define HEAT_FUNCS	25		/* functions listed and shown */
#define HEAT_CONTEXT	2		/* lines shown around each counted line */
#define HEAT_SRC_MAX	(8 << 20)	/* bytes of one source file read */
#define NO_GROUP	UINT32_MAX

/* One source line: every frame whose (file, line) is this one. */
struct hline {
	const char *file;
	int32_t line;
	uint32_t file_idx;
	uint64_t self, total;
	size_t stamp;		/* 1 + the last sample counted in total */
};

struct hfunc {
	uint32_t file_idx;	/* its file's index, if has_file */
	int has_file;		/* some frame of it has a (file, line) */
};

/* A source file's text, split into lines (pointers into buf). */
struct source {
	char *buf;
	char **lines;		/* lines[0] is line 1 */
	size_t n;
	char path[4096 + 64];	/* where it was read, or the last place tried */
};

struct heat {
	const struct resolved *r;
	struct func_table ft;
	struct hline *lines;	/* sorted by file, line */
	size_t nlines;
	uint32_t *group;	/* rframe id -> index in lines, NO_GROUP for markers */
	struct hfunc *funcs;	/* by func_table index */
	struct func_count *fc;	/* self and total, by func_table index */
	uint32_t *top;		/* the hottest functions' indexes, by total */
	size_t ntop;
	uint32_t nfiles;
};

/* The line a frame stands for: its own, or its function's first with --nolineno. */
static int32_t frame_line(const struct rframe *f)
{
	return f->line == RFRAME_NO_LINE ? f->firstlineno : f->line;
}

static int cmp_frame_line(const void *a, const void *b)
{
	const struct rframe *x = *(const struct rframe *const *)a;
	const struct rframe *y = *(const struct rframe *const *)b;
	int c = strcmp(x->file, y->file);

	if (c)
		return c;
	return (frame_line(x) > frame_line(y)) - (frame_line(x) < frame_line(y));
}

/* Group the profile's frames by (file, line). */
static int build_lines(struct heat *h)
{
	const struct resolved *r = h->r;
	const struct rframe **v = malloc((r->nframes + 1) * sizeof(*v));
	size_t i, n = 0;

	h->group = malloc((r->nframes + 1) * sizeof(*h->group));
	h->lines = calloc(r->nframes + 1, sizeof(*h->lines));
	if (!v || !h->group || !h->lines) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < r->nframes; i++) {
		h->group[i] = NO_GROUP;
		if (!frame_is_marker(r->frames[i]) && frame_line(r->frames[i]) > 0)
			v[n++] = r->frames[i];
	}
	qsort(v, n, sizeof(*v), cmp_frame_line);
	for (i = 0; i < n; i++) {
		struct hline *last = h->nlines ? &h->lines[h->nlines - 1] : NULL;

		if (!last || cmp_frame_line(&v[i - 1], &v[i])) {
			if (!last || strcmp(last->file, v[i]->file))
				h->nfiles++;
			last = &h->lines[h->nlines++];
			last->file = v[i]->file;
			last->line = frame_line(v[i]);
			last->file_idx = h->nfiles - 1;
		}
		h->group[v[i]->id] = (uint32_t)(h->nlines - 1);
	}
	free(v);
	return 0;
}

/* Self and total of every line; a line that recurs in one sample counts
 * once in its total. */
static void count_lines(struct heat *h)
{
	const struct resolved *r = h->r;
	size_t i;
	uint32_t j;

	for (i = 0; i < r->nsamples; i++) {
		const struct rsample *s = &r->samples[i];

		for (j = 0; j < s->depth; j++) {
			uint32_t g = h->group[s->frames[j]->id];

			if (g == NO_GROUP)
				continue;
			if (j == s->depth - 1)
				h->lines[g].self += s->count;
			if (h->lines[g].stamp != i + 1) {
				h->lines[g].stamp = i + 1;
				h->lines[g].total += s->count;
			}
		}
	}
}

static int cmp_top(const void *a, const void *b, void *arg)
{
	const struct func_count *fc = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct func_count *x = &fc[i], *y = &fc[j];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return (i > j) - (i < j);
}

/* The hottest functions with a source file, by total samples. */
static int pick_top(struct heat *h)
{
	const struct resolved *r = h->r;
	size_t i, n = 0;

	h->top = malloc((h->ft.n + 1) * sizeof(*h->top));
	if (!h->top)
		return -ENOMEM;
	for (i = 0; i < r->nframes; i++) {
		struct hfunc *fn = &h->funcs[h->ft.of_frame[i]];

		if (h->group[i] == NO_GROUP)
			continue;
		fn->has_file = 1;
		fn->file_idx = h->lines[h->group[i]].file_idx;
	}
	for (i = 0; i < h->ft.n; i++)
		if (h->fc[i].total && h->funcs[i].has_file)
			h->top[n++] = (uint32_t)i;
	qsort_r(h->top, n, sizeof(*h->top), cmp_top, h->fc);
	h->ntop = n < HEAT_FUNCS ? n : HEAT_FUNCS;
	return 0;
}

static int read_text(const char *path, struct source *src)
{
	FILE *f = fopen(path, "re");
	struct stat st;
	size_t n, i, cap = 0;

	snprintf(src->path, sizeof(src->path), "%s", path);
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || st.st_size > HEAT_SRC_MAX) {
		fclose(f);
		return -EINVAL;
	}
	src->buf = malloc((size_t)st.st_size + 1);
	if (!src->buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(src->buf, 1, (size_t)st.st_size, f);
	fclose(f);
	src->buf[n] = 0;
	for (i = 0; i <= n; i++) {
		char *line = &src->buf[i];

		if (array_grow(&src->lines, &cap, src->n + 1, sizeof(*src->lines), 256))
			return -ENOMEM;
		src->lines[src->n++] = line;
		i += strcspn(line, "\n");
		src->buf[i < n ? i : n] = 0;
	}
	return 0;
}

static void source_free(struct source *src)
{
	free(src->buf);
	free(src->lines);
	memset(src, 0, sizeof(*src));
}

/*
 * The file, as the profiled process sees it: absolute, or relative to its
 * working directory (file names are shortened against it).
 */
static void source_load(const struct resolved *r, const char *file, struct source *src)
{
	char path[sizeof(src->path)];
	size_t i;

	for (i = 0; i < r->nprocs; i++) {
		const struct rproc *p = &r->procs[i];
		const char *dir = file[0] == '/' ? "" : p->cwd;

		if (file[0] != '/' && !dir[0])
			continue;
		snprintf(path, sizeof(path), "/proc/%d/root%s%s", p->pid, dir, file);
		if (p->pid > 0 && !read_text(path, src))
			return;
		source_free(src);
		snprintf(path, sizeof(path), "%s%s", dir, file);
		if (!read_text(path, src))
			return;
		source_free(src);
	}
	if (file[0] == '/' && !read_text(file, src))
		return;
	source_free(src);
	snprintf(src->path, sizeof(src->path), "%s", file);
}

static const char STYLE[] =
	"<style>\n"
	"body{font:13px sans-serif;margin:16px;color:#222}\n"
	"h1{font-size:18px;margin:0 0 4px}h2{font-size:14px;margin:20px 0 4px}\n"
	".sub{color:#666;margin-bottom:12px}\n"
	"table{border-collapse:collapse}\n"
	"td,th{padding:1px 8px;text-align:right;white-space:nowrap}\n"
	"th{background:#eee}td.l,th.l{text-align:left}\n"
	"table.src td{font:12px monospace;padding:0 8px}\n"
	"table.src td.code{text-align:left;white-space:pre;"
	"background:rgba(230,60,0,var(--t))}\n"
	"body.self table.src td.code{background:rgba(230,60,0,var(--s))}\n"
	"td.n{color:#888}td.gap{color:#aaa;text-align:left}\n"
	"tr:target td{outline:2px solid #06c}\n"
	".legend span{display:inline-block;width:40px;height:10px}\n"
	"</style>\n";

/* ?by=self colours lines by self samples instead of total. */
static const char SCRIPT[] =
	"<script>\n"
	"(function(){var by=new URLSearchParams(location.search).get('by');\n"
	"var b=document.getElementById('by');\n"
	"function set(v){document.body.classList.toggle('self',v==='self');"
	"b.textContent='colour by '+(v==='self'?'total':'self');b.dataset.v=v;}\n"
	"b.addEventListener('click',function(){set(b.dataset.v==='self'?'total':'self');});\n"
	"set(by==='self'?'self':'total');})();\n"
	"</script>\n";

static double share(uint64_t n, uint64_t total)
{
	return total ? (double)n / (double)total : 0.0;
}

/* A line's colour: the square root of its share, so a 5 % line still shows
 * next to a 40 % one (linear, it is all but white). */
static double heat(uint64_t n, uint64_t total)
{
	return sqrt(share(n, total));
}

static void emit_head(struct emit *e, const struct resolved *r)
{
	char what[160];

	resolved_what(r, what, sizeof(what));
	emit_str(e, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
		 "<title>tachyon-bpf heatmap</title>\n");
	emit_str(e, STYLE);
	emit_str(e, "</head><body>\n<h1>tachyon-bpf heatmap</h1>\n<div class=\"sub\">");
	emit_printf(e, "%" PRIu64 " samples in %.1f s (", r->total, r->duration_s);
	emit_xml(e, what);
	emit_str(e, ")");
	emit_procs(e, r, 1);
	emit_str(e, ". Self: the line was running; total: it was on the stack. "
		 "<button id=\"by\"></button> <span class=\"legend\">0 "
		 "<span style=\"background:linear-gradient(90deg,rgba(230,60,0,0),"
		 "rgba(230,60,0,1))\"></span> 100%</span></div>\n");
}

static void emit_func_row(struct emit *e, const struct heat *h, uint32_t fi)
{
	const struct func_count *fc = &h->fc[fi];
	const struct rframe *f = h->ft.funcs[fi];
	uint64_t total = h->r->total;

	emit_printf(e, "<tr><td>%.2f%%</td><td>%.2f%%</td><td>%" PRIu64 "</td><td>%" PRIu64
		    "</td><td class=\"l\"><a href=\"#", 100 * share(fc->self, total),
		    100 * share(fc->total, total), fc->self, fc->total);
	emit_printf(e, "f%ul%d\">", h->funcs[fi].file_idx, f->firstlineno);
	emit_xml(e, f->name);
	emit_str(e, "</a> (");
	emit_xml(e, f->file);
	emit_printf(e, ":%d)</td></tr>\n", f->firstlineno);
}

/* One row of source: line number, self, total, text; id "f<FILE>l<LINE>". */
static void emit_src_row(struct emit *e, const struct heat *h, uint32_t file_idx, int32_t line,
			 const struct hline *hl, const struct source *src)
{
	uint64_t total = h->r->total;
	const char *text = (size_t)line <= src->n && line > 0 ? src->lines[line - 1] : "";

	emit_printf(e, "<tr id=\"f%ul%d\"", file_idx, line);
	if (hl)
		emit_printf(e, " data-self=\"%" PRIu64 "\" data-total=\"%" PRIu64
			    "\" style=\"--t:%.3f;--s:%.3f\"", hl->self, hl->total,
			    heat(hl->total, total), heat(hl->self, total));
	else
		emit_str(e, " style=\"--t:0;--s:0\"");
	emit_printf(e, "><td class=\"n\">%d</td>", line);
	if (hl)
		emit_printf(e, "<td>%" PRIu64 "</td><td>%" PRIu64 "</td>", hl->self, hl->total);
	else
		emit_str(e, "<td></td><td></td>");
	emit_str(e, "<td class=\"code\">");
	emit_xml(e, text);
	emit_str(e, "</td></tr>\n");
}

/* The counted line of file_idx at `line`, or NULL (a binary search). */
static const struct hline *line_at(const struct heat *h, uint32_t file_idx, int32_t line)
{
	size_t lo = 0, hi = h->nlines;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct hline *m = &h->lines[mid];

		if (m->file_idx < file_idx || (m->file_idx == file_idx && m->line < line))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < h->nlines && h->lines[lo].file_idx == file_idx && h->lines[lo].line == line)
		return &h->lines[lo];
	return NULL;
}

struct range {
	int32_t first, last;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return (x->first > y->first) - (x->first < y->first);
}

static void add_window(struct range *out, size_t *n, int32_t line)
{
	out[*n].first = line > HEAT_CONTEXT ? line - HEAT_CONTEXT : 1;
	out[*n].last = line + HEAT_CONTEXT;
	(*n)++;
}

/*
 * What to show of one file: every counted line and every listed function's
 * first line, with HEAT_CONTEXT lines around, sorted and merged (a gap of
 * one line is shown rather than elided).
 */
static size_t file_ranges(const struct heat *h, uint32_t file_idx, struct range *out)
{
	size_t i, n = 0, m = 0;

	for (i = 0; i < h->nlines; i++)
		if (h->lines[i].file_idx == file_idx)
			add_window(out, &n, h->lines[i].line);
	for (i = 0; i < h->ntop; i++) {
		const struct rframe *f = h->ft.funcs[h->top[i]];

		if (h->funcs[h->top[i]].file_idx == file_idx && f->firstlineno > 0)
			add_window(out, &n, f->firstlineno);
	}
	qsort(out, n, sizeof(*out), cmp_range);
	for (i = 0; i < n; i++) {
		if (m && out[i].first <= out[m - 1].last + 2) {
			if (out[i].last > out[m - 1].last)
				out[m - 1].last = out[i].last;
			continue;
		}
		out[m++] = out[i];
	}
	return m;
}

static int emit_file(struct emit *e, const struct heat *h, uint32_t file_idx, const char *file,
		     struct range *ranges)
{
	struct source src = { 0 };
	size_t i, n = file_ranges(h, file_idx, ranges);
	int32_t line;

	source_load(h->r, file, &src);
	emit_str(e, "<h2>");
	emit_xml(e, file);
	emit_str(e, "</h2>\n");
	if (!src.n) {
		emit_str(e, "<div class=\"sub\">source not readable here (");
		emit_xml(e, src.path);
		emit_str(e, "): counted lines only</div>\n");
	}
	emit_str(e, "<table class=\"src\"><tr><th>line</th><th>self</th><th>total</th>"
		 "<th class=\"l\">source</th></tr>\n");
	for (i = 0; i < n; i++) {
		if (i)
			emit_str(e, "<tr><td class=\"gap\" colspan=\"4\">&#8942;</td></tr>\n");
		for (line = ranges[i].first; line <= ranges[i].last; line++) {
			const struct hline *hl = line_at(h, file_idx, line);

			/* past the end of a file we could read, only counted lines */
			if (src.n && (size_t)line > src.n && !hl)
				break;
			if (!src.n && !hl)
				continue;
			emit_src_row(e, h, file_idx, line, hl, &src);
		}
	}
	emit_str(e, "</table>\n");
	source_free(&src);
	return 0;
}

static int emit_page(struct emit *e, struct heat *h)
{
	struct range *ranges = malloc((h->nlines + h->ntop + 1) * sizeof(*ranges));
	uint8_t *done = calloc(h->nfiles + 1, 1);
	size_t i;

	if (!ranges || !done) {
		free(ranges);
		free(done);
		return -ENOMEM;
	}
	emit_head(e, h->r);
	emit_printf(e, "<h2>hottest functions (%zu of %zu)</h2>\n", h->ntop, h->ft.n);
	emit_str(e, "<table><tr><th>self%</th><th>total%</th><th>self</th><th>total</th>"
		 "<th class=\"l\">function (file:first line)</th></tr>\n");
	for (i = 0; i < h->ntop; i++)
		emit_func_row(e, h, h->top[i]);
	emit_str(e, "</table>\n");
	for (i = 0; i < h->ntop; i++) {
		const struct rframe *f = h->ft.funcs[h->top[i]];
		uint32_t fi = h->funcs[h->top[i]].file_idx;

		if (done[fi])
			continue;
		done[fi] = 1;
		emit_file(e, h, fi, f->file, ranges);
	}
	emit_str(e, SCRIPT);
	emit_str(e, "</body></html>\n");
	free(ranges);
	free(done);
	return 0;
}

static void heat_free(struct heat *h)
{
	funcs_free(&h->ft);
	free(h->lines);
	free(h->group);
	free(h->funcs);
	free(h->fc);
	free(h->top);
}

int output_heatmap(FILE *out, const struct resolved *r)
{
	struct heat h = { .r = r };
	struct emit e;
	int err = resolved_check(r);

	if (err || (err = funcs_build(r, &h.ft)))
		return err;
	h.funcs = calloc(h.ft.n + 1, sizeof(*h.funcs));
	h.fc = calloc(h.ft.n + 1, sizeof(*h.fc));
	err = h.funcs && h.fc ? build_lines(&h) : -ENOMEM;
	if (!err)
		err = resolved_function_totals(r, &h.ft, h.fc);
	if (!err) {
		count_lines(&h);
		err = pick_top(&h);
	}
	if (!err) {
		emit_init(&e, out);
		err = emit_page(&e, &h);
		if (!err)
			err = emit_done(&e);
	}
	heat_free(&h);
	return err;
}
