// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The unwind tables of the profiled processes, loaded into the BPF maps the
 * program walks (bpf/unwind.bpf.h). A file's rows go in once, by build id
 * (cfi_cache_get()'s cache), into a free stretch of `cfi_rows` (first fit,
 * cfi_alloc.c); each process mapping holds its file's table, and a table
 * nobody holds any more is freed (its rows reused, its cache copy dropped)
 * when another needs the room. A file that still does not fit is said once
 * and left to frame-pointer steps.
 * Each process's executable mappings are described in `cfi_procs`, sorted
 * by address, with their load bias: all of them when they fit, those
 * without rows too, so the BPF side knows a pc in none of them for new code
 * (cfi_notify.bpf.h). New mappings (an extension module imported after the
 * start, an exec) are described again when the BPF side reports them (an
 * executable mmap, or that pc), and every RESCAN_NS (1 s) anyway.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/membarrier.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cfi.h"
#include "cfi_alloc.h"
#include "cfi_maps.h"
#include "errors.h"
#include "proc.h"

struct described {
	pid_t pid;
	int pending;		/* told of new code: look again at the next rescan */
	uint64_t fingerprint;	/* of its executable mappings */
	const struct cfi_table **held;	/* a hold per mapping with rows */
	size_t nheld, capheld;
};

struct cfi_maps {
	int rows_fd, procs_fd, stats_fd;
	volatile uint64_t *gen;	/* the BPF side's uw_gen: its memo of rows */
	struct cfi_store store;
	struct described *procs;
	size_t nprocs, capprocs;
	struct cfi_maps_stats st;
	int said_maps;		/* TB_CFI_MAPS exceeded, said once */
	int said_unfit;		/* a table refused, said once */
	uint64_t last_rescan;	/* CLOCK_MONOTONIC ns */
	pid_t changed[64];	/* described again since cfi_maps_changed() */
	size_t nchanged;
	/* The scan under way: its pid, the description, and the tables it holds. */
	pid_t scanning;
	struct tb_cfi_proc desc;
	const struct cfi_table **held;
	size_t nheld, capheld;
};

/*
 * How often every process's mappings are compared anyway, for new code the
 * BPF side did not report (cfi_notify.bpf.h: a lost record, a process with
 * more mappings than cfi_procs lists). Reading /proc/PID/maps costs tens of
 * microseconds a process: every 100 ms, as before the reports, 100
 * processes would take some 5 % of a CPU (an estimate).
 */
#define RESCAN_NS	(1000 * 1000000ULL)

/* Rows written per batch update. */
#define BATCH 4096

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, (*cap ? *cap * 2 : 16) * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = *cap ? *cap * 2 : 16;
	return 0;
}

/* The store freed a table's rows (or forgot a refused one): so can the cache. */
static void forget_table(void *ctx, const void *key)
{
	(void)ctx;
	cfi_cache_drop(key);
}

static int write_table(int fd, const struct cfi_table *t, uint32_t first);
static void forget_rows(struct cfi_maps *cm);

/* d's entries in a description that use the rows at from: at to now. */
static int repoint(struct tb_cfi_proc *d, uint32_t from, uint32_t to)
{
	uint32_t i, n = 0;

	for (i = 0; i < d->n && i < TB_CFI_MAPS; i++)
		if (d->maps[i].nrows && d->maps[i].first == from) {
			d->maps[i].first = to;
			n++;
		}
	return n;
}

/*
 * Every program run that may have read a description from before now has
 * ended: the programs run under RCU, and membarrier's global command waits
 * for a grace period (where it is refused, 20 ms: a walk takes microseconds).
 */
static void wait_readers(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		usleep(20000);
}

/*
 * The store's move hook: a held table's rows and index copied to to, the
 * processes that map it (and the scan under way) pointed there, then the
 * walks that may still use from waited for, as the store frees it next.
 */
static int move_table(void *ctx, const void *key, uint32_t from, uint32_t to, uint32_t n)
{
	struct cfi_maps *cm = ctx;
	struct tb_cfi_proc *d = malloc(sizeof(*d));
	__u32 pid;
	size_t i;
	int err = d ? write_table(cm->rows_fd, key, to) : -ENOMEM;

	(void)n;
	for (i = 0; !err && i < cm->nprocs; i++) {
		pid = (__u32)cm->procs[i].pid;
		if (!bpf_map_lookup_elem(cm->procs_fd, &pid, d) && repoint(d, from, to) &&
		    bpf_map_update_elem(cm->procs_fd, &pid, d, BPF_EXIST))
			err = -errno;
	}
	free(d);
	if (err)
		return err;
	repoint(&cm->desc, from, to);
	forget_rows(cm);
	wait_readers();
	return 0;
}

/*
 * The store's reap hook, for a table that does not fit: the holds of the
 * processes that are gone although their exit has not been read yet (with
 * --all-python a process found by the scan of /proc may be described
 * before the ring buffer's exit record of the one before it). Not the
 * process being described.
 */
static int reap_gone(void *ctx)
{
	struct cfi_maps *cm = ctx;
	size_t i = 0;
	int n = 0;

	while (i < cm->nprocs) {
		if (cm->procs[i].pid != cm->scanning && proc_gone(cm->procs[i].pid)) {
			cfi_maps_del(cm, cm->procs[i].pid);	/* the last entry moves to i */
			n++;
		} else {
			i++;
		}
	}
	return n;
}

/*
 * TB_CFI_ROWS, or fewer by the environment's TB_DEBUG_CFI_ROWS: a debugging
 * aid that lets a test fill the map quickly (tests/integration/test_native.py).
 */
uint32_t cfi_maps_capacity(void)
{
	const char *e = getenv("TB_DEBUG_CFI_ROWS");
	char *end;
	unsigned long v;

	if (!e || !*e)
		return TB_CFI_ROWS;
	v = strtoul(e, &end, 10);
	return *end || !v || v > TB_CFI_ROWS ? TB_CFI_ROWS : (uint32_t)v;
}

struct cfi_maps *cfi_maps_new(int rows_fd, int procs_fd, int stats_fd, uint32_t max_rows,
			      volatile uint64_t *gen)
{
	struct cfi_maps *cm = calloc(1, sizeof(*cm));

	if (!cm)
		return NULL;
	if (cfi_store_init(&cm->store, max_rows, forget_table, cm)) {
		free(cm);
		errno = ENOMEM;
		return NULL;
	}
	cfi_store_hooks(&cm->store, move_table, reap_gone);
	cm->rows_fd = rows_fd;
	cm->procs_fd = procs_fd;
	cm->stats_fd = stats_fd;
	cm->gen = gen;
	return cm;
}

void cfi_maps_free(struct cfi_maps *cm)
{
	size_t i;

	if (!cm)
		return;
	for (i = 0; i < cm->nprocs; i++)
		free(cm->procs[i].held);
	cfi_store_release(&cm->store);
	free(cm->held);
	free(cm->procs);
	free(cm);
}

/* rows[0, n) to cfi_rows[first...]. */
static int write_rows(int fd, const struct tb_cfi_row *rows, size_t n, uint32_t first)
{
	uint32_t keys[BATCH], i, k, count;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	for (i = 0; i < n; i += count) {
		count = n - i < BATCH ? (uint32_t)(n - i) : BATCH;
		for (k = 0; k < count; k++)
			keys[k] = first + i + k;
		if (bpf_map_update_batch(fd, keys, &rows[i], &count, &opts))
			return -errno;
	}
	return 0;
}

void cfi_page_index(const struct cfi_table *t, uint32_t page0, uint32_t npages,
		    struct tb_cfi_row *ix)
{
	size_t below = 0, before = 0;	/* rows <= the page's start; < its end */
	uint64_t start;
	uint32_t k;

	for (k = 0; k < npages; k++) {
		start = (uint64_t)(page0 + k) << TB_CFI_PAGE_SHIFT;
		while (below < t->nrows && t->rows[below].pc <= start)
			below++;
		while (before < t->nrows && t->rows[before].pc < start + (1u << TB_CFI_PAGE_SHIFT))
			before++;
		ix[k] = (struct tb_cfi_row){
			.pc = below ? (uint32_t)below - 1 : 0,
			.cfa_off = (int32_t)(k + 1 == npages ? t->nrows : before),
		};
	}
}

/* t's page index (cfi_page_index()) into cfi_rows[first...]. */
static int write_index(int fd, const struct cfi_table *t, uint32_t page0, uint32_t npages,
		       uint32_t first)
{
	struct tb_cfi_row *ix = calloc(npages, sizeof(*ix));
	int err;

	if (!ix)
		return -ENOMEM;
	cfi_page_index(t, page0, npages, ix);
	err = write_rows(fd, ix, npages, first);
	free(ix);
	return err;
}

/*
 * The pages t's index covers (page0 the first): its rows' span in pages,
 * 0 (no index: the rows searched whole) for a file sparser than a row a
 * page. The index goes right after the rows, in the same stretch.
 */
static uint32_t index_pages(const struct cfi_table *t, uint32_t *page0)
{
	uint32_t n;

	*page0 = t->rows[0].pc >> TB_CFI_PAGE_SHIFT;
	n = (t->rows[t->nrows - 1].pc >> TB_CFI_PAGE_SHIFT) - *page0 + 1;
	return n > t->nrows ? 0 : n;
}

/* Rows and page index of t to cfi_rows[first...]. */
static int write_table(int fd, const struct cfi_table *t, uint32_t first)
{
	uint32_t page0, npages = index_pages(t, &page0);
	int err = write_rows(fd, t->rows, t->nrows, first);

	if (!err && npages)
		err = write_index(fd, t, page0, npages, first + (uint32_t)t->nrows);
	return err;
}

/*
 * One more hold on t's rows in the map, written the first time: *h their
 * place (h->n 0: they did not fit, or failed to load). 0, or -ENOMEM.
 */
static int load_table(struct cfi_maps *cm, const struct cfi_table *t, const char *path,
		      struct cfi_held *h)
{
	uint32_t page0, size = (uint32_t)t->nrows + index_pages(t, &page0);
	int ret = cfi_store_get(&cm->store, t, size, h), err;
	uint64_t held, idle;

	if (ret < 0)
		return ret;
	if (!h->n && !cm->said_unfit++) {
		cfi_store_rows(&cm->store, &held, &idle);
		tb_warn("--native: unwind table of %s: does not fit (%zu rows, %" PRIu64 " of %u held by running processes) (its frames are unwound by frame pointers where it has them; --native=fp for all)",
			path, t->nrows, held, cm->store.x.cap);
	}
	if (ret == 0)
		return 0;
	err = write_table(cm->rows_fd, t, h->first);
	if (err) {
		tb_warn("--native: unwind table of %s: cannot load: %s (its frames are unwound by frame pointers)",
			path, strerror(-err));
		cfi_store_drop(&cm->store, t);
		h->n = 0;
	}
	return 0;
}

/* The load bias of a mapping at file offset off: start - its ELF vaddr. */
static int map_bias(const char *path, const struct proc_map *m, uint64_t *bias)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -ENOENT;
	Elf *elf;
	GElf_Phdr ph;
	size_t i, n;

	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getphdrnum(elf, &n)) {
		for (i = 0; i < n && ret; i++) {
			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    m->offset < (ph.p_offset & ~0xfffULL) ||
			    m->offset >= ph.p_offset + ph.p_filesz)
				continue;
			*bias = m->start - (ph.p_vaddr + m->offset - ph.p_offset);
			ret = 0;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* The table of a mapping's file, held for the scan under way; NULL if none. */
static const struct cfi_table *hold(struct cfi_maps *cm, const char *path,
				    const struct proc_map *m, struct cfi_held *h)
{
	const struct cfi_table *t;

	t = cfi_cache_get(path);
	if (!t || !t->nrows || grow((void **)&cm->held, &cm->capheld, cm->nheld, sizeof(*cm->held)))
		return NULL;
	if (load_table(cm, t, m->path, h))
		return NULL;
	if (!h->n) {
		cfi_store_put(&cm->store, t);
		return NULL;
	}
	cm->held[cm->nheld++] = t;
	return t;
}

/*
 * One executable mapping into cm->desc: with its file's rows if they are
 * in the map, else (with all: every mapping is listed) without.
 */
static void describe(struct cfi_maps *cm, pid_t pid, const struct proc_map *m, int all)
{
	char path[4200];
	struct cfi_held h = { .n = 0 };
	const struct cfi_table *t;
	uint32_t page0 = 0, npages = 0;
	uint64_t bias = 0;

	/* No file (anonymous, a JIT's): frame-pointer steps there. */
	t = proc_map_file(pid, m, path, sizeof(path)) ? NULL : hold(cm, path, m, &h);
	if (!t || map_bias(path, m, &bias)) {
		h.n = 0;
		bias = 0;
	}
	if (!h.n && !all)
		return;
	if (cm->desc.n == TB_CFI_MAPS)
		return;		/* not all: said by the caller */
	if (h.n)	/* h.n: the rows and their index */
		npages = index_pages(t, &page0);
	cm->desc.maps[cm->desc.n++] = (struct tb_cfi_map){
		.start = m->start, .end = m->end, .bias = bias, .first = h.first,
		.nrows = h.n ? (uint32_t)t->nrows : 0, .page0 = page0, .npages = npages,
	};
}

/* A process's mappings changed: the BPF side's memo of rows starts over. */
static void forget_rows(struct cfi_maps *cm)
{
	__atomic_add_fetch(cm->gen, 1, __ATOMIC_SEQ_CST);
}

static struct described *described_of(struct cfi_maps *cm, pid_t pid)
{
	size_t i;

	for (i = 0; i < cm->nprocs; i++)
		if (cm->procs[i].pid == pid)
			return &cm->procs[i];
	return NULL;
}

/*
 * An executable mapping the BPF side can search for: [vsyscall] lies above
 * 2^63, where uw_map()'s branchless comparison does not hold (a pc there
 * is never taken for new code).
 */
static int is_code(const struct proc_map *m)
{
	return m->perms[2] == 'x' && !(m->start >> 63);
}

/* The executable mappings of an open /proc/PID/maps: their count and a hash (never 1). */
static uint64_t exec_fingerprint(FILE *f, size_t *count)
{
	uint64_t h = 1469598103934665603ULL;
	char line[4608];
	size_t i;

	*count = 0;
	while (fgets(line, sizeof(line), f)) {
		struct proc_map m;

		if (proc_parse_maps_line(line, &m) || !is_code(&m))
			continue;
		(*count)++;
		for (i = 0; line[i]; i++)
			h = (h ^ (uint8_t)line[i]) * 1099511628211ULL;
	}
	return h | 1;
}

static uint64_t pid_fingerprint(pid_t pid)
{
	char p[64];
	size_t n;
	uint64_t fp;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/maps", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return 1;
	fp = exec_fingerprint(f, &n);
	fclose(f);
	return fp;
}

/* d's holds are now the scan's: the old ones released after (a table in both stays). */
static void swap_holds(struct cfi_maps *cm, struct described *d)
{
	const struct cfi_table **old = d->held;
	size_t nold = d->nheld, capold = d->capheld, i;

	d->held = cm->held;
	d->nheld = cm->nheld;
	d->capheld = cm->capheld;
	for (i = 0; i < nold; i++)
		cfi_store_put(&cm->store, old[i]);
	cm->held = old;
	cm->nheld = 0;
	cm->capheld = capold;
}

/* The scan of f into cm->desc; all: every executable mapping fits in it. */
static void scan(struct cfi_maps *cm, pid_t pid, FILE *f, int all)
{
	char *line = NULL;
	size_t len = 0;
	struct proc_map m;

	memset(&cm->desc, 0, sizeof(cm->desc));
	cm->desc.complete = all;
	cm->nheld = 0;
	while (getline(&line, &len, f) > 0)
		if (!proc_parse_maps_line(line, &m) && is_code(&m))
			describe(cm, pid, &m, all);
	free(line);
	if (!all && cm->desc.n == TB_CFI_MAPS && !cm->said_maps++)
		tb_warn("--native: process %d: more than %d executable mappings (those without tables and those past the %d-th are unwound by frame pointers)",
			(int)pid, TB_CFI_MAPS, TB_CFI_MAPS);
}

static struct described *new_described(struct cfi_maps *cm, pid_t pid)
{
	struct described *d;

	if (grow((void **)&cm->procs, &cm->capprocs, cm->nprocs, sizeof(*cm->procs)))
		return NULL;
	d = &cm->procs[cm->nprocs++];
	*d = (struct described){ .pid = pid };
	cm->st.procs++;
	return d;
}

int cfi_maps_add(struct cfi_maps *cm, pid_t pid)
{
	struct described *d = described_of(cm, pid);
	__u32 key = (__u32)pid;
	char p[64];
	size_t count;
	FILE *f;
	int ret = 0;

	if (d)
		cm->st.rescans++;
	else if (!(d = new_described(cm, pid)))
		return -ENOMEM;
	/*
	 * A new process is looked at again at the next rescan: the caller
	 * makes it known to the BPF side (procs) only after this scan, and
	 * on_mmap_exec reports nothing for it until then (seen: the modules
	 * its first imports map, left to the 1 s rescan).
	 */
	d->pending = !(d->fingerprint);
	snprintf(p, sizeof(p), "/proc/%d/maps", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return -errno;
	d->fingerprint = exec_fingerprint(f, &count);
	rewind(f);
	cm->scanning = pid;
	scan(cm, pid, f, count <= TB_CFI_MAPS);
	cm->scanning = 0;
	fclose(f);
	d = described_of(cm, pid);	/* a reap during the scan moves entries */
	if (!cm->nheld)		/* frame pointers only: bpf_get_stack() */
		bpf_map_delete_elem(cm->procs_fd, &key);
	else if (bpf_map_update_elem(cm->procs_fd, &key, &cm->desc, BPF_ANY))
		ret = -errno;
	swap_holds(cm, d);
	forget_rows(cm);
	return ret;
}

void cfi_maps_del(struct cfi_maps *cm, pid_t pid)
{
	struct described *d = described_of(cm, pid);
	__u32 key = (__u32)pid;
	size_t i;

	bpf_map_delete_elem(cm->procs_fd, &key);
	forget_rows(cm);
	if (!d)
		return;
	for (i = 0; i < d->nheld; i++)
		cfi_store_put(&cm->store, d->held[i]);
	free(d->held);
	*d = cm->procs[--cm->nprocs];
}

void cfi_maps_notify(struct cfi_maps *cm, pid_t pid)
{
	struct described *d = described_of(cm, pid);

	cm->st.notified++;
	if (d)
		d->pending = 1;
}

/* pid again if its executable mappings changed (1: exited, or unreadable). */
static void rescan_one(struct cfi_maps *cm, struct described *d)
{
	pid_t pid = d->pid;	/* d may move: cfi_maps_add() may reap */
	uint64_t fp = pid_fingerprint(pid);

	d->pending = 0;
	if (fp == d->fingerprint || fp == 1)
		return;
	cfi_maps_add(cm, pid);
	if (cm->nchanged < sizeof(cm->changed) / sizeof(cm->changed[0]))
		cm->changed[cm->nchanged++] = pid;
}

size_t cfi_maps_changed(struct cfi_maps *cm, pid_t *out, size_t max)
{
	size_t n = cm->nchanged < max ? cm->nchanged : max;

	memcpy(out, cm->changed, n * sizeof(*out));
	cm->nchanged = 0;
	return n;
}

void cfi_maps_rescan(struct cfi_maps *cm)
{
	struct timespec ts;
	uint64_t now;
	int all;
	size_t i;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	all = now - cm->last_rescan >= RESCAN_NS;
	if (all)
		cm->last_rescan = now;
	for (i = 0; i < cm->nprocs; i++)
		if (all || cm->procs[i].pending)
			rescan_one(cm, &cm->procs[i]);
}

void cfi_maps_stats(struct cfi_maps *cm, struct cfi_maps_stats *out)
{
	int ncpus = libbpf_num_possible_cpus(), c, k;
	size_t i;
	const struct cfi_store_stats *ss = &cm->store.st;
	__u32 zero = 0;
	__u64 *v;

	*out = cm->st;
	cfi_store_rows(&cm->store, &out->rows, &out->rows_idle);
	for (i = 0; i < cm->store.ntabs; i++)
		out->tables += !!cm->store.tabs[i].n;
	out->max_rows = cm->store.x.cap;
	out->loaded = ss->loaded;
	out->freed = ss->freed;
	out->rows_freed = ss->rows_freed;
	out->unfit = ss->refused;
	out->moved = ss->moved;
	out->reaped = ss->reaped;
	out->largest_free = cfi_extents_largest(&cm->store.x);
	if (ncpus <= 0 || !(v = calloc((size_t)ncpus, sizeof(__u64) * TB_UW_NR)))
		return;
	if (!bpf_map_lookup_elem(cm->stats_fd, &zero, v))
		for (c = 0; c < ncpus; c++)
			for (k = 0; k < TB_UW_NR; k++)
				out->uw[k] += v[c * TB_UW_NR + k];
	free(v);
}
