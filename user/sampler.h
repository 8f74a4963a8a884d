/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF side seen from userspace: load the skeleton, size its maps, drive
 * sampling (the scheduler tick; or perf events, one per thread of the
 * targets or one per online CPU), expose the ring buffer, the per-process
 * layouts and the counters.
 */
#ifndef TB_SAMPLER_H
#define TB_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "hmap.h"
#include "tachyon.h"

/* Above this many threads, per-task events give way to per-CPU ones. */
#define TB_MAX_TASK_EVENTS 1024

struct sampler_opts {
	const struct tb_event *event;
	uint64_t freq;		/* samples per second per CPU, or */
	uint64_t period;	/* one sample every `period` events */
	double rate_hz;		/* samples per second per CPU as sampled */
	unsigned tick_every;	/* the tick event: every Nth tick */
	/*
	 * Per-task perf events: one per thread of these processes, inherited
	 * by the threads they start (and with follow_forks by their children),
	 * so that no CPU is interrupted unless it runs one of them. None:
	 * one event per online CPU.
	 */
	const pid_t *tasks;
	int ntasks;
	int follow_forks;
	enum tb_mode mode;
	int kernel_stacks;	/* --kernel: capture kernel stacks */
	int native_stacks;	/* --native: capture user stacks */
	int native_fp;		/* --native=fp: by frame pointers only, no unwind tables */
	int report_all_exec;	/* --all-python: every exec is news */
	int read_status;	/* read GIL and GC state in every sample */
	int timeline;		/* every sample a timed record, none counted in the kernel */
	int async_aware;	/* --async-aware: read asyncio task chains */
	int kernel_stats;	/* turn the kernel's BPF run-time statistics on */
	const char *btf_path;	/* the kernel's types for CO-RE, NULL: its own */
	ring_buffer_sample_fn on_record;
	void *ctx;
};

struct sampler {
	struct tachyon_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	int *pfds;
	int nlinks, cap;
	int ncpus;		/* possible CPUs: per-CPU map slots */
	int tick;		/* sampling on the scheduler tick, no perf event */
	int tailcall;		/* the walker without bpf_loop (sampler_walker()) */
	struct bpf_program *sample_prog;	/* the program on the perf events or the tick */
	int per_task;		/* the perf events follow threads, not CPUs: */
	pid_t *tids;		/* ... the thread of each event (with pfds) */
	int task_events;	/* ... opened so far (the rest are inherited) */
	int stats_fd;		/* keeps kernel BPF run-time stats on */
	size_t rb_bytes;
	uint32_t counts_max;	/* entries of each counts map */
	int counts_cur;		/* the one the BPF side counts into: 0 counts, 1 counts2 */
	struct tb_count_key *count_keys;	/* drain buffers */
	uint64_t *count_vals;
	struct tb_count_key *count_gone;	/* ... the keys a drain frees */
	struct cfi_maps *cfi;	/* --native's unwind tables, NULL: frame pointers */
};

typedef void (*sampler_count_fn)(void *ctx, const struct tb_count_key *k, uint64_t n);

int sampler_open(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen);
/* The stack walker loaded: "bpf_loop" or "tail-call" (bounded loops, tail calls). */
const char *sampler_walker(const struct sampler *s);
int sampler_attach(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen);
/* With per-task events: follow pid's threads too (0, or a negative errno). */
int sampler_follow(struct sampler *s, const struct sampler_opts *o, pid_t pid);
/*
 * Per-task events: every process that may exist without inheriting one has
 * been followed (the targets, and with -s the descendants found at start);
 * from now on every new task inherits its creator's event, or none.
 */
void sampler_setup_done(struct sampler *s);
int sampler_add(struct sampler *s, pid_t pid, const struct tb_walk *w);
int sampler_add_async(struct sampler *s, pid_t pid, const struct tb_async *a);
int sampler_del(struct sampler *s, pid_t pid);
/* Hear of pid's exec/fork/exit; follow: its children too. */
int sampler_watch(struct sampler *s, pid_t pid, int follow);
/* Sums of the per-CPU counters. */
int sampler_counters(struct sampler *s, uint64_t c[TB_NR_COUNTERS]);
/* Kernel BPF run-time statistics of the program: total ns and runs. */
int sampler_prog_stats(struct sampler *s, uint64_t *run_ns, uint64_t *run_cnt);
int sampler_rb_fd(struct sampler *s);
/* Userspace dropped these stacks: the BPF side must send them again if seen. */
void sampler_forget_stacks(struct sampler *s, const uint64_t *ids, size_t n);
/* ... and every stack at once. */
void sampler_forget_all_stacks(struct sampler *s);
/* Kernel stack `id` into ips (up to max); returns the number of frames. */
int sampler_kstack(struct sampler *s, int32_t id, uint64_t *ips, int max);
/* Wall mode: threads still off CPU at `now` (sampler_now_ns()), credited up to it. */
struct offcpu_left {
	uint32_t pid, tid, flags;
	int32_t kstack;
	uint64_t stack_id;
	uint64_t periods;
	uint64_t since;		/* left the CPU at (CLOCK_MONOTONIC ns) */
	uint64_t leaf;		/* --native: the pc it left at, 0 if none */
};
int sampler_offcpu_left(struct sampler *s, uint64_t now, struct offcpu_left **out);
/* CLOCK_MONOTONIC in ns: the clock of the BPF side's time stamps. */
uint64_t sampler_now_ns(void);
/*
 * Wall mode: tid of pid is off CPU in stack_id since `since` (a thread
 * already blocked when it became a target). Unless the BPF side has an
 * entry for it already, it credits the time at switch-in, or the end does.
 */
int sampler_offcpu_seed(struct sampler *s, uint32_t pid, uint32_t tid, uint64_t stack_id,
			uint32_t flags, uint64_t since);
/* Enter thread state `tstate` for global tid in the BPF side's cache, unless
 * it holds one for tid already: 0, or a negative errno. */
int sampler_tstate_seed(struct sampler *s, uint32_t tid, uint64_t tstate);
/* Take back a seeded entry of tid (since `since`) if still there and away. */
void sampler_offcpu_unseed(struct sampler *s, uint32_t tid, uint64_t since);
/* Wall mode: tid's entry in the offcpu map (0, or a negative errno). */
int sampler_offcpu_get(struct sampler *s, uint32_t tid, struct tb_offcpu *out);
/* Add the stack ids of every thread still off CPU to ids (keys: uint64_t). */
int sampler_offcpu_away(struct sampler *s, struct hmap *ids);
int sampler_consume(struct sampler *s);
/*
 * Swap the in-kernel counts map for the other one (the BPF side counts on
 * in that), and hand each (key, count) of the old one to fn, clearing it.
 * Returns the number of keys read, or a negative errno.
 */
int sampler_read_counts(struct sampler *s, sampler_count_fn fn, void *ctx);
void sampler_detach(struct sampler *s);
/* --native: describe again the processes whose mappings changed (dlopen). */
void sampler_native_rescan(struct sampler *s);
/* --native: the pids that mapped new code since the last call. */
size_t sampler_native_changed(struct sampler *s, pid_t *out, size_t max);
/* --native: pid's incarnation is over (exit, exec): its tables' holds released. */
void sampler_native_forget(struct sampler *s, pid_t pid);
struct cfi_maps_stats;
/* --native's unwind tables: what they hold and did; -ENOENT: not in use. */
int sampler_native_stats(struct sampler *s, struct cfi_maps_stats *out);
void sampler_close(struct sampler *s);

#endif
