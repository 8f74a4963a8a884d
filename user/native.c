// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* --native: native frame names and their merge with Python frames (native.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elfnote.h"
#include "evalsplit.h"
#include "native.h"
#include "proc.h"
#include "pyelf.h"
#include "vdso.h"

/* libstdc++'s demangler (the C++ ABI's, declared here: C has no cxxabi.h). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define MAX_LOADS	16
#define MAX_EVALS	8
#define ELF_KEY		64
/* What one cached name costs besides its bytes: the map slot, malloc's. */
#define NAME_OVERHEAD	32

struct nsym {
	uint64_t addr, size;
	char *name;
};

/* One ELF file, as read once. */
struct nelf {
	struct nsym *syms;	/* sorted by addr */
	size_t nsyms;
	struct {
		uint64_t off, vaddr, filesz;
	} load[MAX_LOADS];
	int nload;
	int is_interp;		/* defines the eval function: the interpreter */
	struct {
		uint64_t lo, hi;
	} eval[MAX_EVALS];	/* the eval function's parts: kept when dropped */
	int nevals;
	char base[64];		/* file name, for "[libname]" */
	struct hmap names;	/* vaddr -> "fn [libname]" */
	size_t bytes;		/* syms and names, counted in native.bytes */
	uint64_t used;		/* native.tick when last used */
	int dropped;		/* symbols and names dropped (memory bound) */
};

struct nmap {
	uint64_t start, end, offset;
	struct nelf *elf;	/* NULL: not an ELF we could read */
};

/* One process's executable mappings. */
struct nproc {
	struct nmap *v;
	size_t n;
};

int native_init(struct native *nt)
{
	memset(nt, 0, sizeof(*nt));
	elf_version(EV_CURRENT);
	nt->limit = NATIVE_MEM_MAX;
	nt->arena = malloc(NATIVE_ARENA);
	if (!nt->arena || hmap_init(&nt->elves, ELF_KEY) || hmap_init(&nt->files, ELF_KEY) ||
	    hmap_init(&nt->procs, sizeof(uint32_t))) {
		native_free(nt);
		return -ENOMEM;
	}
	return 0;
}

static void free_elf(void *p)
{
	struct nelf *e = p;
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->nsyms; i++)
		free(e->syms[i].name);
	free(e->syms);
	hmap_free_values(&e->names, free);
	free(e);
}

static void free_proc(void *p)
{
	struct nproc *np = p;

	if (np)
		free(np->v);
	free(np);
}

void native_free(struct native *nt)
{
	hmap_free_values(&nt->elves, free_elf);
	hmap_free(&nt->files);
	hmap_free_values(&nt->procs, free_proc);
	free(nt->arena);
	nt->arena = NULL;
}

void native_forget(struct native *nt, uint32_t pid)
{
	free_proc(hmap_del(&nt->procs, &pid));
}

/* ---- ELF files ---------------------------------------------------------- */

/* A demangled copy of a C++ name, else a copy of the name. */
static char *sym_name(const char *raw)
{
	int status = -1;
	char *d = NULL;

	if (raw[0] == '_' && raw[1] == 'Z')
		d = __cxa_demangle(raw, NULL, NULL, &status);
	if (d && !status)
		return d;
	free(d);
	return strdup(raw);
}

static int add_sym(struct nelf *e, size_t *cap, const GElf_Sym *s, const char *raw)
{
	struct nsym *v;

	if (e->nsyms == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		v = realloc(e->syms, *cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		e->syms = v;
	}
	v = &e->syms[e->nsyms];
	v->addr = s->st_value;
	v->size = s->st_size;
	v->name = sym_name(raw);
	if (!v->name)
		return -ENOMEM;
	e->nsyms++;
	e->bytes += sizeof(*v) + strlen(v->name) + 1;
	/* the eval function: its split parts (".cold") count too */
	if (strncmp(raw, PYELF_EVAL_SYM, strlen(PYELF_EVAL_SYM)))
		return 0;
	e->is_interp = 1;
	if (e->nevals < MAX_EVALS) {
		e->eval[e->nevals].lo = s->st_value;
		e->eval[e->nevals].hi = s->st_value + (s->st_size ? s->st_size : 1);
		e->nevals++;
	}
	return 0;
}

/* The function symbols of one symbol table section. */
static int read_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct nelf *e, size_t *cap)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, n;
	GElf_Sym s;
	const char *name;

	if (!d || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
		    !s.st_value || s.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (name && *name && add_sym(e, cap, &s, name))
			return -ENOMEM;
	}
	return 0;
}

/* What a file's sections say besides symbols: build id, debug link. */
struct elf_ids {
	char build_id[41];	/* hex, "" if none */
	char debuglink[256];	/* "" if none */
};

static void read_debuglink(Elf_Scn *scn, struct elf_ids *ids)
{
	Elf_Data *d = elf_getdata(scn, NULL);

	if (d && d->d_size > 1 && memchr(d->d_buf, 0, d->d_size))
		snprintf(ids->debuglink, sizeof(ids->debuglink), "%s", (const char *)d->d_buf);
}

/* Symbols (and with ids, the ids) of the ELF open on fd. */
static int read_sections(int fd, struct nelf *e, size_t *cap, struct elf_ids *ids)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	const char *name;
	int ret = 0;

	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx)) {
		elf_end(elf);
		return -EINVAL;
	}
	while (!ret && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			ret = read_symtab(elf, scn, &sh, e, cap);
		if (!ids)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_NOTE)
			elf_note_build_id(elf_getdata(scn, NULL), ids->build_id,
					  sizeof(ids->build_id));
		else if (name && !strcmp(name, ".gnu_debuglink"))
			read_debuglink(scn, ids);
	}
	elf_end(elf);
	return ret;
}

/* The PT_LOAD segments: file offsets to addresses. */
static int read_loads(int fd, struct nelf *e)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t i, n;
	GElf_Phdr ph;

	if (!elf || elf_getphdrnum(elf, &n)) {
		elf_end(elf);
		return -EINVAL;
	}
	for (i = 0; i < n && e->nload < MAX_LOADS; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		e->load[e->nload].off = ph.p_offset;
		e->load[e->nload].vaddr = ph.p_vaddr;
		e->load[e->nload].filesz = ph.p_filesz;
		e->nload++;
	}
	elf_end(elf);
	return e->nload ? 0 : -EINVAL;
}

/* Symbols of a separate debug file at path, if there is one. */
static void read_debug_file(const char *path, struct nelf *e, size_t *cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	read_sections(fd, e, cap, NULL);
	close(fd);
}

/*
 * The debug directories for path: /usr/lib/debug, and for a file of an
 * unpacked tree (PREFIX/usr/...: a chroot, another distribution's
 * packages) PREFIX/usr/lib/debug. 1 + the index of the last one filled.
 */
static int debug_dirs(const char *path, char dirs[2][4096])
{
	const char *usr = strstr(path, "/usr/");

	snprintf(dirs[0], sizeof(dirs[0]), "/usr/lib/debug");
	if (!usr || usr == path)
		return 1;
	snprintf(dirs[1], sizeof(dirs[1]), "%.*s/usr/lib/debug", (int)(usr - path), path);
	return 2;
}

/* The debug file by build id, else by debug link (GDB's places). */
static void read_debug(const char *path, const struct elf_ids *ids, struct nelf *e,
		       size_t *cap)
{
	char dbg[12288], dir[4096], dirs[2][4096];
	const char *slash = strrchr(path, '/');
	size_t before = e->nsyms;
	int i, n = debug_dirs(path, dirs);

	for (i = 0; i < n && ids->build_id[0] && e->nsyms == before; i++) {
		snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s/%s.debug", dirs[i],
			 ids->build_id, ids->build_id + 2);
		read_debug_file(dbg, e, cap);
	}
	if (e->nsyms != before || !ids->debuglink[0] || !slash)
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	for (i = 0; i < n && e->nsyms == before; i++) {
		if (snprintf(dbg, sizeof(dbg), "%s%s/%s", dirs[i], dir, ids->debuglink) <
		    (int)sizeof(dbg))
			read_debug_file(dbg, e, cap);
	}
	if (e->nsyms != before)
		return;
	snprintf(dbg, sizeof(dbg), "%s/.debug/%s", dir, ids->debuglink);
	read_debug_file(dbg, e, cap);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct nsym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * The eval function's split parts where no symbol names them (a stripped
 * interpreter without its debug file: Debian's 3.13-3.15), from its jumps
 * and the unwind table (evalsplit.c).
 */
static void add_split_parts(int fd, struct nelf *e)
{
	struct eval_span part[MAX_EVALS - 1];
	int i, n;

	for (i = 1; i < e->nevals; i++)
		if (e->eval[i].lo != e->eval[0].lo)
			return;		/* named: .symtab, or the debug file's */
	if (!e->nevals)
		return;
	n = eval_split_parts(fd, e->eval[0].lo, e->eval[0].hi, part, MAX_EVALS - e->nevals);
	for (i = 0; i < n; i++) {
		e->eval[e->nevals].lo = part[i].lo;
		e->eval[e->nevals].hi = part[i].hi;
		e->nevals++;
	}
}

/* Read the ELF file open on fd (path: its name in the process). */
static struct nelf *load_elf(int fd, const char *path, const struct elf_ids *ids)
{
	struct nelf *e = calloc(1, sizeof(*e));
	const char *base = strrchr(path, '/');
	size_t cap = 0;

	if (!e || hmap_init(&e->names, sizeof(uint64_t))) {
		free(e);
		return NULL;
	}
	snprintf(e->base, sizeof(e->base), "%.63s", base ? base + 1 : path);
	if (read_loads(fd, e) || read_sections(fd, e, &cap, NULL)) {
		free_elf(e);
		return NULL;
	}
	read_debug(path, ids, e, &cap);
	add_split_parts(fd, e);
	qsort(e->syms, e->nsyms, sizeof(*e->syms), cmp_sym);
	return e;
}

/* The cache key of a mapped file: its inode, device and path. */
static void file_key(char key[ELF_KEY], const struct proc_map *m)
{
	memset(key, 0, ELF_KEY);
	snprintf(key, ELF_KEY, "i:%" PRIx64 ":%x:%x:%016" PRIx64, m->inode, m->dev_major,
		 m->dev_minor, hash_bytes(m->path, strlen(m->path)));
}

/* The cache key of an ELF: its build id, else its file's key. */
static void elf_key(char key[ELF_KEY], const struct elf_ids *ids, const struct proc_map *m)
{
	file_key(key, m);
	if (ids->build_id[0]) {
		memset(key, 0, ELF_KEY);
		snprintf(key, ELF_KEY, "b:%s", ids->build_id);
	}
}

static void account(struct native *nt, struct nelf *e, size_t add);

/* A file just read: its symbols count against the bound. */
static void count_loaded(struct native *nt, struct nelf *e)
{
	size_t b = e->bytes;

	e->bytes = 0;
	e->used = ++nt->tick;
	account(nt, e, b);
}

/* Open a mapping's file as the process sees it (the vDSO: the profiler's). */
static int open_mapped(uint32_t pid, const struct proc_map *m)
{
	char p[4200];

	if (proc_map_file((pid_t)pid, m, p, sizeof(p)))
		return -1;
	return open(p, O_RDONLY | O_CLOEXEC);
}

/* The ELF of a mapping, read once per build id (NULL: none readable); a
 * file seen before is not opened again. */
static struct nelf *elf_of(struct native *nt, uint32_t pid, const struct proc_map *m)
{
	char key[ELF_KEY], fkey[ELF_KEY];
	struct elf_ids ids = {};
	size_t cap = 0;
	struct nelf probe = {};
	void **slot, **fslot;
	int fd, added;

	file_key(fkey, m);
	fslot = hmap_get(&nt->files, fkey);
	if (fslot)
		return *fslot;
	fd = open_mapped(pid, m);
	if (fd < 0)
		return NULL;
	/* The ids first (a cheap pass): a known build id is not read again. */
	read_sections(fd, &probe, &cap, &ids);
	for (cap = 0; cap < probe.nsyms; cap++)
		free(probe.syms[cap].name);
	free(probe.syms);
	elf_key(key, &ids, m);
	slot = hmap_put(&nt->elves, key, &added);
	if (slot && added && (*slot = load_elf(fd, vdso_mapping(m) ? "vdso" : m->path, &ids)))
		count_loaded(nt, *slot);
	close(fd);
	if (!slot)
		return NULL;
	fslot = hmap_put(&nt->files, fkey, &added);
	if (fslot)
		*fslot = *slot;
	return *slot;
}

/* ---- Processes ---------------------------------------------------------- */

static int add_map(struct nproc *np, size_t *cap, const struct proc_map *m, struct nelf *e)
{
	struct nmap *v;

	if (np->n == *cap) {
		*cap = *cap ? *cap * 2 : 32;
		v = realloc(np->v, *cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		np->v = v;
	}
	np->v[np->n++] = (struct nmap){ .start = m->start, .end = m->end,
					.offset = m->offset, .elf = e };
	return 0;
}

/* The executable file mappings of pid, their ELF files read. */
static struct nproc *read_maps(struct native *nt, uint32_t pid)
{
	struct nproc *np = calloc(1, sizeof(*np));
	struct proc_map m;
	char p[64], *line = NULL;
	size_t len = 0, cap = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%u/maps", pid);
	f = fopen(p, "re");
	if (!np || !f) {
		free(np);
		if (f)
			fclose(f);
		return NULL;
	}
	while (getline(&line, &len, f) > 0) {
		if (proc_parse_maps_line(line, &m) || m.perms[2] != 'x' || !proc_map_has_file(&m))
			continue;	/* anonymous (a JIT's), [vsyscall] */
		if (add_map(np, &cap, &m, elf_of(nt, pid, &m)))
			break;
	}
	free(line);
	fclose(f);
	return np;
}

static const struct nmap *find_map(const struct nproc *np, uint64_t ip)
{
	size_t i;

	for (i = 0; np && i < np->n; i++)
		if (ip >= np->v[i].start && ip < np->v[i].end)
			return &np->v[i];
	return NULL;
}

/*
 * pid's maps read again, in place of the cached ones unless the process is
 * gone (its maps unreadable, or empty: a zombie's), when what was cached
 * still names the files it had. Its entry, or NULL.
 */
static struct nproc *reread_maps(struct native *nt, uint32_t pid)
{
	struct nproc *np = read_maps(nt, pid);
	void **slot;
	int added;

	if (!np || !np->n) {
		free_proc(np);
		slot = hmap_get(&nt->procs, &pid);
		return slot ? *slot : NULL;
	}
	slot = hmap_put(&nt->procs, &pid, &added);
	if (!slot) {
		free_proc(np);
		return NULL;
	}
	if (!added)
		free_proc(*slot);
	*slot = np;
	return np;
}

/* The mapping of ip in pid: the cached maps, read again on a miss (dlopen). */
static const struct nmap *map_of(struct native *nt, uint32_t pid, uint64_t ip)
{
	void **slot = hmap_get(&nt->procs, &pid);
	const struct nmap *m = slot ? find_map(*slot, ip) : NULL;

	return m ? m : find_map(reread_maps(nt, pid), ip);
}

void native_refresh(struct native *nt, uint32_t pid)
{
	reread_maps(nt, pid);
}

/* ---- Symbols ------------------------------------------------------------ */

/* The address in the ELF's own terms of file offset off; 0 if in no segment. */
static uint64_t elf_vaddr(const struct nelf *e, uint64_t off)
{
	int i;

	for (i = 0; i < e->nload; i++)
		if (off >= e->load[i].off && off < e->load[i].off + e->load[i].filesz)
			return off - e->load[i].off + e->load[i].vaddr;
	return 0;
}

/* The function symbol covering vaddr, or NULL. */
static const struct nsym *sym_at(const struct nelf *e, uint64_t vaddr)
{
	size_t lo = 0, hi = e->nsyms, mid;
	int back;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (e->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* A few back: aliases and nested sizes share start addresses. */
	for (back = 0; lo > 0 && back < 8; lo--, back++)
		if (vaddr < e->syms[lo - 1].addr + e->syms[lo - 1].size)
			return &e->syms[lo - 1];
	return NULL;
}

/* ---- Memory ------------------------------------------------------------ */

/* e's symbols and names go (the bound was passed); its ranges stay. */
static void drop_elf(struct native *nt, struct nelf *e)
{
	size_t i;

	for (i = 0; i < e->nsyms; i++)
		free(e->syms[i].name);
	free(e->syms);
	e->syms = NULL;
	e->nsyms = 0;
	hmap_free_values(&e->names, free);	/* never filled again */
	nt->bytes -= e->bytes;
	e->bytes = 0;
	e->dropped = 1;
	nt->dropped++;
}

/* The file used least recently that still holds memory, but keep; NULL. */
static struct nelf *lru_elf(struct native *nt, const struct nelf *keep)
{
	struct nelf *e, *old = NULL;
	size_t it = 0;
	void **val;

	while (hmap_next(&nt->elves, &it, NULL, &val)) {
		e = *val;
		if (e && e != keep && e->bytes && (!old || e->used < old->used))
			old = e;
	}
	return old;
}

/* e grew by add bytes: drop files, least recently used first, until the
 * total is within the bound again (e itself last). */
static void account(struct native *nt, struct nelf *e, size_t add)
{
	struct nelf *victim;

	e->bytes += add;
	nt->bytes += add;
	if (nt->bytes > nt->peak)
		nt->peak = nt->bytes;
	while (nt->bytes > nt->limit) {
		victim = lru_elf(nt, e);
		if (!victim && (e->dropped || !e->bytes))
			break;
		drop_elf(nt, victim ? victim : e);
	}
}

/* ---- Names -------------------------------------------------------------- */

/* The name of vaddr in e (valid until the next call): cached unless e's
 * symbols were dropped. */
static const char *name_in_elf(struct native *nt, struct nelf *e, uint64_t vaddr, uint64_t off)
{
	const struct nsym *s = sym_at(e, vaddr);
	static char buf[512];
	void **slot;
	int added;

	slot = e->dropped ? NULL : hmap_put(&e->names, &vaddr, &added);
	if (slot && !added)
		return *slot;
	if (s)
		snprintf(buf, sizeof(buf), "%s [%s]", s->name, e->base);
	else
		snprintf(buf, sizeof(buf), "[%s+0x%" PRIx64 "]", e->base, off);
	if (!slot)
		return buf;
	*slot = strdup(buf);
	if (!*slot) {
		hmap_del(&e->names, &vaddr);
		return buf;
	}
	account(nt, e, strlen(buf) + 1 + NAME_OVERHEAD);
	return buf;
}

/* Is vaddr in the eval function of e? */
static int in_eval(const struct nelf *e, uint64_t vaddr)
{
	int i;

	for (i = 0; i < e->nevals; i++)
		if (vaddr >= e->eval[i].lo && vaddr < e->eval[i].hi)
			return 1;
	return 0;
}

static uint64_t eval_size(const struct nelf *e, int i)
{
	return e->eval[i].hi - e->eval[i].lo;
}

int native_eval_parts(struct native *nt, uint32_t pid, uint64_t eval_addr, __u64 *lo,
		      __u64 *hi, int max)
{
	const struct nmap *m = eval_addr ? map_of(nt, pid, eval_addr) : NULL;
	char taken[MAX_EVALS] = { 0 };
	const struct nelf *e;
	int i, n = 0, part = -1;
	uint64_t at;

	if (!m || !(e = m->elf) || !(at = elf_vaddr(e, eval_addr - m->start + m->offset)))
		return 0;
	for (i = 0; i < e->nevals; i++)
		if (at >= e->eval[i].lo && at < e->eval[i].hi)
			part = i;
	/* the part at eval_addr first, then the others, largest first */
	while (part >= 0 && n < max) {
		taken[part] = 1;
		lo[n] = e->eval[part].lo - at + eval_addr;
		hi[n++] = e->eval[part].hi - at + eval_addr;
		for (i = 0, part = -1; i < e->nevals; i++)
			if (!taken[i] && (part < 0 || eval_size(e, i) > eval_size(e, part)))
				part = i;
	}
	return n;
}

/* Name and kind of one native frame of pid: *interp, *eval say whether it
 * is the interpreter's code, its eval function. */
static const char *frame_name(struct native *nt, uint32_t pid, uint64_t ip, int *interp,
			      int *eval)
{
	const struct nmap *m = map_of(nt, pid, ip);
	uint64_t off, vaddr;

	*interp = *eval = 0;
	if (!m)
		return NULL;
	off = ip - m->start + m->offset;
	if (!m->elf)
		return NULL;
	vaddr = elf_vaddr(m->elf, off);
	m->elf->used = ++nt->tick;
	*interp = m->elf->is_interp;
	*eval = in_eval(m->elf, vaddr);
	return name_in_elf(nt, m->elf, vaddr, off);
}

/* ---- The merge ---------------------------------------------------------- */

/* Python frames by eval invocation: how many invocations (those with no
 * frame included), or -1 if the frames do not end on an invocation's first
 * frame (no match possible). */
static int py_segments(const struct tb_frame *py, uint32_t depth)
{
	uint32_t i;
	int n = 0;

	for (i = 0; i < depth; i++)
		n += !!(py[i].code & TB_CODE_ENTRY) + !!(py[i].code & TB_CODE_EMPTY_EVAL);
	return depth && (py[depth - 1].code & TB_CODE_ENTRY) ? n : -1;
}

/* One frame onto p; a native frame's name is copied into nt's arena (the
 * cache it came from may drop it: a plan owns its names). */
static void push_item(struct native *nt, struct native_plan *p, int32_t py, const char *name)
{
	size_t len = name ? strlen(name) + 1 : 0;

	if (name && nt->arena_len + len > NATIVE_ARENA)
		name = NULL;	/* cannot happen: NATIVE_ARENA holds every frame's */
	p->it[p->n].py = py;
	p->it[p->n].name = NULL;
	if (name) {
		memcpy(nt->arena + nt->arena_len, name, len);
		p->it[p->n].name = nt->arena + nt->arena_len;
		nt->arena_len += len;
	}
	p->n++;
}

/*
 * The Python frames of the next eval invocation (leaf first), from *at on;
 * none for an invocation with no frame (TB_CODE_EMPTY_EVAL on the frame at
 * *at, not yet taken: *empty).
 */
static void push_segment(struct native *nt, struct native_plan *p, const struct tb_frame *py,
			 uint32_t depth, uint32_t *at, int *empty)
{
	if (*at < depth && (py[*at].code & TB_CODE_EMPTY_EVAL) && !*empty) {
		*empty = 1;
		return;
	}
	while (*at < depth) {
		push_item(nt, p, (int32_t)*at, NULL);
		*empty = 0;
		if (py[(*at)++].code & TB_CODE_ENTRY)
			return;
	}
}

/* An eval frame (name: its symbol's) paired with its invocation's Python frames. */
static void eval_frame(struct native *nt, struct native_plan *p, const char *name,
		       const struct tb_frame *py, uint32_t depth, uint32_t *at, int *empty)
{
	if (!*at && name && (py[0].code & TB_CODE_EMPTY_EVAL) && !*empty)
		push_item(nt, p, -1, name);
	push_segment(nt, p, py, depth, at, empty);
}

/*
 * Leaf first into p: native frames above the leaf Python frame, each eval
 * frame replaced by its invocation's Python frames, native code of other
 * files between them (extensions, libraries: the interpreter's own call
 * machinery is left out), nothing below the outermost Python frame. Above
 * the leaf Python frame the interpreter's frames are all kept, an eval
 * with no Python frame too (a call from C set up or torn down: the time
 * goes to its C caller, e.g. `sorted` for its key function's calls).
 * With eval_caller, an eval frame the frame-pointer chain skipped is taken
 * to be the leaf's caller (TB_LEAF_EVAL_CALLER).
 * Returns 0, or -1 if the eval frames and invocations do not pair up.
 */
static int splice_frames(struct native *nt, uint32_t pid, const uint64_t *ips, int nips,
			 const struct tb_frame *py, uint32_t depth, int segs, int eval_caller,
			 struct native_plan *p)
{
	int i, seg = 0, interp, eval, empty = 0;
	uint32_t at = 0;
	const char *name;

	p->n = 0;
	nt->arena_len = 0;
	for (i = 0; i < nips && seg < segs; i++) {
		name = frame_name(nt, pid, ips[i], &interp, &eval);
		if (eval) {
			eval_frame(nt, p, name, py, depth, &at, &empty);
			seg++;
		} else if (name && (!interp || !at)) {
			push_item(nt, p, -1, name);
		}
		if (!i && eval_caller && !eval && seg < segs) {
			eval_frame(nt, p, PYELF_EVAL_SYM, py, depth, &at, &empty);
			seg++;
		}
	}
	for (; i < nips; i++) {
		frame_name(nt, pid, ips[i], &interp, &eval);
		if (eval)
			return -1;	/* more eval frames than invocations */
	}
	return seg == segs && at == depth ? 0 : -1;
}

/*
 * Unmatched: the Python frames, the marker, and the native frames from the
 * leaf down to the first of the interpreter's (or one in no file: where a
 * frame-pointer chain broke). The leaf is the sampled instruction itself.
 */
static void unmatched(struct native *nt, uint32_t pid, const uint64_t *ips, int nips,
		      uint32_t depth, struct native_plan *p)
{
	const char *name;
	int i, interp, eval;
	uint32_t j;

	p->n = 0;
	nt->arena_len = 0;
	for (i = 0; i < nips; i++) {
		name = frame_name(nt, pid, ips[i], &interp, &eval);
		if (!name || interp)
			break;
		push_item(nt, p, -1, name);
	}
	push_item(nt, p, -1, NATIVE_UNMATCHED);
	for (j = 0; j < depth; j++)
		push_item(nt, p, (int32_t)j, NULL);
}

/* p in one block with the names it points to (freed with free()). */
static struct native_plan *own_names(struct native *nt, struct native_plan *p)
{
	size_t items = sizeof(*p) + (size_t)p->n * sizeof(p->it[0]);
	struct native_plan *q = malloc(items + nt->arena_len);
	char *names = (char *)q + items;
	uint32_t i;

	if (q) {
		memcpy(q, p, items);
		memcpy(names, nt->arena, nt->arena_len);
		for (i = 0; i < q->n; i++)
			if (q->it[i].name)
				q->it[i].name = names + (q->it[i].name - nt->arena);
	}
	free(p);
	return q;
}

static void reverse(struct native_plan *p)
{
	struct native_item t;
	uint32_t i;

	for (i = 0; i < p->n / 2; i++) {
		t = p->it[i];
		p->it[i] = p->it[p->n - 1 - i];
		p->it[p->n - 1 - i] = t;
	}
}

struct native_plan *native_merge(struct native *nt, uint32_t pid, const uint64_t *ips,
				 int nips, const struct tb_frame *py, uint32_t depth, int eval_caller)
{
	int segs = py_segments(py, depth);
	struct native_plan *p;

	if (nips > TB_USTACK_DEPTH)
		nips = TB_USTACK_DEPTH;
	p = malloc(sizeof(*p) + ((size_t)nips + depth + 2) * sizeof(p->it[0]));
	if (!p)
		return NULL;
	p->matched = segs > 0 && (!splice_frames(nt, pid, ips, nips, py, depth, segs, 0, p) ||
				  (eval_caller &&
				   !splice_frames(nt, pid, ips, nips, py, depth, segs, 1, p)));
	if (!p->matched)
		unmatched(nt, pid, ips, nips, depth, p);
	reverse(p);
	return own_names(nt, p);
}
