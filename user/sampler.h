/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF side seen from userspace: load the skeleton, size its maps, open
 * one perf event per online CPU with the program attached, expose the ring
 * buffer, the per-process layouts and the counters.
 */
#ifndef TB_SAMPLER_H
#define TB_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>
#include <bpf/libbpf.h>
#include "events.h"
#include "tachyon.h"

struct sampler_opts {
	const struct tb_event *event;
	uint64_t freq;		/* samples per second per CPU, or */
	uint64_t period;	/* one sample every `period` events */
	enum tb_mode mode;
	int kernel_stacks;	/* --kernel: capture kernel stacks */
	int report_all_exec;	/* --all-python: every exec is news */
	int read_status;	/* read GIL and GC state in every sample */
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
	int nlinks;
	int ncpus;		/* possible CPUs: per-CPU map slots */
	int stats_fd;		/* keeps kernel BPF run-time stats on */
	size_t rb_bytes;
	uint32_t counts_max;	/* entries of each counts map */
	int counts_cur;		/* the one the BPF side counts into: 0 counts, 1 counts2 */
	struct tb_count_key *count_keys;	/* drain buffers */
	uint64_t *count_vals;
};

typedef void (*sampler_count_fn)(void *ctx, const struct tb_count_key *k, uint64_t n);

int sampler_open(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen);
int sampler_attach(struct sampler *s, const struct sampler_opts *o, char *err, size_t errlen);
int sampler_add(struct sampler *s, pid_t pid, const struct tb_walk *w);
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
/* Wall mode: threads still off CPU now, for crediting at the end. */
struct offcpu_left {
	uint32_t pid, tid, flags;
	int32_t kstack;
	uint64_t stack_id;
	uint64_t periods;
};
int sampler_offcpu_left(struct sampler *s, struct offcpu_left **out);
int sampler_consume(struct sampler *s);
/*
 * Swap the in-kernel counts map for the other one (the BPF side counts on
 * in that), and hand each (key, count) of the old one to fn, clearing it.
 * Returns the number of keys read, or -1.
 */
int sampler_read_counts(struct sampler *s, sampler_count_fn fn, void *ctx);
void sampler_detach(struct sampler *s);
void sampler_close(struct sampler *s);

#endif
