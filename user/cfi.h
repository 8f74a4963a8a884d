/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cfi - unwind tables for native code without frame pointers.
 *
 * An ELF file's call frame information (.eh_frame, found through its section
 * or through .eh_frame_hdr, and .debug_frame when present) is run, FDE by
 * FDE, and reduced to struct tb_cfi_row (bpf/tachyon.h): per address range,
 * how to find the CFA, that the return address is at CFA - 8 and where the
 * caller's rbp is. Those rows are the form the BPF program will binary-search
 * in a map; cfi_unwind() is the userspace reference of that walk.
 *
 * x86-64 only. Tables are cached by build id and bounded (CFI_MAX_ROWS per
 * file, CFI_CACHE_MAX_BYTES for the cache).
 */
#ifndef TB_CFI_H
#define TB_CFI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tachyon.h"

/* Rows kept for one file: libc has ~25k, libpython ~60k, firefox's libxul ~2M. */
#define CFI_MAX_ROWS		(1u << 21)
/* The cache drops its oldest tables beyond this many bytes of rows. */
#define CFI_CACHE_MAX_BYTES	(64u << 20)

/* Told of one FDE: [begin, end) and the first row it made. */
typedef void (*cfi_fde_fn)(void *ctx, uint64_t begin, uint64_t end,
			   const struct tb_cfi_row *first);

struct cfi_table {
	struct tb_cfi_row *rows;
	size_t nrows;
	size_t cap;
	/* What the parse saw, for reports and tests. */
	uint32_t cies;
	uint32_t fdes;
	uint32_t fdes_skipped;	/* malformed, or covered by .eh_frame already */
	uint32_t hdr_fdes;	/* entries .eh_frame_hdr's search table declares */
	uint32_t unsupported;	/* rows of kind TB_CFI_UNSUPPORTED */
	int truncated;		/* CFI_MAX_ROWS reached */
	char build_id[41];	/* hex, "" if the file has none */
	/* If set, told of each FDE run: its range and its first row. */
	cfi_fde_fn on_fde;
	void *fde_ctx;
};

/* Size in bytes of the rows, as a BPF map would hold them. */
static inline size_t cfi_bytes(const struct cfi_table *t)
{
	return t->nrows * sizeof(struct tb_cfi_row);
}

/*
 * Runs the CFI of one section's bytes, loaded at vaddr, and appends its rows
 * (unsorted until cfi_finish). eh: .eh_frame format, else .debug_frame.
 * FDEs starting where prior (may be NULL) already has a row are skipped.
 * Returns the number of FDEs read or a negative errno (-EINVAL: malformed
 * at the top level; a malformed FDE alone is skipped and counted).
 */
int cfi_parse_section(struct cfi_table *t, const uint8_t *data, size_t len,
		      uint64_t vaddr, int eh, const struct cfi_table *prior);
/*
 * One encoded pointer of .eh_frame_hdr (p: its len bytes, loaded at vaddr) at
 * offset off; data-relative values are from the header's start. *next: the
 * offset after it; *ok: 0 if it could not be read or means nothing.
 */
uint64_t cfi_hdr_pointer(const uint8_t *p, size_t len, uint64_t vaddr, size_t off,
			 uint8_t enc, size_t *next, int *ok);
/* Sorts the rows, drops shadowed ones, merges equal neighbours. */
void cfi_finish(struct cfi_table *t);
void cfi_free(struct cfi_table *t);

/* The row governing pc, or NULL (no row, or a gap). */
const struct tb_cfi_row *cfi_lookup(const struct cfi_table *t, uint64_t pc);

/*
 * A whole ELF file: its .eh_frame (via .eh_frame_hdr when the section headers
 * are gone), then .debug_frame for what .eh_frame leaves uncovered.
 * 0, or a negative errno (-ENOEXEC: not an x86-64 ELF; -ENOENT: no CFI;
 * -EINVAL: .eh_frame malformed before its first FDE; -ENOMEM).
 */
int cfi_from_fd(int fd, struct cfi_table *t);
/* The same, telling on_fde of each FDE as it is run (its rows unsorted). */
int cfi_fdes_from_fd(int fd, struct cfi_table *t, cfi_fde_fn on_fde, void *ctx);
int cfi_from_mem(const void *buf, size_t len, struct cfi_table *t);

/*
 * The table of the file at path, parsed once per build id (files without
 * one: per path). The cache owns it. NULL with errno on failure.
 */
const struct cfi_table *cfi_cache_get(const char *path);
/* Tables and bytes held now, for the closing statistics. */
void cfi_cache_stats(size_t *tables, size_t *bytes);
/* Frees one table of the cache (its owner is done with it; the next get parses again). */
void cfi_cache_drop(const struct cfi_table *t);
void cfi_cache_clear(void);

/* ---- The reference unwinder ------------------------------------------------ */

/* One mapped file: runtime addresses [start, end) are ELF vaddr + bias. */
struct cfi_module {
	uint64_t start;
	uint64_t end;
	int64_t bias;
	const struct cfi_table *table;
};

struct cfi_regs {
	uint64_t rip;
	uint64_t rsp;
	uint64_t rbp;
};

/* Reads len bytes of the target at addr: 0 or a negative errno. */
typedef int (*cfi_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* bpf/unwind.h's enum tb_uw_stop, which the step rule returns. */
enum cfi_stop {
	CFI_STOP_END = 0,	/* the outermost frame (undefined return address) */
	CFI_STOP_MAX,		/* max frames recorded */
	CFI_STOP_NO_MODULE,	/* pc in no module we have a table for, no frame pointer */
	CFI_STOP_NO_ROW,	/* pc in a gap of its table, no frame pointer */
	CFI_STOP_UNSUPPORTED,	/* a row we cannot follow, or rbp lost */
	CFI_STOP_READ,		/* the stack could not be read */
	CFI_STOP_BAD,		/* the stack does not progress, or pc 0 */
};

struct cfi_unwind_result {
	int n;			/* pcs[0..n) recorded; pcs[0] is the starting rip */
	enum cfi_stop stop;
};

/*
 * Walks from regs as the BPF program will: each frame's row (looked up at
 * pc - 1 for return addresses, so a call ending a function finds its own
 * FDE; at pc itself for the first frame and after a signal frame) gives the
 * CFA, the return address at CFA - 8 and the caller's rbp; a pc without a
 * module or a row takes a frame-pointer step. The step is bpf/unwind.h's.
 */
struct cfi_unwind_result cfi_unwind(const struct cfi_module *mods, int nmods,
				    struct cfi_regs regs, cfi_read_fn rd, void *ctx,
				    uint64_t *pcs, int max);

/* A cfi_read_fn over remote_read(): ctx points at a pid_t. */
int cfi_read_remote(void *ctx, uint64_t addr, void *buf, size_t len);

/* The stop reason as a word, for messages and tests. */
const char *cfi_stop_name(enum cfi_stop s);

#endif
