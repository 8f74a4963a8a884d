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
#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "dump.h"
#include "errors.h"
#include "pythreads.h"
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
#define CHILD_GRACE_MS	2000	/* -- CMD: from SIGTERM to SIGKILL at the end */
#define STATUS_FAST_S	1.0	/* gil mode: how long a new target's GIL is looked for often */
#define EV_RING		(1ULL << 62)
#define EV_SIGNAL	(2ULL << 62)
#define EV_STDOUT	(3ULL << 62)
#define EV_CHILD	((3ULL << 62) | 1)
#define EV_EXTRA	((3ULL << 62) | 2)
#define EV_KIND(x)	((x) & (3ULL << 62))

/* When to look again at a process that is not (yet) a Python we can read. */
static const double retry_after[] = { 0.002, 0.01, 0.03, 0.1, 0.3, 1.0 };
#define MAX_ATTEMPTS (int)(sizeof(retry_after) / sizeof(retry_after[0]))

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

static void seed_offcpu(struct session *s, struct target *t, uint64_t since);

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
	if (s->start_ns)
		seed_offcpu(s, t, sampler_now_ns());
	if (!t->layout.walk.addr.gil_addr) {
		s->status_pending = 1;
		s->status_fast_until = mono_now() + STATUS_FAST_S;
	}
	return 0;
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

	if (s->opt->mode != TB_MODE_WALL || t->layout.walk.addr.pidns_ino)
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
	/* The command itself: if nothing else is profiled, this is the
	 * run's closing error (stats_explain_empty), said once. */
	if (added && pid == s->child && !s->refused_cmd[0])
		snprintf(s->refused_cmd, sizeof(s->refused_cmd), "%s", why);
	else if (added)
		tb_warn("pid %d: not profiled: %s", pid, why);
}

const char *session_refused_command(const struct session *s)
{
	return s->refused_cmd[0] ? s->refused_cmd : NULL;
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

static void adopt_one(void *ctx, pid_t pid)
{
	struct session *s = ctx;

	if (target_of(s, (uint32_t)pid))
		return;
	sampler_watch(&s->sampler, pid, 1);
	if (sampler_follow(&s->sampler, &s->so, pid))
		tb_debug("pid %d: no per-thread events: %s", pid, strerror(errno));
	discover_later(s, (int32_t)pid, 0);
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
		struct target *t = id < s->ntargets ? s->targets[id] : NULL;
		int n;

		if (!t || (!force && now < t->names_next))
			continue;
		n = pythreads_read(t, &s->pynames, th, NAMES_MAX);
		t->names_next = now + NAMES_EVERY_S;
		name_target(s, t, th, n > 0 ? n : 0);
	}
	for (i = j = 0; i < s->nunnamed; i++) {
		uint32_t id = s->unnamed[i].target;

		if (id < s->ntargets && s->targets[id])
			s->unnamed[j++] = s->unnamed[i];
	}
	s->nunnamed = j;
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


/* -s: a non-Python process whose Python descendants are profiled. */
static int add_root(struct session *s, pid_t pid)
{
	struct root *g = realloc(s->roots, (s->nroots + 1) * sizeof(*g));

	if (!g) {
		tb_error("startup: out of memory (free some memory)");
		return -1;
	}
	s->roots = g;
	s->roots[s->nroots].pid = pid;
	s->roots[s->nroots++].start_time = proc_start_time(pid);
	return 0;
}

/* Is a non-Python root (-s) still running? Its descendants may yet come. */
static int roots_alive(const struct session *s)
{
	size_t i;

	for (i = 0; i < s->nroots; i++)
		if (s->roots[i].start_time && proc_start_time(s->roots[i].pid) == s->roots[i].start_time)
			return 1;
	return 0;
}

/* Once each descendant found at the start has been looked at: if none is
 * Python, say so once (the run goes on for those to come). */
static void note_roots(struct session *s)
{
	size_t i;

	if (s->roots_said)
		return;
	for (i = 0; i < s->ndisc; i++)
		if (!s->disc[i].attempts)
			return;
	s->roots_said = 1;
	for (i = 0; i < s->nroots && !s->alive; i++)
		tb_info("pid %d: not a Python process, nor any of its descendants yet: profiling the Python processes it starts (-s)",
			s->roots[i].pid);
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
	    pythreads_cache_init(&s->pynames) ||
	    hmap_init(&s->refused, sizeof(uint32_t)) || resolved_init(&s->frozen) ||
	    hmap_init(&s->limbo, sizeof(uint64_t))) {
		tb_error("startup: out of memory (free some memory)");
		return TB_EXIT_RUNTIME;
	}
	for (i = 0; i < o->npids; i++) {
		struct target *t = calloc(1, sizeof(*t));

		if (!t)
			return TB_EXIT_RUNTIME;
		err[0] = 0;
		ret = target_open(o->pids[i], o->layout_flags, t, err, sizeof(err));
		if (ret == TARGET_NOT_PYTHON && o->subprocesses) {
			free(t);
			if (add_root(s, o->pids[i]))
				return TB_EXIT_RUNTIME;
			continue;	/* a shell, a supervisor: its descendants count */
		}
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
		/* Our stdout carries the profile: the command's output must not
		 * land in it (`-- python3 app.py > out.folded`). */
		if (!s->opt->output && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(127);
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
	s->event_pids[s->nevent_pids++] = s->child;
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

	if (sampler_open(&s->sampler, &so, err, sizeof(err))) {
		tb_error("BPF: %s", err);
		return TB_EXIT_RUNTIME;
	}
	for (i = 0; i < s->nroots; i++)
		sampler_watch(&s->sampler, s->roots[i].pid, 1);
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
	task_scope(s, &so);
	if (sampler_attach(&s->sampler, &so, err, sizeof(err))) {
		tb_error("perf events: %s", err);
		return TB_EXIT_RUNTIME;
	}
	s->so = so;
	s->st.ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (s->opt->all_python)
		scan_all(s);
	else if (s->opt->subprocesses && s->opt->npids)
		adopt_descendants(s);
	sampler_setup_done(&s->sampler);
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
	s->child_reaped = 1;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->child_pidfd, NULL);
	tb_debug("command exited with status %d", s->child_status);
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
	int ms = s->ndisc || status_soon(s, now) ? DISCOVER_MS : POLL_MS;

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

	s->status_pending = 0;
	for (i = 0; i < s->ntargets; i++) {
		struct target *t = s->targets[i];

		if (!t || t->exited)
			continue;
		if (target_refresh(t))
			sampler_add(&s->sampler, t->pid, &t->layout.walk);
		s->status_pending |= !t->layout.walk.addr.gil_addr;
	}
}

static void check_stop(struct session *s, double start)
{
	if (s->opt->duration && mono_now() - start >= s->opt->duration)
		s->stop = STOP_DURATION;
	/* -p: when every target (and any process being set up) is gone. */
	if (!s->opt->all_python && !s->opt->cmd && !s->alive && !s->ndisc && !roots_alive(s))
		s->stop = STOP_TARGETS_EXITED;
}

/* Has the child exited within ms milliseconds? (Reaps it.) */
static int child_gone(struct session *s, int ms)
{
	struct pollfd p = { .fd = s->child_pidfd, .events = POLLIN };

	if (s->child_pidfd >= 0)
		poll(&p, 1, ms);
	else
		usleep(ms * 1000);
	if (waitpid(s->child, &s->child_status, WNOHANG) != s->child)
		return 0;
	s->child_reaped = 1;
	return 1;
}

/*
 * -- CMD outlived the run (-d, a signal): end it as py-spy does, SIGTERM
 * and SIGKILL after a grace period, so that it does not linger, re-parented
 * to init, holding the caller's terminal or pipes. --keep-running leaves
 * it be.
 */
static void end_child(struct session *s)
{
	if (s->child <= 0 || s->child_reaped || s->opt->keep_running)
		return;
	tb_debug("the run ended before the command: sending it SIGTERM");
	if (kill(s->child, SIGTERM) || child_gone(s, CHILD_GRACE_MS))
		return;
	tb_warn("%s (pid %d) did not exit %d s after SIGTERM: sending SIGKILL",
		s->opt->cmd[0], s->child, CHILD_GRACE_MS / 1000);
	kill(s->child, SIGKILL);
	child_gone(s, CHILD_GRACE_MS);
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
	uint32_t t;
	int n, i;

	s->start_ns = sampler_now_ns();
	start = last_house = last_tick = last_compact = s->start_ns / 1e9;
	s->st.start_unix = wall_now();
	/* Wall mode: threads already blocked count from now. */
	for (t = 0; t < s->ntargets; t++)
		if (s->targets[t] && !s->targets[t]->exited)
			seed_offcpu(s, s->targets[t], s->start_ns);
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
		for (i = 0; i < n; i++)
			handle(s, &ev[i]);
		sampler_consume(&s->sampler);
		flush_pending(s, 0);
		name_threads(s, 0);
		if (s->ndisc)
			run_discovery(s);
		if (s->nroots)
			note_roots(s);
		if (s->opt->all_python && mono_now() >= s->next_scan)
			scan_all(s);
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
	end_child(s);
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
	uint64_t ips[TB_KSTACK_DEPTH];
	int n, i, j;

	if (!s->ksyms_loaded) {
		s->ksyms_loaded = 1;
		if (ksyms_load(&s->ksyms, "/proc/kallsyms"))
			tb_warn("--kernel: /proc/kallsyms has no addresses; kernel frames show as [unknown]");
	}
	n = sampler_kstack(&s->sampler, kstack, ips, max < TB_KSTACK_DEPTH ? max : TB_KSTACK_DEPTH);
	for (i = 0, j = 0; i < n; i++) {
		const char *name = ksyms_find(&s->ksyms, ips[i]);

		/* A tick sample's stack starts in the timer interrupt: what
		 * the thread was doing is under the interrupt's entry. */
		if (s->opt->event->tick && name && !strncmp(name, "asm_sysvec_", 11)) {
			j = 0;
			continue;
		}
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
	name_threads(s, 1);
	if (resolved_copy(&s->frozen, r))
		return -1;
	r->event = meta.event;
	r->mode = meta.mode;
	r->rate_text = meta.rate_text;
	r->rate = meta.rate;
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
	free(s->unnamed);
	pythreads_cache_free(&s->pynames);
	hmap_free(&s->refused);
	hmap_free(&s->limbo);
	symbols_free(&s->sym);
	profile_free(&s->prof);
	hmap_free(&s->by_pid);
	ksyms_free(&s->ksyms);
	free(s->pend);
	free(s->disc);
	free(s->roots);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
	if (s->child_pidfd >= 0)
		close(s->child_pidfd);
}
