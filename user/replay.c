// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tachyon-bpf replay RECORDING.tby -o OUT: the recording (output/tby.h)
 * read back into the profile model and handed to the writers, the same
 * way the run that made it handed them its profile: the same bytes come
 * out, wall-clock start time included.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "errors.h"
#include "output/output.h"
#include "output/tby.h"
#include "replay.h"
#include "safefile.h"
#include "util.h"

#define MAX_OUT 8

static const char replay_usage[] =
"Usage: tachyon-bpf replay [OPTIONS] RECORDING.tby\n"
"Write a binary recording (made with -o prof.tby or -f binary) in any format,\n"
"byte for byte as the run that made it would have written it.\n"
"\n"
"  -o, --output FILE        write to FILE instead of stdout, in the format of\n"
"                           its extension; give it again for more files\n"
"  -f, --format FORMAT      the first output's format (default: from -o's\n"
"                           extension, else collapsed)\n"
"  -h, --help               this help\n"
"\n"
"  tachyon-bpf -o prof.tby -- python3 app.py\n"
"  tachyon-bpf replay prof.tby -o prof.svg -o prof.pb.gz\n";

static const struct option replay_longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct replay_opts {
	const char *input;
	const char *out[MAX_OUT];	/* NULL: stdout (only the first) */
	const struct writer *writer[MAX_OUT];
	int nout;
};

static int add_out(struct replay_opts *o, const char *path)
{
	if (!*path) {
		tb_error("replay: -o: empty file name (give a path)");
		return -EINVAL;
	}
	if (o->nout == MAX_OUT) {
		tb_error("replay: -o %s: more than %d outputs (run replay again)", path, MAX_OUT);
		return -EINVAL;
	}
	o->out[o->nout++] = path;
	return 0;
}

/* Each output's format: -f for the first, else its extension. */
static int pick_writers(struct replay_opts *o, const struct writer *forced)
{
	int i;

	if (!o->nout)
		o->nout = 1;	/* stdout */
	for (i = 0; i < o->nout; i++) {
		const struct writer *w = i || !forced ? NULL : forced;

		if (!w && o->out[i])
			w = writer_for_path(o->out[i]);
		if (!w && o->out[i] && writer_unknown_ext(o->out[i])) {
			tb_error("replay: -o %s: %s is not the extension of an output format (end the name with %s)",
				 o->out[i], writer_unknown_ext(o->out[i]), writer_extensions());
			return -EINVAL;
		}
		o->writer[i] = w ? w : writer_default();
	}
	return 0;
}

/* Two -o naming one file would leave only the last format in it. */
static int check_distinct(const struct replay_opts *o)
{
	const char *what[MAX_OUT];
	int i;

	for (i = 0; i < o->nout; i++)
		what[i] = "-o";
	return cli_check_distinct("replay: ", what, o->out, o->nout);
}

/* Returns -1 to go on, else an exit code. */
static int replay_parse(int argc, char **argv, struct replay_opts *o)
{
	const struct writer *forced = NULL;
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:f:h", replay_longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(replay_usage, stdout);
			return TB_EXIT_OK;
		} else if (c == 'o') {
			if (add_out(o, optarg))
				return TB_EXIT_USAGE;
		} else if (c == 'f') {
			forced = writer_find(optarg);
			if (!forced) {
				tb_error("replay: --format %s: unknown format (choose one of: %s)",
					 optarg, writer_names());
				return TB_EXIT_USAGE;
			}
		} else {
			tb_error("replay: %s: %s (see tachyon-bpf replay --help)", argv[optind - 1],
				 c == ':' ? "this option needs a value" : "unknown option");
			return TB_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		tb_error("replay: %s (give one recording: tachyon-bpf replay prof.tby -o prof.svg)",
			 argc - optind < 1 ? "no recording" : "more than one recording");
		return TB_EXIT_USAGE;
	}
	o->input = argv[optind];
	if (pick_writers(o, forced) || cli_check_stdout("replay: ", o->out[0]) ||
	    check_distinct(o))
		return TB_EXIT_USAGE;
	return -1;
}

int replay_slurp(const char *path, uint8_t **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 0, n = 0;
	uint8_t *buf = NULL;
	ssize_t got = 1;

	if (fd < 0)
		return -errno;
	while (got > 0) {
		if (array_grow(&buf, &cap, n + 65536, 1, 65536)) {
			got = -1;
			errno = ENOMEM;
			break;
		}
		got = read(fd, buf + n, cap - n);
		if (got > 0)
			n += (size_t)got;
	}
	if (got < 0) {
		got = -errno;
		free(buf);
		close(fd);
		return (int)got;
	}
	close(fd);
	*data = buf;
	*len = n;
	return 0;
}

/* The recording into f; an exit code, or -1 to go on. */
static int load(const struct replay_opts *o, struct tby_file *f)
{
	char why[256] = "";
	uint8_t *data;
	size_t len;
	int ret = replay_slurp(o->input, &data, &len);

	if (ret) {
		tb_error("replay: %s: %s (give a recording made with -o prof.tby)", o->input,
			 strerror(-ret));
		return TB_EXIT_RUNTIME;
	}
	ret = tby_read(data, len, f, why, sizeof(why));
	free(data);
	if (ret == -EPROTONOSUPPORT) {
		tb_error("replay: %s: %s (upgrade tachyon-bpf to replay it)", o->input, why);
		return TB_EXIT_USAGE;
	}
	if (ret) {
		tb_error("replay: %s: %s: %s (record it again)", o->input,
			 ret == -EINVAL ? "not a readable recording" : "reading", why);
		return TB_EXIT_RUNTIME;
	}
	if (f->partial)
		tb_warn("replay: %s: cut short after %zu complete chunk%s (was the run killed?): replaying the %llu samples %s",
			o->input, f->chunks, f->chunks == 1 ? "" : "s",
			(unsigned long long)f->r.total, f->chunks == 1 ? "it holds" : "they hold");
	return -1;
}

/*
 * Every -o opened (not truncated) before any is written, as a recording
 * checks them: a bad last one leaves the first ones as they were.
 */
static int open_all(const struct replay_opts *o, FILE **out)
{
	char why[128];
	int i;

	for (i = 0; i < o->nout; i++) {
		out[i] = o->out[i] ? safe_open(o->out[i], why, sizeof(why)) : stdout;
		if (out[i])
			continue;
		tb_error("replay: -o %s: %s (choose a writable path)", o->out[i], why);
		while (i--)
			if (out[i] != stdout)
				fclose(out[i]);
		return TB_EXIT_RUNTIME;
	}
	return -1;
}

static int write_one(FILE *out, const char *path, const struct writer *w,
		     const struct resolved *r)
{
	int ret;

	if (out != stdout && safe_truncate(out)) {
		tb_error("replay: -o %s: %s (choose a writable path)", path, strerror(errno));
		fclose(out);
		return TB_EXIT_RUNTIME;
	}
	ret = w->write(out, r);
	if (out != stdout && fclose(out) && !ret)
		ret = -errno;
	if (ret && ret != -EPIPE) {
		tb_error("replay: writing %s: %s (check the disk or the -o path)",
			 path ? path : "stdout", strerror(-ret));
		return TB_EXIT_RUNTIME;
	}
	return TB_EXIT_OK;
}

/* Every format needs the samples; the time-ordered ones their times too. */
static int check_formats(const struct replay_opts *o, const struct tby_file *f)
{
	int i;

	for (i = 0; i < o->nout; i++) {
		if (!o->writer[i]->timed || f->r.timeline)
			continue;
		tb_error("replay: %s: -f %s needs each sample's time, and %s was recorded without them (record with --timeline)",
			 o->out[i] ? o->out[i] : "stdout", o->writer[i]->name, o->input);
		return TB_EXIT_USAGE;
	}
	return -1;
}

int replay_main(int argc, char **argv)
{
	struct replay_opts o;
	struct tby_file f;
	FILE *out[MAX_OUT];
	int ret, i;

	ret = replay_parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	ret = load(&o, &f);
	if (ret >= 0)
		return ret;
	ret = check_formats(&o, &f);
	if (ret < 0)
		ret = open_all(&o, out);
	for (i = 0; ret < 0 && i < o.nout; i++)
		if (write_one(out[i], o.out[i], o.writer[i], &f.r))
			ret = TB_EXIT_RUNTIME;
	if (ret < 0) {
		ret = TB_EXIT_OK;
		tb_info("replay: %llu samples recorded by %s on %s", (unsigned long long)f.r.total,
			f.tool, f.kernel);
	}
	tby_free(&f);
	return ret;
}
