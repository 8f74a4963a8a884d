// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The resolved-profile model on its own (it includes no BPF ABI): interning,
 * rows merged by what the output can tell apart, functions and their
 * self/total counts (recursion counted once), copies; and array_grow().
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intern),
		cmocka_unit_test(test_function_totals),
		cmocka_unit_test(test_merge_rows),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_array_grow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
