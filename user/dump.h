/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tachyon-bpf dump: every thread's Python stack, once, like py-spy dump.
 * All in userspace: the interpreter's thread list and each thread's frame
 * chain are read with process_vm_readv and walked by the BPF walker's own
 * rules (bpf/pywalk.h: bounds, checks, [partial] ends, stack ids), so a
 * thread's dump is what a sample of it would record; symbols.c names the
 * code objects.
 */
#ifndef TB_DUMP_H
#define TB_DUMP_H

#include "cli.h"

#include <stdint.h>
#include "tachyon.h"
#include "target.h"

/*
 * Thread states read from a process's lists, all interpreters together:
 * as many as the BPF side's tid -> thread state cache (`tstates`) holds.
 * (The BPF side itself walks only the newest TB_MAX_THREADS of a list;
 * ingest_target_threads() enters the others in that cache.)
 */
#define DUMP_MAX_THREADS	65536

struct dump_thread {
	uint64_t tstate;
	uint64_t tid;		/* native_thread_id */
};

/* Dump every process of o->pids to stdout. Returns the exit code. */
int dump_main(const struct options *o);
/* Every thread of every interpreter, in list order (newest first); a negative errno on error. */
int dump_threads(const struct target *t, struct dump_thread *out, int max);
/*
 * The stack of thread state `tstate` as the BPF walker records it: frames
 * leaf first, stack_id as the BPF side computes it; *flags gets
 * TB_SF_PARTIAL and TB_SF_TRUNCATED. -ENOENT if it has no Python frame.
 */
int dump_stack(const struct target *t, uint64_t tstate, struct tb_stack *rec, uint32_t *flags);

#endif
