// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/btf.h>
#include <bpf/btf.h>
#include "cfi_maps.h"
#include "errors.h"
#include "kfeatures.h"
#include "util.h"
#include "sampler.h"
#include "tachyon.skel.h"

#define RB_MIN		(4u << 20)
#define RB_MAX		(256u << 20)
/* The warm ring (bpf/rings.bpf.h): small enough to stay in the caches,
 * and in the TLB, between samples; the big ring takes what it cannot. */
#ifndef RB_WARM
#define RB_WARM		(256u << 10)
#endif
#define SAMPLE_BYTES	(sizeof(struct tb_sample) + 8)	/* + ring buffer header */
#define COUNTS_MIN	1024u
#define COUNTS_MAX	65536u

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && tb_verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && !tb_verbose)
		return 0;
	if (!tb_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static size_t pow2_at_least(size_t n)
{
	size_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* Room for about two seconds of samples from every CPU. */
static size_t ringbuf_size(const struct sampler_opts *o, int ncpus)
{
	double hz = o->rate_hz > 0 ? o->rate_hz : 1000;
	size_t want = pow2_at_least((size_t)(hz * ncpus * SAMPLE_BYTES * 2));

	return want < RB_MIN ? RB_MIN : want > RB_MAX ? RB_MAX : want;
}

/*
 * Keys for about a second of samples from every CPU, each its own key: the
 * session reads the counts map twice a second. A full map costs nothing
 * but speed (samples travel as records).
 */
static uint32_t counts_size(const struct sampler_opts *o, int ncpus)
{
	double hz = o->rate_hz > 0 ? o->rate_hz : 1000;
	size_t want = pow2_at_least((size_t)(hz * ncpus));

	return want < COUNTS_MIN ? COUNTS_MIN : want > COUNTS_MAX ? COUNTS_MAX : (uint32_t)want;
}

/* Wake the reader after ~20 ms worth of samples, never less than a page. */
static uint64_t wakeup_threshold(const struct sampler_opts *o, int ncpus, size_t rb)
{
	double hz = o->rate_hz > 0 ? o->rate_hz : 1000;
	uint64_t w = (uint64_t)(hz * ncpus * SAMPLE_BYTES / 50);

	if (w < 4096)
		w = 4096;
	if (w > rb / 4)
		w = rb / 4;
	/* a quarter of the warm ring: woken well before it spills */
	if (w > RB_WARM / 4)
		w = RB_WARM / 4;
	return w;
}

/*
 * The stack walker: bpf_loop's where the kernel has it (5.17), else the one
 * of bounded loops and tail calls. TACHYON_WALKER=tailcall|bpf_loop chooses
 * (a test knob: the fallback is tested and measured on new kernels too).
 */
static int choose_walker(struct sampler *s, char *err, size_t errlen)
{
	const char *w = getenv("TACHYON_WALKER");
	bool loop = kfeature_probe(KF_BPF_LOOP);

	if (!w || !*w || !strcmp(w, "tailcall") || (!strcmp(w, "bpf_loop") && loop)) {
		s->tailcall = w && *w ? !strcmp(w, "tailcall") : !loop;
		return 0;
	}
	if (!strcmp(w, "bpf_loop")) {
		snprintf(err, errlen, "TACHYON_WALKER=bpf_loop: this kernel has no bpf_loop (needs Linux 5.17; unset TACHYON_WALKER)");
		return -EOPNOTSUPP;
	}
	snprintf(err, errlen, "TACHYON_WALKER=%s: no such walker (bpf_loop or tailcall)", w);
	return -EINVAL;
}

const char *sampler_walker(const struct sampler *s)
{
	return s->tailcall ? "tail-call" : "bpf_loop";
}

/* Does the function prototype `proto` take a pointer? */
static bool takes_pointer(const struct btf *btf, __u32 proto)
{
	const struct btf_type *t = btf__type_by_id(btf, proto);
	const struct btf_param *p;
	int i;

	if (!t || !btf_is_func_proto(t))
		return false;
	p = btf_params(t);
	for (i = 0; i < btf_vlen(t); i++)
		if (btf_is_ptr(btf__type_by_id(btf, btf__resolve_type(btf, p[i].type))))
			return true;
	return false;
}

/*
 * Linux 5.10 and 5.11 verify a global function on its own only if it takes
 * no pointer but the context: the walk's helpers that do are verified as
 * static functions instead, in each caller's context (what libbpf does for
 * kernels without global functions at all). The tail-call walker's
 * programs are the only ones loaded then; every kernel gets the same.
 */
static void static_helpers(struct bpf_object *obj)
{
	struct btf *btf = bpf_object__btf(obj);
	__u32 id, n = btf ? btf__type_cnt(btf) : 0;

	for (id = 1; id < n; id++) {
		/* libbpf's own copy of the types, rewritten in place as its
		 * sanitizer does for older kernels */
		struct btf_type *t = (struct btf_type *)btf__type_by_id(btf, id);

		if (!btf_is_func(t) || btf_vlen(t) != BTF_FUNC_GLOBAL ||
		    bpf_object__find_program_by_name(obj, btf__name_by_offset(btf, t->name_off)) ||
		    !takes_pointer(btf, t->type))
			continue;
		t->info = BTF_KIND_FUNC << 24 | BTF_FUNC_STATIC;	/* a FUNC's vlen: its linkage */
	}
}

/* The programs of the walker and event chosen; the others are not loaded. */
static void choose_programs(struct sampler *s, const struct sampler_opts *o)
{
	struct tachyon_bpf *k = s->skel;
	bool tc = s->tailcall, wall = o->mode == TB_MODE_WALL, tick = o->event->tick;

	/* Every context switch on the machine would run it: only when needed.
	 * Likewise one of the two sample drivers: each program not loaded is
	 * one verification fewer at start-up. */
	bpf_program__set_autoload(k->progs.on_switch, wall && !tc);
	bpf_program__set_autoload(k->progs.on_switch_tc, wall && tc);
	bpf_program__set_autoload(k->progs.on_switch_tc_more, wall && tc);
	bpf_program__set_autoload(k->progs.on_sample, !tick && !tc);
	bpf_program__set_autoload(k->progs.on_sample_tc, !tick && tc);
	bpf_program__set_autoload(k->progs.on_sample_tc_more, !tick && tc);
	bpf_program__set_autoload(k->progs.on_tick, tick && !tc);
	bpf_program__set_autoload(k->progs.on_tick_tc, tick && tc);
	bpf_program__set_autoload(k->progs.on_tick_tc_more, tick && tc);
	/* Task storage (5.11) where the tick's weighting runs: bpf_loop's walker. */
	bpf_map__set_autocreate(k->maps.tick_rt, tick && !tc);
	/* Reached by tail calls only. */
	bpf_program__set_autoattach(k->progs.on_tick_tc_more, false);
	bpf_program__set_autoattach(k->progs.on_switch_tc_more, false);
	s->sample_prog = tick ? (tc ? k->progs.on_tick_tc : k->progs.on_tick) :
		tc ? k->progs.on_sample_tc : k->progs.on_sample;
	if (tc)
		static_helpers(k->obj);
}

/* Each walk's next program into its program array (tail-call walker). */
static int fill_next(struct sampler *s, char *err, size_t errlen)
{
	struct {
		struct bpf_map *map;
		struct bpf_program *prog;
	} next[] = {
		{ s->skel->maps.tc_next_sample, s->skel->progs.on_sample_tc_more },
		{ s->skel->maps.tc_next_tick, s->skel->progs.on_tick_tc_more },
		{ s->skel->maps.tc_next_switch, s->skel->progs.on_switch_tc_more },
	};
	__u32 zero = 0, i;
	int fd, ret;

	for (i = 0; s->tailcall && i < sizeof(next) / sizeof(next[0]); i++) {
		fd = bpf_program__fd(next[i].prog);
		if (fd < 0)
			continue;	/* not loaded: not this run's driver */
		if (bpf_map__update_elem(next[i].map, &zero, sizeof(zero), &fd, sizeof(fd), 0)) {
			ret = -errno;
			snprintf(err, errlen, "cannot chain the walker's programs: %s (the kernel refuses tail calls here; report it)",
				 strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/*
 * --native: the unwind tables' walk where the kernel can start it from the
 * task's saved user registers (bpf_task_pt_regs, 5.15), unless --native=fp;
 * else (and for a process without tables) the kernel's frame-pointer walk.
 * The rows' array is preallocated: TB_CFI_ROWS (12 MiB) only then.
 */
static void native_tables(struct sampler *s, const struct sampler_opts *o)
{
	int on = o->native_stacks && !o->native_fp && kfeature_probe(KF_TASK_PT_REGS);

	if (o->native_stacks && !o->native_fp && !on)
		tb_info("--native: this kernel has no bpf_task_pt_regs (Linux 5.15): frame pointers only");
	s->skel->rodata->native_cfi = on;
	/* Our frame-pointer walk needs the same helper; else bpf_get_stack(). */
	s->skel->rodata->native_own_fp = o->native_stacks && kfeature_probe(KF_TASK_PT_REGS);
	bpf_map__set_max_entries(s->skel->maps.cfi_rows, on ? cfi_maps_capacity() : 1);
	bpf_map__set_max_entries(s->skel->maps.cfi_procs, on ? TB_CFI_PROCS : 1);
	bpf_program__set_autoload(s->skel->progs.on_mmap_exec, on);
	bpf_program__set_autoattach(s->skel->progs.on_mmap_exec, false);	/* attach_new_code() */
	bpf_program__set_autoload(s->skel->progs.on_mprotect_exec, on);
	bpf_program__set_autoattach(s->skel->progs.on_mprotect_exec, false);
}

/*
 * New executable mappings told at once where the kernel lets us attach to
 * the exits of mmap and mprotect (tracefs); else the unwinder's reports of
 * a pc in no known mapping, and the periodic rescan, find them.
 */
static void attach_new_code(struct sampler *s)
{
	if (!s->cfi)
		return;
	s->skel->links.on_mmap_exec = bpf_program__attach(s->skel->progs.on_mmap_exec);
	if (!s->skel->links.on_mmap_exec)
		tb_debug("--native: no tracepoint syscalls/sys_exit_mmap: %s (new code is found by the unwinder and by rescans)",
			 strerror(errno));
	s->skel->links.on_mprotect_exec = bpf_program__attach(s->skel->progs.on_mprotect_exec);
	if (!s->skel->links.on_mprotect_exec)
		tb_debug("--native: no tracepoint syscalls/sys_exit_mprotect: %s (code made executable is found by the unwinder and by rescans)",
			 strerror(errno));
}

/* cfi_new's records: a pid that has new executable code. */
static int on_new_code(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size >= sizeof(__u32) && s->cfi)
		cfi_maps_notify(s->cfi, (pid_t)*(__u32 *)data);
	return 0;
}

int sampler_open(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = o->btf_path);
	int ret;

	memset(s, 0, sizeof(*s));
	s->stats_fd = -1;
	libbpf_set_print(libbpf_quiet);
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		ret = s->ncpus < 0 ? s->ncpus : -ENODEV;
		snprintf(err, errlen, "cannot count CPUs: %s (is /sys mounted?)", strerror(-ret));
		return ret;
	}
	s->skel = tachyon_bpf__open_opts(&open_opts);
	if (!s->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s (rebuild with make)", strerror(-ret));
		return ret;
	}
	s->rb_bytes = ringbuf_size(o, s->ncpus);
	bpf_map__set_max_entries(s->skel->maps.scratch, s->ncpus);
	bpf_map__set_max_entries(s->skel->maps.events, s->rb_bytes);
	bpf_map__set_max_entries(s->skel->maps.warm, RB_WARM);
	s->counts_max = counts_size(o, s->ncpus);
	bpf_map__set_max_entries(s->skel->maps.counts, s->counts_max);
	bpf_map__set_max_entries(s->skel->maps.counts2, s->counts_max);
	s->count_keys = calloc(s->counts_max, sizeof(*s->count_keys));
	s->count_vals = calloc(s->counts_max, sizeof(*s->count_vals));
	s->count_gone = calloc(s->counts_max, sizeof(*s->count_gone));
	if (!s->count_keys || !s->count_vals || !s->count_gone) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (o->kernel_stacks)
		bpf_map__set_max_entries(s->skel->maps.kstacks, 16384);
	/* LRU maps are preallocated whole: the off-CPU table (65536 threads,
	 * a few MiB) only where wall mode uses it. */
	if (o->mode != TB_MODE_WALL)
		bpf_map__set_max_entries(s->skel->maps.offcpu, s->ncpus);
	s->skel->rodata->wakeup_bytes = wakeup_threshold(o, s->ncpus, s->rb_bytes);
	s->skel->rodata->mode = o->mode;
	s->skel->rodata->period_ns = (__u64)(1e9 / (o->rate_hz > 0 ? o->rate_hz : 1000));
	s->skel->rodata->tick_every = o->tick_every ? o->tick_every : 1;
	s->skel->rodata->kernel_stacks = !!o->kernel_stacks;
	s->skel->rodata->report_all_exec = !!o->report_all_exec;
	s->skel->rodata->read_status = !!o->read_status;
	s->skel->rodata->timeline = !!o->timeline;
	s->skel->rodata->native_stacks = !!o->native_stacks;
	s->skel->rodata->async_aware = !!o->async_aware;
	ret = choose_walker(s, err, errlen);
	if (ret)
		return ret;
	choose_programs(s, o);
	native_tables(s, o);
	s->tick = o->event->tick;
	s->skel->rodata->tick_handler = s->tick ? tick_handler() : 0;
	ret = tachyon_bpf__load(s->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the BPF program: %s (run with -v for the verifier log; needs Linux >= 5.10 with BTF)",
			 strerror(-ret));
		return ret;
	}
	tb_debug("stack walker: %s", sampler_walker(s));
	ret = fill_next(s, err, errlen);
	if (ret)
		return ret;
	if (s->skel->rodata->native_cfi &&
	    !(s->cfi = cfi_maps_new(bpf_map__fd(s->skel->maps.cfi_rows),
				    bpf_map__fd(s->skel->maps.cfi_procs),
				    bpf_map__fd(s->skel->maps.uw_stats),
				    bpf_map__max_entries(s->skel->maps.cfi_rows),
				    (volatile uint64_t *)&s->skel->bss->uw_gen))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->counts_cur = 0;	/* count_slot holds `counts` from the load on */
	/* warm first: each pass reads it before the big ring, the order
	 * bpf/rings.bpf.h relies on */
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.warm), o->on_record, o->ctx, NULL);
	if (!s->rb || ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.events), o->on_record,
				       o->ctx)) {
		ret = -errno;
		snprintf(err, errlen, "cannot map the ring buffer: %s (check RLIMIT_MEMLOCK)",
			 strerror(-ret));
		return ret;
	}
	if (s->cfi && ring_buffer__add(s->rb, bpf_map__fd(s->skel->maps.cfi_new), on_new_code, s)) {
		ret = -errno;
		snprintf(err, errlen, "cannot map the ring buffer: %s (check RLIMIT_MEMLOCK)",
			 strerror(-ret));
		return ret;
	}
	ret = tachyon_bpf__attach(s->skel);	/* the tracepoints; perf events come later */
	if (ret) {
		snprintf(err, errlen, "cannot attach the scheduler tracepoints: %s (needs BTF-enabled tracing, Linux >= 5.17)",
			 strerror(-ret));
		return ret;
	}
	attach_new_code(s);
	/* Only when asked: they cost two clock reads on every run of every
	 * BPF program on the machine, not just ours. */
	if (!o->kernel_stats)
		return 0;
	s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (s->stats_fd < 0)
		tb_debug("kernel BPF run-time statistics unavailable: %s", strerror(errno));
	return 0;
}

/* CPUs listed in /sys/devices/system/cpu/online ("0-3,5"). */
static int online_cpus(int *cpus, int max)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int n = 0, a, b;
	char sep;

	if (!f)
		return -errno;
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			if (fscanf(f, "%c", &sep) != 1)
				sep = '\n';
		}
		for (; a <= b && n < max; a++)
			cpus[n++] = a;
		if (sep != ',')
			break;
	}
	fclose(f);
	return n;
}

/* One perf event on a CPU (tid -1), or following a thread (cpu -1). */
static int open_event(const struct sampler_opts *o, int cpu, pid_t tid)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = o->event->type,
		.config = o->event->config,
		.disabled = tid >= 0,	/* enabled once the program is on it */
		/* The threads it starts, and with -s its children, get a copy
		 * with the same program (perf_event_alloc copies it). */
		.inherit = tid >= 0,
		.inherit_thread = tid >= 0 && !o->follow_forks,
	};

	/* inherit_thread is new in Linux 5.13: before, the events a thread's
	 * children inherit run the program too, which drops their samples
	 * (they are not in `procs`). */
	static bool no_inherit_thread;
	int fd;

	if (o->freq) {
		a.freq = 1;
		a.sample_freq = o->freq;
	} else {
		a.sample_period = o->period;
	}
	a.inherit_thread = a.inherit_thread && !no_inherit_thread;
	fd = (int)syscall(SYS_perf_event_open, &a, tid >= 0 ? tid : -1, cpu, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL && a.inherit_thread) {
		no_inherit_thread = true;
		tb_debug("perf events: no inherit_thread (Linux < 5.13): child processes inherit the events too");
		return open_event(o, cpu, tid);
	}
	return fd;
}

static int grow_links(struct sampler *s, int want)
{
	struct bpf_link **l;
	pid_t *t;
	int *p;

	if (want <= s->cap)
		return 0;
	want = want < 2 * s->cap ? 2 * s->cap : want;
	l = realloc(s->links, want * sizeof(*l));
	if (l)
		s->links = l;
	p = realloc(s->pfds, want * sizeof(*p));
	if (p)
		s->pfds = p;
	t = realloc(s->tids, want * sizeof(*t));
	if (t)
		s->tids = t;
	if (!l || !p || !t)
		return -ENOMEM;
	s->cap = want;
	return 0;
}

static int attach_cpus(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen)
{
	int *cpus = calloc(s->ncpus, sizeof(int));
	int n, i, ret;

	if (!cpus || grow_links(s, s->ncpus)) {
		free(cpus);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n = online_cpus(cpus, s->ncpus);
	if (n <= 0) {
		free(cpus);
		snprintf(err, errlen, "cannot read /sys/devices/system/cpu/online (is /sys mounted?)");
		return n < 0 ? n : -ENODEV;
	}
	for (i = 0; i < n; i++) {
		int fd = open_event(o, cpus[i], -1);

		if (fd < 0) {
			ret = -errno;
			snprintf(err, errlen, "perf_event_open(%s) on CPU %d failed: %s (check kernel.perf_event_paranoid and CAP_PERFMON)",
				 o->event->name, cpus[i], strerror(-ret));
			free(cpus);
			return ret;
		}
		s->pfds[s->nlinks] = fd;
		s->links[s->nlinks] = bpf_program__attach_perf_event(s->sample_prog, fd);
		if (!s->links[s->nlinks]) {
			ret = -errno;
			snprintf(err, errlen, "cannot attach to the perf event on CPU %d: %s",
				 cpus[i], strerror(-ret));
			close(fd);
			free(cpus);
			return ret;
		}
		s->nlinks++;
	}
	free(cpus);
	return 0;
}

/*
 * A thread's own event, with the program set by ioctl rather than a BPF
 * link: one descriptor per thread, not two. Returns 1 if opened, 0 if the
 * thread is gone, a negative errno on error.
 */
static int open_task(struct sampler *s, const struct sampler_opts *o, pid_t tid)
{
	int fd, ret, prog = bpf_program__fd(s->sample_prog);

	if (grow_links(s, s->nlinks + 1))
		return -ENOMEM;
	fd = open_event(o, -1, tid);
	if (fd < 0)
		return errno == ESRCH ? 0 : -errno;
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	s->links[s->nlinks] = NULL;
	s->tids[s->nlinks] = tid;
	s->pfds[s->nlinks++] = fd;
	return 1;
}

/* Is tid one of the threads that already have an event of ours? */
static int has_task(const struct sampler *s, pid_t tid)
{
	int i;

	for (i = 0; i < s->nlinks; i++)
		if (s->tids[i] == tid)
			return 1;
	return 0;
}

/* A thread started during the set-up that inherited its creator's event. */
static int inherited(struct sampler *s, pid_t tid)
{
	__u32 key = (__u32)tid;
	__u8 v = 0;

	return !bpf_map__lookup_elem(s->skel->maps.newthreads, &key, sizeof(key), &v, sizeof(v),
				     0) && v;
}

/* One pass over pid's threads: an event for each that has none. */
static int task_pass(struct sampler *s, const struct sampler_opts *o, pid_t pid, int *opened)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;	/* gone: its exit ends it as a target */
	while (!ret && (e = readdir(d))) {
		pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);

		if (tid <= 0 || has_task(s, tid) || inherited(s, tid))
			continue;
		if (s->nlinks >= TB_MAX_TASK_EVENTS) {
			ret = 1;
			break;
		}
		ret = open_task(s, o, tid);
		*opened += ret > 0;
		ret = ret < 0 ? ret : 0;
	}
	closedir(d);
	return ret;
}

/*
 * An event on every thread of the targets, until a pass over their threads
 * finds none without one. Returns 0, 1 if there are too many threads, -1
 * on error (errno set).
 */
static int attach_tasks(struct sampler *s, const struct sampler_opts *o)
{
	int pass, i, opened = 1, ret = 0;

	s->skel->bss->task_setup = 1;
	for (pass = 0; !ret && opened && pass < 8; pass++) {
		opened = 0;
		for (i = 0; !ret && i < o->ntasks; i++)
			ret = task_pass(s, o, o->tasks[i], &opened);
	}
	s->task_events = s->nlinks;
	return ret;
}

void sampler_setup_done(struct sampler *s)
{
	if (s->skel && s->skel->bss)
		s->skel->bss->task_setup = 0;
}

static void close_events(struct sampler *s)
{
	int i;

	/* Destroying a perf-event link also closes its perf event fd. */
	for (i = 0; i < s->nlinks; i++) {
		if (s->links[i])
			bpf_link__destroy(s->links[i]);
		else
			close(s->pfds[i]);
	}
	s->nlinks = 0;
}

/* Per-task events: pid's threads too (a descendant found after the start). */
int sampler_follow(struct sampler *s, const struct sampler_opts *o, pid_t pid)
{
	struct sampler_opts one = *o;
	int ret;

	if (!s->per_task)
		return 0;
	one.tasks = &pid;
	one.ntasks = 1;
	ret = attach_tasks(s, &one);
	return ret < 0 ? ret : 0;
}

int sampler_attach(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen)
{
	int ret;

	if (o->event->tick)
		return 0;	/* attached with the tracepoints */
	if (!o->ntasks)
		return attach_cpus(s, o, err, errlen);
	ret = attach_tasks(s, o);
	if (!ret) {
		s->per_task = 1;
		return 0;
	}
	if (ret < 0) {
		snprintf(err, errlen, "perf_event_open(%s) on a thread failed: %s (check kernel.perf_event_paranoid and CAP_PERFMON, or use --per-cpu)",
			 o->event->name, strerror(-ret));
		close_events(s);
		return ret;
	}
	tb_warn("targets: more than %d threads: one %s event per CPU instead of one per thread (every CPU is interrupted; -e tick interrupts none)",
		TB_MAX_TASK_EVENTS, o->event->name);
	close_events(s);
	return attach_cpus(s, o, err, errlen);
}

int sampler_add(struct sampler *s, pid_t pid, const struct tb_walk *w)
{
	static __u32 incarnations;
	struct tb_walk v = *w;
	__u32 key = (__u32)pid;

	v.reg.acked = 1;
	v.reg.incarnation = ++incarnations;
	if (s->cfi)
		cfi_maps_add(s->cfi, pid);	/* none: frame pointers for it */
	return bpf_map__update_elem(s->skel->maps.procs, &key, sizeof(key), &v, sizeof(v), BPF_ANY);
}

/* --async-aware: the process's asyncio offsets (its chains are read from now on). */
int sampler_add_async(struct sampler *s, pid_t pid, const struct tb_async *a)
{
	__u32 key = (__u32)pid;

	return bpf_map__update_elem(s->skel->maps.asyncs, &key, sizeof(key), a, sizeof(*a), BPF_ANY);
}

int sampler_del(struct sampler *s, pid_t pid)
{
	__u32 key = (__u32)pid;

	bpf_map__delete_elem(s->skel->maps.asyncs, &key, sizeof(key), 0);	/* may be absent */
	if (s->cfi)
		cfi_maps_del(s->cfi, pid);
	return bpf_map__delete_elem(s->skel->maps.procs, &key, sizeof(key), 0);
}

int sampler_watch(struct sampler *s, pid_t pid, int follow)
{
	__u32 key = (__u32)pid;
	__u8 v = !!follow;

	return bpf_map__update_elem(s->skel->maps.watch, &key, sizeof(key), &v, sizeof(v), BPF_ANY);
}

int sampler_counters(struct sampler *s, uint64_t c[TB_NR_COUNTERS])
{
	size_t sz = sizeof(__u64) * TB_NR_COUNTERS;
	__u64 *v = calloc(s->ncpus, sz);
	__u32 zero = 0;
	int cpu, i, ret;

	memset(c, 0, sz);
	if (!v)
		return -ENOMEM;
	ret = bpf_map__lookup_elem(s->skel->maps.counters, &zero, sizeof(zero), v,
				   sz * s->ncpus, 0);
	for (cpu = 0; !ret && cpu < s->ncpus; cpu++)
		for (i = 0; i < TB_NR_COUNTERS; i++)
			c[i] += v[cpu * TB_NR_COUNTERS + i];
	free(v);
	return ret;
}

int sampler_prog_stats(struct sampler *s, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int ret;

	ret = bpf_obj_get_info_by_fd(bpf_program__fd(s->sample_prog), &info, &len);
	if (ret)
		return ret;
	*run_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return 0;
}

int sampler_kstack(struct sampler *s, int32_t id, uint64_t *ips, int max)
{
	uint64_t buf[TB_KSTACK_DEPTH] = {};
	__u32 key = (__u32)id;
	int n;

	if (id < 0 || bpf_map__lookup_elem(s->skel->maps.kstacks, &key, sizeof(key),
					   buf, sizeof(buf), 0))
		return 0;
	for (n = 0; n < TB_KSTACK_DEPTH && n < max && buf[n]; n++)
		ips[n] = buf[n];
	return n;
}

uint64_t sampler_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);	/* bpf_ktime_get_ns's clock */
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int sampler_offcpu_seed(struct sampler *s, uint32_t pid, uint32_t tid, uint64_t stack_id,
			uint32_t flags, uint64_t since)
{
	struct tb_offcpu v = {
		.since = since, .stack_id = stack_id, .flags = flags | TB_SF_OFFCPU,
		.kstack = -1, .pid = pid, .away = 1,
	};

	/* BPF_NOEXIST: a switch-out the BPF side saw meanwhile knows better. */
	return bpf_map__update_elem(s->skel->maps.offcpu, &tid, sizeof(tid), &v, sizeof(v),
				    BPF_NOEXIST);
}

int sampler_tstate_seed(struct sampler *s, uint32_t tid, uint64_t tstate)
{
	return bpf_map__update_elem(s->skel->maps.tstates, &tid, sizeof(tid), &tstate,
				    sizeof(tstate), BPF_NOEXIST);
}

void sampler_offcpu_unseed(struct sampler *s, uint32_t tid, uint64_t since)
{
	struct tb_offcpu v;

	if (!bpf_map__lookup_elem(s->skel->maps.offcpu, &tid, sizeof(tid), &v, sizeof(v), 0) &&
	    v.away && v.since == since)
		bpf_map__delete_elem(s->skel->maps.offcpu, &tid, sizeof(tid), 0);
}

int sampler_offcpu_get(struct sampler *s, uint32_t tid, struct tb_offcpu *out)
{
	return bpf_map__lookup_elem(s->skel->maps.offcpu, &tid, sizeof(tid), out, sizeof(*out), 0);
}

int sampler_offcpu_away(struct sampler *s, struct hmap *ids)
{
	struct bpf_map *m = s->skel->maps.offcpu;
	__u32 key, next, *prev = NULL;
	struct tb_offcpu v;

	while (!bpf_map__get_next_key(m, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(m, &key, sizeof(key), &v, sizeof(v), 0) || !v.away)
			continue;
		if (!hmap_put(ids, &v.stack_id, NULL))
			return -ENOMEM;
	}
	return 0;
}

int sampler_offcpu_left(struct sampler *s, uint64_t now, struct offcpu_left **out)
{
	struct bpf_map *m = s->skel->maps.offcpu;
	struct tb_offcpu v;
	__u32 key, next, *prev = NULL;
	uint64_t period = s->skel->rodata->period_ns;
	size_t cap = 0;
	int n = 0;

	*out = NULL;
	while (!bpf_map__get_next_key(m, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(m, &key, sizeof(key), &v, sizeof(v), 0) || !v.away ||
		    now < v.since)
			continue;
		if (array_grow(out, &cap, (size_t)n + 1, sizeof(**out), 64))
			break;
		(*out)[n++] = (struct offcpu_left){ v.pid, key, v.flags, v.kstack, v.stack_id,
						    (now - v.since + v.carry) / period, v.since,
						    v.leaf };
	}
	return n;
}

void sampler_forget_stacks(struct sampler *s, const uint64_t *ids, size_t n)
{
	size_t i;

	if (!n)
		return;
	/* Empties whichever stack holds the slot now: at worst another one is
	 * sent again. */
	for (i = 0; i < n; i++)
		__atomic_store_n(&s->skel->bss->sent_slots[ids[i] & (TB_SENT_SLOTS - 1)], 0,
				 __ATOMIC_RELAXED);
	/* Invalidate every CPU's cache of sent ids at once. */
	__atomic_add_fetch(&s->skel->bss->sent_epoch, 1, __ATOMIC_SEQ_CST);
}

void sampler_forget_all_stacks(struct sampler *s)
{
	uint64_t e = __atomic_add_fetch(&s->skel->bss->sent_epoch, 1, __ATOMIC_SEQ_CST);

	/* Entries written with an older epoch no longer count as sent. */
	__atomic_store_n(&s->skel->bss->sent_floor, e, __ATOMIC_SEQ_CST);
}

static struct bpf_map *counts_map(struct sampler *s, int which)
{
	return which ? s->skel->maps.counts2 : s->skel->maps.counts;
}

/* A counts map's reset failed: empty it, so that nothing read is read again. */
static int clear_counts(struct sampler *s, int fd, const char *what)
{
	int ret = -errno;

	tb_warn("%s: %s", what, strerror(-ret));
	while (!bpf_map_get_next_key(fd, NULL, &s->count_keys[0]))
		if (bpf_map_delete_elem(fd, &s->count_keys[0]))
			break;
	return ret;
}

/*
 * Read a counts map, only while no program can reach it, and leave it
 * ready for its next turn with its keys in place, their counts 0. A key is
 * a (thread, stack, flags, leaf pc) tuple and means nothing else, so
 * keeping it is safe; what it saves is the program's insert (a cold bucket
 * and a free element, ~1 us here) each turn for each key. --native's leaf
 * pc made 0.16 inserts a sample on the bench's workload (Debian's 3.15,
 * -F 999, 10 s; --stats' count_keys), 0.03 with the keys kept (count_new).
 * Kept keys are held to half the map (the map is sized for 1 s of samples:
 * the rest is room for a turn's new keys), those counted this turn first,
 * then the others; what does not fit goes.
 */
static int drain_counts(struct sampler *s, struct bpf_map *m, sampler_count_fn fn, void *ctx)
{
	__u32 total = 0, n, i, keep = 0, nzero = 0, drop = 0, room = s->counts_max / 2;
	int fd = bpf_map__fd(m), ret;
	__u64 batch = 0;
	void *in = NULL;

	do {
		n = s->counts_max - total;
		ret = bpf_map_lookup_batch(fd, in, &batch, &s->count_keys[total],
					   &s->count_vals[total], &n, NULL);
		if (ret && errno != ENOENT) {
			ret = -errno;
			tb_warn("cannot read the in-kernel counts: %s", strerror(-ret));
			return ret;
		}
		total += n;
		in = &batch;
	} while (!ret && total < s->counts_max);
	/* counted: reported, then to the front with a 0 to write; others after */
	for (i = 0; i < total; i++) {
		if (!s->count_vals[i]) {
			s->count_gone[nzero++] = s->count_keys[i];
			continue;
		}
		fn(ctx, &s->count_keys[i], s->count_vals[i]);
		if (keep < room) {
			s->count_keys[keep] = s->count_keys[i];
			s->count_vals[keep++] = 0;
		} else {
			s->count_keys[room + drop++] = s->count_keys[i];
		}
	}
	if (keep && bpf_map_update_batch(fd, s->count_keys, s->count_vals, &keep, NULL))
		return clear_counts(s, fd, "cannot reset the in-kernel counts");
	/* the keys that fit stay; the counted ones that did not go too */
	i = keep + nzero <= room ? nzero : room - keep;
	nzero -= i;
	if (nzero && bpf_map_delete_batch(fd, &s->count_gone[i], &nzero, NULL))
		return clear_counts(s, fd, "cannot free the in-kernel counts");
	if (drop && bpf_map_delete_batch(fd, &s->count_keys[room], &drop, NULL))
		return clear_counts(s, fd, "cannot free the in-kernel counts");
	return (int)total;
}

/*
 * One map-in-map update swaps the maps: the kernel returns from it only
 * once no running program can still hold the old one (a single expedited
 * RCU grace period, where taking the map out and putting it back cost two,
 * and samples never have to travel as records meanwhile).
 */
int sampler_read_counts(struct sampler *s, sampler_count_fn fn, void *ctx)
{
	int next = !s->counts_cur, fd;
	__u32 zero = 0;

	if (!s->skel)
		return 0;
	fd = bpf_map__fd(counts_map(s, next));
	if (bpf_map__update_elem(s->skel->maps.count_slot, &zero, sizeof(zero), &fd, sizeof(fd),
				 BPF_ANY)) {
		int ret = -errno;

		tb_warn("cannot swap the in-kernel counts: %s", strerror(-ret));
		return ret;
	}
	s->counts_cur = next;
	return drain_counts(s, counts_map(s, !next), fn, ctx);
}

int sampler_rb_fd(struct sampler *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

int sampler_consume(struct sampler *s)
{
	return ring_buffer__consume(s->rb);
}

static void destroy_link(struct bpf_link **l)
{
	if (*l) {
		bpf_link__destroy(*l);
		*l = NULL;
	}
}

/* Stop sampling; the ring buffer and maps stay readable. */
void sampler_detach(struct sampler *s)
{
	close_events(s);
	if (!s->skel)
		return;
	/* Either walker's tick program: one left attached goes on counting
	 * samples after the last read (seen: collected 739, written 738). */
	destroy_link(&s->skel->links.on_tick);
	destroy_link(&s->skel->links.on_tick_tc);
	/* Wall mode: a thread switching in would credit time we no longer
	 * read; what is still away is credited from the offcpu map instead. */
	destroy_link(&s->skel->links.on_switch);
	destroy_link(&s->skel->links.on_switch_tc);
}

void sampler_native_rescan(struct sampler *s)
{
	if (s->cfi)
		cfi_maps_rescan(s->cfi);
}

size_t sampler_native_changed(struct sampler *s, pid_t *out, size_t max)
{
	return s->cfi ? cfi_maps_changed(s->cfi, out, max) : 0;
}

void sampler_native_forget(struct sampler *s, pid_t pid)
{
	if (s->cfi)
		cfi_maps_del(s->cfi, pid);
}

int sampler_native_stats(struct sampler *s, struct cfi_maps_stats *out)
{
	if (!s->cfi)
		return -ENOENT;
	cfi_maps_stats(s->cfi, out);
	return 0;
}

void sampler_close(struct sampler *s)
{
	sampler_detach(s);
	cfi_maps_free(s->cfi);
	free(s->links);
	free(s->pfds);
	free(s->tids);
	free(s->count_keys);
	free(s->count_vals);
	free(s->count_gone);
	ring_buffer__free(s->rb);
	tachyon_bpf__destroy(s->skel);
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	memset(s, 0, sizeof(*s));
	s->stats_fd = -1;
}
