// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The hash map under every userspace table, against a plain array model. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "hmap.h"

#define N 20000

static void test_against_model(void **state)
{
	static uintptr_t model[N];
	struct hmap m;
	unsigned seed = 42;
	int i, added;

	(void)state;
	assert_int_equal(hmap_init(&m, sizeof(uint64_t)), 0);
	for (i = 0; i < 200000; i++) {
		uint64_t k = (uint64_t)(rand_r(&seed) % N);
		int op = rand_r(&seed) % 3;
		void **v;

		if (op < 2) {
			v = hmap_put(&m, &k, &added);
			assert_non_null(v);
			assert_int_equal(added, model[k] == 0);
			*v = (void *)(uintptr_t)(k + 1);
			model[k] = k + 1;
		} else {
			assert_int_equal((uintptr_t)hmap_del(&m, &k), model[k]);
			model[k] = 0;
		}
	}
	size_t live = 0;
	for (i = 0; i < N; i++) {
		uint64_t k = (uint64_t)i;
		void **v = hmap_get(&m, &k);

		live += model[i] != 0;
		if (model[i])
			assert_int_equal((uintptr_t)*v, model[i]);
		else
			assert_null(v);
	}
	assert_int_equal(m.len, live);
	size_t it = 0, seen = 0;
	while (hmap_next(&m, &it, NULL, NULL))
		seen++;
	assert_int_equal(seen, live);
	hmap_free(&m);
}

static void test_odd_key_size(void **state)
{
	struct hmap m;
	char k1[13] = "abcdefghijkl", k2[13] = "abcdefghijkm";

	(void)state;
	assert_int_equal(hmap_init(&m, 13), 0);
	*hmap_put(&m, k1, NULL) = (void *)1;
	*hmap_put(&m, k2, NULL) = (void *)2;
	assert_int_equal((uintptr_t)*hmap_get(&m, k1), 1);
	assert_int_equal((uintptr_t)*hmap_get(&m, k2), 2);
	hmap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_model),
		cmocka_unit_test(test_odd_key_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
