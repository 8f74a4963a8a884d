/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vdso - the kernel's vDSO as a file. Every x86-64 process of a kernel maps
 * the same vDSO image as the profiler itself, and the image is a whole ELF
 * (.dynsym, .eh_frame, section headers), so a sample in it gets unwind rows
 * and a name (`__vdso_clock_gettime [vdso]`) like a library's; without it
 * the frame had neither (its mapping has no file).
 */
#ifndef TB_VDSO_H
#define TB_VDSO_H

#include "proc.h"

/*
 * A path that opens a copy of the profiler's own vDSO (a memfd made at the
 * first call, "/proc/self/fd/N"), or NULL if there is none (no vDSO, no
 * memory).
 */
const char *vdso_path(void);

/* Is m a process's vDSO mapping of the profiler's image (its name, its size)? */
int vdso_mapping(const struct proc_map *m);

#endif
