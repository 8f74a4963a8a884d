// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tachyon-bpf: sample CPython stacks from the kernel.
 *
 *   discover (target.c, proc.c, pyelf.c) -> layout (layout.c)
 *   -> sample (bpf/tachyon.bpf.c, sampler.c) -> consume (session.c)
 *   -> symbolize (symbols.c, linetable.c, pystr.c) -> aggregate (profile.c)
 *   -> write (output/)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cli.h"
#include "dump.h"
#include "errors.h"
#include "kfeatures.h"
#include "safefile.h"
#include "output.h"
#include "progress.h"
#include "pyroscope.h"
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

static int check_btf(const struct options *o)
{
	const char *path = getenv("TACHYON_BTF");

	if (o->btf_path) {
		if (!access(o->btf_path, R_OK))
			return 0;
		tb_error("--btf %s: %s (give the kernel's BTF file, e.g. from BTFHub)", o->btf_path,
			 strerror(errno));
		return -1;
	}
	if (!path)
		path = "/sys/kernel/btf/vmlinux";
	if (!access(path, R_OK))
		return 0;
	tb_error("kernel BTF: %s: %s (the kernel was built without CONFIG_DEBUG_INFO_BTF=y, or /sys is not mounted; the scheduler tracepoints need the kernel's own BTF)",
		 path, strerror(errno));
	return -1;
}

/* Hardware events need a PMU; without one, cpu-clock is the honest substitute. */
static int check_event(struct options *o)
{
	if (!o->event->hardware || event_supported(o->event))
		return 0;
	if (o->no_fallback) {
		tb_error("event %s: not supported by this machine (no hardware PMU, e.g. in a VM) (use -e cpu-clock, or drop --no-fallback)",
			 o->event->name);
		return -1;
	}
	tb_warn("event %s: not supported by this machine (no hardware PMU, e.g. in a VM); falling back to cpu-clock",
		o->event->name);
	o->event = event_default();
	return 0;
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

/* What runs from the session's tick while recording. */
struct hooks {
	struct progress progress;
	struct pyroscope pyro;
	int pyro_on;
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
}

static int hooks_attach(struct hooks *h, struct session *s)
{
	const struct options *o = s->opt;

	progress_init(&h->progress);
	if (o->pyroscope) {
		if (pyroscope_init(&h->pyro, o))
			return TB_EXIT_RUNTIME;
		h->pyro_on = 1;
	}
	if (!h->progress.on && !h->pyro_on)
		return 0;
	s->tick = on_tick;
	s->tick_ctx = h;
	s->tick_interval = 0.5;
	return 0;
}

static void hooks_free(struct hooks *h)
{
	if (h->pyro_on)
		pyroscope_free(&h->pyro);
}

/* The profile to its file (not for top: the screen was its output). */
static int write_profile(struct session *s, FILE *out, const struct resolved *r)
{
	if (!out || s->stop == STOP_PIPE_CLOSED)
		return TB_EXIT_OK;
	if (out != stdout && safe_truncate(out)) {
		tb_error("-o %s: %s", s->opt->output, strerror(errno));
		return TB_EXIT_RUNTIME;
	}
	if (!s->opt->writer->write(out, r) || errno == EPIPE)
		return TB_EXIT_OK;
	tb_error("writing the profile: %s (check the disk or the -o path)", strerror(errno));
	return TB_EXIT_RUNTIME;
}

/* Symbolize, write, report. Returns the exit code. */
static int finish(struct session *s, FILE *out, struct hooks *h)
{
	struct resolved r = {
		.event = s->opt->event->name, .freq = s->opt->freq,
		.start_unix = s->st.start_unix, .duration_s = s->st.seconds,
	};
	int ret;

	if (session_resolve(s, &r)) {
		tb_error("writing the profile: out of memory");
		resolved_free(&r);
		return TB_EXIT_RUNTIME;
	}
	ret = write_profile(s, out, &r);
	if (s->opt->summary && output_summary(stderr, &r))
		tb_warn("--summary: %s", strerror(errno));
	if (h && h->pyro_on)
		pyroscope_push(&h->pyro, s, 1);
	/* top's screen said it all; its statistics only when asked. */
	if (out || s->opt->verbose)
		stats_print(s, r.total);
	if (s->opt->stats_path)
		stats_write_json(s, r.total);
	resolved_free(&r);
	return ret;
}

/* Attach what watches the run: top's screen, or progress and pushes. */
static int attach(struct session *s, struct top *tp, struct hooks *h)
{
	if (s->opt->command == CMD_TOP)
		return top_attach(tp, s);
	return hooks_attach(h, s);
}

static int run(struct options *o, FILE *out)
{
	static struct session s;
	static struct hooks h;
	static struct top tp;
	int top = o->command == CMD_TOP, ret;

	ret = session_open_targets(&s, o);
	if (!ret)
		ret = attach(&s, &tp, &h);
	if (!ret)
		ret = session_start(&s);
	if (!ret && top)
		ret = top_begin(&tp);
	if (!ret) {
		tb_debug("profiling %u process(es) at %" PRIu64 " Hz with %s", s.ntargets, o->freq,
			 o->event->name);
		session_run(&s);
		if (top)
			top_end(&tp);
		else
			progress_clear(&h.progress);
		ret = s.stop == STOP_ERROR ? TB_EXIT_RUNTIME : finish(&s, out, top ? NULL : &h);
	} else if (top) {
		top_end(&tp);
	}
	session_close(&s);
	hooks_free(&h);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o;
	FILE *out = NULL;
	int ret;

	ret = cli_parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	if (o.command == CMD_DUMP)
		return dump_main(&o);
	if (check_privileges() || check_btf(&o) || kfeatures_check(KF_REQUIRED, o.verbose))
		return TB_EXIT_RUNTIME;
	if (check_event(&o))
		return TB_EXIT_RUNTIME;
	if (cli_check_rate(&o))
		return TB_EXIT_USAGE;
	if (o.command != CMD_TOP) {
		out = open_output(o.output);
		if (!out)
			return TB_EXIT_RUNTIME;
	}
	ret = run(&o, out);
	if (out && out != stdout && fclose(out) && !ret) {
		tb_error("-o %s: %s", o.output, strerror(errno));
		ret = TB_EXIT_RUNTIME;
	}
	return ret;
}
