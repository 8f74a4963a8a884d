// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The resolved-profile model on its own (it includes no BPF ABI): interning,
 * rows merged by what the output can tell apart, functions and their
 * self/total counts (recursion counted once), copies; a timeline's waiting
 * task lanes, pooled past 31 a thread; and array_grow().
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "output/model.h"
#include "util.h"

/* A sample of the named frames, root first, all in file m.py. */
static struct rsample *add(struct resolved *r, uint32_t tid, uint64_t count, int n, ...)
{
	struct rsample *s = resolved_slot(r);
	va_list ap;
	int i;

	assert_non_null(s);
	s->frames = calloc(n + 1, sizeof(*s->frames));
	assert_non_null(s->frames);
	va_start(ap, n);
	for (i = 0; i < n; i++) {
		const char *name = va_arg(ap, const char *);
		int line = va_arg(ap, int);

		/* one function per name: its first line is its name's length */
		s->frames[i] = resolved_intern(r, name, "m.py", line, (int)strlen(name));
		assert_non_null(s->frames[i]);
	}
	va_end(ap);
	s->depth = n;
	s->tid = tid;
	s->count = count;
	r->total += count;
	r->nsamples++;
	return s;
}

static void test_intern(void **state)
{
	struct resolved r = { 0 };
	struct rframe *a, *b;

	(void)state;
	assert_int_equal(resolved_init(&r), 0);
	a = resolved_intern(&r, "f", "m.py", 3, 1);
	b = resolved_intern(&r, "f", "m.py", 3, 1);
	assert_ptr_equal(a, b);
	assert_ptr_not_equal(resolved_intern(&r, "f", "m.py", 4, 1), a);
	assert_ptr_not_equal(resolved_intern(&r, "f", "n.py", 3, 1), a);
	assert_int_equal(r.nframes, 3);
	assert_ptr_equal(r.frames[a->id], a);
	assert_int_equal(resolved_check(&r), 0);
	resolved_free(&r);
}

/* Self: the leaf's function. Total: once per sample, however deep it recurses. */
static void test_function_totals(void **state)
{
	struct resolved r = { 0 };
	struct func_table ft;
	struct func_count *fc;
	size_t i;

	(void)state;
	assert_int_equal(resolved_init(&r), 0);
	add(&r, 1, 5, 3, "main", 1, "fib", 10, "fib", 11);	/* two lines of fib */
	add(&r, 1, 2, 2, "main", 2, "io", 20);
	add(&r, 1, 1, 0);					/* no frames: counts nowhere */
	assert_int_equal(funcs_build(&r, &ft), 0);
	assert_int_equal(ft.n, 3);
	fc = calloc(ft.n, sizeof(*fc));
	assert_non_null(fc);
	assert_int_equal(resolved_function_totals(&r, &ft, fc), 0);
	for (i = 0; i < ft.n; i++) {
		const char *name = ft.funcs[i]->name;

		if (!strcmp(name, "main")) {
			assert_int_equal(fc[i].self, 0);
			assert_int_equal(fc[i].total, 7);
		} else if (!strcmp(name, "fib")) {
			assert_int_equal(fc[i].self, 5);
			assert_int_equal(fc[i].total, 5);	/* not 10 */
		} else {
			assert_string_equal(name, "io");
			assert_int_equal(fc[i].self, 2);
			assert_int_equal(fc[i].total, 2);
		}
	}
	free(fc);
	funcs_free(&ft);
	resolved_free(&r);
}

/* Rows merge unless the output tells threads (or processes) apart. */
static void test_merge_rows(void **state)
{
	struct resolved r = { 0 };

	(void)state;
	assert_int_equal(resolved_init(&r), 0);
	add(&r, 1, 3, 2, "main", 1, "f", 2);
	resolved_merge_last(&r, 0, 0);
	add(&r, 2, 4, 2, "main", 1, "f", 2);
	resolved_merge_last(&r, 0, 0);
	assert_int_equal(r.nsamples, 1);
	assert_int_equal(r.samples[0].count, 7);
	add(&r, 2, 1, 2, "main", 1, "f", 2);
	resolved_merge_last(&r, 0, 1);		/* by thread: tid 2 is a new row */
	assert_int_equal(r.nsamples, 2);
	add(&r, 3, 1, 2, "main", 1, "f", 2)->flags = RS_GC;
	resolved_merge_last(&r, 0, 0);		/* other flags: another row */
	assert_int_equal(r.nsamples, 3);
	resolved_free(&r);
}

static void test_copy(void **state)
{
	struct resolved r = { 0 }, c = { 0 };

	(void)state;
	assert_int_equal(resolved_init(&r), 0);
	add(&r, 1, 3, 2, "main", 1, "f", 2)->tname = strdup("worker");
	assert_int_equal(resolved_copy(&r, &c), 0);
	assert_int_equal(c.nsamples, 1);
	assert_int_equal(c.total, 3);
	assert_string_equal(c.samples[0].tname, "worker");
	assert_ptr_not_equal(c.samples[0].frames[1], r.samples[0].frames[1]);
	assert_string_equal(c.samples[0].frames[1]->name, "f");
	assert_int_equal(resolved_check(&c), 0);
	/* a frame that is not the profile's own is refused */
	c.samples[0].frames[0] = r.frames[0];
	assert_int_equal(resolved_check(&c), -EINVAL);
	c.samples[0].frames[0] = c.frames[0];
	resolved_free(&c);
	resolved_free(&r);
}

static void test_array_grow(void **state)
{
	int *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(array_grow(&v, &cap, 1, sizeof(*v), 4), 0);
	assert_int_equal(cap, 4);
	v[3] = 7;
	assert_int_equal(array_grow(&v, &cap, 4, sizeof(*v), 4), 0);
	assert_int_equal(cap, 4);			/* room enough: unchanged */
	assert_int_equal(array_grow(&v, &cap, 9, sizeof(*v), 4), 0);
	assert_int_equal(cap, 16);			/* doubled until it fits */
	assert_int_equal(v[3], 7);
	assert_int_equal(array_grow(&v, &cap, SIZE_MAX / 2, sizeof(*v), 4), -ENOMEM);
	assert_int_equal(cap, 16);			/* left as it was */
	free(v);
	assert_string_equal(base_name("/usr/bin/python3"), "python3");
	assert_string_equal(base_name("python3"), "python3");
	assert_string_equal(base_name("/srv/app/"), "/srv/app/");
}

#define TASKS	40

/* Thread 7 with TASKS waiting tasks' lanes (task k: weight 100 - k, from
 * 10 k to 10 k + 25: three at a time), then thread 8. */
static void lanes_fixture(struct resolved *r)
{
	size_t k, n = 0;

	assert_int_equal(resolved_init(r), 0);
	add(r, 7, 1, 1, "f", 1);
	r->timeline = 1;
	r->threads = calloc(TASKS + 2, sizeof(*r->threads));
	r->ticks = calloc(TASKS, sizeof(*r->ticks));
	assert_non_null(r->threads);
	assert_non_null(r->ticks);
	r->threads[0] = (struct rthread){ .tid = 7, .name = strdup("Main") };
	for (k = 1; k <= TASKS; k++) {
		r->threads[k] = (struct rthread){ .tid = 7 };
		assert_true(asprintf(&r->threads[k].name, "Main: t%zu (waiting)", k) > 0);
		r->ticks[n++] = (struct rtick){
			.thread = (uint32_t)k, .tid = 7, .t_ns = 10 * k, .end_ns = 10 * k + 25,
			.weight = 100 - k,
		};
	}
	r->threads[TASKS + 1] = (struct rthread){ .tid = 8, .name = strdup("Other") };
	r->nthreads = TASKS + 2;
	r->nticks = n;
	assert_int_equal(resolved_number_lanes(r), 0);
	assert_int_equal(r->threads[TASKS].lane, TASKS);
	assert_int_equal(r->threads[TASKS + 1].lane, 0);
}

static void test_pool_lanes(void **state)
{
	struct resolved r;
	uint64_t busy[TASKS + 2] = { 0 }, sum = 0;
	size_t i, own = 0, pooled = 0;

	(void)state;
	lanes_fixture(&r);
	assert_int_equal(resolved_pool_lanes(&r), 0);
	assert_int_equal(resolved_check(&r), 0);
	for (i = 0; i < r.nthreads; i++) {
		const struct rthread *t = &r.threads[i];

		assert_non_null(t->name);
		own += strstr(t->name, "(waiting)") != NULL;
		pooled += strstr(t->name, "Main: waiting tasks (") == t->name;
		if (t->tid == 8 || !strcmp(t->name, "Main"))
			assert_int_equal(t->lane, 0);
		else
			assert_int_not_equal(t->lane, 0);
	}
	/* the 31 that waited longest keep their lanes; three at a time share */
	assert_int_equal(own, 31);
	assert_int_equal(pooled, 3);
	assert_int_equal(r.nthreads, 2 + own + pooled);
	assert_string_equal(r.threads[31].name, "Main: t31 (waiting)");
	for (i = 0; i < r.nticks; i++) {
		const struct rtick *k = &r.ticks[i];

		assert_true(k->t_ns >= busy[k->thread]);	/* no overlap on a lane */
		busy[k->thread] = k->end_ns;
		sum += k->weight;
		if (k->t_ns >= 320)	/* tasks 32 on: pooled lanes */
			assert_non_null(strstr(r.threads[k->thread].name, "waiting tasks"));
	}
	assert_int_equal(r.nticks, TASKS);
	assert_int_equal(sum, 100 * TASKS - TASKS * (TASKS + 1) / 2);
	resolved_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intern),
		cmocka_unit_test(test_function_totals),
		cmocka_unit_test(test_merge_rows),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_array_grow),
		cmocka_unit_test(test_pool_lanes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
