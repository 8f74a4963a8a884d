/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * evalsplit - the parts of the eval function that no symbol names.
 *
 * GCC moves a function's unlikely code into a part of its own
 * ("_PyEval_EvalFrameDefault.cold"), which only .symtab names. Debian
 * strips .symtab, and its PGO builds of 3.13-3.15 leave most of the eval
 * loop in that part: without the debug file, --native saw no eval frame
 * and marked every stack unmatched.
 */
#ifndef TB_EVALSPLIT_H
#define TB_EVALSPLIT_H

#include <stdint.h>

struct eval_span {
	uint64_t lo, hi;	/* ELF vaddrs, [lo, hi) */
};

/*
 * The split parts of the function at [lo, hi) of the ELF open on fd, most
 * jumped-to first: the FDEs that the function's own direct jumps land in
 * (at least EVALSPLIT_MIN_JUMPS of them), whose first row is not a function
 * entry's (CFA = rsp + 8). Returns how many (up to max) or a negative errno.
 */
#define EVALSPLIT_MIN_JUMPS	2
int eval_split_parts(int fd, uint64_t lo, uint64_t hi, struct eval_span *out, int max);

/* ---- Its steps, for the unit tests ---- */

struct tb_cfi_row;

/* The jump targets of code, loaded at vaddr, outside it; sorted. */
size_t eval_jump_targets(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *out,
			 size_t max);

struct eval_split_scan {
	const uint64_t *targets;	/* sorted */
	size_t ntargets;
	struct eval_span *out;		/* the parts found, most jumped-to first */
	unsigned *hits;			/* ... and their jumps */
	int max, n;
};

/* cfi_fde_fn on an eval_split_scan: one FDE, kept if it is a split part. */
void eval_split_fde(void *ctx, uint64_t begin, uint64_t end, const struct tb_cfi_row *first);

#endif
