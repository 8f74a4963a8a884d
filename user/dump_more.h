/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dump's Python-level extras (issue 16): thread names from threading,
 * --locals (each frame's arguments and locals, read, never executed) and
 * --json (py-spy's shape). dump.c walks the threads; these print them.
 */
#ifndef TB_DUMP_MORE_H
#define TB_DUMP_MORE_H

#include <stdint.h>
#include <sys/types.h>
#include "cli.h"
#include "pythreads.h"
#include "symbols.h"
#include "target.h"

struct stack {
	struct tb_frame frames[TB_MAX_DEPTH];
	uint64_t addr[TB_MAX_DEPTH];	/* each frame's _PyInterpreterFrame */
	uint32_t depth;
	int partial;		/* a frame could not be read */
	int truncated;		/* deeper than TB_MAX_DEPTH */
	uint64_t id;		/* the stack id a sample of it has (tb_chain_id) */
};

struct dump_ctx {
	const struct options *o;
	struct symbols *sym;
	const struct pythread *names;	/* threading's names of this process */
	int nnames;
};

/* "running", "sleeping", ... (dump.c) */
const char *dump_thread_state(pid_t pid, uint64_t tid);
int dump_holds_gil(const struct target *t, uint64_t tstate);

/* The Python name of a thread, else the kernel's comm, else "?". */
void dump_thread_name(const struct target *t, const struct dump_ctx *dx, uint64_t tid,
		      char *out, size_t len);
/* --locals: the arguments and locals of the frame at `frame`, indented. */
void dump_locals_text(const struct target *t, uint64_t code, uint64_t frame);
/* --json: "[", one object per thread, "]". */
void dump_json_begin(void);
void dump_json_thread(const struct target *t, const struct dump_ctx *dx, uint64_t tstate,
		      uint64_t tid, const struct stack *st);
void dump_json_end(void);

#endif
