// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A run's lifecycle and its event loop: one epoll loop over the ring
 * buffer, signals, target exits, the -- command and stdout; what a
 * process event means (exec, fork, exit) for the targets (targets.c) and
 * their samples (ingest.c); the timers (discovery, counts, compaction,
 * the views' tick); the end of the run.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include "child.h"
#include "clock.h"
#include "errors.h"
#include "async_wait.h"
#include "ingest.h"
#include "proc.h"
#include "sampler.h"
#include "session.h"
#include "targets.h"

#define POLL_MS		1000	/* drain at least this often: samples don't wake us */
#define DISCOVER_MS	5	/* while a new process is being set up */
#define COMPACT_S	10.0	/* fold live profiles this often: memory stays flat */
/*
 * Read the in-kernel counts, and retry what needs a running interpreter,
 * this often: one timer for both, as each wake-up costs two context
 * switches (two timers drifting apart woke the loop four times a second).
 */
#define HOUSE_S		0.5
#define STATUS_FAST_S	1.0	/* gil mode: how long a new target's GIL is looked for often */
#define EV_RING		(1ULL << 62)
#define EV_SIGNAL	(2ULL << 62)
#define EV_STDOUT	(3ULL << 62)
#define EV_CHILD	((3ULL << 62) | 1)
#define EV_EXTRA	((3ULL << 62) | 2)
#define EV_KIND(x)	((x) & (3ULL << 62))

/* errno as this file's failure value: never 0, so never taken for success. */
static int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

static int epoll_add(int epfd, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

struct session {
	const struct options *opt;
	struct sampler sampler;
	struct targets *ts;		/* the registry, discovery, -s roots */
	struct ingest *in;		/* samples, stacks, counts: the profile */
	struct child *child;		/* -- CMD; NULL if none */
	struct sampler_opts so;		/* how the sampler was set up */
	pid_t event_pids[CLI_MAX_PIDS];	/* per-task events: the processes named */
	int nevent_pids;
	int child_execd;		/* its exec happened (the command could be run) */
	int command_ended;		/* it exited before the run ended it */
	int epfd, sigfd;
	uint64_t start_ns;		/* the run's start (CLOCK_MONOTONIC); 0 before */
	int status_pending;		/* a target's GIL address is still unknown */
	double status_fast_until;	/* ... look for it often until then */
	uint64_t stacks_seen;		/* stack records read by the last drain */
	int stacks_soon;		/* it read new ones: look again soon */
	enum stop_reason stop;
	int signo;
	struct session_stats st;	/* its own counts (the ingest keeps the rest) */
	/* Optional: called from the loop every tick_interval seconds (live views,
	 * periodic pushes, progress). May stop the run. */
	void (*tick)(struct session *s, void *ctx);
	void *tick_ctx;
	double tick_interval;
	/* Optional: an extra fd (e.g. the terminal for `top`) and its handler. */
	int extra_fd;
	void (*on_extra)(struct session *s, void *ctx);
	void *extra_ctx;
};

/* The command's pid, 0 if there is none. */
static int32_t command_pid(const struct session *s)
{
	return s->child ? child_pid(s->child) : 0;
}

static int follow_children(const struct session *s)
{
	return s->opt->subprocesses || s->opt->all_python;
}

/*
 * Register a target with the BPF side (its thread states first, when it has
 * more threads than the BPF side searches), with its asyncio offsets under
 * --async-aware. A version without them is refused in one line: the run
 * ends (exit 1), except with --all-python, where the others go on.
 */
static int add_to_sampler(struct session *s, struct target *t)
{
	struct tb_walk w = t->layout.walk;
	int ret;

	ingest_target_threads(s->in, t);	/* before its first sample */
	ingest_eval_parts(s->in, t->pid, t->loc.eval_addr, &w.addr);
	ret = sampler_add(&s->sampler, t->pid, &w);

	if (ret || !s->opt->async_aware)
		return ret;
	if (t->layout.async.ok)
		return sampler_add_async(&s->sampler, t->pid, &t->layout.async.bpf);
	tb_error("pid %d: --async-aware: Python %s has no asyncio task layout tachyon-bpf reads (only %s export one; profile it without --async-aware)",
		 t->pid, t->version, layout_async_versions());
	if (!s->opt->all_python)
		s->stop = STOP_ERROR;
	return 0;
}

/* The CPU time a process has used so far, in clock ticks (0 if gone). */
static uint64_t cpu_ticks(pid_t pid)
{
	struct proc_stat st;

	return proc_read_stat(pid, 0, &st) ? 0 : st.cpu_ticks;
}

/*
 * The targets' CPU time while sampled: a run without samples then tells an
 * idle target from an event that never fired. Counted when each ends.
 */
static void cpu_count(struct session *s, const struct target *t)
{
	uint64_t now = cpu_ticks(t->pid);

	if (now > t->cpu_ticks)
		s->st.target_cpu += (double)(now - t->cpu_ticks) / sysconf(_SC_CLK_TCK);
}

/* The registry took a new target: sample it. */
static void target_added(void *ctx, struct target *t)
{
	struct session *s = ctx;

	s->st.processes++;
	if (s->epfd >= 0 && t->pidfd >= 0)
		epoll_add(s->epfd, t->pidfd, t->id, EPOLLIN);
	if (s->sampler.skel) {
		add_to_sampler(s, t);
		sampler_watch(&s->sampler, t->pid, follow_children(s));
	}
	tb_debug("pid %d: %s, Python %s", t->pid, t->name, t->version);
	if (s->start_ns) {
		ingest_seed_offcpu(s->in, t, sampler_now_ns());
		t->cpu_ticks = cpu_ticks(t->pid);
	}
	if (!t->layout.walk.addr.gil_addr) {
		s->status_pending = 1;
		s->status_fast_until = mono_now() + STATUS_FAST_S;
	}
}

/* --native: new code's mappings, read for the symbols while the process runs. */
static void native_changed(struct session *s)
{
	pid_t pids[64];
	size_t i, n = sampler_native_changed(&s->sampler, pids, 64);

	for (i = 0; i < n; i++)
		ingest_native_refresh(s->in, (uint32_t)pids[i]);
}

/* This incarnation is over (exit or exec); its samples stay in the profile. */
static void end_target(struct session *s, struct target *t)
{
	if (t->exited)
		return;
	cpu_count(s, t);
	/* Its last samples may still be counted in the kernel. */
	ingest_read_counts(s->in);
	if (t->pidfd >= 0)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, t->pidfd, NULL);
	targets_ended(s->ts, t);
	sampler_native_forget(&s->sampler, t->pid);	/* its unwind tables' holds */
	/* Samples still waiting for their stack would need it. */
	ingest_flush(s->in, 0);
	if (!ingest_pending_for(s->in, t->id))
		ingest_freeze(s->in, t);
}

static void adopt_one(void *ctx, pid_t pid)
{
	struct session *s = ctx;

	if (targets_by_pid(s->ts, (uint32_t)pid))
		return;
	sampler_watch(&s->sampler, pid, 1);
	if (sampler_follow(&s->sampler, &s->so, pid))
		tb_debug("pid %d: no per-thread events: %s", pid, strerror(errno));
	targets_discover_later(s->ts, (int32_t)pid, 0);
}

/* --subprocesses: descendants that were already running when we started. */
static void adopt_descendants(struct session *s)
{
	proc_each_descendant(s->opt->pids, s->opt->npids, adopt_one, s);
}

static void on_proc(struct session *s, const struct tb_proc *r)
{
	struct target *t = targets_by_pid(s->ts, r->pid), *parent, *child;

	s->st.proc_events++;
	switch (r->event) {
	case TB_PROC_FORK:
		parent = targets_by_pid(s->ts, r->ppid);
		if (!r->followed || !parent)
			return;
		child = calloc(1, sizeof(*child));
		if (child && !target_fork(parent, (pid_t)r->pid, child) && !targets_add(s->ts, child))
			return;
		free(child);
		return;
	case TB_PROC_EXEC:
		if (command_pid(s) == (int32_t)r->pid)
			s->child_execd = 1;
		if (t)
			end_target(s, t);
		/* The command not being Python is worth a word, unless -s says
		 * it may be a shell or a supervisor. */
		targets_discover_later(s->ts, (int32_t)r->pid,
				       command_pid(s) == (int32_t)r->pid && !s->opt->subprocesses);
		return;
	case TB_PROC_EXIT:
		if (t)
			end_target(s, t);
		return;
	}
}

/* The ring buffer: process events are the session's, the rest ingest's. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	uint32_t kind = 0;

	if (size >= sizeof(kind))
		memcpy(&kind, data, sizeof(kind));
	if (kind == TB_REC_PROC && size >= sizeof(struct tb_proc))
		on_proc(s, data);
	else
		ingest_record(s->in, data, size);
	return 0;
}

struct session *session_new(const struct options *o)
{
	struct targets_hooks hooks;
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->opt = o;
	s->epfd = s->sigfd = s->extra_fd = -1;
	hooks = (struct targets_hooks){ target_added, s };
	s->ts = targets_new(o, &hooks);
	if (s->ts)
		s->in = ingest_new(o, &s->sampler, s->ts);
	if (!s->in) {
		session_free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

int session_open_targets(struct session *s)
{
	return targets_open(s->ts);
}

void session_block_signals(sigset_t *out)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if (out)
		*out = mask;
}

/* SIGINT, SIGTERM or SIGHUP waiting to be read: it came during the set-up. */
static int signal_pending(void)
{
	sigset_t stop, pending;

	session_block_signals(&stop);
	sigpending(&pending);
	return sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) ||
	       sigismember(&pending, SIGHUP);
}

static int setup_loop(struct session *s)
{
	struct stat st;
	sigset_t mask;
	uint32_t i;

	session_block_signals(&mask);
	signal(SIGPIPE, SIG_IGN);
	s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->sigfd < 0 || s->epfd < 0)
		return neg_errno();
	if (epoll_add(s->epfd, s->sigfd, EV_SIGNAL, EPOLLIN) ||
	    epoll_add(s->epfd, sampler_rb_fd(&s->sampler), EV_RING, EPOLLIN))
		return neg_errno();
	/* A pipe's write end reports EPOLLERR once the reader has gone. */
	if (!s->opt->output && !fstat(STDOUT_FILENO, &st) && S_ISFIFO(st.st_mode))
		epoll_add(s->epfd, STDOUT_FILENO, EV_STDOUT, 0);
	for (i = 0; i < targets_count(s->ts); i++) {
		const struct target *t = targets_get(s->ts, i);

		if (t->pidfd >= 0)
			epoll_add(s->epfd, t->pidfd, i, EPOLLIN);
	}
	if (s->extra_fd >= 0)
		epoll_add(s->epfd, s->extra_fd, EV_EXTRA, EPOLLIN);
	return 0;
}

/*
 * -- CMD: fork now, exec only once sampling is on, so nothing it runs is
 * missed. Its exec is reported by the BPF side.
 */
static int spawn_child(struct session *s)
{
	s->child = child_spawn(s->opt->cmd, !!s->opt->output);
	if (!s->child)
		return neg_errno();
	targets_set_command(s->ts, child_pid(s->child));
	if (child_pidfd(s->child) >= 0)
		epoll_add(s->epfd, child_pidfd(s->child), EV_CHILD, EPOLLIN);
	return sampler_watch(&s->sampler, child_pid(s->child), s->opt->subprocesses);
}

/*
 * Perf events follow the threads of the processes named (-p, the command
 * of --), and with -s their children: a CPU that runs none of them is
 * never interrupted. --all-python cannot know its threads in advance:
 * one event per CPU (or the tick, which costs no interrupt at all).
 */
static void task_scope(struct session *s, struct sampler_opts *so)
{
	if (s->opt->all_python || s->opt->per_cpu || s->opt->event->tick)
		return;
	s->event_pids[s->nevent_pids++] = command_pid(s);
	if (!s->child) {
		s->nevent_pids = 0;
		for (; s->nevent_pids < s->opt->npids; s->nevent_pids++)
			s->event_pids[s->nevent_pids] = s->opt->pids[s->nevent_pids];
	}
	so->tasks = s->event_pids;
	so->ntasks = s->nevent_pids;
	so->follow_forks = s->opt->subprocesses;
}

int session_start(struct session *s)
{
	struct sampler_opts so = {
		.event = s->opt->event, .freq = s->opt->period ? 0 : s->opt->freq,
		.period = s->opt->period, .mode = s->opt->mode,
		.rate_hz = s->opt->rate_hz, .tick_every = s->opt->tick_every,
		.kernel_stacks = s->opt->kernel, .native_stacks = s->opt->native, .native_fp = s->opt->native_fp,
		.report_all_exec = s->opt->all_python,
		/* Two more reads per sample: only when something uses them. */
		.read_status = s->opt->mode == TB_MODE_GIL || s->opt->gc_frames ||
			       s->opt->gc_state,
		.timeline = s->opt->timeline,
		.async_aware = s->opt->async_aware,
		.kernel_stats = s->opt->stats_path || tb_verbose,
		.btf_path = s->opt->btf_path,
		.on_record = on_record, .ctx = s,
	};
	char err[512];
	uint32_t i;
	int ret;

	if (sampler_open(&s->sampler, &so, err, sizeof(err))) {
		tb_error("BPF: %s", err);
		return -EIO;
	}
	for (i = 0; i < targets_nroots(s->ts); i++)
		sampler_watch(&s->sampler, targets_root(s->ts, i), 1);
	for (i = 0; i < targets_count(s->ts); i++) {
		struct target *t = targets_get(s->ts, i);

		ret = add_to_sampler(s, t);
		if (!ret)
			ret = sampler_watch(&s->sampler, t->pid, follow_children(s));
		if (ret) {
			ret = neg_errno();
			tb_error("BPF: cannot register pid %d: %s (too many processes?)",
				 t->pid, strerror(-ret));
			return ret;
		}
	}
	if (setup_loop(s)) {
		ret = neg_errno();
		tb_error("event loop: %s (out of file descriptors?)", strerror(-ret));
		return ret;
	}
	if (s->opt->cmd && spawn_child(s)) {
		ret = neg_errno();
		tb_error("%s: cannot start the command: %s", s->opt->cmd[0], strerror(-ret));
		return ret;
	}
	task_scope(s, &so);
	if (sampler_attach(&s->sampler, &so, err, sizeof(err))) {
		tb_error("perf events: %s", err);
		return -EIO;
	}
	s->so = so;
	s->st.ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (s->opt->all_python)
		targets_scan_all(s->ts);
	else if (s->opt->subprocesses && s->opt->npids)
		adopt_descendants(s);
	sampler_setup_done(&s->sampler);
	if (s->child)
		child_release(s->child);
	return 0;
}

static void pid_exited(struct session *s, uint32_t idx)
{
	struct target *t = targets_get(s->ts, idx);

	if (!t || t->exited)
		return;
	/* Drain first: its last samples must still find it. */
	sampler_consume(&s->sampler);
	ingest_flush(s->in, 0);
	/* The drain may have carried its exit record, which ended it already. */
	t = targets_get(s->ts, idx);
	if (!t || t->exited)
		return;
	sampler_del(&s->sampler, t->pid);
	tb_debug("pid %d exited", t->pid);
	end_target(s, t);
}

static void child_exited(struct session *s)
{
	if (!child_reap(s->child))
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, child_pidfd(s->child), NULL);
	tb_debug("command exited with status %d", child_status(s->child));
	s->command_ended = 1;
	s->stop = STOP_TARGETS_EXITED;
	sampler_consume(&s->sampler);	/* its exec event, if it was quick */
	if (!s->child_execd)
		s->stop = STOP_ERROR;	/* exec failed: the child said why */
}

static void read_signal(struct session *s)
{
	struct signalfd_siginfo si;

	if (read(s->sigfd, &si, sizeof(si)) == sizeof(si)) {
		s->signo = (int)si.ssi_signo;
		s->stop = STOP_SIGNAL;
	}
}

static void handle(struct session *s, const struct epoll_event *ev)
{
	uint64_t tag = ev->data.u64;

	if (tag == EV_CHILD) {
		child_exited(s);
		return;
	}
	if (tag == EV_EXTRA) {
		if (s->on_extra)
			s->on_extra(s, s->extra_ctx);
		return;
	}
	switch (EV_KIND(tag)) {
	case EV_RING:
		break;	/* consumed below, every round */
	case EV_SIGNAL:
		read_signal(s);
		break;
	case EV_STDOUT:
		s->stop = STOP_PIPE_CLOSED;
		break;
	default:
		pid_exited(s, (uint32_t)tag);
	}
}

/*
 * An interpreter just found may not have its GIL yet (a launched command
 * starting up): until the BPF side has its address, gil mode cannot judge
 * a sample (it keeps it). Look again at the discovery pace for a second
 * after a target is added, then at the usual HOUSE_S.
 */
static int status_soon(const struct session *s, double now)
{
	return s->status_pending && s->opt->mode == TB_MODE_GIL && now < s->status_fast_until;
}

/*
 * Sleep until the next thing due (`due`: the loop's own timers) or an
 * event: each wake-up costs two context switches, so the loop wakes only
 * when there is work (a few times a second when samples are counted in
 * the kernel).
 */
static int poll_timeout(const struct session *s, double start, double due)
{
	double now = mono_now(), left;
	int ms = targets_discovering(s->ts) || status_soon(s, now) ? DISCOVER_MS : POLL_MS;

	if (s->stacks_soon && TB_STACK_WAKE_MS < ms)
		ms = TB_STACK_WAKE_MS;
	/* --async-aware wall mode: catch event loops while they wait */
	if (ingest_polls_async(s->in) && ms > ASYNC_WAIT_POLL_MS)
		ms = ASYNC_WAIT_POLL_MS;
	if (s->tick && s->tick_interval * 1000 < ms)
		ms = (int)(s->tick_interval * 1000) + 1;
	if (s->opt->all_python && targets_next_scan(s->ts) < due)
		due = targets_next_scan(s->ts);
	if (s->opt->duration && start + s->opt->duration < due)
		due = start + s->opt->duration;
	left = due - now;
	if (left <= 0)
		return 0;
	return left * 1000 < ms ? (int)(left * 1000) + 1 : ms;
}

/*
 * The BPF side wakes us for a new stack at most every TB_STACK_WAKE_MS per
 * CPU: while new stacks keep coming, look again that soon ourselves, so
 * each is read (its code objects too) within that time of its sample.
 */
static void note_stacks(struct session *s)
{
	uint64_t n = ingest_counts(s->in)->stacks;

	s->stacks_soon = n != s->stacks_seen;
	s->stacks_seen = n;
}

static double min2(double a, double b)
{
	return a < b ? a : b;
}

static void target_changed(void *ctx, struct target *t)
{
	struct session *s = ctx;

	add_to_sampler(s, t);
}

/* Things that need a running interpreter: retried until they work. */
static void refresh_targets(struct session *s)
{
	s->status_pending = targets_refresh(s->ts, target_changed, s) > 0;
}

static void check_stop(struct session *s, double start)
{
	if (s->opt->duration && mono_now() - start >= s->opt->duration)
		s->stop = STOP_DURATION;
	/* -p: when every target (and any process being set up) is gone. */
	if (!s->opt->all_python && !s->opt->cmd && !targets_alive(s->ts) &&
	    !targets_discovering(s->ts) && !targets_roots_alive(s->ts))
		s->stop = STOP_TARGETS_EXITED;
}

void session_run(struct session *s)
{
	struct epoll_event ev[16];
	double start, last_house, last_tick, last_compact;
	uint64_t end_ns;
	uint32_t i;
	int n, k;

	s->start_ns = sampler_now_ns();
	ingest_set_start(s->in, s->start_ns);
	start = last_house = last_tick = last_compact = s->start_ns / 1e9;
	s->st.start_unix = wall_now();
	/* Wall mode: threads already blocked count from now. */
	for (i = 0; i < targets_count(s->ts); i++) {
		struct target *t = targets_get(s->ts, i);

		if (t && !t->exited) {
			ingest_seed_offcpu(s->in, t, s->start_ns);
			t->cpu_ticks = cpu_ticks(t->pid);
		}
	}
	s->st.stopped_in_setup = signal_pending();
	if (s->opt->mode == TB_MODE_WALL)
		tb_debug("wall mode: %" PRIu64 " threads found blocked, walked in %.1f ms",
			 ingest_counts(s->in)->offcpu_seeded, (sampler_now_ns() - s->start_ns) / 1e6);
	check_stop(s, start);
	while (!s->stop) {
		n = epoll_wait(s->epfd, ev, 16,
			       poll_timeout(s, start, min2(last_house + HOUSE_S,
							   last_compact + COMPACT_S)));
		if (n < 0 && errno != EINTR) {
			tb_error("event loop: epoll_wait: %s", strerror(errno));
			s->stop = STOP_ERROR;
			break;
		}
		for (k = 0; k < n; k++)
			handle(s, &ev[k]);
		sampler_consume(&s->sampler);
		sampler_native_rescan(&s->sampler);
		native_changed(s);
		note_stacks(s);
		ingest_flush(s->in, 0);
		ingest_name_threads(s->in, 0);
		ingest_poll_async(s->in);
		if (targets_discovering(s->ts))
			targets_run_discovery(s->ts);
		if (targets_nroots(s->ts))
			targets_note_roots(s->ts);
		if (s->opt->all_python && mono_now() >= targets_next_scan(s->ts))
			targets_scan_all(s->ts);
		if (status_soon(s, mono_now()))
			refresh_targets(s);
		if (mono_now() - last_house >= HOUSE_S) {
			refresh_targets(s);
			ingest_recheck_threads(s->in);
			ingest_read_counts(s->in);
			last_house = mono_now();
		}
		if (mono_now() - last_compact >= COMPACT_S) {
			ingest_compact(s->in);
			last_compact = mono_now();
		}
		if (s->tick && mono_now() - last_tick >= s->tick_interval) {
			s->tick(s, s->tick_ctx);
			last_tick = mono_now();
		}
		check_stop(s, start);
	}
	/* Stop the events, then read what they left in the kernel. */
	sampler_detach(&s->sampler);
	end_ns = sampler_now_ns();	/* the end of the run, for every count */
	s->st.seconds = (end_ns - s->start_ns) / 1e9;
	ingest_read_counts(s->in);
	sampler_consume(&s->sampler);
	ingest_credit_offcpu(s->in, end_ns);
	ingest_flush(s->in, 1);
	sampler_counters(&s->sampler, s->st.bpf);
	s->st.cfi_on = !sampler_native_stats(&s->sampler, &s->st.cfi);
	sampler_prog_stats(&s->sampler, &s->st.run_ns, &s->st.run_cnt);
	for (i = 0; i < targets_count(s->ts); i++) {
		const struct target *t = targets_get(s->ts, i);

		if (t && !t->exited)
			cpu_count(s, t);
	}
	/* -- CMD outlived the run (-d, a signal); --keep-running leaves it be. */
	if (s->child && !s->opt->keep_running)
		child_end(s->child);
}

void session_sync(struct session *s)
{
	ingest_read_counts(s->in);
	sampler_consume(&s->sampler);
	ingest_flush(s->in, 0);
}

int session_resolve(struct session *s, struct resolved *r)
{
	return ingest_resolve(s->in, r);
}

void session_free(struct session *s)
{
	if (!s)
		return;
	if (s->child && !s->stop)
		kill(child_pid(s->child), SIGTERM);
	sampler_close(&s->sampler);
	targets_free(s->ts);
	ingest_free(s->in);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
	child_free(s->child);
	free(s);
}

/* The last target found that still runs, for a one-line title. */
static void view_live(const struct session *s, struct session_view *v)
{
	const struct target *t = NULL;
	uint32_t i;

	for (i = 0; i < targets_count(s->ts); i++)
		if (targets_get(s->ts, i) && !targets_get(s->ts, i)->exited)
			t = targets_get(s->ts, i);
	if (!t)
		return;
	v->live_pid = t->pid;
	snprintf(v->live_name, sizeof(v->live_name), "%s", t->name);
	snprintf(v->live_version, sizeof(v->live_version), "%s", t->version);
}

void session_snapshot(const struct session *s, struct session_view *v)
{
	const struct symbols *sym = ingest_symbols(s->in);

	*v = (struct session_view){
		.opt = s->opt, .stop = s->stop, .st = s->st,
		.sym = { .lookups = sym->lookups, .reads = sym->reads,
			 .failures = sym->failures, .evicted = sym->evicted,
			 .cached = sym->codes.len },
		.samples = ingest_samples(s->in),
		.alive = targets_alive(s->ts), .ntargets = targets_count(s->ts),
		.per_task = s->sampler.per_task, .task_events = s->sampler.task_events,
		.walker = sampler_walker(&s->sampler),
		.refused_command = targets_refused_command(s->ts),
		.command_ended = s->command_ended,
		.command_status = s->child ? child_status(s->child) : 0,
	};
	v->st.in = *ingest_counts(s->in);
	view_live(s, v);
}

int session_counters(struct session *s, uint64_t c[TB_NR_COUNTERS])
{
	return sampler_counters(&s->sampler, c) ? -EIO : 0;
}

void session_stop(struct session *s, enum stop_reason why)
{
	s->stop = why;
}

void session_set_tick(struct session *s, void (*tick)(struct session *s, void *ctx),
		      void *ctx, double interval)
{
	s->tick = tick;
	s->tick_ctx = ctx;
	s->tick_interval = interval;
}

void session_watch_fd(struct session *s, int fd, void (*on_fd)(struct session *s, void *ctx),
		      void *ctx)
{
	s->extra_fd = fd;
	s->on_extra = on_fd;
	s->extra_ctx = ctx;
}
