// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The vDSO as a file (vdso.h). The x86-64 vDSO is built with frame pointers
 * and .eh_frame (arch/x86/entry/vdso/Makefile: -fno-omit-frame-pointer
 * -fasynchronous-unwind-tables), so frame-pointer steps through it already
 * held, save at its functions' first instructions (`push %rbp`); the file
 * gives those samples rows, and every frame there a name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vdso.h"

static int tried;
static uint64_t own_size;
static char path[64];

/* The profiler's [vdso] mapping: start and size, or 0. */
static uint64_t own_vdso(uint64_t *start)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t len = 0;
	uint64_t size = 0;
	struct proc_map m;

	while (f && getline(&line, &len, f) > 0)
		if (!proc_parse_maps_line(line, &m) && !strcmp(m.path, "[vdso]")) {
			*start = m.start;
			size = m.end - m.start;
			break;
		}
	free(line);
	if (f)
		fclose(f);
	return size;
}

const char *vdso_path(void)
{
	uint64_t start = 0, size;
	int fd;

	if (tried)
		return path[0] ? path : NULL;
	tried = 1;
	size = own_vdso(&start);
	if (!size || start != getauxval(AT_SYSINFO_EHDR))
		return NULL;
	fd = memfd_create("tachyon-bpf-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (write(fd, (const void *)(uintptr_t)start, size) != (ssize_t)size) {
		close(fd);
		return NULL;
	}
	own_size = size;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return path;
}

int vdso_mapping(const struct proc_map *m)
{
	return !strcmp(m->path, "[vdso]") && vdso_path() && m->end - m->start == own_size &&
	       !m->offset;
}
