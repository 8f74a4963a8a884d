// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "elfnote.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

int elf_note_build_id(Elf_Data *d, char *out, size_t outlen)
{
	size_t off = 0, next, name_off, desc_off, i;
	const uint8_t *b;
	GElf_Nhdr nh;

	while (d && off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		off = next;
		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) ||
		    !nh.n_descsz || 2 * (size_t)nh.n_descsz + 1 > outlen)
			continue;
		b = (const uint8_t *)d->d_buf + desc_off;
		for (i = 0; i < nh.n_descsz; i++)
			snprintf(out + 2 * i, 3, "%02x", b[i]);
		return 1;
	}
	return 0;
}
