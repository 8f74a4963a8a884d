// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where an ELF file keeps its CFI (libelf), and the cache of tables by build
 * id. .eh_frame is found by its section, or, when the section headers are
 * stripped, through PT_GNU_EH_FRAME -> .eh_frame_hdr -> eh_frame_ptr;
 * .debug_frame (possibly compressed) fills what .eh_frame leaves uncovered.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfi.h"
#include "elfnote.h"

struct sections {
	Elf_Scn *eh_frame;
	Elf_Scn *eh_frame_hdr;
	Elf_Scn *debug_frame;
};

static void find_sections(Elf *elf, struct sections *s, char *build_id, size_t idlen)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	const char *name;

	memset(s, 0, sizeof(*s));
	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		if (sh.sh_type == SHT_NOTE && !build_id[0])
			elf_note_build_id(elf_getdata(scn, NULL), build_id, idlen);
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".eh_frame"))
			s->eh_frame = scn;
		else if (!strcmp(name, ".eh_frame_hdr"))
			s->eh_frame_hdr = scn;
		else if (!strcmp(name, ".debug_frame"))
			s->debug_frame = scn;
	}
}

static Elf_Data *section_bytes(Elf_Scn *scn, GElf_Shdr *sh)
{
	Elf_Data *d;

	if (!gelf_getshdr(scn, sh))
		return NULL;
	/* .debug_frame is often SHF_COMPRESSED in distribution debug files. */
	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return NULL;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || !d->d_size)
		return NULL;
	return d;
}

/* .eh_frame_hdr: version 1, three encodings, eh_frame_ptr, fde_count. */
static uint64_t hdr_eh_frame(const uint8_t *p, size_t len, uint64_t vaddr, uint32_t *fdes)
{
	size_t off;
	uint64_t eh, n;
	int ok;

	if (len < 4 || p[0] != 1)
		return 0;
	eh = cfi_hdr_pointer(p, len, vaddr, 4, p[1], &off, &ok);
	if (!ok)
		return 0;
	n = cfi_hdr_pointer(p, len, vaddr, off, p[2], &off, &ok);
	*fdes = ok && n <= UINT32_MAX ? (uint32_t)n : 0;
	return eh;
}

/* The file bytes from vaddr to the end of the PT_LOAD holding it. */
static const uint8_t *load_bytes(Elf *elf, uint64_t vaddr, size_t *len)
{
	Elf_Data *d;
	GElf_Phdr ph;
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return NULL;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz)
			continue;
		*len = ph.p_filesz - (vaddr - ph.p_vaddr);
		d = elf_getdata_rawchunk(elf, (int64_t)(ph.p_offset + vaddr - ph.p_vaddr),
					 *len, ELF_T_BYTE);
		return d ? d->d_buf : NULL;
	}
	return NULL;
}

static Elf_Data *eh_frame_hdr_segment(Elf *elf, uint64_t *vaddr)
{
	GElf_Phdr ph;
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return NULL;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		*vaddr = ph.p_vaddr;
		return elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
	}
	return NULL;
}

/* .eh_frame without section headers: found through the header segment. */
static int eh_frame_from_hdr(Elf *elf, const struct sections *s, struct cfi_table *t)
{
	const uint8_t *eh;
	uint64_t hdr_vaddr = 0, eh_vaddr;
	Elf_Data *d = NULL;
	GElf_Shdr sh;
	size_t len;

	if (s->eh_frame_hdr && (d = section_bytes(s->eh_frame_hdr, &sh)))
		hdr_vaddr = sh.sh_addr;
	else
		d = eh_frame_hdr_segment(elf, &hdr_vaddr);
	if (!d || !d->d_buf)
		return -ENOENT;
	eh_vaddr = hdr_eh_frame(d->d_buf, d->d_size, hdr_vaddr, &t->hdr_fdes);
	if (s->eh_frame)
		return 0;	/* the section is read directly; the count is a check */
	eh = eh_vaddr ? load_bytes(elf, eh_vaddr, &len) : NULL;
	if (!eh)
		return -ENOENT;
	return cfi_parse_section(t, eh, len, eh_vaddr, 1, NULL);
}

static int from_section(Elf_Scn *scn, struct cfi_table *t, int eh,
			const struct cfi_table *prior)
{
	Elf_Data *d;
	GElf_Shdr sh;

	d = section_bytes(scn, &sh);
	if (!d)
		return -ENOENT;
	return cfi_parse_section(t, d->d_buf, d->d_size, sh.sh_addr, eh, prior);
}

/* .debug_frame's rows for what .eh_frame does not cover, appended to t. */
static int add_debug_frame(Elf_Scn *scn, struct cfi_table *t)
{
	struct cfi_table extra = { 0 };
	int n, err = 0;

	n = from_section(scn, &extra, 0, t);
	if (extra.nrows > CFI_MAX_ROWS - t->nrows) {
		extra.nrows = CFI_MAX_ROWS - t->nrows;
		extra.truncated = 1;
	}
	if (extra.nrows) {
		struct tb_cfi_row *rows = realloc(t->rows, (t->nrows + extra.nrows) * sizeof(*rows));

		if (!rows) {
			err = -ENOMEM;
		} else {
			memcpy(rows + t->nrows, extra.rows, extra.nrows * sizeof(*rows));
			t->rows = rows;
			t->nrows += extra.nrows;
			t->cap = t->nrows;
		}
	}
	t->fdes += extra.fdes;
	t->cies += extra.cies;
	t->fdes_skipped += extra.fdes_skipped;
	t->truncated |= extra.truncated;
	cfi_free(&extra);
	/* A malformed .debug_frame costs its own rows, not .eh_frame's. */
	return err ? err : (n == -ENOMEM ? n : 0);
}

static int check_header(Elf *elf)
{
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return -ENOEXEC;
	return 0;
}

static int from_elf(Elf *elf, struct cfi_table *t, cfi_fde_fn on_fde, void *ctx)
{
	struct sections s;
	int n = -ENOENT, err;

	memset(t, 0, sizeof(*t));
	t->on_fde = on_fde;
	t->fde_ctx = ctx;
	err = check_header(elf);
	if (err)
		return err;
	find_sections(elf, &s, t->build_id, sizeof(t->build_id));
	err = eh_frame_from_hdr(elf, &s, t);
	if (s.eh_frame)
		n = from_section(s.eh_frame, t, 1, NULL);
	else if (err != -ENOENT)
		n = err;
	if (n < 0 && n != -ENOENT)
		goto fail;
	cfi_finish(t);
	if (s.debug_frame) {
		err = add_debug_frame(s.debug_frame, t);
		if (err) {
			n = err;
			goto fail;
		}
		cfi_finish(t);
	}
	if (t->nrows)
		return 0;
	n = -ENOENT;
fail:
	cfi_free(t);
	return n;
}

static void init_libelf(void)
{
	static int done;

	if (!done && elf_version(EV_CURRENT) != EV_NONE)
		done = 1;
}

/* Takes elf (NULL: libelf refused the bytes) and ends it. */
static int from_handle(Elf *elf, struct cfi_table *t, cfi_fde_fn on_fde, void *ctx)
{
	int err;

	if (!elf) {
		memset(t, 0, sizeof(*t));
		return -ENOEXEC;
	}
	err = from_elf(elf, t, on_fde, ctx);
	elf_end(elf);
	return err;
}

int cfi_from_fd(int fd, struct cfi_table *t)
{
	init_libelf();
	return from_handle(elf_begin(fd, ELF_C_READ, NULL), t, NULL, NULL);
}

int cfi_fdes_from_fd(int fd, struct cfi_table *t, cfi_fde_fn on_fde, void *ctx)
{
	init_libelf();
	return from_handle(elf_begin(fd, ELF_C_READ, NULL), t, on_fde, ctx);
}

int cfi_from_mem(const void *buf, size_t len, struct cfi_table *t)
{
	init_libelf();
	/* elf_memory() takes a char * but only reads the image in ELF_C_READ. */
	return from_handle(elf_memory((char *)(uintptr_t)buf, len), t, NULL, NULL);
}

/* ---- Cache by build id ------------------------------------------------------ */

struct cached {
	struct cached *next;
	char key[4096 + 8];
	struct cfi_table table;
};

static struct cached *cache;
static size_t cache_bytes;

static struct cached *cache_find(const char *key)
{
	struct cached *c;

	for (c = cache; c; c = c->next)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

/* The file's build id without parsing its CFI: the cache's key. */
static void file_key(int fd, const char *path, char *key, size_t len)
{
	struct sections s;
	char id[41] = "";
	Elf *elf;

	init_libelf();
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !check_header(elf))
		find_sections(elf, &s, id, sizeof(id));
	if (elf)
		elf_end(elf);
	if (id[0])
		snprintf(key, len, "id:%s", id);
	else
		snprintf(key, len, "path:%s", path);
}

static const struct cfi_table *cache_add(int fd, const char *key)
{
	struct cached *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return NULL;
	err = cfi_from_fd(fd, &c->table);
	if (!err && cache_bytes + cfi_bytes(&c->table) > CFI_CACHE_MAX_BYTES) {
		cfi_free(&c->table);
		err = -ENOSPC;	/* bounded: the caller falls back or stops there */
	}
	if (err) {
		free(c);
		errno = -err;
		return NULL;
	}
	snprintf(c->key, sizeof(c->key), "%s", key);
	cache_bytes += cfi_bytes(&c->table);
	c->next = cache;
	cache = c;
	return &c->table;
}

const struct cfi_table *cfi_cache_get(const char *path)
{
	const struct cfi_table *t;
	struct cached *c;
	char key[sizeof(c->key)];
	int fd, saved;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	file_key(fd, path, key, sizeof(key));
	c = cache_find(key);
	t = c ? &c->table : cache_add(fd, key);
	saved = errno;
	close(fd);
	errno = saved;
	return t;
}

void cfi_cache_stats(size_t *tables, size_t *bytes)
{
	struct cached *c;

	*tables = 0;
	for (c = cache; c; c = c->next)
		(*tables)++;
	*bytes = cache_bytes;
}

void cfi_cache_drop(const struct cfi_table *t)
{
	struct cached **p, *c;

	for (p = &cache; (c = *p); p = &c->next) {
		if (&c->table != t)
			continue;
		*p = c->next;
		cache_bytes -= cfi_bytes(&c->table);
		cfi_free(&c->table);
		free(c);
		return;
	}
}

void cfi_cache_clear(void)
{
	struct cached *c;

	while ((c = cache)) {
		cache = c->next;
		cfi_free(&c->table);
		free(c);
	}
	cache_bytes = 0;
}
