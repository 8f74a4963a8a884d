// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The consume stage: one epoll loop over the ring buffer, signals, target
 * exits and stdout; process lifecycle (exec, fork, exit, --all-python,
 * -- CMD); aggregation and symbolization as samples arrive.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "errors.h"
#include "session.h"

#define POLL_MS		1000	/* drain at least this often: samples don't wake us */
#define DISCOVER_MS	5	/* while a new process is being set up */
#define RESCAN_S	2.0	/* --all-python: look for interpreters loaded late */
#define COMPACT_S	10.0	/* fold live profiles this often: memory stays flat */
/*
 * Read the in-kernel counts, and retry what needs a running interpreter,
 * this often: one timer for both, as each wake-up costs two context
 * switches (two timers drifting apart woke the loop four times a second).
 */
#define HOUSE_S		0.5
#define EV_RING		(1ULL << 62)
#define EV_SIGNAL	(2ULL << 62)
#define EV_STDOUT	(3ULL << 62)
#define EV_CHILD	((3ULL << 62) | 1)
#define EV_EXTRA	((3ULL << 62) | 2)
#define EV_KIND(x)	((x) & (3ULL << 62))

/* When to look again at a process that is not (yet) a Python we can read. */
static const double retry_after[] = { 0.002, 0.01, 0.03, 0.1, 0.3, 1.0 };
#define MAX_ATTEMPTS (int)(sizeof(retry_after) / sizeof(retry_after[0]))

struct thread_key {
	uint32_t target;
	uint32_t tid;
};

static struct target *target_of(struct session *s, uint32_t pid)
{
	void **slot = hmap_get(&s->by_pid, &pid);

	return slot ? s->targets[(uintptr_t)*slot - 1] : NULL;
}

static int epoll_add(int epfd, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int follow_children(const struct session *s)
{
	return s->opt->subprocesses || s->opt->all_python;
}

/* Make t the current incarnation of its pid and start sampling it. */
static int add_target(struct session *s, struct target *t)
{
	uint32_t pid = (uint32_t)t->pid;
	void **slot;

	if (s->ntargets == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 64;
		struct target **g = realloc(s->targets, cap * sizeof(*g));
		struct rproc *pr;

		if (!g)
			return -1;
		s->targets = g;
		pr = realloc(s->procs, cap * sizeof(*pr));
		if (!pr)
			return -1;
		s->procs = pr;
		s->cap = cap;
	}
	slot = hmap_put(&s->by_pid, &pid, NULL);
	if (!slot)
		return -1;
	t->id = s->ntargets;
	s->targets[s->ntargets++] = t;
	s->procs[t->id].pid = t->pid;
	snprintf(s->procs[t->id].version, sizeof(s->procs[t->id].version), "%s", t->version);
	snprintf(s->procs[t->id].name, sizeof(s->procs[t->id].name), "%s", t->name);
	*slot = (void *)(uintptr_t)(t->id + 1);
	s->alive++;
	s->st.processes++;
	if (s->epfd >= 0 && t->pidfd >= 0)
		epoll_add(s->epfd, t->pidfd, t->id, EPOLLIN);
	if (s->sampler.skel) {
		sampler_add(&s->sampler, t->pid, &t->layout.walk);
		sampler_watch(&s->sampler, t->pid, follow_children(s));
	}
	tb_debug("pid %d: %s, Python %s", t->pid, t->name, t->version);
	return 0;
}

static const char *thread_name(void *ctx, uint32_t target, uint32_t tid);
static int kernel_frames(void *ctx, int32_t kstack, const char **names, int max);
static void flush_pending(struct session *s, int final);

static int pending_for(const struct session *s, uint32_t target)
{
	size_t i;

	for (i = 0; i < s->npend; i++)
		if (s->pend[i].k.target == target)
			return 1;
	return 0;
}

static void resolve_opts_of(struct session *s, struct resolve_opts *ro)
{
	*ro = (struct resolve_opts){
		.full_paths = s->opt->full_paths, .threads = s->opt->threads,
		.gc_frames = s->opt->gc_frames,
		.proc_root = s->opt->all_python || s->opt->subprocesses,
		.show_pids = s->opt->show_pids,
		.thread_name = thread_name, .kernel_frames = kernel_frames, .ctx = s,
	};
}

static void forget_threads(struct session *s, uint32_t target)
{
	struct thread_key *keys = malloc((s->thread_names.len + 1) * sizeof(*keys));
	const struct thread_key *k;
	size_t it = 0, n = 0, i;

	if (!keys)
		return;
	while (hmap_next(&s->thread_names, &it, (const void **)&k, NULL))
		if (k->target == target)
			keys[n++] = *k;
	for (i = 0; i < n; i++)
		free(hmap_del(&s->thread_names, &keys[i]));
	free(keys);
}

/*
 * Move a target's rows into the frozen profile: symbolized now, identical
 * rows merged. Its stacks and thread names are no longer needed; the BPF
 * side is told to send a stack's frames again the next time it sees it.
 */
static void fold_target(struct session *s, struct target *t, int forget_each)
{
	struct resolve_opts ro;
	uint64_t *dead;
	size_t ndead;

	resolve_opts_of(s, &ro);
	if (profile_freeze(&s->prof, t, &s->sym, &ro, &s->frozen, &dead, &ndead))
		tb_warn("pid %d: out of memory while keeping its samples", t->pid);
	if (s->sampler.skel && forget_each)
		sampler_forget_stacks(&s->sampler, dead, ndead);
	free(dead);
	forget_threads(s, t->id);
}

/*
 * Memory stays bounded however many processes come and go: a finished one's
 * samples are folded into the frozen profile now and its code objects are
 * forgotten.
 */
static void freeze_target(struct session *s, struct target *t)
{
	fold_target(s, t, 1);
	symbols_forget(&s->sym, t->id);
	s->targets[t->id] = NULL;
	target_close(t);
	free(t);
}

static void add_sample(struct session *s, uint32_t pid, uint32_t tid, uint64_t stack_id,
		       uint32_t flags, int32_t kstack, uint64_t weight);

static void on_count(void *ctx, const struct tb_count_key *k, uint64_t n)
{
	add_sample(ctx, k->pid, k->tid, k->stack_id, k->flags, k->kstack, n);
}

/*
 * Bring the samples counted in the kernel into the profile. Called before
 * a target is ended: its process is gone by then (exit) or no longer
 * sampled (exec), so none of its samples can count in the map swapped in.
 */
static void read_counts(struct session *s)
{
	sampler_read_counts(&s->sampler, on_count, s);
}

/*
 * ... and however long a process lives: every COMPACT_S seconds the live
 * processes are folded too, and code objects unused for a whole period
 * leave the symbol cache (an LRU by periods). What stays grows only with
 * what the output itself must hold: distinct rows.
 */
static void compact(struct session *s)
{
	uint32_t i;

	read_counts(s);
	/* From now on the BPF side sends every stack's frames again, so a
	 * sample never names a stack we are about to drop... */
	sampler_forget_all_stacks(&s->sampler);
	sampler_consume(&s->sampler);
	flush_pending(s, 0);
	for (i = 0; i < s->ntargets; i++) {
		struct target *t = s->targets[i];

		if (!t || pending_for(s, i))
			continue;	/* a sample still waits for its stack */
		if (t->exited) {
			freeze_target(s, t);
			continue;
		}
		fold_target(s, t, 0);
		symbols_evict(&s->sym, t->id);
	}
	/* ... including those it sent again while we were folding. */
	sampler_forget_all_stacks(&s->sampler);
	symbols_next_epoch(&s->sym);
	s->st.compactions++;
	tb_debug("compaction %" PRIu64 ": %zu frozen rows, %zu frames; live: %zu rows, %zu stacks, %zu code objects, %zu pending samples",
		 s->st.compactions, s->frozen.nsamples, s->frozen.nframes, s->prof.counts.len,
		 s->prof.stacks.len, s->sym.codes.len, s->npend);
}

/* This incarnation is over (exit or exec); its samples stay in the profile. */
static void end_target(struct session *s, struct target *t)
{
	uint32_t pid = (uint32_t)t->pid;
	void **slot;

	if (t->exited)
		return;
	/* Its last samples may still be counted in the kernel. */
	read_counts(s);
	t->exited = 1;
	if (t->pidfd >= 0)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, t->pidfd, NULL);
	slot = hmap_get(&s->by_pid, &pid);
	if (slot && (uintptr_t)*slot == t->id + 1)
		hmap_del(&s->by_pid, &pid);
	s->alive--;
	/* Samples still waiting for their stack would need it. */
	flush_pending(s, 0);
	if (!pending_for(s, t->id))
		freeze_target(s, t);
}

static void discover_later(struct session *s, int32_t pid, int announce)
{
	size_t i;

	for (i = 0; i < s->ndisc; i++) {
		if (s->disc[i].pid != pid)
			continue;
		/* Another exec: a new image, a new schedule. */
		s->disc[i].attempts = 0;
		s->disc[i].next_try = mono_now() + retry_after[0];
		s->disc[i].announce |= announce;
		return;
	}
	if (s->ndisc == s->disc_cap) {
		size_t cap = s->disc_cap ? s->disc_cap * 2 : 16;
		struct discover *g = realloc(s->disc, cap * sizeof(*g));

		if (!g)
			return;
		s->disc = g;
		s->disc_cap = cap;
	}
	s->disc[s->ndisc++] = (struct discover){ pid, 0, mono_now() + retry_after[0], announce };
}

static void refuse_once(struct session *s, int32_t pid, const char *why)
{
	uint32_t key = (uint32_t)pid;
	int added = 0;

	hmap_put(&s->refused, &key, &added);
	if (added)
		tb_warn("pid %d: %s; not profiled", pid, why);
}

/* One attempt at a process; 1 = done with it (profiled or given up). */
static int try_discover(struct session *s, struct discover *d)
{
	struct target *t = calloc(1, sizeof(*t));
	char err[512] = "";
	int ret;

	if (!t)
		return 1;
	ret = target_open(d->pid, s->opt->layout_flags, t, err, sizeof(err));
	if (ret == TARGET_OK && !add_target(s, t))
		return 1;
	free(t);
	if (ret == TARGET_UNSUPPORTED) {
		refuse_once(s, d->pid, err);
		return 1;
	}
	if (ret == TARGET_NO_PROCESS)
		return 1;
	/* Not Python yet: ld.so may still be mapping libpython. */
	if (++d->attempts >= MAX_ATTEMPTS) {
		if (d->announce)
			tb_warn("pid %d: not a Python process: %s", d->pid, err);
		return 1;
	}
	d->next_try = mono_now() + retry_after[d->attempts];
	return 0;
}

static void run_discovery(struct session *s)
{
	double now = mono_now();
	size_t i, j = 0;

	for (i = 0; i < s->ndisc; i++) {
		struct discover d = s->disc[i];

		if (d.next_try > now || !try_discover(s, &d))
			s->disc[j++] = d;
	}
	s->ndisc = j;
}

/*
 * A cheap fingerprint of the files a process maps: an interpreter loaded
 * later (dlopen) changes it, and only then is the process worth a new look.
 */
static uintptr_t mapped_files(uint32_t pid)
{
	char path[64], line[4608];
	uint64_t h = 1469598103934665603ULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');

		if (file)
			h = (h ^ hash_bytes(file, strlen(file))) * 1099511628211ULL;
	}
	fclose(f);
	return (uintptr_t)(h | 1);	/* never 0: 0 means "unsupported, final" */
}

/* --all-python: every process we have not looked at, or whose files changed. */
static void scan_all(struct session *s)
{
	DIR *dir = opendir("/proc");
	struct dirent *e;
	uint32_t self = (uint32_t)getpid();

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		struct discover d = { 0, MAX_ATTEMPTS - 1, 0, 0 };
		uintptr_t files;
		uint32_t pid;
		void **slot;
		char *end;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = (uint32_t)strtoul(e->d_name, &end, 10);
		if (*end || pid == self || target_of(s, pid))
			continue;
		slot = hmap_get(&s->refused, &pid);
		if (slot && !*slot)
			continue;	/* an unsupported Python: said once, left alone */
		files = mapped_files(pid);
		if (slot && (uintptr_t)*slot == files)
			continue;	/* not Python, and nothing new mapped */
		d.pid = (int32_t)pid;
		if (try_discover(s, &d) && !target_of(s, pid)) {
			int added;

			/* refuse_once() left 0 for an unsupported one: keep it. */
			slot = hmap_put(&s->refused, &pid, &added);
			if (slot && (added || *slot))
				*slot = (void *)files;
		}
	}
	closedir(dir);
	s->next_scan = mono_now() + RESCAN_S;
}

static uint32_t parent_of(uint32_t pid)
{
	char path[64], buf[512], *p;
	unsigned ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;	/* comm may hold ')' */
	if (!p || sscanf(p, ") %*c %u", &ppid) != 1)
		ppid = 0;
	fclose(f);
	return ppid;
}

/* --subprocesses: descendants that were already running when we started. */
static void adopt_descendants(struct session *s)
{
	DIR *dir = opendir("/proc");
	struct dirent *e;
	int i, depth;

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		uint32_t pid = (uint32_t)strtoul(e->d_name, NULL, 10), up = pid;

		if (!pid || target_of(s, pid))
			continue;
		for (depth = 0; depth < 64 && up > 1; depth++) {
			up = parent_of(up);
			for (i = 0; i < s->opt->npids; i++) {
				if ((pid_t)up != s->opt->pids[i])
					continue;
				sampler_watch(&s->sampler, (pid_t)pid, 1);
				discover_later(s, (int32_t)pid, 0);
				goto next;
			}
		}
next:;
	}
	closedir(dir);
}

static int add_pending(struct session *s, const struct agg_key *k, uint64_t weight)
{
	if (s->npend == s->pend_cap) {
		size_t cap = s->pend_cap ? s->pend_cap * 2 : 256;
		struct pend_sample *n = realloc(s->pend, cap * sizeof(*n));

		if (!n)
			return -1;
		s->pend = n;
		s->pend_cap = cap;
	}
	s->pend[s->npend++] = (struct pend_sample){ *k, weight };
	return 0;
}

static void note_thread(struct session *s, const struct agg_key *k)
{
	struct thread_key tk = { k->target, k->tid };
	char name[32];
	void **slot;
	int added;

	slot = hmap_put(&s->thread_names, &tk, &added);
	if (!slot || !added)
		return;
	if (!proc_comm(s->targets[k->target]->pid, (pid_t)k->tid, name, sizeof(name)))
		*slot = strdup(name);
}

/* Count a sample whose frames we have; read new code objects right away,
 * while the process (and the code object) is still alive. */
static void count_sample(struct session *s, const struct agg_key *k, uint64_t weight,
			 const struct stack_frames *sf)
{
	if (!s->targets[k->target]) {
		s->st.unknown_pid += weight;	/* frozen before its stack came */
		return;
	}
	if (profile_count(&s->prof, k, weight) != 1)
		return;
	symbols_resolve(&s->sym, s->targets[k->target], sf->frames, sf->depth);
	if (s->opt->threads)
		note_thread(s, k);
}

static void add_sample(struct session *s, uint32_t pid, uint32_t tid, uint64_t stack_id,
		       uint32_t flags, int32_t kstack, uint64_t weight)
{
	const struct stack_frames *sf;
	struct target *t = target_of(s, pid);
	struct agg_key k = {0};

	if (!t) {
		s->st.unknown_pid += weight;
		return;
	}
	k.target = t->id;
	k.tid = tid;
	k.stack_id = stack_id;
	k.flags = flags & ~TB_SF_STATUS_KNOWN;
	k.kstack = s->opt->kernel ? kstack : -1;
	sf = profile_stack(&s->prof, stack_id);
	if (!sf) {
		/* Another CPU's copy of the frames may still be on its way; or
		 * the BPF side sent this sample just before a compaction told it
		 * to resend frames: make sure it sends them the next time. */
		if (s->st.compactions &&
		    !(s->npend && s->pend[s->npend - 1].k.stack_id == stack_id))
			sampler_forget_stacks(&s->sampler, &stack_id, 1);
		if (add_pending(s, &k, weight))
			s->st.missing_stack += weight;
		return;
	}
	count_sample(s, &k, weight, sf);
}

static void on_proc(struct session *s, const struct tb_proc *r)
{
	struct target *t = target_of(s, r->pid), *parent, *child;

	s->st.proc_events++;
	switch (r->event) {
	case TB_PROC_FORK:
		parent = target_of(s, r->ppid);
		if (!r->followed || !parent)
			return;
		child = calloc(1, sizeof(*child));
		if (child && !target_fork(parent, (pid_t)r->pid, child) && !add_target(s, child))
			return;
		free(child);
		return;
	case TB_PROC_EXEC:
		if (s->child == (int32_t)r->pid)
			s->child_execd = 1;
		if (t)
			end_target(s, t);
		discover_later(s, (int32_t)r->pid, s->child == (int32_t)r->pid);
		return;
	case TB_PROC_EXIT:
		if (t)
			end_target(s, t);
		return;
	}
}

/*
 * Read a new stack's code objects right away: its samples may be counted
 * in the kernel for a while, and a short-lived code object can be gone by
 * the time they are read.
 */
static void new_stack(struct session *s, const struct tb_stack *rec)
{
	struct target *t = target_of(s, rec->pid);

	if (t)
		symbols_resolve(&s->sym, t, rec->frames, rec->depth);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct tb_sample *smp = data;
	uint32_t kind;
	int ret;

	if (size < sizeof(kind)) {
		s->st.bad_records++;
		return 0;
	}
	memcpy(&kind, data, sizeof(kind));
	if (kind == TB_REC_SAMPLE && size >= sizeof(struct tb_sample)) {
		s->st.received++;
		add_sample(s, smp->pid, smp->tid, smp->stack_id, smp->flags, smp->kstack,
			   smp->weight);
	} else if (kind == TB_REC_STACK) {
		s->st.stacks++;
		ret = profile_add_stack(&s->prof, data, size);
		if (ret < 0)
			s->st.bad_records++;
		else if (ret > 0)
			new_stack(s, data);
	} else if (kind == TB_REC_PROC && size >= sizeof(struct tb_proc)) {
		on_proc(s, data);
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
		const struct stack_frames *sf = profile_stack(&s->prof, s->pend[i].k.stack_id);

		if (sf)
			count_sample(s, &s->pend[i].k, s->pend[i].weight, sf);
		else if (final)
			s->st.missing_stack += s->pend[i].weight;
		else
			s->pend[j++] = s->pend[i];
	}
	s->npend = j;
}


int session_open_targets(struct session *s, const struct options *o)
{
	char err[512];
	int i, ret;

	memset(s, 0, sizeof(*s));
	s->opt = o;
	s->epfd = s->sigfd = s->child_pidfd = s->child_gate = s->extra_fd = -1;
	if (hmap_init(&s->by_pid, sizeof(uint32_t)) || profile_init(&s->prof) ||
	    symbols_init(&s->sym) || hmap_init(&s->thread_names, sizeof(struct thread_key)) ||
	    hmap_init(&s->refused, sizeof(uint32_t)) || resolved_init(&s->frozen)) {
		tb_error("startup: out of memory (free some memory)");
		return TB_EXIT_RUNTIME;
	}
	for (i = 0; i < o->npids; i++) {
		struct target *t = calloc(1, sizeof(*t));

		if (!t)
			return TB_EXIT_RUNTIME;
		err[0] = 0;
		ret = target_open(o->pids[i], o->layout_flags, t, err, sizeof(err));
		if (ret) {
			target_report(o->pids[i], ret, err[0] ? err : "unknown reason");
			free(t);
			return TB_EXIT_RUNTIME;
		}
		if (add_target(s, t))
			return TB_EXIT_RUNTIME;
	}
	return 0;
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
	if (s->extra_fd >= 0)
		epoll_add(s->epfd, s->extra_fd, EV_EXTRA, EPOLLIN);
	return 0;
}

/*
 * -- CMD: fork now, exec only once sampling is on, so nothing it runs is
 * missed. The child waits on a pipe; its exec is reported by the BPF side.
 */
static int spawn_child(struct session *s)
{
	int gate[2];
	char c;
	pid_t pid;

	if (pipe2(gate, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* Our capabilities are for profiling, not for the command. */
		prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
		signal(SIGPIPE, SIG_DFL);
		close(gate[1]);
		if (read(gate[0], &c, 1) != 1)
			_exit(127);
		execvp(s->opt->cmd[0], s->opt->cmd);
		fprintf(stderr, "tachyon-bpf: %s: %s (check the command)\n", s->opt->cmd[0],
			strerror(errno));
		_exit(127);
	}
	close(gate[0]);
	s->child = pid;
	s->child_gate = gate[1];
	s->child_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (s->child_pidfd >= 0)
		epoll_add(s->epfd, s->child_pidfd, EV_CHILD, EPOLLIN);
	return sampler_watch(&s->sampler, pid, s->opt->subprocesses);
}

static void release_child(struct session *s)
{
	if (s->child_gate < 0)
		return;
	if (write(s->child_gate, "g", 1) != 1)
		tb_warn("%s: could not start the command: %s", s->opt->cmd[0], strerror(errno));
	close(s->child_gate);
	s->child_gate = -1;
}

int session_start(struct session *s)
{
	struct sampler_opts so = {
		.event = s->opt->event, .freq = s->opt->period ? 0 : s->opt->freq,
		.period = s->opt->period, .mode = s->opt->mode,
		.kernel_stacks = s->opt->kernel, .report_all_exec = s->opt->all_python,
		/* Two more reads per sample: only when something uses them. */
		.read_status = s->opt->mode == TB_MODE_GIL || s->opt->gc_frames,
		.kernel_stats = s->opt->stats_path || tb_verbose,
		.btf_path = s->opt->btf_path,
		.on_record = on_record, .ctx = s,
	};
	char err[512];
	uint32_t i;

	if (sampler_open(&s->sampler, &so, err, sizeof(err))) {
		tb_error("BPF: %s", err);
		return TB_EXIT_RUNTIME;
	}
	for (i = 0; i < s->ntargets; i++) {
		if (sampler_add(&s->sampler, s->targets[i]->pid, &s->targets[i]->layout.walk) ||
		    sampler_watch(&s->sampler, s->targets[i]->pid, follow_children(s))) {
			tb_error("BPF: cannot register pid %d: %s (too many processes?)",
				 s->targets[i]->pid, strerror(errno));
			return TB_EXIT_RUNTIME;
		}
	}
	if (setup_loop(s)) {
		tb_error("event loop: %s (out of file descriptors?)", strerror(errno));
		return TB_EXIT_RUNTIME;
	}
	if (s->opt->cmd && spawn_child(s)) {
		tb_error("%s: cannot start the command: %s", s->opt->cmd[0], strerror(errno));
		return TB_EXIT_RUNTIME;
	}
	if (sampler_attach(&s->sampler, &so, err, sizeof(err))) {
		tb_error("perf events: %s", err);
		return TB_EXIT_RUNTIME;
	}
	s->st.ncpus = s->sampler.nlinks;
	if (s->opt->all_python)
		scan_all(s);
	else if (s->opt->subprocesses && s->opt->npids)
		adopt_descendants(s);
	release_child(s);
	return 0;
}

static void pid_exited(struct session *s, uint32_t idx)
{
	if (idx >= s->ntargets || !s->targets[idx] || s->targets[idx]->exited)
		return;
	/* Drain first: its last samples must still find it. */
	sampler_consume(&s->sampler);
	flush_pending(s, 0);
	/* The drain may have carried its exit record, which ended it already. */
	if (!s->targets[idx] || s->targets[idx]->exited)
		return;
	sampler_del(&s->sampler, s->targets[idx]->pid);
	tb_debug("pid %d exited", s->targets[idx]->pid);
	end_target(s, s->targets[idx]);
}

static void child_exited(struct session *s)
{
	if (waitpid(s->child, &s->child_status, WNOHANG) <= 0)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->child_pidfd, NULL);
	tb_debug("command exited with status %d", s->child_status);
	s->stop = STOP_TARGETS_EXITED;
	sampler_consume(&s->sampler);	/* its exec event, if it was quick */
	if (!s->child_execd)
		s->stop = STOP_ERROR;	/* exec failed: the child said why */
	else if (!s->st.processes)
		tb_warn("%s: not a Python process (or it exited before its interpreter started); nothing profiled",
			s->opt->cmd[0]);
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
			s->on_extra(s, s->tick_ctx);
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
 * Sleep until the next thing due (`due`: the loop's own timers) or an
 * event: each wake-up costs two context switches, so the loop wakes only
 * when there is work (a few times a second when samples are counted in
 * the kernel).
 */
static int poll_timeout(const struct session *s, double start, double due)
{
	int ms = s->ndisc ? DISCOVER_MS : POLL_MS;
	double now = mono_now(), left;

	if (s->tick && s->tick_interval * 1000 < ms)
		ms = (int)(s->tick_interval * 1000) + 1;
	if (s->opt->all_python && s->next_scan < due)
		due = s->next_scan;
	if (s->opt->duration && start + s->opt->duration < due)
		due = start + s->opt->duration;
	left = due - now;
	if (left <= 0)
		return 0;
	return left * 1000 < ms ? (int)(left * 1000) + 1 : ms;
}

static double min2(double a, double b)
{
	return a < b ? a : b;
}

/* Things that need a running interpreter: retried until they work. */
static void refresh_targets(struct session *s)
{
	uint32_t i;

	for (i = 0; i < s->ntargets; i++) {
		struct target *t = s->targets[i];

		if (t && !t->exited && target_refresh(t))
			sampler_add(&s->sampler, t->pid, &t->layout.walk);
	}
}

static void check_stop(struct session *s, double start)
{
	if (s->opt->duration && mono_now() - start >= s->opt->duration)
		s->stop = STOP_DURATION;
	/* -p: when every target (and any process being set up) is gone. */
	if (!s->opt->all_python && !s->opt->cmd && !s->alive && !s->ndisc)
		s->stop = STOP_TARGETS_EXITED;
}

/* Wall mode: threads still blocked at the end get their time too. */
static void credit_offcpu(struct session *s)
{
	struct offcpu_left *v;
	int i, n;

	if (s->opt->mode != TB_MODE_WALL)
		return;
	n = sampler_offcpu_left(&s->sampler, &v);
	for (i = 0; i < n; i++) {
		if (!v[i].periods)
			continue;
		s->st.offcpu_final += v[i].periods;
		add_sample(s, v[i].pid, v[i].tid, v[i].stack_id, v[i].flags, v[i].kstack,
			   v[i].periods);
	}
	free(v);
}

void session_run(struct session *s)
{
	struct epoll_event ev[16];
	double start = mono_now(), last_house = start, last_tick = start, last_compact = start;
	int n, i;

	s->st.start_unix = wall_now();
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
		for (i = 0; i < n; i++)
			handle(s, &ev[i]);
		sampler_consume(&s->sampler);
		flush_pending(s, 0);
		if (s->ndisc)
			run_discovery(s);
		if (s->opt->all_python && mono_now() >= s->next_scan)
			scan_all(s);
		if (mono_now() - last_house >= HOUSE_S) {
			refresh_targets(s);
			read_counts(s);
			last_house = mono_now();
		}
		if (mono_now() - last_compact >= COMPACT_S) {
			compact(s);
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
	s->st.seconds = mono_now() - start;
	read_counts(s);
	sampler_consume(&s->sampler);
	credit_offcpu(s);
	flush_pending(s, 1);
	sampler_counters(&s->sampler, s->st.bpf);
	sampler_prog_stats(&s->sampler, &s->st.run_ns, &s->st.run_cnt);
}

static const char *thread_name(void *ctx, uint32_t target, uint32_t tid)
{
	struct session *s = ctx;
	struct thread_key k = { target, tid };
	void **slot = hmap_get(&s->thread_names, &k);

	return slot ? *slot : NULL;
}

static int kernel_frames(void *ctx, int32_t kstack, const char **names, int max)
{
	struct session *s = ctx;
	uint64_t ips[127];
	int n, i, j;

	if (!s->ksyms_loaded) {
		s->ksyms_loaded = 1;
		if (ksyms_load(&s->ksyms, "/proc/kallsyms"))
			tb_warn("--kernel: /proc/kallsyms has no addresses; kernel frames show as [unknown]");
	}
	n = sampler_kstack(&s->sampler, kstack, ips, max < 127 ? max : 127);
	for (i = 0, j = 0; i < n; i++) {
		const char *name = ksyms_find(&s->ksyms, ips[i]);

		/* Innermost first: our own program and the trampoline calling it. */
		if (!j && name && (!strncmp(name, "bpf_", 4) || !strncmp(name, "__bpf_", 6)))
			continue;
		names[j++] = name ? name : "[unknown]";
	}
	return j;
}

int session_resolve(struct session *s, struct resolved *r)
{
	struct resolved meta = *r;	/* what the caller set: event, times */
	struct resolve_opts ro;

	resolve_opts_of(s, &ro);
	if (resolved_copy(&s->frozen, r))
		return -1;
	r->event = meta.event;
	r->freq = meta.freq;
	r->start_unix = meta.start_unix;
	r->duration_s = meta.duration_s;
	return profile_resolve(&s->prof, s->targets, s->ntargets, s->procs, &s->sym, &ro, r);
}

void session_close(struct session *s)
{
	size_t it = 0;
	uint32_t i;
	void **val;

	if (s->child > 0 && !s->stop)
		kill(s->child, SIGTERM);
	sampler_close(&s->sampler);
	for (i = 0; i < s->ntargets; i++) {
		if (!s->targets[i])
			continue;
		target_close(s->targets[i]);
		free(s->targets[i]);
	}
	free(s->targets);
	free(s->procs);
	resolved_free(&s->frozen);
	while (hmap_next(&s->thread_names, &it, NULL, &val))
		free(*val);
	hmap_free(&s->thread_names);
	hmap_free(&s->refused);
	symbols_free(&s->sym);
	profile_free(&s->prof);
	hmap_free(&s->by_pid);
	ksyms_free(&s->ksyms);
	free(s->pend);
	free(s->disc);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
	if (s->child_pidfd >= 0)
		close(s->child_pidfd);
}
