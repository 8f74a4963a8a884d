/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* dump --async: a thread's asyncio task tree (3.14+, layout.async.ok). */
#ifndef TB_DUMP_ASYNC_H
#define TB_DUMP_ASYNC_H

#include <stdint.h>
#include "symbols.h"
#include "target.h"

/* Print the tasks of the thread state's list as a tree, each with its
 * suspended coroutine frames; nothing if it has none. */
void dump_async_thread(const struct target *t, struct symbols *sym, int full_paths,
		       uint64_t tstate);

#endif
