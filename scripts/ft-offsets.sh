#!/usr/bin/env bash
# Where a free-threaded CPython (3.13t, 3.14t) keeps what the profiler
# reads, from CPython's own headers: no free-threaded build can be had
# here, but Debian unstable's libpython3.X-dev ships the internal headers.
# Compiled with Py_GIL_DISABLED, _PyRuntime's static initialiser fills
# _Py_DebugOffsets exactly as such a build does (the same on the GIL
# headers gives, byte for byte, what the running 3.14.10 exports), and
# offsetof() gives the facts the debug offsets do not carry.
#
# usage: scripts/ft-offsets.sh [3.13|3.14 ...]
# Prints, per version: the facts, then the _Py_DebugOffsets bytes as a C
# array (tests/unit/fixtures/debug_offsets_3XXt.h) and as u64 values.
set -euo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.13 3.14)
versions=("${versions[@]/#/libpython}")
root=$(scripts/fetch-debian.sh sid "${versions[@]/%/-dev}" | tail -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Our program: with TB_RUNTIME, the runtime's initialiser (read from the
# object's .data.rel, never linked); without, the facts.
cat >"$work/ft.c" <<'EOF'
#define Py_BUILD_CORE 1
#include "Python.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_pystate.h"
#include "internal/pycore_ceval.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
#include "internal/pycore_tstate.h"
#include "internal/pycore_runtime_init.h"
#if __has_include("internal/pycore_stackref.h")
#include "internal/pycore_stackref.h"	/* 3.14: _PyStackRef's tag bits */
#endif
#include <stdio.h>

#ifdef TB_RUNTIME
_PyRuntimeState tb_rt = _PyRuntimeState_INIT(tb_rt, "xdebugpy");
#else

#define FACT(x) printf("  %-48s %zu\n", #x, (size_t)(x))

/* The bit of the str state word `set` turns on. */
static unsigned state_bits(void (*set)(PyASCIIObject *))
{
	PyASCIIObject a;
	unsigned v;

	memset(&a, 0, sizeof(a));
	set(&a);
	memcpy(&v, &a.state, sizeof(v));
	return v;
}

static void kind(PyASCIIObject *a) { a->state.kind = 7; }
static void ascii(PyASCIIObject *a) { a->state.ascii = 1; }

int main(void)
{
	FACT(offsetof(PyObject, ob_type));
	FACT(offsetof(PyCodeObject, co_version));
	FACT(offsetof(PyThreadState, current_exception));
	FACT(offsetof(PyInterpreterState, threads.main));
	FACT(offsetof(PyGenObject, gi_name));
	FACT(offsetof(PyGenObject, gi_iframe));
	FACT(offsetof(PyGenObject, gi_frame_state));
	FACT(offsetof(_PyInterpreterFrame, return_offset));
	FACT(FRAME_OWNED_BY_CSTACK);
#ifdef Py_TAG_BITS
	FACT(Py_TAG_BITS);
	FACT(offsetof(_PyInterpreterFrame, tlbc_index));
	FACT(offsetof(PyCodeObject, co_tlbc));
	FACT(offsetof(_PyCodeArray, entries));
#endif
	printf("  str state kind mask %#x, ascii mask %#x\n", state_bits(kind),
	       state_bits(ascii));
	return 0;
}
#endif
EOF

for pkg in "${versions[@]}"; do
	v=${pkg#libpython}
	inc=$root/usr/include
	# The GIL build's pyconfig.h, with Py_GIL_DISABLED defined.
	mkdir -p "$work/$v/x86_64-linux-gnu/python$v"
	sed 's|/\* #undef Py_GIL_DISABLED \*/|#define Py_GIL_DISABLED 1|' \
		"$inc/x86_64-linux-gnu/python$v/pyconfig.h" \
		>"$work/$v/x86_64-linux-gnu/python$v/pyconfig.h"
	grep -q '^#define Py_GIL_DISABLED 1' "$work/$v/x86_64-linux-gnu/python$v/pyconfig.h" || {
		echo "tachyon-bpf: ft-offsets: $v's pyconfig.h has no Py_GIL_DISABLED to define" >&2
		exit 1
	}
	flags=(-w -O0 -I"$work/$v" -I"$inc" -I"$inc/python$v" -I"$inc/python$v/internal")
	cc "${flags[@]}" -DTB_RUNTIME -c "$work/ft.c" -o "$work/$v.o"
	cc "${flags[@]}" "$work/ft.c" -o "$work/$v.facts"
	objcopy -O binary --only-section=.data.rel "$work/$v.o" "$work/$v.bin"
	echo "== Python $(sed -n 's/^#define PY_VERSION *"\(.*\)"/\1/p' "$inc/python$v/patchlevel.h")t"
	"$work/$v.facts"
	python3 - "$work/$v.bin" "$v" <<'EOF'
import struct, sys
size = {"3.13": 584, "3.14": 760}.get(sys.argv[2], 1024)
b = open(sys.argv[1], "rb").read()[:size]
assert b[:8] == b"xdebugpy", "no _Py_DebugOffsets at the start of _PyRuntime"
print("  _Py_DebugOffsets (%d bytes):" % size)
for i in range(0, size, 12):
    print("\t" + ", ".join("0x%02x" % x for x in b[i:i + 12]) + ",")
print("  as u64 (position: value):")
print("  " + " ".join("%d:%d" % (i, struct.unpack_from("<Q", b, i)[0])
                      for i in range(8, size, 8)))
EOF
done
