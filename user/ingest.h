/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Sample ingest: what the BPF side sends (samples, stacks) and counts in
 * the kernel becomes the live profile, symbolized as it arrives while the
 * processes are alive. Samples wait here for a stack still on its way;
 * threads are named in batches; wall mode's off-CPU time is credited for
 * threads already blocked at the start and still blocked at the end. A
 * finished process's rows are folded into the frozen profile, and so,
 * every compaction, are the live ones: memory stays flat.
 */
#ifndef TB_INGEST_H
#define TB_INGEST_H

#include <stddef.h>
#include <stdint.h>
#include "cli.h"
#include "profile.h"
#include "sampler.h"
#include "session.h"	/* struct ingest_counts */
#include "symbols.h"
#include "targets.h"

struct ingest;

/* Samples of the targets in ts, read through sampler: NULL with errno set. */
struct ingest *ingest_new(const struct options *o, struct sampler *sampler, struct targets *ts);
void ingest_free(struct ingest *in);

/* One ring-buffer record that is not a process event: a sample or a stack
 * (anything else counts as a bad record). */
void ingest_record(struct ingest *in, const void *data, size_t size);
/* Bring the samples counted in the kernel into the profile. */
void ingest_read_counts(struct ingest *in);
/* --native: where the eval function of pid's interpreter lies (its main
 * part at eval_addr, 0 if unknown), into a's eval parts for the BPF side. */
void ingest_eval_parts(struct ingest *in, pid_t pid, uint64_t eval_addr, struct tb_addrs *a);
/* Retry samples that arrived before their stack; `final` gives up on them. */
void ingest_flush(struct ingest *in, int final);
/* Does a sample of this target still wait for its stack? */
int ingest_pending_for(const struct ingest *in, uint32_t target);
/* t is over: fold its samples into the frozen profile, forget its code
 * objects, and drop it from the registry (t is freed). */
void ingest_freeze(struct ingest *in, struct target *t);
/* --native: pid mapped new code; its mappings are read for the symbols now. */
void ingest_native_refresh(struct ingest *in, uint32_t pid);
/* Fold every live target (drop those that exited): memory stays flat. */
void ingest_compact(struct ingest *in);
/* Name the threads seen since the last call (at most every 0.2 s per
 * process unless `force`). */
void ingest_name_threads(struct ingest *in, int force);
/* Wall mode: t's threads blocked now count as away since `since`. */
void ingest_seed_offcpu(struct ingest *in, struct target *t, uint64_t since);
/*
 * t became a target: with more threads than the BPF side searches, its
 * thread states go into the BPF side's cache (seed_tstates()).
 */
void ingest_target_threads(struct ingest *in, struct target *t);
/* The processes with more threads than the BPF side searches, when due. */
void ingest_recheck_threads(struct ingest *in);
/* Wall mode: threads still blocked at end_ns get their time too. */
void ingest_credit_offcpu(struct ingest *in, uint64_t end_ns);
/* --async-aware wall mode: read the waiting tasks of event loop threads
 * off CPU now (async_wait.h); ingest_polls_async(): whether it does. */
void ingest_poll_async(struct ingest *in);
int ingest_polls_async(const struct ingest *in);
/* --timeline: the run's start (CLOCK_MONOTONIC ns), time 0 of the samples. */
void ingest_set_start(struct ingest *in, uint64_t start_ns);
/* The symbolized profile (frozen + live) added to r, whose metadata the
 * caller set: 0 or -ENOMEM. */
int ingest_resolve(struct ingest *in, struct resolved *r);

const struct ingest_counts *ingest_counts(const struct ingest *in);
const struct symbols *ingest_symbols(const struct ingest *in);
/* Samples counted into the live profile so far. */
uint64_t ingest_samples(const struct ingest *in);

#endif
