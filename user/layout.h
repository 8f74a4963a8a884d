/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Python versions reduced to data. Everything version-specific that the
 * BPF walker and the symbolizer need is in struct py_layout, filled either
 * from the interpreter's own _Py_DebugOffsets (3.13+) or from built-in
 * tables (3.11, 3.12). Nothing else in the tree looks at version numbers.
 */
#ifndef TB_LAYOUT_H
#define TB_LAYOUT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "tachyon.h"
#include "linetable.h"
#include "pystr.h"

/*
 * Where an object with a managed __dict__ keeps its attributes (3.11+
 * Python classes): 3.11 a values pointer at obj-32 and a dict pointer at
 * obj-24; 3.12 one word at obj-24, a values pointer tagged with bit 0 or a
 * dict; 3.13 to 3.15 a dict pointer at obj-24, else values inline after the
 * object (Py_TPFLAGS_INLINE_VALUES) with a `valid` byte.
 */
enum pyobj_managed {
	PYOBJ_NONE = 0,		/* objects of this version are not described */
	PYOBJ_MANAGED_311,
	PYOBJ_MANAGED_312,
	PYOBJ_MANAGED_313,
	/* 3.8 to 3.10: no managed dict; an instance's __dict__ pointer is at
	 * its type's tp_dictoffset, and dict keys index by dk_size */
	PYOBJ_DICTOFFSET,
};

/* Objects read from userspace: threading's names, dump --locals. */
struct pyobj_layout {
	uint8_t minor;
	uint8_t managed;	/* enum pyobj_managed */
	uint16_t interp_modules;	/* PyInterpreterState -> sys.modules */
	uint16_t ts_thread_id;	/* PyThreadState -> thread_id (threading.get_ident()) */
	uint16_t tp_name, tp_basicsize, tp_flags, ht_cached_keys;
	uint16_t md_dict;	/* PyModuleObject -> its dict */
	uint16_t dict_used, dict_keys, dict_values;
	uint16_t dk_log2_index_bytes, dk_kind, dk_nentries, dk_indices;
	/* PYOBJ_DICTOFFSET: keys -> dk_size (indices of 1, 2, 4 or 8 bytes by
	 * it; entries always {hash, key, value}), type -> tp_dictoffset */
	uint16_t dk_size, tp_dictoffset;
	uint16_t values_off;	/* PyDictValues -> values[0] */
	int8_t values_capacity;	/* PyDictValues -> u8 capacity (3.13), -1 if none */
	int8_t values_valid;	/* PyDictValues -> u8 valid (3.13 inline values), -1 */
	uint32_t tpflag_managed; /* Py_TPFLAGS_MANAGED_DICT */
	uint32_t tpflag_inline;	/* Py_TPFLAGS_INLINE_VALUES, 0 if the version has none */
	uint16_t var_size;	/* PyVarObject -> ob_size (tuple, list, bytes) */
	uint16_t tuple_items, list_items, set_used, float_val, cell_ref;
	uint16_t long_size, long_digits;
	uint8_t long_tagged;	/* 3.12+: lv_tag = ndigits << 3 | sign; else signed ob_size */
	uint16_t fr_localsplus;	/* _PyInterpreterFrame -> localsplus[] */
	uint16_t co_argcount, co_kwonlyargcount, co_flags;
	uint16_t co_localsplusnames, co_localspluskinds;	/* kinds 0: none (3.8-3.10:
								 * co_varnames, plain locals) */
	uint16_t co_cellvars, co_freevars;	/* 3.8-3.10: the names after co_varnames */
	/*
	 * 3.14+: localsplus holds _PyStackRef words whose low bits are tags
	 * (1: reference not counted, also NULL = 1; both set: a tagged int,
	 * not an object). 0 where the words are plain pointers.
	 */
	uint8_t ref_tags;
};

/*
 * --async-aware (3.14+): the kernel's offsets (struct tb_async) and what
 * userspace needs to follow a suspended coroutine to what it awaits and to
 * list a thread's tasks (dump --async). ok = 0: the version has none.
 */
struct py_async {
	uint8_t ok;
	struct tb_async bpf;
	uint16_t gen_iframe;	/* PyGenObject -> its _PyInterpreterFrame */
	uint16_t gen_state;	/* PyGenObject -> gi_frame_state (int8) */
	int8_t state_yield_from; /* ... suspended in an await (yield from) */
	int8_t state_cleared;	/* ... finished, frame cleared */
	uint16_t fr_stackpointer; /* _PyInterpreterFrame -> stackpointer */
	uint8_t await_slot;	/* the awaited object is stackpointer[-await_slot] */
	uint16_t task_node;	/* TaskObj -> task_node (struct llist_node) */
	uint16_t ts_tasks_head;	/* PyThreadState -> asyncio_tasks_head (llist) */
};

struct py_layout {
	uint32_t version;	/* PY_VERSION_HEX; only layout.c takes it apart */
	char name[24];		/* the version for people: "3.13.0", "3.10", "3.13.0t" */
	const char *source;	/* where the offsets came from, for -v */
	struct tb_walk walk;	/* walk.off; walk.addr is per process (target.c) */
	uint16_t co_size;	/* bytes of a code object to read */
	uint16_t co_filename;
	uint16_t co_name;
	uint16_t co_qualname;	/* co_name before 3.11: names are bare */
	uint16_t co_linetable;
	uint16_t co_firstlineno; /* int */
	uint16_t co_version;	/* u32, TB_NO_OFFSET if the version has none */
	/*
	 * A counter that moves whenever a code object address may name a new
	 * object: PyInterpreterState's code_object_generation (3.14+, u64,
	 * bumped when a code object dies) or func_state.next_version (3.13,
	 * u32, bumped when one is born), or TB_NO_OFFSET. 3.12 keeps the
	 * latter in the _Py_next_func_version global (code_gen_symbol).
	 */
	uint16_t interp_code_gen;
	uint8_t code_gen_size;	/* 4 or 8 */
	uint8_t code_gen_symbol; /* the counter is _Py_next_func_version (u32) */
	/* Where the GIL and the GC state are; target.c makes them addresses. */
	uint16_t gil_in_runtime;  /* GIL struct inside _PyRuntime (3.11), or TB_NO_OFFSET */
	uint16_t gil_ptr_in_interp; /* PyInterpreterState -> ceval.gil pointer (3.12+) */
	uint16_t gc_collecting;	/* PyInterpreterState -> gc.collecting (int) */
	uint8_t gc_in_runtime;	/* ... in _PyRuntime instead (3.8) */
	uint8_t lines;		/* enum linetable_format: how co_linetable is encoded */
	/* PyCodeObject -> co_code, the bytecode as a bytes object (3.8 to
	 * 3.10); 0 where it is inline (co_code_adaptive, 3.11+) */
	uint16_t co_code;
	struct pystr_layout str;
	struct pyobj_layout obj;
	struct py_async async;
};

/* Errors: negative errnos, each naming one reason (layout_strerror). */
enum layout_err {
	LAYOUT_OK = 0,
	LAYOUT_BAD_COOKIE = -EBADMSG,		/* not a _Py_DebugOffsets */
	LAYOUT_UNSUPPORTED = -ENOTSUP,		/* a version we have no layout for */
	LAYOUT_TRUNCATED = -ENODATA,		/* fewer bytes than the version's struct */
	LAYOUT_FREE_THREADED = -EPROTONOSUPPORT, /* Py_GIL_DISABLED build */
	LAYOUT_INCONSISTENT = -EINVAL,		/* offsets outside their structs */
	LAYOUT_PRERELEASE = -EAGAIN,		/* alpha/beta/rc: layouts drift */
	LAYOUT_NO_VERSION = -ENOENT,		/* nothing in the process tells its version */
	LAYOUT_NO_EXCEPTIONS = -ENOMSG,		/* LAYOUT_EXCEPTIONS: not known here */
};

/* Accept a pre-release or unknown micro version with the nearest layout. */
#define LAYOUT_FORCE	1u
/* --mode exception: refuse a layout that does not say where the exception
 * in flight is (walk.off.ts_exc_info), for want of a checked release. */
#define LAYOUT_EXCEPTIONS	2u

/* Largest code object header we read (the symbolizer's buffer is larger). */
#define LAYOUT_CODE_MAX 1024

/* Bytes to read at &_PyRuntime to be sure to cover any known debug offsets. */
#define LAYOUT_DEBUG_OFFSETS_MAX 1024

/*
 * The module's interface is two steps:
 *
 *  1. layout_resolve(): from what the interpreter's files and memory show
 *     (_Py_DebugOffsets at _PyRuntime, the Py_Version value, the version
 *     in a file name), the version and its offsets (struct py_layout).
 *  2. layout_bind(): the process's addresses (_PyRuntime, PyCode_Type, the
 *     symbols layout_symbols_wanted() asked pyelf to find) and what must be
 *     read from the running interpreter (GIL, GC state, code counter)
 *     written into the layout's tb_walk.
 *
 * Everything that depends on a version number lives behind these two and
 * the message helpers below; callers never look at version numbers.
 */

/* Symbols besides _PyRuntime, PyCode_Type and Py_Version that pyelf finds. */
enum layout_sym {
	LAYOUT_SYM_FUNC_VERSION,	/* a code counter kept in a hidden global */
	LAYOUT_SYM_PY2_MODULE,		/* defined by Python 2 only */
	LAYOUT_SYM_CAPSULE,		/* Python 2.7 and 3.1+ */
	LAYOUT_SYM_NR,
};

#define LAYOUT_SYM_MARKER	1u	/* only tells a version; no need to search on */

struct layout_symbol {
	const char *name;
	uint32_t size;		/* st_size the symbol must have, 0 for any */
	unsigned flags;		/* LAYOUT_SYM_MARKER */
};

/* The symbol of enum layout_sym s; NULL (errno EINVAL) past the last. */
const struct layout_symbol *layout_symbol(unsigned s);
/*
 * Which symbols (bit 1 << enum layout_sym) to look for in a file whose name
 * or soname says `file_version` ("3.12"; "" if none): markers always, a
 * hidden global only for the version that has it (.symtab is searched
 * until every non-marker symbol wanted is found).
 */
uint32_t layout_symbols_wanted(const char *file_version);
/* "2.7" / "2" from the markers found (bits of enum layout_sym), "" if none. */
void layout_version_from_symbols(uint32_t found, char *buf, size_t len);

/* What the process shows of its version: step 1's input. */
struct layout_facts {
	const void *runtime;	/* bytes read at &_PyRuntime, NULL if none */
	size_t runtime_len;
	uint32_t py_version;	/* Py_Version's value, 0 if absent or unread */
	const char *file_version; /* "3.10", "2.7", "2" from file names/markers, or "" */
};

/*
 * Step 1: the version (out->version, out->name, filled even on failure)
 * and its layout. 0, or a negative enum layout_err; layout_explain() makes
 * the message.
 */
int layout_resolve(const struct layout_facts *f, unsigned flags, struct py_layout *out);

/* Reads the target's memory: 0 or a negative errno. */
typedef int (*layout_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Where a process's symbols are (absolute addresses, 0 if unknown). */
struct layout_addrs {
	uint64_t runtime;		/* &_PyRuntime */
	uint64_t code_type;		/* &PyCode_Type */
	uint64_t sym[LAYOUT_SYM_NR];	/* what layout_symbols_wanted() asked */
};

/*
 * Step 2: the process's addresses into l->walk. The GIL, the GC state and
 * the code counter hang off the main interpreter, which exists only once
 * the interpreter is up: until then they stay 0, and layout_bind_status()
 * tries again. Returns 1 if the GIL address is known after the call.
 */
int layout_bind(struct py_layout *l, const struct layout_addrs *a, layout_read_fn rd,
		void *ctx);
int layout_bind_status(struct py_layout *l, const struct layout_addrs *a, layout_read_fn rd,
		       void *ctx);

/* Lower steps of layout_resolve(), for tests and fuzzers. */
/* 3.13+: parse the _Py_DebugOffsets at the start of _PyRuntime. */
int layout_from_debug_offsets(const void *buf, size_t len, unsigned flags,
			      struct py_layout *out);
/* Versions without debug offsets: the built-in table for PY_VERSION_HEX. */
int layout_from_version(uint32_t version, unsigned flags, struct py_layout *out);
/* Version found in a _Py_DebugOffsets header, 0 if the cookie is wrong. */
uint32_t layout_debug_version(const void *buf, size_t len);
/* 1 if that header says free-threaded (Py_GIL_DISABLED: 3.13t, 3.14t). */
int layout_debug_free_threaded(const void *buf, size_t len);
/* 1 if the layout's interpreter has no GIL to hold (--mode gil means
 * nothing there). */
int layout_no_gil(const struct py_layout *l);

const char *layout_strerror(int err);
/* "3.11 to 3.15": the versions the tables cover, derived from them. */
const char *layout_supported(void);
/* The same for --mode exception's offsets. */
const char *layout_exc_supported(void);
/* 1 if the version of a resolved (or refused) layout is older than any the
 * tables cover. */
int layout_too_old(const struct py_layout *l);
/* Why Python l->name cannot be read, given layout_resolve()'s error:
 * "<why> (<what to do>)", for a one-line message. */
void layout_explain(const struct py_layout *l, int err, char *buf, size_t len);
/*
 * The name the interpreter gives bytecode `op` (specialised and
 * instrumented instructions included: "BINARY_OP_ADD_INT"), from tables
 * generated from the real interpreters (scripts/gen-opcode-tables.py);
 * "<op N>" in buf for a number the version does not name.
 */
const char *layout_opcode_name(const struct py_layout *l, unsigned op, char *buf,
			       size_t len);
/*
 * Code units of inline cache that follow instruction `op` in the bytecode
 * (not instructions: their bytes are the specialiser's data); 0 if the
 * version has no table.
 */
unsigned layout_opcode_caches(const struct py_layout *l, unsigned op);
/* "3.14 and 3.15": the versions with an --async-aware layout, from the table. */
const char *layout_async_versions(void);
/* "3.13.0", "3.14.0b2" */
void py_version_str(uint32_t version, char *buf, size_t len);

#endif
