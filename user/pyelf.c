// SPDX-License-Identifier: GPL-2.0
/*
 * pyelf - find _PyRuntime, PyCode_Type and Py_Version in one ELF file.
 *
 * CPython puts _PyRuntime alone in a `.PyRuntime` section (3.10+) and also
 * exports it as a dynamic symbol; older versions only have the symbol.  We
 * prefer the section, as CPython's own remote debugger does, and fall back
 * to .dynsym, then .symtab.
 *
 * Both entry points share inspect_elf(): the fd one lets libelf read the
 * file with pread (ELF_C_READ) instead of mapping it, so a file truncated
 * under us gives a read error rather than SIGBUS; the memory one is what
 * the fuzzer drives.  libelf already rejects most out-of-range tables, but
 * we check every header table, section and segment we use against the file
 * size ourselves rather than rely on that.
 */
#include <ctype.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "pyelf.h"
#include "util.h"

#if defined(__x86_64__)
#define PYELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define PYELF_MACHINE EM_AARCH64
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PYELF_DATA ELFDATA2LSB
#else
#define PYELF_DATA ELFDATA2MSB
#endif

/* No real symbol table is this big; refuse to have libelf read one. */
#define PYELF_MAX_TABLE (512ULL << 20)

/* What one pass over the section headers finds. */
struct sections {
	Elf_Scn *dynsym;
	Elf_Scn *symtab;
	Elf_Scn *dynamic;
	GElf_Shdr pyruntime;
	bool has_pyruntime;
};

/* What the symbol tables give. */
struct symbols {
	uint64_t runtime, runtime_size;
	uint64_t code_type;
	uint64_t py_version;
	uint64_t eval, eval_size;
	uint64_t sym[LAYOUT_SYM_NR];	/* what the layout asked for */
	uint32_t want;		/* bits of enum layout_sym to look for */
	uint32_t found;
	bool has_runtime;
};

/* [off, off + size) lies inside [0, limit), without overflow. */
static bool range_ok(uint64_t off, uint64_t size, uint64_t limit)
{
	return off <= limit && size <= limit - off;
}

static bool section_in_file(const GElf_Shdr *sh, uint64_t fsize)
{
	if (sh->sh_type == SHT_NOBITS)
		return true;
	return range_ok(sh->sh_offset, sh->sh_size, fsize);
}

/*
 * Header tables must have the entry size we expect and fit in the file:
 * a hostile e_phoff/e_shoff must not make libelf read past the end, and a
 * wrong entry size means libelf would misread every entry.
 */
static int check_tables(Elf *elf, const GElf_Ehdr *eh, uint64_t fsize,
			char *err, size_t errlen)
{
	size_t phnum, shnum;
	size_t phsz = gelf_fsize(elf, ELF_T_PHDR, 1, EV_CURRENT);
	size_t shsz = gelf_fsize(elf, ELF_T_SHDR, 1, EV_CURRENT);

	if (!phsz || !shsz || elf_getphdrnum(elf, &phnum) ||
	    elf_getshdrnum(elf, &shnum)) {
		seterr(err, errlen, "bad ELF header: %s", elf_errmsg(-1));
		return -1;
	}
	if (phnum && (eh->e_phentsize != phsz ||
		      phnum > fsize / phsz ||
		      !range_ok(eh->e_phoff, phnum * phsz, fsize))) {
		seterr(err, errlen, "program header table out of bounds");
		return -1;
	}
	if (shnum && (eh->e_shentsize != shsz ||
		      shnum > fsize / shsz ||
		      !range_ok(eh->e_shoff, shnum * shsz, fsize))) {
		seterr(err, errlen, "section header table out of bounds");
		return -1;
	}
	return 0;
}

/* load_vaddr: what the mapping of file offset 0 corresponds to. */
static int first_load(Elf *elf, uint64_t *vaddr)
{
	size_t i, phnum;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &phnum))
		return -1;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* p_align is a power of two by the ELF spec; 0 and 1 mean none. */
		if (ph.p_align > 1)
			*vaddr = ph.p_vaddr - ph.p_vaddr % ph.p_align;
		else
			*vaddr = ph.p_vaddr;
		return 0;
	}
	return -1;
}

/*
 * Find the PT_LOAD whose memory image holds [vaddr, vaddr + size).  With
 * @off, also require the bytes to come from the file (not the zero-filled
 * tail) and return their file offset.
 */
static bool vaddr_loaded(Elf *elf, uint64_t fsize, uint64_t vaddr,
			 uint64_t size, uint64_t *off)
{
	size_t i, phnum;
	GElf_Phdr ph;
	uint64_t rel, len;

	if (elf_getphdrnum(elf, &phnum))
		return false;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr < ph.p_vaddr)
			continue;
		rel = vaddr - ph.p_vaddr;
		len = off ? ph.p_filesz : ph.p_memsz;
		if (!range_ok(rel, size, len))
			continue;
		if (!off)
			return true;
		if (ph.p_filesz > ph.p_memsz ||
		    !range_ok(ph.p_offset, ph.p_filesz, fsize))
			continue;
		*off = ph.p_offset + rel;
		return true;
	}
	return false;
}

static const char *section_name(Elf *elf, size_t shstrndx, const GElf_Shdr *sh)
{
	if (shstrndx == SHN_UNDEF)
		return NULL;
	return elf_strptr(elf, shstrndx, sh->sh_name);
}

/* One pass over the section headers; sections outside the file are ignored. */
static void find_sections(Elf *elf, uint64_t fsize, struct sections *s)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	const char *name;

	memset(s, 0, sizeof(*s));
	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = SHN_UNDEF;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !section_in_file(&sh, fsize))
			continue;
		if (sh.sh_type == SHT_DYNSYM && !s->dynsym)
			s->dynsym = scn;
		else if (sh.sh_type == SHT_SYMTAB && !s->symtab)
			s->symtab = scn;
		else if (sh.sh_type == SHT_DYNAMIC && !s->dynamic)
			s->dynamic = scn;
		if (s->has_pyruntime || !sh.sh_size)
			continue;
		name = section_name(elf, shstrndx, &sh);
		/* CPython's reader strips the dot; match both spellings. */
		if (name && (!strcmp(name, ".PyRuntime") || !strcmp(name, "PyRuntime"))) {
			s->pyruntime = sh;
			s->has_pyruntime = true;
		}
	}
}

/* The string table a symbol/dynamic section links to, if it is sane. */
static bool strtab_ok(Elf *elf, size_t link, uint64_t fsize)
{
	Elf_Scn *scn;
	GElf_Shdr sh;

	scn = link == SHN_UNDEF ? NULL : elf_getscn(elf, link);
	if (!scn || !gelf_getshdr(scn, &sh))
		return false;
	return sh.sh_type == SHT_STRTAB && section_in_file(&sh, fsize) &&
	       sh.sh_size <= PYELF_MAX_TABLE;
}

/* Section data for a table we are about to walk, or NULL if unusable. */
static Elf_Data *table_data(Elf *elf, Elf_Scn *scn, uint64_t fsize,
			    GElf_Shdr *sh)
{
	if (!scn || !gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS)
		return NULL;
	if (!section_in_file(sh, fsize) || sh->sh_size > PYELF_MAX_TABLE)
		return NULL;
	if (!strtab_ok(elf, sh->sh_link, fsize))
		return NULL;
	return elf_getdata(scn, NULL);
}

/* A symbol the layout asked for (layout_symbols_wanted()). */
static void match_wanted(const char *name, const GElf_Sym *sym, struct symbols *out)
{
	const struct layout_symbol *ls;
	unsigned i;

	for (i = 0; i < LAYOUT_SYM_NR; i++) {
		ls = layout_symbol(i);
		if (!(out->want & (1u << i)) || (out->found & (1u << i)) ||
		    strcmp(name, ls->name) || (ls->size && sym->st_size != ls->size))
			continue;
		out->sym[i] = sym->st_value;
		out->found |= 1u << i;
		return;
	}
}

/* Every symbol wanted that is worth searching .symtab for is found. */
static bool wanted_done(const struct symbols *s)
{
	uint32_t need = 0;
	unsigned i;

	for (i = 0; i < LAYOUT_SYM_NR; i++)
		if (!(layout_symbol(i)->flags & LAYOUT_SYM_MARKER))
			need |= 1u << i;
	return (s->found & (s->want & need)) == (s->want & need);
}

static void match_symbol(const char *name, const GElf_Sym *sym,
			 struct symbols *out)
{
	if (!out->has_runtime && !strcmp(name, "_PyRuntime")) {
		out->runtime = sym->st_value;
		out->runtime_size = sym->st_size;
		out->has_runtime = true;
	} else if (!out->code_type && !strcmp(name, "PyCode_Type")) {
		out->code_type = sym->st_value;
	} else if (!out->py_version && !strcmp(name, "Py_Version")) {
		out->py_version = sym->st_value;
	} else if (!out->eval && !strcmp(name, PYELF_EVAL_SYM)) {
		out->eval = sym->st_value;
		out->eval_size = sym->st_size;
	} else {
		match_wanted(name, sym, out);
	}
}

static bool symbols_done(const struct symbols *s)
{
	return s->has_runtime && s->code_type && s->py_version && s->eval && wanted_done(s);
}

static void scan_symbols(Elf *elf, Elf_Scn *scn, uint64_t fsize,
			 struct symbols *out)
{
	size_t i, n, symsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Sym sym;
	const char *name;

	data = table_data(elf, scn, fsize, &sh);
	if (!data || !symsz)
		return;
	/* Count from the data libelf gave us, not from sh_entsize. */
	n = data->d_size / symsz;
	for (i = 0; i < n && !symbols_done(out); i++) {
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		/* An importer of libpython has _PyRuntime as an undefined symbol. */
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value || !sym.st_name)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (name)
			match_symbol(name, &sym, out);
	}
}

/*
 * "3.13" from "libpython3.13.so.1.0", "python3.13", "libpython3.13d.so",
 * "python3.13t"; only the last path component is looked at.
 */
void pyelf_version_from_name(const char *name, char *buf, size_t len)
{
	const char *base, *p, *q;
	size_t major, minor;

	buf[0] = '\0';
	if (!name)
		return;
	base = strrchr(name, '/');
	base = base ? base + 1 : name;
	for (p = strstr(base, "python"); p; p = strstr(p + 1, "python")) {
		q = p + strlen("python");
		for (major = 0; isdigit((unsigned char)q[major]); major++)
			;
		if (major < 1 || major > 3 || q[major] != '.')
			continue;
		for (minor = 0; isdigit((unsigned char)q[major + 1 + minor]); minor++)
			;
		if (minor < 1 || minor > 4 || major + 1 + minor >= len)
			continue;
		memcpy(buf, q, major + 1 + minor);
		buf[major + 1 + minor] = '\0';
		return;
	}
}

/* Embedders may rename the file; the DT_SONAME keeps the real name. */
static void version_from_soname(Elf *elf, Elf_Scn *scn, uint64_t fsize,
				char *buf, size_t len)
{
	size_t i, n, dynsz = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Dyn dyn;

	data = table_data(elf, scn, fsize, &sh);
	if (!data || !dynsz)
		return;
	n = data->d_size / dynsz;
	for (i = 0; i < n; i++) {
		if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			return;
		if (dyn.d_tag == DT_SONAME) {
			pyelf_version_from_name(elf_strptr(elf, sh.sh_link, dyn.d_un.d_val),
					  buf, len);
			return;
		}
	}
}

/* Refuse what the profiler could not read anyway (other ABIs, .o files). */
static int check_header(Elf *elf, GElf_Ehdr *eh, char *err, size_t errlen)
{
	if (elf_kind(elf) != ELF_K_ELF) {
		seterr(err, errlen, "not an ELF file");
		return -1;
	}
	if (!gelf_getehdr(elf, eh)) {
		seterr(err, errlen, "bad ELF header: %s", elf_errmsg(-1));
		return -1;
	}
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != PYELF_DATA) {
		seterr(err, errlen, "ELF class/byte order not supported");
		return 1;
	}
#ifdef PYELF_MACHINE
	if (eh->e_machine != PYELF_MACHINE) {
		seterr(err, errlen, "ELF machine %u not supported", eh->e_machine);
		return 1;
	}
#endif
	if (eh->e_type != ET_EXEC && eh->e_type != ET_DYN) {
		seterr(err, errlen, "not an executable or shared object");
		return 1;
	}
	return 0;
}

/* Fill runtime fields from the section, or else the symbol. */
static bool pick_runtime(Elf *elf, uint64_t fsize, const struct sections *s,
			 const struct symbols *sym, struct pyelf_info *out)
{
	uint64_t off;

	if (s->has_pyruntime) {
		out->runtime_vaddr = s->pyruntime.sh_addr;
		out->runtime_size = s->pyruntime.sh_size;
	} else if (sym->has_runtime) {
		out->runtime_vaddr = sym->runtime;
		out->runtime_size = sym->runtime_size;
	} else {
		return false;
	}
	/* An address no PT_LOAD maps would be read from nowhere. */
	if (!vaddr_loaded(elf, fsize, out->runtime_vaddr, out->runtime_size, NULL))
		return false;
	if (s->has_pyruntime && s->pyruntime.sh_type == SHT_PROGBITS)
		out->runtime_file_off = s->pyruntime.sh_offset;
	else if (vaddr_loaded(elf, fsize, out->runtime_vaddr, out->runtime_size, &off))
		out->runtime_file_off = off;
	return true;
}

/*
 * No _PyRuntime: nothing of the file is kept but the version an
 * interpreter too old to have one shows by its name or symbols.
 */
static void no_runtime(const struct symbols *syms, struct pyelf_info *out)
{
	char version[sizeof(out->soname_version)];

	memcpy(version, out->soname_version, sizeof(version));
	if (!version[0])
		layout_version_from_symbols(syms->found, version, sizeof(version));
	memset(out, 0, sizeof(*out));
	memcpy(out->soname_version, version, sizeof(version));
}

/* The section named `want`, if it holds bytes in the file. */
static Elf_Scn *section_by_name(Elf *elf, uint64_t fsize, const char *want)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *name;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !section_in_file(&sh, fsize))
			continue;
		name = section_name(elf, shstrndx, &sh);
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

/*
 * The micro version of a string ending at `end` (the NUL) in "X.Y.<micro>"
 * with X.Y = `minor` (the linker may have merged PY_VERSION into the tail
 * of a longer string, such as a prefix path ".../3.10.13"); -1 if none.
 */
static long micro_at(const char *d, size_t end, const char *minor, size_t mlen)
{
	size_t i = end, digits = 0;
	long micro = 0;

	while (i > 0 && isdigit((unsigned char)d[i - 1]) && digits < 3) {
		i--;
		digits++;
	}
	if (!digits || i < mlen + 1 || d[i - 1] != '.' || memcmp(d + i - 1 - mlen, minor, mlen))
		return -1;
	if (i - 1 - mlen > 0 && (isdigit((unsigned char)d[i - 2 - mlen]) || d[i - 2 - mlen] == '.'))
		return -1;
	for (; i < end; i++)
		micro = micro * 10 + (d[i] - '0');
	return micro;
}

/*
 * Before Py_Version (3.11) the micro version lives only in the PY_VERSION
 * literal in .rodata: "3.10" (from the file name) becomes "3.10.13" when
 * every string there that ends in "3.10.<digits>" agrees on the digits.
 */
static void micro_from_rodata(Elf *elf, uint64_t fsize, char *ver, size_t len)
{
	Elf_Scn *scn = section_by_name(elf, fsize, ".rodata");
	size_t mlen = strlen(ver), i;
	long micro = -1, m;
	Elf_Data *data;
	const char *d;

	if (!scn || !mlen || !strchr(ver, '.') || strchr(strchr(ver, '.') + 1, '.'))
		return;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || data->d_size > PYELF_MAX_TABLE)
		return;
	d = data->d_buf;
	for (i = 1; i < data->d_size; i++) {
		if (d[i] || !isdigit((unsigned char)d[i - 1]))
			continue;
		m = micro_at(d, i, ver, mlen);
		if (m < 0)
			continue;
		if (micro >= 0 && m != micro)
			return;	/* two candidates: say nothing rather than guess */
		micro = m;
	}
	if (micro >= 0 && mlen + 5 < len)
		snprintf(ver + mlen, len - mlen, ".%u", (unsigned)micro & 0x3ff);
}

/*
 * A file whose name and soname tell no version (a static interpreter copied
 * as bin/python, as container images do) and that has no Py_Version (before
 * 3.11): the version of the one PY_VERSION literal of 3.8 to 3.10 in its
 * .rodata, if exactly one of them has one.
 */
static void version_from_rodata(Elf *elf, uint64_t fsize, char *ver, size_t len)
{
	static const char *const minors[] = { "3.8", "3.9", "3.10" };
	char found[16] = "", cand[16];
	size_t i;

	for (i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		snprintf(cand, sizeof(cand), "%s", minors[i]);
		micro_from_rodata(elf, fsize, cand, sizeof(cand));
		if (!strcmp(cand, minors[i]))
			continue;	/* no "3.X.<micro>" string */
		if (found[0])
			return;		/* two versions: say nothing */
		memcpy(found, cand, sizeof(found));
	}
	snprintf(ver, len, "%s", found);
}

static int inspect_elf(Elf *elf, uint64_t fsize, const char *name,
		       struct pyelf_info *out, char *err, size_t errlen)
{
	struct sections secs;
	struct symbols syms = { 0 };
	GElf_Ehdr eh;
	unsigned i;
	int ret;

	ret = check_header(elf, &eh, err, errlen);
	if (ret)
		return ret;
	if (check_tables(elf, &eh, fsize, err, errlen))
		return -1;
	if (first_load(elf, &out->load_vaddr)) {
		seterr(err, errlen, "no PT_LOAD segment");
		return 1;
	}
	find_sections(elf, fsize, &secs);
	pyelf_version_from_name(name, out->soname_version, sizeof(out->soname_version));
	if (!out->soname_version[0])
		version_from_soname(elf, secs.dynamic, fsize, out->soname_version,
				    sizeof(out->soname_version));
	/* Which symbols this version needs is the layout's to say. */
	syms.want = layout_symbols_wanted(out->soname_version);
	scan_symbols(elf, secs.dynsym, fsize, &syms);
	if (!symbols_done(&syms))
		scan_symbols(elf, secs.symtab, fsize, &syms);
	if (!pick_runtime(elf, fsize, &secs, &syms, out)) {
		no_runtime(&syms, out);
		seterr(err, errlen, "no _PyRuntime");
		return 1;
	}
	if (syms.code_type && vaddr_loaded(elf, fsize, syms.code_type, 1, NULL))
		out->code_type_vaddr = syms.code_type;
	if (syms.eval && syms.eval_size &&
	    vaddr_loaded(elf, fsize, syms.eval, syms.eval_size, NULL)) {
		out->eval_vaddr = syms.eval;
		out->eval_size = syms.eval_size;
	}
	if (syms.py_version && vaddr_loaded(elf, fsize, syms.py_version, 8, NULL))
		out->py_version_vaddr = syms.py_version;
	else if (!out->soname_version[0])
		version_from_rodata(elf, fsize, out->soname_version, sizeof(out->soname_version));
	else
		micro_from_rodata(elf, fsize, out->soname_version, sizeof(out->soname_version));
	for (i = 0; i < LAYOUT_SYM_NR; i++)
		if (syms.sym[i] && vaddr_loaded(elf, fsize, syms.sym[i],
						layout_symbol(i)->size ? layout_symbol(i)->size : 1,
						NULL))
			out->sym_vaddr[i] = syms.sym[i];
	return 0;
}

static void init_libelf(void)
{
	/* Idempotent and cheap; avoids an init call every user must remember. */
	elf_version(EV_CURRENT);
}

int pyelf_inspect_mem(const void *buf, size_t len, struct pyelf_info *out,
		      char *err, size_t errlen)
{
	Elf *elf;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!buf || !len) {
		seterr(err, errlen, "empty image");
		return -1;
	}
	init_libelf();
	/*
	 * elf_memory() takes a char * but only reads the image unless we ask
	 * for an update; the unit test passes a PROT_READ mapping to prove it.
	 */
	elf = elf_memory((char *)(uintptr_t)buf, len);
	if (!elf) {
		seterr(err, errlen, "elf_memory: %s", elf_errmsg(-1));
		return -1;
	}
	ret = inspect_elf(elf, len, NULL, out, err, errlen);
	elf_end(elf);
	return ret;
}

int pyelf_inspect_fd(int fd, const char *name, struct pyelf_info *out,
		     char *err, size_t errlen)
{
	struct stat st;
	Elf *elf;
	int ret;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st)) {
		seterr(err, errlen, "fstat: %s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(err, errlen, "not a regular file");
		return -1;
	}
	init_libelf();
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		seterr(err, errlen, "elf_begin: %s", elf_errmsg(-1));
		return -1;
	}
	ret = inspect_elf(elf, (uint64_t)st.st_size, name, out, err, errlen);
	elf_end(elf);
	return ret;
}
