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
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "child.h"
#include "clock.h"
#include "dump.h"
#include "errors.h"
#include "pythreads.h"
#include "hmap.h"
#include "ksyms.h"
#include "profile.h"
#include "sampler.h"
#include "session.h"
#include "symbols.h"
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

static int epoll_add(int epfd, int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

struct thread_key {
	uint32_t target;
	uint32_t tid;
};

struct pend_sample {
	struct agg_key k;
	uint64_t weight;
};

struct session {
	const struct options *opt;
	struct sampler sampler;
	struct profile prof;
	struct symbols sym;
	struct targets *ts;		/* the registry, discovery, -s roots */
	struct resolved frozen;		/* samples of processes that are gone */
	struct hmap thread_names;	/* {target, tid} -> char *, NULL until named */
	struct thread_key *unnamed;	/* threads seen, not named yet */
	struct pythreads_cache pynames;	/* Thread objects read this compaction period */
	size_t nunnamed, unnamed_cap;
	struct hmap limbo;		/* stack ids no sample uses, kept for a thread off CPU */
	struct pend_sample *pend;	/* samples waiting for their stack */
	size_t npend, pend_cap;
	struct kstack_namer kstacks;	/* --kernel frame names */
	struct child *child;		/* -- CMD; NULL if none */
	struct sampler_opts so;		/* how the sampler was set up */
	pid_t event_pids[CLI_MAX_PIDS];	/* per-task events: the processes named */
	int nevent_pids;
	int child_execd;		/* its exec happened (the command could be run) */
	int epfd, sigfd;
	uint64_t start_ns;		/* the run's start (CLOCK_MONOTONIC); 0 before */
	int status_pending;		/* a target's GIL address is still unknown */
	double status_fast_until;	/* ... look for it often until then */
	enum stop_reason stop;
	int signo;
	struct session_stats st;
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

static void seed_offcpu(struct session *s, struct target *t, uint64_t since);

/* The registry took a new target: sample it. */
static void target_added(void *ctx, struct target *t)
{
	struct session *s = ctx;

	s->st.processes++;
	if (s->epfd >= 0 && t->pidfd >= 0)
		epoll_add(s->epfd, t->pidfd, t->id, EPOLLIN);
	if (s->sampler.skel) {
		sampler_add(&s->sampler, t->pid, &t->layout.walk);
		sampler_watch(&s->sampler, t->pid, follow_children(s));
	}
	tb_debug("pid %d: %s, Python %s", t->pid, t->name, t->version);
	if (s->start_ns)
		seed_offcpu(s, t, sampler_now_ns());
	if (!t->layout.walk.gil_addr) {
		s->status_pending = 1;
		s->status_fast_until = mono_now() + STATUS_FAST_S;
	}
}

static const char *thread_name(void *ctx, uint32_t target, uint32_t tid);
static int kernel_frames(void *ctx, int32_t kstack, const char **names, int max);
static void flush_pending(struct session *s, int final);
static void new_stack(struct session *s, const struct tb_stack *rec);

/* A thread off CPU now: one we must credit ourselves (see seed_offcpu). */
static int blocked(pid_t pid, uint64_t tid)
{
	char st = proc_thread_state(pid, (pid_t)tid);

	return st && st != 'R' && st != 'Z' && st != '?';
}

/*
 * Wall mode: a thread blocked since before t became a target does not
 * leave a CPU (the BPF side's cue) until it wakes, maybe never. Walk its
 * stack here, as the BPF side would, and enter it in the `offcpu` map as
 * away since `since`: the BPF side credits it at switch-in, the end of
 * the run if it never wakes. Threads in another pid namespace are left
 * to the BPF side: the map is keyed by our tids, the walk gives theirs.
 */
static void seed_offcpu(struct session *s, struct target *t, uint64_t since)
{
	static struct dump_thread th[DUMP_MAX_THREADS];
	static struct tb_stack rec;
	uint32_t flags;
	int n, i;

	if (s->opt->mode != TB_MODE_WALL || t->layout.walk.pidns_ino)
		return;
	n = dump_threads(t, th, DUMP_MAX_THREADS);
	for (i = 0; i < n; i++) {
		if (!blocked(t->pid, th[i].tid) || dump_stack(t, th[i].tstate, &rec, &flags))
			continue;
		if (profile_add_stack(&s->prof, &rec, TB_STACK_HDR_SIZE +
				      rec.depth * sizeof(rec.frames[0])) > 0) {
			new_stack(s, &rec);
			hmap_put(&s->limbo, &rec.stack_id, NULL);	/* no sample uses it yet */
		}
		if (sampler_offcpu_seed(&s->sampler, (uint32_t)t->pid, (uint32_t)th[i].tid,
					rec.stack_id, flags, since))
			continue;
		/* It woke while we walked, before the entry was in: no switch-in
		 * will clear it, so it would count as away while it runs. */
		if (!blocked(t->pid, th[i].tid)) {
			sampler_offcpu_unseed(&s->sampler, (uint32_t)th[i].tid, since);
			continue;
		}
		s->st.offcpu_seeded++;
	}
}

static void name_threads(struct session *s, int force);

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
		.line_mode = s->opt->line_mode,
		.gc_frames = s->opt->gc_frames,
		/* --pids asks for the pid in a root frame: it needs the frame. */
		.proc_root = s->opt->all_python || s->opt->subprocesses || s->opt->show_pids,
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
 * Free the frames of these stacks (no sample uses them), except those a
 * thread still off CPU names (wall mode): its credit, at switch-in or at
 * the end, names the stack, and the BPF side sends no frames then. Those
 * wait in `limbo` for the next compaction. Call only once the BPF side
 * has been told to send these stacks again, and with no ring buffer read
 * in between: a thread leaving the CPU since then sends its stack anew.
 */
static void release_stacks(struct session *s, const uint64_t *ids, size_t n)
{
	struct hmap away = {0};
	int wall = s->opt->mode == TB_MODE_WALL && s->sampler.skel;
	size_t i;

	if (wall && (hmap_init(&away, sizeof(uint64_t)) ||
		     sampler_offcpu_away(&s->sampler, &away))) {
		hmap_free(&away);
		for (i = 0; i < n; i++)
			hmap_put(&s->limbo, &ids[i], NULL);	/* keep them all */
		return;
	}
	for (i = 0; i < n; i++) {
		if (wall && hmap_get(&away, &ids[i]) && profile_stack(&s->prof, ids[i])) {
			hmap_put(&s->limbo, &ids[i], NULL);
			continue;
		}
		hmap_del(&s->limbo, &ids[i]);
		profile_release(&s->prof, ids[i]);
	}
	hmap_free(&away);
}

/* Compaction: every stack in limbo is looked at again. */
static void release_limbo(struct session *s)
{
	uint64_t *ids = malloc((s->limbo.len + 1) * sizeof(*ids));
	const uint64_t *k;
	size_t it = 0, n = 0;

	if (!ids)
		return;
	while (hmap_next(&s->limbo, &it, (const void **)&k, NULL))
		ids[n++] = *k;
	release_stacks(s, ids, n);
	free(ids);
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
	size_t ndead, i;

	resolve_opts_of(s, &ro);
	name_threads(s, 1);
	if (profile_freeze(&s->prof, t, &s->sym, &ro, &s->frozen, &dead, &ndead))
		tb_warn("pid %d: out of memory while keeping its samples", t->pid);
	if (forget_each) {
		if (s->sampler.skel)
			sampler_forget_stacks(&s->sampler, dead, ndead);
		release_stacks(s, dead, ndead);
	} else {
		/* Compaction: released together once the BPF side forgot all. */
		for (i = 0; i < ndead; i++)
			hmap_put(&s->limbo, &dead[i], NULL);
	}
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
	targets_drop(s->ts, t);
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
	for (i = 0; i < targets_count(s->ts); i++) {
		struct target *t = targets_get(s->ts, i);

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
	release_limbo(s);
	/* Thread names are read again from now on: renames show. */
	pythreads_cache_free(&s->pynames);
	if (pythreads_cache_init(&s->pynames))
		tb_warn("out of memory: thread names are read again for every new thread");
	symbols_next_epoch(&s->sym);
	s->st.compactions++;
	tb_debug("compaction %" PRIu64 ": %zu frozen rows, %zu frames; live: %zu rows, %zu stacks, %zu code objects, %zu pending samples",
		 s->st.compactions, s->frozen.nsamples, s->frozen.nframes, s->prof.counts.len,
		 s->prof.stacks.len, s->sym.codes.len, s->npend);
}

/* This incarnation is over (exit or exec); its samples stay in the profile. */
static void end_target(struct session *s, struct target *t)
{
	if (t->exited)
		return;
	/* Its last samples may still be counted in the kernel. */
	read_counts(s);
	if (t->pidfd >= 0)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, t->pidfd, NULL);
	targets_ended(s->ts, t);
	/* Samples still waiting for their stack would need it. */
	flush_pending(s, 0);
	if (!pending_for(s, t->id))
		freeze_target(s, t);
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

/*
 * A thread seen for the first time since its process's last compaction:
 * named later, in one read of threading's registry for all the process's
 * new threads (name_threads), while it is most likely still alive.
 */
static void note_thread(struct session *s, const struct agg_key *k)
{
	struct thread_key tk = { k->target, k->tid };
	void **slot;
	int added;

	slot = hmap_put(&s->thread_names, &tk, &added);
	if (!slot || !added)
		return;
	if (s->nunnamed == s->unnamed_cap) {
		size_t cap = s->unnamed_cap ? s->unnamed_cap * 2 : 64;
		struct thread_key *g = realloc(s->unnamed, cap * sizeof(*g));

		if (!g)
			return;
		s->unnamed = g;
		s->unnamed_cap = cap;
	}
	s->unnamed[s->nunnamed++] = tk;
}

#define NAMES_EVERY_S	0.2	/* threading's registry: at most this often per process */
#define NAMES_MAX	4096

/* Name every waiting thread of one target: Python's name, else comm. */
static void name_target(struct session *s, struct target *t, const struct pythread *th, int n)
{
	size_t i;

	for (i = 0; i < s->nunnamed; i++) {
		struct thread_key *k = &s->unnamed[i];
		const char *py;
		char comm[32];
		void **slot;

		if (k->target != t->id)
			continue;
		slot = hmap_get(&s->thread_names, k);
		py = pythreads_find(th, n, k->tid);
		if (slot && !*slot) {
			if (py)
				*slot = strdup(py);
			else if (!proc_comm(t->pid, (pid_t)k->tid, comm, sizeof(comm)))
				*slot = strdup(comm);
		}
		k->target = UINT32_MAX;	/* done */
	}
}

/*
 * Read the names of threads seen since the last call: one read of
 * threading._active per process with new threads, at most every
 * NAMES_EVERY_S unless `force` (before the rows are folded or written).
 */
static void name_threads(struct session *s, int force)
{
	static struct pythread th[NAMES_MAX];
	double now = mono_now();
	size_t i, j;

	for (i = 0; i < s->nunnamed; i++) {
		uint32_t id = s->unnamed[i].target;
		struct target *t = targets_get(s->ts, id);
		int n;

		if (!t || (!force && now < t->names_next))
			continue;
		n = pythreads_read(t, &s->pynames, th, NAMES_MAX);
		t->names_next = now + NAMES_EVERY_S;
		name_target(s, t, th, n > 0 ? n : 0);
	}
	for (i = j = 0; i < s->nunnamed; i++) {
		uint32_t id = s->unnamed[i].target;

		if (targets_get(s->ts, id))
			s->unnamed[j++] = s->unnamed[i];
	}
	s->nunnamed = j;
}

/* Count a sample whose frames we have; read new code objects right away,
 * while the process (and the code object) is still alive. */
static void count_sample(struct session *s, const struct agg_key *k, uint64_t weight,
			 const struct stack_frames *sf)
{
	struct target *t = targets_get(s->ts, k->target);

	if (!t) {
		s->st.unknown_pid += weight;	/* frozen before its stack came */
		return;
	}
	if (profile_count(&s->prof, k, weight) != 1)
		return;
	symbols_resolve(&s->sym, t, sf->frames, sf->depth);
	note_thread(s, k);
}

static void add_sample(struct session *s, uint32_t pid, uint32_t tid, uint64_t stack_id,
		       uint32_t flags, int32_t kstack, uint64_t weight)
{
	const struct stack_frames *sf;
	struct target *t = targets_by_pid(s->ts, pid);
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
		targets_discover_later(s->ts, (int32_t)r->pid, command_pid(s) == (int32_t)r->pid);
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
	struct target *t = targets_by_pid(s->ts, rec->pid);

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
	if (!s->ts || profile_init(&s->prof) ||
	    symbols_init(&s->sym) || hmap_init(&s->thread_names, sizeof(struct thread_key)) ||
	    pythreads_cache_init(&s->pynames) || resolved_init(&s->frozen) ||
	    hmap_init(&s->limbo, sizeof(uint64_t))) {
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
		return -1;
	if (epoll_add(s->epfd, s->sigfd, EV_SIGNAL, EPOLLIN) ||
	    epoll_add(s->epfd, sampler_rb_fd(&s->sampler), EV_RING, EPOLLIN))
		return -1;
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
		return -errno;
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
		.kernel_stacks = s->opt->kernel, .report_all_exec = s->opt->all_python,
		/* Two more reads per sample: only when something uses them. */
		.read_status = s->opt->mode == TB_MODE_GIL || s->opt->gc_frames,
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
		const struct target *t = targets_get(s->ts, i);

		ret = sampler_add(&s->sampler, t->pid, &t->layout.walk);
		if (!ret)
			ret = sampler_watch(&s->sampler, t->pid, follow_children(s));
		if (ret) {
			tb_error("BPF: cannot register pid %d: %s (too many processes?)",
				 t->pid, strerror(errno));
			return -errno;
		}
	}
	if (setup_loop(s)) {
		tb_error("event loop: %s (out of file descriptors?)", strerror(errno));
		return -errno;
	}
	if (s->opt->cmd && spawn_child(s)) {
		tb_error("%s: cannot start the command: %s", s->opt->cmd[0], strerror(errno));
		return -errno;
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
	flush_pending(s, 0);
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

static double min2(double a, double b)
{
	return a < b ? a : b;
}

static void target_changed(void *ctx, struct target *t)
{
	struct session *s = ctx;

	sampler_add(&s->sampler, t->pid, &t->layout.walk);
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

/* Wall mode: threads still blocked at the end get their time too. */
static void credit_offcpu(struct session *s, uint64_t end_ns)
{
	struct offcpu_left *v;
	int i, n;

	if (s->opt->mode != TB_MODE_WALL)
		return;
	n = sampler_offcpu_left(&s->sampler, end_ns, &v);
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
	double start, last_house, last_tick, last_compact;
	uint64_t end_ns;
	uint32_t i;
	int n;

	s->start_ns = sampler_now_ns();
	start = last_house = last_tick = last_compact = s->start_ns / 1e9;
	s->st.start_unix = wall_now();
	/* Wall mode: threads already blocked count from now. */
	for (i = 0; i < targets_count(s->ts); i++) {
		struct target *t = targets_get(s->ts, i);

		if (t && !t->exited)
			seed_offcpu(s, t, s->start_ns);
	}
	if (s->opt->mode == TB_MODE_WALL)
		tb_debug("wall mode: %" PRIu64 " threads found blocked, walked in %.1f ms",
			 s->st.offcpu_seeded, (sampler_now_ns() - s->start_ns) / 1e6);
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
		for (i = 0; i < (uint32_t)n; i++)
			handle(s, &ev[i]);
		sampler_consume(&s->sampler);
		flush_pending(s, 0);
		name_threads(s, 0);
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
	end_ns = sampler_now_ns();	/* the end of the run, for every count */
	s->st.seconds = (end_ns - s->start_ns) / 1e9;
	read_counts(s);
	sampler_consume(&s->sampler);
	credit_offcpu(s, end_ns);
	flush_pending(s, 1);
	sampler_counters(&s->sampler, s->st.bpf);
	sampler_prog_stats(&s->sampler, &s->st.run_ns, &s->st.run_cnt);
	/* -- CMD outlived the run (-d, a signal); --keep-running leaves it be. */
	if (s->child && !s->opt->keep_running)
		child_end(s->child);
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
	int n;

	n = sampler_kstack(&s->sampler, kstack, ips, max < 127 ? max : 127);
	s->kstacks.tick = s->opt->event->tick;
	return kstack_names(&s->kstacks, ips, n, names);
}

int session_resolve(struct session *s, struct resolved *r)
{
	struct resolved meta = *r;	/* what the caller set: event, times */
	struct resolve_opts ro;

	resolve_opts_of(s, &ro);
	name_threads(s, 1);
	if (resolved_copy(&s->frozen, r))
		return -1;
	r->event = meta.event;
	r->mode = meta.mode;
	r->rate_text = meta.rate_text;
	r->rate = meta.rate;
	r->start_unix = meta.start_unix;
	r->duration_s = meta.duration_s;
	return profile_resolve(&s->prof, targets_all(s->ts), targets_count(s->ts),
			       targets_procs(s->ts), &s->sym, &ro, r);
}

void session_free(struct session *s)
{
	size_t it = 0;
	void **val;

	if (!s)
		return;
	if (s->child && !s->stop)
		kill(child_pid(s->child), SIGTERM);
	sampler_close(&s->sampler);
	targets_free(s->ts);
	resolved_free(&s->frozen);
	while (hmap_next(&s->thread_names, &it, NULL, &val))
		free(*val);
	hmap_free(&s->thread_names);
	free(s->unnamed);
	pythreads_cache_free(&s->pynames);
	hmap_free(&s->limbo);
	symbols_free(&s->sym);
	profile_free(&s->prof);
	ksyms_free(&s->kstacks.ksyms);
	free(s->pend);
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
	*v = (struct session_view){
		.opt = s->opt, .stop = s->stop, .st = s->st,
		.sym = { .lookups = s->sym.lookups, .reads = s->sym.reads,
			 .failures = s->sym.failures, .evicted = s->sym.evicted,
			 .cached = s->sym.codes.len },
		.samples = s->prof.samples,
		.alive = targets_alive(s->ts), .ntargets = targets_count(s->ts),
		.per_task = s->sampler.per_task, .task_events = s->sampler.task_events,
		.refused_command = targets_refused_command(s->ts),
	};
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
