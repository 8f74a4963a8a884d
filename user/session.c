// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "errors.h"
#include "session.h"

#define POLL_MS		100	/* drain at least this often: samples don't wake us */
#define EV_RING		(1ULL << 62)
#define EV_SIGNAL	(2ULL << 62)
#define EV_STDOUT	(3ULL << 62)
#define EV_KIND(x)	((x) & (3ULL << 62))

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct target *target_of(struct session *s, uint32_t pid)
{
	void **slot = hmap_get(&s->by_pid, &pid);

	return slot ? s->targets[(uintptr_t)*slot - 1] : NULL;
}

static int add_pending(struct session *s, const struct agg_key *k)
{
	if (s->npend == s->pend_cap) {
		size_t cap = s->pend_cap ? s->pend_cap * 2 : 256;
		struct agg_key *n = realloc(s->pend, cap * sizeof(*n));

		if (!n)
			return -1;
		s->pend = n;
		s->pend_cap = cap;
	}
	s->pend[s->npend++] = *k;
	return 0;
}

/* Count a sample whose frames we have; read new code objects right away,
 * while the process (and the code object) is still alive. */
static void count_sample(struct session *s, const struct agg_key *k,
			 const struct stack_frames *sf)
{
	if (profile_count(&s->prof, k, 1) == 1)
		symbols_resolve(&s->sym, s->targets[k->target], sf->frames, sf->depth);
}

static void on_sample(struct session *s, const struct tb_sample *r)
{
	const struct stack_frames *sf;
	struct target *t = target_of(s, r->pid);
	struct agg_key k = {0};

	s->st.received++;
	if (!t) {
		s->st.unknown_pid++;
		return;
	}
	k.target = t->id;
	k.tid = r->tid;
	k.stack_id = r->stack_id;
	k.flags = r->flags;
	sf = profile_stack(&s->prof, r->stack_id);
	if (!sf) {
		/* Another CPU's copy of the frames may still be on its way. */
		if (add_pending(s, &k))
			s->st.missing_stack++;
		return;
	}
	count_sample(s, &k, sf);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	uint32_t kind;

	if (size < sizeof(kind)) {
		s->st.bad_records++;
		return 0;
	}
	memcpy(&kind, data, sizeof(kind));
	if (kind == TB_REC_SAMPLE && size >= sizeof(struct tb_sample)) {
		on_sample(s, data);
	} else if (kind == TB_REC_STACK) {
		s->st.stacks++;
		if (profile_add_stack(&s->prof, data, size) < 0)
			s->st.bad_records++;
	} else {
		s->st.bad_records++;
	}
	return 0;
}

/* Retry samples that arrived before their stack; `final` gives up on them. */
static void flush_pending(struct session *s, int final)
{
	size_t i, j = 0;

	for (i = 0; i < s->npend; i++) {
		const struct stack_frames *sf = profile_stack(&s->prof, s->pend[i].stack_id);

		if (sf)
			count_sample(s, &s->pend[i], sf);
		else if (final)
			s->st.missing_stack++;
		else
			s->pend[j++] = s->pend[i];
	}
	s->npend = j;
}

static void target_error(pid_t pid, int ret, const char *detail)
{
	switch (ret) {
	case TARGET_NO_PROCESS:
		tb_error("pid %d: no such process (check the pid; the process may have exited)", pid);
		return;
	case TARGET_NOT_PYTHON:
		tb_error("pid %d: not a Python process: %s (give the pid of a CPython 3.11+ process)",
			 pid, detail);
		return;
	case TARGET_ACCESS:
		tb_error("pid %d: permission denied: %s (needs root or CAP_SYS_PTRACE over the target, and the same pid namespace)",
			 pid, detail);
		return;
	case TARGET_UNSUPPORTED:
		tb_error("pid %d: unsupported Python: %s", pid, detail);
		return;
	}
	tb_error("pid %d: cannot inspect the process: %s", pid, detail);
}

int session_open_targets(struct session *s, const struct options *o)
{
	char err[512];
	int i, ret;

	memset(s, 0, sizeof(*s));
	s->opt = o;
	s->epfd = s->sigfd = -1;
	if (hmap_init(&s->by_pid, sizeof(uint32_t)) || profile_init(&s->prof) ||
	    symbols_init(&s->sym)) {
		tb_error("startup: out of memory (free some memory)");
		return TB_EXIT_RUNTIME;
	}
	for (i = 0; i < o->npids; i++) {
		struct target *t = calloc(1, sizeof(*t));
		uint32_t pid = (uint32_t)o->pids[i];
		void **slot;

		if (!t)
			return TB_EXIT_RUNTIME;
		err[0] = 0;
		ret = target_open(o->pids[i], o->layout_flags, t, err, sizeof(err));
		if (ret) {
			target_error(o->pids[i], ret, err[0] ? err : "unknown reason");
			free(t);
			return TB_EXIT_RUNTIME;
		}
		t->id = s->ntargets;
		s->targets[s->ntargets++] = t;
		slot = hmap_put(&s->by_pid, &pid, NULL);
		if (!slot)
			return TB_EXIT_RUNTIME;
		*slot = (void *)(uintptr_t)(t->id + 1);
		s->alive++;
	}
	return 0;
}

static int epoll_add(int epfd, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int setup_loop(struct session *s)
{
	struct stat st;
	sigset_t mask;
	uint32_t i;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->sigfd < 0 || s->epfd < 0)
		return -1;
	if (epoll_add(s->epfd, s->sigfd, EV_SIGNAL, EPOLLIN) ||
	    epoll_add(s->epfd, sampler_rb_fd(&s->sampler), EV_RING, EPOLLIN))
		return -1;
	/* A pipe's write end reports EPOLLERR once the reader has gone. */
	if (!s->opt->output && !fstat(STDOUT_FILENO, &st) && S_ISFIFO(st.st_mode))
		epoll_add(s->epfd, STDOUT_FILENO, EV_STDOUT, 0);
	for (i = 0; i < s->ntargets; i++)
		if (s->targets[i]->pidfd >= 0)
			epoll_add(s->epfd, s->targets[i]->pidfd, i, EPOLLIN);
	return 0;
}

int session_start(struct session *s)
{
	struct sampler_opts so = {
		.event = s->opt->event, .freq = s->opt->freq,
		.on_record = on_record, .ctx = s,
	};
	char err[512];
	uint32_t i;

	if (sampler_open(&s->sampler, &so, err, sizeof(err))) {
		tb_error("BPF: %s", err);
		return TB_EXIT_RUNTIME;
	}
	for (i = 0; i < s->ntargets; i++) {
		if (sampler_add(&s->sampler, s->targets[i]->pid, &s->targets[i]->layout.walk)) {
			tb_error("BPF: cannot register pid %d: %s (too many processes?)",
				 s->targets[i]->pid, strerror(errno));
			return TB_EXIT_RUNTIME;
		}
	}
	if (setup_loop(s)) {
		tb_error("event loop: %s (out of file descriptors?)", strerror(errno));
		return TB_EXIT_RUNTIME;
	}
	if (sampler_attach(&s->sampler, &so, err, sizeof(err))) {
		tb_error("perf events: %s", err);
		return TB_EXIT_RUNTIME;
	}
	s->st.ncpus = s->sampler.nlinks;
	return 0;
}

static void target_exited(struct session *s, uint32_t idx)
{
	struct target *t = s->targets[idx];

	if (t->exited)
		return;
	t->exited = 1;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, t->pidfd, NULL);
	/* Drain first: its last samples must find it in `by_pid`. */
	sampler_consume(&s->sampler);
	flush_pending(s, 0);
	sampler_del(&s->sampler, t->pid);
	tb_debug("pid %d exited", t->pid);
	if (--s->alive == 0)
		s->stop = STOP_TARGETS_EXITED;
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
		target_exited(s, (uint32_t)tag);
	}
}

static int poll_timeout(const struct session *s, double start)
{
	double left;

	if (!s->opt->duration)
		return POLL_MS;
	left = start + s->opt->duration - now_s();
	if (left <= 0)
		return 0;
	return left * 1000 < POLL_MS ? (int)(left * 1000) + 1 : POLL_MS;
}

void session_run(struct session *s)
{
	struct epoll_event ev[16];
	double start = now_s();
	struct timespec wall;
	int n, i;

	clock_gettime(CLOCK_REALTIME, &wall);
	s->st.start_unix = wall.tv_sec + wall.tv_nsec / 1e9;

	while (!s->stop) {
		n = epoll_wait(s->epfd, ev, 16, poll_timeout(s, start));
		if (n < 0 && errno != EINTR) {
			tb_error("event loop: epoll_wait: %s", strerror(errno));
			s->stop = STOP_ERROR;
			break;
		}
		for (i = 0; i < n; i++)
			handle(s, &ev[i]);
		sampler_consume(&s->sampler);
		flush_pending(s, 0);
		if (s->opt->duration && now_s() - start >= s->opt->duration)
			s->stop = STOP_DURATION;
	}
	/* Stop the events, then read what they left in the ring buffer. */
	sampler_detach(&s->sampler);
	s->st.seconds = now_s() - start;
	sampler_consume(&s->sampler);
	flush_pending(s, 1);
	sampler_counters(&s->sampler, s->st.bpf);
	sampler_prog_stats(&s->sampler, &s->st.run_ns, &s->st.run_cnt);
}

void session_close(struct session *s)
{
	uint32_t i;

	sampler_close(&s->sampler);
	for (i = 0; i < s->ntargets; i++) {
		target_close(s->targets[i]);
		free(s->targets[i]);
	}
	symbols_free(&s->sym);
	profile_free(&s->prof);
	hmap_free(&s->by_pid);
	free(s->pend);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
}
