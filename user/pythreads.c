// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Python thread names from threading._active: see pythreads.h. */
#include <stdlib.h>
#include <string.h>
#include "pyobj.h"
#include "pythreads.h"
#include "remote.h"

#define ACTIVE_MAX 4096	/* threads of one interpreter we name */

/* One Thread object: its kernel tid and name; 0, or -1 if either is missing. */
static int read_thread(const struct target *t, uint64_t thread, struct pythread *out)
{
	static const char *const attrs[] = { "_name", "_native_id" };
	uint64_t v[2];
	int64_t tid;

	if (pyobj_attrs(t, thread, attrs, v, 2) != 2 || pyobj_long(t, v[1], &tid) ||
	    tid <= 0 || tid > UINT32_MAX || pyobj_str(t, v[0], out->name, sizeof(out->name)))
		return -1;
	out->tid = (uint32_t)tid;
	return 0;
}

int pythreads_cache_init(struct pythreads_cache *c)
{
	return hmap_init(&c->objs, 2 * sizeof(uint64_t));
}

void pythreads_cache_free(struct pythreads_cache *c)
{
	hmap_free_values(&c->objs, free);
}

/* read_thread() through the cache; 0 if out names a thread. */
static int cached_thread(const struct target *t, struct pythreads_cache *c, uint64_t thread,
			 struct pythread *out)
{
	uint64_t key[2] = { t->id, thread };
	struct pythread *p;
	void **slot;
	int added;

	if (!c || !c->objs.slots)	/* no cache (dump), or out of memory */
		return read_thread(t, thread, out);
	slot = hmap_put(&c->objs, key, &added);
	if (!slot)
		return read_thread(t, thread, out);
	if (added) {
		p = calloc(1, sizeof(*p));
		if (!p) {
			hmap_del(&c->objs, key);
			return read_thread(t, thread, out);
		}
		if (read_thread(t, thread, p))
			p->tid = 0;
		*slot = p;
	}
	p = *slot;
	*out = *p;
	return p->tid ? 0 : -1;
}

/* The Thread objects of one interpreter's threading._active. */
static int read_interp(const struct target *t, struct pythreads_cache *c, uint64_t interp,
		       struct pythread *out, int max)
{
	const struct pyobj_layout *o = &t->layout.obj;
	uint64_t modules, mod, md, active, *keys, *vals;
	int n, i, got = 0;

	if (remote_read(t->pid, interp + o->interp_modules, &modules, 8) ||
	    pyobj_dict_get(t, modules, "threading", &mod) ||
	    remote_read(t->pid, mod + o->md_dict, &md, 8) ||
	    pyobj_dict_get(t, md, "_active", &active))
		return 0;	/* threading not imported: no names here */
	if (max > ACTIVE_MAX)
		max = ACTIVE_MAX;
	keys = malloc(max * sizeof(*keys) + 8);
	vals = malloc(max * sizeof(*vals) + 8);
	n = keys && vals ? pyobj_dict_items(t, active, keys, vals, NULL, max) : -1;
	for (i = 0; i < n; i++)
		got += !cached_thread(t, c, vals[i], &out[got]);
	free(keys);
	free(vals);
	return got;
}

int pythreads_read(const struct target *t, struct pythreads_cache *c, struct pythread *out,
		   int max)
{
	const struct tb_walk *w = &t->layout.walk;
	uint64_t interp;
	int i, n = 0;

	if (!pyobj_usable(t) ||
	    remote_read(t->pid, w->addr.runtime_addr + w->off.rt_interp_head, &interp, 8))
		return -1;
	for (i = 0; i < TB_MAX_INTERPS && interp && n < max; i++) {
		n += read_interp(t, c, interp, out + n, max - n);
		if (remote_read(t->pid, interp + w->off.interp_next, &interp, 8))
			break;
	}
	return n;
}

const char *pythreads_find(const struct pythread *th, int n, uint32_t tid)
{
	int i;

	for (i = 0; i < n; i++)
		if (th[i].tid == tid)
			return th[i].name;
	return NULL;
}
