// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --native's merge (user/native.c) on this very process: the test defines a
 * function named like the interpreter's eval loop (so this executable is
 * "the interpreter") and one of its "call machinery"; a libc function
 * stands for an extension. Native addresses are return addresses inside
 * them; the Python frames are fake ones whose code addresses carry
 * TB_CODE_ENTRY where an eval invocation starts.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include <cmocka.h>
#include "native.h"

/* Bodies long enough that an address inside them is theirs. */
__attribute__((noinline)) int _PyEval_EvalFrameDefault(int x);
__attribute__((noinline)) int machinery(int x);

int _PyEval_EvalFrameDefault(int x)
{
	return x > 0 ? machinery(x - 1) + 1 : 0;
}

int machinery(int x)
{
	return x > 0 ? _PyEval_EvalFrameDefault(x - 1) * 3 : 1;
}

#define IN(fn) ((uint64_t)(uintptr_t)(fn) + 4)	/* past the first instruction */

/* Leaf first: "ext" (libc's qsort), eval, machinery, eval (main fills it). */
static uint64_t ips[4];

/* libc's own qsort: under ASan the name resolves to its interceptor, in
 * this executable. */
static void fill_ips(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *q = libc ? dlsym(libc, "qsort") : NULL;

	ips[0] = IN(q ? q : (void *)qsort);
	ips[1] = IN(_PyEval_EvalFrameDefault);
	ips[2] = IN(machinery);
	ips[3] = IN(_PyEval_EvalFrameDefault);
}

static struct tb_frame py(uint64_t code, int entry)
{
	return (struct tb_frame){ .code = code | (entry ? TB_CODE_ENTRY : 0), .instr = 1 };
}

/* Two invocations: [A] and [B, C]. Merged root first: C, B, A, qsort. */
static void test_merged(void **state)
{
	struct tb_frame f[] = { py(0x1000, 1), py(0x2000, 0), py(0x3000, 1) };
	struct native nt;
	struct native_plan *p;

	(void)state;
	assert_int_equal(native_init(&nt), 0);
	p = native_merge(&nt, (uint32_t)getpid(), ips, 4, f, 3, 0);
	assert_non_null(p);
	assert_int_equal(p->matched, 1);
	assert_int_equal(p->n, 4);
	assert_int_equal(p->it[0].py, 2);
	assert_int_equal(p->it[1].py, 1);
	assert_int_equal(p->it[2].py, 0);
	assert_int_equal(p->it[3].py, -1);
	assert_non_null(strstr(p->it[3].name, "qsort"));
	assert_non_null(strstr(p->it[3].name, "[libc"));
	free(p);
	native_free(&nt);
}

/*
 * A leaf in this process's vDSO, which has no file: named from the vDSO's
 * own symbols (its clock_gettime, wherever the kernel placed it).
 */
static void test_vdso_leaf(void **state)
{
	struct tb_frame f[] = { py(0x1000, 1), py(0x2000, 0), py(0x3000, 1) };
	void *vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *fn = vdso ? dlsym(vdso, "__vdso_clock_gettime") : NULL;
	uint64_t own[4];
	struct native nt;
	struct native_plan *p;

	(void)state;
	if (!fn || !getauxval(AT_SYSINFO_EHDR))
		skip();
	memcpy(own, ips, sizeof(own));
	own[0] = IN(fn);
	assert_int_equal(native_init(&nt), 0);
	p = native_merge(&nt, (uint32_t)getpid(), own, 4, f, 3, 0);
	assert_non_null(p);
	assert_int_equal(p->matched, 1);
	assert_string_equal(p->it[3].name, "__vdso_clock_gettime [vdso]");
	free(p);
	native_free(&nt);
	if (vdso)
		dlclose(vdso);
}

/* Three invocations, two eval frames: never spliced; the Python frames,
 * the marker, the leaf native frame. */
static void test_unmatched(void **state)
{
	struct tb_frame f[] = { py(0x1000, 1), py(0x2000, 1), py(0x3000, 1) };
	struct tb_frame partial[] = { py(0x1000, 1), py(0x2000, 0) };
	struct native nt;
	struct native_plan *p;

	(void)state;
	assert_int_equal(native_init(&nt), 0);
	p = native_merge(&nt, (uint32_t)getpid(), ips, 4, f, 3, 0);
	assert_non_null(p);
	assert_int_equal(p->matched, 0);
	assert_int_equal(p->n, 5);
	assert_int_equal(p->it[0].py, 2);
	assert_int_equal(p->it[2].py, 0);
	assert_string_equal(p->it[3].name, NATIVE_UNMATCHED);
	assert_non_null(strstr(p->it[4].name, "qsort"));
	free(p);
	/* A stack that does not end on an entry frame (partial) stays unmatched. */
	p = native_merge(&nt, (uint32_t)getpid(), ips, 4, partial, 2, 0);
	assert_non_null(p);
	assert_int_equal(p->matched, 0);
	free(p);
	native_free(&nt);
	assert_int_equal(_PyEval_EvalFrameDefault(3) >= 0, 1);
}

/*
 * A frameless leaf's caller, an eval frame, skipped by the frame-pointer
 * chain (TB_LEAF_EVAL_CALLER): the stack pairs up with it taken as the
 * leaf's caller, only when told so, and only if it does not without it.
 */
static void test_eval_caller(void **state)
{
	struct tb_frame f[] = { py(0x1000, 1), py(0x2000, 0), py(0x3000, 1) };
	struct tb_frame three[] = { py(0x1000, 1), py(0x2000, 1), py(0x3000, 1) };
	struct tb_frame one[] = { py(0x1000, 0), py(0x2000, 0), py(0x3000, 1) };
	uint64_t skipped[3] = { ips[0], ips[2], ips[3] };	/* qsort, machinery, eval */
	struct native nt;
	struct native_plan *p;

	(void)state;
	assert_int_equal(native_init(&nt), 0);
	p = native_merge(&nt, (uint32_t)getpid(), skipped, 3, f, 3, 0);
	assert_non_null(p);
	assert_int_equal(p->matched, 0);
	free(p);
	p = native_merge(&nt, (uint32_t)getpid(), skipped, 3, f, 3, 1);
	assert_non_null(p);
	assert_int_equal(p->matched, 1);
	assert_int_equal(p->n, 4);	/* C, B, A, qsort: as with the eval there */
	assert_int_equal(p->it[0].py, 2);
	assert_int_equal(p->it[1].py, 1);
	assert_int_equal(p->it[2].py, 0);
	assert_non_null(strstr(p->it[3].name, "qsort"));
	free(p);
	/* Two evals short: still unmatched. */
	p = native_merge(&nt, (uint32_t)getpid(), skipped, 3, three, 3, 1);
	assert_non_null(p);
	assert_int_equal(p->matched, 0);
	free(p);
	/* Pairs up as it is (one invocation, one eval): the hint is not used. */
	p = native_merge(&nt, (uint32_t)getpid(), skipped, 3, one, 3, 1);
	assert_non_null(p);
	assert_int_equal(p->matched, 1);
	assert_int_equal(p->n, 5);	/* C, B, A, machinery (above it), qsort */
	assert_non_null(strstr(p->it[3].name, "machinery"));
	assert_non_null(strstr(p->it[4].name, "qsort"));
	free(p);
	native_free(&nt);
}

/*
 * The memory bound: past it the file used least recently loses its symbols
 * and names (its frames print as [file+0xoff]), the merge still pairs eval
 * frames, and plans made before keep their names.
 */
static void test_bound(void **state)
{
	struct tb_frame f[] = { py(0x1000, 1), py(0x2000, 0), py(0x3000, 1) };
	uint64_t again[4];
	struct native nt;
	struct native_plan *p1, *p2;

	(void)state;
	assert_int_equal(native_init(&nt), 0);
	assert_int_equal(nt.limit, NATIVE_MEM_MAX);
	p1 = native_merge(&nt, (uint32_t)getpid(), ips, 4, f, 3, 0);
	assert_non_null(p1);
	assert_true(nt.bytes > 0);
	assert_int_equal(nt.dropped, 0);
	/* Nothing more fits: a new name in libc (used last) drops the file
	 * used least recently (one of this process's libraries that no
	 * frame named), and only that one. */
	nt.limit = nt.bytes;
	memcpy(again, ips, sizeof(again));
	again[0] += 1;
	p2 = native_merge(&nt, (uint32_t)getpid(), again, 4, f, 3, 0);
	assert_non_null(p2);
	assert_int_equal(nt.dropped, 1);
	assert_true(nt.bytes <= nt.limit);
	assert_true(nt.peak > nt.limit);
	assert_int_equal(p2->matched, 1);
	assert_int_equal(p2->n, 4);
	assert_non_null(strstr(p2->it[3].name, "qsort"));
	assert_non_null(strstr(p1->it[3].name, "qsort"));
	free(p2);
	free(p1);
	native_free(&nt);
}

/* A bound nothing fits in: every file dropped as soon as read; eval
 * frames still pair up. */
static void test_bound_zero(void **state)
{
	struct tb_frame f[] = { py(0x1000, 1), py(0x2000, 0), py(0x3000, 1) };
	struct native nt;
	struct native_plan *p;

	(void)state;
	assert_int_equal(native_init(&nt), 0);
	nt.limit = 0;
	p = native_merge(&nt, (uint32_t)getpid(), ips, 4, f, 3, 0);
	assert_non_null(p);
	assert_int_equal(p->matched, 1);
	assert_int_equal(nt.bytes, 0);
	assert_true(nt.dropped >= 2);	/* every file mapped: libc, this one... */
	assert_null(strstr(p->it[3].name, "qsort"));
	assert_non_null(strstr(p->it[3].name, "[libc"));
	assert_non_null(strstr(p->it[3].name, "+0x"));
	free(p);
	native_free(&nt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merged),
		cmocka_unit_test(test_vdso_leaf),
		cmocka_unit_test(test_unmatched),
		cmocka_unit_test(test_eval_caller),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_bound_zero),
	};

	fill_ips();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
