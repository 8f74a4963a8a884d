/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Code object address -> qualname, file, line. Each code object of a
 * process is read once (batched process_vm_readv) and cached under
 * (target, address, fingerprint), so a recycled address with a different
 * co_version is a different entry.
 */
#ifndef TB_SYMBOLS_H
#define TB_SYMBOLS_H

#include <stdint.h>
#include "hmap.h"
#include "linetable.h"
#include "tachyon.h"
#include "target.h"

struct code_info {
	uint64_t addr;
	char *qualname;		/* UTF-8; NULL if the object could not be read */
	char *filename;		/* UTF-8, full path as CPython has it */
	int32_t firstlineno;
	int hidden;		/* an interpreter shim, not user code (3.13+ __init__ cleanup) */
	uint32_t epoch;		/* the symbols epoch it was last used in */
	uint32_t tries;		/* reads that failed; retried while below a bound */
	double retry_at;	/* monotonic seconds: the earliest next read */
	struct linetable lt;
	/* With --opcodes: the opcode byte of each code unit of the live
	 * (specialised) bytecode as read; NULL if not read. */
	uint8_t *ops;
	uint32_t nops;
};

struct symbols {
	struct hmap codes;	/* struct code_key -> struct code_info * */
	uint64_t lookups, reads;
	uint64_t failures;	/* code objects unreadable (so far: a retry may read them) */
	uint64_t evicted;	/* entries dropped as unused (symbols_evict) */
	uint32_t epoch;		/* advanced by symbols_next_epoch */
	int opcodes;		/* read each code object's bytecode too (--opcodes) */
};

int symbols_init(struct symbols *s);
void symbols_free(struct symbols *s);
/* Read every code object of these frames that is not cached yet. */
void symbols_resolve(struct symbols *s, const struct target *t,
		     const struct tb_frame *frames, uint32_t n);
/* Drop every cached code object of one target (its process is gone). */
void symbols_forget(struct symbols *s, uint32_t target);
/*
 * The cache is an LRU by epochs: drop one target's entries that were not
 * used in the current epoch, then (once for all targets) start a new one.
 * An entry survives as long as it is used at least once per epoch.
 */
void symbols_evict(struct symbols *s, uint32_t target);
void symbols_next_epoch(struct symbols *s);
/*
 * The cached entry (after symbols_resolve); never NULL. One that could not
 * be read is read again here or in symbols_resolve once its retry is due.
 */
const struct code_info *symbols_get(struct symbols *s, const struct target *t,
				    const struct tb_frame *f);
/* One frame as the writers see it. Strings point into the cache (or buf). */
struct sym_frame {
	const char *name;	/* qualname, or "<unknown 0x...>" */
	const char *file;	/* shortened unless full_paths; "" if unknown */
	int32_t line;		/* executing line (the call, in callers) */
	int32_t firstlineno;
	int hidden;		/* leave this frame out */
	char buf[40];
};

void symbols_frame(const struct code_info *ci, const struct tb_frame *f,
		   const struct target *t, int full_paths, struct sym_frame *out);
/*
 * The instruction frame f was executing, as its interpreter names it
 * ("BINARY_OP_ADD_INT", "<op N>" in buf for an unnamed byte); NULL for a
 * frame not started or when the bytecode was not read.
 */
const char *symbols_opcode(const struct code_info *ci, const struct tb_frame *f,
			   const struct target *t, char *buf, size_t len);
/* The short form of a file name, as py-spy shows it (exposed for tests). */
const char *symbols_short_path(const char *path, const char *cwd, size_t cwd_len);

#endif
