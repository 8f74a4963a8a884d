/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reading Python objects of a running process from userspace: str, int,
 * float, dicts with str keys, the attributes of an instance, type names
 * and a short repr. Every byte is copied with process_vm_readv following
 * the version's struct pyobj_layout; nothing in the target is executed and
 * every length read from it is bounded, so a racing or hostile process
 * costs a failed lookup, never a crash.
 */
#ifndef TB_PYOBJ_H
#define TB_PYOBJ_H

#include <stddef.h>
#include <stdint.h>
#include "target.h"

/* 1 if this target's objects are described (3.11 to 3.15). */
int pyobj_usable(const struct target *t);
/* A str as UTF-8 (cut to outsz); 0, or a negative errno if it is not a readable str. */
int pyobj_str(const struct target *t, uint64_t addr, char *out, size_t outsz);
/* An int that fits in 64 bits; 0, -ERANGE if it does not fit, or another negative errno. */
int pyobj_long(const struct target *t, uint64_t addr, int64_t *v);
/* The value of the str key `key` in a dict; 0, -ENOENT if absent, or another negative errno. */
int pyobj_dict_get(const struct target *t, uint64_t dict, const char *key, uint64_t *val);
/*
 * Every (key, value) of a dict, up to max; for dicts whose keys are not str
 * (kind general) hashes[i] is the key's hash (an int's own value).
 * Returns how many, or a negative errno.
 */
int pyobj_dict_items(const struct target *t, uint64_t dict, uint64_t *keys, uint64_t *vals,
		     int64_t *hashes, int max);
/* Attributes of an instance (managed __dict__); vals[i] = 0 where absent.
 * Returns how many were found, or a negative errno. */
int pyobj_attrs(const struct target *t, uint64_t obj, const char *const *names,
		uint64_t *vals, int n);
/* The object's type name ("int", "Thread"; printable ASCII, others as '?'); 0, or a negative errno. */
int pyobj_type_name(const struct target *t, uint64_t obj, char *out, size_t outsz);
/* The same, of a type object itself ("ValueError"). */
int pyobj_type_name_of(const struct target *t, uint64_t type, char *out, size_t outsz);
/*
 * A short repr: repr() of str, bytes, int, float, bool and None; "<list,
 * len 3>" for list, tuple, dict, set and frozenset; "<Type at 0x...>" for
 * anything else. Always fills out.
 */
void pyobj_repr(const struct target *t, uint64_t obj, char *out, size_t outsz);

#endif
