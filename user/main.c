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
#include "errors.h"
#include "output.h"
#include "session.h"

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

static int check_btf(void)
{
	const char *path = getenv("TACHYON_BTF");

	if (!path)
		path = "/sys/kernel/btf/vmlinux";
	if (!access(path, R_OK))
		return 0;
	tb_error("kernel BTF: %s: %s (needs a kernel built with CONFIG_DEBUG_INFO_BTF=y, Linux >= 5.17)",
		 path, strerror(errno));
	return -1;
}

/* Hardware events need a PMU; without one, cpu-clock is the honest substitute. */
static void check_event(struct options *o)
{
	if (!o->event->hardware || event_supported(o->event))
		return;
	tb_warn("event %s: not supported by this machine (no hardware PMU, e.g. in a VM); falling back to cpu-clock",
		o->event->name);
	o->event = event_default();
}

static FILE *open_output(const char *path)
{
	FILE *f;
	int fd;

	if (!path)
		return stdout;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		tb_error("-o %s: %s (choose a writable path)", path,
			 errno == ELOOP ? "is a symbolic link" : strerror(errno));
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f)
		close(fd);
	return f;
}

static uint64_t dropped(const struct session_stats *st)
{
	return st->bpf[TB_C_NO_TSTATE] + st->bpf[TB_C_NO_FRAMES] + st->bpf[TB_C_READ_TSTATE] +
	       st->unknown_pid + st->missing_stack;
}

static double bpf_ns_per_sample(const struct session_stats *st)
{
	return st->bpf[TB_C_EVENTS] ? (double)st->bpf[TB_C_BPF_NS] / st->bpf[TB_C_EVENTS] : 0;
}

static void print_stats(const struct session *s, uint64_t written)
{
	const struct session_stats *st = &s->st;
	const uint64_t *c = st->bpf;
	double secs = st->seconds > 0 ? st->seconds : 1;
	int ncpus = st->ncpus ? st->ncpus : 1;

	tb_info("%" PRIu64 " samples in %.1f s (%s, -F %" PRIu64 "): %.1f/s, %.1f/s per CPU on %d CPUs",
		c[TB_C_EVENTS], st->seconds, s->opt->event->name, s->opt->freq,
		c[TB_C_EVENTS] / secs, c[TB_C_EVENTS] / secs / ncpus, ncpus);
	tb_info("written %" PRIu64 ", lost %" PRIu64 " (ring buffer full), dropped %" PRIu64
		" (no thread state %" PRIu64 ", no Python frame %" PRIu64 ", unreadable thread state %" PRIu64
		", missing stack %" PRIu64 ", unknown pid %" PRIu64 ")",
		written, c[TB_C_LOST], dropped(st), c[TB_C_NO_TSTATE], c[TB_C_NO_FRAMES],
		c[TB_C_READ_TSTATE], st->missing_stack, st->unknown_pid);
	tb_info("partial stacks %" PRIu64 ", truncated %" PRIu64 ", frames skipped (not code) %" PRIu64
		", unreadable code objects %" PRIu64 " in BPF / %" PRIu64 " in userspace",
		c[TB_C_READ_FRAME], c[TB_C_TRUNCATED], c[TB_C_BAD_CODE], c[TB_C_READ_CODE],
		s->sym.failures);
	tb_info("%" PRIu64 " distinct stacks, %" PRIu64 " code objects read; BPF %.0f ns/sample (self-timed)%s",
		st->stacks, s->sym.reads, bpf_ns_per_sample(st),
		st->run_cnt ? "" : ", kernel run-time stats unavailable");
	if (st->run_cnt)
		tb_info("kernel BPF stats: %" PRIu64 " runs, %.0f ns/run (all CPUs, all processes)",
			st->run_cnt, (double)st->run_ns / st->run_cnt);
}

static void write_stats_json(const struct session *s, uint64_t written)
{
	const struct session_stats *st = &s->st;
	const uint64_t *c = st->bpf;
	double secs = st->seconds > 0 ? st->seconds : 1;
	FILE *f = fopen(s->opt->stats_path, "we");

	if (!f) {
		tb_warn("--stats %s: %s", s->opt->stats_path, strerror(errno));
		return;
	}
	fprintf(f, "{\"collected\": %" PRIu64 ", \"written\": %" PRIu64 ", \"lost\": %" PRIu64 ",\n"
		" \"dropped\": {\"no_tstate\": %" PRIu64 ", \"no_frames\": %" PRIu64
		", \"read_tstate\": %" PRIu64 ", \"missing_stack\": %" PRIu64 ", \"unknown_pid\": %" PRIu64 "},\n"
		" \"partial\": %" PRIu64 ", \"truncated\": %" PRIu64 ", \"bad_code\": %" PRIu64
		", \"unknown_code\": %" PRIu64 ", \"unreadable_code\": %" PRIu64 ",\n"
		" \"stacks\": %" PRIu64 ", \"code_reads\": %" PRIu64 ", \"tstate_misses\": %" PRIu64 ",\n"
		" \"duration_s\": %.3f, \"rate_hz\": %.1f, \"rate_hz_per_cpu\": %.1f, \"cpus\": %d,\n"
		" \"bpf_ns_per_sample\": %.1f, \"bpf_runs\": %" PRIu64 ", \"bpf_ns_per_run\": %.1f,\n"
		" \"event\": \"%s\", \"frequency\": %" PRIu64 "}\n",
		c[TB_C_EVENTS], written, c[TB_C_LOST],
		c[TB_C_NO_TSTATE], c[TB_C_NO_FRAMES], c[TB_C_READ_TSTATE], st->missing_stack,
		st->unknown_pid, c[TB_C_READ_FRAME], c[TB_C_TRUNCATED], c[TB_C_BAD_CODE],
		s->sym.failures, c[TB_C_READ_CODE], st->stacks, s->sym.reads, c[TB_C_TSTATE_MISS],
		st->seconds, c[TB_C_EVENTS] / secs, c[TB_C_EVENTS] / secs / (st->ncpus ? st->ncpus : 1),
		st->ncpus, bpf_ns_per_sample(st), st->run_cnt,
		st->run_cnt ? (double)st->run_ns / st->run_cnt : 0.0,
		s->opt->event->name, s->opt->freq);
	fclose(f);
}

/* Symbolize, write, report. Returns the exit code. */
static int finish(struct session *s, FILE *out)
{
	struct resolve_opts ro = { .full_paths = s->opt->full_paths };
	struct resolved r = {
		.event = s->opt->event->name, .freq = s->opt->freq,
		.start_unix = s->st.start_unix, .duration_s = s->st.seconds,
	};
	int ret = TB_EXIT_OK;

	if (profile_resolve(&s->prof, s->targets, s->ntargets, &s->sym, &ro, &r)) {
		tb_error("writing the profile: out of memory");
		resolved_free(&r);
		return TB_EXIT_RUNTIME;
	}
	if (s->stop != STOP_PIPE_CLOSED && s->opt->writer->write(out, &r)) {
		if (errno != EPIPE) {
			tb_error("writing the profile: %s (check the disk or the -o path)", strerror(errno));
			ret = TB_EXIT_RUNTIME;
		}
	}
	print_stats(s, r.total);
	if (s->opt->stats_path)
		write_stats_json(s, r.total);
	resolved_free(&r);
	return ret;
}

int main(int argc, char **argv)
{
	static struct session s;
	struct options o;
	FILE *out;
	int ret;

	ret = cli_parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	if (check_privileges() || check_btf())
		return TB_EXIT_RUNTIME;
	check_event(&o);
	out = open_output(o.output);
	if (!out)
		return TB_EXIT_RUNTIME;
	ret = session_open_targets(&s, &o);
	if (!ret)
		ret = session_start(&s);
	if (!ret) {
		tb_debug("profiling %u process(es) at %" PRIu64 " Hz with %s", s.ntargets, o.freq,
			 o.event->name);
		session_run(&s);
		ret = s.stop == STOP_ERROR ? TB_EXIT_RUNTIME : finish(&s, out);
	}
	session_close(&s);
	if (out != stdout && fclose(out) && !ret) {
		tb_error("-o %s: %s", o.output, strerror(errno));
		ret = TB_EXIT_RUNTIME;
	}
	return ret;
}
