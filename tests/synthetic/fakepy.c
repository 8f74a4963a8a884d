// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fakepy - a synthetic CPython 3.14 / 3.15 / 3.13t / 3.14t process for
 * tachyon-bpf tests.
 *
 * CPython 3.14 and 3.15 cannot be installed here, so this program lays out
 * what a profiler reads of such an interpreter in its own memory: a
 * _PyRuntime (in a `.PyRuntime` section) that starts with that version's
 * _Py_DebugOffsets, an interpreter, two thread states, frame chains in
 * datastack chunks, code objects with real location tables, str and bytes
 * objects. Then two threads spin in C, so every sample the profiler takes
 * sees one of a few known Python stacks, which `--expect` prints.
 *
 * usage: fakepy VERSION [--ready FILE]   run; print "READY <pid>" when ready
 *        fakepy VERSION --late-names MS  run, every code object's qualname
 *                                        unreadable (a negative length) until
 *                                        MS ms after READY
 *        fakepy VERSION --expect         print the expected collapsed stacks
 *        fakepy VERSION --expect-threads  the same, each line prefixed with
 *                                        the name (comm) of the thread that
 *                                        shows it and a tab
 *
 * VERSION: 3.14, 3.15, 3.13t, 3.14t (free-threaded); refusal cases: 3.16
 * (unknown), 3.15b1 (pre-release), 3.15t (free-threaded, no known layout).
 *
 * The free-threaded ones are laid out with the real offsets of CPython
 * 3.13.18t / 3.14.10t (their _Py_DebugOffsets and the few facts it does not
 * carry, from CPython's headers compiled with Py_GIL_DISABLED): the 32-byte
 * object header (ob_type at 24), 3.14t's one-bit _PyStackRef tag and
 * thread-local bytecode (each worker runs its own copy of every code
 * object's bytecode, as tlbc_index in its frames says), 3.14t's str state
 * with a full-byte `interned`. Their main thread and three workers
 * ("ft-worker-N") run in parallel, each with its own thread state and
 * datastack, each switching between its own two stacks every few ms.
 *
 * The 3.14/3.15 offsets below are our own choice, made to look like them but to
 * differ from 3.13's (and between 3.14 and 3.15), so a walker using any
 * other version's numbers reads garbage. Every value the _Py_DebugOffsets
 * declares is the offset we really use when building the objects.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- _Py_DebugOffsets: every member is a u64 (doc §2) ---- */

struct d_head {
	char cookie[8];			/* "xdebugpy", no NUL */
	uint64_t version;		/* PY_VERSION_HEX */
	uint64_t free_threaded;
};

struct d_runtime {
	uint64_t size, finalizing, interpreters_head;
};

struct d_interp {
	uint64_t size, id, next, threads_head, threads_main, gc, imports_modules,
		 sysdict, builtins, ceval_gil, gil_runtime_state, gil_enabled,
		 gil_locked, gil_holder, code_object_generation, tlbc_generation;
};

/* The 3.15 shape; 3.14 has a subset (struct d_tstate14). */
struct d_tstate {
	uint64_t size, prev, next, interp, current_frame, base_frame,
		 last_profiled_frame, last_profiled_frame_seq, thread_id,
		 native_thread_id, datastack_chunk, status, holds_gil,
		 gil_requested, current_exception, exc_state;
};

struct d_tstate14 {
	uint64_t size, prev, next, interp, current_frame, thread_id,
		 native_thread_id, datastack_chunk, status;
};

struct d_frame {
	uint64_t size, previous, executable, instr_ptr, localsplus, owner,
		 stackpointer, tlbc_index;
};

struct d_code {
	uint64_t size, filename, name, qualname, linetable, firstlineno,
		 argcount, localsplusnames, localspluskinds, co_code_adaptive,
		 co_tlbc;
};

struct d_pyobject {
	uint64_t size, ob_type;
};

struct d_type {
	uint64_t size, tp_name, tp_repr, tp_flags, tp_basicsize, tp_dictoffset;
};

struct d_type14 {
	uint64_t size, tp_name, tp_repr, tp_flags;
};

struct d_heap_type {
	uint64_t size, ht_cached_keys;
};

struct d_seq {			/* tuple and list */
	uint64_t size, ob_item, ob_size;
};

struct d_set {
	uint64_t size, used, table, mask;
};

struct d_dict {
	uint64_t size, ma_keys, ma_values;
};

struct d_float {
	uint64_t size, ob_fval;
};

struct d_long {
	uint64_t size, lv_tag, ob_digit;
};

struct d_bytes {
	uint64_t size, ob_size, ob_sval;
};

struct d_unicode {
	uint64_t size, state, length, asciiobject_size, compactunicodeobject_size;
};

struct d_unicode14 {
	uint64_t size, state, length, asciiobject_size;
};

struct d_gc {
	uint64_t size, collecting, frame, generation_stats_size, generation_stats;
};

struct d_gc14 {
	uint64_t size, collecting;
};

struct d_gen {
	uint64_t size, gi_name, gi_iframe, gi_frame_state;
};

struct d_llist {
	uint64_t next, prev;
};

struct d_debugger {
	uint64_t eval_breaker, remote_debugger_support, remote_debugging_enabled,
		 debugger_pending_call, debugger_script_path,
		 debugger_script_path_size;
};

/*
 * The 3.15 layout. It is a superset of 3.14's, so it also serves as the
 * version-neutral description of our objects for both versions.
 */
struct dbg15 {
	struct d_head h;
	struct d_runtime runtime_state;
	struct d_interp interpreter_state;
	struct d_tstate thread_state;
	struct { uint64_t exc_value; } err_stackitem;
	struct d_frame interpreter_frame;
	struct d_code code_object;
	struct d_pyobject pyobject;
	struct d_type type_object;
	struct d_heap_type heap_type_object;
	struct d_seq tuple_object;
	struct d_seq list_object;
	struct d_set set_object;
	struct d_dict dict_object;
	struct d_float float_object;
	struct d_long long_object;
	struct d_bytes bytes_object;
	struct d_unicode unicode_object;
	struct d_gc gc;
	struct d_gen gen_object;
	struct d_llist llist_node;
	struct d_debugger debugger_support;
};

struct dbg14 {
	struct d_head h;
	struct d_runtime runtime_state;
	struct d_interp interpreter_state;
	struct d_tstate14 thread_state;
	struct d_frame interpreter_frame;
	struct d_code code_object;
	struct d_pyobject pyobject;
	struct d_type14 type_object;
	struct d_seq tuple_object;
	struct d_seq list_object;
	struct d_set set_object;
	struct d_dict dict_object;
	struct d_float float_object;
	struct d_long long_object;
	struct d_bytes bytes_object;
	struct d_unicode14 unicode_object;
	struct d_gc14 gc;
	struct d_gen gen_object;
	struct d_llist llist_node;
	struct d_debugger debugger_support;
};

/* 3.13's shape, in both builds (Include/internal/pycore_runtime.h). */
struct d_interp13 {
	uint64_t size, id, next, threads_head, gc, imports_modules, sysdict,
		 builtins, ceval_gil, gil_runtime_state, gil_enabled, gil_locked,
		 gil_holder;
};

struct d_frame13 {
	uint64_t size, previous, executable, instr_ptr, localsplus, owner;
};

struct d_code13 {
	uint64_t size, filename, name, qualname, linetable, firstlineno,
		 argcount, localsplusnames, localspluskinds, co_code_adaptive;
};

struct dbg13 {
	struct d_head h;
	struct d_runtime runtime_state;
	struct d_interp13 interpreter_state;
	struct d_tstate14 thread_state;
	struct d_frame13 interpreter_frame;
	struct d_code13 code_object;
	struct d_pyobject pyobject;
	struct d_type14 type_object;
	struct d_seq tuple_object;
	struct d_seq list_object;
	struct d_dict dict_object;
	struct d_float float_object;
	struct d_long long_object;
	struct d_bytes bytes_object;
	struct d_unicode14 unicode_object;
	struct d_gc14 gc;
};

/* Positions from the doc's §2 table: a typo here would test the wrong thing. */
#define AT(s, f, v) _Static_assert(offsetof(struct s, f) == (v), #s "." #f)
_Static_assert(sizeof(struct dbg14) == 760, "3.14 _Py_DebugOffsets size");
_Static_assert(sizeof(struct dbg15) == 888, "3.15 _Py_DebugOffsets size");
_Static_assert(sizeof(struct dbg13) == 584, "3.13 _Py_DebugOffsets size");
AT(dbg13, interpreter_state.gil_holder, 144);
AT(dbg13, thread_state.status, 216);
AT(dbg13, interpreter_frame.owner, 264);
AT(dbg13, code_object.co_code_adaptive, 344);
AT(dbg13, pyobject.ob_type, 360);
AT(dbg13, gc.collecting, 576);
AT(dbg14, runtime_state.interpreters_head, 40);
AT(dbg14, interpreter_state.threads_main, 80);
AT(dbg14, interpreter_state.code_object_generation, 160);
AT(dbg14, thread_state.native_thread_id, 224);
AT(dbg14, interpreter_frame.owner, 288);
AT(dbg14, interpreter_frame.tlbc_index, 304);
AT(dbg14, code_object.co_code_adaptive, 384);
AT(dbg14, pyobject.ob_type, 408);
AT(dbg14, type_object.tp_flags, 440);
AT(dbg14, set_object.mask, 520);
AT(dbg14, bytes_object.ob_sval, 608);
AT(dbg14, unicode_object.asciiobject_size, 640);
AT(dbg14, gc.collecting, 656);
AT(dbg14, gen_object.gi_frame_state, 688);
AT(dbg14, llist_node.prev, 704);
AT(dbg14, debugger_support.debugger_script_path_size, 752);
AT(dbg15, thread_state.base_frame, 216);
AT(dbg15, thread_state.native_thread_id, 248);
AT(dbg15, thread_state.exc_state, 296);
AT(dbg15, err_stackitem.exc_value, 304);
AT(dbg15, interpreter_frame.owner, 352);
AT(dbg15, code_object.co_tlbc, 456);
AT(dbg15, pyobject.ob_type, 472);
AT(dbg15, type_object.tp_dictoffset, 520);
AT(dbg15, heap_type_object.ht_cached_keys, 536);
AT(dbg15, tuple_object.size, 544);
AT(dbg15, bytes_object.ob_sval, 704);
AT(dbg15, unicode_object.compactunicodeobject_size, 744);
AT(dbg15, gc.generation_stats, 784);
AT(dbg15, gen_object.gi_frame_state, 816);
AT(dbg15, llist_node.prev, 832);
AT(dbg15, debugger_support.debugger_script_path_size, 880);

/*
 * Facts the debug offsets do not carry (doc §7, §8, user/layout.c extras):
 * co_version is a u32 (at 92, 108 in free-threaded builds), and the frame
 * owner numbering.
 */
#define CO_VERSION		(V->co_version)
#define OWNER_THREAD		0
#define OWNER_GENERATOR		1
#define OWNER_CSTACK_313	3	/* 3.13: the entry frame */
#define OWNER_INTERPRETER	3	/* entry frame, 3.14 and 3.15 */
#define OWNER_CSTACK_314	4	/* 3.14 only */
#define OWNER_BASE_315		4	/* 3.15: the thread state's sentinel */
/* _PyStackRef bit 0 (3.14+; Py_TAG_DEFERRED in free-threaded 3.14t); 3.13's
 * f_executable is a plain pointer */
#define TAG_REFCNT		(V->minor >= 14 ? 1 : 0)

/* Fields the debug offsets do not name: where CPython has them, relative
 * to ones it does (hash after length, ob_shash after ob_size, ob_size after
 * the object header, return_offset just before owner). */
#define STR_HASH		(L->unicode_object.length + 8)
#define BYTES_SHASH		(L->bytes_object.ob_size + 8)
#define VAR_SIZE		(L->pyobject.size)
#define FR_RETURN_OFFSET	(L->interpreter_frame.owner - 2)
#define CHUNK_HDR		24	/* datastack chunk: previous, size, top */
#define CHUNK_SIZE		(16 << 10)
#define RUNTIME_SIZE		4096

static const struct dbg15 lay314 = {
	.runtime_state = { .size = RUNTIME_SIZE, .finalizing = 784,
			   .interpreters_head = 808 },
	.interpreter_state = {
		.size = 9440, .id = 7304, .next = 7296, .threads_head = 7376,
		.threads_main = 7384, .gc = 7432, .imports_modules = 7696,
		.sysdict = 7680, .builtins = 7688, .ceval_gil = 16,
		.gil_runtime_state = 7784, .gil_enabled = 0, .gil_locked = 7800,
		.gil_holder = 7792, .code_object_generation = 7416,
		.tlbc_generation = 0,	/* GIL build */
	},
	.thread_state = {
		.size = 856, .prev = 0, .next = 8, .interp = 16,
		.current_frame = 80, .thread_id = 168, .native_thread_id = 176,
		.datastack_chunk = 248, .status = 40,
	},
	.interpreter_frame = {
		.size = 88, .previous = 8, .executable = 0, .instr_ptr = 56,
		.localsplus = 80, .owner = 74, .stackpointer = 64,
		.tlbc_index = 0,	/* GIL build */
	},
	.code_object = {
		.size = 224, .filename = 120, .name = 128, .qualname = 136,
		.linetable = 144, .firstlineno = 68, .argcount = 52,
		.localsplusnames = 104, .localspluskinds = 112,
		.co_code_adaptive = 216, .co_tlbc = 0,	/* GIL build */
	},
	.pyobject = { .size = 16, .ob_type = 8 },
	.type_object = { .size = 416, .tp_name = 24, .tp_repr = 88, .tp_flags = 168 },
	.tuple_object = { .size = 32, .ob_item = 24, .ob_size = 16 },
	.list_object = { .size = 40, .ob_item = 24, .ob_size = 16 },
	.set_object = { .size = 200, .used = 24, .table = 40, .mask = 32 },
	.dict_object = { .size = 48, .ma_keys = 32, .ma_values = 40 },
	.float_object = { .size = 24, .ob_fval = 16 },
	.long_object = { .size = 32, .lv_tag = 16, .ob_digit = 24 },
	.bytes_object = { .size = 40, .ob_size = 16, .ob_sval = 32 },
	.unicode_object = { .size = 64, .state = 32, .length = 16,
			    .asciiobject_size = 40 },
	.gc = { .size = 248, .collecting = 208 },
	.gen_object = { .size = 168, .gi_name = 32, .gi_iframe = 80,
			.gi_frame_state = 75 },
	.llist_node = { .next = 0, .prev = 8 },
	.debugger_support = {
		.eval_breaker = 24, .remote_debugger_support = 336,
		.remote_debugging_enabled = 2440, .debugger_pending_call = 0,
		.debugger_script_path = 4, .debugger_script_path_size = 512,
	},
};

static const struct dbg15 lay315 = {
	.runtime_state = { .size = RUNTIME_SIZE, .finalizing = 912,
			   .interpreters_head = 936 },
	.interpreter_state = {
		.size = 9632, .id = 7432, .next = 7424, .threads_head = 7504,
		.threads_main = 7512, .gc = 7560, .imports_modules = 7848,
		.sysdict = 7832, .builtins = 7840, .ceval_gil = 24,
		.gil_runtime_state = 7912, .gil_enabled = 0, .gil_locked = 7928,
		.gil_holder = 7920, .code_object_generation = 7536,
		.tlbc_generation = 0,
	},
	.thread_state = {
		.size = 904, .prev = 0, .next = 8, .interp = 16,
		.current_frame = 80, .base_frame = 88, .last_profiled_frame = 96,
		.last_profiled_frame_seq = 104, .thread_id = 184,
		.native_thread_id = 192, .datastack_chunk = 272, .status = 40,
		.holds_gil = 112, .gil_requested = 116, .current_exception = 120,
		.exc_state = 128,
	},
	.err_stackitem = { .exc_value = 0 },
	.interpreter_frame = {
		.size = 96, .previous = 8, .executable = 0, .instr_ptr = 64,
		.localsplus = 88, .owner = 78, .stackpointer = 56,
		.tlbc_index = 0,
	},
	.code_object = {
		.size = 240, .filename = 128, .name = 136, .qualname = 144,
		.linetable = 152, .firstlineno = 72, .argcount = 56,
		.localsplusnames = 112, .localspluskinds = 120,
		.co_code_adaptive = 232, .co_tlbc = 0,
	},
	.pyobject = { .size = 16, .ob_type = 8 },
	.type_object = { .size = 416, .tp_name = 24, .tp_repr = 88, .tp_flags = 168,
			 .tp_basicsize = 32, .tp_dictoffset = 288 },
	.heap_type_object = { .size = 944, .ht_cached_keys = 888 },
	.tuple_object = { .size = 32, .ob_item = 24, .ob_size = 16 },
	.list_object = { .size = 40, .ob_item = 24, .ob_size = 16 },
	.set_object = { .size = 200, .used = 24, .table = 40, .mask = 32 },
	.dict_object = { .size = 48, .ma_keys = 32, .ma_values = 40 },
	.float_object = { .size = 24, .ob_fval = 16 },
	.long_object = { .size = 32, .lv_tag = 16, .ob_digit = 24 },
	.bytes_object = { .size = 40, .ob_size = 16, .ob_sval = 32 },
	/* One more field in the str header: data moves to 48 / 64. */
	.unicode_object = { .size = 72, .state = 32, .length = 16,
			    .asciiobject_size = 48, .compactunicodeobject_size = 64 },
	.gc = { .size = 272, .collecting = 208, .frame = 216,
		.generation_stats_size = 48, .generation_stats = 224 },
	.gen_object = { .size = 184, .gi_name = 40, .gi_iframe = 88,
			.gi_frame_state = 83 },
	.llist_node = { .next = 0, .prev = 8 },
	.debugger_support = {
		.eval_breaker = 24, .remote_debugger_support = 384,
		.remote_debugging_enabled = 2448, .debugger_pending_call = 0,
		.debugger_script_path = 4, .debugger_script_path_size = 512,
	},
};

/*
 * What 3.13t and 3.14t share: objects behind the same 32-byte header
 * (their values in both builds' _Py_DebugOffsets), and the generator
 * (3.13t's not exported; its size: room for the frame it embeds).
 */
#define FT_OBJECT_HEADS \
	.pyobject = { .size = 32, .ob_type = 24 }, \
	.type_object = { .size = 432, .tp_name = 40, .tp_repr = 104, .tp_flags = 184 }
#define FT_LIST \
	.list_object = { .size = 56, .ob_item = 40, .ob_size = 32 }
#define FT_OBJECTS \
	.dict_object = { .size = 64, .ma_keys = 48, .ma_values = 56 }, \
	.float_object = { .size = 40, .ob_fval = 32 }, \
	.long_object = { .size = 48, .lv_tag = 32, .ob_digit = 40 }, \
	.bytes_object = { .size = 56, .ob_size = 32, .ob_sval = 48 }, \
	.unicode_object = { .size = 80, .state = 48, .length = 32, .asciiobject_size = 56 }
#define FT_GEN \
	.gen_object = { .size = 176, .gi_name = 40, .gi_iframe = 88, .gi_frame_state = 83 }

/*
 * Free-threaded CPython 3.13.18t: its real _Py_DebugOffsets values (the
 * runtime's size aside: our _PyRuntime is RUNTIME_SIZE bytes), and for
 * what 3.13 does not export, the real offsets: threads.main 7352, the
 * generator's gi_name 40, gi_iframe 88, gi_frame_state 83 (its size: room
 * for the frame it embeds), the thread state's eval_breaker 24; 3.13's
 * frame has an int stacktop at 64, not a stackpointer.
 */
static const struct dbg15 lay313t = {
	.runtime_state = { .size = RUNTIME_SIZE, .finalizing = 608, .interpreters_head = 632 },
	.interpreter_state = {
		.size = 215616, .id = 7272, .next = 7264, .threads_head = 7344,
		.threads_main = 7352, .gc = 7400, .imports_modules = 7664,
		.sysdict = 7648, .builtins = 7656, .ceval_gil = 16,
		.gil_runtime_state = 7760, .gil_enabled = 0, .gil_locked = 7784,
		.gil_holder = 7776,
	},
	.thread_state = {
		.size = 312, .prev = 0, .next = 8, .interp = 16, .current_frame = 72,
		.thread_id = 152, .native_thread_id = 160, .datastack_chunk = 232,
		.status = 32,
	},
	.interpreter_frame = {
		.size = 80, .previous = 8, .executable = 0, .instr_ptr = 56,
		.localsplus = 72, .owner = 70, .stackpointer = 64,
	},
	.code_object = {
		.size = 224, .filename = 128, .name = 136, .qualname = 144,
		.linetable = 152, .firstlineno = 84, .argcount = 68,
		.localsplusnames = 112, .localspluskinds = 120,
		.co_code_adaptive = 216,
	},
	FT_OBJECT_HEADS,
	.tuple_object = { .size = 48, .ob_item = 40, .ob_size = 32 },
	FT_LIST,
	FT_OBJECTS,
	.gc = { .size = 248, .collecting = 200 },
	FT_GEN,
	.debugger_support = { .eval_breaker = 24 },
};

/* Free-threaded CPython 3.14.10t: its real _Py_DebugOffsets values. */
static const struct dbg15 lay314t = {
	.runtime_state = { .size = RUNTIME_SIZE, .finalizing = 784, .interpreters_head = 808 },
	.interpreter_state = {
		.size = 249976, .id = 7280, .next = 7272, .threads_head = 7344,
		.threads_main = 7360, .gc = 7408, .imports_modules = 7712,
		.sysdict = 7696, .builtins = 7704, .ceval_gil = 16,
		.gil_runtime_state = 7808, .gil_enabled = 0, .gil_locked = 7832,
		.gil_holder = 7824, .code_object_generation = 8024,
		.tlbc_generation = 17300,
	},
	.thread_state = {
		.size = 832, .prev = 0, .next = 8, .interp = 16, .current_frame = 72,
		.thread_id = 152, .native_thread_id = 160, .datastack_chunk = 232,
		.status = 32,
	},
	.interpreter_frame = {
		.size = 88, .previous = 8, .executable = 0, .instr_ptr = 56,
		.localsplus = 80, .owner = 78, .stackpointer = 64, .tlbc_index = 72,
	},
	.code_object = {
		.size = 240, .filename = 128, .name = 136, .qualname = 144,
		.linetable = 152, .firstlineno = 84, .argcount = 68,
		.localsplusnames = 112, .localspluskinds = 120,
		.co_code_adaptive = 232, .co_tlbc = 224,
	},
	FT_OBJECT_HEADS,
	.tuple_object = { .size = 56, .ob_item = 48, .ob_size = 32 },
	FT_LIST,
	.set_object = { .size = 216, .used = 40, .table = 56, .mask = 48 },
	FT_OBJECTS,
	.gc = { .size = 288, .collecting = 192 },
	FT_GEN,
	.llist_node = { .next = 0, .prev = 8 },
	.debugger_support = {
		.eval_breaker = 24, .remote_debugger_support = 304,
		.remote_debugging_enabled = 8108, .debugger_pending_call = 0,
		.debugger_script_path = 4, .debugger_script_path_size = 512,
	},
};

struct version {
	const char *arg;
	uint64_t hex;
	uint64_t free_threaded;
	int minor;			/* which _Py_DebugOffsets shape */
	const struct dbg15 *lay;
	uint16_t co_version;		/* offset of the u32 in PyCodeObject */
	uint8_t state_shift;		/* str state: kind at bit 2 + this */
	uint8_t workers;		/* threads besides main: 1, 3 in parallel */
};

static const struct version versions[] = {
	{ "3.14", 0x030E00F0, 0, 14, &lay314, 92, 0, 1 },
	{ "3.15", 0x030F00F0, 0, 15, &lay315, 92, 0, 1 },
	{ "3.13t", 0x030D12F0, 1, 13, &lay313t, 108, 0, 3 },
	{ "3.14t", 0x030E0AF0, 1, 14, &lay314t, 108, 6, 3 },
	/*
	 * Refusal cases, laid out like the nearest known version so that
	 * --force-version can profile them. 3.15t only sets free_threaded:
	 * its objects keep the GIL-build shapes, as it must be refused before
	 * anything past the header is read.
	 */
	{ "3.16", 0x031000F0, 0, 15, &lay315, 92, 0, 1 },
	{ "3.15b1", 0x030F00B1, 0, 15, &lay315, 92, 0, 1 },
	{ "3.15t", 0x030F00F0, 1, 15, &lay315, 92, 0, 1 },
};

/*
 * Laid out as a free-threaded build (3.13t, 3.14t): the 32-byte object
 * header. The refusal case 3.15t only says free-threaded in its header.
 */
#define FT	(L->pyobject.size == 32)
/* 3.14t: frames say which thread-local copy of the bytecode they run. */
#define TLBC	(FT && L->interpreter_frame.tlbc_index)

/* ---- the process image ---- */

/* Where a profiler looks first: a section holding only _PyRuntime. */
unsigned char _PyRuntime[RUNTIME_SIZE]
	__attribute__((section(".PyRuntime"), used, aligned(32))) = "xdebugpy";

/* Only its address matters: every code object's ob_type points here. */
unsigned char PyCode_Type[416] __attribute__((aligned(16)));

#define ARENA_SIZE	(2 << 20)	/* a free-threaded interpreter is 250 KB */
static uint8_t arena[ARENA_SIZE] __attribute__((aligned(4096)));
static size_t arena_used;

static const struct version *V;
static const struct dbg15 *L;

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fakepy: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

/* Zeroed, 16-aligned like CPython's allocator; never freed. */
static uint8_t *zalloc(uint64_t size)
{
	uint8_t *p;

	arena_used = (arena_used + 15) & ~(size_t)15;
	if (size > ARENA_SIZE - arena_used)
		die("arena full: raise ARENA_SIZE");
	p = arena + arena_used;
	arena_used += size;
	memset(p, 0, size);
	return p;
}

static uint64_t A(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void put64(void *base, uint64_t off, uint64_t v)
{
	memcpy((uint8_t *)base + off, &v, sizeof(v));
}

static void put32(void *base, uint64_t off, uint32_t v)
{
	memcpy((uint8_t *)base + off, &v, sizeof(v));
}

static void put16(void *base, uint64_t off, uint16_t v)
{
	memcpy((uint8_t *)base + off, &v, sizeof(v));
}

/* ---- objects ---- */

static uint8_t *type_type, *type_str, *type_bytes, *type_tuple, *type_none, *type_gen;
static uint8_t *none_obj, *empty_tuple, *empty_bytes;

/* ob_refcnt, as an immortal object has it */
#define IMMORTAL	0xc0000000ULL

/* free-threaded: ob_tid 0, ob_ref_local (u32 at 12) immortal */
#define FT_REF_LOCAL	12

static void obj_head(uint8_t *o, const void *type)
{
	if (FT)
		put32(o, FT_REF_LOCAL, UINT32_MAX);
	else
		put64(o, 0, IMMORTAL);
	put64(o, L->pyobject.ob_type, A(type));
}

static uint8_t *make_type(uint8_t *t, const char *name, uint64_t basicsize)
{
	if (!t)
		t = zalloc(L->type_object.size);
	obj_head(t, type_type ? type_type : t);	/* "type" is its own type */
	put64(t, L->type_object.tp_name, A(name));
	put64(t, L->type_object.tp_flags, 1UL << 9 | 1UL << 18);
	if (V->minor >= 15)
		put64(t, L->type_object.tp_basicsize, basicsize);
	return t;
}

static uint8_t *make_bytes(const void *data, size_t n)
{
	uint8_t *b = zalloc(L->bytes_object.ob_sval + n + 1);

	obj_head(b, type_bytes);
	put64(b, L->bytes_object.ob_size, n);
	put64(b, BYTES_SHASH, ~0ULL);
	memcpy(b + L->bytes_object.ob_sval, data, n);
	return b;
}

/* UTF-8 -> code points; the sources are ours, so no validation. */
static size_t utf8_decode(const char *s, uint32_t *cp, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (*p && n < max) {
		int extra = *p >= 0xf0 ? 3 : *p >= 0xe0 ? 2 : *p >= 0xc0 ? 1 : 0;
		uint32_t c = extra ? *p & (0x3f >> extra) : *p;

		for (p++; extra--; p++)
			c = c << 6 | (*p & 0x3f);
		cp[n++] = c;
	}
	return n;
}

/*
 * A compact str: ASCII data right after the ASCII header, other kinds
 * after the compact header (utf8_length, utf8 pointer). The state word's
 * upper 24 bits hold garbage, as real ones do (doc §3).
 */
static uint8_t *make_str(const char *utf8)
{
	uint32_t cp[256], max = 0, state;
	size_t n = utf8_decode(utf8, cp, 256), i;
	uint64_t ascii_sz = L->unicode_object.asciiobject_size, data_off;
	int kind, ascii;
	uint8_t *s;

	for (i = 0; i < n; i++)
		max = cp[i] > max ? cp[i] : max;
	ascii = max < 0x80;
	kind = max < 0x100 ? 1 : max < 0x10000 ? 2 : 4;
	data_off = ascii ? ascii_sz : ascii_sz + 16;
	s = zalloc(data_off + (n + 1) * kind);
	obj_head(s, type_str);
	put64(s, L->unicode_object.length, n);
	put64(s, STR_HASH, 0x5eed0000ULL + n);
	/* interned (bits 0-1, or all of byte 0 in 3.14t), then kind, compact,
	 * ascii, statically_allocated: state_shift bits higher in 3.14t */
	state = 1 | (kind << 2 | 1 << 5 | ascii << 6 | 1 << 7) << V->state_shift;
	state |= 0xa5c3e100u << V->state_shift;
	put32(s, L->unicode_object.state, state);
	put32(s, L->unicode_object.state + 4, 0xdeadbeef);	/* padding */
	for (i = 0; i < n; i++) {
		uint8_t *d = s + data_off + i * kind;

		if (kind == 1)
			*d = (uint8_t)cp[i];
		else if (kind == 2)
			put16(d, 0, (uint16_t)cp[i]);
		else
			put32(d, 0, cp[i]);
	}
	return s;
}

/* ---- location tables (doc §6) ---- */

enum lt_op { LT_END, LT_SHORT, LT_ONE, LT_NOCOL, LT_LONG, LT_NONE };

/*
 * One entry. LT_SHORT: a = column (< 80), b = width (< 16). LT_ONE: d =
 * line delta 0..2, a/b = columns. LT_NOCOL: d. LT_LONG: d, e = end-line
 * delta, a/b = column + 1 and end column + 1 (0 = none), as stored.
 */
struct lt_ent {
	uint8_t op, len;
	int16_t d;
	uint16_t e, a, b;
};

struct lt_buf {
	uint8_t b[128];
	size_t n;
	int units;
};

static void lt_byte(struct lt_buf *t, unsigned v)
{
	if (t->n == sizeof(t->b))
		die("location table too long for lt_buf");
	t->b[t->n++] = (uint8_t)v;
}

static void lt_varint(struct lt_buf *t, unsigned v)
{
	for (; v >= 64; v >>= 6)
		lt_byte(t, 0x40 | (v & 63));
	lt_byte(t, v);
}

static void lt_svarint(struct lt_buf *t, int v)
{
	lt_varint(t, v < 0 ? (unsigned)-v << 1 | 1 : (unsigned)v << 1);
}

static void lt_encode_one(struct lt_buf *t, const struct lt_ent *e)
{
	static const int code_base[] = {
		[LT_ONE] = 10, [LT_NOCOL] = 13, [LT_LONG] = 14, [LT_NONE] = 15,
	};
	int code = e->op == LT_SHORT ? e->a / 8 : code_base[e->op] +
		   (e->op == LT_ONE ? e->d : 0);

	lt_byte(t, 0x80 | code << 3 | (e->len - 1));
	t->units += e->len;
	switch (e->op) {
	case LT_SHORT:
		lt_byte(t, (e->a % 8) << 4 | e->b);
		break;
	case LT_ONE:
		lt_byte(t, e->a);
		lt_byte(t, e->b);
		break;
	case LT_NOCOL:
		lt_svarint(t, e->d);
		break;
	case LT_LONG:
		lt_svarint(t, e->d);
		lt_varint(t, e->e);
		lt_varint(t, e->a);
		lt_varint(t, e->b);
		break;
	}
}

static void lt_encode(struct lt_buf *t, const struct lt_ent *e)
{
	memset(t, 0, sizeof(*t));
	for (; e->op != LT_END; e++)
		lt_encode_one(t, e);
}

/* Our own reading of the spec tables, to catch a bad table early: -1 = none. */
static int lt_line_at(const struct lt_ent *e, int firstlineno, int idx)
{
	int line = firstlineno, addr = 0;

	for (; e->op != LT_END; addr += e->len, e++) {
		int no_line = e->op == LT_NONE;

		if (e->op == LT_ONE || e->op == LT_NOCOL || e->op == LT_LONG)
			line += e->d;
		if (idx >= addr && idx < addr + e->len)
			return no_line ? -1 : line;
	}
	return -1;
}

/* ---- our objects must agree with what we declare ---- */

/* interval, last_holder, locked, switch_number (free-threaded: enabled first) */
#define GIL_SIZE	(FT ? 40 : 32)

struct span {
	uint64_t off, len;
	const char *what;
};

#define SP(o, f, n)	{ (o)->f, n, #f }

/* Every field we write lies inside its object and overlaps no other. */
static void check_spans(uint64_t size, const struct span *s, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (s[i].len && s[i].off + s[i].len > size)
			die("field %s lies outside its object", s[i].what);
		for (j = 0; j < i; j++)
			if (s[i].off < s[j].off + s[j].len &&
			    s[j].off < s[i].off + s[i].len)
				die("field %s overlaps another one", s[i].what);
	}
}

static uint64_t dbg_size(void)
{
	if (V->minor == 13)
		return sizeof(struct dbg13);
	return V->minor >= 15 ? sizeof(struct dbg15) : sizeof(struct dbg14);
}

static void check_interp(void)
{
	const struct d_interp *o = &L->interpreter_state;
	uint64_t holder = FT ? 16 : 8;
	const struct span s[] = {
		SP(o, id, 8), SP(o, next, 8), SP(o, threads_head, 8),
		SP(o, threads_main, 8), SP(o, gc, L->gc.size),
		SP(o, imports_modules, 8), SP(o, sysdict, 8), SP(o, builtins, 8),
		SP(o, ceval_gil, 8), SP(o, gil_runtime_state, GIL_SIZE),
		/* 3.14+ only */
		SP(o, code_object_generation, V->minor >= 14 ? 8 : 0),
		SP(&L->debugger_support, remote_debugging_enabled, V->minor >= 14 ? 4 : 0),
	};
	/* holder and locked live in the GIL struct, at +8 and +16 (+16 and
	 * +24 after a free-threaded build's `enabled`) */
	check_spans(o->size, s, sizeof(s) / sizeof(s[0]));
	if (o->gil_holder != o->gil_runtime_state + holder ||
	    o->gil_locked != o->gil_runtime_state + holder + 8)
		die("GIL fields misplaced");
	if (L->gc.collecting + 4 > L->gc.size)
		die("gc.collecting outside the GC state");
}

static void check_tstate(void)
{
	const struct d_tstate *o = &L->thread_state;
	const struct d_debugger *d = &L->debugger_support;
	const struct span s[] = {
		SP(o, prev, 8), SP(o, next, 8), SP(o, interp, 8),
		SP(o, current_frame, 8), SP(o, thread_id, 8),
		SP(o, native_thread_id, 8), SP(o, datastack_chunk, 8),
		SP(o, status, 4), SP(d, eval_breaker, 8),
		SP(d, remote_debugger_support,
		   V->minor >= 14 ? 4 + d->debugger_script_path_size : 0),
		/* 3.15 only: length 0 elsewhere, so never checked */
		SP(o, base_frame, V->minor >= 15 ? 8 : 0),
		SP(o, last_profiled_frame, V->minor >= 15 ? 8 : 0),
		SP(o, last_profiled_frame_seq, V->minor >= 15 ? 8 : 0),
		SP(o, holds_gil, V->minor >= 15 ? 4 : 0),
		SP(o, gil_requested, V->minor >= 15 ? 4 : 0),
		SP(o, current_exception, V->minor >= 15 ? 8 : 0),
		SP(o, exc_state, V->minor >= 15 ? 16 : 0),
	};

	check_spans(o->size, s, sizeof(s) / sizeof(s[0]));
}

static void check_objects(void)
{
	const struct d_frame *f = &L->interpreter_frame;
	const struct d_code *c = &L->code_object;
	const struct d_gen *g = &L->gen_object;
	const struct d_unicode *u = &L->unicode_object;
	const struct span fs[] = {
		SP(f, executable, 8), SP(f, previous, 8), SP(f, instr_ptr, 8),
		SP(f, stackpointer, V->minor >= 14 ? 8 : 4),	/* 3.13: int stacktop */
		{ FR_RETURN_OFFSET, 2, "return_offset" },
		SP(f, owner, 1), SP(f, localsplus, 8), SP(f, tlbc_index, TLBC ? 4 : 0),
	};
	const struct span cs[] = {
		SP(&L->pyobject, ob_type, 8), { VAR_SIZE, 8, "ob_size" },
		SP(c, argcount, 4), SP(c, firstlineno, 4),
		{ CO_VERSION, 4, "co_version" }, SP(c, localsplusnames, 8),
		SP(c, localspluskinds, 8), SP(c, filename, 8), SP(c, name, 8),
		SP(c, qualname, 8), SP(c, linetable, 8), SP(c, co_code_adaptive, 8),
		SP(c, co_tlbc, TLBC ? 8 : 0),
	};
	const struct span gs[] = {
		SP(&L->pyobject, ob_type, 8), SP(g, gi_name, 8),
		SP(g, gi_frame_state, 1), SP(g, gi_iframe, f->size),
	};
	const struct span us[] = {	/* the header, before ASCII data */
		SP(&L->pyobject, ob_type, 8), SP(u, length, 8),
		{ STR_HASH, 8, "hash" }, SP(u, state, 8),
	};

	check_spans(f->size, fs, sizeof(fs) / sizeof(fs[0]));
	check_spans(c->size, cs, sizeof(cs) / sizeof(cs[0]));
	check_spans(g->size, gs, sizeof(gs) / sizeof(gs[0]));
	check_spans(u->asciiobject_size, us, sizeof(us) / sizeof(us[0]));
	if (L->runtime_state.finalizing < dbg_size() ||
	    L->runtime_state.interpreters_head < dbg_size())
		die("runtime fields overlap _Py_DebugOffsets");
}

/* ---- the Python program being "run" ---- */

enum {
	C_MODULE, C_MAIN, C_NAIVE, C_INNER, C_SHIM, C_BOOT, C_RUN, C_WORKER,
	C_STREAM, C_BOGUS, NCODES,
};

struct code_spec {
	const char *qualname, *name, *file;
	int firstlineno;
	struct lt_ent lt[8];
};

#define APP	"/srv/app/app.py"
/* fïlé_测试.py: UCS-2 */
#define UNI	"/srv/app/f\u00efl\u00e9_\u6d4b\u8bd5.py"
#define WORK	"/srv/app/workers.py"
#define THR	"/opt/fakepy/lib/python3/threading.py"

#define SHORT(n, c, w)		{ LT_SHORT, n, 0, 0, c, w }
#define ONE(n, d, c, ec)	{ LT_ONE, n, d, 0, c, ec }
#define NOCOL(n, d)		{ LT_NOCOL, n, d, 0, 0, 0 }
#define LONG(n, d, de, c1, e1)	{ LT_LONG, n, d, de, c1, e1 }
#define NONE(n)			{ LT_NONE, n, 0, 0, 0, 0 }

static const struct code_spec codes[NCODES] = {
	[C_MODULE] = { "<module>", "<module>", APP, 1, {
		SHORT(1, 0, 0), NOCOL(4, 2), ONE(3, 2, 0, 10), NONE(2),
		NOCOL(8, 36),		/* 2-byte svarint */
		SHORT(3, 0, 6), ONE(2, 1, 0, 4) } },
	[C_MAIN] = { "main", "main", APP, 5, {
		SHORT(1, 0, 0), ONE(4, 1, 4, 20), NONE(1),
		LONG(6, 1, 0, 5, 201),	/* 2-byte end column */
		NOCOL(2, -1),		/* negative delta */
		NOCOL(3, 3) } },
	[C_NAIVE] = { "Caf\u00e9.na\u00efve", "na\u00efve", UNI, 18, {
		SHORT(1, 0, 0), ONE(2, 2, 8, 30), SHORT(2, 70, 3),
		LONG(4, 0, 2, 9, 31),	/* a call spanning 3 lines */
		NONE(3), NOCOL(5, 4), ONE(1, 0, 4, 9) } },
#define INNER	"inner_g\u00e9n\u00e9r\u00e9"
	[C_INNER] = { INNER, INNER, UNI, 29, {
		SHORT(1, 0, 0), ONE(3, 1, 4, 12), ONE(8, 1, 8, 40),
		LONG(2, 2, 0, 0, 0) } },
	[C_SHIM] = { "<interpreter trampoline>", "<interpreter trampoline>",
		     "<shim>", 1, { SHORT(1, 0, 0) } },
	[C_BOOT] = { "Thread._bootstrap_inner", "_bootstrap_inner", THR, 1040, {
		SHORT(1, 0, 0), NOCOL(8, 33), ONE(2, 0, 8, 20) } },
	[C_RUN] = { "Thread.run", "run", THR, 1000, {
		SHORT(1, 0, 0), NOCOL(4, 12) } },
	[C_WORKER] = { "\u03bb_worker", "\u03bb_worker", WORK, 10, {
		SHORT(1, 0, 0), NOCOL(6, 2), ONE(5, 2, 4, 30) } },
	[C_STREAM] = { "stream_\U0001F40D", "stream_\U0001F40D", WORK, 3, {
		SHORT(1, 0, 0), SHORT(1, 0, 0), SHORT(1, 0, 0), NONE(2),
		NOCOL(4, 3) } },
	[C_BOGUS] = { "must_not_appear", "must_not_appear", "/srv/app/bogus.py", 99, {
		SHORT(1, 0, 0) } },
};

/* One link of a frame chain, listed root first. */
enum link_kind {
	K_END,
	K_PY,		/* owner THREAD, untagged f_executable */
	K_PYT,		/* owner THREAD, tagged f_executable */
	K_GEN,		/* owner GENERATOR, inside a generator object */
	K_ENTRY,	/* owner INTERPRETER, f_executable = None */
	K_CSTACK,	/* 3.14 owner CSTACK, holding a real code object */
};

struct link {
	uint8_t kind, code;
	int16_t idx, line;	/* instruction index and the line it maps to */
};

#define PY(c, i, l)	{ K_PY, c, i, l }
#define PYT(c, i, l)	{ K_PYT, c, i, l }
#define GEN(c, i, l)	{ K_GEN, c, i, l }
#define ENTRY		{ K_ENTRY, 0, 0, 0 }
#define CSTACK		{ K_CSTACK, C_SHIM, 0, 1 }
#define END		{ K_END, 0, 0, 0 }

/* Main thread, three phases: what tstate->current_frame cycles through. */
static const struct link main_a[] = {
	ENTRY, PY(C_MODULE, 19, 41), PYT(C_MAIN, 9, 7), ENTRY, CSTACK,
	PYT(C_NAIVE, 7, 20), PY(C_INNER, 10, 31), END,
};

static const struct link main_b[] = {
	ENTRY, PY(C_MODULE, 19, 41), PYT(C_MAIN, 9, 7), ENTRY,
	PYT(C_NAIVE, 15, 24), END,
};

/* inner_généré just pushed: instr_ptr at its first instruction. */
static const struct link main_c[] = {
	ENTRY, PY(C_MODULE, 19, 41), PY(C_MAIN, 15, 9), PYT(C_INNER, 0, 29), END,
};

/* Second thread: a generator resumed by FOR_ITER, so no entry frame. */
static const struct link worker[] = {
	ENTRY, PY(C_BOOT, 6, 1073), PYT(C_RUN, 3, 1012), ENTRY,
	PYT(C_WORKER, 8, 14), GEN(C_STREAM, 6, 6), END,
};

static const struct link *const main_phases[] = { main_a, main_b, main_c };
#define NPHASES	(sizeof(main_phases) / sizeof(main_phases[0]))

/*
 * Free-threaded builds: three workers besides main, in parallel, each
 * switching between two stacks of its own (the first worker's first is
 * `worker`, the one worker of the GIL builds, which does not switch).
 */
static const struct link worker1_b[] = {
	ENTRY, PY(C_BOOT, 6, 1073), PYT(C_RUN, 3, 1012), ENTRY, PYT(C_WORKER, 3, 12), END,
};

static const struct link worker2_a[] = {
	ENTRY, PY(C_BOOT, 6, 1073), PYT(C_RUN, 3, 1012), ENTRY,
	PYT(C_NAIVE, 7, 20), PY(C_INNER, 10, 31), END,
};

static const struct link worker2_b[] = {
	ENTRY, PY(C_BOOT, 6, 1073), PYT(C_RUN, 3, 1012), ENTRY, PYT(C_NAIVE, 15, 24), END,
};

static const struct link worker3_a[] = {
	ENTRY, PY(C_BOOT, 9, 1073), PY(C_RUN, 1, 1012), ENTRY, PYT(C_STREAM, 6, 6), END,
};

static const struct link worker3_b[] = {
	ENTRY, PY(C_BOOT, 6, 1073), PYT(C_RUN, 3, 1012), ENTRY,
	PYT(C_MAIN, 15, 9), PYT(C_INNER, 0, 29), END,
};

#define MAX_WORKERS	3
static const struct link *const worker_chains[MAX_WORKERS][2] = {
	{ worker, worker1_b }, { worker2_a, worker2_b }, { worker3_a, worker3_b },
};

/* Stacks worker w cycles through: the GIL builds' one worker keeps one. */
static unsigned worker_nchains(void)
{
	return FT ? 2 : 1;
}

static uint8_t *code_objs[NCODES];
/* 3.14t: each code object's copies of its bytecode, by tlbc index. */
static uint8_t *tlbc_copy[NCODES][1 + MAX_WORKERS];

static void check_tables(void)
{
	const struct link *const chains[] = {
		main_a, main_b, main_c, worker, worker1_b, worker2_a, worker2_b,
		worker3_a, worker3_b,
	};
	size_t i;

	for (i = 0; i < sizeof(chains) / sizeof(chains[0]); i++) {
		const struct link *k;

		for (k = chains[i]; k->kind != K_END; k++) {
			const struct code_spec *c = &codes[k->code];

			if (k->kind == K_ENTRY)
				continue;
			if (lt_line_at(c->lt, c->firstlineno, k->idx) != k->line)
				die("%s: location table and link disagree",
				    c->qualname);
		}
	}
}

/*
 * 3.14t: co_tlbc -> _PyCodeArray { Py_ssize_t size; char *entries[] }:
 * entry 0 is the code object's own bytecode (main's), entry k worker k's
 * copy, specialised its own way (other bytes, the same instructions).
 */
static void make_tlbc(int i, uint8_t *co, int units)
{
	uint64_t n = 1 + V->workers, k;
	uint8_t *arr = zalloc(8 + 8 * n);

	put64(arr, 0, n);
	tlbc_copy[i][0] = co + L->code_object.co_code_adaptive;
	for (k = 0; k < n; k++) {
		if (k) {
			tlbc_copy[i][k] = zalloc(2 * units + 8);
			memcpy(tlbc_copy[i][k], tlbc_copy[i][0], 2 * units);
			tlbc_copy[i][k][0] ^= (uint8_t)(k << 4);
		}
		put64(arr, 8 + 8 * k, A(tlbc_copy[i][k]));
	}
	put64(co, L->code_object.co_tlbc, A(arr));
}

static uint8_t *make_code(int i)
{
	const struct code_spec *c = &codes[i];
	const struct d_code *o = &L->code_object;
	struct lt_buf t;
	uint8_t *co;
	int u;

	lt_encode(&t, c->lt);
	co = zalloc(o->co_code_adaptive + 2 * t.units + 8);
	obj_head(co, PyCode_Type);
	put64(co, VAR_SIZE, t.units);	/* ob_size */
	put32(co, o->argcount, 1);
	put32(co, o->firstlineno, c->firstlineno);
	/* Nonzero and distinct per version: keys the profiler's caches. */
	put32(co, CO_VERSION, (uint32_t)(V->minor * 100 + i + 1));
	put64(co, o->localsplusnames, A(empty_tuple));
	put64(co, o->localspluskinds, A(empty_bytes));
	put64(co, o->filename, A(make_str(c->file)));
	put64(co, o->name, A(make_str(c->name)));
	put64(co, o->qualname, A(make_str(c->qualname)));
	put64(co, o->linetable, A(make_bytes(t.b, t.n)));
	for (u = 0; u < t.units; u++) {		/* opcode, oparg: any bytes */
		co[o->co_code_adaptive + 2 * u] = (uint8_t)(40 + u % 80);
		co[o->co_code_adaptive + 2 * u + 1] = (uint8_t)u;
	}
	if (TLBC)
		make_tlbc(i, co, t.units);
	return co;
}

/* ---- interpreter, threads, frames ---- */

struct thread {
	uint8_t *ts;
	uint8_t *chunk;		/* datastack chunk */
	uint64_t top;		/* first free byte in the chunk */
	uint64_t base;		/* 3.15 sentinel base frame; 0 before 3.15 */
	uint32_t tlbc;		/* 3.14t: its copy of the bytecode; 0 = main's */
};

static uint8_t *interp;
static struct thread threads[1 + MAX_WORKERS];	/* main first */
static uint64_t phase_leaf[NPHASES];

#define NSLOTS	4		/* localsplus slots per frame */

static uint8_t *push_raw(struct thread *t)
{
	uint64_t size = L->interpreter_frame.localsplus + 8 * NSLOTS;
	uint8_t *f = t->chunk + t->top;

	if (t->top + size > CHUNK_SIZE)
		die("datastack chunk full: raise CHUNK_SIZE");
	t->top += size;
	put64(t->chunk, 16, A(t->chunk + t->top));	/* chunk->top */
	return f;
}

static void frame_fill(const struct thread *t, uint8_t *f, uint64_t prev, uint64_t exec,
		       uint64_t instr, int owner)
{
	const struct d_frame *o = &L->interpreter_frame;

	if (TLBC)	/* every frame a thread pushes, as CPython does */
		put32(f, o->tlbc_index, t->tlbc);

	put64(f, o->previous, prev);
	put64(f, o->executable, exec);
	put64(f, o->instr_ptr, instr);
	if (V->minor >= 14)
		put64(f, o->stackpointer, A(f + o->localsplus + 8));
	else
		put32(f, o->stackpointer, 1);	/* 3.13's stacktop */
	put16(f, FR_RETURN_OFFSET, 2);
	f[o->owner] = (uint8_t)owner;
}

static uint64_t instr_of(const struct thread *t, int code, int idx)
{
	if (t->tlbc)
		return A(tlbc_copy[code][t->tlbc] + 2 * idx);
	return A(code_objs[code] + L->code_object.co_code_adaptive + 2 * idx);
}

/* A generator object running its frame: the frame is embedded in it. */
static uint8_t *gen_frame(int code)
{
	const struct d_gen *g = &L->gen_object;
	uint8_t *gen = zalloc(g->size);

	obj_head(gen, type_gen);
	put64(gen, g->gi_name, A(make_str(codes[code].name)));
	gen[g->gi_frame_state] = 0;	/* FRAME_EXECUTING */
	return gen + g->gi_iframe;
}

/* Static bytes an entry frame's instr_ptr points at, like CPython's trampoline. */
static const uint8_t trampoline[8] __attribute__((aligned(8))) = { 0 };

static uint64_t push_link(struct thread *t, uint64_t prev, const struct link *k)
{
	uint64_t none = A(none_obj) | TAG_REFCNT, code = A(code_objs[k->code]);
	uint8_t *f;

	switch (k->kind) {
	case K_ENTRY:
		f = push_raw(t);
		frame_fill(t, f, prev, none, A(trampoline),
			   V->minor == 13 ? OWNER_CSTACK_313 : OWNER_INTERPRETER);
		return A(f);
	case K_CSTACK:
		if (V->minor != 14)	/* 3.13 and 3.15 have no such frame */
			return prev;
		f = push_raw(t);
		frame_fill(t, f, prev, code, instr_of(t, k->code, k->idx), OWNER_CSTACK_314);
		return A(f);
	case K_GEN:
		f = gen_frame(k->code);
		frame_fill(t, f, prev, code | TAG_REFCNT, instr_of(t, k->code, k->idx),
			   OWNER_GENERATOR);
		return A(f);
	default:
		f = push_raw(t);
		if (k->kind == K_PYT)
			code |= TAG_REFCNT;
		frame_fill(t, f, prev, code, instr_of(t, k->code, k->idx), OWNER_THREAD);
		return A(f);
	}
}

/* Build a chain on the thread's datastack; returns its leaf. */
static uint64_t build_chain(struct thread *t, const struct link *k)
{
	uint64_t f = t->base;

	for (; k->kind != K_END; k++)
		f = push_link(t, f, k);
	return f;
}

/*
 * 3.15: every chain ends at the thread state's base frame (owner 4). Ours
 * has a `previous` that leads on to a frame with a real code object, which
 * a walker that does not stop at the sentinel would report.
 */
static void make_base_frame(struct thread *t)
{
	static const struct link bogus = PY(C_BOGUS, 0, 99);
	uint64_t after;
	uint8_t *f;

	if (V->minor < 15)
		return;
	after = push_link(t, 0, &bogus);
	f = push_raw(t);
	frame_fill(t, f, after, A(none_obj) | TAG_REFCNT, A(trampoline), OWNER_BASE_315);
	t->base = A(f);
}

static void make_thread(struct thread *t, uint64_t next)
{
	const struct d_tstate *o = &L->thread_state;

	t->ts = zalloc(o->size);
	t->chunk = zalloc(CHUNK_SIZE);
	t->top = CHUNK_HDR;
	put64(t->chunk, 8, CHUNK_SIZE);
	put64(t->ts, o->next, next);
	put64(t->ts, o->interp, A(interp));
	put64(t->ts, o->datastack_chunk, A(t->chunk));
	put32(t->ts, o->status, 0x13);	/* initialized, bound, active (bit 4) */
	if (next)
		put64((void *)(uintptr_t)next, o->prev, A(t->ts));
	make_base_frame(t);
	if (V->minor >= 15)
		put64(t->ts, o->base_frame, t->base);
}

static void make_interp(void)
{
	const struct d_interp *o = &L->interpreter_state;

	interp = zalloc(o->size);
	put64(interp, o->id, 0);
	put64(interp, o->next, 0);
	if (V->minor >= 14)
		put64(interp, o->code_object_generation, 42);
	put64(interp, o->ceval_gil, A(interp + o->gil_runtime_state));
	put64(_PyRuntime, L->runtime_state.interpreters_head, A(interp));
	put64(_PyRuntime, L->runtime_state.finalizing, 0);
}

static void make_types(void)
{
	type_type = make_type(NULL, "type", L->type_object.size);
	type_str = make_type(NULL, "str", L->unicode_object.size);
	type_bytes = make_type(NULL, "bytes", L->bytes_object.size);
	type_tuple = make_type(NULL, "tuple", L->tuple_object.size);
	type_none = make_type(NULL, "NoneType", L->pyobject.size);
	type_gen = make_type(NULL, "generator", L->gen_object.size);
	make_type(PyCode_Type, "code", L->code_object.size);
	none_obj = zalloc(L->pyobject.size);
	obj_head(none_obj, type_none);
	empty_tuple = zalloc(L->tuple_object.size);
	obj_head(empty_tuple, type_tuple);
	empty_bytes = make_bytes("", 0);
}

/* ---- _Py_DebugOffsets ---- */

static void dbg_head(struct d_head *h)
{
	memcpy(h->cookie, "xdebugpy", 8);
	h->version = V->hex;
	h->free_threaded = V->free_threaded;
}

static void emit_dbg15(const struct dbg15 *l)
{
	struct dbg15 d = *l;

	dbg_head(&d.h);
	memcpy(_PyRuntime, &d, sizeof(d));
}

/* The 3.14 shape of the layout, for 3.14 itself and to derive 3.13's. */
static void to_dbg14(const struct dbg15 *l, struct dbg14 *d)
{
	const struct d_tstate *t = &l->thread_state;

	*d = (struct dbg14){
		.runtime_state = l->runtime_state,
		.interpreter_state = l->interpreter_state,
		.thread_state = {
			.size = t->size, .prev = t->prev, .next = t->next,
			.interp = t->interp, .current_frame = t->current_frame,
			.thread_id = t->thread_id,
			.native_thread_id = t->native_thread_id,
			.datastack_chunk = t->datastack_chunk, .status = t->status,
		},
		.interpreter_frame = l->interpreter_frame,
		.code_object = l->code_object,
		.pyobject = l->pyobject,
		.type_object = {
			.size = l->type_object.size, .tp_name = l->type_object.tp_name,
			.tp_repr = l->type_object.tp_repr,
			.tp_flags = l->type_object.tp_flags,
		},
		.tuple_object = l->tuple_object,
		.list_object = l->list_object,
		.set_object = l->set_object,
		.dict_object = l->dict_object,
		.float_object = l->float_object,
		.long_object = l->long_object,
		.bytes_object = l->bytes_object,
		.unicode_object = {
			.size = l->unicode_object.size,
			.state = l->unicode_object.state,
			.length = l->unicode_object.length,
			.asciiobject_size = l->unicode_object.asciiobject_size,
		},
		.gc = { .size = l->gc.size, .collecting = l->gc.collecting },
		.gen_object = l->gen_object,
		.llist_node = l->llist_node,
		.debugger_support = l->debugger_support,
	};
	dbg_head(&d->h);
}

static void emit_dbg14(const struct dbg15 *l)
{
	struct dbg14 d;

	to_dbg14(l, &d);
	memcpy(_PyRuntime, &d, sizeof(d));
}

/* 3.13: 3.14's shape less threads_main, code_object_generation,
 * tlbc_generation, stackpointer, tlbc_index, co_tlbc and what follows gc. */
static void emit_dbg13(const struct dbg15 *l)
{
	const struct d_interp *i = &l->interpreter_state;
	const struct d_frame *f = &l->interpreter_frame;
	const struct d_code *c = &l->code_object;
	struct dbg14 e;
	struct dbg13 d;

	to_dbg14(l, &e);
	d = (struct dbg13){
		.h = e.h, .runtime_state = e.runtime_state,
		.interpreter_state = {
			.size = i->size, .id = i->id, .next = i->next,
			.threads_head = i->threads_head, .gc = i->gc,
			.imports_modules = i->imports_modules, .sysdict = i->sysdict,
			.builtins = i->builtins, .ceval_gil = i->ceval_gil,
			.gil_runtime_state = i->gil_runtime_state,
			.gil_enabled = i->gil_enabled, .gil_locked = i->gil_locked,
			.gil_holder = i->gil_holder,
		},
		.thread_state = e.thread_state,
		.interpreter_frame = {
			.size = f->size, .previous = f->previous, .executable = f->executable,
			.instr_ptr = f->instr_ptr, .localsplus = f->localsplus,
			.owner = f->owner,
		},
		.code_object = {
			.size = c->size, .filename = c->filename, .name = c->name,
			.qualname = c->qualname, .linetable = c->linetable,
			.firstlineno = c->firstlineno, .argcount = c->argcount,
			.localsplusnames = c->localsplusnames,
			.localspluskinds = c->localspluskinds,
			.co_code_adaptive = c->co_code_adaptive,
		},
		.pyobject = e.pyobject, .type_object = e.type_object,
		.tuple_object = e.tuple_object, .list_object = e.list_object,
		.dict_object = e.dict_object, .float_object = e.float_object,
		.long_object = e.long_object, .bytes_object = e.bytes_object,
		.unicode_object = e.unicode_object, .gc = e.gc,
	};
	memcpy(_PyRuntime, &d, sizeof(d));
}

/* ---- expected output ---- */

static void print_chain(const struct link *k)
{
	const char *sep = "";

	for (; k->kind != K_END; k++) {
		const struct code_spec *c = &codes[k->code];

		if (k->kind == K_ENTRY || k->kind == K_CSTACK)
			continue;
		printf("%s%s (%s:%d)", sep, c->qualname, c->file, k->line);
		sep = ";";
	}
	putchar('\n');
}

/* The thread names (comm) a profiler sees: main keeps the program's. */
#define MAIN_COMM	"fakepy"

static void worker_comm(unsigned w, char *buf, size_t len)
{
	if (FT)
		snprintf(buf, len, "ft-worker-%u", w + 1);
	else
		snprintf(buf, len, "%s", MAIN_COMM);
}

/* Every stack, each line prefixed with its thread's name if `threads`. */
static void print_expected(int threads)
{
	char comm[16];
	unsigned w, c;
	size_t i;

	for (i = 0; i < NPHASES; i++) {
		if (threads)
			printf("%s\t", MAIN_COMM);
		print_chain(main_phases[i]);
	}
	for (w = 0; w < V->workers; w++) {
		for (c = 0; c < worker_nchains(); c++) {
			worker_comm(w, comm, sizeof(comm));
			if (threads)
				printf("%s\t", comm);
			print_chain(worker_chains[w][c]);
		}
	}
}

/* ---- running ---- */

static volatile int worker_ready;
static uint64_t worker_leaf[MAX_WORKERS][2];

static void spin(unsigned long n)
{
	volatile unsigned long i;

	for (i = 0; i < n; i++)
		;
}

static void set_current(struct thread *t, uint64_t frame)
{
	/* One aligned store: a sample sees the old chain or the new one. */
	__atomic_store_n((uint64_t *)(t->ts + L->thread_state.current_frame),
			 frame, __ATOMIC_RELEASE);
}

static void claim_thread(struct thread *t)
{
	put64(t->ts, L->thread_state.native_thread_id, (uint64_t)gettid());
	put64(t->ts, L->thread_state.thread_id, (uint64_t)pthread_self());
}

/*
 * Free-threaded builds: thread i (main 0, worker w at 1 + w) runs on the
 * i-th CPU it may use, round robin, so with two CPUs both run Python at
 * once and each CPU's samples come from threads of its own.
 */
static void pin(unsigned i)
{
	cpu_set_t allowed, one;
	unsigned n, cpu, seen = 0;

	if (!FT || sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	n = (unsigned)CPU_COUNT(&allowed);
	for (cpu = 0; n && cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || seen++ != i % n)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
		return;
	}
}

/* Worker w (threads[1 + w]): its stacks in turn, every few ms. */
static void *worker_main(void *arg)
{
	unsigned w = (unsigned)(uintptr_t)arg, c;
	struct thread *t = &threads[1 + w];
	char comm[16];

	worker_comm(w, comm, sizeof(comm));
	if (FT)
		pthread_setname_np(pthread_self(), comm);
	pin(1 + w);
	claim_thread(t);
	set_current(t, worker_leaf[w][0]);
	__atomic_add_fetch(&worker_ready, 1, __ATOMIC_RELEASE);
	for (c = 0;; c = (c + 1) % worker_nchains()) {
		set_current(t, worker_leaf[w][c]);
		spin(3000000 + 500000 * w);
	}
	return NULL;
}

/*
 * --late-names: the qualname str of each code object, broken (length -1,
 * which no reader may accept) until late_names_ms after READY, then fixed.
 */
static long late_names_ms = -1;
static uint8_t *qualnames[NCODES];
static int64_t qualname_len[NCODES];	/* in code points, as built */

static void names_readable(int ok)
{
	size_t i;

	for (i = 0; i < NCODES; i++)
		__atomic_store_n((int64_t *)(qualnames[i] + L->unicode_object.length),
				 ok ? qualname_len[i] : -1, __ATOMIC_RELEASE);
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void write_ready(const char *path)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) ||
	    rename(tmp, path))
		die("cannot write %s", path);
}

static void build(void)
{
	unsigned w, c;
	size_t i;

	memset(arena, 0x5a, sizeof(arena));	/* garbage between objects */
	check_interp();
	check_tstate();
	check_objects();
	check_tables();
	make_types();
	for (i = 0; i < NCODES; i++) {
		code_objs[i] = make_code((int)i);
		memcpy(&qualnames[i], code_objs[i] + L->code_object.qualname, sizeof(qualnames[i]));
		memcpy(&qualname_len[i], qualnames[i] + L->unicode_object.length,
		       sizeof(qualname_len[i]));
	}
	if (late_names_ms >= 0)
		names_readable(0);
	make_interp();
	/* threads.head is the newest thread: the last worker, ..., main. */
	make_thread(&threads[0], 0);
	for (w = 1; w <= V->workers; w++) {
		threads[w].tlbc = TLBC ? w : 0;
		make_thread(&threads[w], A(threads[w - 1].ts));
		for (c = 0; c < worker_nchains(); c++)
			worker_leaf[w - 1][c] = build_chain(&threads[w], worker_chains[w - 1][c]);
	}
	put64(interp, L->interpreter_state.threads_head, A(threads[V->workers].ts));
	put64(interp, L->interpreter_state.threads_main, A(threads[0].ts));
	if (!FT) {	/* free-threaded: the GIL is disabled */
		put64(interp, L->interpreter_state.gil_runtime_state + 0, 5000);
		put64(interp, L->interpreter_state.gil_holder, A(threads[0].ts));
		put32(interp, L->interpreter_state.gil_locked, 1);
	}
	for (i = 0; i < NPHASES; i++)
		phase_leaf[i] = build_chain(&threads[0], main_phases[i]);
	if (V->minor >= 15)
		put32(threads[0].ts, L->thread_state.holds_gil, 1);
	/* The debug offsets last: a profiler seeing the cookie sees it all. */
	if (V->minor >= 15)
		emit_dbg15(L);
	else if (V->minor == 14)
		emit_dbg14(L);
	else
		emit_dbg13(L);
}

static void run(const char *ready_path)
{
	pthread_t th;
	unsigned w;
	size_t i;
	double t0;
	int err;

	claim_thread(&threads[0]);
	set_current(&threads[0], phase_leaf[0]);
	for (w = 0; w < V->workers; w++) {	/* before main pins itself */
		err = pthread_create(&th, NULL, worker_main, (void *)(uintptr_t)w);
		if (err)
			die("pthread_create: %s", strerror(err));
	}
	while (__atomic_load_n(&worker_ready, __ATOMIC_ACQUIRE) < (int)V->workers)
		;
	pin(0);
	if (ready_path)
		write_ready(ready_path);
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	t0 = mono_ms();
	for (i = 0;; i = (i + 1) % NPHASES) {
		set_current(&threads[0], phase_leaf[i]);
		spin(4000000);
		if (late_names_ms >= 0 && mono_ms() - t0 >= late_names_ms) {
			names_readable(1);
			late_names_ms = -1;
		}
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: fakepy VERSION [--ready FILE] [--late-names MS] | --expect | --expect-threads\n"
		"VERSION: 3.14 3.15 3.13t 3.14t 3.16 3.15b1 3.15t\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	int expect = 0, i;
	size_t v;

	if (argc < 2)
		usage();
	for (v = 0; v < sizeof(versions) / sizeof(versions[0]); v++)
		if (!strcmp(argv[1], versions[v].arg))
			V = &versions[v];
	if (!V)
		usage();
	L = V->lay;
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--expect"))
			expect = 1;
		else if (!strcmp(argv[i], "--expect-threads"))
			expect = 2;
		else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
			ready = argv[++i];
		else if (!strcmp(argv[i], "--late-names") && i + 1 < argc)
			late_names_ms = atol(argv[++i]);
		else
			usage();
	}
	if (expect) {
		check_tables();
		print_expected(expect == 2);
		return 0;
	}
	build();
	run(ready);
	return 0;
}
