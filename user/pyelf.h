/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pyelf - find the CPython runtime (_PyRuntime and friends) in one ELF file.
 *
 * The file may come from a hostile process (a container, a file replaced
 * under our feet), so every size and offset is checked against the file
 * length before it is used.
 */
#ifndef TACHYON_PYELF_H
#define TACHYON_PYELF_H

#include <stddef.h>
#include <stdint.h>
#include "layout.h"

/*
 * The interpreter's eval function (every version): --native replaces its
 * frames by the Python frames of its invocations. GCC's split parts carry
 * the name with a suffix (".cold").
 */
#define PYELF_EVAL_SYM	"_PyEval_EvalFrameDefault"

struct pyelf_info {
	uint64_t load_vaddr;		/* first PT_LOAD p_vaddr rounded down to its p_align */
	uint64_t runtime_vaddr;		/* `.PyRuntime` section sh_addr, else the _PyRuntime symbol */
	uint64_t runtime_size;
	uint64_t runtime_file_off;	/* file offset of _PyRuntime's bytes, 0 if NOBITS/unknown */
	uint64_t code_type_vaddr;	/* PyCode_Type symbol, 0 if absent */
	uint64_t py_version_vaddr;	/* Py_Version symbol (3.11+), 0 if absent */
	uint64_t eval_vaddr, eval_size;	/* PYELF_EVAL_SYM's main part, 0 if absent */
	/* the symbols layout_symbols_wanted() asks for, by enum layout_sym; 0 if absent */
	uint64_t sym_vaddr[LAYOUT_SYM_NR];
	/* "3.13" from libpython3.13.so.1.0 / python3.13, else what the marker
	 * symbols tell (layout_version_from_symbols(): "2.7"), else "" */
	char soname_version[16];
};

/*
 * Inspect the ELF file open on @fd; @name (may be NULL) is its path or file
 * name, used only for soname_version.  Returns 0 if the file defines
 * _PyRuntime (@out filled), 1 if it is a valid ELF without it (or one we
 * cannot use, reason in @err; soname_version may still name the version of
 * an interpreter too old to have _PyRuntime), -1 if it is not a readable ELF (reason in
 * @err).  The file is read with pread, never mapped, so a file truncated
 * while we read it yields an error, not SIGBUS.
 */
int pyelf_inspect_fd(int fd, const char *name, struct pyelf_info *out,
		     char *err, size_t errlen);

/* Same on an in-memory image (fuzzing entry point); @buf is not modified. */
int pyelf_inspect_mem(const void *buf, size_t len, struct pyelf_info *out,
		      char *err, size_t errlen);

/* "3.13" from a file name like libpython3.13.so.1.0 or python2.7; "" if none. */
void pyelf_version_from_name(const char *name, char *buf, size_t len);

#endif /* TACHYON_PYELF_H */
