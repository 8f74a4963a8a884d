// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Per-version layouts: the one place where CPython versions become numbers.
 *
 * 3.13+ export their own offsets in _Py_DebugOffsets at the start of
 * _PyRuntime; each version lays that struct out differently, so we keep,
 * per version, where in it each field we need lives (struct dbg_pos), and
 * read the values from the live process. A few facts are not in the debug
 * offsets (co_version, tag bits, frame-owner numbering); they sit in
 * struct ver_extra next to it. 3.11 and 3.12 have no debug offsets: their
 * values are built-in (struct py_layout literals, verified against DWARF).
 */
#include <stdio.h>
#include <string.h>
#include "layout.h"
#include "util.h"
#include "opcodes.gen.h"

#define PY_MINOR(v)	(((v) >> 16) & 0xff)
#define PY_MAJOR(v)	(((v) >> 24) & 0xff)
#define PY_MICRO(v)	(((v) >> 8) & 0xff)
#define PY_LEVEL(v)	(((v) >> 4) & 0xf)
#define PY_SERIAL(v)	((v) & 0xf)
#define PY_FINAL	0xf

#define NO TB_NO_OFFSET
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Where each value lives inside one version's _Py_DebugOffsets. */
struct dbg_pos {
	unsigned minor;
	uint16_t total;			/* sizeof(_Py_DebugOffsets) */
	uint16_t rt_interp_head;
	uint16_t is_size, is_next, is_threads_head, is_code_gen;
	uint16_t is_gc, is_ceval_gil, is_gil_state, is_gil_locked, is_gil_holder;
	uint16_t gc_collecting, ts_exc;
	uint16_t ts_size, ts_next, ts_interp, ts_frame, ts_native_tid, ts_status;
	uint16_t fr_size, fr_previous, fr_code, fr_instr, fr_owner;
	uint16_t fr_tlbc, co_tlbc;	/* exported from 3.14 on; 0 in GIL builds */
	uint16_t co_size, co_filename, co_name, co_qualname, co_linetable,
		 co_firstlineno, co_adaptive;
	uint16_t ob_type;
	uint16_t by_size, by_ob_size, by_sval;
	uint16_t st_size, st_state, st_length, st_ascii_size;
	uint16_t st_compact_size;	/* exported from 3.15 on */
	/* objects (dump --locals, thread names); NO where not mapped yet */
	/* thread_id is the field before ts_native_tid in every version */
	uint16_t is_modules, fr_localsplus, co_argcount, co_lsnames, co_lskinds;
	uint16_t tp_name, tp_flags, tu_items, li_items, li_size, di_keys, di_values;
	uint16_t fl_val, lo_tag, lo_digit;
};

static const struct dbg_pos dbg_positions[] = {
	{
		.minor = 13, .total = 584, .rt_interp_head = 40,
		.is_size = 48, .is_next = 64, .is_threads_head = 72, .is_code_gen = NO,
		.is_gc = 80, .is_ceval_gil = 112, .is_gil_state = 120, .is_gil_locked = 136,
		.is_gil_holder = 144, .gc_collecting = 576, .ts_exc = NO,
		.ts_size = 152, .ts_next = 168, .ts_interp = 176, .ts_frame = 184, .ts_native_tid = 200,
		.ts_status = 216,
		.fr_size = 224, .fr_previous = 232, .fr_code = 240, .fr_instr = 248,
		.fr_owner = 264, .fr_tlbc = NO, .co_tlbc = NO,
		.co_size = 272, .co_filename = 280, .co_name = 288, .co_qualname = 296,
		.co_linetable = 304, .co_firstlineno = 312, .co_adaptive = 344,
		.ob_type = 360,
		.by_size = 512, .by_ob_size = 520, .by_sval = 528,
		.st_size = 536, .st_state = 544, .st_length = 552, .st_ascii_size = 560,
		.st_compact_size = NO,
		.is_modules = 88, .fr_localsplus = 256, .co_argcount = 320, .co_lsnames = 328,
		.co_lskinds = 336, .tp_name = 376, .tp_flags = 392, .tu_items = 408,
		.li_items = 432, .li_size = 440, .di_keys = 456, .di_values = 464,
		.fl_val = 480, .lo_tag = 496, .lo_digit = 504,
	},
	{
		.minor = 14, .total = 760, .rt_interp_head = 40,
		.is_size = 48, .is_next = 64, .is_threads_head = 72, .is_code_gen = 160,
		.is_gc = 88, .is_ceval_gil = 120, .is_gil_state = 128, .is_gil_locked = 144,
		.is_gil_holder = 152, .gc_collecting = 656, .ts_exc = NO,
		.ts_size = 176, .ts_next = 192, .ts_interp = 200, .ts_frame = 208, .ts_native_tid = 224,
		.ts_status = 240,
		.fr_size = 248, .fr_previous = 256, .fr_code = 264, .fr_instr = 272,
		.fr_owner = 288, .fr_tlbc = 304, .co_tlbc = 392,
		.co_size = 312, .co_filename = 320, .co_name = 328, .co_qualname = 336,
		.co_linetable = 344, .co_firstlineno = 352, .co_adaptive = 384,
		.ob_type = 408,
		.by_size = 592, .by_ob_size = 600, .by_sval = 608,
		.st_size = 616, .st_state = 624, .st_length = 632, .st_ascii_size = 640,
		.st_compact_size = NO,
		.is_modules = 96, .fr_localsplus = 280, .co_argcount = 360, .co_lsnames = 368,
		.co_lskinds = 376, .tp_name = 424, .tp_flags = 440, .tu_items = 456,
		.li_items = 480, .li_size = 488, .di_keys = 536, .di_values = 544,
		.fl_val = 560, .lo_tag = 576, .lo_digit = 584,
	},
	{
		.minor = 15, .total = 888, .rt_interp_head = 40,
		.is_size = 48, .is_next = 64, .is_threads_head = 72, .is_code_gen = 160,
		.is_gc = 88, .is_ceval_gil = 120, .is_gil_state = 128, .is_gil_locked = 144,
		.is_gil_holder = 152, .gc_collecting = 760, .ts_exc = 288,
		.ts_size = 176, .ts_next = 192, .ts_interp = 200, .ts_frame = 208, .ts_native_tid = 248,
		.ts_status = 264,
		.fr_size = 312, .fr_previous = 320, .fr_code = 328, .fr_instr = 336,
		.fr_owner = 352, .fr_tlbc = 368, .co_tlbc = 456,
		.co_size = 376, .co_filename = 384, .co_name = 392, .co_qualname = 400,
		.co_linetable = 408, .co_firstlineno = 416, .co_adaptive = 448,
		.ob_type = 472,
		.by_size = 688, .by_ob_size = 696, .by_sval = 704,
		.st_size = 712, .st_state = 720, .st_length = 728, .st_ascii_size = 736,
		.st_compact_size = 744,
		.is_modules = 96, .fr_localsplus = 344, .co_argcount = 424, .co_lsnames = 432,
		.co_lskinds = 440, .tp_name = 488, .tp_flags = 504, .tu_items = 552,
		.li_items = 576, .li_size = 584, .di_keys = 632, .di_values = 640,
		.fl_val = 656, .lo_tag = 672, .lo_digit = 680,
	},
};

/* Facts the debug offsets do not carry. */
struct ver_extra {
	unsigned minor;
	uint16_t co_version;	/* u32 in PyCodeObject */
	uint64_t exec_mask;	/* _PyStackRef tag bits cleared (3.14+) */
	uint8_t owner_skip;	/* first owner value that is not a Python frame */
	uint8_t owner_stop;	/* sentinel base frame */
	uint8_t owner_max;	/* highest owner value the version defines */
	uint16_t compact_extra;	/* sizeof(PyCompactUnicodeObject) - sizeof(PyASCIIObject) */
	uint16_t ts_exc;	/* PyThreadState -> current_exception, if not exported */
	/*
	 * PyInterpreterState -> func_state.next_version (3.13 does not export
	 * it), trusted only in an interpreter state of interp_min to
	 * interp_max bytes: the sizes of the releases checked.
	 */
	uint16_t func_version;
	uint32_t interp_min, interp_max;
	uint8_t free_threaded;	/* the row of the Py_GIL_DISABLED build */
	uint8_t state_shift;	/* struct pystr_layout's */
	/*
	 * PyThreadState -> exc_info (no version exports it), checked with gdb
	 * on the DWARF of 3.13.0 (pyenv), 3.13.18, 3.14.10 and 3.15.2 (Debian
	 * sid's debug info) and in live processes (an except block's exception
	 * is exc_info->exc_value; a generator's item comes first, NULL).
	 */
	uint16_t ts_exc_info;
};

static const struct ver_extra extras[] = {
	/*
	 * owner 3 = FRAME_OWNED_BY_CSTACK (entry shim). func_state.next_version
	 * is at 17000 in 3.13.0 (pyenv, DWARF), 3.13.5 (Debian 13) and 3.13.18
	 * (Debian sid), each checked with gdb on the release binary's debug
	 * info (python3.13-dbg) and by watching the value step as code objects
	 * are born. The interpreter state grew between them (194968, 194976,
	 * 194984 bytes) only in its last members, the embedded initial thread
	 * state at 194624 and after; releases in between, which only added to
	 * it, lie in this range. A larger one reads every code object.
	 */
	{ 13, 92, ~0ULL, 3, TB_NO_OWNER, 3, 16, 112, 17000, 194968, 194984, 0, 0, 120 },
	/* owner 3 = INTERPRETER, 4 = CSTACK; f_executable is a tagged _PyStackRef;
	 * current_exception (not exported) at 112 as in 3.13 (gdb, 3.14.10) */
	{ 14, 92, ~3ULL, 3, TB_NO_OWNER, 4, 16, 112, NO, 0, 0, 0, 0, 120 },
	/* owner 3 = INTERPRETER, 4 = THREAD_STATE: the sentinel at the bottom;
	 * current_exception exported (136) */
	{ 15, 92, ~3ULL, 3, 4, 4, 16, NO, NO, 0, 0, 0, 0, 144 },
	/*
	 * Free-threaded builds, from CPython's headers at 3.13.18 and 3.14.10
	 * compiled with Py_GIL_DISABLED (scripts/ft-offsets.sh; no such build
	 * runs here).
	 * The 32-byte object header (ob_tid, ob_flags, ob_mutex, ob_gc_bits,
	 * ob_ref_local, ob_ref_shared, ob_type) moves every code object field
	 * 16 bytes on: co_version at 108. Owners as in the GIL builds.
	 * current_exception stays at 112 (3.13t). The code counter of 3.13t
	 * (func_state.next_version) is not trusted: no release was checked.
	 * 3.14t: f_executable's _PyStackRef has one tag bit (Py_TAG_BITS 1),
	 * and a str's full-byte `interned` puts kind at bits 8-10 (shift 6).
	 * exc_info was not checked on a free-threaded build: no --mode exception.
	 */
	{ 13, 108, ~0ULL, 3, TB_NO_OWNER, 3, 16, 112, NO, 0, 0, 1, 0, NO },
	{ 14, 108, ~1ULL, 3, TB_NO_OWNER, 4, 16, NO, NO, 0, 0, 1, 6, NO },
};

/*
 * Objects, per version: offsetof() compiled against each version's own
 * internal headers (pyenv 3.11.7, 3.12.1, 3.13.0 and Debian's 3.11 agree).
 * For 3.13+ the fields _Py_DebugOffsets exports are taken from the live
 * process instead (obj_from_debug); the rest of the 3.14 and 3.15 rows come
 * from CPython's headers at those tags, each checked against Debian's
 * 3.14.10 and 3.15.2 reading their own objects with ctypes (3.14 tuples
 * gained a cached hash: ob_item moved to 32; 3.15 types grew a word:
 * ht_cached_keys moved to 888). A later version stays undescribed: thread
 * names fall back to the kernel's and dump --locals says it cannot.
 */
/* What 3.13 to 3.15 share: the managed dict with inline values, dicts, code. */
#define OBJ_SINCE_313 \
	.managed = PYOBJ_MANAGED_313, \
	.tp_name = 24, .tp_basicsize = 32, .tp_flags = 168, \
	.md_dict = 16, .dict_used = 16, .dict_keys = 32, .dict_values = 40, \
	.dk_log2_index_bytes = 9, .dk_kind = 10, .dk_nentries = 24, .dk_indices = 32, \
	.values_off = 8, .values_capacity = 0, .values_valid = 3, \
	.tpflag_managed = 1 << 4, .tpflag_inline = 1 << 2, .var_size = 16, .list_items = 24, \
	.set_used = 24, .float_val = 16, .cell_ref = 16, \
	.long_size = 16, .long_digits = 24, .long_tagged = 1, \
	.co_argcount = 52, .co_kwonlyargcount = 60, .co_flags = 48, \
	.co_localsplusnames = 96, .co_localspluskinds = 104

/* 3.8 to 3.10 (DWARF of pyenv 3.8.18, 3.9.18, 3.10.13): dicts of PEP 412. */
#define OBJ_BEFORE_311 \
	.managed = PYOBJ_DICTOFFSET, .ts_thread_id = 176, \
	.tp_name = 24, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288, \
	.ht_cached_keys = 0, .md_dict = 16, .dict_used = 16, .dict_keys = 32, .dict_values = 40, \
	.dk_size = 8, .dk_nentries = 32, .dk_indices = 40, \
	.values_off = 0, .values_capacity = -1, .values_valid = -1, \
	.tpflag_managed = 0, .tpflag_inline = 0, .var_size = 16, .tuple_items = 24, \
	.list_items = 24, .set_used = 24, .float_val = 16, .cell_ref = 16, \
	.long_size = 16, .long_digits = 24, .long_tagged = 0, \
	.co_argcount = 16, .co_kwonlyargcount = 24, .co_flags = 36, \
	.co_localsplusnames = 72, .co_localspluskinds = 0, .co_cellvars = 88, .co_freevars = 80

static const struct pyobj_layout obj_facts[] = {
	{ .minor = 8, OBJ_BEFORE_311, .interp_modules = 56, .fr_localsplus = 360 },
	{ .minor = 9, OBJ_BEFORE_311, .interp_modules = 856, .fr_localsplus = 360 },
	{ .minor = 10, OBJ_BEFORE_311, .interp_modules = 856, .fr_localsplus = 352 },
	{
		.minor = 11, .managed = PYOBJ_MANAGED_311, .interp_modules = 888, .ts_thread_id = 152,
		.tp_name = 24, .tp_basicsize = 32, .tp_flags = 168, .ht_cached_keys = 872,
		.md_dict = 16, .dict_used = 16, .dict_keys = 32, .dict_values = 40,
		.dk_log2_index_bytes = 9, .dk_kind = 10, .dk_nentries = 24, .dk_indices = 32,
		.values_off = 0, .values_capacity = -1, .values_valid = -1,
		.tpflag_managed = 1 << 4, .tpflag_inline = 0, .var_size = 16, .tuple_items = 24, .list_items = 24,
		.set_used = 24, .float_val = 16, .cell_ref = 16,
		.long_size = 16, .long_digits = 24, .long_tagged = 0,
		.fr_localsplus = 72, .co_argcount = 56, .co_kwonlyargcount = 64, .co_flags = 48,
		.co_localsplusnames = 96, .co_localspluskinds = 104,
	},
	{
		.minor = 12, .managed = PYOBJ_MANAGED_312, .interp_modules = 944, .ts_thread_id = 136,
		.tp_name = 24, .tp_basicsize = 32, .tp_flags = 168, .ht_cached_keys = 880,
		.md_dict = 16, .dict_used = 16, .dict_keys = 32, .dict_values = 40,
		.dk_log2_index_bytes = 9, .dk_kind = 10, .dk_nentries = 24, .dk_indices = 32,
		.values_off = 0, .values_capacity = -1, .values_valid = -1,
		.tpflag_managed = 1 << 4, .tpflag_inline = 0, .var_size = 16, .tuple_items = 24, .list_items = 24,
		.set_used = 24, .float_val = 16, .cell_ref = 16,
		.long_size = 16, .long_digits = 24, .long_tagged = 1,
		.fr_localsplus = 72, .co_argcount = 52, .co_kwonlyargcount = 60, .co_flags = 48,
		.co_localsplusnames = 96, .co_localspluskinds = 104,
	},
	{
		.minor = 13, OBJ_SINCE_313, .interp_modules = 7656, .ts_thread_id = 152,
		.ht_cached_keys = 880, .tuple_items = 24, .fr_localsplus = 72, .ref_tags = 0,
	},
	{
		.minor = 14, OBJ_SINCE_313, .interp_modules = 7688, .ts_thread_id = 152,
		.ht_cached_keys = 880, .tuple_items = 32, .fr_localsplus = 80, .ref_tags = 3,
	},
	{
		.minor = 15, OBJ_SINCE_313, .interp_modules = 7592, .ts_thread_id = 176,
		.ht_cached_keys = 888, .tuple_items = 32, .fr_localsplus = 80, .ref_tags = 3,
	},
};

/*
 * --async-aware. The TaskObj and thread-state offsets are the values of
 * _Py_AsyncioModuleDebugOffsets (section .AsyncioDebug) of Debian's 3.14.10
 * (in lib-dynload/_asyncio*.so, mapped only once asyncio is imported, so
 * not read at run time) and 3.15.2 (in the executable); the generator and
 * frame facts (_Py_DebugOffsets has no stackpointer before 3.15 and no
 * frame-state values) were checked on both with ctypes in a live process:
 * gi_iframe via cr_frame.f_frame, gi_frame_state as the byte that reads
 * -1/4 (3.14) or 2/5 (3.15) while awaiting/cleared, cr_await found at
 * stackpointer[-1] (3.14) or [-2] (3.15), running_task == current_task(),
 * and a set's used/mask/table at 24/32/40 with (key, hash) entries, a
 * removed one's hash -1.
 */
static const struct { unsigned minor; struct py_async a; } async_facts[] = {
	{ 14, { .ok = 1, .bpf = { .ts_task = 872, .task_lo = 96, .task_name = 136,
				 .task_coro = 128, .task_awaited_by = 96, .task_is_task = 108,
				 .task_is_set = 109,
				 .set_used = 24, .set_mask = 32 },
		.gen_iframe = 72, .gen_state = 67, .state_yield_from = -1, .state_cleared = 4,
		.fr_stackpointer = 64, .await_slot = 1, .task_node = 152, .ts_tasks_head = 880 } },
	{ 15, { .ok = 1, .bpf = { .ts_task = 1032, .task_lo = 96, .task_name = 136,
				 .task_coro = 128, .task_awaited_by = 96, .task_is_task = 108,
				 .task_is_set = 109,
				 .set_used = 24, .set_mask = 32 },
		.gen_iframe = 72, .gen_state = 67, .state_yield_from = 2, .state_cleared = 5,
		.fr_stackpointer = 64, .await_slot = 2, .task_node = 152, .ts_tasks_head = 1048 } },
};

const char *layout_async_versions(void)
{
	static char buf[64];
	size_t i, n = NELEM(async_facts);

	if (!buf[0])
		for (i = 0; i < n; i++)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s3.%u",
				 !i ? "" : i + 1 < n ? ", " : " and ", async_facts[i].minor);
	return buf;
}

static void async_of(unsigned minor, struct py_async *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < NELEM(async_facts); i++)
		if (async_facts[i].minor == minor)
			*out = async_facts[i].a;
}

/*
 * 3.8 to 3.10: heap frame objects (tstate->frame, f_back), no
 * native_thread_id (thread_id is pthread_self()), no co_qualname (the
 * walker's fingerprint is co_name ^ co_lnotab/co_linetable, two pointers
 * no other live code object shares). Offsets from the DWARF of pyenv's
 * 3.8.18, 3.9.18 and 3.10.13 (gdb), checked by live walks; the exception
 * ones (exc_info 144, its item's exc_value 8 and previous_item 24, tp_flags
 * 168) with gdb on the same DWARF.
 */
#define FRAME_OBJECT_WALK \
	.exec_mask = ~0ULL, \
	.rt_interp_head = 32, .interp_next = 0, .interp_threads_head = 8, \
	.ts_next = 8, .ts_interp = 16, .ts_frame = 24, .ts_native_tid = 176, \
	.ts_status = NO, .ts_exc = 88,	/* curexc_type: TB_F_EXC_TYPE */ \
	.ts_exc_info = 144, .si_exc_value = 8, .si_previous = 24, .tp_flags = 168, \
	.cframe_frame = NO, .cframe_prev = NO, \
	.fr_previous = 24, .fr_code = 32, .fr_owner = 0, .fr_entry = NO, \
	.co_type = 8, .co_adaptive = 0, .co_fp = 112, .co_fp2 = 120, \
	.co_fs_a = NO, .co_fs_b = NO, \
	.owner_skip = 0xff, .owner_stop = TB_NO_OWNER, .owner_max = 0xff, \
	.gil_holder = 8, .gil_locked = 16

#define FRAME_OBJECT_CODE \
	.co_size = 176, .co_filename = 104, .co_name = 112, .co_qualname = 112, \
	.co_linetable = 120, .co_firstlineno = 40, .co_code = 48, .co_version = NO, \
	.interp_code_gen = NO, \
	.str = { .length = 16, .state = 32, .ascii_size = 48, .compact_size = 72, \
		 .bytes_size = 16, .bytes_data = 32 }

/* 3.8 to 3.12: no debug offsets; verified with DWARF and live walks. */
static const struct py_layout builtin[] = {
	{
		.version = 0x03080000, .source = "built-in table (3.8)",
		.walk.off = {
			FRAME_OBJECT_WALK, .fr_instr = 104,	/* f_lasti, bytes */
			.features = TB_F_FRAME_OBJECT | TB_F_LASTI_BYTES | TB_F_PTHREAD_ID | TB_F_EXC_TYPE,
		},
		.gil_in_runtime = 1152, .gil_ptr_in_interp = NO,	/* _PyRuntime.ceval.gil */
		.gc_collecting = 344 + 200, .gc_in_runtime = 1,	/* _PyRuntime.gc */
		.lines = LINETABLE_LNOTAB, FRAME_OBJECT_CODE,
	},
	{
		.version = 0x03090000, .source = "built-in table (3.9)",
		.walk.off = {
			FRAME_OBJECT_WALK, .fr_instr = 104,
			.features = TB_F_FRAME_OBJECT | TB_F_LASTI_BYTES | TB_F_PTHREAD_ID | TB_F_EXC_TYPE,
		},
		.gil_in_runtime = 352, .gil_ptr_in_interp = NO,
		.gc_collecting = 616 + 200,	/* interp->gc */
		.lines = LINETABLE_LNOTAB, FRAME_OBJECT_CODE,
	},
	{
		.version = 0x030a0000, .source = "built-in table (3.10)",
		.walk.off = {
			FRAME_OBJECT_WALK, .fr_instr = 96,	/* f_lasti, code units */
			.features = TB_F_FRAME_OBJECT | TB_F_PTHREAD_ID | TB_F_EXC_TYPE,
		},
		.gil_in_runtime = 352, .gil_ptr_in_interp = NO,
		.gc_collecting = 616 + 200,
		.lines = LINETABLE_310, FRAME_OBJECT_CODE,
	},
	{
		.version = 0x030b0000, .source = "built-in table (3.11)",
		.walk.off = {
			.exec_mask = ~0ULL,
			.rt_interp_head = 40, .interp_next = 0, .interp_threads_head = 16,
			.ts_next = 8, .ts_interp = 16, .ts_native_tid = 160,
			.ts_status = NO,	/* 3.11 has no _status */
			.ts_frame = 56, .cframe_frame = 8,	/* tstate->cframe->current_frame */
			.cframe_prev = 16,
			.fr_previous = 48, .fr_code = 32, .fr_instr = 56, .fr_owner = 69,
			.co_type = 8, .co_adaptive = 184,
			/* no co_version: qualname and linetable pointers identify the code */
			.co_fp = 128, .co_fp2 = 136,
			.owner_skip = 0xff, .owner_stop = TB_NO_OWNER, .owner_max = 2,
			.fr_entry = 68,	/* no shims: is_entry marks the bottom */
			/* frame words: co_nlocalsplus + co_stacksize + 9 specials */
			.co_fs_a = 76, .co_fs_b = 68, .co_fs_add = 9,
			.ts_exc = 96,		/* curexc_type */
			/* exc_info; curexc_type holds the type (gdb on DWARF, live:
			 * pyenv 3.11.7 and Debian's 3.11.2 alike) */
			.ts_exc_info = 120, .si_exc_value = 0, .si_previous = 8,
			.tp_flags = 168,
			/* f_func, f_globals: what a kept fingerprint is checked by */
			.fr_tag = 0,
			.features = TB_F_CFRAME | TB_F_LATE_LINK | TB_F_ENTRY_FLAG | TB_F_EXC_TYPE |
				    TB_F_CODE_TAG,
			.gil_holder = 8, .gil_locked = 16,
		},
		.gil_in_runtime = 360, .gil_ptr_in_interp = NO,	/* _PyRuntime.ceval.gil */
		.gc_collecting = 648 + 200,
		.co_size = 192, .co_filename = 112, .co_name = 120, .co_qualname = 128,
		.co_linetable = 136, .co_firstlineno = 72, .co_version = NO,
		.interp_code_gen = NO,
		.str = { .length = 16, .state = 32, .ascii_size = 48, .compact_size = 72,
			 .bytes_size = 16, .bytes_data = 32 },
	},
	{
		.version = 0x030c0000, .source = "built-in table (3.12)",
		.walk.off = {
			.exec_mask = ~0ULL,
			.rt_interp_head = 40, .interp_next = 0, .interp_threads_head = 72,
			.ts_next = 8, .ts_interp = 16, .ts_native_tid = 144,
			.ts_status = 24,
			.ts_frame = 56, .cframe_frame = 0, .cframe_prev = 8,
			.fr_previous = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70,
			.co_type = 8, .co_adaptive = 192,
			.co_fp = 92, .co_fp2 = NO,
			.owner_skip = 3, .owner_stop = TB_NO_OWNER, .owner_max = 3,
			.fr_entry = NO,	/* every chain ends in an entry shim */
			.features = TB_F_CFRAME | TB_F_LATE_LINK | TB_F_BOTTOM_SHIM,
			.co_fs_a = 76, .co_fs_b = NO, .co_fs_add = 0,	/* co_framesize */
			.ts_exc = 96,		/* current_exception */
			.ts_exc_info = 104, .si_exc_value = 0, .si_previous = 8,
			.tp_flags = 168,
			.gil_holder = 8, .gil_locked = 16,
		},
		.gil_in_runtime = NO, .gil_ptr_in_interp = 384,	/* interp->ceval.gil */
		.gc_collecting = 112 + 200,
		.co_size = 200, .co_filename = 112, .co_name = 120, .co_qualname = 128,
		.co_linetable = 136, .co_firstlineno = 68, .co_version = 92,
		.interp_code_gen = NO, .code_gen_size = 4, .code_gen_symbol = 1,
		.str = { .length = 16, .state = 32, .ascii_size = 40, .compact_size = 56,
			 .bytes_size = 16, .bytes_data = 32 },
	},
};

/* The table rows of one version. */
struct ver_row {
	const struct py_layout *builtin;	/* versions without debug offsets */
	const struct dbg_pos *pos;		/* versions with them */
	const struct ver_extra *extra;		/* with pos */
	const struct pyobj_layout *obj;		/* NULL: objects not described */
};

/*
 * The one place where a version number picks table rows. Forced
 * (LAYOUT_FORCE), a version newer than the tables gets the newest debug
 * offsets and facts as the nearest guess, but no object layout. 0 if the
 * version has a layout, LAYOUT_UNSUPPORTED if not.
 */
static int version_row(uint32_t version, unsigned flags, int free_threaded,
		       struct ver_row *r)
{
	const struct dbg_pos *newest = &dbg_positions[NELEM(dbg_positions) - 1];
	unsigned minor = PY_MINOR(version);
	size_t i;

	memset(r, 0, sizeof(*r));
	if (PY_MAJOR(version) != 3)
		return LAYOUT_UNSUPPORTED;
	/* free-threaded objects (their managed dicts) are not described */
	for (i = 0; !free_threaded && i < NELEM(obj_facts); i++)
		if (obj_facts[i].minor == minor)
			r->obj = &obj_facts[i];
	for (i = 0; i < NELEM(builtin); i++)
		if (PY_MINOR(builtin[i].version) == minor)
			r->builtin = &builtin[i];
	for (i = 0; i < NELEM(dbg_positions); i++)
		if (dbg_positions[i].minor == minor)
			r->pos = &dbg_positions[i];
	if (!r->pos && (flags & LAYOUT_FORCE) && minor > newest->minor)
		r->pos = newest;
	for (i = 0; r->pos && i < NELEM(extras); i++)
		if (extras[i].minor == r->pos->minor &&
		    extras[i].free_threaded == !!free_threaded)
			r->extra = &extras[i];
	return r->builtin || (r->pos && r->extra) ? LAYOUT_OK : LAYOUT_UNSUPPORTED;
}

/*
 * Where the exception in flight lives was checked in releases of the
 * version's own minor: a pre-release, or a newer version given the
 * nearest row (--force-version), has no --mode exception.
 */
static void exc_keep_verified(struct py_layout *l, const struct ver_row *r)
{
	unsigned minor = PY_MINOR(l->version);
	unsigned row = r->pos ? r->pos->minor : r->builtin ? PY_MINOR(r->builtin->version) : 0;

	if (PY_LEVEL(l->version) != PY_FINAL || row != minor)
		l->walk.off.ts_exc_info = NO;
}

static uint16_t max16(uint16_t a, uint16_t b)
{
	return a > b ? a : b;
}

static uint16_t min16(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

/* Read sizes that cover every field the walker takes from one read. */
static int finish(struct py_layout *l)
{
	struct tb_offsets *w = &l->walk.off;
	uint16_t fp2 = w->co_fp2 == NO ? 0 : w->co_fp2 + 4;

	/* Offsets near 0xffff would wrap the u16 sums below. */
	if (max16(max16(max16(w->ts_native_tid, w->ts_interp), max16(w->ts_next, w->ts_frame)),
		  max16(max16(w->fr_previous, w->fr_code), max16(w->fr_instr, w->fr_owner))) >
	    TB_READ_MAX ||
	    max16(max16(w->co_type, w->co_fp), w->co_fp2 == NO ? 0 : w->co_fp2) > TB_READ_MAX ||
	    (w->ts_exc != NO && w->ts_exc > TB_READ_MAX) ||
	    (w->ts_status != NO && w->ts_status > TB_READ_MAX) ||
	    (w->fr_entry != NO && w->fr_entry > TB_READ_MAX) ||
	    ((w->features & TB_F_TLBC) && w->fr_tlbc > TB_READ_MAX) ||
	    ((w->features & TB_F_CODE_TAG) && w->fr_tag > TB_READ_MAX))
		return LAYOUT_INCONSISTENT;
	w->ts_read = max16(max16(w->ts_native_tid, w->ts_interp),
			   max16(w->ts_next, w->ts_frame)) + 8;
	if (w->ts_exc != NO)
		w->ts_read = max16(w->ts_read, w->ts_exc + 8);
	if (w->ts_status != NO)
		w->ts_read = max16(w->ts_read, w->ts_status + 4);
	w->fr_read = max16(max16(w->fr_previous, w->fr_code), w->fr_instr) + 8;
	w->fr_read = max16(w->fr_read, w->fr_owner + 1);
	if (w->fr_entry != NO)
		w->fr_read = max16(w->fr_read, w->fr_entry + 1);
	if (w->features & TB_F_TLBC)
		w->fr_read = max16(w->fr_read, w->fr_tlbc + 4);
	if (w->features & TB_F_CODE_TAG)
		w->fr_read = max16(w->fr_read, w->fr_tag + 16);
	w->co_read = max16(max16(w->co_type + 8, w->co_fp + 4), fp2);
	if (w->co_fs_a != NO)
		w->co_read = max16(w->co_read, w->co_fs_a + 4);
	if (w->co_fs_b != NO)
		w->co_read = max16(w->co_read, w->co_fs_b + 4);
	w->co_fp_lo = w->co_fp2 == NO ? w->co_fp : min16(w->co_fp, w->co_fp2);
	w->co_fp_read = max16(w->co_fp + 4, fp2) - w->co_fp_lo;
	if (w->ts_read > TB_READ_MAX || w->fr_read > TB_READ_MAX ||
	    w->co_read > TB_READ_MAX)
		return LAYOUT_INCONSISTENT;
	return LAYOUT_OK;
}

uint32_t layout_debug_version(const void *buf, size_t len)
{
	uint64_t v;

	if (len < 16 || memcmp(buf, "xdebugpy", 8))
		return 0;
	memcpy(&v, (const uint8_t *)buf + 8, 8);
	return (uint32_t)v;
}

int layout_debug_free_threaded(const void *buf, size_t len)
{
	uint64_t v;

	if (!layout_debug_version(buf, len) || len < 24)
		return 0;
	memcpy(&v, (const uint8_t *)buf + 16, 8);
	return v != 0;
}

/* 1 if this version exports _Py_DebugOffsets (3.13+). */
static int layout_has_debug_offsets(uint32_t version)
{
	return PY_MAJOR(version) == 3 && PY_MINOR(version) >= 13;
}

/* A field offset must fit in a u16 and lie inside its struct. */
/* A field of `width` bytes must lie wholly inside its struct of `size`. */
static int field(const uint8_t *buf, uint16_t pos, uint64_t size, unsigned width, uint16_t *out)
{
	uint64_t v = load_u64(buf + pos);

	if (v > size || size - v < width || v > 0xfffe)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

static int check_version(uint32_t version, unsigned flags)
{
	if (PY_LEVEL(version) != PY_FINAL && !(flags & LAYOUT_FORCE))
		return LAYOUT_PRERELEASE;
	return LAYOUT_OK;
}

/* GIL and GC locations; 0 on success. The GIL struct is embedded in the
 * interpreter, but the interpreter may use another's: go through ceval.gil. */
static int gil_gc(const uint8_t *b, const struct dbg_pos *p, uint64_t is,
		  const struct ver_extra *x, struct py_layout *l)
{
	uint64_t gil = load_u64(b + p->is_gil_state), gc = load_u64(b + p->is_gc);
	uint64_t locked = load_u64(b + p->is_gil_locked), holder = load_u64(b + p->is_gil_holder);
	uint64_t coll = load_u64(b + p->gc_collecting);
	uint16_t ts_exc = x->ts_exc;
	int bad = 0;

	bad |= field(b, p->is_ceval_gil, is, 8, &l->gil_ptr_in_interp);
	if (locked < gil || holder < gil || locked - gil > 24 || holder - gil > 24 ||
	    gc + coll >= is || gc + coll > 0xfffe)
		return -1;
	l->gil_in_runtime = NO;
	l->walk.off.gil_locked = (uint16_t)(locked - gil);
	l->walk.off.gil_holder = (uint16_t)(holder - gil);
	l->gc_collecting = (uint16_t)(gc + coll);
	if (p->ts_exc != NO)
		bad |= field(b, p->ts_exc, load_u64(b + p->ts_size), 8, &ts_exc);
	l->walk.off.ts_exc = ts_exc;
	return bad;
}

/*
 * Thread-local bytecode (3.14t): where a frame says which copy it runs and
 * where the code object keeps the copies; a GIL build exports 0 for both.
 * 0 on success.
 */
static int tlbc_from_debug(const uint8_t *b, const struct dbg_pos *p, uint64_t fr,
			   uint64_t co, struct tb_offsets *w)
{
	if (p->fr_tlbc == NO || !load_u64(b + p->fr_tlbc) || !load_u64(b + p->co_tlbc))
		return 0;
	w->features |= TB_F_TLBC;
	return field(b, p->fr_tlbc, fr, 4, &w->fr_tlbc) | field(b, p->co_tlbc, co, 8, &w->co_tlbc);
}

/* The object fields 3.13+ export; a version without them leaves objects
 * undescribed (PYOBJ_NONE), which costs features, never the profile. */
static void obj_from_debug(const uint8_t *b, const struct dbg_pos *p,
			   const struct pyobj_layout *facts, struct pyobj_layout *o)
{
	uint64_t is = load_u64(b + p->is_size), fr = load_u64(b + p->fr_size), co = load_u64(b + p->co_size);
	uint16_t tu_size = 0;
	int bad = 0;

	if (facts)
		*o = *facts;
	else
		memset(o, 0, sizeof(*o));
	if (p->is_modules == NO || o->managed == PYOBJ_NONE)
		return;
	bad |= field(b, p->is_modules, is, 8, &o->interp_modules);
	bad |= field(b, p->ts_native_tid - 8, load_u64(b + p->ts_size), 8, &o->ts_thread_id);
	bad |= field(b, p->fr_localsplus, fr, 0, &o->fr_localsplus);
	bad |= field(b, p->co_argcount, co, 4, &o->co_argcount);
	bad |= field(b, p->co_lsnames, co, 8, &o->co_localsplusnames);
	bad |= field(b, p->co_lskinds, co, 8, &o->co_localspluskinds);
	bad |= field(b, p->tp_name, load_u64(b + p->tp_name - 8), 8, &o->tp_name);
	bad |= field(b, p->tp_flags, load_u64(b + p->tp_name - 8), 8, &o->tp_flags);
	bad |= field(b, p->tu_items, load_u64(b + p->tu_items - 8), 0, &o->tuple_items);
	bad |= field(b, p->tu_items + 8, load_u64(b + p->tu_items - 8), 8, &tu_size);
	bad |= field(b, p->li_items, load_u64(b + p->li_items - 8), 8, &o->list_items);
	bad |= field(b, p->li_size, load_u64(b + p->li_items - 8), 8, &o->var_size);
	bad |= field(b, p->di_keys, load_u64(b + p->di_keys - 8), 8, &o->dict_keys);
	bad |= field(b, p->di_values, load_u64(b + p->di_keys - 8), 8, &o->dict_values);
	bad |= field(b, p->fl_val, load_u64(b + p->fl_val - 8), 8, &o->float_val);
	bad |= field(b, p->lo_tag, load_u64(b + p->lo_tag - 8), 8, &o->long_size);
	bad |= field(b, p->lo_digit, load_u64(b + p->lo_tag - 8), 0, &o->long_digits);
	/* tuples and lists share one ob_size offset here */
	if (bad || tu_size != o->var_size)
		o->managed = PYOBJ_NONE;
}

/* _PyErr_StackItem: exc_value, then previous_item, in 3.11 to 3.15 (DWARF). */
#define SI_EXC_VALUE	0
#define SI_PREVIOUS	8

/*
 * --mode exception's offsets from the version's facts: only where the
 * exception being raised is known too, exc_info lies inside the thread
 * state and type objects are described (tp_flags).
 */
static void exc_offsets(const struct ver_extra *x, uint64_t ts_size, struct py_layout *l)
{
	struct tb_offsets *w = &l->walk.off;

	w->ts_exc_info = NO;
	w->si_exc_value = SI_EXC_VALUE;
	w->si_previous = SI_PREVIOUS;
	w->tp_flags = l->obj.tp_flags;
	if (x->ts_exc_info == NO || w->ts_exc == NO || (uint64_t)x->ts_exc_info + 8 > ts_size ||
	    l->obj.managed == PYOBJ_NONE || !w->tp_flags)
		return;
	w->ts_exc_info = x->ts_exc_info;
}

static int parse_debug(const uint8_t *b, const struct ver_row *r, struct py_layout *l)
{
	const struct dbg_pos *p = r->pos;
	const struct ver_extra *x = r->extra;
	struct tb_offsets *w = &l->walk.off;
	uint64_t is = load_u64(b + p->is_size), ts = load_u64(b + p->ts_size), fr = load_u64(b + p->fr_size);
	uint64_t co = load_u64(b + p->co_size), by = load_u64(b + p->by_size), st = load_u64(b + p->st_size);
	uint16_t ascii = 0;
	int bad = 0;

	w->rt_interp_head = (uint16_t)load_u64(b + p->rt_interp_head);
	bad |= w->rt_interp_head != load_u64(b + p->rt_interp_head);
	bad |= field(b, p->is_next, is, 8, &w->interp_next);
	bad |= field(b, p->is_threads_head, is, 8, &w->interp_threads_head);
	bad |= field(b, p->ts_next, ts, 8, &w->ts_next);
	bad |= field(b, p->ts_frame, ts, 8, &w->ts_frame);
	bad |= field(b, p->ts_native_tid, ts, 8, &w->ts_native_tid);
	bad |= field(b, p->ts_interp, ts, 8, &w->ts_interp);
	bad |= field(b, p->ts_status, ts, 4, &w->ts_status);
	bad |= field(b, p->fr_previous, fr, 8, &w->fr_previous);
	bad |= field(b, p->fr_code, fr, 8, &w->fr_code);
	bad |= field(b, p->fr_instr, fr, 8, &w->fr_instr);
	bad |= field(b, p->fr_owner, fr, 1, &w->fr_owner);
	bad |= field(b, p->co_adaptive, co, 0, &w->co_adaptive);
	bad |= field(b, p->co_filename, co, 8, &l->co_filename);
	bad |= field(b, p->co_name, co, 8, &l->co_name);
	bad |= field(b, p->co_qualname, co, 8, &l->co_qualname);
	bad |= field(b, p->co_linetable, co, 8, &l->co_linetable);
	bad |= field(b, p->co_firstlineno, co, 4, &l->co_firstlineno);
	bad |= field(b, p->ob_type, co, 8, &w->co_type);
	bad |= field(b, p->by_ob_size, by, 8, &l->str.bytes_size);
	bad |= field(b, p->by_sval, by, 0, &l->str.bytes_data);
	bad |= field(b, p->st_state, st, 4, &l->str.state);
	bad |= field(b, p->st_length, st, 8, &l->str.length);
	bad |= field(b, p->st_ascii_size, st, 0, &ascii);
	l->interp_code_gen = NO;
	l->code_gen_size = 0;
	if (p->is_code_gen != NO) {
		bad |= field(b, p->is_code_gen, is, 8, &l->interp_code_gen);
		l->code_gen_size = 8;
		w->features |= TB_F_CODE_DEATHS;	/* code_object_generation */
	} else if (x->func_version != NO && is >= x->interp_min && is <= x->interp_max) {
		l->interp_code_gen = x->func_version;
		l->code_gen_size = 4;
	}
	bad |= gil_gc(b, p, is, x, l);
	bad |= tlbc_from_debug(b, p, fr, co, w);
	obj_from_debug(b, p, r->obj, &l->obj);
	exc_offsets(x, ts, l);
	if (bad || co > LAYOUT_CODE_MAX || (uint64_t)x->co_version + 4 > co)
		return LAYOUT_INCONSISTENT;

	w->cframe_frame = NO;
	w->cframe_prev = NO;
	w->exec_mask = x->exec_mask;
	w->co_fp = x->co_version;
	w->co_fp2 = NO;
	w->owner_skip = x->owner_skip;
	w->owner_stop = x->owner_stop;
	w->owner_max = x->owner_max;
	w->features |= TB_F_BOTTOM_SHIM; /* entry frames (3.13, 3.14) or the sentinel (3.15) */
	w->fr_entry = NO;
	w->co_fs_a = w->co_fs_b = NO;	/* 3.13+ link a frame before it is current */
	l->co_size = (uint16_t)co;
	l->co_version = x->co_version;
	l->str.ascii_size = ascii;
	l->str.compact_size = ascii + x->compact_extra;
	if (p->st_compact_size != NO &&
	    field(b, p->st_compact_size, st, 0, &l->str.compact_size))
		return LAYOUT_INCONSISTENT;
	l->str.state_shift = x->state_shift;
	if (x->free_threaded)
		w->features |= TB_F_NO_GIL;
	return finish(l);
}

int layout_from_debug_offsets(const void *buf, size_t len, unsigned flags,
			      struct py_layout *out)
{
	const uint8_t *b = buf;
	struct ver_row r;
	uint32_t version = layout_debug_version(buf, len);
	int free_threaded, err;

	memset(out, 0, sizeof(*out));
	if (!version)
		return len < 16 ? LAYOUT_TRUNCATED : LAYOUT_BAD_COOKIE;
	out->version = version;
	if (!layout_has_debug_offsets(version))
		return LAYOUT_UNSUPPORTED;
	err = check_version(version, flags);
	if (err)
		return err;
	free_threaded = layout_debug_free_threaded(buf, len);
	if (version_row(version, flags, free_threaded, &r) || !r.pos)
		return free_threaded ? LAYOUT_FREE_THREADED : LAYOUT_UNSUPPORTED;
	if (len < r.pos->total)
		return LAYOUT_TRUNCATED;
	out->source = "_Py_DebugOffsets";
	err = parse_debug(b, &r, out);
	out->version = version;
	async_of(r.pos->minor, &out->async);
	out->async.bpf.coro_code = out->async.gen_iframe + out->walk.off.fr_code;
	exc_keep_verified(out, &r);
	return err;
}

/* The oldest and newest minor versions the tables above cover. */
static unsigned oldest_minor(void)
{
	return PY_MINOR(builtin[0].version);
}

static unsigned newest_minor(void)
{
	return dbg_positions[NELEM(dbg_positions) - 1].minor;
}

const char *layout_supported(void)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "3.%u to 3.%u", oldest_minor(), newest_minor());
	return buf;
}

/* 1 if the tables say where minor's exceptions are (struct ver_extra, or
 * a built-in row's walk offsets). */
static int exc_known(unsigned minor)
{
	size_t i;

	for (i = 0; i < NELEM(builtin); i++)
		if (PY_MINOR(builtin[i].version) == minor)
			return builtin[i].walk.off.ts_exc_info != NO;
	for (i = 0; i < NELEM(extras); i++)
		if (extras[i].minor == minor)
			return extras[i].ts_exc_info != NO;
	return 0;
}

const char *layout_exc_supported(void)
{
	static char buf[32];
	unsigned lo = 0, hi = 0, m;

	for (m = oldest_minor(); m <= newest_minor(); m++) {
		if (!exc_known(m))
			continue;
		if (!lo)
			lo = m;
		hi = m;
	}
	snprintf(buf, sizeof(buf), "3.%u to 3.%u", lo, hi);
	return buf;
}

static int too_old(uint32_t version)
{
	return PY_MAJOR(version) < 3 ||
	       (PY_MAJOR(version) == 3 && PY_MINOR(version) < oldest_minor());
}

/* The opcode tables of l's version (opcodes.gen.h), NULL if none. */
static const struct opnames_row *opnames_of(const struct py_layout *l)
{
	size_t i;

	for (i = 0; i < NELEM(opnames_rows); i++)
		if (opnames_rows[i].major == PY_MAJOR(l->version) &&
		    opnames_rows[i].minor == PY_MINOR(l->version))
			return &opnames_rows[i];
	return NULL;
}

unsigned layout_opcode_caches(const struct py_layout *l, unsigned op)
{
	const struct opnames_row *row = opnames_of(l);

	return row && op < 256 ? row->caches[op] : 0;
}

const char *layout_opcode_name(const struct py_layout *l, unsigned op, char *buf,
			       size_t len)
{
	const struct opnames_row *row = opnames_of(l);

	if (row && op < 256 && row->names[op])
		return row->names[op];
	/* A byte no table names: a newer build, or memory read mid-change. */
	snprintf(buf, len, "<op %u>", op);
	return buf;
}

int layout_no_gil(const struct py_layout *l)
{
	return !!(l->walk.off.features & TB_F_NO_GIL);
}

int layout_too_old(const struct py_layout *l)
{
	return too_old(l->version);
}

void layout_explain(const struct py_layout *l, int err, char *buf, size_t len)
{
	const char *name = l->name;

	if (err == LAYOUT_NO_EXCEPTIONS)
		snprintf(buf, len, "Python %s: --mode exception knows where the exception in flight is only in CPython %s releases (profile this one in another mode)",
			 name, layout_exc_supported());
	else if (err == LAYOUT_PRERELEASE)
		snprintf(buf, len, "Python %s is a pre-release, whose layout changes between builds (use --force-version to try the nearest known layout)",
			 name);
	else if (err == LAYOUT_FREE_THREADED)
		snprintf(buf, len, "Python %s is a free-threaded (no-GIL) build of a version whose free-threaded layout is not known (tachyon-bpf reads free-threaded 3.13t and 3.14t; use a build with the GIL)",
			 name);
	else if (err != LAYOUT_UNSUPPORTED)
		snprintf(buf, len, "Python %s: %s (tachyon-bpf reads %s; use --force-version to try the nearest known layout)",
			 name, layout_strerror(err), layout_supported());
	else if (too_old(l->version))
		snprintf(buf, len, "Python %s is too old: tachyon-bpf reads Python %s (run the program with one of those)",
			 name, layout_supported());
	else
		snprintf(buf, len, "Python %s is newer than this tachyon-bpf knows (it reads %s; use --force-version to try the nearest known layout)",
			 name, layout_supported());
}

int layout_from_version(uint32_t version, unsigned flags, struct py_layout *out)
{
	struct ver_row r;
	int err;

	memset(out, 0, sizeof(*out));
	out->version = version;
	if (PY_MAJOR(version) != 3)
		return LAYOUT_UNSUPPORTED;
	err = check_version(version, flags);
	if (err)
		return err;
	if (version_row(version, flags, 0, &r) || !r.builtin)
		return LAYOUT_UNSUPPORTED;
	*out = *r.builtin;
	out->version = version;
	if (r.obj)
		out->obj = *r.obj;
	exc_keep_verified(out, &r);
	return finish(out);
}

const char *layout_strerror(int err)
{
	switch (err) {
	case LAYOUT_OK:
		return "ok";
	case LAYOUT_BAD_COOKIE:
		return "no _Py_DebugOffsets cookie at _PyRuntime";
	case LAYOUT_UNSUPPORTED:
		return "no known layout for this version";
	case LAYOUT_TRUNCATED:
		return "_Py_DebugOffsets is shorter than this version's layout";
	case LAYOUT_FREE_THREADED:
		return "no known free-threaded (no-GIL) layout for this version";
	case LAYOUT_INCONSISTENT:
		return "_Py_DebugOffsets values do not fit this version's structures";
	case LAYOUT_PRERELEASE:
		return "pre-release layouts change between builds";
	case LAYOUT_NO_VERSION:
		return "nothing tells the interpreter's version";
	case LAYOUT_NO_EXCEPTIONS:
		return "where the exception in flight is was not checked for this version";
	}
	return "unknown layout error";
}

void py_version_str(uint32_t v, char *buf, size_t len)
{
	static const char level[16] = { [0xa] = 'a', [0xb] = 'b', [0xc] = 'c' };

	if (PY_LEVEL(v) == PY_FINAL || !level[PY_LEVEL(v)])
		snprintf(buf, len, "%u.%u.%u", PY_MAJOR(v), PY_MINOR(v), PY_MICRO(v));
	else
		snprintf(buf, len, "%u.%u.%u%s%u", PY_MAJOR(v), PY_MINOR(v), PY_MICRO(v),
			 PY_LEVEL(v) == 0xc ? "rc" : (char[]){ level[PY_LEVEL(v)], 0 },
			 PY_SERIAL(v));
}

/*
 * Symbols pyelf looks for. _Py_next_func_version is 3.12's code counter
 * (a hidden global: .symtab only); the markers tell an interpreter too old
 * for _PyRuntime by what it defines: Py_InitModule4_64 exists in Python 2
 * only, PyCapsule_New from 2.7 on.
 */
static const struct layout_symbol symbols[LAYOUT_SYM_NR] = {
	[LAYOUT_SYM_FUNC_VERSION] = { "_Py_next_func_version", 4, 0 },
	[LAYOUT_SYM_PY2_MODULE] = { "Py_InitModule4_64", 0, LAYOUT_SYM_MARKER },
	[LAYOUT_SYM_CAPSULE] = { "PyCapsule_New", 0, LAYOUT_SYM_MARKER },
};

#define SYM_BIT(s)	(1u << (s))

/* Most precise first: the first rule whose symbols are all found names it. */
static const struct {
	uint32_t found;
	const char *name;
} marker_rules[] = {
	{ SYM_BIT(LAYOUT_SYM_PY2_MODULE) | SYM_BIT(LAYOUT_SYM_CAPSULE), "2.7" },
	{ SYM_BIT(LAYOUT_SYM_PY2_MODULE), "2" },
};

const struct layout_symbol *layout_symbol(unsigned s)
{
	if (s >= LAYOUT_SYM_NR) {
		errno = EINVAL;
		return NULL;
	}
	return &symbols[s];
}

/*
 * "3.10" -> 0x030a00f0, "3.10.13" -> 0x030a0df0, "2" -> 0x020000f0 (assumed
 * final), with the name to show ("3.10", "3.10.13", "2"); 0 if text names
 * no version.
 */
static uint32_t version_from_text(const char *text, char *name, size_t len)
{
	unsigned major, minor, micro;
	int n;

	if (!text)
		return 0;
	n = sscanf(text, "%u.%u.%u", &major, &minor, &micro);
	if (n < 1 || !major || major > 0xff || (n >= 2 && minor > 0xff) ||
	    (n == 3 && micro > 0xff))
		return 0;
	if (n == 1) {
		snprintf(name, len, "%u", major);
		return (major << 24) | 0xf0;
	}
	if (n == 3) {
		snprintf(name, len, "%u.%u.%u", major, minor, micro);
		return (major << 24) | (minor << 16) | (micro << 8) | 0xf0;
	}
	snprintf(name, len, "%u.%u", major, minor);
	return (major << 24) | (minor << 16) | 0xf0;
}

uint32_t layout_symbols_wanted(const char *file_version)
{
	struct ver_row r;
	uint32_t want = 0, v;
	char name[16];
	unsigned s;

	for (s = 0; s < LAYOUT_SYM_NR; s++)
		if (symbols[s].flags & LAYOUT_SYM_MARKER)
			want |= SYM_BIT(s);
	v = version_from_text(file_version, name, sizeof(name));
	if (v && !version_row(v, 0, 0, &r) && r.builtin && r.builtin->code_gen_symbol)
		want |= SYM_BIT(LAYOUT_SYM_FUNC_VERSION);
	return want;
}

void layout_version_from_symbols(uint32_t found, char *buf, size_t len)
{
	size_t i;

	buf[0] = '\0';
	for (i = 0; i < NELEM(marker_rules); i++) {
		if ((found & marker_rules[i].found) == marker_rules[i].found) {
			snprintf(buf, len, "%s", marker_rules[i].name);
			return;
		}
	}
}

/* LAYOUT_EXCEPTIONS asked for what this layout does not know: refused. */
static int need_exceptions(const struct py_layout *l, unsigned flags, int err)
{
	if (!err && (flags & LAYOUT_EXCEPTIONS) && l->walk.off.ts_exc_info == NO)
		return LAYOUT_NO_EXCEPTIONS;
	return err;
}

/* Without debug offsets: Py_Version (3.11+), else the file's name. */
static int resolve_by_number(const struct layout_facts *f, unsigned flags,
			     struct py_layout *out)
{
	char name[sizeof(out->name)] = "";
	uint32_t version = f->py_version;
	int err;

	if (version)
		py_version_str(version, name, sizeof(name));
	else
		version = version_from_text(f->file_version, name, sizeof(name));
	if (!version) {
		memset(out, 0, sizeof(*out));
		return LAYOUT_NO_VERSION;
	}
	err = layout_from_version(version, flags, out);
	memcpy(out->name, name, sizeof(out->name));
	return need_exceptions(out, flags, err);
}

int layout_resolve(const struct layout_facts *f, unsigned flags, struct py_layout *out)
{
	uint32_t version = 0;
	int err;

	if (f->runtime)
		version = layout_debug_version(f->runtime, f->runtime_len);
	if (!version)
		return resolve_by_number(f, flags, out);
	err = layout_from_debug_offsets(f->runtime, f->runtime_len, flags, out);
	py_version_str(version, out->name, sizeof(out->name));
	if (layout_debug_free_threaded(f->runtime, f->runtime_len))
		strncat(out->name, "t", sizeof(out->name) - strlen(out->name) - 1);
	return need_exceptions(out, flags, err);
}

/*
 * The main interpreter: the last of the runtime's list, as each new one is
 * put at its head. 0 while the interpreter is not up.
 */
static uint64_t main_interp(const struct py_layout *l, layout_read_fn rd, void *ctx)
{
	const struct tb_walk *w = &l->walk;
	uint64_t interp = 0, next;
	int i;

	if (rd(ctx, w->addr.runtime_addr + w->off.rt_interp_head, &interp, sizeof(interp)))
		return 0;
	for (i = 0; interp && i < TB_MAX_INTERPS; i++) {
		if (rd(ctx, interp + w->off.interp_next, &next, sizeof(next)))
			return 0;
		if (!next)
			return interp;
		interp = next;
	}
	return 0;	/* more than the walker follows: no status, no counter */
}

/*
 * Absolute addresses of the GIL in use, of the GC's "collecting" flag and
 * of the code counter, for the main interpreter (not the newest one, which
 * is the list's head once a subinterpreter exists).
 */
int layout_bind_status(struct py_layout *l, const struct layout_addrs *a, layout_read_fn rd,
		       void *ctx)
{
	struct tb_walk *w = &l->walk;
	uint64_t interp = main_interp(l, rd, ctx), gil = 0;

	if (!interp)
		return 0;
	if (l->gil_in_runtime != NO)
		gil = w->addr.runtime_addr + l->gil_in_runtime;
	else if (rd(ctx, interp + l->gil_ptr_in_interp, &gil, sizeof(gil)))
		gil = 0;
	w->addr.gil_addr = gil;
	w->addr.gc_addr = !l->gc_collecting ? 0 :
		(l->gc_in_runtime ? w->addr.runtime_addr : interp) + l->gc_collecting;
	w->addr.code_gen_size = l->code_gen_size;
	if (l->interp_code_gen != NO)
		w->addr.code_gen_addr = interp + l->interp_code_gen;
	else if (l->code_gen_symbol)
		w->addr.code_gen_addr = a->sym[LAYOUT_SYM_FUNC_VERSION];
	w->addr.main_interp = l->code_gen_symbol ? 0 : interp;
	if (!w->addr.code_gen_addr)
		w->addr.code_gen_size = 0;
	return gil != 0;
}

int layout_bind(struct py_layout *l, const struct layout_addrs *a, layout_read_fn rd,
		void *ctx)
{
	l->walk.addr.runtime_addr = a->runtime;
	l->walk.addr.code_type_addr = a->code_type;
	return layout_bind_status(l, a, rd, ctx);
}
