// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fuzz the _Py_DebugOffsets parser (user/layout.c). The input is the first
 * bytes of a target's _PyRuntime, which the target controls completely.
 *
 * Properties of an accepted layout, besides "no crash":
 *  - every field the BPF walker reads lies inside the bytes it reads in one
 *    call (ts_read, fr_read, co_read), and those stay <= TB_READ_MAX;
 *  - every field the symbolizer takes from a code object lies inside the
 *    co_size bytes it reads, and co_size fits the buffer it reads them into
 *    (user/symbols.c: struct pending.code, TB_READ_MAX * 4 bytes);
 *  - the str layout is usable (state_shift < 32).
 * Each input runs with and without LAYOUT_FORCE; the first 4 bytes also go
 * through layout_from_version() (the 3.11/3.12 tables), and the whole input
 * through layout_resolve() as the runtime bytes, Py_Version's value and a
 * file name's version at once (the name and message always terminated).
 */
#include "fuzz.h"
#include "layout.h"

/* user/symbols.c reads co_size bytes into uint8_t code[TB_READ_MAX * 4]. */
#define SYMBOLS_CODE_BUF	(TB_READ_MAX * 4)

static int inside(uint32_t off, uint32_t width, uint32_t size)
{
	return off != TB_NO_OFFSET && off + width <= size;
}

static void check_walk(const struct tb_offsets *w)
{
	FUZZ_CHECK(w->ts_read <= TB_READ_MAX && w->fr_read <= TB_READ_MAX &&
		   w->co_read <= TB_READ_MAX, "read sizes %u %u %u",
		   w->ts_read, w->fr_read, w->co_read);
	FUZZ_CHECK(inside(w->ts_next, 8, w->ts_read) &&
		   inside(w->ts_frame, 8, w->ts_read) &&
		   inside(w->ts_native_tid, 8, w->ts_read) &&
		   inside(w->ts_interp, 8, w->ts_read),
		   "thread state fields outside ts_read %u", w->ts_read);
	FUZZ_CHECK(w->ts_exc == TB_NO_OFFSET || inside(w->ts_exc, 8, w->ts_read),
		   "ts_exc %u outside ts_read %u", w->ts_exc, w->ts_read);
	FUZZ_CHECK(!(w->features & TB_F_TLBC) || inside(w->fr_tlbc, 4, w->fr_read),
		   "fr_tlbc %u outside fr_read %u", w->fr_tlbc, w->fr_read);
	/* --mode exception reads exc_info only with the raised one and tp_flags. */
	FUZZ_CHECK(w->ts_exc_info == TB_NO_OFFSET || (w->ts_exc != TB_NO_OFFSET && w->tp_flags),
		   "exc_info %u without ts_exc %u or tp_flags %u", w->ts_exc_info, w->ts_exc,
		   w->tp_flags);
	FUZZ_CHECK(inside(w->fr_previous, 8, w->fr_read) &&
		   inside(w->fr_code, 8, w->fr_read) &&
		   inside(w->fr_instr, 8, w->fr_read) &&
		   inside(w->fr_owner, 1, w->fr_read),
		   "frame fields outside fr_read %u", w->fr_read);
	FUZZ_CHECK(w->fr_entry == TB_NO_OFFSET || inside(w->fr_entry, 1, w->fr_read),
		   "fr_entry %u outside fr_read %u", w->fr_entry, w->fr_read);
	FUZZ_CHECK(inside(w->co_type, 8, w->co_read) && inside(w->co_fp, 4, w->co_read) &&
		   (w->co_fp2 == TB_NO_OFFSET || inside(w->co_fp2, 4, w->co_read)) &&
		   (w->co_fs_a == TB_NO_OFFSET || inside(w->co_fs_a, 4, w->co_read)) &&
		   (w->co_fs_b == TB_NO_OFFSET || inside(w->co_fs_b, 4, w->co_read)),
		   "code fields outside co_read %u", w->co_read);
	/* The fingerprint-only read covers the fingerprint and stays small. */
	FUZZ_CHECK(w->co_fp_lo <= w->co_fp && w->co_fp + 4 <= w->co_fp_lo + w->co_fp_read &&
		   (w->co_fp2 == TB_NO_OFFSET ||
		    (w->co_fp_lo <= w->co_fp2 && w->co_fp2 + 4 <= w->co_fp_lo + w->co_fp_read)) &&
		   w->co_fp_read <= TB_READ_MAX,
		   "fingerprint read [%u, +%u) misses co_fp %u / co_fp2 %u",
		   w->co_fp_lo, w->co_fp_read, w->co_fp, w->co_fp2);
}

static void check_layout(const struct py_layout *l)
{
	const struct tb_offsets *w = &l->walk.off;

	check_walk(w);
	FUZZ_CHECK(l->co_size <= SYMBOLS_CODE_BUF,
		   "co_size %u exceeds the symbolizer's %u-byte code buffer",
		   l->co_size, SYMBOLS_CODE_BUF);
	FUZZ_CHECK(inside(l->co_filename, 8, l->co_size) &&
		   inside(l->co_name, 8, l->co_size) &&
		   inside(l->co_qualname, 8, l->co_size) &&
		   inside(l->co_linetable, 8, l->co_size) &&
		   inside(l->co_firstlineno, 4, l->co_size),
		   "code object fields (%u %u %u %u %u) run past co_size %u",
		   l->co_filename, l->co_name, l->co_qualname, l->co_linetable,
		   l->co_firstlineno, l->co_size);
	FUZZ_CHECK(inside(w->co_type, 8, l->co_size) && inside(w->co_fp, 4, l->co_size),
		   "ob_type %u / fingerprint %u run past co_size %u",
		   w->co_type, w->co_fp, l->co_size);
	FUZZ_CHECK(l->str.state_shift < 32, "state_shift %u", l->str.state_shift);
	FUZZ_CHECK(l->source != NULL, "no source");
}

static void one(const uint8_t *data, size_t size, unsigned flags)
{
	struct py_layout l;
	char v[32];
	int ret;

	memset(&l, 0xa5, sizeof(l));
	ret = layout_from_debug_offsets(data, size, flags, &l);
	FUZZ_CHECK(ret <= 0 && strcmp(layout_strerror(ret), "unknown layout error"),
		   "returned %d", ret);
	py_version_str(l.version, v, sizeof(v));
	FUZZ_CHECK(memchr(v, 0, sizeof(v)), "version string not terminated");
	if (ret == LAYOUT_OK) {
		FUZZ_CHECK(l.version == layout_debug_version(data, size),
			   "version 0x%x", l.version);
		check_layout(&l);
	}
}

/* The interface: every source of the version at once. */
static void resolve(const uint8_t *data, size_t size, uint32_t version)
{
	char file_version[9] = "", msg[256];
	struct layout_facts f = { .runtime = data, .runtime_len = size,
				  .py_version = version, .file_version = file_version };
	struct py_layout l;
	int ret;

	memcpy(file_version, data + (size > 8 ? 8 : 0), size > 16 ? 8 : 0);
	layout_symbols_wanted(file_version);
	ret = layout_resolve(&f, 0, &l);
	FUZZ_CHECK(memchr(l.name, 0, sizeof(l.name)), "name not terminated");
	if (ret == LAYOUT_OK) {
		check_layout(&l);
		return;
	}
	layout_explain(&l, ret, msg, sizeof(msg));
	FUZZ_CHECK(memchr(msg, 0, sizeof(msg)) && msg[0], "no message for %d", ret);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_layout l;
	uint32_t version = 0;
	int ret;

	one(data, size, 0);
	one(data, size, LAYOUT_FORCE);

	memcpy(&version, data, size < 4 ? size : 4);
	ret = layout_from_version(version, size > 4 && (data[4] & 1) ? LAYOUT_FORCE : 0, &l);
	if (ret == LAYOUT_OK)
		check_layout(&l);
	resolve(data, size, version);
	return 0;
}
