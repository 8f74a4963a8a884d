// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tachyon-bpf: sample CPython stacks from the kernel.
 *
 *   discover (target.c, proc.c, pyelf.c) -> layout (layout.c)
 *   -> sample (bpf/tachyon.bpf.c, sampler.c)
 *   -> consume (session.c: the loop; targets.c, ingest.c, child.c)
 *   -> symbolize (symbols.c, linetable.c, pystr.c) -> aggregate (profile.c)
 *   -> write (output/)
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "diff.h"
#include "dump.h"
#include "errors.h"
#include "kfeatures.h"
#include "safefile.h"
#include "output/output.h"
#include "output/tby.h"
#include "proc.h"
#include "progress.h"
#include "pyroscope.h"
#include "recstream.h"
#include "replay.h"
#include "session.h"
#include "stats.h"
#include "top.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int has_cap(const struct __user_cap_data_struct d[2], int cap)
{
	return !!(d[cap / 32].effective & (1u << (cap % 32)));
}

/* Root, or the three capabilities that sampling needs. */
static int check_privileges(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {};
	static const struct { int cap; const char *name; } need[] = {
		{ CAP_BPF, "CAP_BPF" },
		{ CAP_PERFMON, "CAP_PERFMON" },
		{ CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
	};
	char missing[128] = "";
	size_t i;

	if (syscall(SYS_capget, &h, d)) {
		tb_error("privileges: capget: %s (run as root)", strerror(errno));
		return -1;
	}
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (has_cap(d, need[i].cap))
			continue;
		if (missing[0])
			strcat(missing, ", ");
		strcat(missing, need[i].name);
	}
	if (!missing[0])
		return 0;
	tb_error("insufficient privileges: missing %s (run as root, or grant them: setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep tachyon-bpf)",
		 missing);
	return -1;
}

/* --btf FILE: read as BTF now, not found wrong by the BPF loader later. */
static int check_btf_file(const char *path)
{
	libbpf_print_fn_t print;
	struct btf *btf;

	if (access(path, R_OK)) {
		tb_error("--btf %s: %s (give the kernel's BTF file, e.g. from BTFHub)", path,
			 strerror(errno));
		return -1;
	}
	print = libbpf_set_print(NULL);	/* its own reason, in a line of its own: not wanted */
	btf = btf__parse(path, NULL);
	libbpf_set_print(print);
	if (!btf) {
		tb_error("--btf %s: not a BTF file (give the kernel's BTF file, e.g. from BTFHub)",
			 path);
		return -1;
	}
	btf__free(btf);
	return 0;
}

static int check_btf(const struct options *o)
{
	const char *path = getenv("TACHYON_BTF");

	if (o->btf_path)
		return check_btf_file(o->btf_path);
	if (!path)
		path = "/sys/kernel/btf/vmlinux";
	if (!access(path, R_OK))
		return 0;
	tb_error("kernel BTF: %s: %s (the kernel was built without CONFIG_DEBUG_INFO_BTF=y, or /sys is not mounted; the scheduler tracepoints need the kernel's own BTF)",
		 path, strerror(errno));
	return -1;
}

/*
 * -p TID (a thread id, as top -H shows) means its process: samples are
 * matched by process, so the thread id alone would give nothing.
 */
static void threads_to_processes(struct options *o)
{
	int i, n = o->npids;

	o->npids = 0;
	for (i = 0; i < n; i++) {
		pid_t pid = o->pids[i], tgid = proc_tgid(pid);

		if (tgid > 0 && tgid != pid) {
			tb_info("-p %d: thread %d belongs to process %d: profiling process %d",
				pid, pid, tgid, tgid);
			pid = tgid;
		}
		if (!cli_has_pid(o, pid))
			o->pids[o->npids++] = pid;
	}
}

static FILE *open_output(const char *path)
{
	char why[128];
	FILE *f;

	if (!path)
		return stdout;
	/* Not truncated yet: a run that fails keeps what the file held. */
	f = safe_open(path, why, sizeof(why));
	if (!f)
		tb_error("-o %s: %s (choose a writable path)", path, why);
	return f;
}

static int close_output(const struct options *o, FILE *out, int ret)
{
	if (out && out != stdout && fclose(out) && !ret) {
		tb_error("-o %s: %s", o->output, strerror(errno));
		ret = TB_EXIT_RUNTIME;
	}
	return ret;
}

/* What runs from the session's tick while recording. */
struct hooks {
	struct progress progress;
	struct pyroscope pyro;
	int pyro_on;
	struct rec_stream stream;	/* -o prof.tby, written as the run goes */
	FILE *tby_out;			/* ... its file, or NULL */
};

static void on_tick(struct session *s, void *ctx)
{
	struct hooks *h = ctx;

	if (h->pyro_on && pyroscope_due(&h->pyro)) {
		/* A failed push prints a line: let it start on a clean one. */
		progress_clear(&h->progress);
		pyroscope_push(&h->pyro, s, 0);
	}
	progress_tick(&h->progress, s);
	rec_stream_tick(&h->stream, s);
}

static int hooks_attach(struct hooks *h, struct session *s, const struct options *o)
{
	progress_init(&h->progress);
	if (o->pyroscope) {
		if (pyroscope_init(&h->pyro, o))
			return TB_EXIT_RUNTIME;
		h->pyro_on = 1;
	}
	rec_stream_init(&h->stream, h->tby_out);
	if (!h->progress.on && !h->pyro_on && !h->stream.out)
		return 0;
	session_set_tick(s, on_tick, h, 0.5);
	return 0;
}

static void hooks_free(struct hooks *h)
{
	if (h->pyro_on)
		pyroscope_free(&h->pyro);
	rec_stream_free(&h->stream);
}

/* The files of -o given again, opened before the run like the first. */
static FILE *more_out[CLI_MAX_OUTPUTS];

/*
 * A streamed recording gets its final form in a new file renamed over it:
 * a kill during that write leaves the streamed file whole. 1 if done (err
 * set), 0 if the directory takes no new file (then written in place).
 */
static int write_whole(FILE *out, const char *path, const struct writer *w,
		       const struct resolved *r, int *err)
{
	char tmp[PATH_MAX];
	FILE *f = safe_sibling(path, tmp, sizeof(tmp));
	struct stat st;

	if (!f) {
		tb_debug("-o %s: no new file beside it (%s): rewritten in place",
			 path, strerror(errno));
		return 0;
	}
	if (!fstat(fileno(out), &st))	/* the mode the file had */
		fchmod(fileno(f), st.st_mode & 0755);
	*err = w->write(f, r);
	if (*err) {
		fclose(f);
		unlink(tmp);
	} else {
		*err = safe_replace(f, tmp, path);
	}
	return 1;
}

static int write_to(FILE *out, const char *path, const struct writer *w,
		    const struct resolved *r, int streamed)
{
	int err;

	if (!streamed || !write_whole(out, path, w, r, &err)) {
		if (out != stdout && safe_truncate(out)) {
			tb_error("-o %s: %s", path, strerror(errno));
			return TB_EXIT_RUNTIME;
		}
		err = w->write(out, r);
	}
	if (!err || err == -EPIPE)
		return TB_EXIT_OK;
	tb_error("writing the profile: %s (check the disk or the -o path)", strerror(-err));
	return TB_EXIT_RUNTIME;
}

/* The same profile into each further -o file, in its own format. */
static int write_more(const struct options *o, const struct resolved *r, FILE *streamed)
{
	int i, ret;

	for (i = 0; i < o->nmore; i++) {
		const struct writer *w = o->more_writer[i];

		ret = write_to(more_out[i], o->more_output[i], w, r, more_out[i] == streamed);
		if (ret)
			return ret;
		tb_info("wrote %s%s%s%s", o->more_output[i], w->hint ? " (" : "",
			w->hint ? w->hint : "", w->hint ? ")" : "");
	}
	return TB_EXIT_OK;
}

/* The profile to its file (not for top: the screen was its output). */
static int write_profile(const struct session_view *v, FILE *out, const struct resolved *r,
			 FILE *streamed)
{
	int ret;

	if (!out || v->stop == STOP_PIPE_CLOSED)
		return TB_EXIT_OK;
	ret = write_to(out, v->opt->output, v->opt->writer, r, out == streamed);
	return ret ? ret : write_more(v->opt, r, streamed);
}

static int open_more(const struct options *o)
{
	int i;

	for (i = 0; i < o->nmore; i++) {
		more_out[i] = open_output(o->more_output[i]);
		if (!more_out[i])
			return -1;
	}
	return 0;
}

static int close_more(const struct options *o, int ret)
{
	int i;

	for (i = 0; i < o->nmore && more_out[i]; i++)
		if (fclose(more_out[i]) && !ret) {
			tb_error("-o %s: %s", o->more_output[i], strerror(errno));
			ret = TB_EXIT_RUNTIME;
		}
	return ret;
}

/* Where the closing line says the profile went: the -o file, if written
 * (not /dev/null). */
static const char *written_to(const struct session_view *v, FILE *out, int ret)
{
	struct stat st;

	if (!out || out == stdout || ret || v->stop == STOP_PIPE_CLOSED)
		return NULL;
	if (fstat(fileno(out), &st) || !S_ISREG(st.st_mode))
		return NULL;
	return v->opt->output;
}

/*
 * Symbolize, write, report. Returns the exit code. A recording that
 * profiled nothing writes nothing (an -o file keeps what it held) and
 * fails with one line saying why.
 */
static int finish(struct session *s, FILE *out, FILE *statsf, struct hooks *h)
{
	struct session_view v;
	char rate[32];
	struct resolved r;
	int ret, empty, err;

	session_snapshot(s, &v);
	rec_profile_meta(&v, &r, rate, sizeof(rate));
	if (session_resolve(s, &r)) {
		tb_error("writing the profile: out of memory");
		resolved_free(&r);
		return TB_EXIT_RUNTIME;
	}
	empty = out && !r.total && v.stop != STOP_PIPE_CLOSED;
	ret = empty ? TB_EXIT_RUNTIME :
	      write_profile(&v, out, &r, h ? rec_stream_file(&h->stream) : NULL);
	if (!empty && v.opt->summary && (err = output_summary(stderr, &r)))
		tb_warn("--summary: %s", strerror(-err));
	if (h && h->pyro_on)
		pyroscope_push(&h->pyro, s, 1);
	/* Again: resolving looked up code objects, which the statistics count. */
	session_snapshot(s, &v);
	if (v.opt->verbose)
		stats_print(&v, r.total);
	if (empty)
		stats_explain_empty(&v);
	else if (out)	/* top's screen said it all */
		stats_line(&v, r.total, written_to(&v, out, ret));
	if (statsf)
		stats_write_json(statsf, &v, r.total);
	resolved_free(&r);
	return ret;
}

/* Attach what watches the run: top's screen, or progress and pushes. */
static int attach(struct session *s, const struct options *o, struct top *tp, struct hooks *h)
{
	if (o->command == CMD_TOP)
		return top_attach(tp, s, o);
	return hooks_attach(h, s, o);
}

/* Record until the run stops; then write and report. The exit code. */
static int record(struct session *s, const struct options *o, FILE *out, FILE *statsf,
		  struct hooks *h, struct top *tp)
{
	int top = o->command == CMD_TOP;
	struct session_view v;

	session_snapshot(s, &v);
	tb_debug("profiling %u process(es) at %.6g Hz with %s%s", v.ntargets, o->rate_hz,
		 o->event->name, v.per_task ? " (one event per thread)" :
		 o->event->tick ? "" : " (one event per CPU)");
	session_run(s);
	if (top)
		top_end(tp);
	else
		progress_clear(&h->progress);
	session_snapshot(s, &v);
	return v.stop == STOP_ERROR ? TB_EXIT_RUNTIME : finish(s, out, statsf, top ? NULL : h);
}

/* The -o file that gets the binary recording, if one does. */
static FILE *tby_output(const struct options *o, FILE *out)
{
	int i;

	if (o->writer && o->writer->write == output_binary)
		return out;
	for (i = 0; i < o->nmore; i++)
		if (o->more_writer[i]->write == output_binary)
			return more_out[i];
	return NULL;
}

static int run(struct options *o, FILE *out, FILE *statsf)
{
	static struct hooks h;
	static struct top tp;
	int top = o->command == CMD_TOP, ret;
	struct session *s = session_new(o);

	if (!s) {
		tb_error("startup: out of memory (free some memory)");
		return TB_EXIT_RUNTIME;
	}
	ret = session_open_targets(s);
	if (ret) {
		/* Nothing attached yet: top's state was never set up. */
		session_free(s);
		return ret == -EINVAL ? TB_EXIT_USAGE : TB_EXIT_RUNTIME;
	}
	h.tby_out = tby_output(o, out);
	ret = attach(s, o, &tp, &h);
	if (!ret && session_start(s))
		ret = TB_EXIT_RUNTIME;
	if (!ret && top)
		ret = top_begin(&tp);
	if (!ret)
		ret = record(s, o, out, statsf, &h, &tp);
	else if (top)
		top_end(&tp);
	session_free(s);
	hooks_free(&h);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o;
	FILE *out = NULL, *statsf = NULL;
	int ret;

	safe_std_fds();
	/* However the run ends: no empty file left where there was none. */
	atexit(safe_remove_unwritten);
	/* Two files in, a file out: no target, no privileges, its own options. */
	if (argc > 1 && !strcmp(argv[1], "diff"))
		return diff_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "replay"))
		return replay_main(argc - 1, argv + 1);
	ret = cli_parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	if (o.command == CMD_DUMP)
		return dump_main(&o);
	/* Ctrl-C during the start-up (loading BPF takes a fifth of a second,
	 * more on a busy host) still ends the run cleanly. */
	session_block_signals(NULL);
	if (check_privileges() || check_btf(&o))
		return TB_EXIT_RUNTIME;
	ret = cli_choose_event(&o);
	if (ret >= 0)
		return ret;
	if (kfeatures_check(KF_REQUIRED | (o.event->tick ? KF_BIT(KF_HRTIMER_TP) : 0), o.verbose))
		return TB_EXIT_RUNTIME;
	threads_to_processes(&o);
	/* Both files are checked before the run, not found unwritable after it. */
	if (o.command != CMD_TOP) {
		out = open_output(o.output);
		if (!out)
			return TB_EXIT_RUNTIME;
		if (open_more(&o))
			return close_more(&o, close_output(&o, out, TB_EXIT_RUNTIME));
	}
	if (o.stats_path) {
		statsf = stats_open(o.stats_path);
		if (!statsf) {
			close_more(&o, close_output(&o, out, 0));
			return TB_EXIT_RUNTIME;
		}
	}
	ret = run(&o, out, statsf);
	if (statsf)
		fclose(statsf);
	return close_more(&o, close_output(&o, out, ret));
}
