/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* An ELF file's GNU build id, the key its unwind tables and symbols are cached by. */
#ifndef TB_ELFNOTE_H
#define TB_ELFNOTE_H

#include <gelf.h>
#include <stddef.h>

/* The build id in note data d as lowercase hex into out (outlen >= 41 for
 * a 20-byte id); out is left as is if d holds none. Returns 1 if found. */
int elf_note_build_id(Elf_Data *d, char *out, size_t outlen);

#endif
