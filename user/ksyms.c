// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel addresses to function names (/proc/kallsyms), and a kernel stack
 * as the frames a profile shows (--kernel).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "errors.h"
#include "util.h"
#include "ksyms.h"

static int cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Text symbols only: t/T (and w/W for weak functions). */
static int is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

int ksyms_load(struct ksyms *k, const char *path)
{
	FILE *f = fopen(path, "re");
	size_t cap = 0, ncap = 0, nlen = 0, i;
	char line[512], name[256], type;
	unsigned long long addr;

	memset(k, 0, sizeof(*k));
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t l;

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !is_text(type) || !addr)
			continue;
		l = strlen(name) + 1;
		if (array_grow(&k->v, &cap, k->n + 1, sizeof(*k->v), 65536))
			break;
		if (nlen + l > ncap) {
			char *g = realloc(k->names, ncap = (ncap + l) * 2);

			if (!g)
				break;
			k->names = g;
		}
		memcpy(k->names + nlen, name, l);
		k->v[k->n].addr = addr;
		k->v[k->n].name = (char *)(uintptr_t)nlen;	/* an offset until names stop moving */
		k->n++;
		nlen += l;
	}
	fclose(f);
	for (i = 0; i < k->n; i++)
		k->v[i].name = k->names + (uintptr_t)k->v[i].name;
	qsort(k->v, k->n, sizeof(*k->v), cmp);
	return k->n ? 0 : -ENODATA;
}

const char *ksyms_find(const struct ksyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n;

	if (!k->n || addr < k->v[0].addr)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (k->v[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return k->v[lo].name;
}

void ksyms_free(struct ksyms *k)
{
	free(k->v);
	free(k->names);
	memset(k, 0, sizeof(*k));
}

int kstack_names(struct kstack_namer *kn, const uint64_t *ips, int n, const char **names)
{
	int i, j;

	if (!kn->loaded) {
		kn->loaded = 1;
		if (ksyms_load(&kn->ksyms, "/proc/kallsyms"))
			tb_warn("--kernel: /proc/kallsyms has no addresses; kernel frames show as [unknown]");
	}
	for (i = 0, j = 0; i < n; i++) {
		const char *name = ksyms_find(&kn->ksyms, ips[i]);

		/* A tick sample's stack starts in the timer interrupt: what
		 * the thread was doing is under the interrupt's entry. */
		if (kn->tick && name && !strncmp(name, "asm_sysvec_", 11)) {
			j = 0;
			continue;
		}
		/* Innermost first: our own program and the trampoline calling it. */
		if (!j && name && (!strncmp(name, "bpf_", 4) || !strncmp(name, "__bpf_", 6)))
			continue;
		names[j++] = name ? name : "[unknown]";
	}
	return j;
}
