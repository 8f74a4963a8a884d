// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The per-version layout: _Py_DebugOffsets parsing and built-in tables. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "layout.h"
#include "fixtures/debug_offsets_313.h"
#include "fixtures/debug_offsets_314.h"
#include "fixtures/debug_offsets_315.h"

static uint8_t buf[LAYOUT_DEBUG_OFFSETS_MAX];

static void load_313(void)
{
	memset(buf, 0, sizeof(buf));
	memcpy(buf, debug_offsets_313, sizeof(debug_offsets_313));
}

static void put64(size_t pos, uint64_t v)
{
	memcpy(buf + pos, &v, 8);
}

static void test_real_313(void **state)
{
	struct py_layout l;

	(void)state;
	load_313();
	assert_int_equal(layout_from_debug_offsets(buf, 584, 0, &l), LAYOUT_OK);
	assert_int_equal(l.version, 0x030d00f0);
	/* Values checked with gdb ptype /o on the same binary. */
	assert_int_equal(l.walk.off.rt_interp_head, 632);
	assert_int_equal(l.walk.off.interp_threads_head, 7344);
	assert_int_equal(l.walk.off.interp_next, 7264);
	assert_int_equal(l.walk.off.ts_next, 8);
	assert_int_equal(l.walk.off.ts_frame, 72);
	assert_int_equal(l.walk.off.ts_native_tid, 160);
	assert_int_equal(l.walk.off.ts_status, 32);		/* _status, after eval_breaker */
	assert_int_equal(l.walk.off.cframe_frame, TB_NO_OFFSET);
	assert_int_equal(l.walk.off.fr_previous, 8);
	assert_int_equal(l.walk.off.fr_code, 0);
	assert_int_equal(l.walk.off.fr_instr, 56);
	assert_int_equal(l.walk.off.fr_owner, 70);
	assert_int_equal(l.walk.off.co_adaptive, 200);
	assert_int_equal(l.walk.off.co_type, 8);
	assert_int_equal(l.walk.off.co_fp, 92);
	assert_int_equal(l.walk.off.owner_skip, 3);
	assert_int_equal(l.walk.off.owner_max, 3);	/* CSTACK is the last owner */
	assert_int_equal(l.co_qualname, 128);
	assert_int_equal(l.co_filename, 112);
	assert_int_equal(l.co_linetable, 136);
	assert_int_equal(l.co_firstlineno, 68);
	assert_int_equal(l.str.ascii_size, 40);
	assert_int_equal(l.str.compact_size, 56);
	assert_int_equal(l.str.state, 32);
	assert_int_equal(l.str.bytes_data, 32);
	/* One read each covers every field the walker takes. */
	assert_int_equal(l.walk.off.ts_read, 168);
	assert_int_equal(l.walk.off.fr_read, 71);
	assert_int_equal(l.walk.off.co_read, 96);
	/* A caller's code object: co_version alone, one cache line. */
	assert_int_equal(l.walk.off.co_fp_lo, 92);
	assert_int_equal(l.walk.off.co_fp_read, 4);
	assert_int_equal(l.walk.off.ts_interp, 16);
	/* 3.13.0's interpreter state: func_state.next_version counts births. */
	assert_int_equal(l.interp_code_gen, 17000);
	assert_int_equal(l.code_gen_size, 4);
}

/* Object fields (thread names, dump --locals): the ones 3.13 exports come
 * from the live _Py_DebugOffsets and match offsetof() on 3.13.0's headers. */
static void test_objects_313(void **state)
{
	struct py_layout l;

	(void)state;
	load_313();
	assert_int_equal(layout_from_debug_offsets(buf, 584, 0, &l), LAYOUT_OK);
	assert_int_equal(l.obj.managed, PYOBJ_MANAGED_313);
	assert_int_equal(l.obj.interp_modules, 7656);
	assert_int_equal(l.obj.ts_thread_id, 152);
	assert_int_equal(l.obj.fr_localsplus, 72);
	assert_int_equal(l.obj.co_argcount, 52);
	assert_int_equal(l.obj.co_localsplusnames, 96);
	assert_int_equal(l.obj.co_localspluskinds, 104);
	assert_int_equal(l.obj.tp_name, 24);
	assert_int_equal(l.obj.tp_flags, 168);
	assert_int_equal(l.obj.tuple_items, 24);
	assert_int_equal(l.obj.list_items, 24);
	assert_int_equal(l.obj.var_size, 16);
	assert_int_equal(l.obj.dict_keys, 32);
	assert_int_equal(l.obj.dict_values, 40);
	assert_int_equal(l.obj.float_val, 16);
	assert_int_equal(l.obj.long_size, 16);
	assert_int_equal(l.obj.long_digits, 24);
	assert_int_equal(l.obj.values_off, 8);	/* from the table: not exported */
	assert_int_equal(l.obj.ref_tags, 0);	/* localsplus: plain pointers */

	/* An exported object offset outside its struct costs the objects only. */
	put64(88, 1 << 20);	/* interpreter_state.imports_modules */
	assert_int_equal(layout_from_debug_offsets(buf, 584, 0, &l), LAYOUT_OK);
	assert_int_equal(l.obj.managed, PYOBJ_NONE);
}

/* Object fields both 3.14 and 3.15 (Debian's 3.14.10, 3.15.2) share; each
 * checked by the interpreter reading its own objects with ctypes. */
static void assert_objects_314_315(const struct pyobj_layout *o)
{
	assert_int_equal(o->managed, PYOBJ_MANAGED_313);	/* inline values */
	assert_int_equal(o->fr_localsplus, 80);
	assert_int_equal(o->co_argcount, 52);
	assert_int_equal(o->co_kwonlyargcount, 60);
	assert_int_equal(o->co_flags, 48);
	assert_int_equal(o->co_localsplusnames, 96);
	assert_int_equal(o->co_localspluskinds, 104);
	assert_int_equal(o->tp_name, 24);
	assert_int_equal(o->tp_flags, 168);
	assert_int_equal(o->tuple_items, 32);	/* 3.14 tuples cache their hash */
	assert_int_equal(o->list_items, 24);
	assert_int_equal(o->var_size, 16);
	assert_int_equal(o->dict_keys, 32);
	assert_int_equal(o->dict_values, 40);
	assert_int_equal(o->float_val, 16);
	assert_int_equal(o->long_size, 16);
	assert_int_equal(o->long_digits, 24);
	assert_int_equal(o->long_tagged, 1);
	assert_int_equal(o->values_off, 8);
	assert_int_equal(o->values_valid, 3);
	assert_int_equal(o->ref_tags, 3);	/* localsplus holds _PyStackRef */
}

/* Debian's real 3.14.10 and 3.15.2; the bad_pos field is exported with a
 * value outside its struct, which must cost the objects only. */
static const struct {
	const unsigned char *dbg;
	size_t len;
	uint32_t version;
	uint16_t modules, thread_id, cached_keys, native_tid;
	size_t bad_pos;
} real_314_315[] = {
	{ debug_offsets_314, sizeof(debug_offsets_314), 0x030e0af0, 7688, 152, 880, 160,
	  456 },	/* tuple_object.ob_item */
	/* PyTypeObject grew a word: ht_cached_keys moved */
	{ debug_offsets_315, sizeof(debug_offsets_315), 0x030f02f0, 7592, 176, 888, 184,
	  96 },		/* interpreter_state.imports_modules */
};

static void test_objects_314_315(void **state)
{
	struct py_layout l;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(real_314_315) / sizeof(real_314_315[0]); i++) {
		memset(buf, 0, sizeof(buf));
		memcpy(buf, real_314_315[i].dbg, real_314_315[i].len);
		assert_int_equal(layout_from_debug_offsets(buf, real_314_315[i].len, 0, &l),
				 LAYOUT_OK);
		assert_int_equal(l.version, real_314_315[i].version);
		assert_objects_314_315(&l.obj);
		assert_int_equal(l.obj.interp_modules, real_314_315[i].modules);
		assert_int_equal(l.obj.ts_thread_id, real_314_315[i].thread_id);
		assert_int_equal(l.obj.ht_cached_keys, real_314_315[i].cached_keys);
		assert_int_equal(l.walk.off.ts_native_tid, real_314_315[i].native_tid);

		put64(real_314_315[i].bad_pos, 1 << 20);
		assert_int_equal(layout_from_debug_offsets(buf, real_314_315[i].len, 0, &l),
				 LAYOUT_OK);
		assert_int_equal(l.obj.managed, PYOBJ_NONE);
	}
}

static void test_objects_builtin(void **state)
{
	struct py_layout l;

	(void)state;
	assert_int_equal(layout_from_version(0x030b07f0, 0, &l), LAYOUT_OK);
	assert_int_equal(l.obj.managed, PYOBJ_MANAGED_311);
	assert_int_equal(l.obj.interp_modules, 888);
	assert_int_equal(l.obj.long_tagged, 0);
	assert_int_equal(layout_from_version(0x030c01f0, 0, &l), LAYOUT_OK);
	assert_int_equal(l.obj.managed, PYOBJ_MANAGED_312);
	assert_int_equal(l.obj.interp_modules, 944);
	assert_int_equal(l.obj.long_tagged, 1);
}

static void test_bad_cookie(void **state)
{
	struct py_layout l;

	(void)state;
	load_313();
	buf[0] = 'X';
	assert_int_equal(layout_from_debug_offsets(buf, 584, 0, &l), LAYOUT_BAD_COOKIE);
	assert_int_equal(layout_debug_version(buf, 584), 0);
}

static void test_truncated(void **state)
{
	struct py_layout l;

	(void)state;
	load_313();
	assert_int_equal(layout_from_debug_offsets(buf, 583, 0, &l), LAYOUT_TRUNCATED);
	assert_int_equal(layout_from_debug_offsets(buf, 8, 0, &l), LAYOUT_TRUNCATED);
	assert_int_equal(layout_from_debug_offsets(buf, 0, 0, &l), LAYOUT_TRUNCATED);
}

static void test_unknown_version(void **state)
{
	struct py_layout l;
	char name[32];

	(void)state;
	load_313();
	put64(8, 0x031000f0);		/* 3.16.0 final: no layout known */
	assert_int_equal(layout_from_debug_offsets(buf, 584, 0, &l), LAYOUT_UNSUPPORTED);
	py_version_str(l.version, name, sizeof(name));
	assert_string_equal(name, "3.16.0");
}

static void test_prerelease(void **state)
{
	struct py_layout l;
	char name[32];

	(void)state;
	load_313();
	put64(8, 0x030d00b2);		/* 3.13.0b2 */
	assert_int_equal(layout_from_debug_offsets(buf, 584, 0, &l), LAYOUT_PRERELEASE);
	py_version_str(l.version, name, sizeof(name));
	assert_string_equal(name, "3.13.0b2");
	/* --force-version takes the layout anyway. */
	assert_int_equal(layout_from_debug_offsets(buf, 584, LAYOUT_FORCE, &l), LAYOUT_OK);
	put64(8, 0x030d00c1);
	layout_from_debug_offsets(buf, 584, 0, &l);
	py_version_str(l.version, name, sizeof(name));
	assert_string_equal(name, "3.13.0rc1");
}

static void test_free_threaded(void **state)
{
	struct py_layout l;

	(void)state;
	load_313();
	put64(16, 1);
	assert_int_equal(layout_from_debug_offsets(buf, 584, 0, &l), LAYOUT_FREE_THREADED);
}

static void test_inconsistent(void **state)
{
	struct py_layout l;

	(void)state;
	load_313();
	put64(200, 100000);		/* thread_state.native_thread_id past sizeof */
	assert_int_equal(layout_from_debug_offsets(buf, 584, 0, &l), LAYOUT_INCONSISTENT);
	load_313();
	put64(152, 8);			/* thread_state.size too small for its fields */
	assert_int_equal(layout_from_debug_offsets(buf, 584, 0, &l), LAYOUT_INCONSISTENT);
}

static void test_builtin_tables(void **state)
{
	struct py_layout l;

	(void)state;
	assert_int_equal(layout_from_version(0x030b07f0, 0, &l), LAYOUT_OK);
	assert_int_equal(l.walk.off.cframe_frame, 8);
	assert_int_equal(l.walk.off.cframe_prev, 16);
	assert_int_equal(l.walk.off.owner_max, 2);
	assert_int_equal(l.walk.off.fr_code, 32);
	assert_int_equal(l.walk.off.co_fp2, 136);
	assert_int_equal(l.walk.off.ts_status, TB_NO_OFFSET);	/* 3.11 has none */
	assert_int_equal(l.str.compact_size, 72);
	assert_int_equal(layout_from_version(0x030c01f0, 0, &l), LAYOUT_OK);
	assert_int_equal(l.walk.off.owner_skip, 3);
	assert_int_equal(l.walk.off.owner_max, 3);
	assert_int_equal(l.walk.off.cframe_frame, 0);
	assert_int_equal(l.walk.off.cframe_prev, 8);
	assert_int_equal(l.walk.off.ts_native_tid, 144);
	assert_int_equal(l.walk.off.ts_status, 24);		/* gdb ptype /o on 3.12.1 */
	assert_int_equal(layout_from_version(0x030a0df0, 0, &l), LAYOUT_UNSUPPORTED);
	assert_int_equal(layout_from_version(0x030c00a1, 0, &l), LAYOUT_PRERELEASE);
	assert_int_equal(layout_from_version(0x020700f0, 0, &l), LAYOUT_UNSUPPORTED);
}

/* Messages name the version found and the range the tables cover, once. */
static void test_explain(void **state)
{
	char buf[256];

	(void)state;
	assert_string_equal(layout_supported(), "3.11 to 3.15");
	layout_explain("2.7", 0x020700f0, LAYOUT_UNSUPPORTED, buf, sizeof(buf));
	assert_non_null(strstr(buf, "Python 2.7 is too old"));
	assert_non_null(strstr(buf, "3.11 to 3.15"));
	layout_explain("3.10", 0x030a00f0, LAYOUT_UNSUPPORTED, buf, sizeof(buf));
	assert_non_null(strstr(buf, "Python 3.10 is too old"));
	layout_explain("3.16.0", 0x031000f0, LAYOUT_UNSUPPORTED, buf, sizeof(buf));
	assert_non_null(strstr(buf, "newer"));
	assert_non_null(strstr(buf, "--force-version"));
	layout_explain("3.14.0b2", 0x030e00b2, LAYOUT_PRERELEASE, buf, sizeof(buf));
	assert_non_null(strstr(buf, "pre-release"));
	layout_explain("3.13.0t", 0x030d00f0, LAYOUT_FREE_THREADED, buf, sizeof(buf));
	assert_non_null(strstr(buf, "free-threaded"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_313),
		cmocka_unit_test(test_bad_cookie),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_unknown_version),
		cmocka_unit_test(test_prerelease),
		cmocka_unit_test(test_free_threaded),
		cmocka_unit_test(test_inconsistent),
		cmocka_unit_test(test_builtin_tables),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_objects_313),
		cmocka_unit_test(test_objects_builtin),
		cmocka_unit_test(test_objects_314_315),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
