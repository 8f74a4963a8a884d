// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The unwind tables of the profiled processes, loaded into the BPF maps the
 * program walks (bpf/unwind.bpf.h). A file's rows go in once, by build id
 * (cfi_cache_get()'s cache), into the next free stretch of `cfi_rows`; a
 * file that does not fit is said once and left to frame-pointer steps.
 * Each process's executable file mappings that have rows are described in
 * `cfi_procs`, sorted by address, with their load bias. New mappings (an
 * extension module imported after the start, an exec) are found by a
 * periodic rescan: cfi_maps_rescan() compares each process's maps
 * fingerprint, at most every RESCAN_NS, from the event loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cfi.h"
#include "cfi_maps.h"
#include "errors.h"
#include "proc.h"

struct loaded {
	const struct cfi_table *t;
	uint32_t first;
	uint32_t n;		/* 0: did not fit */
	uint32_t page0;		/* its page index (struct tb_cfi_map), */
	uint32_t npages;	/* ... after the rows; 0: none */
};

struct described {
	pid_t pid;
	uint64_t fingerprint;
};

struct cfi_maps {
	int rows_fd, procs_fd, stats_fd;
	volatile uint64_t *gen;	/* the BPF side's uw_gen: its memo of rows */
	uint32_t max_rows, used;
	struct loaded *tabs;
	size_t ntabs, captabs;
	struct described *procs;
	size_t nprocs, capprocs;
	struct cfi_maps_stats st;
	int said_maps;		/* TB_CFI_MAPS exceeded, said once */
	uint64_t last_rescan;	/* CLOCK_MONOTONIC ns */
	struct tb_cfi_proc desc;
};

/*
 * How often the processes' maps are compared: an extension module imported
 * after the start is unwound by frame pointers until then (its stacks
 * marked unmatched where it has none). Reading /proc/PID/maps costs tens of
 * microseconds.
 */
#define RESCAN_NS	(100 * 1000000ULL)

/* Rows written per batch update. */
#define BATCH 4096

struct cfi_maps *cfi_maps_new(int rows_fd, int procs_fd, int stats_fd, uint32_t max_rows,
			      volatile uint64_t *gen)
{
	struct cfi_maps *cm = calloc(1, sizeof(*cm));

	if (!cm)
		return NULL;
	cm->rows_fd = rows_fd;
	cm->procs_fd = procs_fd;
	cm->stats_fd = stats_fd;
	cm->max_rows = max_rows;
	cm->gen = gen;
	return cm;
}

void cfi_maps_free(struct cfi_maps *cm)
{
	if (!cm)
		return;
	free(cm->tabs);
	free(cm->procs);
	free(cm);
}

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
 * t's page index after its rows, where it fits: no bigger than the rows
 * (a sparse file searches them whole instead).
 */
static void load_index(struct cfi_maps *cm, struct loaded *l)
{
	const struct cfi_table *t = l->t;
	uint32_t page0 = t->rows[0].pc >> TB_CFI_PAGE_SHIFT;
	uint32_t npages = (t->rows[t->nrows - 1].pc >> TB_CFI_PAGE_SHIFT) - page0 + 1;

	if (npages > t->nrows || npages > cm->max_rows - cm->used ||
	    write_index(cm->rows_fd, t, page0, npages, cm->used))
		return;
	l->page0 = page0;
	l->npages = npages;
	cm->used += npages;
}

/* The map stretch of t, written the first time; n 0 if it does not fit. */
static const struct loaded *load_table(struct cfi_maps *cm, const struct cfi_table *t,
				       const char *path)
{
	struct loaded *l;
	size_t i;
	int err;

	for (i = 0; i < cm->ntabs; i++)
		if (cm->tabs[i].t == t)
			return &cm->tabs[i];
	if (grow((void **)&cm->tabs, &cm->captabs, cm->ntabs, sizeof(*cm->tabs)))
		return NULL;
	l = &cm->tabs[cm->ntabs++];
	*l = (struct loaded){ .t = t, .first = cm->used };
	if (t->nrows > cm->max_rows - cm->used) {
		cm->st.unfit++;
		tb_warn("--native: unwind table of %s: does not fit (%zu rows, %u of %u in use) (its frames are unwound by frame pointers where it has them; --native=fp for all)",
			path, t->nrows, cm->used, cm->max_rows);
		return l;
	}
	err = write_rows(cm->rows_fd, t->rows, t->nrows, cm->used);
	if (err) {
		tb_warn("--native: unwind table of %s: cannot load: %s (its frames are unwound by frame pointers)",
			path, strerror(-err));
		return l;
	}
	l->n = (uint32_t)t->nrows;
	cm->used += l->n;
	cm->st.tables++;
	load_index(cm, l);
	return l;
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

/* The mapping's file as the process sees it (its mount namespace too). */
static void mapped_path(char *p, size_t len, pid_t pid, const struct proc_map *m)
{
	snprintf(p, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
	if (access(p, R_OK))
		snprintf(p, len, "/proc/%d/root%s", (int)pid, m->path);
}

/* One executable mapping into cm->desc, if its file has rows that fit. */
static void describe(struct cfi_maps *cm, pid_t pid, const struct proc_map *m)
{
	char path[4200];
	const struct cfi_table *t;
	const struct loaded *l;
	uint64_t bias = 0;

	mapped_path(path, sizeof(path), pid, m);
	t = cfi_cache_get(path);
	if (!t || !t->nrows)
		return;
	l = load_table(cm, t, m->path);
	if (!l || !l->n || map_bias(path, m, &bias))
		return;
	if (cm->desc.n == TB_CFI_MAPS) {
		if (!cm->said_maps++)
			tb_warn("--native: process %d: more than %d mapped files with unwind tables (the others are unwound by frame pointers)",
				(int)pid, TB_CFI_MAPS);
		return;
	}
	cm->desc.maps[cm->desc.n++] = (struct tb_cfi_map){
		.start = m->start, .end = m->end, .bias = bias, .first = l->first, .nrows = l->n,
		.page0 = l->page0, .npages = l->npages,
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

int cfi_maps_add(struct cfi_maps *cm, pid_t pid)
{
	struct described *d = described_of(cm, pid);
	uint64_t fp = proc_maps_fingerprint(pid);
	char p[64], *line = NULL;
	struct proc_map m;
	__u32 key = (__u32)pid;
	size_t len = 0;
	FILE *f;
	int ret;

	if (!d) {
		if (grow((void **)&cm->procs, &cm->capprocs, cm->nprocs, sizeof(*cm->procs)))
			return -ENOMEM;
		d = &cm->procs[cm->nprocs++];
		d->pid = pid;
		cm->st.procs++;
	} else {
		cm->st.rescans++;
	}
	d->fingerprint = fp;
	snprintf(p, sizeof(p), "/proc/%d/maps", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return -errno;
	memset(&cm->desc, 0, sizeof(cm->desc));
	while (getline(&line, &len, f) > 0)
		if (!proc_parse_maps_line(line, &m) && m.perms[2] == 'x' && m.path[0] == '/')
			describe(cm, pid, &m);
	free(line);
	fclose(f);
	if (!cm->desc.n) {
		bpf_map_delete_elem(cm->procs_fd, &key);	/* frame pointers only */
		forget_rows(cm);
		return 0;
	}
	ret = bpf_map_update_elem(cm->procs_fd, &key, &cm->desc, BPF_ANY) ? -errno : 0;
	forget_rows(cm);
	return ret;
}

void cfi_maps_del(struct cfi_maps *cm, pid_t pid)
{
	struct described *d = described_of(cm, pid);
	__u32 key = (__u32)pid;

	bpf_map_delete_elem(cm->procs_fd, &key);
	forget_rows(cm);
	if (d)
		*d = cm->procs[--cm->nprocs];
}

void cfi_maps_rescan(struct cfi_maps *cm)
{
	struct timespec ts;
	uint64_t fp, now;
	size_t i;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	if (now - cm->last_rescan < RESCAN_NS)
		return;
	cm->last_rescan = now;
	for (i = 0; i < cm->nprocs; i++) {
		fp = proc_maps_fingerprint(cm->procs[i].pid);
		if (fp != cm->procs[i].fingerprint && fp != 1)
			cfi_maps_add(cm, cm->procs[i].pid);
	}
}

void cfi_maps_stats(struct cfi_maps *cm, struct cfi_maps_stats *out)
{
	int ncpus = libbpf_num_possible_cpus(), c, k;
	__u32 zero = 0;
	__u64 *v;

	*out = cm->st;
	out->rows = cm->used;
	out->max_rows = cm->max_rows;
	if (ncpus <= 0 || !(v = calloc((size_t)ncpus, sizeof(__u64) * TB_UW_NR)))
		return;
	if (!bpf_map_lookup_elem(cm->stats_fd, &zero, v))
		for (c = 0; c < ncpus; c++)
			for (k = 0; k < TB_UW_NR && k < 4; k++)
				out->uw[k] += v[c * TB_UW_NR + k];
	free(v);
}
