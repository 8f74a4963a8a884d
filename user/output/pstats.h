/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Python's marshal encoding, the part pstats files need: dicts, tuples,
 * ints, floats and str. Exactly what marshal.dumps(obj, 2) writes (no
 * references, no short forms), which every Python 3 reads back.
 */
#ifndef TB_OUTPUT_PSTATS_H
#define TB_OUTPUT_PSTATS_H

#include <stdint.h>
#include <stdio.h>
#include "output/emit.h"

/* '{', then key and value objects in turn, then marshal_dict_end(). */
void marshal_dict_begin(struct emit *e);
void marshal_dict_end(struct emit *e);
/* A tuple of n objects: the n objects follow. */
void marshal_tuple(struct emit *e, uint32_t n);
/* 'i' up to 2^31 - 1, else 'l' (15-bit digits), as marshal does. */
void marshal_int(struct emit *e, uint64_t v);
/* 'g': the IEEE double, little-endian. */
void marshal_float(struct emit *e, double v);
/* 'u': UTF-8; malformed bytes become U+FFFD (marshal refuses them). */
void marshal_str(struct emit *e, const char *s);

#endif
