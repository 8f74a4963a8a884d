/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --mode exception: the names of the exception types the BPF side reports
 * (a type object's address per stack), read once per (process, type) from
 * the type's tp_name, when its first stack arrives, while it surely lives.
 *
 * Errors: 0 on success, a negative errno on failure.
 */
#ifndef TB_EXCTYPES_H
#define TB_EXCTYPES_H

#include <stdint.h>
#include "hmap.h"
#include "target.h"

struct exc_types {
	struct hmap names;	/* {target, type} -> char * ("ValueError"), NULL if unreadable */
};

int exc_types_init(struct exc_types *e);
void exc_types_free(struct exc_types *e);
/* Read the name of t's type object `type` unless it is known. */
int exc_types_learn(struct exc_types *e, const struct target *t, uint64_t type);
/* The name learnt for (target, type), or NULL. */
const char *exc_types_name(const struct exc_types *e, uint32_t target, uint64_t type);
/* A process is gone: its types with it. */
void exc_types_forget(struct exc_types *e, uint32_t target);

#endif
