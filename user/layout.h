/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Python versions reduced to data. Everything version-specific that the
 * BPF walker and the symbolizer need is in struct py_layout, filled either
 * from the interpreter's own _Py_DebugOffsets (3.13+) or from built-in
 * tables (3.11, 3.12). Nothing else in the tree looks at version numbers.
 */
#ifndef TB_LAYOUT_H
#define TB_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include "tachyon.h"
#include "pystr.h"

struct py_layout {
	uint32_t version;	/* PY_VERSION_HEX */
	const char *source;	/* where the offsets came from, for -v */
	struct tb_walk walk;	/* runtime_addr/code_type_addr are per process */
	uint16_t co_size;	/* bytes of a code object to read */
	uint16_t co_filename;
	uint16_t co_name;
	uint16_t co_qualname;
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
	struct pystr_layout str;
};

enum layout_err {
	LAYOUT_OK = 0,
	LAYOUT_BAD_COOKIE = -1,		/* not a _Py_DebugOffsets */
	LAYOUT_UNSUPPORTED = -2,	/* a version we have no layout for */
	LAYOUT_TRUNCATED = -3,		/* fewer bytes than the version's struct */
	LAYOUT_FREE_THREADED = -4,	/* Py_GIL_DISABLED build */
	LAYOUT_INCONSISTENT = -5,	/* offsets outside their structs */
	LAYOUT_PRERELEASE = -6,		/* alpha/beta/rc: layouts drift */
};

/* Accept a pre-release or unknown micro version with the nearest layout. */
#define LAYOUT_FORCE	1u

/* Largest code object header we read (the symbolizer's buffer is larger). */
#define LAYOUT_CODE_MAX 1024

/* Bytes to read at &_PyRuntime to be sure to cover any known debug offsets. */
#define LAYOUT_DEBUG_OFFSETS_MAX 1024

/* 3.13+: parse the _Py_DebugOffsets at the start of _PyRuntime. */
int layout_from_debug_offsets(const void *buf, size_t len, unsigned flags,
			      struct py_layout *out);
/* Versions before 3.13: the built-in table for PY_VERSION_HEX. */
int layout_from_version(uint32_t version, unsigned flags, struct py_layout *out);
/* 1 if this version exports _Py_DebugOffsets (3.13+). */
int layout_has_debug_offsets(uint32_t version);
/* Version found in a _Py_DebugOffsets header, 0 if the cookie is wrong. */
uint32_t layout_debug_version(const void *buf, size_t len);

const char *layout_strerror(int err);
/* "3.11 to 3.15": the versions the built-in knowledge covers. */
const char *layout_supported(void);
/* 1 if version is older than any the tables cover. */
int layout_too_old(uint32_t version);
/* Why Python `name` (e.g. "3.9", "3.13.0t") cannot be read, given a
 * layout_* error: "<why> (<what to do>)", for a one-line message. */
void layout_explain(const char *name, uint32_t version, int err, char *buf, size_t len);
/* "3.13.0", "3.14.0b2" */
void py_version_str(uint32_t version, char *buf, size_t len);

#endif
