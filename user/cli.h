/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Command line: options -> struct options, with one-line usage errors. */
#ifndef TB_CLI_H
#define TB_CLI_H

#include <stdint.h>
#include <sys/types.h>
#include "events.h"
#include "output/output.h"

#define CLI_MAX_PIDS 1024
/* Timer sampling above this many interrupts per second per CPU needs --unsafe-rate. */
#define TB_SAFE_CLOCK_HZ 20000

/* What to do: record a profile (the default), or a subcommand. */
enum tb_command {
	CMD_RECORD = 0,
	CMD_TOP,	/* tachyon-bpf top: live table of functions */
	CMD_DUMP,	/* tachyon-bpf dump: every thread's stack, once */
};

#define CLI_MAX_OUTPUTS 8

struct options {
	int command;		/* enum tb_command */
	pid_t pids[CLI_MAX_PIDS];
	int npids;
	uint64_t freq;		/* -F */
	int freq_given;
	uint64_t period;	/* -c: one sample every PERIOD events (instead of -F) */
	double duration;	/* -d, 0 = until stopped */
	const char *output;	/* -o, NULL = stdout */
	const struct tb_event *event;
	int event_given;	/* -e named an event explicitly */
	int no_fallback;	/* an event the machine lacks is an error */
	int unsafe_rate;	/* --unsafe-rate: timer sampling above TB_SAFE_CLOCK_HZ */
	/* Set once the event is final (cli_choose_event): */
	double rate_hz;		/* samples per second per CPU as sampled (-F, or HZ / tick_every) */
	unsigned tick_every;	/* -e tick: every Nth tick of each CPU */
	int kernel_hz;		/* -e tick: the running kernel's CONFIG_HZ */
	int per_cpu;		/* --per-cpu: per-CPU perf events even for -p and -- */
	int mode;		/* enum tb_mode */
	int threads;		/* a root frame per thread */
	int gc_frames;		/* a <GC> leaf while the collector runs */
	int kernel;		/* kernel stacks under the Python leaf */
	int native;		/* --native: native frames merged with the Python ones */
	int native_fp;		/* --native=fp: frame pointers only */
	int all_python;		/* every Python process, now and later */
	int subprocesses;	/* descendants of the targets too */
	int show_pids;		/* the process root frame carries the pid */
	char **cmd;		/* -- CMD ARGS...: start and profile it */
	int keep_running;	/* --keep-running: leave CMD running when the run ends first */
	int verbose;
	int full_paths;
	const char *stats_path;
	const struct writer *writer;	/* output format */
	int summary;		/* --summary: the top-functions table on stderr */
	const char *pyroscope;	/* --pyroscope URL: push each interval there */
	const char *app;	/* --app NAME: the application name for Pyroscope */
	double push_interval;	/* --push-interval, seconds */
	unsigned layout_flags;
	/* issue 16: frame lines, dump formats */
	int line_mode;	/* enum frame_lines: --function, --nolineno */
	int opcodes;	/* enum frame_opcodes: --opcodes[=all] */
	int timeline;	/* --timeline (or a timed format): every sample with its time */
	int gc_state;	/* the format shows collections: read the GC state per sample */
	int dump_json;		/* dump --json: py-spy's JSON shape */
	int dump_locals;	/* dump --locals: arguments and locals of each frame */
	const char *btf_path;	/* --btf: the kernel's types from this file */
	int async_aware;	/* --async-aware (dump: --async): asyncio task chains */
	/* -o given again: more files from the same run, each in its
	 * extension's format (a .tby recording beside an SVG) */
	const char *more_output[CLI_MAX_OUTPUTS];
	const struct writer *more_writer[CLI_MAX_OUTPUTS];
	int nmore;
};

/* Fills o. Returns -1 to go on, else an exit code (0 after --help/--version). */
int cli_parse(int argc, char **argv, struct options *o);
/*
 * The event that drives sampling, once privileges are known good: the tick
 * by default where it serves -F, hardware events fall back to cpu-clock.
 * Sets rate_hz (and tick_every). Returns an exit code, or -1 to go on.
 */
int cli_choose_event(struct options *o);
/* "-F 99" or "-c 20000": how the rate was asked, for summaries. */
const char *cli_rate_text(const struct options *o, char *buf, size_t len);
/* 1 if -p already names pid. */
int cli_has_pid(const struct options *o, pid_t pid);
/* "cpu", "wall", "gil". */
const char *cli_mode_name(int mode);
/*
 * No two of the n output paths (what[i]: the option, "-o") name one file:
 * else one line, "<who>-o A and --stats B: the same file (...)", and -1.
 * NULL paths (stdout, not given) are skipped.
 */
int cli_check_distinct(const char *who, const char *const *what, const char *const *path, int n);
/*
 * Output to stdout (output NULL) when stdout was closed at start: one line,
 * "<who>stdout: closed (give -o FILE)", and -1; else 0.
 */
int cli_check_stdout(const char *who, const char *output);
/* The kernel's ceiling for -F (kernel.perf_event_max_sample_rate). */
uint64_t cli_max_sample_rate(void);

#endif
