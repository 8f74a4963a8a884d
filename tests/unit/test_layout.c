// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The per-version layout: resolve, bind, _Py_DebugOffsets parsing and built-in tables. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "layout.h"
#include "fixtures/debug_offsets_313.h"
#include "fixtures/debug_offsets_314.h"
#include "fixtures/debug_offsets_315.h"
#include "fixtures/debug_offsets_313t.h"
#include "fixtures/debug_offsets_314t.h"

static uint8_t buf[LAYOUT_DEBUG_OFFSETS_MAX];

static void load_313(void)
{
	memset(buf, 0, sizeof(buf));
	memcpy(buf, debug_offsets_313, sizeof(debug_offsets_313));
}

static int resolve_buf(size_t len, unsigned flags, struct py_layout *l);

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
	assert_false(l.walk.off.features & TB_F_CFRAME);
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

/* What 3.13t and 3.14t share: the longer object header, no GIL, no objects. */
static void assert_free_threaded(const struct py_layout *l)
{
	assert_true(l->walk.off.features & TB_F_NO_GIL);
	assert_true(layout_no_gil(l));
	assert_int_equal(l->walk.off.co_type, 24);	/* after ob_tid .. ob_ref_shared */
	assert_int_equal(l->walk.off.co_fp, 108);	/* co_version, 16 bytes on */
	assert_int_equal(l->walk.off.co_fp_lo, 108);
	assert_int_equal(l->co_qualname, 144);
	assert_int_equal(l->str.ascii_size, 56);
	assert_int_equal(l->str.compact_size, 72);
	assert_int_equal(l->str.state, 48);
	assert_int_equal(l->obj.managed, PYOBJ_NONE);
	assert_int_equal(l->interp_code_gen == TB_NO_OFFSET || l->code_gen_size == 8, 1);
}

/* 3.13t: the GIL build's frames and thread states, objects 16 bytes longer. */
static void test_free_threaded_313t(void **state)
{
	struct py_layout l;

	(void)state;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, debug_offsets_313t, sizeof(debug_offsets_313t));
	assert_int_equal(resolve_buf(584, 0, &l), LAYOUT_OK);
	assert_string_equal(l.name, "3.13.18t");
	assert_free_threaded(&l);
	assert_int_equal(l.walk.off.exec_mask, ~0ULL);	/* f_executable: a PyObject * */
	assert_false(l.walk.off.features & TB_F_TLBC);
	assert_int_equal(l.walk.off.fr_owner, 70);
	assert_int_equal(l.walk.off.co_adaptive, 216);
	assert_int_equal(l.walk.off.ts_exc, 112);
	assert_int_equal(l.str.state_shift, 0);		/* interned is still 2 bits */
	assert_int_equal(l.interp_code_gen, TB_NO_OFFSET);	/* not trusted unchecked */
}

/* 3.14t: one _PyStackRef tag bit, thread-local bytecode, kind at bit 8. */
static void test_free_threaded_314t(void **state)
{
	struct py_layout l;

	(void)state;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, debug_offsets_314t, sizeof(debug_offsets_314t));
	assert_int_equal(resolve_buf(760, 0, &l), LAYOUT_OK);
	assert_string_equal(l.name, "3.14.10t");
	assert_free_threaded(&l);
	assert_int_equal(l.walk.off.exec_mask, ~1ULL);
	assert_true(l.walk.off.features & TB_F_TLBC);
	assert_true(l.walk.off.features & TB_F_CODE_DEATHS);
	assert_int_equal(l.walk.off.fr_tlbc, 72);
	assert_int_equal(l.walk.off.co_tlbc, 224);
	assert_int_equal(l.walk.off.fr_owner, 78);
	assert_int_equal(l.walk.off.co_adaptive, 232);
	assert_int_equal(l.walk.off.fr_read, 79);	/* owner (78) is after tlbc_index (72) */
	assert_int_equal(l.str.state_shift, 6);
	assert_int_equal(l.interp_code_gen, 8024);
	/* The GIL build's own row: none of it. */
	memcpy(buf, debug_offsets_314, sizeof(debug_offsets_314));
	assert_int_equal(resolve_buf(760, 0, &l), LAYOUT_OK);
	assert_false(l.walk.off.features & (TB_F_TLBC | TB_F_NO_GIL));
	assert_int_equal(l.walk.off.co_fp, 92);
	assert_string_equal(l.name, "3.14.10");
}

/* A free-threaded build of a version with no free-threaded row: refused. */
static void test_free_threaded_unknown(void **state)
{
	struct py_layout l;
	char msg[320];

	(void)state;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, debug_offsets_315, sizeof(debug_offsets_315));
	put64(16, 1);
	assert_int_equal(resolve_buf(sizeof(debug_offsets_315), 0, &l), LAYOUT_FREE_THREADED);
	layout_explain(&l, LAYOUT_FREE_THREADED, msg, sizeof(msg));
	assert_non_null(strstr(msg, "Python 3.15.2t is a free-threaded"));
	assert_non_null(strstr(msg, "3.13t and 3.14t"));
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
	assert_true(l.walk.off.features & TB_F_CFRAME);
	assert_int_equal(l.walk.off.cframe_prev, 16);
	assert_int_equal(l.walk.off.owner_max, 2);
	assert_int_equal(l.walk.off.fr_code, 32);
	assert_int_equal(l.walk.off.co_fp2, 136);
	assert_int_equal(l.walk.off.ts_status, TB_NO_OFFSET);	/* 3.11 has none */
	assert_int_equal(l.str.compact_size, 72);
	/* no code counter: kept fingerprints checked by f_func and f_globals */
	assert_true(l.walk.off.features & TB_F_CODE_TAG);
	assert_int_equal(l.walk.off.fr_tag, 0);
	assert_true(l.walk.off.fr_read >= 16);
	assert_int_equal(layout_from_version(0x030c01f0, 0, &l), LAYOUT_OK);
	assert_int_equal(l.walk.off.owner_skip, 3);
	assert_int_equal(l.walk.off.owner_max, 3);
	assert_int_equal(l.walk.off.cframe_frame, 0);
	assert_int_equal(l.walk.off.cframe_prev, 8);
	assert_int_equal(l.walk.off.ts_native_tid, 144);
	assert_int_equal(l.walk.off.ts_status, 24);		/* gdb ptype /o on 3.12.1 */
	assert_int_equal(layout_from_version(0x030710f0, 0, &l), LAYOUT_UNSUPPORTED);
	assert_int_equal(layout_from_version(0x030c00a1, 0, &l), LAYOUT_PRERELEASE);
	assert_int_equal(layout_from_version(0x020700f0, 0, &l), LAYOUT_UNSUPPORTED);
}

/* Resolve from the facts a process shows: only the debug offsets. */
static int resolve_buf(size_t len, unsigned flags, struct py_layout *l)
{
	struct layout_facts f = { .runtime = buf, .runtime_len = len, .file_version = "" };

	return layout_resolve(&f, flags, l);
}

/* Resolve from Py_Version's value and a file name's version. */
static int resolve_num(uint32_t py_version, const char *file_version, struct py_layout *l)
{
	struct layout_facts f = { .py_version = py_version, .file_version = file_version };

	return layout_resolve(&f, 0, l);
}

/*
 * 3.8 to 3.10: frame objects, threads by pthread_self(), bare names; the
 * version from the file name ("3.10") or with the micro from .rodata. The
 * offsets are the DWARF's of pyenv 3.8.18, 3.9.18, 3.10.13.
 */
static void test_frame_object_tables(void **state)
{
	static const struct {
		const char *file;
		uint16_t lasti, gil, gc;
		uint32_t lasti_bytes, lines;
	} rows[] = {
		{ "3.8.18", 104, 1152, 544, TB_F_LASTI_BYTES, LINETABLE_LNOTAB },
		{ "3.9", 104, 352, 816, TB_F_LASTI_BYTES, LINETABLE_LNOTAB },
		{ "3.10.13", 96, 352, 816, 0, LINETABLE_310 },
	};
	struct py_layout l;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(resolve_num(0, rows[i].file, &l), LAYOUT_OK);
		assert_string_equal(l.name, rows[i].file);
		assert_int_equal(l.walk.off.features & ~TB_F_LASTI_BYTES,
				 TB_F_FRAME_OBJECT | TB_F_PTHREAD_ID | TB_F_EXC_TYPE);
		/* --mode exception: curexc_type, exc_info and its items (DWARF) */
		assert_int_equal(l.walk.off.ts_exc, 88);
		assert_int_equal(l.walk.off.ts_exc_info, 144);
		assert_int_equal(l.walk.off.si_exc_value, 8);
		assert_int_equal(l.walk.off.si_previous, 24);
		assert_int_equal(l.walk.off.features & TB_F_LASTI_BYTES, rows[i].lasti_bytes);
		assert_int_equal(l.walk.off.fr_instr, rows[i].lasti);
		assert_int_equal(l.walk.off.fr_previous, 24);	/* f_back */
		assert_int_equal(l.walk.off.fr_code, 32);
		assert_int_equal(l.walk.off.ts_frame, 24);
		assert_int_equal(l.walk.off.ts_native_tid, 176);	/* thread_id */
		assert_int_equal(l.walk.off.ts_status, TB_NO_OFFSET);
		assert_int_equal(l.walk.off.fr_read, rows[i].lasti + 8);
		assert_int_equal(l.gil_in_runtime, rows[i].gil);
		assert_int_equal(l.gc_collecting, rows[i].gc);
		assert_int_equal(l.lines, rows[i].lines);
		assert_int_equal(l.co_qualname, l.co_name);	/* no co_qualname */
		assert_int_equal(l.co_code, 48);
		assert_int_equal(l.interp_code_gen, TB_NO_OFFSET);	/* no memo */
		/* objects: dicts by dk_size, __dict__ at tp_dictoffset */
		assert_int_equal(l.obj.managed, PYOBJ_DICTOFFSET);
		assert_int_equal(l.obj.interp_modules, i ? 856 : 56);
		assert_int_equal(l.obj.fr_localsplus, rows[i].lasti == 96 ? 352 : 360);
		assert_int_equal(l.obj.ts_thread_id, l.walk.off.ts_native_tid);
		assert_int_equal(l.obj.co_localspluskinds, 0);	/* co_varnames, cells apart */
	}
}

/* Messages name the version found and the range the tables cover, once. */
static void test_explain(void **state)
{
	struct py_layout l;
	char msg[256];

	(void)state;
	assert_int_equal(resolve_num(0, "2.7", &l), LAYOUT_UNSUPPORTED);
	layout_explain(&l, LAYOUT_UNSUPPORTED, msg, sizeof(msg));
	assert_non_null(strstr(msg, "Python 2.7 is too old"));
	assert_non_null(strstr(msg, "3.8 to 3.15"));
	assert_int_equal(resolve_num(0, "3.7.16", &l), LAYOUT_UNSUPPORTED);
	layout_explain(&l, LAYOUT_UNSUPPORTED, msg, sizeof(msg));
	assert_non_null(strstr(msg, "Python 3.7.16 is too old"));
	load_313();
	put64(8, 0x031000f0);
	assert_int_equal(resolve_buf(584, 0, &l), LAYOUT_UNSUPPORTED);
	layout_explain(&l, LAYOUT_UNSUPPORTED, msg, sizeof(msg));
	assert_non_null(strstr(msg, "Python 3.16.0 is newer"));
	assert_non_null(strstr(msg, "--force-version"));
	put64(8, 0x030e00b2);
	assert_int_equal(resolve_buf(584, 0, &l), LAYOUT_PRERELEASE);
	layout_explain(&l, LAYOUT_PRERELEASE, msg, sizeof(msg));
	assert_non_null(strstr(msg, "Python 3.14.0b2 is a pre-release"));
}

/* Version -> row: each source of the version picks the row of its version. */
static void test_resolve_rows(void **state)
{
	struct py_layout l;

	(void)state;
	assert_int_equal(resolve_num(0x030b07f0, "", &l), LAYOUT_OK);
	assert_string_equal(l.source, "built-in table (3.11)");
	assert_string_equal(l.name, "3.11.7");
	assert_int_equal(l.walk.off.cframe_frame, 8);
	assert_true(l.walk.off.features & TB_F_CFRAME);
	assert_int_equal(resolve_num(0x030c01f0, "", &l), LAYOUT_OK);
	assert_string_equal(l.source, "built-in table (3.12)");
	assert_string_equal(l.name, "3.12.1");
	/* Py_Version is exact; a file name only gives major.minor. */
	assert_int_equal(resolve_num(0x030b07f0, "3.12", &l), LAYOUT_OK);
	assert_string_equal(l.name, "3.11.7");
	assert_int_equal(resolve_num(0, "3.12", &l), LAYOUT_OK);
	assert_string_equal(l.name, "3.12");
	assert_string_equal(l.source, "built-in table (3.12)");
	/* The debug offsets win over everything else. */
	load_313();
	{
		struct layout_facts f = { .runtime = buf, .runtime_len = 584,
					  .py_version = 0x030b07f0, .file_version = "3.12" };

		assert_int_equal(layout_resolve(&f, 0, &l), LAYOUT_OK);
	}
	assert_string_equal(l.source, "_Py_DebugOffsets");
	assert_string_equal(l.name, "3.13.0");
	assert_int_equal(l.walk.off.cframe_frame, TB_NO_OFFSET);
	assert_false(l.walk.off.features & TB_F_CFRAME);
	/* Nothing tells the version. */
	assert_int_equal(resolve_num(0, "", &l), LAYOUT_NO_VERSION);
	assert_int_equal(resolve_num(0, "python", &l), LAYOUT_NO_VERSION);
	assert_non_null(layout_strerror(LAYOUT_NO_VERSION));
}

/* The range text comes from the tables, and agrees with what resolves. */
static void test_range(void **state)
{
	struct py_layout l;

	(void)state;
	assert_string_equal(layout_supported(), "3.8 to 3.15");
	assert_int_equal(resolve_num(0, "3.8", &l), LAYOUT_OK);	/* the oldest */
	assert_int_equal(resolve_num(0, "3.7", &l), LAYOUT_UNSUPPORTED);
	memcpy(buf, debug_offsets_315, sizeof(debug_offsets_315));	/* the newest */
	assert_int_equal(resolve_buf(sizeof(debug_offsets_315), 0, &l), LAYOUT_OK);
	assert_string_equal(l.name, "3.15.2");
}

/* Older versions are refused as too old, newer ones as newer; forced, a
 * newer one takes the nearest layout, an older one never. */
static void test_refusal(void **state)
{
	static const char *const old[] = { "2", "2.7", "3.6", "3.7", "3.7.16" };
	struct py_layout l;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(old) / sizeof(old[0]); i++) {
		assert_int_equal(resolve_num(0, old[i], &l), LAYOUT_UNSUPPORTED);
		assert_true(layout_too_old(&l));
		assert_string_equal(l.name, old[i]);
	}
	assert_int_equal(resolve_num(0x030710f0, "", &l), LAYOUT_UNSUPPORTED);
	assert_true(layout_too_old(&l));
	assert_string_equal(l.name, "3.7.16");
	memcpy(buf, debug_offsets_315, sizeof(debug_offsets_315));
	put64(8, 0x031000f0);
	assert_int_equal(resolve_buf(sizeof(debug_offsets_315), 0, &l), LAYOUT_UNSUPPORTED);
	assert_false(layout_too_old(&l));
	assert_int_equal(resolve_buf(sizeof(debug_offsets_315), LAYOUT_FORCE, &l), LAYOUT_OK);
	assert_string_equal(l.name, "3.16.0");
	assert_int_equal(l.obj.managed, PYOBJ_NONE);	/* objects not guessed */
	assert_int_equal(layout_from_version(0x030710f0, LAYOUT_FORCE, &l), LAYOUT_UNSUPPORTED);
}

/*
 * --mode exception: where each version keeps the exception being raised and
 * the exc_info pointer (gdb on DWARF, and live processes); refused where the
 * place was not checked: a forced newer version or a pre-release.
 */
static void expect_exc(const struct py_layout *l, uint16_t raised, uint16_t info, int is_type)
{
	assert_int_equal(l->walk.off.ts_exc, raised);
	assert_int_equal(l->walk.off.ts_exc_info, info);
	assert_int_equal(l->walk.off.si_exc_value, 0);
	assert_int_equal(l->walk.off.si_previous, 8);
	assert_int_equal(l->walk.off.tp_flags, 168);
	assert_int_equal(!!(l->walk.off.features & TB_F_EXC_TYPE), is_type);
	assert_true(l->walk.off.ts_read >= raised + 8);
}

static void test_exception_offsets(void **state)
{
	struct py_layout l;
	char msg[256];

	(void)state;
	assert_int_equal(resolve_num(0x030b07f0, "", &l), LAYOUT_OK);
	expect_exc(&l, 96, 120, 1);		/* curexc_type: a type */
	assert_int_equal(resolve_num(0x030c01f0, "", &l), LAYOUT_OK);
	expect_exc(&l, 96, 104, 0);
	load_313();
	assert_int_equal(resolve_buf(584, LAYOUT_EXCEPTIONS, &l), LAYOUT_OK);
	expect_exc(&l, 112, 120, 0);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, debug_offsets_314, sizeof(debug_offsets_314));
	assert_int_equal(resolve_buf(sizeof(debug_offsets_314), LAYOUT_EXCEPTIONS, &l), LAYOUT_OK);
	expect_exc(&l, 112, 120, 0);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, debug_offsets_315, sizeof(debug_offsets_315));
	assert_int_equal(resolve_buf(sizeof(debug_offsets_315), LAYOUT_EXCEPTIONS, &l), LAYOUT_OK);
	expect_exc(&l, 136, 144, 0);		/* current_exception exported */
	/* 3.16 with 3.15's rows: profiled in the other modes, not this one. */
	put64(8, 0x031000f0);
	assert_int_equal(resolve_buf(sizeof(debug_offsets_315), LAYOUT_FORCE, &l), LAYOUT_OK);
	assert_int_equal(l.walk.off.ts_exc_info, TB_NO_OFFSET);
	assert_int_equal(resolve_buf(sizeof(debug_offsets_315), LAYOUT_FORCE | LAYOUT_EXCEPTIONS,
				     &l), LAYOUT_NO_EXCEPTIONS);
	layout_explain(&l, LAYOUT_NO_EXCEPTIONS, msg, sizeof(msg));
	assert_non_null(strstr(msg, "Python 3.16.0: --mode exception"));
	assert_non_null(strstr(msg, "3.8 to 3.15"));
	assert_string_equal(layout_exc_supported(), "3.8 to 3.15");
	/* A pre-release of a known minor, forced. */
	load_313();
	put64(8, 0x030d00b2);
	assert_int_equal(resolve_buf(584, LAYOUT_FORCE | LAYOUT_EXCEPTIONS, &l),
			 LAYOUT_NO_EXCEPTIONS);
	assert_int_equal(layout_from_version(0x030c00b1, LAYOUT_FORCE, &l), LAYOUT_OK);
	assert_int_equal(l.walk.off.ts_exc_info, TB_NO_OFFSET);
}

/* What pyelf is asked to find depends on the version a file names. */
static void test_symbols_wanted(void **state)
{
	const uint32_t fv = 1u << LAYOUT_SYM_FUNC_VERSION;
	const uint32_t py2 = 1u << LAYOUT_SYM_PY2_MODULE, cap = 1u << LAYOUT_SYM_CAPSULE;
	char name[16];

	(void)state;
	assert_string_equal(layout_symbol(LAYOUT_SYM_FUNC_VERSION)->name, "_Py_next_func_version");
	assert_int_equal(layout_symbol(LAYOUT_SYM_FUNC_VERSION)->size, 4);
	assert_null(layout_symbol(LAYOUT_SYM_NR));
	/* 3.12 keeps its code counter in a hidden global; no other version. */
	assert_true(layout_symbols_wanted("3.12") & fv);
	assert_false(layout_symbols_wanted("3.11") & fv);
	assert_false(layout_symbols_wanted("3.13") & fv);
	assert_false(layout_symbols_wanted("") & fv);
	assert_false(layout_symbols_wanted(NULL) & fv);
	/* The markers are looked for in every file. */
	assert_int_equal(layout_symbols_wanted("") & (py2 | cap), py2 | cap);
	assert_int_equal(layout_symbols_wanted("3.12") & (py2 | cap), py2 | cap);
	assert_true(layout_symbol(LAYOUT_SYM_PY2_MODULE)->flags & LAYOUT_SYM_MARKER);
	assert_false(layout_symbol(LAYOUT_SYM_FUNC_VERSION)->flags & LAYOUT_SYM_MARKER);
	/* Debian 11's static python2.7 defines both markers (nm -D). */
	layout_version_from_symbols(py2 | cap, name, sizeof(name));
	assert_string_equal(name, "2.7");
	layout_version_from_symbols(py2, name, sizeof(name));
	assert_string_equal(name, "2");
	layout_version_from_symbols(cap, name, sizeof(name));	/* any Python 3 */
	assert_string_equal(name, "");
	layout_version_from_symbols(0, name, sizeof(name));
	assert_string_equal(name, "");
}

/* A process's memory for layout_bind(): a few 8-byte words. */
struct fake_mem {
	uint64_t addr[8], val[8];
	int n;
};

static int fake_read(void *ctx, uint64_t addr, void *out, size_t len)
{
	struct fake_mem *m = ctx;
	int i;

	for (i = 0; i < m->n; i++) {
		if (m->addr[i] == addr && len == 8) {
			memcpy(out, &m->val[i], 8);
			return 0;
		}
	}
	return -EFAULT;
}

static void fake_put(struct fake_mem *m, uint64_t addr, uint64_t val)
{
	m->addr[m->n] = addr;
	m->val[m->n++] = val;
}

/* Addresses of the main interpreter's GIL, GC flag and code counter. */
/* Opcode names and cache sizes as each version's interpreter has them
 * (user/opcodes.gen.h, generated from the real interpreters). */
static void test_opcode_names(void **state)
{
	static const struct {
		uint32_t version;
		unsigned add_int, binary_op, binary_op_caches, unnamed;
	} v[] = {
		{ 0x030b07f0, 5, 122, 1, 181 },
		{ 0x030c01f0, 7, 122, 1, 169 },
		{ 0x030d00f0, 151, 45, 1, 119 },
		{ 0x030e0af0, 130, 44, 5, 121 },
		{ 0x030f02f0, 130, 42, 5, 120 },
	};
	struct py_layout l = { 0 };
	char buf[16], want[16];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		l.version = v[i].version;
		assert_string_equal(layout_opcode_name(&l, v[i].add_int, buf, sizeof(buf)),
				    "BINARY_OP_ADD_INT");
		assert_string_equal(layout_opcode_name(&l, v[i].binary_op, buf, sizeof(buf)),
				    "BINARY_OP");
		assert_int_equal(layout_opcode_caches(&l, v[i].binary_op), v[i].binary_op_caches);
		/* a specialised instruction has its family's caches */
		assert_int_equal(layout_opcode_caches(&l, v[i].add_int), v[i].binary_op_caches);
		/* a byte no instruction has: named by number, never NULL */
		snprintf(want, sizeof(want), "<op %u>", v[i].unnamed);
		assert_string_equal(layout_opcode_name(&l, v[i].unnamed, buf, sizeof(buf)), want);
		assert_int_equal(layout_opcode_caches(&l, v[i].unnamed), 0);
	}
	/* 3.12+ name their instrumented instructions */
	l.version = 0x030c01f0;
	assert_string_equal(layout_opcode_name(&l, 254, buf, sizeof(buf)), "INSTRUMENTED_LINE");
	/* 3.8 to 3.10: unspecialised names, no inline caches */
	l.version = 0x030a0df0;
	assert_string_equal(layout_opcode_name(&l, 23, buf, sizeof(buf)), "BINARY_ADD");
	assert_string_equal(layout_opcode_name(&l, 144, buf, sizeof(buf)), "EXTENDED_ARG");
	assert_int_equal(layout_opcode_caches(&l, 23), 0);
	l.version = 0x030812f0;
	assert_string_equal(layout_opcode_name(&l, 131, buf, sizeof(buf)), "CALL_FUNCTION");
	/* a version without a table, and numbers past a byte */
	l.version = 0x031000f0;
	assert_string_equal(layout_opcode_name(&l, 5, buf, sizeof(buf)), "<op 5>");
	assert_int_equal(layout_opcode_caches(&l, 5), 0);
	l.version = 0x030c01f0;
	assert_string_equal(layout_opcode_name(&l, 300, buf, sizeof(buf)), "<op 300>");
	assert_int_equal(layout_opcode_caches(&l, 300), 0);
}

static void test_bind(void **state)
{
	struct layout_addrs a = { .runtime = 0x1000, .code_type = 0x2000 };
	struct fake_mem m = { .n = 0 };
	struct py_layout l;

	(void)state;
	a.sym[LAYOUT_SYM_FUNC_VERSION] = 0x7000;
	/* 3.12: GIL through interp->ceval.gil; counter in the hidden global */
	assert_int_equal(resolve_num(0x030c01f0, "", &l), LAYOUT_OK);
	assert_int_equal(layout_bind(&l, &a, fake_read, &m), 0);	/* not up yet */
	assert_int_equal(l.walk.addr.runtime_addr, 0x1000);
	assert_int_equal(l.walk.addr.code_type_addr, 0x2000);
	assert_int_equal(l.walk.addr.gil_addr, 0);
	fake_put(&m, 0x1000 + 40, 0x5000);	/* runtime -> interpreters.head */
	fake_put(&m, 0x5000 + 0, 0x6000);	/* a subinterpreter is the head */
	fake_put(&m, 0x6000 + 0, 0);		/* the main one is the last */
	fake_put(&m, 0x6000 + 384, 0x9000);	/* ceval.gil */
	assert_int_equal(layout_bind_status(&l, &a, fake_read, &m), 1);
	assert_int_equal(l.walk.addr.gil_addr, 0x9000);
	assert_int_equal(l.walk.addr.gc_addr, 0x6000 + 312);
	assert_int_equal(l.walk.addr.code_gen_addr, 0x7000);
	assert_int_equal(l.walk.addr.code_gen_size, 4);
	assert_int_equal(l.walk.addr.main_interp, 0);
	/* 3.11: the GIL inside _PyRuntime, no counter */
	assert_int_equal(resolve_num(0x030b07f0, "", &l), LAYOUT_OK);
	assert_int_equal(layout_bind(&l, &a, fake_read, &m), 1);
	assert_int_equal(l.walk.addr.gil_addr, 0x1000 + 360);
	assert_int_equal(l.walk.addr.code_gen_size, 0);
	assert_int_equal(l.walk.addr.main_interp, 0x6000);
	/* 3.14: code_object_generation in the interpreter, 8 bytes */
	memcpy(buf, debug_offsets_314, sizeof(debug_offsets_314));
	assert_int_equal(resolve_buf(sizeof(debug_offsets_314), 0, &l), LAYOUT_OK);
	m.n = 0;
	fake_put(&m, 0x1000 + l.walk.off.rt_interp_head, 0x6000);
	fake_put(&m, 0x6000 + l.walk.off.interp_next, 0);
	fake_put(&m, 0x6000 + l.gil_ptr_in_interp, 0x9100);
	assert_int_equal(layout_bind(&l, &a, fake_read, &m), 1);
	assert_int_equal(l.walk.addr.gil_addr, 0x9100);
	assert_int_equal(l.walk.addr.code_gen_addr, 0x6000 + l.interp_code_gen);
	assert_int_equal(l.walk.addr.code_gen_size, 8);
	assert_int_equal(l.walk.addr.main_interp, 0x6000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_313),
		cmocka_unit_test(test_bad_cookie),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_unknown_version),
		cmocka_unit_test(test_prerelease),
		cmocka_unit_test(test_free_threaded_313t),
		cmocka_unit_test(test_free_threaded_314t),
		cmocka_unit_test(test_free_threaded_unknown),
		cmocka_unit_test(test_inconsistent),
		cmocka_unit_test(test_builtin_tables),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_frame_object_tables),
		cmocka_unit_test(test_resolve_rows),
		cmocka_unit_test(test_range),
		cmocka_unit_test(test_refusal),
		cmocka_unit_test(test_symbols_wanted),
		cmocka_unit_test(test_bind),
		cmocka_unit_test(test_opcode_names),
		cmocka_unit_test(test_objects_313),
		cmocka_unit_test(test_objects_builtin),
		cmocka_unit_test(test_objects_314_315),
		cmocka_unit_test(test_exception_offsets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
