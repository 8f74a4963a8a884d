/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Writers: one per output format, each taking the resolved profile
 * (output/model.h) and nothing else. Each returns 0, or a negative errno
 * (-EPIPE when the reader went away, -EINVAL for a malformed profile).
 */
#ifndef TB_OUTPUT_OUTPUT_H
#define TB_OUTPUT_OUTPUT_H

#include <stdio.h>
#include "output/model.h"

/* Collapsed lines, "frame;frame;frame count", sorted and merged. */
struct folded_line {
	char *stack;
	uint64_t count;
};

struct folded {
	struct folded_line *v;
	size_t n;
	uint64_t total;
};

/* One line per distinct label stack; frames "name (file:line)" made safe.
 * 0 or -ENOMEM. */
int resolved_fold(const struct resolved *r, struct folded *out);
void folded_free(struct folded *f);
/* Sort by stack and merge equal lines. */
void folded_merge(struct folded *f);
/* "name (file:line)" with ';' and control characters replaced. */
void collapsed_label(const struct rframe *f, char *out, size_t len);

/* "frame;frame;frame count" per line, as flamegraph.pl reads it. */
int output_collapsed(FILE *out, const struct resolved *r);

/*
 * The other formats:
 * svg: interactive flame graph (stacks merged by frame label);
 * speedscope: speedscope.app JSON, one sampled profile per process/thread;
 * pprof: gzipped perftools.profiles.Profile (go tool pprof);
 * summary: top functions by self samples, with total (inclusive) samples.
 */
int output_svg(FILE *out, const struct resolved *r);
int output_speedscope(FILE *out, const struct resolved *r);
int output_pprof(FILE *out, const struct resolved *r);
int output_summary(FILE *out, const struct resolved *r);
/* pstats: cProfile's marshal dict, for python3 -m pstats (output/pstats.c). */
int output_pstats(FILE *out, const struct resolved *r);
/* heatmap: HTML page, the hottest functions' source lines with their counts. */
int output_heatmap(FILE *out, const struct resolved *r);
/*
 * The time-ordered formats, from resolved.ticks: gecko, the Firefox
 * Profiler's (output/gecko.c); chrometrace, Chrome's trace events as py-spy
 * writes them (output/chrometrace.c). speedscope writes py-spy's
 * time-ordered shape when the profile has ticks (--timeline).
 */
int output_gecko(FILE *out, const struct resolved *r);
int output_chrometrace(FILE *out, const struct resolved *r);

/* The formats, by name; --format or -o's extension picks one. */
struct writer {
	const char *name;
	const char *exts;	/* space-separated file name endings */
	int (*write)(FILE *out, const struct resolved *r);
	const char *hint;	/* what to do with the file, for "wrote FILE (hint)" */
	int timed;		/* needs the samples in time order (resolved.ticks) */
	int gc_markers;		/* shows garbage collections: needs RS_GC read per sample */
};

const struct writer *writer_find(const char *name);
/* The writer for a path's extension, or NULL if none matches. */
const struct writer *writer_for_path(const char *path);
const struct writer *writer_default(void);
/*
 * The extension of path's file name ("x.html": ".html") when it has one and
 * no writer takes it, else NULL (a name without one is collapsed stacks):
 * every -o refuses such a name rather than fill x.html with collapsed text.
 */
const char *writer_unknown_ext(const char *path);
/* "collapsed, svg, ..." for messages. */
const char *writer_names(void);
/* ".folded, .svg, ... or .summary": each format's main extension, for messages. */
const char *writer_extensions(void);

#endif
