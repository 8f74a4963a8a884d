// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "errors.h"
#include "layout.h"
#include "tachyon.h"

#ifndef TB_VERSION
#define TB_VERSION "0.1.0"
#endif

enum {
	OPT_FULL_FILENAMES = 0x100,
	OPT_STATS,
	OPT_FORCE_VERSION,
	OPT_VERSION,
	OPT_MODE,
	OPT_THREADS,
	OPT_GC,
	OPT_KERNEL,
	OPT_NO_FALLBACK,
	OPT_ALL_PYTHON,
	OPT_SUBPROCESSES,
	OPT_PIDS,
};


static const char usage_text[] =
"Usage: tachyon-bpf [OPTIONS] -p PID[,PID...]\n"
"       tachyon-bpf [OPTIONS] --all-python\n"
"       tachyon-bpf [OPTIONS] -- COMMAND [ARGS...]\n"
"Sample the Python stacks of running CPython processes from the kernel (eBPF)\n"
"and write collapsed stacks (flamegraph.pl input) to stdout.\n"
"\n"
"  -p, --pid PID[,PID...]   processes to profile\n"
"  -a, --all-python         every Python process on the machine, including ones\n"
"                           that start later\n"
"  -- COMMAND [ARGS...]     start COMMAND and profile it until it exits\n"
"  -s, --subprocesses       with -p or --: their descendants too\n"
"      --pids               put the pid in the per-process root frame\n"
"  -F, --frequency HZ       samples per second per CPU (default 99)\n"
"  -d, --duration SECONDS   stop after this long (default: Ctrl-C, or when\n"
"                           every target has exited)\n"
"  -o, --output FILE        write the profile to FILE instead of stdout\n"
"  -f, --format FORMAT      output format: %s\n"
"                           (default: from -o's extension, else collapsed)\n"
"  -c, --period N           one sample every N events instead of -F\n"
"  -e, --event EVENT        perf event that drives sampling (default cpu-clock):\n"
"                           %s; 'help' lists them and what this\n"
"                           machine supports. A hardware event this machine\n"
"                           lacks falls back to cpu-clock with a warning\n"
"      --no-fallback        ... or is an error, with this option\n"
"  -m, --mode MODE          cpu (default): on-CPU samples; wall: off-CPU time too,\n"
"                           credited to where the thread blocked; gil: only\n"
"                           samples taken while the thread holds the GIL\n"
"      --threads            a root frame per thread: 'thread TID NAME'\n"
"      --gc                 a '<GC>' leaf frame on samples taken during a collection\n"
"      --kernel             the kernel stack under the Python leaf ('fn [k]')\n"
"      --full-filenames     full source paths instead of short ones\n"
"      --stats FILE         write the closing statistics as JSON to FILE\n"
"      --force-version      profile a pre-release or unknown Python version with\n"
"                           the nearest known layout (stacks may be wrong)\n"
"  -v, --verbose            say more on stderr (twice: libbpf debug output)\n"
"  -h, --help               this help\n"
"      --version            print the version\n"
"\n"
"Examples:\n"
"  sudo tachyon-bpf -p 1234 > out.folded             # until Ctrl-C\n"
"  sudo tachyon-bpf -p 1234 -F 999 -d 10 | flamegraph.pl > out.svg\n"
"  sudo tachyon-bpf -p 1234,1240 -d 30 -o app.folded\n"
"  sudo tachyon-bpf --all-python -F 99 -d 30 > all.folded\n"
"  sudo tachyon-bpf -F 999 -o prof.svg -- python3 app.py\n"
"  sudo tachyon-bpf --mode wall -p 1234 -d 10 > wall.folded\n"
"\n"
"Output: one line per distinct stack, root first: 'frame;frame;frame count',\n"
"each frame 'qualname (file:line)'. Statistics and messages go to stderr.\n"
"Exit status: 0 ok, 1 runtime failure, 2 usage error.\n";

static const struct option longopts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "frequency", required_argument, NULL, 'F' },
	{ "duration", required_argument, NULL, 'd' },
	{ "output", required_argument, NULL, 'o' },
	{ "event", required_argument, NULL, 'e' },
	{ "format", required_argument, NULL, 'f' },
	{ "period", required_argument, NULL, 'c' },
	{ "mode", required_argument, NULL, 'm' },
	{ "threads", no_argument, NULL, OPT_THREADS },
	{ "gc", no_argument, NULL, OPT_GC },
	{ "kernel", no_argument, NULL, OPT_KERNEL },
	{ "no-fallback", no_argument, NULL, OPT_NO_FALLBACK },
	{ "all-python", no_argument, NULL, 'a' },
	{ "subprocesses", no_argument, NULL, 's' },
	{ "pids", no_argument, NULL, OPT_PIDS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "full-filenames", no_argument, NULL, OPT_FULL_FILENAMES },
	{ "stats", required_argument, NULL, OPT_STATS },
	{ "force-version", no_argument, NULL, OPT_FORCE_VERSION },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

uint64_t cli_max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	unsigned long long v = 100000;

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 100000;
		fclose(f);
	}
	return v;
}

/* A whole number in [1, max]; -1 if it is not one. */
static long long parse_count(const char *s, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max)
		return -1;
	return v;
}

static int parse_pids(const char *arg, struct options *o)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long long pid = parse_count(tok, 0x3fffffff);

		if (pid < 0) {
			tb_error("-p %s: '%s' is not a process id (give numbers separated by commas)",
				 arg, tok);
			ret = -1;
			break;
		}
		if (o->npids == CLI_MAX_PIDS) {
			tb_error("-p: more than %d processes (profile fewer at once)", CLI_MAX_PIDS);
			ret = -1;
			break;
		}
		o->pids[o->npids++] = (pid_t)pid;
	}
	free(copy);
	return ret;
}

static int parse_freq(const char *arg, struct options *o)
{
	uint64_t max = cli_max_sample_rate();
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end) {
		tb_error("-F %s: not a number (give samples per second, e.g. -F 99)", arg);
		return -1;
	}
	if (v < 1) {
		tb_error("-F %s: the frequency must be at least 1 (e.g. -F 99)", arg);
		return -1;
	}
	if ((uint64_t)v > max) {
		tb_error("-F %s: above kernel.perf_event_max_sample_rate=%llu (use -F %llu or less, or raise the sysctl)",
			 arg, (unsigned long long)max, (unsigned long long)max);
		return -1;
	}
	o->freq = (uint64_t)v;
	o->freq_given = 1;
	return 0;
}

static int parse_duration(const char *arg, struct options *o)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || v > 1e9) {
		tb_error("-d %s: not a positive number of seconds (e.g. -d 30)", arg);
		return -1;
	}
	o->duration = v;
	return 0;
}

static void list_events(void)
{
	const struct tb_event *e;
	int i;

	printf("%-14s %-10s %s\n", "EVENT", "HERE", "WHAT");
	for (i = 0; (e = event_at(i)); i++)
		printf("%-14s %-10s %s\n", e->name,
		       event_supported(e) ? "supported" : "missing", e->help);
}

static int parse_event(const char *arg, struct options *o)
{
	o->event = event_find(arg);
	if (!o->event) {
		tb_error("-e %s: unknown event (choose one of: %s)", arg, event_names());
		return -1;
	}
	o->event_given = 1;
	return 0;
}

static int parse_mode(const char *arg, struct options *o)
{
	static const char *const names[] = {
		[TB_MODE_CPU] = "cpu", [TB_MODE_WALL] = "wall", [TB_MODE_GIL] = "gil",
	};
	int i;

	for (i = 0; i < 3; i++) {
		if (!strcmp(arg, names[i])) {
			o->mode = i;
			return 0;
		}
	}
	tb_error("--mode %s: unknown mode (choose cpu, wall or gil)", arg);
	return -1;
}

static int parse_period(const char *arg, struct options *o)
{
	long long v = parse_count(arg, 1LL << 40);

	if (v < 0) {
		tb_error("-c %s: not a positive whole number of events (e.g. -c 1000000)", arg);
		return -1;
	}
	o->period = (uint64_t)v;
	return 0;
}

static int parse_flag(int c, struct options *o)
{
	switch (c) {
	case OPT_THREADS:
		o->threads = 1;
		return 0;
	case OPT_GC:
		o->gc_frames = 1;
		return 0;
	case OPT_KERNEL:
		o->kernel = 1;
		return 0;
	case OPT_NO_FALLBACK:
		o->no_fallback = 1;
		return 0;
	case 'a':
		o->all_python = 1;
		return 0;
	case 's':
		o->subprocesses = 1;
		return 0;
	case OPT_PIDS:
		o->show_pids = 1;
		return 0;
	}
	return -1;
}

static int parse_one(int c, const char *arg, struct options *o)
{
	switch (c) {
	case 'c':
		return parse_period(arg, o);
	case 'm':
		return parse_mode(arg, o);
	case 'p':
		return parse_pids(arg, o);
	case 'F':
		return parse_freq(arg, o);
	case 'd':
		return parse_duration(arg, o);
	case 'o':
		if (!*arg) {
			tb_error("-o: empty file name (give a path, or leave -o out for stdout)");
			return -1;
		}
		o->output = arg;
		return 0;
	case 'e':
		return parse_event(arg, o);
	case 'f':
		o->writer = writer_find(arg);
		if (!o->writer) {
			tb_error("--format %s: unknown format (choose one of: %s)", arg, writer_names());
			return -1;
		}
		return 0;
	case 'v':
		o->verbose++;
		return 0;
	case OPT_FULL_FILENAMES:
		o->full_paths = 1;
		return 0;
	case OPT_STATS:
		o->stats_path = arg;
		return 0;
	case OPT_FORCE_VERSION:
		o->layout_flags |= LAYOUT_FORCE;
		return 0;
	}
	return parse_flag(c, o);
}

static void bad_option(char **argv, int c)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		tb_error("%s: this option needs a value (see tachyon-bpf --help)", arg);
	else if (optopt && optopt < 0x100)
		tb_error("-%c: unknown option (see tachyon-bpf --help)", optopt);
	else
		tb_error("%s: unknown option (see tachyon-bpf --help)", arg);
}

int cli_parse(int argc, char **argv, struct options *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->freq = 99;
	o->event = event_default();
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:F:c:d:o:e:f:m:asvh", longopts, NULL)) != -1) {
		if (c == 'h') {
			printf(usage_text, writer_names(), event_names());
			return TB_EXIT_OK;
		}
		if (c == OPT_VERSION) {
			printf("tachyon-bpf %s\n", TB_VERSION);
			return TB_EXIT_OK;
		}
		if (c == '?' || c == ':') {
			bad_option(argv, c);
			return TB_EXIT_USAGE;
		}
		if (c == 'e' && !strcmp(optarg, "help")) {
			list_events();
			return TB_EXIT_OK;
		}
		if (parse_one(c, optarg, o))
			return TB_EXIT_USAGE;
	}
	if (optind < argc && strcmp(argv[optind - 1], "--")) {
		tb_error("%s: unexpected argument (put a command after --; see tachyon-bpf --help)",
			 argv[optind]);
		return TB_EXIT_USAGE;
	}
	if (optind < argc)
		o->cmd = argv + optind;
	if (!!o->npids + o->all_python + !!o->cmd != 1) {
		tb_error(o->npids || o->all_python || o->cmd ?
			 "targets: give only one of -p PID, --all-python, -- COMMAND (see tachyon-bpf --help)" :
			 "no target: nothing to profile (give -p PID, --all-python or -- COMMAND)");
		return TB_EXIT_USAGE;
	}
	if (o->period && o->freq_given) {
		tb_error("-c and -F: give one of them (a period in events, or a frequency)");
		return TB_EXIT_USAGE;
	}
	if (!o->writer && o->output)
		o->writer = writer_for_path(o->output);
	if (!o->writer)
		o->writer = writer_default();
	tb_verbose = o->verbose;
	return -1;
}
