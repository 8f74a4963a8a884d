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

/* Load and sort; -errno if the file is unreadable, -ENODATA if it shows
 * only zero addresses (kptr_restrict without root). */
int ksyms_load(struct ksyms *k, const char *path);
/* The function containing addr, NULL if below the first symbol. */
const char *ksyms_find(const struct ksyms *k, uint64_t addr);
void ksyms_free(struct ksyms *k);

/* --kernel: a sample's kernel stack as frame names. */
struct kstack_namer {
	struct ksyms ksyms;
	int loaded;		/* /proc/kallsyms read (once, at the first stack) */
	int tick;		/* the event is the tick: stacks start in its interrupt */
};

/*
 * ips: a kernel stack, innermost first. Puts its frame names in names (at
 * most n), without our BPF program, its trampoline and, for the tick,
 * the timer interrupt; "[unknown]" for an address with no symbol.
 * Returns how many names.
 */
int kstack_names(struct kstack_namer *kn, const uint64_t *ips, int n, const char **names);

#endif
