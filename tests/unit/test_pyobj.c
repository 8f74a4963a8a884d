// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests for user/pyobj.c: objects laid out as 3.12 lays them out, built
 * in this process's own memory and read back with process_vm_readv on our
 * own pid (what the profiler does to a target): str, int, float, None,
 * containers, a dict with str keys, an instance with split (values) and
 * materialized dicts, and garbage.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "pyobj.h"

static struct target t;

/* A type object whose tp_name is name (tp_flags, ht_cached_keys settable). */
struct fake_type {
	uint64_t w[128];
};

static struct fake_type ty_str, ty_int, ty_float, ty_none, ty_list, ty_thread, ty_dict;

static void type_init(struct fake_type *ty, const char *name)
{
	memset(ty, 0, sizeof(*ty));
	ty->w[t.layout.obj.tp_name / 8] = (uint64_t)(uintptr_t)name;
}

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* A compact ASCII str (3.12: data after a 40-byte PyASCIIObject). */
static void make_str(uint64_t *o, const char *s)
{
	uint32_t state = 1u << 2 | 1u << 5 | 1u << 6;	/* kind 1, compact, ascii */

	memset(o, 0, 40 + strlen(s) + 1);
	o[1] = addr(&ty_str);
	o[2] = strlen(s);
	memcpy((uint8_t *)o + 32, &state, 4);
	memcpy((uint8_t *)o + 40, s, strlen(s));
}

/* 3.12 int: lv_tag = ndigits << 3 | sign (0 +, 1 zero, 2 -), 30-bit digits. */
static void make_int(uint64_t *o, int neg, const uint32_t *dig, int n)
{
	o[1] = addr(&ty_int);
	o[2] = (uint64_t)n << 3 | (n ? (neg ? 2 : 0) : 1);
	memcpy(o + 3, dig, n * 4);
}

static uint64_t s_thr[16], s_act[16], s_x[16], i_one[4], i_big[8], i_neg[4], f_obj[3], none[2];
static uint64_t keys_obj[32], dict_obj[6], lst[4], inst[8], values[4];

static int setup(void **state)
{
	static const uint32_t one[] = { 1 }, big[] = { 5, 7 }, neg[] = { 42 };
	double d = 1.5;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.pid = getpid();
	assert_int_equal(layout_from_version(0x030c01f0, 0, &t.layout), LAYOUT_OK);
	type_init(&ty_str, "str");
	type_init(&ty_int, "int");
	type_init(&ty_float, "float");
	type_init(&ty_none, "NoneType");
	type_init(&ty_list, "list");
	type_init(&ty_thread, "Thread");
	type_init(&ty_dict, "dict");
	make_str(s_thr, "threading");
	make_str(s_act, "_active");
	make_str(s_x, "x'y");
	make_int(i_one, 0, one, 1);
	make_int(i_big, 0, big, 2);
	make_int(i_neg, 1, neg, 1);
	f_obj[1] = addr(&ty_float);
	memcpy(&f_obj[2], &d, 8);
	none[1] = addr(&ty_none);
	lst[1] = addr(&ty_list);
	lst[2] = 3;
	/* keys: 8 one-byte indices (log2_index_bytes 3), unicode entries */
	memset(keys_obj, 0, sizeof(keys_obj));
	((uint8_t *)keys_obj)[9] = 3;
	((uint8_t *)keys_obj)[10] = 1;
	keys_obj[3] = 2;			/* dk_nentries */
	keys_obj[5] = addr(s_act);		/* entry 0 at 32 + 8 */
	keys_obj[6] = addr(i_one);
	keys_obj[7] = addr(s_thr);		/* entry 1 */
	keys_obj[8] = addr(lst);
	dict_obj[1] = addr(&ty_dict);
	dict_obj[2] = 2;			/* ma_used */
	dict_obj[4] = addr(keys_obj);		/* ma_keys */
	dict_obj[5] = 0;			/* ma_values: combined table */
	return 0;
}

static void test_str_int_float(void **state)
{
	char buf[64];
	int64_t v;

	(void)state;
	assert_int_equal(pyobj_str(&t, addr(s_thr), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "threading");
	assert_int_equal(pyobj_long(&t, addr(i_one), &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(pyobj_long(&t, addr(i_big), &v), 0);
	assert_int_equal(v, 5 + (7LL << 30));
	assert_int_equal(pyobj_long(&t, addr(i_neg), &v), 0);
	assert_int_equal(v, -42);
	pyobj_repr(&t, addr(f_obj), buf, sizeof(buf));
	assert_string_equal(buf, "1.5");
	pyobj_repr(&t, addr(none), buf, sizeof(buf));
	assert_string_equal(buf, "None");
	pyobj_repr(&t, addr(s_x), buf, sizeof(buf));
	assert_string_equal(buf, "\"x'y\"");
	pyobj_repr(&t, addr(lst), buf, sizeof(buf));
	assert_string_equal(buf, "<list, len 3>");
	pyobj_repr(&t, addr(i_neg), buf, sizeof(buf));
	assert_string_equal(buf, "-42");
	pyobj_repr(&t, addr(dict_obj), buf, sizeof(buf));
	assert_string_equal(buf, "<dict, len 2>");
}

static void test_dict(void **state)
{
	uint64_t v, k[4], vals[4];

	(void)state;
	assert_int_equal(pyobj_dict_get(&t, addr(dict_obj), "threading", &v), 0);
	assert_int_equal(v, addr(lst));
	assert_int_equal(pyobj_dict_get(&t, addr(dict_obj), "_active", &v), 0);
	assert_int_equal(v, addr(i_one));
	assert_int_equal(pyobj_dict_get(&t, addr(dict_obj), "_activ", &v), -ENOENT);
	assert_int_equal(pyobj_dict_items(&t, addr(dict_obj), k, vals, NULL, 4), 2);
	assert_int_equal(k[1], addr(s_thr));
	/* a deleted entry (key NULL) is skipped */
	keys_obj[5] = 0;
	assert_int_equal(pyobj_dict_items(&t, addr(dict_obj), k, vals, NULL, 4), 1);
	keys_obj[5] = addr(s_act);
	/* garbage: an absurd entry count or index size is refused */
	((uint8_t *)keys_obj)[9] = 200;
	assert_int_equal(pyobj_dict_get(&t, addr(dict_obj), "threading", &v), -EINVAL);
	((uint8_t *)keys_obj)[9] = 3;
	assert_int_equal(pyobj_dict_get(&t, 8, "threading", &v), -EINVAL);	/* unmapped */
}

/* An instance of a managed-dict class: 3.12 keeps a tagged values pointer
 * (or a dict) at obj - 24; the keys are the type's cached keys. */
static void test_instance_attrs(void **state)
{
	static const char *const names[] = { "threading", "_active", "nope" };
	const struct pyobj_layout *o = &t.layout.obj;
	uint64_t *obj = inst + 4, v[3];

	(void)state;
	ty_thread.w[o->tp_flags / 8] = o->tpflag_managed;
	ty_thread.w[o->ht_cached_keys / 8] = addr(keys_obj);
	values[0] = addr(i_neg);	/* value of key 0 (_active) */
	values[1] = addr(f_obj);	/* value of key 1 (threading) */
	obj[1] = addr(&ty_thread);
	obj[-3] = addr(values) - 1;	/* tagged: bit 0 set */
	assert_int_equal(pyobj_attrs(&t, addr(obj), names, v, 3), 2);
	assert_int_equal(v[0], addr(f_obj));
	assert_int_equal(v[1], addr(i_neg));
	assert_int_equal(v[2], 0);
	/* materialized __dict__ */
	obj[-3] = addr(dict_obj);
	assert_int_equal(pyobj_attrs(&t, addr(obj), names, v, 3), 2);
	assert_int_equal(v[0], addr(lst));
	/* not a managed-dict type */
	ty_thread.w[o->tp_flags / 8] = 0;
	assert_int_equal(pyobj_attrs(&t, addr(obj), names, v, 3), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_str_int_float),
		cmocka_unit_test(test_dict),
		cmocka_unit_test(test_instance_attrs),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
