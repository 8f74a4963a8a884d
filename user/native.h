/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --native: names for the native (user) frames of a sample, and their merge
 * with its Python frames.
 *
 * Symbolization: each executable mapping's ELF file (read once, cached by
 * build id, else by path and inode) gives its .symtab and .dynsym function
 * symbols, plus those of its separate debug file when one is installed
 * (/usr/lib/debug/.build-id/xx/yyyy.debug, or .gnu_debuglink's name under
 * /usr/lib/debug and next to the file); C++ names are demangled. An address
 * no symbol covers reads "[libname+0xoff]". Names are cached per (ELF,
 * address): resolved once.
 *
 * Merge: every native frame in the interpreter's eval function
 * (_PyEval_EvalFrameDefault, by symbol) stands for the Python frames of one
 * eval invocation, whose first frame the BPF side marked (TB_CODE_ENTRY).
 * When the counts agree the native frame is replaced by those frames;
 * otherwise the Python frames are kept as they are, under a marker frame.
 *
 * Errors: 0 (or a count) on success, a negative errno on failure.
 */
#ifndef TB_NATIVE_H
#define TB_NATIVE_H

#include <stdint.h>
#include "hmap.h"
#include "tachyon.h"

/* One frame of a merged stack: a Python frame (its index in the stack's
 * frames, leaf = 0) or a native one (name: owned by struct native). */
struct native_item {
	int32_t py;		/* >= 0: Python frame index; -1: native */
	const char *name;	/* py < 0: "fn [libname]" */
};

/* A merged stack, outermost frame first. */
struct native_plan {
	uint32_t n;
	uint32_t matched;	/* 0: native and Python parts could not be matched */
	struct native_item it[];
};

/*
 * Memory: the files' symbol tables and their per-address names count
 * against `limit` (NATIVE_MEM_MAX by default). Past it, the file used
 * least recently loses both (counted in `dropped`): its addresses print as
 * "[libname+0xoff]" from then on, and the eval function is still known
 * (its address ranges are kept), so merging goes on. A plan owns copies of
 * its names: dropping never frees a name a stack shows.
 */
#define NATIVE_MEM_MAX		(256UL << 20)
/* Every name of one plan (each < 512 bytes, the marker included). */
#define NATIVE_ARENA		((TB_USTACK_DEPTH + 2) * 512)

struct native {
	struct hmap elves;	/* build id (else file) key -> struct nelf *, owned */
	struct hmap files;	/* file key (inode, device, path) -> struct nelf * */
	struct hmap procs;	/* pid -> struct nproc * */
	size_t bytes;		/* symbol tables and names held now */
	size_t peak;		/* ... at most */
	size_t limit;		/* bound on bytes */
	uint64_t dropped;	/* files whose symbols were dropped past it */
	uint64_t tick;		/* use clock: which file was used last */
	char *arena;		/* the names of the plan being made */
	size_t arena_len;
};

#define NATIVE_UNMATCHED	"[native unmatched]"

int native_init(struct native *nt);
void native_free(struct native *nt);
/* Forget what is known of a process's mappings (it exited or exec'd). */
void native_forget(struct native *nt, uint32_t pid);
/*
 * pid mapped new code (a dlopen): its maps read now, while it surely runs,
 * for samples there that are named later (after it may have exited).
 */
void native_refresh(struct native *nt, uint32_t pid);
/*
 * The eval function of pid's interpreter, whose main part is at eval_addr:
 * up to max parts [lo, hi) (GCC's split parts, from the symbols of the file
 * and of its debug file), that one first, then the largest. Returns how many.
 */
int native_eval_parts(struct native *nt, uint32_t pid, uint64_t eval_addr, __u64 *lo,
		      __u64 *hi, int max);
/*
 * The merged stack of process pid: ips, its native stack (leaf first), and
 * py, its Python frames (leaf first, TB_CODE_ENTRY bits still set). A
 * partial or truncated Python stack does not end on an entry frame: it
 * stays unmatched. eval_caller: the leaf's caller may be an eval frame the
 * walk skipped (TB_LEAF_EVAL_CALLER), tried if the stack does not pair up
 * as it is. NULL with errno on failure (malloc'd otherwise).
 */
struct native_plan *native_merge(struct native *nt, uint32_t pid, const uint64_t *ips,
				 int nips, const struct tb_frame *py, uint32_t depth,
				 int eval_caller);

#endif
