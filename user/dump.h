/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tachyon-bpf dump: every thread's Python stack, once, like py-spy dump.
 * All in userspace: the interpreter's thread list and each thread's frame
 * chain are read with process_vm_readv, following the same layout (and
 * the same rules: shim frames skipped, sentinel frame, tag bits, cframe
 * hop) as the BPF walker; symbols.c names the code objects.
 */
#ifndef TB_DUMP_H
#define TB_DUMP_H

#include "cli.h"

/* Dump every process of o->pids to stdout. Returns the exit code. */
int dump_main(const struct options *o);

#endif
