/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cfi_maps - the unwind tables of the profiled processes, in the BPF maps
 * the program walks (bpf/unwind.bpf.h): each mapped ELF file's rows once
 * per build id in `cfi_rows` (bounded: TB_CFI_ROWS), each process's
 * executable mappings in `cfi_procs`.
 */
#ifndef TB_CFI_MAPS_H
#define TB_CFI_MAPS_H

#include <stdint.h>
#include <sys/types.h>

#include "tachyon.h"

struct cfi_maps_stats {
	uint64_t tables;	/* files whose rows are in the map now */
	uint64_t rows;		/* rows in the map held by running processes */
	uint64_t rows_idle;	/* rows of tables no process maps (freed when needed) */
	uint64_t max_rows;	/* the map's bound */
	uint64_t largest_free;	/* the longest free stretch of rows */
	uint64_t loaded;	/* tables loaded over the run */
	uint64_t freed;		/* tables whose rows were freed for others */
	uint64_t rows_freed;	/* their rows */
	uint64_t unfit;		/* tables refused: did not fit (frame pointers there) */
	uint64_t moved;		/* held tables moved to join free rows for another */
	uint64_t reaped;	/* processes found gone before their exit was read */
	uint64_t procs;		/* processes described */
	uint64_t rescans;	/* mappings described again (dlopen, exec) */
	uint64_t notified;	/* the BPF side's "new code in P" records */
	uint64_t uw[TB_UW_NR];	/* the BPF side's enum tb_uw_counter, summed */
};

struct cfi_maps;

/* cfi_rows' entries: TB_CFI_ROWS (a test may ask for fewer). */
uint32_t cfi_maps_capacity(void);
/* Over the maps' fds; max_rows: cfi_rows' entries; gen: the BPF side's
 * uw_gen, bumped at each change of a process's mappings. NULL with errno. */
struct cfi_maps *cfi_maps_new(int rows_fd, int procs_fd, int stats_fd, uint32_t max_rows,
			      volatile uint64_t *gen);
void cfi_maps_free(struct cfi_maps *cm);

/* Describe pid's executable mappings, loading the tables not loaded yet. */
int cfi_maps_add(struct cfi_maps *cm, pid_t pid);
void cfi_maps_del(struct cfi_maps *cm, pid_t pid);
/* The BPF side saw new code in pid (cfi_new): described again at the next rescan. */
void cfi_maps_notify(struct cfi_maps *cm, pid_t pid);
/*
 * Every process again whose executable mappings changed since (a dlopen'd
 * extension module, an exec): the notified ones at once, all of them every
 * second. Called after each read of the ring buffers.
 */
void cfi_maps_rescan(struct cfi_maps *cm);
/* The pids described again by rescans since the last call (up to max; the rest dropped). */
size_t cfi_maps_changed(struct cfi_maps *cm, pid_t *out, size_t max);
void cfi_maps_stats(struct cfi_maps *cm, struct cfi_maps_stats *out);

struct cfi_table;
struct tb_cfi_row;
/*
 * The page index of t's rows (struct tb_cfi_map, bpf/tachyon.h), npages
 * entries from page page0, into ix: entry k holds in its pc and cfa_off the
 * rows [lo, hi) that may govern an address of its page, lo the last row at
 * or below the page's start (or the first row), hi the first row beyond the
 * page's end (the last entry: every row, for the addresses above it too).
 */
void cfi_page_index(const struct cfi_table *t, uint32_t page0, uint32_t npages,
		    struct tb_cfi_row *ix);

#endif
