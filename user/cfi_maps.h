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

struct cfi_maps_stats {
	uint64_t tables;	/* files whose rows are in the map */
	uint64_t rows;		/* rows in the map */
	uint64_t max_rows;	/* its bound */
	uint64_t unfit;		/* files whose rows did not fit (frame pointers there) */
	uint64_t procs;		/* processes described */
	uint64_t rescans;	/* mappings described again (dlopen, exec) */
	uint64_t uw[4];		/* the BPF side's enum tb_uw_counter, summed */
};

struct cfi_maps;

/* Over the maps' fds; max_rows: cfi_rows' entries; gen: the BPF side's
 * uw_gen, bumped at each change of a process's mappings. NULL with errno. */
struct cfi_maps *cfi_maps_new(int rows_fd, int procs_fd, int stats_fd, uint32_t max_rows,
			      volatile uint64_t *gen);
void cfi_maps_free(struct cfi_maps *cm);

/* Describe pid's executable mappings, loading the tables not loaded yet. */
int cfi_maps_add(struct cfi_maps *cm, pid_t pid);
void cfi_maps_del(struct cfi_maps *cm, pid_t pid);
/*
 * Every process again whose mappings changed since (a dlopen'd extension
 * module, an exec): its /proc/PID/maps fingerprint. Called periodically.
 */
void cfi_maps_rescan(struct cfi_maps *cm);
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
