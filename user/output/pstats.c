// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pstats: the marshal file cProfile's dump_stats() writes, which
 * `python3 -m pstats FILE`, pstats.Stats, snakeviz and gprof2dot read.
 * It is one dict:
 *
 *   (file, firstlineno, funcname) -> (cc, nc, tt, ct, callers)
 *   callers: (file, firstlineno, funcname) of a caller -> (nc, cc, tt, ct)
 *
 * (pstats reads a caller's tuple with the two counts the other way round,
 * total first: cProfile writes them so.) A function is what cProfile calls
 * one: name, file and first line. Counts are samples:
 *   nc  frames of the function over all samples (a recursive sample counts
 *       once per level, like cProfile's recursive calls),
 *   cc  samples with the function on the stack, once each ("primitive"),
 *   tt  samples with the function as leaf, in seconds (count / rate),
 *   ct  cc in seconds: recursion counted once per sample.
 * A caller's entry counts the samples where it called the function
 * directly, with tt the share where the function was the leaf.
 * Frames the profiler made up ([truncated], <GC>, kernel functions, thread
 * and process roots) get cProfile's key for built-ins: ("~", 0, name).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "util.h"
#include "output/output.h"
#include "output/emit.h"
#include "output/pstats.h"

/* ---- marshal ---- */

#define M_DICT	'{'
#define M_NULL	'0'	/* ends a dict */
#define M_TUPLE	'('
#define M_INT	'i'
#define M_LONG	'l'
#define M_FLOAT	'g'
#define M_STR	'u'

static void put_le(struct emit *e, uint64_t v, unsigned bytes)
{
	uint8_t b[8];
	unsigned i;

	for (i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	emit_write(e, b, bytes);
}

static void put_type(struct emit *e, char t)
{
	emit_write(e, &t, 1);
}

void marshal_dict_begin(struct emit *e)
{
	put_type(e, M_DICT);
}

void marshal_dict_end(struct emit *e)
{
	put_type(e, M_NULL);
}

void marshal_tuple(struct emit *e, uint32_t n)
{
	put_type(e, M_TUPLE);
	put_le(e, n, 4);
}

void marshal_int(struct emit *e, uint64_t v)
{
	uint64_t t;
	uint32_t ndig = 0;

	if (v <= INT32_MAX) {
		put_type(e, M_INT);
		put_le(e, v, 4);
		return;
	}
	for (t = v; t; t >>= 15)
		ndig++;
	put_type(e, M_LONG);
	put_le(e, ndig, 4);
	for (; v; v >>= 15)
		put_le(e, v & 0x7fff, 2);
}

void marshal_float(struct emit *e, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	put_type(e, M_FLOAT);
	put_le(e, bits, 8);
}

static const char replacement[] = "\xef\xbf\xbd";

/* Bytes of s as valid UTF-8: malformed sequences counted as U+FFFD. */
static size_t clean_len(const char *s, int emit_it, struct emit *e)
{
	size_t len = 0, n;
	uint32_t cp;

	while ((n = utf8_next(s, &cp))) {
		int bad = cp == 0xfffd && (n != 3 || memcmp(s, replacement, 3));

		if (emit_it)
			emit_write(e, bad ? replacement : s, bad ? 3 : n);
		len += bad ? 3 : n;
		s += n;
	}
	return len;
}

void marshal_str(struct emit *e, const char *s)
{
	put_type(e, M_STR);
	put_le(e, clean_len(s, 0, NULL), 4);
	clean_len(s, 1, e);
}

/* ---- counting ---- */

struct pfunc {
	uint64_t calls;		/* nc */
	uint64_t prim;		/* cc */
	uint64_t self;
	size_t last;		/* 1 + the last sample counted in prim */
};

struct pedge {
	uint32_t callee;
	uint32_t caller;
	uint64_t calls;
	uint64_t prim;
	uint64_t self;
	size_t last;
};

struct pcount {
	const struct resolved *r;
	struct func_table ft;
	struct pfunc *f;
	struct pedge *e;
	size_t ne, cap;
	struct hmap edges;	/* (callee, caller) -> 1 + index in e */
};

static struct pedge *edge_get(struct pcount *pc, uint32_t callee, uint32_t caller)
{
	uint32_t key[2] = { callee, caller };
	void **slot;
	int added;

	slot = hmap_put(&pc->edges, key, &added);
	if (!slot)
		return NULL;
	if (!added)
		return &pc->e[(uintptr_t)*slot - 1];
	if (array_grow(&pc->e, &pc->cap, pc->ne + 1, sizeof(*pc->e), 256)) {
		hmap_del(&pc->edges, key);
		return NULL;
	}
	pc->e[pc->ne] = (struct pedge){ .callee = callee, .caller = caller };
	*slot = (void *)(uintptr_t)++pc->ne;
	return &pc->e[pc->ne - 1];
}

static uint32_t func_at(const struct pcount *pc, const struct rsample *s, uint32_t j)
{
	return pc->ft.of_frame[s->frames[j]->id];
}

static int count_sample(struct pcount *pc, const struct rsample *s, size_t stamp)
{
	uint32_t j;

	if (!s->depth)
		return 0;
	pc->f[func_at(pc, s, s->depth - 1)].self += s->count;
	for (j = 0; j < s->depth; j++) {
		struct pfunc *f = &pc->f[func_at(pc, s, j)];
		struct pedge *e;

		f->calls += s->count;
		if (f->last != stamp) {
			f->last = stamp;
			f->prim += s->count;
		}
		if (!j)
			continue;
		e = edge_get(pc, func_at(pc, s, j), func_at(pc, s, j - 1));
		if (!e)
			return -ENOMEM;
		e->calls += s->count;
		if (e->last != stamp) {
			e->last = stamp;
			e->prim += s->count;
		}
		if (j == s->depth - 1)
			e->self += s->count;
	}
	return 0;
}

static int cmp_edge(const void *a, const void *b)
{
	const struct pedge *x = a, *y = b;

	if (x->callee != y->callee)
		return x->callee < y->callee ? -1 : 1;
	return x->caller < y->caller ? -1 : x->caller > y->caller;
}

static void pcount_free(struct pcount *pc)
{
	funcs_free(&pc->ft);
	free(pc->f);
	free(pc->e);
	hmap_free(&pc->edges);
}

static int pcount_build(struct pcount *pc, const struct resolved *r)
{
	size_t i;
	int err;

	memset(pc, 0, sizeof(*pc));
	pc->r = r;
	err = hmap_init(&pc->edges, 2 * sizeof(uint32_t));

	if (err || (err = funcs_build(r, &pc->ft)))
		return err;
	pc->f = calloc(pc->ft.n + 1, sizeof(*pc->f));
	if (!pc->f)
		return -ENOMEM;
	for (i = 0; i < r->nsamples; i++)
		if ((err = count_sample(pc, &r->samples[i], i + 1)))
			return err;
	if (pc->ne)	/* qsort(NULL, 0, ...) is undefined */
		qsort(pc->e, pc->ne, sizeof(*pc->e), cmp_edge);
	return 0;
}

/* ---- the dict ---- */

static void func_key(struct emit *e, const struct rframe *f)
{
	int marker = frame_is_marker(f);

	marshal_tuple(e, 3);
	marshal_str(e, marker ? "~" : f->file);
	marshal_int(e, marker || f->firstlineno < 0 ? 0 : (uint64_t)f->firstlineno);
	marshal_str(e, f->name);
}

/* The callers of function i: edges[*at..] while their callee is i. */
static void callers(struct emit *e, const struct pcount *pc, uint32_t i, size_t *at,
		    double secs)
{
	marshal_dict_begin(e);
	for (; *at < pc->ne && pc->e[*at].callee == i; (*at)++) {
		const struct pedge *ed = &pc->e[*at];

		func_key(e, pc->ft.funcs[ed->caller]);
		marshal_tuple(e, 4);
		marshal_int(e, ed->calls);
		marshal_int(e, ed->prim);
		marshal_float(e, (double)ed->self * secs);
		marshal_float(e, (double)ed->prim * secs);
	}
	marshal_dict_end(e);
}

static void stats_dict(struct emit *e, const struct pcount *pc)
{
	/* Seconds per sample; counts alone when the rate is unknown. */
	double secs = pc->r->rate > 0 ? 1.0 / pc->r->rate : 1.0;
	size_t at = 0;
	uint32_t i;

	marshal_dict_begin(e);
	for (i = 0; i < pc->ft.n; i++) {
		const struct pfunc *f = &pc->f[i];

		if (!f->calls)
			continue;
		func_key(e, pc->ft.funcs[i]);
		marshal_tuple(e, 5);
		marshal_int(e, f->prim);
		marshal_int(e, f->calls);
		marshal_float(e, (double)f->self * secs);
		marshal_float(e, (double)f->prim * secs);
		callers(e, pc, i, &at, secs);
	}
	marshal_dict_end(e);
}

int output_pstats(FILE *out, const struct resolved *r)
{
	struct pcount pc;
	struct emit e;
	int err = resolved_check(r);

	if (err)
		return err;
	err = pcount_build(&pc, r);
	if (err) {
		pcount_free(&pc);
		return err;
	}
	emit_init(&e, out);
	stats_dict(&e, &pc);
	pcount_free(&pc);
	return emit_done(&e);
}
