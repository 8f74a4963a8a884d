// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "errors.h"
#include "layout.h"
#include "safefile.h"
#include "tachyon.h"
#include "util.h"

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
	OPT_UNSAFE_RATE,
	OPT_PER_CPU,
	OPT_ALL_PYTHON,
	OPT_SUBPROCESSES,
	OPT_PIDS,
	OPT_KEEP_RUNNING,
	OPT_SUMMARY,
	OPT_PYROSCOPE,
	OPT_APP,
	OPT_PUSH_INTERVAL,
	OPT_IDLE,		/* py-spy's names */
	OPT_GIL,
	OPT_NONBLOCKING,
	OPT_NATIVE,		/* py-spy's -n: native frames */
	/* issue 16: frame lines, dump formats */
	OPT_FUNCTION,
	OPT_NOLINENO,
	OPT_JSON,
	OPT_LOCALS,
	OPT_BTF,
	OPT_OPCODES,		/* issue 17 */
	OPT_TIMELINE,
	OPT_ASYNC_AWARE,	/* issue 19: --async-aware, dump --async */
	OPT_END,
};


static const char usage_text[] =
"Usage: tachyon-bpf [OPTIONS] -p PID[,PID...]\n"
"       tachyon-bpf [OPTIONS] --all-python\n"
"       tachyon-bpf [OPTIONS] -- COMMAND [ARGS...]\n"
"       tachyon-bpf top [OPTIONS] -p PID[,PID...] | --all-python\n"
"       tachyon-bpf dump [OPTIONS] -p PID[,PID...]\n"
"       tachyon-bpf diff [OPTIONS] BASE NEW\n"
"       tachyon-bpf replay RECORDING.tby [-o FILE]... [-f FORMAT]\n"
"Sample the Python stacks of running CPython processes from the kernel (eBPF)\n"
"and write collapsed stacks (flamegraph.pl input) to stdout.\n"
"\n"
"Commands (see tachyon-bpf COMMAND --help):\n"
"  top                      live table of the hottest functions, refreshed\n"
"                           every second\n"
"  dump                     print every thread's current Python stack once\n"
"  diff                     differential flame graph of two collapsed profiles\n"
"                           (red grew, blue shrank)\n"
"  replay                   any format from a .tby recording (-o prof.tby)\n"
"\n"
"  -p, --pid PID[,PID...]   processes to profile\n"
"  -a, --all-python         every Python process on the machine, including ones\n"
"                           that start later\n"
"  -- COMMAND [ARGS...]     start COMMAND and profile it until it exits; if\n"
"                           the run ends first (-d, a signal), COMMAND gets\n"
"                           SIGTERM, and SIGKILL 2 s later\n"
"      --keep-running       ... unless this is given: COMMAND is left running\n"
"  -s, --subprocesses       with -p or --: their descendants too (-p may name\n"
"                           any process, e.g. a shell starting Python)\n"
"      --pids               put the pid in the per-process root frame\n"
"  -F, -r, --frequency, --rate HZ\n"
"                           samples per second per CPU (default 99)\n"
"  -d, --duration SECONDS   stop after this long (default: Ctrl-C, or when\n"
"                           every target has exited)\n"
"  -o, --output FILE        write the profile to FILE instead of stdout; given\n"
"                           again, one more file of the same run in the format\n"
"                           of its extension (-o prof.tby -o prof.svg)\n"
"  -f, --format FORMAT      %s\n"
"                           (default: from -o's extension, else collapsed)\n"
"  -c, --period N           one sample every N events instead of -F (cpu-clock\n"
"                           and task-clock: nanoseconds)\n"
"      --unsafe-rate        allow timer sampling above %d Hz per CPU\n"
"  -e, --event EVENT        what drives sampling: 'tick' (the scheduler tick,\n"
"                           every Nth; default for -F up to the kernel's HZ),\n"
"                           cpu-clock (default above HZ) or another perf event;\n"
"                           '-e help' lists them and what this machine supports.\n"
"                           A hardware event this machine lacks falls back to\n"
"                           cpu-clock with a warning\n"
"      --per-cpu            perf events on every CPU even for -p and -- (by\n"
"                           default they follow the targets' threads only)\n"
"      --no-fallback        ... or is an error, with this option\n"
"  -m, --mode MODE          cpu (default): on-CPU samples; wall: off-CPU time\n"
"                           too, credited to where the thread blocked; gil:\n"
"                           only samples taken while the thread holds the GIL;\n"
"                           exception: only on-CPU samples taken while the\n"
"                           thread has an exception in flight (raised,\n"
"                           propagating or handled in an except block), under\n"
"                           a leaf frame naming its type: '<ValueError>'\n"
"  -i, --idle               --mode wall (py-spy's name)\n"
"  -g, --gil                --mode gil (py-spy's name)\n"
"  -t, --threads            a root frame per thread: 'thread TID NAME'\n"
"      --gc                 a '<GC>' leaf frame on samples taken during a\n"
"                           garbage collection\n"
"      --kernel             the kernel stack under the Python leaf ('fn [k]')\n"
"  -n, --native[=fp]        native (C) frames merged with the Python ones:\n"
"                           'fn [libz.so.1]' (unwind tables where the code\n"
"                           has them, else frame pointers; =fp: frame\n"
"                           pointers only)\n"
"      --full-filenames     full source paths instead of short ones\n"
"      --function           one frame per function, not per line:\n"
"                           'qualname (file:firstline)'\n"
"      --nolineno           no line numbers: 'qualname (file)'\n"
"      --opcodes[=all]      the bytecode instruction the leaf frame (every\n"
"                           frame with =all) was executing, specialised\n"
"                           names included: 'qualname (file:line) [BINARY_OP]'\n"
"      --timeline           every sample with its time, in time order: with\n"
"                           -f speedscope a timeline in seconds (py-spy's\n"
"                           shape); gecko and chrometrace imply it\n"
"      --async-aware        asyncio (3.14+): a sample of a task gets the chain\n"
"                           of tasks awaiting it as roots, 'Task-1 main;\n"
"                           Task-5 handle (app.py:9);...', event loop folded\n"
"      --stats FILE         write the closing statistics as JSON to FILE\n"
"      --summary            also print the top functions (self and total\n"
"                           samples) to stderr at the end\n"
"      --pyroscope URL      push the profile of every interval to a Pyroscope\n"
"                           server (e.g. http://localhost:4040); needs --app\n"
"      --app NAME           application name in Pyroscope ('app{tag=value}' ok)\n"
"      --push-interval SEC  seconds between pushes (default 10)\n"
"      --force-version      profile a pre-release or unknown Python version with\n"
"                           the nearest known layout (stacks may be wrong)\n"
"      --btf FILE           the kernel's BTF from FILE (e.g. BTFHub's) for a\n"
"                           kernel without /sys/kernel/btf/vmlinux\n"
"  -v, --verbose            say more on stderr (twice: libbpf debug output)\n"
"  -h, --help               this help\n"
"      --version            print the version\n"
"\n"
"Examples:\n"
"  sudo tachyon-bpf -p 1234 -o prof.svg               # until Ctrl-C; open it in a browser\n"
"  sudo tachyon-bpf -F 999 -o prof.svg -- python3 app.py\n"
"  sudo tachyon-bpf -p 1234 > out.folded              # collapsed stacks\n"
"  sudo tachyon-bpf -p 1234,1240 -d 30 -o app.folded\n"
"  sudo tachyon-bpf --all-python -F 99 -d 30 > all.folded\n"
"  sudo tachyon-bpf --mode wall -p 1234 -d 10 > wall.folded\n"
"  sudo tachyon-bpf -p 1234 --pyroscope http://localhost:4040 --app web\n"
"  sudo tachyon-bpf top -p 1234\n"
"  sudo tachyon-bpf dump -p 1234\n"
"  sudo tachyon-bpf -p 1234 -d 30 -o prof.pstats      # python3 -m pstats prof.pstats\n"
"  tachyon-bpf diff before.folded after.folded -o diff.svg\n"
"  sudo tachyon-bpf record -p 1234 -r 100 -f flamegraph -o prof.svg  # py-spy's way\n"
"\n"
"Coming from py-spy: 'record' may come first (it changes nothing), -r/--rate\n"
"is -F, --idle is --mode wall, --gil is --mode gil, -f flamegraph is svg and\n"
"-f raw is collapsed; --nonblocking is accepted (the target is never paused).\n"
"\n"
"Output: one line per distinct stack, root first: 'frame;frame;frame count',\n"
"each frame 'qualname (file:line)'. With -- COMMAND and the profile on stdout,\n"
"the command's own stdout goes to stderr. Messages and one closing line go to\n"
"stderr (-v: the detailed statistics); on a terminal, a progress line too.\n"
"See tachyon-bpf(8).\n"
"Exit status: 0 ok, 1 runtime failure, 2 usage error.\n";

static const char top_usage[] =
"Usage: tachyon-bpf top [OPTIONS] -p PID[,PID...]\n"
"       tachyon-bpf top [OPTIONS] --all-python\n"
"A live table of the functions the targets spend their time in, refreshed\n"
"every second, like py-spy top. Columns: %Self and %Total are shares of the\n"
"samples of the last refresh interval (self: the function was running;\n"
"total: it was anywhere on the stack); Self and Total are seconds (samples\n"
"with -c) since the start.\n"
"\n"
"Keys: s or 1 sort by %Self, t or 2 by %Total, 3 by Self, 4 by Total;\n"
"      p or space pause/resume the display; q quit (so do Ctrl-C and the\n"
"      exit of every target).\n"
"\n"
"  -p, --pid PID[,PID...]   processes to watch\n"
"  -a, --all-python         every Python process on the machine\n"
"  -s, --subprocesses       with -p: their descendants too\n"
"  -F, --frequency HZ       samples per second per CPU (default 99)\n"
"  -d, --duration SECONDS   quit after this long\n"
"  -m, --mode MODE          cpu (default), wall, gil or exception, as without top\n"
"  -c, -e, --per-cpu, --no-fallback, --unsafe-rate, --threads, --gc, --kernel, --pids,\n"
"  --full-filenames, --function, --nolineno, --async-aware, --force-version, --stats FILE,\n"
"  --summary, --btf FILE, -v: as without top\n"
"  -r/--rate, -i/--idle, -g/--gil, --nonblocking: py-spy's names, as without top\n"
"\n"
"Examples:\n"
"  sudo tachyon-bpf top -p 1234\n"
"  sudo tachyon-bpf top --all-python -F 499 --mode wall\n";

static const char dump_usage[] =
"Usage: tachyon-bpf dump [OPTIONS] -p PID[,PID...]\n"
"Print the current Python stack of every thread of each process once, like\n"
"py-spy dump, and exit. Innermost frame first (like py-spy; the reverse of a\n"
"Python traceback):\n"
"\n"
"  Process 1234: python3 app.py\n"
"  Python 3.13.0 (/usr/lib/libpython3.13.so.1.0)\n"
"\n"
"  Thread 1234 (python3): sleeping\n"
"    File \"app.py\", line 12, in wait_for_work\n"
"    File \"app.py\", line 30, in main\n"
"\n"
"The stacks are read from the process's memory (process_vm_readv) while it\n"
"keeps running: it is not stopped and no BPF is loaded. Needs root or\n"
"CAP_SYS_PTRACE over the target.\n"
"\n"
"  -p, --pid PID[,PID...]   processes to dump\n"
"  -s, --subprocesses       their Python descendants too (a -p process need\n"
"                           not be Python then)\n"
"      --full-filenames     full source paths instead of short ones\n"
"      --json               py-spy's JSON: an array of threads with their frames\n"
"      --async              asyncio (3.14+): every thread's task tree, each\n"
"                           task with its coroutine stack\n"
"      --locals             each frame's arguments and local variables (repr\n"
"                           of str, bytes, int, float, bool, None; type and\n"
"                           length of containers); read, never executed\n"
"      --force-version      read a pre-release or unknown Python version with\n"
"                           the nearest known layout\n"
"  -v, --verbose            say more on stderr\n"
"\n"
"Example:\n"
"  sudo tachyon-bpf dump -p 1234\n";

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
	{ "keep-running", no_argument, NULL, OPT_KEEP_RUNNING },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "full-filenames", no_argument, NULL, OPT_FULL_FILENAMES },
	{ "stats", required_argument, NULL, OPT_STATS },
	{ "force-version", no_argument, NULL, OPT_FORCE_VERSION },
	{ "unsafe-rate", no_argument, NULL, OPT_UNSAFE_RATE },
	{ "per-cpu", no_argument, NULL, OPT_PER_CPU },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "summary", no_argument, NULL, OPT_SUMMARY },
	{ "pyroscope", required_argument, NULL, OPT_PYROSCOPE },
	{ "app", required_argument, NULL, OPT_APP },
	{ "push-interval", required_argument, NULL, OPT_PUSH_INTERVAL },
	/* py-spy habits: same meaning, py-spy's spelling */
	{ "rate", required_argument, NULL, 'F' },
	{ "idle", no_argument, NULL, OPT_IDLE },
	{ "gil", no_argument, NULL, OPT_GIL },
	{ "nonblocking", no_argument, NULL, OPT_NONBLOCKING },
	{ "native", optional_argument, NULL, OPT_NATIVE },
	/* issue 16: frame lines, dump formats */
	{ "function", no_argument, NULL, OPT_FUNCTION },
	{ "nolineno", no_argument, NULL, OPT_NOLINENO },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "locals", no_argument, NULL, OPT_LOCALS },
	{ "btf", required_argument, NULL, OPT_BTF },
	{ "opcodes", optional_argument, NULL, OPT_OPCODES },
	{ "timeline", no_argument, NULL, OPT_TIMELINE },
	{ "async-aware", no_argument, NULL, OPT_ASYNC_AWARE },
	{ "async", no_argument, NULL, OPT_ASYNC_AWARE },
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

int cli_has_pid(const struct options *o, pid_t pid)
{
	int i;

	for (i = 0; i < o->npids; i++)
		if (o->pids[i] == pid)
			return 1;
	return 0;
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
		if (!cli_has_pid(o, (pid_t)pid))	/* -p W,W is one process */
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
	if ((errno && errno != ERANGE) || end == arg || *end) {
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
	/* Decimal, as every other number here: strtod alone takes 0x10 and 1e3. */
	if (errno || end == arg || *end || arg[strspn(arg, "0123456789.")] || !(v > 0) ||
	    v > 1e9) {
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

static const char *const mode_names[] = {
	[TB_MODE_CPU] = "cpu", [TB_MODE_WALL] = "wall", [TB_MODE_GIL] = "gil",
	[TB_MODE_EXC] = "exception",
};

#define NMODES	((int)(sizeof(mode_names) / sizeof(mode_names[0])))

const char *cli_mode_name(int mode)
{
	return mode >= 0 && mode < NMODES ? mode_names[mode] : "cpu";
}

static int parse_mode(const char *arg, struct options *o)
{
	int i;

	for (i = 0; i < NMODES; i++) {
		if (!strcmp(arg, mode_names[i])) {
			o->mode = i;
			return 0;
		}
	}
	tb_error("--mode %s: unknown mode (choose cpu, wall, gil or exception)", arg);
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

/*
 * Timer events interrupt every CPU at the rate asked, whatever it runs.
 * Each interrupt costs several microseconds in a VM (kvm-clock exits), and
 * the kernel does not throttle software clocks by CPU time the way it does
 * PMU events (perf_cpu_time_max_percent): at 50 kHz per CPU this 2-vCPU VM
 * livelocked for minutes. Above TB_SAFE_CLOCK_HZ, only when insisted on.
 */
static int cli_check_rate(const struct options *o)
{
	if (o->unsafe_rate || !event_is_clock(o->event))
		return 0;
	/* By the period itself: -c 49999 is 20000.4 Hz, which rounds down to safe. */
	if (o->period ? o->period >= 1000000000ull / TB_SAFE_CLOCK_HZ : o->freq <= TB_SAFE_CLOCK_HZ)
		return 0;
	if (o->period)
		tb_error("-c %llu: %s every %llu ns is %.6g interrupts per second per CPU, above the safe %d (use -c %d or more, or --unsafe-rate)",
			 (unsigned long long)o->period, o->event->name,
			 (unsigned long long)o->period, 1e9 / (double)o->period, TB_SAFE_CLOCK_HZ,
			 1000000000 / TB_SAFE_CLOCK_HZ);
	else
		tb_error("-F %llu: above the safe timer rate of %d per CPU, where sampling interrupts can starve the machine (use -F %d or less, or --unsafe-rate)",
			 (unsigned long long)o->freq, TB_SAFE_CLOCK_HZ, TB_SAFE_CLOCK_HZ);
	return -1;
}

/*
 * -e tick: every Nth tick, N from -c, else the N whose rate HZ/N is
 * nearest -F (-F 99 at HZ 250: every 3rd tick, 83.3 Hz; the output says so).
 */
static int choose_tick(struct options *o)
{
	unsigned n;

	o->kernel_hz = kernel_hz();
	if (!tick_handler()) {
		tb_error("-e tick: no tick hrtimer in /proc/kallsyms (tick_nohz_handler, tick_sched_timer: a kernel in periodic tick mode, or kallsyms hidden) (use -e cpu-clock)");
		return TB_EXIT_RUNTIME;
	}
	if (o->kernel_hz <= 0) {
		tb_error("-e tick: cannot tell the kernel's HZ (no /proc/config.gz, /boot/config-$(uname -r) or /proc/timer_list) (use -e cpu-clock)");
		return TB_EXIT_RUNTIME;
	}
	if (o->period) {
		n = o->period > 1000000 ? 1000000 : (unsigned)o->period;
	} else if (o->freq > (uint64_t)o->kernel_hz) {
		tb_error("-F %" PRIu64 ": above the kernel's tick rate, HZ %d: -e tick samples at most every tick (use -e cpu-clock for higher rates)",
			 o->freq, o->kernel_hz);
		return TB_EXIT_USAGE;
	} else {
		n = (unsigned)(o->kernel_hz / o->freq);
		/* n or n + 1, whichever rate is nearer -F by ratio */
		if ((double)o->kernel_hz / n / o->freq > (double)o->freq * (n + 1) / o->kernel_hz)
			n++;
	}
	o->tick_every = n;
	o->rate_hz = (double)o->kernel_hz / n;
	return -1;
}

/* Hardware events need a PMU; without one, cpu-clock is the honest substitute. */
static int fall_back(struct options *o)
{
	if (!o->event->hardware || event_supported(o->event))
		return -1;
	if (o->no_fallback) {
		tb_error("event %s: not supported by this machine (no hardware PMU, e.g. in a VM) (use -e cpu-clock)",
			 o->event->name);
		return TB_EXIT_RUNTIME;
	}
	tb_warn("event %s: not supported by this machine (no hardware PMU, e.g. in a VM); falling back to cpu-clock",
		o->event->name);
	o->event = event_default();
	return -1;
}

/*
 * The default event is the scheduler tick wherever it serves the rate
 * asked (-F up to HZ, no -c): it adds no interrupt at all. Above HZ, or
 * where the tick cannot be traced, cpu-clock.
 */
int cli_choose_event(struct options *o)
{
	int hz, ret;

	if (!o->event_given && !o->period) {
		hz = kernel_hz();
		if (hz > 0 && o->freq <= (uint64_t)hz && tick_handler())
			o->event = event_tick();
	}
	if (o->event->tick)
		return choose_tick(o);
	ret = fall_back(o);
	if (ret >= 0)
		return ret;
	o->rate_hz = o->period && event_is_clock(o->event) ? 1e9 / (double)o->period :
			(double)o->freq;
	return cli_check_rate(o) ? TB_EXIT_USAGE : -1;
}

/* Pyroscope takes whole seconds in from/until: an interval below 1 s says nothing. */
static int parse_push_interval(const char *arg, struct options *o)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 1) || v > 86400) {
		tb_error("--push-interval %s: not a number of seconds from 1 to 86400 (e.g. --push-interval 10)",
			 arg);
		return -1;
	}
	o->push_interval = v;
	return 0;
}

static int parse_pyroscope(const char *arg, struct options *o)
{
	if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8)) {
		tb_error("--pyroscope %s: not an http:// or https:// URL (e.g. --pyroscope http://localhost:4040)",
			 arg);
		return -1;
	}
	if (!arg[arg[4] == 's' ? 8 : 7]) {
		tb_error("--pyroscope %s: the URL has no host (e.g. --pyroscope http://localhost:4040)",
			 arg);
		return -1;
	}
	o->pyroscope = arg;
	return 0;
}

static int parse_app(const char *arg, struct options *o)
{
	if (!*arg) {
		tb_error("--app: empty name (give the application name, e.g. --app myservice)");
		return -1;
	}
	o->app = arg;
	return 0;
}

/* --opcodes, --opcodes=leaf, --opcodes=all */
static int parse_opcodes(const char *arg, struct options *o)
{
	if (!arg || !strcmp(arg, "leaf")) {
		o->opcodes = OPCODES_LEAF;
		return 0;
	}
	if (!strcmp(arg, "all")) {
		o->opcodes = OPCODES_ALL;
		return 0;
	}
	tb_error("--opcodes=%s: not 'leaf' or 'all' (use --opcodes for the leaf frame, --opcodes=all for every frame)",
		 arg);
	return -1;
}

/* --native, or --native=fp: frame pointers only, no unwind tables. */
static int parse_native(const char *arg, struct options *o)
{
	o->native = 1;
	if (!arg)
		return 0;
	if (!strcmp(arg, "fp")) {
		o->native_fp = 1;
		return 0;
	}
	tb_error("--native=%s: not 'fp' (use --native for unwind tables and frame pointers, --native=fp for frame pointers only)",
		 arg);
	return -1;
}

/* issue 16: --function, --nolineno, dump --json, dump --locals */
static int parse_issue16_opt(int c, struct options *o)
{
	switch (c) {
	case OPT_FUNCTION:
		/* --nolineno drops lines altogether: it wins over --function */
		if (o->line_mode != LINES_NONE)
			o->line_mode = LINES_FUNCTION;
		return 0;
	case OPT_NOLINENO:
		o->line_mode = LINES_NONE;
		return 0;
	case OPT_JSON:
		o->dump_json = 1;
		return 0;
	case OPT_LOCALS:
		o->dump_locals = 1;
		return 0;
	}
	return -1;
}

static int parse_output_opt(int c, const char *arg, struct options *o)
{
	switch (c) {
	case OPT_BTF:
		o->btf_path = arg;
		return 0;
	case OPT_SUMMARY:
		o->summary = 1;
		return 0;
	case OPT_PYROSCOPE:
		return parse_pyroscope(arg, o);
	case OPT_APP:
		return parse_app(arg, o);
	case OPT_PUSH_INTERVAL:
		return parse_push_interval(arg, o);
	case OPT_OPCODES:
		return parse_opcodes(arg, o);
	case OPT_TIMELINE:
		o->timeline = 1;
		return 0;
	case OPT_ASYNC_AWARE:
		o->async_aware = 1;
		return 0;
	}
	return parse_issue16_opt(c, o);
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
	case OPT_UNSAFE_RATE:
		o->unsafe_rate = 1;
		return 0;
	case OPT_PER_CPU:
		o->per_cpu = 1;
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
	case OPT_KEEP_RUNNING:
		o->keep_running = 1;
		return 0;
	case OPT_IDLE:
		o->mode = TB_MODE_WALL;
		return 0;
	case OPT_GIL:
		o->mode = TB_MODE_GIL;
		return 0;
	case OPT_NONBLOCKING:
		return 0;	/* py-spy's default pauses the target; we never do */
	}
	return -1;
}

/* The first -o is the output; each later one one more file of the run. */
static int add_output(const char *arg, struct options *o)
{
	if (!o->output) {
		o->output = arg;
		return 0;
	}
	if (o->nmore == CLI_MAX_OUTPUTS) {
		tb_error("-o %s: more than %d -o files (write the others with tachyon-bpf replay from a .tby recording)",
			 arg, CLI_MAX_OUTPUTS + 1);
		return -1;
	}
	o->more_output[o->nmore] = arg;
	o->more_writer[o->nmore] = writer_for_path(arg);
	if (!o->more_writer[o->nmore]) {
		tb_error("-o %s: a second -o needs the extension of a format (end the name with %s)",
			 arg, writer_extensions());
		return -1;
	}
	o->nmore++;
	return 0;
}

/* What the formats need sampled: each sample's time, the GC state. */
static void formats_need(struct options *o)
{
	int i;

	o->timeline |= o->writer->timed;
	o->gc_state = o->writer->gc_markers;
	for (i = 0; i < o->nmore; i++) {
		o->timeline |= o->more_writer[i]->timed;
		o->gc_state |= o->more_writer[i]->gc_markers;
	}
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
			tb_error("-o: empty file name (give a path)");
			return -1;
		}
		return add_output(arg, o);
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
	if (c == OPT_NATIVE)
		return parse_native(arg, o);
	if ((c >= OPT_SUMMARY && c <= OPT_PUSH_INTERVAL) || c >= OPT_FUNCTION)
		return parse_output_opt(c, arg, o);
	return parse_flag(c, o);
}

static const char *const command_names[] = {
	[CMD_RECORD] = "", [CMD_TOP] = "top", [CMD_DUMP] = "dump",
};

/* "tachyon-bpf top --help", or "tachyon-bpf --help". */
static const char *help_of(int command)
{
	static char buf[48];

	snprintf(buf, sizeof(buf), "tachyon-bpf %s%s--help", command_names[command],
		 command ? " " : "");
	return buf;
}

static void bad_option(char **argv, int c, int command)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		tb_error("%s: this option needs a value (see %s)", arg, help_of(command));
	else if (optopt && optopt < 0x100)
		tb_error("-%c: unknown option (see %s)", optopt, help_of(command));
	else
		tb_error("%s: unknown option (see %s)", arg, help_of(command));
}

/* py-spy's one-letter spellings, as the options they stand for. */
static int canonical(int c)
{
	switch (c) {
	case 'r':
		return 'F';
	case 't':
		return OPT_THREADS;
	case 'i':
		return OPT_IDLE;
	case 'g':
		return OPT_GIL;
	case 'n':
		return OPT_NATIVE;
	}
	return c;
}

/* The option's long name for messages: "--frequency". */
static const char *opt_name(int c)
{
	static char buf[32];
	const struct option *lo;

	for (lo = longopts; lo->name; lo++) {
		if (lo->val == c) {
			snprintf(buf, sizeof(buf), "--%s", lo->name);
			return buf;
		}
	}
	snprintf(buf, sizeof(buf), "-%c", c);
	return buf;
}

/* Options each subcommand takes; recording takes them all. */
static const int top_opts[] = {
	'p', 'a', 's', 'F', 'c', 'd', 'e', 'm', 'v', OPT_PIDS, OPT_FULL_FILENAMES,
	OPT_FORCE_VERSION, OPT_THREADS, OPT_GC, OPT_KERNEL, OPT_NO_FALLBACK, OPT_UNSAFE_RATE,
	OPT_PER_CPU, OPT_SUMMARY,
	OPT_STATS, OPT_IDLE, OPT_GIL, OPT_NONBLOCKING, OPT_NATIVE, OPT_FUNCTION, OPT_NOLINENO,
	OPT_ASYNC_AWARE, 0,
};
static const int dump_opts[] = {
	'p', 's', 'v', OPT_FULL_FILENAMES, OPT_FORCE_VERSION, OPT_NONBLOCKING, OPT_NATIVE,
	OPT_JSON, OPT_LOCALS, OPT_ASYNC_AWARE, 0,
};

static int command_takes(int command, int c)
{
	const int *ok = command == CMD_TOP ? top_opts : dump_opts;

	if (command == CMD_RECORD)
		return 1;
	for (; *ok; ok++)
		if (*ok == c)
			return 1;
	return 0;
}

static int command_find(const char *name)
{
	int i;

	for (i = CMD_TOP; i <= CMD_DUMP; i++)
		if (!strcmp(name, command_names[i]))
			return i;
	return CMD_RECORD;
}

static void print_usage(int command)
{
	if (command == CMD_TOP)
		fputs(top_usage, stdout);
	else if (command == CMD_DUMP)
		fputs(dump_usage, stdout);
	else
		printf(usage_text, writer_names(), TB_SAFE_CLOCK_HZ);
}

/* The Pyroscope options come together or not at all. */
static int check_pyroscope(const struct options *o, int interval_given)
{
	if (o->pyroscope && !o->app) {
		tb_error("--pyroscope: no application name (add --app NAME)");
		return -1;
	}
	if (!o->pyroscope && (o->app || interval_given)) {
		tb_error("%s: only used with --pyroscope (add --pyroscope URL)",
			 o->app ? "--app" : "--push-interval");
		return -1;
	}
	return 0;
}

/* One of -p, --all-python, -- COMMAND, as the command allows. */
static int check_targets(const struct options *o)
{
	int n = !!o->npids + o->all_python + !!o->cmd;

	if (o->command == CMD_DUMP && !o->npids) {
		tb_error("dump: no target: nothing to dump (give -p PID)");
		return -1;
	}
	if (o->command == CMD_TOP && o->cmd) {
		tb_error("top: -- COMMAND: top does not start programs (start it elsewhere and give -p PID)");
		return -1;
	}
	if (n == 1)
		return 0;
	if (o->command == CMD_TOP)
		tb_error(n ? "top: targets: give only one of -p PID, --all-python (see tachyon-bpf top --help)" :
			 "top: no target: nothing to watch (give -p PID or --all-python)");
	else
		tb_error(n ? "targets: give only one of -p PID, --all-python, -- COMMAND (see tachyon-bpf --help)" :
			 "no target: nothing to profile (give -p PID, --all-python or -- COMMAND)");
	return -1;
}

static int check_combination(struct options *o, const char *seen)
{
	if (check_targets(o))
		return -1;
	if (o->keep_running && !o->cmd) {
		tb_error("--keep-running: only with -- COMMAND (it keeps the command running after the run)");
		return -1;
	}
	if (o->subprocesses && o->all_python) {
		tb_error("-s and --all-python: give one of them (--all-python already profiles every Python process, children included)");
		return -1;
	}
	if (o->period && o->freq_given) {
		tb_error("-c and -F: give one of them (a period in events, or a frequency)");
		return -1;
	}
	return check_pyroscope(o, seen[OPT_PUSH_INTERVAL]);
}

/* After the options: "-- COMMAND ARGS", or nothing. */
static int check_rest(int argc, char **argv, struct options *o)
{
	if (optind < argc && strcmp(argv[optind - 1], "--")) {
		if (o->command)
			tb_error("%s: unexpected argument (see tachyon-bpf %s --help)", argv[optind],
				 command_names[o->command]);
		else
			tb_error("%s: unexpected argument (put a command after --; see tachyon-bpf --help)",
				 argv[optind]);
		return -1;
	}
	if (optind < argc && !*argv[optind]) {
		tb_error("-- '': empty command name (give the program to run, e.g. -- python3 app.py)");
		return -1;
	}
	if (optind < argc)
		o->cmd = argv + optind;
	return 0;
}

/* Help, version, bad options: returns an exit code, or -1 to parse c. */
static int early_option(int c, char **argv, const struct options *o)
{
	if (c == 'h') {
		print_usage(o->command);
		return TB_EXIT_OK;
	}
	if (c == OPT_VERSION) {
		printf("tachyon-bpf %s\n", TB_VERSION);
		return TB_EXIT_OK;
	}
	if (c == '?' || c == ':') {
		bad_option(argv, c, o->command);
		return TB_EXIT_USAGE;
	}
	if (c == OPT_NATIVE && o->command == CMD_DUMP) {
		tb_error("--native: dump reads Python frames only (use tachyon-bpf record --native for native frames)");
		return TB_EXIT_USAGE;
	}
	if (!command_takes(o->command, c)) {
		tb_error("%s: not an option of %s (see %s)", opt_name(c),
			 command_names[o->command], help_of(o->command));
		return TB_EXIT_USAGE;
	}
	if (c == 'e' && !strcmp(optarg, "help")) {
		list_events();
		return TB_EXIT_OK;
	}
	return -1;
}

int cli_check_distinct(const char *who, const char *const *what, const char *const *path, int n)
{
	int i, j;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++) {
			if (!path[i] || !path[j] || !safe_same_file(path[i], path[j]))
				continue;
			/* The last one written would hold only itself. */
			tb_error("%s%s %s and %s %s: the same file (give each output its own file)",
				 who, what[i], path[i], what[j], path[j]);
			return -1;
		}
	return 0;
}

/* Every file the run writes: -o (each), --stats. */
static int check_outputs_distinct(const struct options *o)
{
	const char *what[CLI_MAX_OUTPUTS + 2], *path[CLI_MAX_OUTPUTS + 2];
	int i, n = 0;

	what[n] = "-o";
	path[n++] = o->output;
	for (i = 0; i < o->nmore; i++) {
		what[n] = "-o";
		path[n++] = o->more_output[i];
	}
	what[n] = "--stats";
	path[n++] = o->stats_path;
	return cli_check_distinct("", what, path, n);
}

int cli_check_stdout(const char *who, const char *output)
{
	if (output || !safe_stdout_closed())
		return 0;
	/* The profile would go to /dev/null, which took fd 1's place. */
	tb_error("%sstdout: closed (give -o FILE)", who);
	return -1;
}

/*
 * -o's extension picks the format; a name without one is collapsed stacks,
 * but an extension we do not know is refused rather than silently getting
 * collapsed text in a file called x.html.
 */
static int writer_from_path(struct options *o)
{
	const char *dot = writer_unknown_ext(o->output);

	o->writer = writer_for_path(o->output);
	if (!dot)
		return 0;
	tb_error("-o %s: %s is not the extension of an output format (end the name with %s)",
		 o->output, dot, writer_extensions());
	return -1;
}

int cli_parse(int argc, char **argv, struct options *o)
{
	char seen[OPT_END] = "";
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->freq = 99;
	o->event = event_default();
	o->push_interval = 10;
	if (argc > 1)
		o->command = command_find(argv[1]);
	/* py-spy's verb for recording, which is what we do without one. */
	if (o->command || (argc > 1 && !strcmp(argv[1], "record"))) {
		argc--;
		argv++;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:F:r:c:d:o:e:f:m:asvhtign", longopts, NULL)) != -1) {
		c = canonical(c);
		ret = early_option(c, argv, o);
		if (ret >= 0)
			return ret;
		if (c > 0 && c < OPT_END)
			seen[c] = 1;
		if (parse_one(c, optarg, o))
			return TB_EXIT_USAGE;
	}
	if (check_rest(argc, argv, o) || check_combination(o, seen) ||
	    check_outputs_distinct(o))
		return TB_EXIT_USAGE;
	/* Targets whose exceptions cannot be found are refused, not profiled
	 * with every sample dropped. */
	if (o->mode == TB_MODE_EXC)
		o->layout_flags |= LAYOUT_EXCEPTIONS;
	if (!o->writer && o->output && writer_from_path(o))
		return TB_EXIT_USAGE;
	if (o->command == CMD_RECORD && cli_check_stdout("", o->output))
		return TB_EXIT_USAGE;
	/* dump has no -o: its report would go to the /dev/null on fd 1. */
	if (o->command == CMD_DUMP && safe_stdout_closed()) {
		tb_error("dump: stdout: closed (redirect it: dump -p PID > FILE)");
		return TB_EXIT_USAGE;
	}
	if (!o->writer)
		o->writer = writer_default();
	/* A time-ordered format needs every sample's time. */
	formats_need(o);
	tb_verbose = o->verbose;
	return -1;
}

const char *cli_rate_text(const struct options *o, char *buf, size_t len)
{
	char asked[32];

	if (o->period)
		snprintf(asked, sizeof(asked), "-c %" PRIu64, o->period);
	else
		snprintf(asked, sizeof(asked), "-F %" PRIu64, o->freq);
	if (!o->event->tick)
		snprintf(buf, len, "%s", asked);
	else if (o->tick_every == 1)
		snprintf(buf, len, "%s: every tick of HZ %d, %.6g Hz", asked, o->kernel_hz,
			 o->rate_hz);
	else
		snprintf(buf, len, "%s: every %u%s tick of HZ %d, %.6g Hz", asked, o->tick_every,
			 ordinal_suffix(o->tick_every),
			 o->kernel_hz, o->rate_hz);
	return buf;
}
