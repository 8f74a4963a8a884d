// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tachyon-bpf diff BASE NEW: what changed between two profiles, in the
 * manner of Brendan Gregg's difffolded.pl piped into flamegraph.pl.
 *
 * Both inputs are collapsed stacks ("frame;frame;frame COUNT" lines, what
 * `-f collapsed` writes). Each stack gets a base and a new count; by
 * default the base counts are scaled so that both profiles have the new
 * one's total (a longer or faster run is not a change), --no-normalize
 * keeps them raw. The SVG is sized by the new profile and coloured by the
 * change of each frame (samples under it in new minus in base): red grew,
 * blue shrank. `-f collapsed` writes difffolded.pl's "stack BASE NEW" lines.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "diff.h"
#include "util.h"
#include "errors.h"
#include "hmap.h"
#include "output/output.h"
#include "output/diff.h"
#include "output/tby.h"
#include "replay.h"
#include "safefile.h"

struct dline {
	char *stack;
	uint64_t n[2];		/* base, new */
};

struct dset {
	struct dline *v;
	size_t n, cap;
	struct hmap idx;	/* (hash, probe) -> 1 + index in v */
	uint64_t total[2];
	const char *path[2];
};

/* Interning by hash: a different string with the same hash probes on. */
struct hkey {
	uint64_t hash;
	uint64_t probe;
};

static struct dline *dset_get(struct dset *d, const char *stack, size_t len)
{
	struct hkey k = { hash_bytes(stack, len), 0 };
	void **slot;
	int added;

	for (;; k.probe++) {
		slot = hmap_put(&d->idx, &k, &added);
		if (!slot)
			return NULL;
		if (added)
			break;
		if (!strcmp(d->v[(uintptr_t)*slot - 1].stack, stack))
			return &d->v[(uintptr_t)*slot - 1];
	}
	if (array_grow(&d->v, &d->cap, d->n + 1, sizeof(*d->v), 1024))
		goto oom;
	d->v[d->n] = (struct dline){ .stack = strdup(stack) };
	if (!d->v[d->n].stack)
		goto oom;
	*slot = (void *)(uintptr_t)++d->n;
	return &d->v[d->n - 1];
oom:
	hmap_del(&d->idx, &k);
	return NULL;
}

static void dset_free(struct dset *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->v[i].stack);
	free(d->v);
	hmap_free(&d->idx);
}

/* " 123" at the end of s[0..len): the start of the number, or NULL. */
static char *count_at_end(char *s, size_t len)
{
	size_t i = len;

	while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
		i--;
	if (i == len || i < 2 || s[i - 1] != ' ')
		return NULL;
	return s + i;
}

#define FOLDED_HELP "give collapsed stacks, 'frame;frame;frame COUNT' per line, as tachyon-bpf -f collapsed writes them"

/* One line, newline stripped: its stack and count added to side `which`. */
static int add_line(struct dset *d, int which, char *line, size_t len, size_t lineno)
{
	const char *path = d->path[which];
	struct dline *dl;
	char *num;
	uint64_t n;

	if (strlen(line) != len) {
		tb_error("diff: %s: binary data, not collapsed stacks (%s, or a recording made with -o x.tby, which tachyon-bpf replay reads too)",
			 path, FOLDED_HELP);
		return -EINVAL;
	}
	num = count_at_end(line, len);
	if (!num || num - 1 == line) {
		tb_error("diff: %s:%zu: not 'stack COUNT' (%s)", path, lineno, FOLDED_HELP);
		return -EINVAL;
	}
	if (count_at_end(line, (size_t)(num - 1 - line))) {
		tb_error("diff: %s:%zu: two counts: a differential profile, not collapsed stacks (%s)",
			 path, lineno, FOLDED_HELP);
		return -EINVAL;
	}
	errno = 0;
	n = strtoull(num, NULL, 10);
	if (errno) {
		tb_error("diff: %s:%zu: count %s: %s (%s)", path, lineno, num, strerror(errno),
			 FOLDED_HELP);
		return -EINVAL;
	}
	num[-1] = 0;
	dl = dset_get(d, line, (size_t)(num - 1 - line));
	if (!dl) {
		tb_error("diff: %s: out of memory", path);
		return -ENOMEM;
	}
	dl->n[which] += n;
	d->total[which] += n;
	return 0;
}

/* A recording (-o x.tby): its stacks folded as -f collapsed writes them. */
static int read_recording(struct dset *d, int which)
{
	const char *path = d->path[which];
	struct folded fo = { 0 };
	struct tby_file f;
	char why[256] = "";
	uint8_t *data;
	size_t len, i;
	int ret = replay_slurp(path, &data, &len);

	if (!ret) {
		ret = tby_read(data, len, &f, why, sizeof(why));
		free(data);
	} else {
		snprintf(why, sizeof(why), "%s", strerror(-ret));
	}
	if (ret) {
		tb_error("diff: %s: %s (record it again, or give collapsed stacks)", path, why);
		return ret;
	}
	if (f.partial)
		tb_warn("diff: %s: cut short: comparing the %llu samples it holds", path,
			(unsigned long long)f.r.total);
	ret = resolved_fold(&f.r, &fo);
	for (i = 0; !ret && i < fo.n; i++) {
		struct dline *dl = dset_get(d, fo.v[i].stack, strlen(fo.v[i].stack));

		if (!dl)
			ret = -ENOMEM;
		else
			dl->n[which] += fo.v[i].count;
		d->total[which] += fo.v[i].count;
	}
	if (ret)
		tb_error("diff: %s: out of memory", path);
	folded_free(&fo);
	tby_free(&f);
	return ret;
}

/* Does the file start as a recording does? */
static int is_recording(FILE *f)
{
	char magic[4];
	int yes = fread(magic, 1, 4, f) == 4 && !memcmp(magic, TBY_MAGIC, 4);

	rewind(f);
	return yes;
}

static int read_folded(struct dset *d, int which)
{
	const char *path = d->path[which];
	FILE *f = fopen(path, "re");
	size_t cap = 0, lineno = 0;
	char *line = NULL;
	ssize_t len;
	int ret = 0;

	if (!f) {
		tb_error("diff: %s: %s (%s)", path, strerror(errno), FOLDED_HELP);
		return -errno;
	}
	if (is_recording(f)) {
		fclose(f);
		return read_recording(d, which);
	}
	while (!ret && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len)	/* blank lines: flamegraph.pl skips them too */
			ret = add_line(d, which, line, (size_t)len, lineno);
	}
	if (!ret && ferror(f)) {
		ret = -errno;
		tb_error("diff: %s: %s (%s)", path, strerror(errno), FOLDED_HELP);
	}
	free(line);
	fclose(f);
	return ret;
}

/* ---- the profile the SVG writer draws ---- */

/*
 * A collapsed frame label back into name, file and line:
 * "name (file:line)", "name (file)" (--nolineno), else a frame with no
 * file (markers, kernel functions, roots). Cuts label in place.
 */
static void split_label(char *label, const char **name, const char **file, int32_t *line)
{
	size_t len = strlen(label);
	char *open = NULL, *p, *colon;

	*name = label;
	*file = "";
	*line = 0;
	if (len < 4 || label[len - 1] != ')')
		return;
	for (p = label + len - 2; p > label; p--)
		if (p[-1] == ' ' && p[0] == '(') {
			open = p;
			break;
		}
	if (!open || open + 1 == label + len - 1)
		return;
	label[len - 1] = 0;
	open[-1] = 0;
	*file = open + 1;
	*line = RFRAME_NO_LINE;
	colon = strrchr(open + 1, ':');
	if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
		*colon = 0;
		*line = (int32_t)strtol(colon + 1, NULL, 10);
	}
}

/*
 * The " [BINARY_OP_ADD_INT]" that --opcodes appends to a label, cut off:
 * the instruction's name, or NULL. Opcode names are upper case, digits and
 * underscores, which no "(file:line)" ends with.
 */
static const char *split_op(char *label)
{
	size_t len = strlen(label), i;

	if (len < 4 || label[len - 1] != ']')
		return NULL;
	for (i = len - 1; i > 0 && label[i - 1] != '['; i--)
		if (!((label[i - 1] >= 'A' && label[i - 1] <= 'Z') ||
		      (label[i - 1] >= '0' && label[i - 1] <= '9') || label[i - 1] == '_'))
			return NULL;
	if (i < 3 || i == len - 1 || label[i - 2] != ' ')
		return NULL;
	label[len - 1] = 0;
	label[i - 2] = 0;
	return label + i;
}

static struct rframe *frame_get(struct resolved *r, char *label)
{
	const char *name, *file, *op = split_op(label);
	int32_t line;

	split_label(label, &name, &file, &line);
	return resolved_intern_op(r, name, file, line, line, op);
}

/* One collapsed stack as a sample of the new profile, root first. */
static int add_sample(struct resolved *r, const char *stack, uint64_t count)
{
	struct rsample *s = &r->samples[r->nsamples];
	char *copy = strdup(stack), *tok, *save = NULL;
	size_t cap = 0;

	if (!copy)
		return -ENOMEM;
	*s = (struct rsample){ .count = count };
	r->nsamples++;		/* counted now: resolved_free() frees its frames */
	for (tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		if (array_grow(&s->frames, &cap, (size_t)s->depth + 1, sizeof(*s->frames), 16))
			break;
		s->frames[s->depth] = frame_get(r, tok);
		if (!s->frames[s->depth])
			break;
		s->depth++;
	}
	free(copy);
	r->total += count;
	return tok ? -ENOMEM : 0;
}

/* NEW's stacks (BASE's too, with no samples) drawn coloured by the change. */
static int diff_svg(FILE *out, const struct dline *v, size_t n, double scale,
		    const char *subtitle)
{
	struct resolved r = { .event = "samples" };
	struct svg_diff sd = { .subtitle = subtitle };
	double *base = calloc(n + 1, sizeof(*base));
	size_t i;
	int ret = resolved_init(&r) ? -ENOMEM : 0;

	r.samples = calloc(n + 1, sizeof(*r.samples));
	if (!base || !r.samples)
		ret = -ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		base[i] = (double)v[i].n[0] * scale;
		ret = add_sample(&r, v[i].stack, v[i].n[1]);
	}
	sd.base = base;
	if (!ret)
		ret = output_svg_diff(out, &r, &sd);
	free(base);
	resolved_free(&r);
	return ret;
}

/* ---- the command line ---- */

struct diff_opts {
	const char *base, *new_path;
	const char *output;
	int collapsed;		/* -f collapsed, else svg */
	int raw;		/* --no-normalize */
};

static const char diff_usage[] =
"Usage: tachyon-bpf diff [OPTIONS] BASE NEW\n"
"A differential flame graph: NEW's flame graph with each frame coloured by\n"
"how its samples changed from BASE, red where it grew and blue where it\n"
"shrank (deeper for bigger changes), as Brendan Gregg's difffolded.pl and\n"
"flamegraph.pl draw it. The tooltip gives each frame's change in samples\n"
"and as a share of all samples. Stacks only BASE has are not drawn, but\n"
"what they lost counts in their callers' colour.\n"
"\n"
"BASE and NEW are collapsed stacks ('frame;frame;frame COUNT' per line, as\n"
"tachyon-bpf -f collapsed writes them), or binary recordings (-o x.tby, as\n"
"'tachyon-bpf replay' reads them).\n"
"\n"
"  -o, --output FILE        write to FILE instead of stdout\n"
"  -f, --format FORMAT      svg (default) or collapsed: difffolded.pl's\n"
"                           'stack BASE NEW' lines (default: from -o's\n"
"                           extension, .svg or .folded/.txt)\n"
"      --no-normalize       compare raw counts; by default BASE's counts are\n"
"                           scaled to NEW's total, so that a longer run is no\n"
"                           change\n"
"  -h, --help               this help\n"
"\n"
"Example:\n"
"  sudo tachyon-bpf -p 1234 -d 30 -o before.folded\n"
"  sudo tachyon-bpf -p 1234 -d 30 -o after.folded\n"
"  tachyon-bpf diff before.folded after.folded -o diff.svg\n";

enum { DOPT_NO_NORMALIZE = 0x100 };

static const struct option diff_longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "no-normalize", no_argument, NULL, DOPT_NO_NORMALIZE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* svg or collapsed, by name ("flamegraph" and "raw" too, py-spy's names). */
static int pick_format(const char *name, struct diff_opts *o, const char *what)
{
	const struct writer *w = writer_find(name);

	if (w && (!strcmp(w->name, "svg") || !strcmp(w->name, "collapsed"))) {
		o->collapsed = !strcmp(w->name, "collapsed");
		return 0;
	}
	tb_error("diff: %s: diff writes svg or collapsed (%s)", what,
		 *what == '-' && what[1] == 'o' ? "end the name with .svg or .folded" :
		 "use -f svg or -f collapsed");
	return -EINVAL;
}

static int diff_option(int c, char **argv, struct diff_opts *o, int *format_given)
{
	char what[64];

	switch (c) {
	case 'o':
		if (!*optarg) {
			tb_error("diff: -o: empty file name (give a path)");
			return -EINVAL;
		}
		o->output = optarg;
		return 0;
	case 'f':
		*format_given = 1;
		snprintf(what, sizeof(what), "--format %s", optarg);
		return pick_format(optarg, o, what);
	case DOPT_NO_NORMALIZE:
		o->raw = 1;
		return 0;
	case ':':
		tb_error("diff: %s: this option needs a value (see tachyon-bpf diff --help)",
			 argv[optind - 1]);
		return -EINVAL;
	}
	tb_error("diff: %s: unknown option (see tachyon-bpf diff --help)", argv[optind - 1]);
	return -EINVAL;
}

/* Returns -1 to go on, else an exit code. */
static int diff_parse(int argc, char **argv, struct diff_opts *o)
{
	int c, format_given = 0;
	char what[64];

	memset(o, 0, sizeof(*o));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:f:h", diff_longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(diff_usage, stdout);
			return TB_EXIT_OK;
		}
		if (diff_option(c, argv, o, &format_given))
			return TB_EXIT_USAGE;
	}
	if (argc - optind != 2) {
		tb_error("diff: %s (give two collapsed files: tachyon-bpf diff BASE NEW -o diff.svg)",
			 argc - optind < 2 ? "missing BASE or NEW" : "more than two files");
		return TB_EXIT_USAGE;
	}
	o->base = argv[optind];
	o->new_path = argv[optind + 1];
	if (o->output && !format_given) {
		const struct writer *w = writer_for_path(o->output);

		snprintf(what, sizeof(what), "-o %s", o->output);
		if (w && pick_format(w->name, o, what))
			return TB_EXIT_USAGE;
		if (writer_unknown_ext(o->output)) {
			tb_error("diff: -o %s: %s is not the extension of an output format (end the name with .svg or .folded)",
				 o->output, writer_unknown_ext(o->output));
			return TB_EXIT_USAGE;
		}
	}
	return cli_check_stdout("diff: ", o->output) ? TB_EXIT_USAGE : -1;
}

/* ---- the outputs ---- */

static int cmp_dline(const void *a, const void *b)
{
	return strcmp(((const struct dline *)a)->stack, ((const struct dline *)b)->stack);
}

static double base_scale(const struct dset *d, const struct diff_opts *o)
{
	if (o->raw || !d->total[0] || !d->total[1])
		return 1.0;
	return (double)d->total[1] / (double)d->total[0];
}

/* difffolded.pl's output: "stack BASE NEW", BASE rounded once scaled. */
static int write_collapsed(FILE *out, struct dset *d, double scale)
{
	size_t i;

	qsort(d->v, d->n, sizeof(*d->v), cmp_dline);
	for (i = 0; i < d->n; i++)
		if (fprintf(out, "%s %.0f %" PRIu64 "\n", d->v[i].stack,
			    (double)d->v[i].n[0] * scale, d->v[i].n[1]) < 0)
			return -errno;
	return fflush(out) ? -errno : 0;
}

/*
 * Write with the output's errors as errno: a reader that went away
 * (EPIPE) is no failure, as for recordings.
 */
static int diff_write(FILE *out, struct dset *d, const struct diff_opts *o)
{
	char sub[512];

	if (o->collapsed)
		return write_collapsed(out, d, base_scale(d, o));
	snprintf(sub, sizeof(sub), "%s (%" PRIu64 " samples) to %s (%" PRIu64 " samples)%s; "
		 "red grew, blue shrank", o->base, d->total[0], o->new_path, d->total[1],
		 o->raw ? "" : ", base scaled to the same total");
	return diff_svg(out, d->v, d->n, base_scale(d, o), sub);
}

static FILE *diff_open(const struct diff_opts *o)
{
	char why[128];
	FILE *f;

	if (!o->output)
		return stdout;
	f = safe_open(o->output, why, sizeof(why));
	if (!f)
		tb_error("diff: -o %s: %s (choose a writable path)", o->output, why);
	else if (safe_truncate(f)) {
		tb_error("diff: -o %s: %s (choose a writable path)", o->output, strerror(errno));
		fclose(f);
		f = NULL;
	}
	return f;
}

/* An empty profile compares with nothing: said, and nothing written. */
static int check_samples(const struct dset *d)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (d->total[i])
			continue;
		tb_error("diff: %s: no samples (give a profile that has some: a run that wrote it said how many)",
			 d->path[i]);
		return -ENODATA;
	}
	return 0;
}

static int diff_run(const struct diff_opts *o)
{
	struct dset d = { .path = { o->base, o->new_path } };
	FILE *out = NULL;
	int ret;

	if (hmap_init(&d.idx, sizeof(struct hkey))) {
		tb_error("diff: out of memory");
		return TB_EXIT_RUNTIME;
	}
	ret = read_folded(&d, 0);
	if (!ret)
		ret = read_folded(&d, 1);
	if (!ret)
		ret = check_samples(&d);
	if (!ret) {
		out = diff_open(o);
		ret = out ? diff_write(out, &d, o) : -EIO;
		if (out && ret && ret != -EPIPE)
			tb_error("diff: writing %s: %s (check the disk or the -o path)",
				 o->output ? o->output : "stdout", strerror(-ret));
		if (out && out != stdout && fclose(out) && !ret) {
			ret = -errno;
			tb_error("diff: -o %s: %s", o->output, strerror(errno));
		}
		if (out && !ret && o->output)
			tb_info("diff: %" PRIu64 " samples in %s, %" PRIu64 " in %s; wrote %s (%s)",
				d.total[0], o->base, d.total[1], o->new_path, o->output,
				o->collapsed ? "flamegraph.pl input" : "open it in a browser");
	}
	dset_free(&d);
	return ret && ret != -EPIPE ? TB_EXIT_RUNTIME : TB_EXIT_OK;
}

int diff_main(int argc, char **argv)
{
	struct diff_opts o;
	int ret = diff_parse(argc, argv, &o);

	if (ret >= 0)
		return ret;
	return diff_run(&o);
}
