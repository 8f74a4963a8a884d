// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A self-contained interactive flame graph (root at the bottom), in the
 * manner of flamegraph.pl: one <g> per frame with a <title> (the tooltip),
 * a <rect> sized by its sample count and a <text> label; inline CSS and
 * JavaScript add details on hover, click to zoom, and regex search
 * (Ctrl-F or the Search button, or ?s=REGEX in the URL) with the matched
 * share of all samples.
 *
 * Stacks merge by frame label, "name (file:line)", as in collapsed output
 * and py-spy's SVG: the same function called from two lines of its caller
 * is two frames. Siblings are sorted by label, so equal runs line up.
 * Frames narrower than MIN_WIDTH pixels are left out (their samples still
 * count in every parent's width), which keeps huge profiles small.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "util.h"
#include "output/output.h"
#include "output/diff.h"
#include "output/emit.h"

#define IMAGE_WIDTH	1200
#define XPAD		10
#define FRAME_HEIGHT	16
#define FONT_SIZE	12
#define FONT_WIDTH	0.59	/* average glyph width, in units of FONT_SIZE */
#define TOP_PAD		64	/* title, subtitle, buttons */
#define BOTTOM_PAD	32	/* details and matched lines */
#define MIN_WIDTH	0.1	/* pixels */
#define TEXT_MAX	1024	/* bytes of a label that can fit IMAGE_WIDTH */
#define NO_FRAME	UINT32_MAX
#define DELTA_NONE	0.005	/* samples: below this a normalised change is none */

struct node {
	uint64_t total;		/* samples in this frame and below */
	uint64_t x;		/* samples left of it, from the root's left edge */
	uint32_t frame;		/* rframe id; NO_FRAME for the root */
	uint32_t depth;
	double delta;		/* differential graph: samples gained (< 0: lost) */
};

struct flame {
	const struct resolved *r;
	struct node *v;		/* in depth-first order, siblings by label */
	size_t n;
	size_t cap;
	const struct svg_diff *diff;	/* NULL: an ordinary flame graph */
	double maxdelta;	/* largest |delta| below the root */
};

static int flame_push(struct flame *fl, uint32_t frame, uint32_t depth, uint64_t x)
{
	if (array_grow(&fl->v, &fl->cap, fl->n + 1, sizeof(*fl->v), 1024))
		return -ENOMEM;
	fl->v[fl->n++] = (struct node){ .frame = frame, .depth = depth, .x = x };
	return 0;
}

/* A differential graph: the change of a stack counts in each of its frames. */
static void add_delta(struct flame *fl, const size_t *path, const struct rsample *s, double d)
{
	uint32_t j;

	fl->v[0].delta += d;
	for (j = 0; j < s->depth; j++)
		fl->v[path[j + 1]].delta += d;
}

/*
 * Merge the samples into a tree. Sorted by stack, samples that share a
 * prefix are adjacent, so each one reuses the nodes of the previous one's
 * common prefix and opens new ones below it: no lookups, nodes come out in
 * depth-first order with siblings sorted, and a node's x is the number of
 * samples before the first one that reached it.
 */
static int flame_build(struct flame *fl, const size_t *idx)
{
	const struct resolved *r = fl->r;
	const struct rsample *prev = NULL;
	size_t *path = NULL, i;		/* node at each depth of the previous stack */
	uint32_t maxd = 0, j, same;
	uint64_t x = 0;

	for (i = 0; i < r->nsamples; i++)
		maxd = r->samples[i].depth > maxd ? r->samples[i].depth : maxd;
	path = malloc((maxd + 1) * sizeof(*path));
	if (!path || flame_push(fl, NO_FRAME, 0, 0))
		goto oom;
	path[0] = 0;
	for (i = 0; i < r->nsamples; i++) {
		const struct rsample *s = &r->samples[idx[i]];

		for (same = 0; prev && same < s->depth && same < prev->depth &&
		     s->frames[same] == prev->frames[same]; same++)
			;
		for (j = same; j < s->depth; j++) {
			if (flame_push(fl, s->frames[j]->id, j + 1, x))
				goto oom;
			path[j + 1] = fl->n - 1;
		}
		fl->v[0].total += s->count;
		for (j = 0; j < s->depth; j++)
			fl->v[path[j + 1]].total += s->count;
		if (fl->diff)
			add_delta(fl, path, s, (double)s->count - fl->diff->base[idx[i]]);
		x += s->count;
		prev = s;
	}
	free(path);
	return 0;
oom:
	free(path);
	return -ENOMEM;
}

/*
 * Deterministic per function name: warm for Python, cool blue for the
 * kernel, one grey for the frames the profiler made up.
 */
static void frame_color(const struct rframe *f, char *out, size_t len)
{
	uint64_t h;

	if (!f) {
		snprintf(out, len, "rgb(236,170,90)");
		return;
	}
	h = hash_bytes(f->name, strlen(f->name));
	if (frame_is_kernel(f)) {
		snprintf(out, len, "rgb(%u,%u,230)", 90 + (unsigned)(h & 0xff) * 60 / 255,
			 150 + (unsigned)(h >> 8 & 0xff) * 60 / 255);
		return;
	}
	if (frame_is_marker(f)) {
		snprintf(out, len, "rgb(176,176,176)");
		return;
	}
	snprintf(out, len, "rgb(%u,%u,%u)", 205 + (unsigned)(h & 0xff) * 50 / 255,
		 50 + (unsigned)(h >> 8 & 0xff) * 140 / 255, (unsigned)(h >> 16 & 0xff) * 55 / 255);
}

/*
 * A differential graph's colours, as flamegraph.pl draws difffolded.pl's
 * output: red for a frame that grew, blue for one that shrank, the deeper
 * the larger the change against the largest one; near white for none.
 */
static void delta_color(double delta, double maxdelta, char *out, size_t len)
{
	double mag = maxdelta > 0 ? (delta < 0 ? -delta : delta) / maxdelta : 0;
	unsigned v = (unsigned)(210 * (1 - (mag > 1 ? 1 : mag)) + 0.5);

	if (delta > DELTA_NONE)
		snprintf(out, len, "rgb(255,%u,%u)", v, v);
	else if (delta < -DELTA_NONE)
		snprintf(out, len, "rgb(%u,%u,255)", v, v);
	else
		snprintf(out, len, "rgb(250,250,250)");
}

/* "name (file:line)", or the bare name of a marker frame. */
static void frame_label(const struct rframe *f, char *out, size_t len)
{
	if (!f)
		snprintf(out, len, "all");
	else if (frame_is_marker(f))
		snprintf(out, len, "%s", f->name);
	else {
		char tail[32], op[FRAME_OP_MAX];

		frame_tail(f, f->line, tail, sizeof(tail));
		frame_op_suffix(f, op, sizeof(op));
		snprintf(out, len, "%s (%s%s%s", f->name, f->file, tail, op);
	}
}

/* Bytes of the first n glyphs of s (fewer if s is shorter), at most max. */
static size_t glyphs(const char *s, size_t n, size_t max)
{
	size_t pos = 0, step;
	uint32_t cp;

	while (n-- && (step = utf8_next(s + pos, &cp)) && pos + step <= max)
		pos += step;
	return pos;
}

/* As much of label as fits width pixels, ".." marking a cut; "" under 3 glyphs. */
static void fit_text(const char *label, double width, char *out, size_t len)
{
	size_t fit = (size_t)(width / (FONT_SIZE * FONT_WIDTH)), pos;

	out[0] = 0;
	if (fit < 3)
		return;
	pos = glyphs(label, fit, len - 3);
	if (!label[pos]) {
		memcpy(out, label, pos + 1);
		return;
	}
	pos = glyphs(label, fit - 2, len - 3);
	memcpy(out, label, pos);
	memcpy(out + pos, "..", 3);
}

static double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * (double)n / (double)total : 100.0;
}

static void frame_g(struct emit *e, const struct flame *fl, const struct node *nd,
		    double scale, int height)
{
	const struct rframe *f = nd->frame == NO_FRAME ? NULL : fl->r->frames[nd->frame];
	double x = XPAD + (double)nd->x * scale;
	double w = nd->frame == NO_FRAME ? IMAGE_WIDTH - 2 * XPAD : (double)nd->total * scale;
	int y = height - BOTTOM_PAD - (int)(nd->depth + 1) * FRAME_HEIGHT;
	char label[8192], text[TEXT_MAX], color[32], tail[FRAME_OP_MAX];

	frame_label(f, label, sizeof(label));
	fit_text(label, w - 6, text, sizeof(text));
	if (fl->diff)
		delta_color(nd->delta, fl->maxdelta, color, sizeof(color));
	else
		frame_color(f, color, sizeof(color));
	emit_str(e, "<g class=\"f\"><title>");
	if (f && !frame_is_marker(f)) {
		emit_xml(e, f->name);
		emit_str(e, " (");
		emit_xml(e, f->file);
		frame_tail(f, f->line, tail, sizeof(tail));
		emit_str(e, tail);
		frame_op_suffix(f, tail, sizeof(tail));
		emit_str(e, tail);
	} else {
		emit_xml(e, label);
	}
	emit_printf(e, "\n%" PRIu64 " samples (%.2f%%)", nd->total, pct(nd->total, fl->v[0].total));
	if (fl->diff) {	/* the change, also as a share of all samples ("+0", not "-0") */
		double d = nd->delta > -DELTA_NONE && nd->delta < DELTA_NONE ? 0 : nd->delta;

		emit_printf(e, "; delta %+.0f (%+.2f%%)", d,
			    fl->v[0].total ? 100.0 * d / (double)fl->v[0].total : 0.0);
	}
	emit_str(e, "</title>");
	emit_printf(e, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
		    x, y, w, FRAME_HEIGHT - 1, color);
	emit_printf(e, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + FRAME_HEIGHT - 5);
	emit_xml(e, text);
	emit_str(e, "</text></g>\n");
}

static const char svg_style[] =
	"<style type=\"text/css\">\n"
	"text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
	"#title { font-size: 17px; text-anchor: middle; }\n"
	"#subtitle { fill: #555; text-anchor: middle; }\n"
	"#frames text { pointer-events: none; }\n"
	"#frames rect { rx: 2px; ry: 2px; }\n"
	".f { cursor: pointer; }\n"
	".f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
	".btn { cursor: pointer; fill: #1a4f9c; }\n"
	".btn:hover { text-decoration: underline; }\n"
	".hide { display: none; }\n"
	".parent { opacity: 0.5; }\n"
	"</style>\n";

/*
 * Frames are read back from the DOM, so the script carries no data. Labels
 * come from each <title>'s first line, counts from its second.
 */
static const char svg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var W = 1200, XPAD = 10, GLYPH = 12 * 0.59, EPS = 0.02, MARK = 'rgb(230,0,230)';\n"
	"var F = [], root = null, zoomed = null, searching = null;\n"
	"var details, matched, unzoomBtn, searchBtn;\n"
	"function $(id) { return document.getElementById(id); }\n"
	"function fit(label, w) {\n"
	"  var n = Math.floor((w - 6) / GLYPH), cs;\n"
	"  if (n < 3) return '';\n"
	"  cs = Array.from(label);\n"
	"  return cs.length <= n ? label : cs.slice(0, n - 2).join('') + '..';\n"
	"}\n"
	"function place(o, x, w) {\n"
	"  o.r.setAttribute('x', x.toFixed(2));\n"
	"  o.r.setAttribute('width', w.toFixed(2));\n"
	"  o.t.setAttribute('x', (x + 3).toFixed(2));\n"
	"  o.t.textContent = fit(o.label, w);\n"
	"}\n"
	"function pct(n) { return (root.n ? 100 * n / root.n : 0).toFixed(2) + '%'; }\n"
	"function frameOf(ev) {\n"
	"  var g = ev.target.closest ? ev.target.closest('g.f') : null;\n"
	"  return g ? g.tb : null;\n"
	"}\n"
	"function zoom(f) {\n"
	"  var scale, full = W - 2 * XPAD;\n"
	"  if (f === root) return unzoom();\n"
	"  zoomed = f;\n"
	"  unzoomBtn.classList.remove('hide');\n"
	"  scale = full / f.w;\n"
	"  F.forEach(function (o) {\n"
	"    var show = false, x = 0, w = 0, parent = false;\n"
	"    if (o.y > f.y) {\n"
	"      if (o.x <= f.x + EPS && o.x + o.w >= f.x + f.w - EPS) {\n"
	"        show = parent = true; x = XPAD; w = full;\n"
	"      }\n"
	"    } else if (o.x >= f.x - EPS && o.x + o.w <= f.x + f.w + EPS) {\n"
	"      show = true; x = XPAD + (o.x - f.x) * scale; w = o.w * scale;\n"
	"    }\n"
	"    o.g.classList.toggle('hide', !show);\n"
	"    o.g.classList.toggle('parent', parent);\n"
	"    if (show) place(o, x, w);\n"
	"  });\n"
	"}\n"
	"function unzoom() {\n"
	"  zoomed = null;\n"
	"  unzoomBtn.classList.add('hide');\n"
	"  F.forEach(function (o) {\n"
	"    o.g.classList.remove('hide', 'parent');\n"
	"    place(o, o.x, o.w);\n"
	"  });\n"
	"}\n"
	"function resetSearch() {\n"
	"  searching = null;\n"
	"  F.forEach(function (o) { o.r.setAttribute('fill', o.fill); });\n"
	"  matched.textContent = ' ';\n"
	"  searchBtn.textContent = 'Search';\n"
	"}\n"
	"function search(term) {\n"
	"  var re, hits = [], sum = 0, end = -Infinity;\n"
	"  if (term === undefined)\n"
	"    term = window.prompt('Search frames (regular expression):', searching || '');\n"
	"  if (term === null) return;\n"
	"  if (term === '') return resetSearch();\n"
	"  try { re = new RegExp(term); } catch (e) { window.alert('Bad regular expression: ' + e.message); return; }\n"
	"  searching = term;\n"
	"  F.forEach(function (o) {\n"
	"    var hit = o !== root && re.test(o.label);\n"
	"    o.r.setAttribute('fill', hit ? MARK : o.fill);\n"
	"    if (hit) hits.push(o);\n"
	"  });\n"
	"  /* count a match nested in another (recursion) once */\n"
	"  hits.sort(function (a, b) { return a.x - b.x || b.y - a.y; });\n"
	"  hits.forEach(function (o) {\n"
	"    if (o.x >= end - EPS) { sum += o.n; end = o.x + o.w; }\n"
	"  });\n"
	"  matched.textContent = 'Matched: ' + pct(sum) + ' (' + sum + ' samples)';\n"
	"  searchBtn.textContent = 'Reset Search';\n"
	"}\n"
	"function init() {\n"
	"  var gs = $('frames').getElementsByTagName('g'), i, q;\n"
	"  details = $('details'); matched = $('matched');\n"
	"  unzoomBtn = $('unzoom'); searchBtn = $('search');\n"
	"  for (i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
	"    var lines = g.getElementsByTagName('title')[0].textContent.split('\\n');\n"
	"    var m = /^(\\d+) samples/.exec(lines[1] || '');\n"
	"    var o = { g: g, r: r, t: g.getElementsByTagName('text')[0], label: lines[0],\n"
	"      info: lines.join(': '), n: m ? +m[1] : 0, fill: r.getAttribute('fill'),\n"
	"      x: +r.getAttribute('x'), y: +r.getAttribute('y'), w: +r.getAttribute('width') };\n"
	"    g.tb = o;\n"
	"    F.push(o);\n"
	"    if (!root || o.y > root.y) root = o;\n"
	"  }\n"
	"  $('frames').addEventListener('mouseover', function (ev) {\n"
	"    var o = frameOf(ev);\n"
	"    if (o) details.textContent = o.info;\n"
	"  });\n"
	"  $('frames').addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  $('frames').addEventListener('click', function (ev) {\n"
	"    var o = frameOf(ev);\n"
	"    if (o) zoom(o);\n"
	"  });\n"
	"  unzoomBtn.addEventListener('click', unzoom);\n"
	"  searchBtn.addEventListener('click', function () {\n"
	"    if (searching !== null) resetSearch(); else search();\n"
	"  });\n"
	"  document.addEventListener('keydown', function (ev) {\n"
	"    if ((ev.ctrlKey || ev.metaKey) && (ev.key === 'f' || ev.key === 'F')) {\n"
	"      ev.preventDefault();\n"
	"      search();\n"
	"    } else if (ev.key === 'Escape') {\n"
	"      if (searching !== null) resetSearch(); else if (zoomed) unzoom();\n"
	"    }\n"
	"  });\n"
	"  q = /[?&]s=([^&]*)/.exec(window.location.search);\n"
	"  if (q) search(decodeURIComponent(q[1].replace(/\\+/g, ' ')));\n"
	"}\n"
	"window.addEventListener('load', init);\n"
	"]]></script>\n";

static void subtitle(struct emit *e, const struct resolved *r)
{
	char what[96];

	resolved_what(r, what, sizeof(what));
	emit_printf(e, "%" PRIu64 " samples, %s, %.1f s", r->total, what, r->duration_s);
	emit_procs(e, r, 1);
}

static void svg_head(struct emit *e, const struct flame *fl, int height)
{
	const struct resolved *r = fl->r;

	emit_str(e, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	emit_printf(e, "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		    "xmlns=\"http://www.w3.org/2000/svg\">\n",
		    IMAGE_WIDTH, height, IMAGE_WIDTH, height);
	emit_str(e, svg_style);
	emit_str(e, svg_script);
	emit_str(e, "<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
		 "<stop stop-color=\"#eeeeee\" offset=\"5%\"/>"
		 "<stop stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient></defs>\n");
	emit_printf(e, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#bg)\"/>\n",
		    IMAGE_WIDTH, height);
	emit_printf(e, "<text id=\"title\" x=\"%d\" y=\"24\">%s</text>\n",
		    IMAGE_WIDTH / 2, fl->diff ? "Differential Flame Graph" : "Flame Graph");
	emit_printf(e, "<text id=\"subtitle\" x=\"%d\" y=\"44\">", IMAGE_WIDTH / 2);
	if (fl->diff)
		emit_xml(e, fl->diff->subtitle);
	else
		subtitle(e, r);
	emit_str(e, "</text>\n");
	emit_printf(e, "<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
		    XPAD);
	emit_printf(e, "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" "
		    "text-anchor=\"end\">Search</text>\n", IMAGE_WIDTH - XPAD);
	emit_printf(e, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, height - 12);
	emit_printf(e, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		    IMAGE_WIDTH - XPAD, height - 12);
}

/* The root always shows, even with no samples. */
static int visible(const struct flame *fl, size_t i, double scale)
{
	return !i || (double)fl->v[i].total * scale >= MIN_WIDTH;
}

/*
 * Colours of a differential graph are relative to the largest change drawn
 * (the root's aside): a stack gone from the new profile has no width.
 */
static void find_maxdelta(struct flame *fl, double scale)
{
	size_t i;

	for (i = 1; i < fl->n; i++) {
		double d = fl->v[i].delta < 0 ? -fl->v[i].delta : fl->v[i].delta;

		if (visible(fl, i, scale) && d > fl->maxdelta)
			fl->maxdelta = d;
	}
}

static void svg_body(struct emit *e, struct flame *fl)
{
	double scale = fl->v[0].total ? (double)(IMAGE_WIDTH - 2 * XPAD) / fl->v[0].total : 0;
	uint32_t depth = 0;
	size_t i;
	int height;

	/* A child is never wider than its parent: skipping narrow nodes prunes subtrees. */
	for (i = 0; i < fl->n; i++)
		if (visible(fl, i, scale) && fl->v[i].depth > depth)
			depth = fl->v[i].depth;
	height = TOP_PAD + (int)(depth + 1) * FRAME_HEIGHT + BOTTOM_PAD;
	if (fl->diff)
		find_maxdelta(fl, scale);
	svg_head(e, fl, height);
	emit_str(e, "<g id=\"frames\">\n");
	for (i = 0; i < fl->n; i++)
		if (visible(fl, i, scale))
			frame_g(e, fl, &fl->v[i], scale, height);
	emit_str(e, "</g>\n</svg>\n");
}

static int svg_write(FILE *out, const struct resolved *r, const struct svg_diff *diff)
{
	struct flame fl = { .r = r, .diff = diff };
	struct emit e;
	size_t *idx;
	int ret;

	idx = samples_sorted(r, 0);
	if (!idx)
		return -errno;
	ret = flame_build(&fl, idx);
	free(idx);
	if (ret) {
		free(fl.v);
		return ret;
	}
	emit_init(&e, out);
	svg_body(&e, &fl);
	free(fl.v);
	return emit_done(&e);
}

int output_svg(FILE *out, const struct resolved *r)
{
	return svg_write(out, r, NULL);
}

int output_svg_diff(FILE *out, const struct resolved *r, const struct svg_diff *diff)
{
	return svg_write(out, r, diff);
}
