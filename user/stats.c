// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "errors.h"
#include "layout.h"
#include "output/output.h"
#include "safefile.h"
#include "stats.h"

static uint64_t dropped(const struct session_stats *st)
{
	const uint64_t *c = st->bpf;

	return c[TB_C_NO_TSTATE] + c[TB_C_NO_FRAMES] + c[TB_C_READ_TSTATE] + c[TB_C_FILTERED] +
	       st->in.unknown_pid + st->in.missing_stack;
}

void stats_summarize(const struct session_view *s, uint64_t written, struct stats_summary *out)
{
	const struct session_stats *st = &s->st;
	const uint64_t *c = st->bpf;

	/* --async-aware wall mode writes an interval once per task waiting
	 * in it: each copy is a sample collected, so that collected = written
	 * + lost + dropped still holds; so is each period of a tick's
	 * runtime-weighted sample beyond its first */
	out->collected = c[TB_C_EVENTS] + c[TB_C_TICK_EXTRA] + c[TB_C_OFFCPU_WEIGHT] +
			 c[TB_C_OFFCPU_LOST] + st->in.offcpu_final + st->in.async_wait_copies;
	out->written = written;
	out->lost = c[TB_C_LOST] + c[TB_C_OFFCPU_LOST];
	out->dropped = dropped(st);
}

/* Our resident set now and at its peak, in KiB (0 if /proc says nothing). */
static void self_rss(uint64_t *rss_kb, uint64_t *peak_kb)
{
	char line[128];
	FILE *f = fopen("/proc/self/status", "re");

	*rss_kb = *peak_kb = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmRSS:", 6))
			*rss_kb = strtoull(line + 6, NULL, 10);
		else if (!strncmp(line, "VmHWM:", 6))
			*peak_kb = strtoull(line + 6, NULL, 10);
	}
	fclose(f);
}

/* Share of code-object lookups the cache answered without a read. */
static double code_hit_rate(const struct session_symstats *sym)
{
	return sym->lookups ? 1.0 - (double)sym->reads / sym->lookups : 0;
}

static double bpf_ns_per_sample(const struct session_stats *st)
{
	return st->bpf[TB_C_EVENTS] ? (double)st->bpf[TB_C_BPF_NS] / st->bpf[TB_C_EVENTS] : 0;
}

/* What drives sampling: the tick, events per thread, or events per CPU. */
static const char *stats_scope(const struct session_view *s)
{
	return s->opt->event->tick ? "tick" : s->per_task ? "thread" : "cpu";
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/*
 * --native: most stacks marked unmatched, said on the closing line with what
 * to do (frame pointers only: Debian's 3.14 or pyenv's builds have none, and
 * every stack was marked, silently but for -v).
 */
static void native_losses(const struct session_view *s, char *buf, size_t len)
{
	uint64_t bad = s->st.in.native_unmatched, all = bad + s->st.in.native_merged;

	if (!s->opt->native || bad < 10 || bad * 2 <= all)
		return;
	snprintf(buf + strlen(buf), len - strlen(buf),
		 ", %" PRIu64 " of %" PRIu64 " native stacks unmatched (%s)", bad, all,
		 s->opt->native_fp ? "code without frame pointers: --native unwinds it"
				   : "marked [native unmatched]; -v says more");
}

/*
 * -- CMD that failed on its own: its status, which the profiler's own exit
 * status does not carry (0 for a profile written).
 */
static void command_end(const struct session_view *s, char *buf, size_t len)
{
	int st = s->command_status;

	if (!s->command_ended)
		return;
	if (WIFEXITED(st) && WEXITSTATUS(st))
		snprintf(buf, len, "; the command exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "; the command was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
}

void stats_line(const struct session_view *s, uint64_t written, const char *wrote)
{
	const struct session_stats *st = &s->st;
	const struct writer *w = s->opt->writer;
	struct stats_summary sum;
	char rate[64], losses[320] = "", where[PATH_MAX + 96] = "", cmd[96] = "";

	stats_summarize(s, written, &sum);
	if (sum.lost)
		snprintf(losses, sizeof(losses), ", lost %" PRIu64 " (ring buffer full)", sum.lost);
	if (sum.dropped)
		snprintf(losses + strlen(losses), sizeof(losses) - strlen(losses),
			 ", dropped %" PRIu64 "%s", sum.dropped, tb_verbose ? "" : " (-v says why)");
	if (st->cfi_on && st->cfi.unfit)	/* said once per file at the time, and here */
		snprintf(losses + strlen(losses), sizeof(losses) - strlen(losses),
			 ", %" PRIu64 " unwind tables over the %" PRIu64 "-row bound",
			 st->cfi.unfit, st->cfi.max_rows);
	native_losses(s, losses, sizeof(losses));
	if (wrote && w->hint)
		snprintf(where, sizeof(where), "; wrote %s (%s)", wrote, w->hint);
	else if (wrote)
		snprintf(where, sizeof(where), "; wrote %s", wrote);
	command_end(s, cmd, sizeof(cmd));
	tb_info("%" PRIu64 " samples in %.1f s (%s mode, %s, %s), %" PRIu64 " %s%s%s%s",
		written, st->seconds, cli_mode_name(s->opt->mode), s->opt->event->name,
		cli_rate_text(s->opt, rate, sizeof(rate)), st->processes,
		plural(st->processes, "process", "processes"), losses, where, cmd);
}

/*
 * cpu mode, no sample: an idle target, or one that ran but that the event
 * never hit (a period longer than its CPU time, page faults it never
 * takes): the targets' CPU time, measured apart from the samples, tells.
 */
static void explain_no_cpu_samples(const struct session_view *s)
{
	const struct options *o = s->opt;
	const char *many = s->st.processes > 1 ? "s" : "";
	char rate[96];

	cli_rate_text(o, rate, sizeof(rate));
	if (s->st.target_cpu <= 0)
		tb_error("no samples: the target%s used no CPU in %.1f s: idle or waiting (to see where it waits, use -m wall)",
			 many, s->st.seconds);
	else if (event_is_clock(o->event) || o->event->tick)
		tb_error("no samples: the target%s ran %.2f s of CPU in %.1f s, less than the sampling period (%s, %s) (sample more often: a smaller -c or a larger -F)",
			 many, s->st.target_cpu, s->st.seconds, o->event->name, rate);
	else
		tb_error("no samples: the target%s ran %.2f s of CPU in %.1f s but the event (%s, %s) never fired for it (choose another event, or a smaller -c)",
			 many, s->st.target_cpu, s->st.seconds, o->event->name, rate);
}

/* Why a run gave nothing, and what to do: one line. */
void stats_explain_empty(const struct session_view *s)
{
	const struct options *o = s->opt;
	const char *refused = s->refused_command;
	struct stats_summary sum;

	stats_summarize(s, 0, &sum);
	if (o->cmd && refused)
		tb_error("%s: %s", o->cmd[0], refused);
	else if (o->cmd && !s->st.processes)
		tb_error("%s: not a Python process, or it exited before its interpreter started: nothing profiled (run a CPython %s program, e.g. -- python3 app.py)",
			 o->cmd[0], layout_supported());
	else if (!s->st.processes && o->all_python)
		tb_error("--all-python: no CPython %s process ran in %.1f s: nothing profiled (run tachyon-bpf while the program runs)",
			 layout_supported(), s->st.seconds);
	else if (!s->st.processes)	/* -p PID -s, PID not Python */
		tb_error("-p %d%s -s: neither the process%s nor %s children ran CPython %s in %.1f s: nothing profiled (give the pid of a process that starts Python, or run it longer)",
			 o->pids[0], o->npids > 1 ? ",..." : "", o->npids > 1 ? "es" : "",
			 o->npids > 1 ? "their" : "its", layout_supported(), s->st.seconds);
	else if (o->mode == TB_MODE_EXC && s->st.bpf[TB_C_FILTERED])
		tb_error("no samples: of %" PRIu64 " taken in %.1f s, none had an exception in flight (raised, propagating or handled) (profile it while it handles one, or use -m cpu)",
			 sum.collected, s->st.seconds);
	else if (sum.collected)
		tb_error("no samples: all %" PRIu64 " taken were lost or dropped (run with -v to see why)",
			 sum.collected);
	else if (s->stop == STOP_TARGETS_EXITED)
		tb_error("no samples: the target%s exited before the first sample (profile it while it runs)",
			 s->st.processes > 1 ? "s" : "");
	else if (s->stop == STOP_SIGNAL && s->st.stopped_in_setup)
		tb_error("no samples: the run was stopped by a signal before sampling began (stop it once it has run a while, or give -d SECONDS)");
	else if (o->mode == TB_MODE_CPU)
		explain_no_cpu_samples(s);
	else if (o->mode == TB_MODE_GIL)
		tb_error("no samples: no profiled thread held the GIL on a CPU in %.1f s (to see where threads wait, use -m wall)",
			 s->st.seconds);
	else
		tb_error("no samples in %.1f s: the run ended before the first sample (profile for longer, e.g. -d 5)",
			 s->st.seconds);
}

/* -v: everything the summary line leaves out. */
void stats_print(const struct session_view *s, uint64_t written)
{
	const struct session_stats *st = &s->st;
	const uint64_t *c = st->bpf;
	double secs = st->seconds > 0 ? st->seconds : 1;
	int ncpus = st->ncpus ? st->ncpus : 1;
	struct stats_summary sum;
	uint64_t rss, peak;

	stats_summarize(s, written, &sum);
	tb_info("collected %" PRIu64 ": %.1f/s, %.1f/s per CPU on %d CPUs",
		sum.collected, sum.collected / secs, sum.collected / secs / ncpus, ncpus);
	if (s->opt->mode == TB_MODE_WALL)
		tb_info("off-CPU: %" PRIu64 " periods credited at switch-in, %" PRIu64 " at the end, from %" PRIu64 " switch-outs and %" PRIu64 " threads blocked when found",
			c[TB_C_OFFCPU_WEIGHT], st->in.offcpu_final, c[TB_C_OFFCPU_WALKS],
			st->in.offcpu_seeded);
	if (st->in.tstates_seeded)
		tb_info("threads: %" PRIu64 " thread states entered in the BPF side's cache (processes with more than %d threads)",
			st->in.tstates_seeded, TB_MAX_THREADS);
	if (s->opt->mode == TB_MODE_WALL && s->opt->async_aware) {
		tb_info("asyncio: %" PRIu64 " off-CPU intervals credited to the tasks waiting in them, %" PRIu64 " periods in all (each task gets the whole interval)",
			st->in.async_wait_credits, st->in.async_wait_periods);
		tb_info("asyncio: %" PRIu64 " off-CPU intervals of event loop threads (%" PRIu64 " periods) keep the loop's own stack: over before their tasks were read (see README, asyncio)",
			st->in.async_wait_kept, st->in.async_wait_kept_periods);
	}
	if (s->opt->mode == TB_MODE_EXC)
		tb_info("exception mode: %" PRIu64 " samples taken, %" PRIu64 " kept (an exception in flight), %" PRIu64 " without one",
			sum.collected, sum.written, c[TB_C_FILTERED]);
	tb_info("written %" PRIu64 ", lost %" PRIu64 " (ring buffer full), dropped %" PRIu64
		" (no thread state %" PRIu64 ", no Python frame %" PRIu64 ", %s %" PRIu64
		", missing stack %" PRIu64 ", unknown pid %" PRIu64 ")",
		sum.written, sum.lost, sum.dropped, c[TB_C_NO_TSTATE], c[TB_C_NO_FRAMES],
		s->opt->mode == TB_MODE_EXC ? "no exception" : "GIL not held",
		c[TB_C_FILTERED], st->in.missing_stack, st->in.unknown_pid);
	if (c[TB_C_SPILLED])
		tb_info("ring buffers: %" PRIu64 " records went to the big ring while the warm one was full (the reader fell behind)",
			c[TB_C_SPILLED]);
	tb_info("partial stacks %" PRIu64 ", truncated %" PRIu64 ", frames skipped (not code) %" PRIu64
		", unreadable code objects %" PRIu64 " in BPF / %" PRIu64 " in userspace"
		", walks restarted at the caller (eval not set up) %" PRIu64,
		c[TB_C_READ_FRAME], c[TB_C_TRUNCATED], c[TB_C_BAD_CODE], c[TB_C_READ_CODE],
		s->sym.failures, c[TB_C_STALE_CFRAME]);
	tb_info("%" PRIu64 " distinct stacks, %" PRIu64 " code objects read (%.2f%% of lookups cached); %" PRIu64 " samples counted in the kernel; BPF %.0f ns/sample (self-timed, 1 event in 16; %s walker), %" PRIu64 " frames walked, %" PRIu64 " without a code object read (no code object born since the previous walk)",
		st->in.stacks, s->sym.reads, 100 * code_hit_rate(&s->sym), c[TB_C_AGGREGATED],
		bpf_ns_per_sample(st), s->walker, c[TB_C_FRAMES], c[TB_C_CODE_MEMO]);
	if (s->opt->native)
		tb_info("--native: %" PRIu64 " stacks merged, %" PRIu64 " unmatched (marked); %"
			PRIu64 " user stacks not captured; symbols %.1f MiB (peak %.1f MiB, bound %.0f MiB), %"
			PRIu64 " files' symbols dropped past the bound", st->in.native_merged,
			st->in.native_unmatched, c[TB_C_USTACK_ERR], st->in.native_bytes / 1048576.0,
			st->in.native_peak / 1048576.0, st->in.native_limit / 1048576.0,
			st->in.native_dropped);
	if (st->cfi_on)
		tb_info("--native unwind tables: %" PRIu64 " files, %" PRIu64 " of %" PRIu64
			" rows in use (%.1f MiB), %" PRIu64 " rows of files no process maps; %" PRIu64
			" loaded in all, %" PRIu64 " freed (%" PRIu64 " rows), %" PRIu64
			" moved, %" PRIu64 " refused; %" PRIu64 " processes (%" PRIu64
			" found gone), %" PRIu64 " rescans, %" PRIu64
			" new-code reports; BPF: %" PRIu64 " stacks, %" PRIu64 " frames by rows, %" PRIu64
			" by frame pointer, %" PRIu64 " walks to the outermost frame, %" PRIu64
			" stopped at new code",
			st->cfi.tables, st->cfi.rows, st->cfi.max_rows,
			st->cfi.rows * sizeof(struct tb_cfi_row) / 1048576.0, st->cfi.rows_idle,
			st->cfi.loaded, st->cfi.freed, st->cfi.rows_freed, st->cfi.moved,
			st->cfi.unfit, st->cfi.procs, st->cfi.reaped, st->cfi.rescans, st->cfi.notified, st->cfi.uw[TB_UW_C_STACKS],
			st->cfi.uw[TB_UW_C_ROWS], st->cfi.uw[TB_UW_C_FP], st->cfi.uw[TB_UW_C_ENDS],
			st->cfi.uw[TB_UW_C_UNKNOWN]);
	self_rss(&rss, &peak);
	tb_info("memory: RSS %.1f MiB (peak %.1f MiB); %zu code objects cached, %" PRIu64
		" evicted unused; %" PRIu64 " compactions",
		rss / 1024.0, peak / 1024.0, s->sym.cached, s->sym.evicted, st->in.compactions);
	if (st->run_cnt)
		tb_info("kernel BPF stats: %" PRIu64 " runs, %.0f ns/run (all CPUs, all processes)",
			st->run_cnt, (double)st->run_ns / st->run_cnt);
}

FILE *stats_open(const char *path)
{
	char why[128];
	FILE *f = safe_open(path, why, sizeof(why));

	if (!f)
		tb_error("--stats %s: %s (choose a writable path)", path, why);
	return f;
}

/* --native's unwind tables, as more keys of the --stats object ("" if off). */
static const char *native_json(const struct session_stats *st, char *buf, size_t len)
{
	const struct cfi_maps_stats *t = &st->cfi;

	if (!st->cfi_on)
		return "";
	snprintf(buf, len, ",\n \"unwind_tables\": {\"files\": %" PRIu64 ", \"rows\": %" PRIu64
		 ", \"rows_idle\": %" PRIu64 ", \"max_rows\": %" PRIu64 ", \"largest_free\": %" PRIu64
		 ", \"bytes\": %" PRIu64 ", \"loaded\": %" PRIu64 ", \"freed\": %" PRIu64
		 ", \"rows_freed\": %" PRIu64 ", \"moved\": %" PRIu64 ", \"unfit\": %" PRIu64
		 ", \"processes\": %" PRIu64 ", \"processes_gone\": %" PRIu64 ", \"rescans\": %" PRIu64 ", \"notified\": %" PRIu64
		 ", \"bpf_stacks\": %" PRIu64 ", \"bpf_row_frames\": %" PRIu64
		 ", \"bpf_fp_frames\": %" PRIu64 ", \"bpf_ends\": %" PRIu64
		 ", \"bpf_new_code\": %" PRIu64 "}",
		 t->tables, t->rows, t->rows_idle, t->max_rows, t->largest_free,
		 (t->rows + t->rows_idle) * (uint64_t)sizeof(struct tb_cfi_row), t->loaded, t->freed,
		 t->rows_freed, t->moved, t->unfit, t->procs, t->reaped, t->rescans, t->notified, t->uw[TB_UW_C_STACKS],
		 t->uw[TB_UW_C_ROWS], t->uw[TB_UW_C_FP], t->uw[TB_UW_C_ENDS], t->uw[TB_UW_C_UNKNOWN]);
	return buf;
}

void stats_write_json(FILE *f, const struct session_view *s, uint64_t written)
{
	char njson[1024];
	const struct session_stats *st = &s->st;
	const uint64_t *c = st->bpf;
	double secs = st->seconds > 0 ? st->seconds : 1;
	struct stats_summary sum;
	uint64_t rss, peak;

	if (safe_truncate(f)) {
		tb_warn("--stats %s: %s", s->opt->stats_path, strerror(errno));
		return;
	}
	stats_summarize(s, written, &sum);
	self_rss(&rss, &peak);
	fprintf(f, "{\"collected\": %" PRIu64 ", \"written\": %" PRIu64 ", \"lost\": %" PRIu64 ",\n"
		" \"dropped\": {\"no_tstate\": %" PRIu64 ", \"no_frames\": %" PRIu64
		", \"read_tstate\": %" PRIu64 ", \"filtered\": %" PRIu64 ", \"missing_stack\": %" PRIu64
		", \"unknown_pid\": %" PRIu64 "},\n"
		" \"partial\": %" PRIu64 ", \"truncated\": %" PRIu64 ", \"bad_code\": %" PRIu64
		", \"unknown_code\": %" PRIu64 ", \"unreadable_code\": %" PRIu64 ",\n"
		" \"stacks\": %" PRIu64 ", \"code_reads\": %" PRIu64 ", \"code_lookups\": %" PRIu64
		", \"tstate_misses\": %" PRIu64 ", \"stale_cframe\": %" PRIu64
		", \"aggregated\": %" PRIu64 ", \"count_keys\": %" PRIu64 ", \"count_new\": %" PRIu64
		", \"bpf_frames\": %" PRIu64
		", \"bpf_code_memo\": %" PRIu64 ",\n"
		" \"events\": %" PRIu64 ", \"offcpu_periods\": %" PRIu64 ", \"offcpu_final\": %" PRIu64
		", \"offcpu_lost\": %" PRIu64 ", \"offcpu_seeded\": %" PRIu64 ", \"tstates_seeded\": %" PRIu64
		", \"tick_extra\": %" PRIu64 ", \"processes\": %" PRIu64 ",\n"
		" \"duration_s\": %.3f, \"rate_hz\": %.1f, \"rate_hz_per_cpu\": %.1f, \"cpus\": %d,\n"
		" \"bpf_ns_per_sample\": %.1f, \"bpf_runs\": %" PRIu64 ", \"bpf_ns_per_run\": %.1f,\n"
		" \"rss_kb\": %" PRIu64 ", \"rss_peak_kb\": %" PRIu64 ", \"code_cached\": %zu"
		", \"code_evicted\": %" PRIu64 ", \"code_hit_rate\": %.4f, \"compactions\": %" PRIu64 ",\n"
		" \"event\": \"%s\", \"mode\": \"%s\", \"frequency\": %" PRIu64 ",\n"
		" \"sample_rate_hz\": %.6g, \"tick_every\": %u, \"kernel_hz\": %d,"
		" \"scope\": \"%s\", \"task_events\": %d, \"walker\": \"%s\",\n"
		" \"native_merged\": %" PRIu64 ", \"native_unmatched\": %" PRIu64
		", \"native_symbol_bytes\": %" PRIu64 ", \"native_symbol_peak\": %" PRIu64
		", \"native_symbol_limit\": %" PRIu64 ", \"native_dropped\": %" PRIu64 "%s}\n",
		sum.collected, sum.written, sum.lost,
		c[TB_C_NO_TSTATE], c[TB_C_NO_FRAMES], c[TB_C_READ_TSTATE], c[TB_C_FILTERED],
		st->in.missing_stack, st->in.unknown_pid,
		c[TB_C_READ_FRAME], c[TB_C_TRUNCATED], c[TB_C_BAD_CODE], s->sym.failures,
		c[TB_C_READ_CODE], st->in.stacks, s->sym.reads, s->sym.lookups, c[TB_C_TSTATE_MISS],
		c[TB_C_STALE_CFRAME], c[TB_C_AGGREGATED], st->in.count_keys, c[TB_C_COUNT_NEW], c[TB_C_FRAMES], c[TB_C_CODE_MEMO],
		c[TB_C_EVENTS], c[TB_C_OFFCPU_WEIGHT], st->in.offcpu_final, c[TB_C_OFFCPU_LOST],
		st->in.offcpu_seeded, st->in.tstates_seeded, c[TB_C_TICK_EXTRA], st->processes,
		st->seconds, c[TB_C_EVENTS] / secs, c[TB_C_EVENTS] / secs / (st->ncpus ? st->ncpus : 1),
		st->ncpus, bpf_ns_per_sample(st), st->run_cnt,
		st->run_cnt ? (double)st->run_ns / st->run_cnt : 0.0,
		rss, peak, s->sym.cached, s->sym.evicted, code_hit_rate(&s->sym), st->in.compactions,
		s->opt->event->name, cli_mode_name(s->opt->mode), s->opt->freq,
		s->opt->rate_hz, s->opt->tick_every, s->opt->kernel_hz, stats_scope(s),
		s->task_events, s->walker, st->in.native_merged, st->in.native_unmatched,
		st->in.native_bytes, st->in.native_peak, st->in.native_limit,
		st->in.native_dropped, native_json(st, njson, sizeof(njson)));
	if (fflush(f))
		tb_warn("--stats %s: %s", s->opt->stats_path, strerror(errno));
}
