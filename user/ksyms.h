/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Kernel addresses -> function names, from /proc/kallsyms. */
#ifndef TB_KSYMS_H
#define TB_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksym {
	uint64_t addr;
	char *name;
};

struct ksyms {
	struct ksym *v;
	size_t n;
	char *names;	/* one allocation for all names */
};

/* Load and sort; -1 if the file is unreadable or shows only zero addresses
 * (kptr_restrict without root). */
int ksyms_load(struct ksyms *k, const char *path);
/* The function containing addr, NULL if below the first symbol. */
const char *ksyms_find(const struct ksyms *k, uint64_t addr);
void ksyms_free(struct ksyms *k);

#endif
