/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Python thread names, as `threading` knows them: its registry
 * threading._active (ident -> Thread) in every interpreter, found through
 * sys.modules and read with process_vm_readv (pyobj.c). Each Thread gives
 * its _native_id (the kernel tid we sample) and its _name. Threads that
 * threading does not know (started from C, or by _thread directly) are not
 * listed: callers fall back to the kernel's comm.
 */
#ifndef TB_PYTHREADS_H
#define TB_PYTHREADS_H

#include <stdint.h>
#include "hmap.h"
#include "target.h"

#define PYTHREAD_NAME_MAX 96

struct pythread {
	uint32_t tid;			/* native thread id */
	char name[PYTHREAD_NAME_MAX];	/* UTF-8, cut on a character boundary */
};

/*
 * Thread objects already read: a Thread's name is read once per cache
 * lifetime (the session clears it at each compaction, so renames show),
 * and a later read of the registry costs a few syscalls, not a dozen per
 * thread. Keyed by {target id, object address}.
 */
struct pythreads_cache {
	struct hmap objs;	/* -> struct pythread * (tid 0: not a named Thread) */
};

int pythreads_cache_init(struct pythreads_cache *c);
void pythreads_cache_free(struct pythreads_cache *c);
/* Up to max threads of t; returns how many, or -1 if none can be read.
 * cache may be NULL. */
int pythreads_read(const struct target *t, struct pythreads_cache *cache,
		   struct pythread *out, int max);
/* The name of tid among th[0..n), or NULL. */
const char *pythreads_find(const struct pythread *th, int n, uint32_t tid);

#endif
