// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Sample ingest: the ring buffer's sample and stack records, the counts
 * read from the kernel, samples waiting for their stack, thread names,
 * off-CPU credit (wall mode), compaction (memory stays flat however long
 * the run), and the resolved profile at the end. See ingest.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "util.h"
#include "dump.h"
#include "errors.h"
#include "exctypes.h"
#include "hmap.h"
#include "asyncio.h"
#include "async_wait.h"
#include "ingest.h"
#include "ksyms.h"
#include "proc.h"
#include "pythreads.h"

#define NAMES_EVERY_S	0.2	/* threading's registry: at most this often per process */
#define THREADS_EVERY_S	2.0	/* a process with more than TB_MAX_THREADS: its thread list again */
#define NAMES_MAX	4096

struct thread_key {
	uint32_t target;
	uint32_t tid;
};

struct pend_sample {
	struct agg_key k;
	uint64_t weight;
};

/* --timeline: one sample as taken; its row once its target was folded. */
struct tl_entry {
	struct agg_key k;
	uint64_t start_ns;	/* taken at (off CPU: left the CPU at) */
	uint64_t end_ns;	/* = start_ns, or off CPU: came back at */
	uint32_t weight;
	uint32_t cpu;
	uint32_t lane;		/* 0: its thread's; else 1 + index in ingest.lanes */
	int64_t row;		/* in the frozen profile, or TL_LIVE */
};

/* --timeline --async-aware wall: the lane of one waiting task (its name
 * too: a task freed and its address reused by another is another lane). */
struct lane_key {
	uint32_t target, tid;
	uint64_t task;
	uint64_t label;		/* hash of its label */
};

struct lane {
	struct lane_key k;
	char *label;		/* "Task-5 handle" */
};

#define TL_LIVE	(-1)	/* counted in the live profile (or waiting for its stack) */
#define TL_UNIT_NS	1000	/* the timeline's resolution: 1 us */

struct ingest {
	const struct options *opt;
	struct sampler *sampler;
	struct targets *ts;
	struct profile prof;
	struct symbols sym;
	struct resolved frozen;		/* samples of processes that are gone */
	struct hmap thread_names;	/* {target, tid} -> char *, NULL until named */
	struct thread_key *unnamed;	/* threads seen, not named yet */
	struct pythreads_cache pynames;	/* Thread objects read this compaction period */
	size_t nunnamed, unnamed_cap;
	struct hmap limbo;		/* stack ids no sample uses, kept for a thread off CPU */
	struct pend_sample *pend;	/* samples waiting for their stack */
	size_t npend, pend_cap;
	struct kstack_namer kstacks;	/* --kernel frame names */
	struct native native;		/* --native frame names */
	struct exc_types exc;		/* --mode exception's type names */
	struct ingest_counts cnt;
	struct async_waits *aw;		/* --async-aware wall mode: tasks waiting off CPU */
	/* --timeline */
	struct tl_entry *tl;		/* every sample in arrival order */
	size_t ntl, tl_cap;
	struct hmap rows;		/* agg_key -> 1 + row, while one resolve runs */
	struct hmap tl_names;		/* {target, tid} -> name, kept past folds */
	uint64_t tl_base_ns;		/* the run's start: time 0 */
	struct hmap lane_of;		/* lane_key -> 1 + index in lanes */
	struct lane *lanes;
	size_t nlanes, lanes_cap;
};

static const char *thread_name(void *ctx, uint32_t target, uint32_t tid);
static int kernel_frames(void *ctx, int32_t kstack, const char **names, int max);
static const char *exc_name(void *ctx, uint32_t target, uint64_t type);
static void new_stack(struct ingest *in, const struct tb_stack *rec, size_t size);
static void plan_native(struct ingest *in, uint32_t pid, uint64_t stack_id,
			const struct stack_frames *sf, uint64_t leaf);
static void add_sample(struct ingest *in, uint32_t pid, uint32_t tid, uint64_t stack_id,
		       uint32_t flags, int32_t kstack, uint64_t weight,
		       const struct tb_timed *when, uint64_t leaf);

struct ingest *ingest_new(const struct options *o, struct sampler *sampler, struct targets *ts)
{
	struct ingest *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	in->opt = o;
	in->sampler = sampler;
	in->ts = ts;
	if (profile_init(&in->prof) || symbols_init(&in->sym) ||
	    hmap_init(&in->thread_names, sizeof(struct thread_key)) ||
	    pythreads_cache_init(&in->pynames) || resolved_init(&in->frozen) ||
	    hmap_init(&in->limbo, sizeof(uint64_t)) ||
	    hmap_init(&in->rows, sizeof(struct agg_key)) ||
	    hmap_init(&in->tl_names, sizeof(struct thread_key)) ||
	    hmap_init(&in->lane_of, sizeof(struct lane_key)) ||
	    exc_types_init(&in->exc) || (o->native && native_init(&in->native))) {
		ingest_free(in);
		errno = ENOMEM;
		return NULL;
	}
	in->sym.opcodes = in->opt->opcodes != OPCODES_NONE;	/* bytecode read only then */
	/* With --timeline each waiting task has a lane of its own (tl_lane). */
	if (o->async_aware && o->mode == TB_MODE_WALL && !(in->aw = async_waits_new())) {
		ingest_free(in);
		return NULL;
	}
	return in;
}

void ingest_free(struct ingest *in)
{
	size_t it = 0;
	void **val;

	if (!in)
		return;
	resolved_free(&in->frozen);
	async_waits_free(in->aw);
	while (hmap_next(&in->thread_names, &it, NULL, &val))
		free(*val);
	hmap_free(&in->thread_names);
	free(in->unnamed);
	pythreads_cache_free(&in->pynames);
	hmap_free(&in->limbo);
	hmap_free(&in->rows);
	hmap_free_values(&in->tl_names, free);
	hmap_free(&in->lane_of);
	while (in->nlanes)
		free(in->lanes[--in->nlanes].label);
	free(in->lanes);
	free(in->tl);
	symbols_free(&in->sym);
	profile_free(&in->prof);
	ksyms_free(&in->kstacks.ksyms);
	native_free(&in->native);
	exc_types_free(&in->exc);
	free(in->pend);
	free(in);
}

const struct ingest_counts *ingest_counts(const struct ingest *in)
{
	return &in->cnt;
}

const struct symbols *ingest_symbols(const struct ingest *in)
{
	return &in->sym;
}

uint64_t ingest_samples(const struct ingest *in)
{
	return in->prof.samples;
}

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
void ingest_seed_offcpu(struct ingest *in, struct target *t, uint64_t since)
{
	static struct dump_thread th[DUMP_MAX_THREADS];
	static struct tb_stack rec;
	uint32_t flags;
	int n, i;

	if (in->opt->mode != TB_MODE_WALL || t->layout.walk.addr.pidns_ino)
		return;
	n = dump_threads(t, th, DUMP_MAX_THREADS);
	for (i = 0; i < n; i++) {
		if (!blocked(t->pid, th[i].tid) || dump_stack(t, th[i].tstate, &rec, &flags))
			continue;
		if (profile_add_stack(&in->prof, &rec, TB_STACK_HDR_SIZE +
				      rec.depth * sizeof(rec.frames[0])) > 0) {
			new_stack(in, &rec, TB_STACK_HDR_SIZE + rec.depth * sizeof(rec.frames[0]));
			hmap_put(&in->limbo, &rec.stack_id, NULL);	/* no sample uses it yet */
		}
		if (sampler_offcpu_seed(in->sampler, (uint32_t)t->pid, (uint32_t)th[i].tid,
					rec.stack_id, flags, since))
			continue;
		/* It woke while we walked, before the entry was in: no switch-in
		 * will clear it, so it would count as away while it runs. */
		if (!blocked(t->pid, th[i].tid)) {
			sampler_offcpu_unseed(in->sampler, (uint32_t)th[i].tid, since);
			continue;
		}
		in->cnt.offcpu_seeded++;
	}
}

/*
 * The BPF side finds the thread state of the thread a sample interrupts in
 * its `tstates` cache, else by walking its interpreter's thread list from
 * the newest, at most TB_MAX_THREADS of it: the walk runs in the sample's
 * interrupt (a 600-thread process's oldest thread: 190 us a sample, all
 * of it dropped). A thread past the newest TB_MAX_THREADS would never be
 * found. So for a process with more threads every thread goes into the
 * cache from here: when it becomes a target and every THREADS_EVERY_S
 * after (a thread started since may sink past the newest before it first
 * runs). BPF_NOEXIST: what the BPF side found and checked stays.
 */
static void seed_tstates(struct ingest *in, struct target *t, const struct dump_thread *th,
			 int n)
{
	static struct proc_nstid ns[DUMP_MAX_THREADS];
	int other_ns = t->layout.walk.addr.pidns_ino != 0, nns = 0, i;
	uint32_t tid;

	t->threads_next = n > TB_MAX_THREADS ? mono_now() + THREADS_EVERY_S : 0;
	if (n <= TB_MAX_THREADS)
		return;
	if (other_ns)
		nns = proc_ns_tids(t->pid, ns, DUMP_MAX_THREADS);
	for (i = 0; i < n; i++) {
		tid = other_ns ? proc_ns_tid_global(ns, nns, (uint32_t)th[i].tid) :
				 (uint32_t)th[i].tid;
		if (tid && !sampler_tstate_seed(in->sampler, tid, th[i].tstate))
			in->cnt.tstates_seeded++;
	}
}

void ingest_target_threads(struct ingest *in, struct target *t)
{
	static struct dump_thread th[DUMP_MAX_THREADS];
	int n = dump_threads(t, th, DUMP_MAX_THREADS);

	if (n > 0)
		seed_tstates(in, t, th, n);
}

void ingest_recheck_threads(struct ingest *in)
{
	double now = mono_now();
	uint32_t i;

	for (i = 0; i < targets_count(in->ts); i++) {
		struct target *t = targets_get(in->ts, i);

		if (t && !t->exited && t->threads_next && now >= t->threads_next)
			ingest_target_threads(in, t);
	}
}

int ingest_pending_for(const struct ingest *in, uint32_t target)
{
	size_t i;

	for (i = 0; i < in->npend; i++)
		if (in->pend[i].k.target == target)
			return 1;
	return 0;
}

static void on_row(void *ctx, const struct agg_key *k, size_t row);

static void resolve_opts_of(struct ingest *in, struct resolve_opts *ro)
{
	*ro = (struct resolve_opts){
		.full_paths = in->opt->full_paths, .threads = in->opt->threads,
		.line_mode = in->opt->line_mode, .opcodes = in->opt->opcodes,
		.gc_frames = in->opt->gc_frames,
		/* --pids asks for the pid in a root frame: it needs the frame. */
		.proc_root = in->opt->all_python || in->opt->subprocesses || in->opt->show_pids,
		.show_pids = in->opt->show_pids,
		.thread_name = thread_name, .kernel_frames = kernel_frames, .exc_name = exc_name,
		.ctx = in, .row = in->opt->timeline ? on_row : NULL,
	};
}

/* --timeline: the row each key of this resolve went into (see rows). */
static void on_row(void *ctx, const struct agg_key *k, size_t row)
{
	struct ingest *in = ctx;
	void **slot = hmap_put(&in->rows, k, NULL);

	if (slot)
		*slot = (void *)(uintptr_t)(row + 1);
}

static int64_t row_of(const struct ingest *in, const struct agg_key *k)
{
	void **slot = hmap_get(&in->rows, k);

	return slot ? (int64_t)(uintptr_t)*slot - 1 : TL_LIVE;
}

static void rows_reset(struct ingest *in)
{
	hmap_free(&in->rows);
	if (hmap_init(&in->rows, sizeof(struct agg_key)))
		tb_warn("out of memory: the timeline loses samples");
}

/*
 * A target's rows were just folded: its samples on the timeline name
 * frozen rows from now on, and its threads' names outlive the fold.
 */
static void tl_fold(struct ingest *in, uint32_t target)
{
	const struct thread_key *k;
	size_t i, it = 0;
	void **val, **slot;
	int added;

	for (i = 0; i < in->ntl; i++)
		if (in->tl[i].row == TL_LIVE && in->tl[i].k.target == target)
			in->tl[i].row = row_of(in, &in->tl[i].k);
	rows_reset(in);
	while (hmap_next(&in->thread_names, &it, (const void **)&k, &val)) {
		if (k->target != target || !*val)
			continue;
		slot = hmap_put(&in->tl_names, k, &added);
		if (slot && !added)
			free(*slot);
		if (slot)
			*slot = strdup(*val);
	}
}

static void forget_threads(struct ingest *in, uint32_t target)
{
	struct thread_key *keys = malloc((in->thread_names.len + 1) * sizeof(*keys));
	const struct thread_key *k;
	size_t it = 0, n = 0, i;

	if (!keys)
		return;
	while (hmap_next(&in->thread_names, &it, (const void **)&k, NULL))
		if (k->target == target)
			keys[n++] = *k;
	for (i = 0; i < n; i++)
		free(hmap_del(&in->thread_names, &keys[i]));
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
static void release_stacks(struct ingest *in, const uint64_t *ids, size_t n)
{
	struct hmap away = {0};
	int wall = in->opt->mode == TB_MODE_WALL && in->sampler->skel;
	size_t i;

	if (wall && (hmap_init(&away, sizeof(uint64_t)) ||
		     sampler_offcpu_away(in->sampler, &away))) {
		hmap_free(&away);
		for (i = 0; i < n; i++)
			hmap_put(&in->limbo, &ids[i], NULL);	/* keep them all */
		return;
	}
	for (i = 0; i < n; i++) {
		if (wall && hmap_get(&away, &ids[i]) && profile_stack(&in->prof, ids[i])) {
			hmap_put(&in->limbo, &ids[i], NULL);
			continue;
		}
		hmap_del(&in->limbo, &ids[i]);
		profile_release(&in->prof, ids[i]);
	}
	hmap_free(&away);
}

/* Compaction: every stack in limbo is looked at again. */
static void release_limbo(struct ingest *in)
{
	uint64_t *ids = malloc((in->limbo.len + 1) * sizeof(*ids));
	const uint64_t *k;
	size_t it = 0, n = 0;

	if (!ids)
		return;
	while (hmap_next(&in->limbo, &it, (const void **)&k, NULL))
		ids[n++] = *k;
	release_stacks(in, ids, n);
	free(ids);
}

/*
 * Move a target's rows into the frozen profile: symbolized now, identical
 * rows merged. Its stacks and thread names are no longer needed; the BPF
 * side is told to send a stack's frames again the next time it sees it.
 */
static void fold_target(struct ingest *in, struct target *t, int forget_each)
{
	struct resolve_opts ro;
	uint64_t *dead;
	size_t ndead, i;

	resolve_opts_of(in, &ro);
	ingest_name_threads(in, 1);
	if (profile_freeze(&in->prof, t, &in->sym, &ro, &in->frozen, &dead, &ndead))
		tb_warn("pid %d: out of memory while keeping its samples", t->pid);
	if (in->opt->timeline)
		tl_fold(in, t->id);
	if (forget_each) {
		if (in->sampler->skel)
			sampler_forget_stacks(in->sampler, dead, ndead);
		release_stacks(in, dead, ndead);
	} else {
		/* Compaction: released together once the BPF side forgot all. */
		for (i = 0; i < ndead; i++)
			hmap_put(&in->limbo, &dead[i], NULL);
	}
	free(dead);
	forget_threads(in, t->id);
}

/*
 * Memory stays bounded however many processes come and go: a finished one's
 * samples are folded into the frozen profile now and its code objects are
 * forgotten.
 */
void ingest_freeze(struct ingest *in, struct target *t)
{
	fold_target(in, t, 1);
	symbols_forget(&in->sym, t->id);
	exc_types_forget(&in->exc, t->id);
	/* its mappings: a process that reuses the pid maps other files */
	if (in->opt->native)
		native_forget(&in->native, (uint32_t)t->pid);
	targets_drop(in->ts, t);
}

void ingest_native_refresh(struct ingest *in, uint32_t pid)
{
	if (in->opt->native)
		native_refresh(&in->native, pid);
}

static void on_count(void *ctx, const struct tb_count_key *k, uint64_t n)
{
	struct ingest *in = ctx;

	in->cnt.count_keys++;
	add_sample(ctx, k->pid, k->tid, k->stack_id, k->flags, k->kstack, n, NULL, k->leaf);
}

/*
 * Bring the samples counted in the kernel into the profile. Called before
 * a target is ended: its process is gone by then (exit) or no longer
 * sampled (exec), so none of its samples can count in the map swapped in.
 */
void ingest_read_counts(struct ingest *in)
{
	sampler_read_counts(in->sampler, on_count, in);
}

void ingest_eval_parts(struct ingest *in, pid_t pid, uint64_t eval_addr, struct tb_addrs *a)
{
	memset(a->eval_lo, 0, sizeof(a->eval_lo));
	memset(a->eval_hi, 0, sizeof(a->eval_hi));
	if (in->opt->native)
		native_eval_parts(&in->native, (uint32_t)pid, eval_addr, a->eval_lo, a->eval_hi,
				  TB_EVAL_PARTS);
}

/*
 * ... and however long a process lives: every COMPACT_S seconds the live
 * processes are folded too, and code objects unused for a whole period
 * leave the symbol cache (an LRU by periods). What stays grows only with
 * what the output itself must hold: distinct rows.
 */
void ingest_compact(struct ingest *in)
{
	uint32_t i;

	ingest_read_counts(in);
	/* From now on the BPF side sends every stack's frames again, so a
	 * sample never names a stack we are about to drop... */
	sampler_forget_all_stacks(in->sampler);
	sampler_consume(in->sampler);
	ingest_flush(in, 0);
	for (i = 0; i < targets_count(in->ts); i++) {
		struct target *t = targets_get(in->ts, i);

		if (!t || ingest_pending_for(in, i))
			continue;	/* a sample still waits for its stack */
		if (t->exited) {
			ingest_freeze(in, t);
			continue;
		}
		fold_target(in, t, 0);
		symbols_evict(&in->sym, t->id);
	}
	/* ... including those it sent again while we were folding. Samples
	 * counted in the kernel since the read above name stacks the BPF side
	 * had marked sent: read them while their frames are still here (a
	 * count keeps its stack), or they would wait for frames that come
	 * only if the stack recurs, and hold their process out of every
	 * later compaction (seen: 650 stacks kept over a 23 s run). The ring
	 * buffer is not read before the release (see release_stacks()): a
	 * stack sent again since is added back after it. */
	sampler_forget_all_stacks(in->sampler);
	ingest_read_counts(in);
	ingest_flush(in, 0);
	release_limbo(in);
	/* Thread names are read again from now on: renames show. */
	pythreads_cache_free(&in->pynames);
	if (pythreads_cache_init(&in->pynames))
		tb_warn("out of memory: thread names are read again for every new thread");
	symbols_next_epoch(&in->sym);
	in->cnt.compactions++;
	tb_debug("compaction %" PRIu64 ": %zu frozen rows, %zu frames; live: %zu rows, %zu stacks, %zu code objects, %zu pending samples",
		 in->cnt.compactions, in->frozen.nsamples, in->frozen.nframes, in->prof.counts.len,
		 in->prof.stacks.len, in->sym.codes.len, in->npend);
}

static int add_pending(struct ingest *in, const struct agg_key *k, uint64_t weight)
{
	if (array_grow(&in->pend, &in->pend_cap, in->npend + 1, sizeof(*in->pend), 256))
		return -ENOMEM;
	in->pend[in->npend++] = (struct pend_sample){ *k, weight };
	return 0;
}

/*
 * A thread seen for the first time since its process's last compaction:
 * named later, in one read of threading's registry for all the process's
 * new threads (name_threads), while it is most likely still alive.
 */
static void note_thread(struct ingest *in, const struct agg_key *k)
{
	struct thread_key tk = { k->target, k->tid };
	void **slot;
	int added;

	slot = hmap_put(&in->thread_names, &tk, &added);
	if (!slot || !added)
		return;
	if (array_grow(&in->unnamed, &in->unnamed_cap, in->nunnamed + 1, sizeof(*in->unnamed), 64))
		return;
	in->unnamed[in->nunnamed++] = tk;
}

/* Name every waiting thread of one target: Python's name, else comm. */
static void name_target(struct ingest *in, struct target *t, const struct pythread *th, int n)
{
	size_t i;

	for (i = 0; i < in->nunnamed; i++) {
		struct thread_key *k = &in->unnamed[i];
		const char *py;
		char comm[32];
		void **slot;

		if (k->target != t->id)
			continue;
		slot = hmap_get(&in->thread_names, k);
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
void ingest_name_threads(struct ingest *in, int force)
{
	static struct pythread th[NAMES_MAX];
	double now = mono_now();
	size_t i, j;

	for (i = 0; i < in->nunnamed; i++) {
		uint32_t id = in->unnamed[i].target;
		struct target *t = targets_get(in->ts, id);
		int n;

		if (!t || (!force && now < t->names_next))
			continue;
		n = pythreads_read(t, &in->pynames, th, NAMES_MAX);
		t->names_next = now + NAMES_EVERY_S;
		name_target(in, t, th, n > 0 ? n : 0);
	}
	for (i = j = 0; i < in->nunnamed; i++) {
		uint32_t id = in->unnamed[i].target;

		if (targets_get(in->ts, id))
			in->unnamed[j++] = in->unnamed[i];
	}
	in->nunnamed = j;
}

/* Count a sample whose frames we have; read new code objects right away,
 * while the process (and the code object) is still alive. */
static void count_sample(struct ingest *in, const struct agg_key *k, uint64_t weight,
			 const struct stack_frames *sf)
{
	struct target *t = targets_get(in->ts, k->target);

	if (!t) {
		in->cnt.unknown_pid += weight;	/* frozen before its stack came */
		return;
	}
	if (profile_count(&in->prof, k, weight) != 1)
		return;
	symbols_resolve(&in->sym, t, sf->frames, sf->depth);
	if (in->opt->native)
		plan_native(in, (uint32_t)t->pid, k->stack_id, sf, k->leaf);
	note_thread(in, k);
}

/* --timeline: note the sample's time; its row is found when resolving. */
static void tl_add(struct ingest *in, const struct agg_key *k, const struct tb_timed *when)
{
	if (array_grow(&in->tl, &in->tl_cap, in->ntl + 1, sizeof(*in->tl), 4096)) {
		in->cnt.timeline_lost += when->s.weight;
		return;
	}
	in->tl[in->ntl++] = (struct tl_entry){
		.k = *k, .start_ns = when->start_ns, .end_ns = when->time_ns,
		.weight = when->s.weight, .cpu = when->cpu, .row = TL_LIVE,
	};
}

static void add_sample(struct ingest *in, uint32_t pid, uint32_t tid, uint64_t stack_id,
		       uint32_t flags, int32_t kstack, uint64_t weight,
		       const struct tb_timed *when, uint64_t leaf)
{
	const struct stack_frames *sf;
	struct target *t = targets_by_pid(in->ts, pid);
	struct agg_key k = {0};

	if (!t) {
		in->cnt.unknown_pid += weight;
		return;
	}
	k.target = t->id;
	k.tid = tid;
	k.stack_id = stack_id;
	k.flags = flags & ~TB_SF_STATUS_KNOWN;
	k.kstack = in->opt->kernel ? kstack : -1;
	k.leaf = in->opt->native ? leaf : 0;
	if (when)
		tl_add(in, &k, when);
	sf = profile_stack(&in->prof, stack_id);
	if (!sf) {
		/* Another CPU's copy of the frames may still be on its way; or
		 * the BPF side sent this sample just before a compaction told it
		 * to resend frames: make sure it sends them the next time. */
		if (in->cnt.compactions &&
		    !(in->npend && in->pend[in->npend - 1].k.stack_id == stack_id))
			sampler_forget_stacks(in->sampler, &stack_id, 1);
		if (add_pending(in, &k, weight))
			in->cnt.missing_stack += weight;
		return;
	}
	count_sample(in, &k, weight, sf);
}

/*
 * --native: the stack's native frames with this leaf pc, named and merged
 * with its Python frames now, while the process (its mappings) is surely
 * there; once per (stack, leaf).
 */
static void plan_native(struct ingest *in, uint32_t pid, uint64_t stack_id,
			const struct stack_frames *sf, uint64_t leaf)
{
	static struct tb_frame py[TB_MAX_DEPTH];
	uint64_t ips[TB_USTACK_DEPTH];
	const struct stack_native *sn = sf->native;
	struct native_plan *plan;
	int n = 0;

	if (!sn || profile_native_plan(sf, leaf))
		return;
	profile_entry_frames(sf, py);
	if (leaf && sn->nips >= 0 && sn->nips < TB_USTACK_DEPTH) {
		ips[n++] = leaf & ~TB_LEAF_EVAL_CALLER;
		if (sn->nips)
			memcpy(ips + 1, sn->ips, (size_t)sn->nips * sizeof(ips[0]));
		n += sn->nips;
	}
	plan = native_merge(&in->native, pid, ips, n, py, sf->depth,
			    !!(leaf & TB_LEAF_EVAL_CALLER));
	if (!plan || profile_add_plan(&in->prof, stack_id, leaf, plan)) {
		tb_warn("out of memory: a stack keeps its Python frames only");
		return;
	}
	if (plan->matched)
		in->cnt.native_merged++;
	else
		in->cnt.native_unmatched++;
	in->cnt.native_bytes = in->native.bytes;
	in->cnt.native_peak = in->native.peak;
	in->cnt.native_limit = in->native.limit;
	in->cnt.native_dropped = in->native.dropped;
}

/* --native: keep a new stack's native callers, and merge the leaf it came
 * with (its first sample's). */
static void merge_native(struct ingest *in, const struct tb_stack *rec, size_t size)
{
	uint64_t ips[TB_USTACK_DEPTH];
	size_t at = TB_STACK_HDR_SIZE + (size_t)rec->depth * sizeof(struct tb_frame);
	const struct stack_frames *sf;
	int n = rec->ustack;

	/* The addresses follow the Python frames (not aligned for us: copied). */
	if (n <= 0 || n > TB_USTACK_DEPTH || size < at + (size_t)n * sizeof(ips[0]))
		n = 0;
	memcpy(ips, (const uint8_t *)rec + at, (size_t)n * sizeof(ips[0]));
	if (profile_set_native(&in->prof, rec, ips + 1, n ? n - 1 : -1)) {
		tb_warn("out of memory: a stack keeps its Python frames only");
		return;
	}
	sf = profile_stack(&in->prof, rec->stack_id);
	if (sf)
		plan_native(in, rec->pid, rec->stack_id, sf, n ? ips[0] : 0);
}

/*
 * Read a new stack's code objects right away: its samples may be counted
 * in the kernel for a while, and a short-lived code object can be gone by
 * the time they are read.
 */
static void new_stack(struct ingest *in, const struct tb_stack *rec, size_t size)
{
	struct target *t = targets_by_pid(in->ts, rec->pid);
	const struct stack_frames *sf = profile_stack(&in->prof, rec->stack_id);

	if (!t || !sf)
		return;
	symbols_resolve(&in->sym, t, sf->frames, sf->depth);
	if (in->opt->native)
		merge_native(in, rec, size);
	if (rec->exc_type && exc_types_learn(&in->exc, t, rec->exc_type))
		tb_warn("out of memory: an exception type stays unnamed");
}

/*
 * --async-aware: a chain of tasks, for the stack record that follows. Its
 * names are in the record; the awaiting tasks' frames are read now.
 */
static void new_tasks(struct ingest *in, const struct tb_tasks *rec, size_t size)
{
	struct target *t = targets_by_pid(in->ts, rec->pid);
	struct task_chain *c = t ? asyncio_decode(t, &in->sym, rec, size) : NULL;

	if (!c && t)
		in->cnt.bad_records++;
	profile_pending_tasks(&in->prof, rec->stack_id, c);
}

/* --timeline: the lane of waiting task ws of thread {target, tid}, added
 * if new: 1 + its index, or 0 (out of memory: the thread's own). */
static uint32_t tl_lane(struct ingest *in, uint32_t target, uint32_t tid,
			const struct wait_stack *ws)
{
	const char *label = ws->chain && ws->chain->depth ? ws->chain->tasks[0].label : "";
	struct lane_key k = {
		.target = target, .tid = tid, .task = ws->task,
		.label = hash_bytes(label, strlen(label)),
	};
	int added;
	void **slot = hmap_put(&in->lane_of, &k, &added);

	if (!slot)
		return 0;
	if (!added)
		return (uint32_t)(uintptr_t)*slot;
	if (array_grow(&in->lanes, &in->lanes_cap, in->nlanes + 1, sizeof(*in->lanes), 64) ||
	    !(in->lanes[in->nlanes].label = strdup(label))) {
		hmap_del(&in->lane_of, &k);
		return 0;
	}
	in->lanes[in->nlanes].k = k;
	*slot = (void *)(uintptr_t)++in->nlanes;
	return (uint32_t)in->nlanes;
}

/* An off-CPU interval of event loop thread tid that no read gave to its
 * waiting tasks keeps its own stack: counted (-v), unless that stack is a
 * running task's (preempted, or blocking inside a coroutine). */
static void note_kept(struct ingest *in, uint32_t tid, uint64_t stack_id, uint64_t weight)
{
	const struct stack_frames *sf = profile_stack(&in->prof, stack_id);

	if ((sf && sf->tasks) || !async_waits_is_loop(in->aw, tid))
		return;
	in->cnt.async_wait_kept++;
	in->cnt.async_wait_kept_periods += weight;
}

/*
 * --async-aware wall mode: an off-CPU interval of tid, `when` (from
 * when->start_ns to when->time_ns). If its waiting tasks were read then
 * (async_wait.h), each one's stack gets the whole interval, and the loop's
 * own stack none: 1. Else 0. With --timeline each task's copy of the
 * interval goes into its own lane: they overlap.
 */
static int credit_waits(struct ingest *in, uint32_t pid, uint32_t tid, uint64_t stack_id,
			uint32_t flags, uint64_t weight, const struct tb_timed *when)
{
	struct wait_snap *w = in->aw ? async_waits_take(in->aw, tid, when->start_ns) : NULL;
	const struct tb_timed *timed = in->opt->timeline ? when : NULL;
	struct target *t = targets_by_pid(in->ts, pid);
	struct wait_stack *ws;
	uint32_t i, lane;
	size_t ntl;

	if (!w || w->pid != pid || !(flags & TB_SF_OFFCPU) || !w->n) {
		async_wait_free(w);
		if (in->aw && (flags & TB_SF_OFFCPU))
			note_kept(in, tid, stack_id, weight);
		return 0;
	}
	for (i = 0; i < w->n; i++) {
		ws = &w->v[i];
		lane = timed && t ? tl_lane(in, t->id, tid, ws) : 0;
		/* the profile owns the chain from here, kept or not */
		profile_pending_tasks(&in->prof, ws->rec->stack_id, ws->chain);
		ws->chain = NULL;
		if (profile_add_stack(&in->prof, ws->rec, ws->size) > 0)
			new_stack(in, ws->rec, ws->size);
		ntl = in->ntl;
		add_sample(in, pid, tid, ws->rec->stack_id, flags, -1, weight, timed, 0);
		if (in->ntl > ntl)
			in->tl[ntl].lane = lane;
		in->cnt.async_wait_periods += weight;
	}
	in->cnt.async_wait_credits++;
	/* one interval written n times: the copies past the first are
	 * collected as samples of their own (stats_summarize) */
	in->cnt.async_wait_copies += (uint64_t)(w->n - 1) * weight;
	async_wait_free(w);
	return 1;
}

void ingest_poll_async(struct ingest *in)
{
	if (in->aw)
		async_waits_poll(in->aw, in->ts, in->sampler, &in->sym);
}

int ingest_polls_async(const struct ingest *in)
{
	return in->aw != NULL;
}

/* Retry samples that arrived before their stack; `final` gives up on them. */
void ingest_flush(struct ingest *in, int final)
{
	size_t i, j = 0;

	for (i = 0; i < in->npend; i++) {
		const struct stack_frames *sf = profile_stack(&in->prof, in->pend[i].k.stack_id);

		if (sf)
			count_sample(in, &in->pend[i].k, in->pend[i].weight, sf);
		else if (final)
			in->cnt.missing_stack += in->pend[i].weight;
		else
			in->pend[j++] = in->pend[i];
	}
	in->npend = j;
}

/* Wall mode: threads still blocked at the end get their time too. */
void ingest_credit_offcpu(struct ingest *in, uint64_t end_ns)
{
	struct offcpu_left *v;
	int i, n;

	if (in->opt->mode != TB_MODE_WALL)
		return;
	n = sampler_offcpu_left(in->sampler, end_ns, &v);
	for (i = 0; i < n; i++) {
		if (!v[i].periods)
			continue;
		struct tb_timed when = {
			.s = { .weight = (uint32_t)v[i].periods }, .start_ns = v[i].since,
			.time_ns = end_ns, .cpu = UINT32_MAX,
		};

		in->cnt.offcpu_final += v[i].periods;
		if (credit_waits(in, v[i].pid, v[i].tid, v[i].stack_id, v[i].flags, v[i].periods,
				 &when))
			continue;
		add_sample(in, v[i].pid, v[i].tid, v[i].stack_id, v[i].flags, v[i].kstack,
			   v[i].periods, in->opt->timeline ? &when : NULL, v[i].leaf);
	}
	free(v);
}

static const char *thread_name(void *ctx, uint32_t target, uint32_t tid)
{
	struct ingest *in = ctx;
	struct thread_key k = { target, tid };
	void **slot = hmap_get(&in->thread_names, &k);

	return slot ? *slot : NULL;
}

static int kernel_frames(void *ctx, int32_t kstack, const char **names, int max)
{
	struct ingest *in = ctx;
	uint64_t ips[TB_KSTACK_DEPTH];
	int n;

	n = sampler_kstack(in->sampler, kstack, ips, max < TB_KSTACK_DEPTH ? max : TB_KSTACK_DEPTH);
	in->kstacks.tick = in->opt->event->tick;
	return kstack_names(&in->kstacks, ips, n, names);
}

static const char *exc_name(void *ctx, uint32_t target, uint64_t type)
{
	struct ingest *in = ctx;

	return exc_types_name(&in->exc, target, type);
}

/*
 * The sample a stack record carries (struct tb_stack: its first, instead
 * of a new key in the counts map), counted whether or not we had the
 * frames already (a stack sent again after a compaction or a collision).
 */
static void stack_sample(struct ingest *in, const struct tb_stack *rec, size_t size)
{
	if (size < TB_STACK_HDR_SIZE || !rec->weight)
		return;
	in->cnt.received++;
	add_sample(in, rec->pid, rec->tid, rec->stack_id, rec->flags, rec->kstack, rec->weight,
		   NULL, rec->leaf);
}

void ingest_record(struct ingest *in, const void *data, size_t size)
{
	const struct tb_sample *smp = data;
	uint32_t kind;
	int ret;

	if (size < sizeof(kind)) {
		in->cnt.bad_records++;
		return;
	}
	memcpy(&kind, data, sizeof(kind));
	if (kind == TB_REC_SAMPLE && size >= sizeof(struct tb_sample)) {
		in->cnt.received++;
		add_sample(in, smp->pid, smp->tid, smp->stack_id, smp->flags, smp->kstack,
			   smp->weight, NULL, smp->leaf);
	} else if (kind == TB_REC_TIMED && size >= sizeof(struct tb_timed)) {
		in->cnt.received++;
		/* --async-aware wall mode times off-CPU credits without --timeline */
		if (!credit_waits(in, smp->pid, smp->tid, smp->stack_id, smp->flags, smp->weight,
				  data))
			add_sample(in, smp->pid, smp->tid, smp->stack_id, smp->flags,
				   smp->kstack, smp->weight, in->opt->timeline ? data : NULL,
				   smp->leaf);
	} else if (kind == TB_REC_TASKS && size >= TB_TASKS_HDR_SIZE) {
		new_tasks(in, data, size);
	} else if (kind == TB_REC_STACK) {
		in->cnt.stacks++;
		ret = profile_add_stack(&in->prof, data, size);
		if (ret < 0)
			in->cnt.bad_records++;
		else if (ret > 0)
			new_stack(in, data, size);
		stack_sample(in, data, size);
	} else {
		in->cnt.bad_records++;
	}
}

void ingest_set_start(struct ingest *in, uint64_t start_ns)
{
	in->tl_base_ns = start_ns;
}

/*
 * ns since the start of the run, in whole microseconds (a sample taken
 * just before it is at 0): the timer's jitter is microseconds, and the
 * digits below would cost a recording more than a byte a sample.
 */
static uint64_t tl_time(const struct ingest *in, uint64_t ns)
{
	return ns > in->tl_base_ns ? (ns - in->tl_base_ns) / TL_UNIT_NS * TL_UNIT_NS : 0;
}

/* A track of the timeline: a thread, or one of its waiting tasks' lanes. */
struct track_key {
	struct thread_key t;
	uint32_t lane;		/* as tl_entry.lane */
};

/* The name of a thread's track, or of a waiting task's lane on it
 * ("MainThread: Task-5 handle (waiting)"); NULL if neither is known. */
static char *track_name(struct ingest *in, const struct thread_key *tk, uint32_t lane)
{
	const char *name = thread_name(in, tk->target, tk->tid);
	void **kept = hmap_get(&in->tl_names, tk);
	char buf[64], *out;

	if (!name && kept)
		name = *kept;
	if (!lane || lane > in->nlanes)
		return name ? strdup(name) : NULL;
	if (!name)
		snprintf(buf, sizeof(buf), "tid %u", tk->tid);
	if (asprintf(&out, "%s: %s (waiting)", name ? name : buf, in->lanes[lane - 1].label) < 0)
		return NULL;
	return out;
}

/* The index of track {k's thread, lane} in r->threads, added if new; a
 * lane after its thread's own track (resolved_number_lanes counts them). */
static int tl_thread(struct ingest *in, struct resolved *r, struct hmap *seen,
		     const struct agg_key *k, uint32_t lane, size_t *cap)
{
	struct track_key tk = { .t = { k->target, k->tid }, .lane = lane };
	void **slot;
	int ret;

	if (lane && (ret = tl_thread(in, r, seen, k, 0, cap)) < 0)
		return ret;
	slot = hmap_put(seen, &tk, NULL);
	if (!slot)
		return -ENOMEM;
	if (*slot)
		return (int)((uintptr_t)*slot - 1);
	if (array_grow(&r->threads, cap, r->nthreads + 1, sizeof(*r->threads), 16))
		return -ENOMEM;
	r->threads[r->nthreads] = (struct rthread){
		.proc = k->target, .tid = k->tid, .name = track_name(in, &tk.t, lane),
	};
	*slot = (void *)(uintptr_t)(++r->nthreads);
	return (int)(r->nthreads - 1);
}

/*
 * The time-ordered samples of r: each sample on the timeline whose row
 * made it into the profile (rows of the live part were just noted by
 * on_row), sorted by time. The ring buffer delivers each CPU's samples in
 * order and the CPUs' nearly so; sorting the whole run at the end merges
 * them exactly. Samples never counted (their stack never came) have no row
 * and are left out, as from the counts.
 */
static int tl_resolve(struct ingest *in, struct resolved *r)
{
	struct hmap seen;
	size_t i, cap = 0;
	int ret = 0;

	r->timeline = 1;
	if (in->cnt.timeline_lost)
		tb_warn("out of memory: %" PRIu64 " samples counted but left off the timeline",
			in->cnt.timeline_lost);
	r->ticks = calloc(in->ntl + 1, sizeof(*r->ticks));
	if (!r->ticks || hmap_init(&seen, sizeof(struct track_key))) {
		rows_reset(in);
		return -ENOMEM;
	}
	for (i = 0; i < in->ntl && ret >= 0; i++) {
		const struct tl_entry *e = &in->tl[i];
		int64_t row = e->row != TL_LIVE ? e->row : row_of(in, &e->k);

		if (row < 0 || (size_t)row >= r->nsamples)
			continue;
		ret = tl_thread(in, r, &seen, &e->k, e->lane, &cap);
		if (ret < 0)
			break;
		r->ticks[r->nticks++] = (struct rtick){
			.sample = (uint32_t)row, .thread = (uint32_t)ret,
			.t_ns = tl_time(in, e->start_ns), .end_ns = tl_time(in, e->end_ns),
			.weight = e->weight, .tid = e->k.tid, .cpu = e->cpu,
		};
	}
	hmap_free(&seen);
	rows_reset(in);
	if (ret < 0)
		return ret;
	qsort(r->ticks, r->nticks, sizeof(*r->ticks), rtick_cmp);
	ret = resolved_number_lanes(r);
	return ret ? ret : resolved_pool_lanes(r);
}

int ingest_resolve(struct ingest *in, struct resolved *r)
{
	struct resolved meta = *r;	/* what the caller set: event, times */
	struct resolve_opts ro;

	resolve_opts_of(in, &ro);
	ingest_name_threads(in, 1);
	if (resolved_copy(&in->frozen, r))
		return -ENOMEM;
	r->event = meta.event;
	r->mode = meta.mode;
	r->rate_text = meta.rate_text;
	r->rate = meta.rate;
	r->start_unix = meta.start_unix;
	r->duration_s = meta.duration_s;
	if (profile_resolve(&in->prof, targets_all(in->ts), targets_count(in->ts),
			    targets_procs(in->ts), &in->sym, &ro, r))
		return -ENOMEM;
	if (in->opt->timeline)
		return tl_resolve(in, r);
	return 0;
}
