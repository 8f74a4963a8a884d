// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The table of output formats. */
#include <string.h>
#include <strings.h>
#include "output/output.h"
#include "output/tby.h"

static const struct writer writers[] = {
	{ .name = "collapsed", .exts = ".folded .collapsed .txt", .write = output_collapsed,
	  .hint = "flamegraph.pl input" },
	{ .name = "svg", .exts = ".svg", .write = output_svg, .hint = "open it in a browser" },
	{ .name = "speedscope", .exts = ".speedscope.json .json", .write = output_speedscope,
	  .hint = "open it at https://www.speedscope.app" },
	{ .name = "pprof", .exts = ".pb.gz .pprof .pprof.gz", .write = output_pprof,
	  .hint = "open it with go tool pprof -http=: FILE" },
	{ .name = "summary", .exts = ".summary .summary.txt", .write = output_summary },
	{ .name = "pstats", .exts = ".pstats .prof", .write = output_pstats,
	  .hint = "read it with python3 -m pstats FILE" },
	{ .name = "heatmap", .exts = ".html .heatmap.html", .write = output_heatmap,
	  .hint = "open it in a browser" },
	{ .name = "gecko", .exts = ".gecko.json", .write = output_gecko,
	  .hint = "open it at https://profiler.firefox.com", .timed = 1, .gc_markers = 1 },
	{ .name = "chrometrace", .exts = ".trace.json", .write = output_chrometrace,
	  .hint = "open it at https://ui.perfetto.dev or chrome://tracing", .timed = 1 },
	{ .name = "binary", .exts = ".tby", .write = output_binary,
	  .hint = "turn it into any format with tachyon-bpf replay FILE -o OUT",
	  .gc_markers = 1 },
};

/* py-spy's names for the same formats (py-spy record -f ...). */
static const struct { const char *alias, *name; } aliases[] = {
	{ "flamegraph", "svg" },
	{ "raw", "collapsed" },
};

#define NR_WRITERS (sizeof(writers) / sizeof(writers[0]))

const struct writer *writer_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(aliases[i].alias, name))
			name = aliases[i].name;
	for (i = 0; i < NR_WRITERS; i++)
		if (!strcmp(writers[i].name, name))
			return &writers[i];
	return NULL;
}

static int ends_with(const char *s, const char *end, size_t n)
{
	size_t ls = strlen(s);

	/* prof.SVG is an SVG too. */
	return ls >= n && !strncasecmp(s + ls - n, end, n);
}

/* The longest matching ending wins: x.summary.txt is a summary, not collapsed. */
const struct writer *writer_for_path(const char *path)
{
	const struct writer *best = NULL;
	size_t i, best_len = 0;

	for (i = 0; i < NR_WRITERS; i++) {
		const char *e = writers[i].exts;

		while (*e) {
			size_t n = strcspn(e, " ");

			if (n > best_len && ends_with(path, e, n)) {
				best = &writers[i];
				best_len = n;
			}
			e += n;
			e += *e == ' ';
		}
	}
	return best;
}

const char *writer_unknown_ext(const char *path)
{
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	return dot && dot != base && !writer_for_path(path) ? dot : NULL;
}

const struct writer *writer_default(void)
{
	return &writers[0];
}

/* Each writer's name, or its main extension, in a list for messages. */
static const char *join(char *buf, int exts)
{
	size_t i;

	if (buf[0])
		return buf;
	for (i = 0; i < NR_WRITERS; i++) {
		const char *w = exts ? writers[i].exts : writers[i].name;

		if (i)
			strcat(buf, exts && i + 1 == NR_WRITERS ? " or " : ", ");
		strncat(buf, w, strcspn(w, " "));
	}
	return buf;
}

const char *writer_names(void)
{
	static char buf[256];

	return join(buf, 0);
}

const char *writer_extensions(void)
{
	static char buf[256];

	return join(buf, 1);
}
