/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the running kernel offers of the BPF features the profiler uses,
 * probed before loading: a kernel that lacks one is refused in one line
 * naming the feature and the Linux version that has it, not by a verifier
 * log.
 */
#ifndef TB_KFEATURES_H
#define TB_KFEATURES_H

#include <stdbool.h>

enum kfeature {
	KF_BPF_LOOP,		/* the stack walker (without: bounded loops, tail calls) */
	KF_RINGBUF,		/* samples and events to userspace */
	KF_TP_BTF,		/* the scheduler tracepoints */
	KF_BATCH_OPS,		/* draining the in-kernel counts */
	KF_MAP_IN_MAP,		/* swapping the counts maps */
	KF_NS_PID,		/* bpf_get_ns_current_pid_tgid: targets in containers */
	KF_RUN_STATS,		/* --stats / -v: the kernel's BPF run-time statistics */
	KF_HRTIMER_TP,		/* tp_btf/hrtimer_expire_entry */
	KF_TASK_PT_REGS,	/* --native's unwind tables: the task's user registers */
	KF_NR,
};

#define KF_BIT(f)	(1u << (f))
/* What every run needs. */
#define KF_REQUIRED	(KF_BIT(KF_RINGBUF) | KF_BIT(KF_TP_BTF) | \
			 KF_BIT(KF_BATCH_OPS) | KF_BIT(KF_MAP_IN_MAP) | KF_BIT(KF_NS_PID))
/* Probed by every check, never refused: bpf_loop chooses the stack walker. */
#define KF_CHOICES	KF_BIT(KF_BPF_LOOP)

/*
 * Probe the features in `need` (KF_BIT mask; with verbose every feature, and
 * each result goes to the debug output). Prints one error line naming what
 * is missing and returns -1 if the kernel lacks any of `need`.
 */
int kfeatures_check(unsigned int need, int verbose);
/* The result of the last probe of f (false if it was not probed). */
bool kfeature_has(enum kfeature f);
/* The result of the probe of f, probing it now if it was not. */
bool kfeature_probe(enum kfeature f);

#endif
