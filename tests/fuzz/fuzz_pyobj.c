// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fuzz the object readers (user/pyobj.c, user/pythreads.c) the way thread
 * naming and dump --locals drive them, on a memory image the fuzzer
 * controls: the image is copied into this process, and they read it back
 * with process_vm_readv on our own pid, as they read a target.
 *
 * Input: byte 0 picks the version's layout (3.11, 3.12, 3.13), byte 1 the
 * output size; the rest is the image, 8-byte aligned. A word whose top 16
 * bits are 0xa5a5 is a pointer into the image (its low 16 bits an offset);
 * any other word points wherever it points (mostly nowhere).
 *
 * Properties: every reader returns within its bounds (counts <= max) and
 * every string it writes is terminated inside the buffer; str values and
 * thread names are valid UTF-8.
 */
#include <unistd.h>
#include "fuzz.h"
#include "outcheck.h"
#include "layout.h"
#include "pyobj.h"
#include "pythreads.h"
#include "../unit/fixtures/debug_offsets_313.h"

#define IMAGE_MAX	8192

static const uint32_t versions[] = { 0x030b07f0, 0x030c01f0 };	/* 3.13: debug offsets */

static void check_str(const char *s, size_t outsz)
{
	size_t n = strnlen(s, outsz);

	FUZZ_CHECK(n < outsz, "not terminated in %zu bytes", outsz);
	FUZZ_CHECK(oc_utf8_valid((const uint8_t *)s, n), "invalid UTF-8: %s", s);
}

static void run(struct target *t, uint64_t base, size_t outsz)
{
	static const char *const names[] = { "_name", "_native_id", "threading" };
	static struct pythread th[16];
	uint64_t keys[32], vals[32], v[3];
	int64_t hashes[32], n;
	char *out = malloc(outsz);
	int i;

	FUZZ_CHECK(out, "malloc");
	memset(out, 0x55, outsz);
	if (!pyobj_str(t, base, out, outsz))
		check_str(out, outsz);
	pyobj_long(t, base, &n);
	pyobj_repr(t, base, out, outsz);
	check_str(out, outsz);
	FUZZ_CHECK(pyobj_dict_items(t, base, keys, vals, hashes, 32) <= 32, "too many items");
	pyobj_dict_get(t, base, "threading", v);
	FUZZ_CHECK(pyobj_attrs(t, base, names, v, 3) <= 3, "too many attributes");
	if (!pyobj_type_name(t, base, out, outsz))
		check_str(out, outsz);
	n = pythreads_read(t, NULL, th, 16);
	FUZZ_CHECK(n <= 16, "%lld threads", (long long)n);
	for (i = 0; i < n; i++)
		check_str(th[i].name, sizeof(th[i].name));
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t image[IMAGE_MAX / 8 + 8];
	static struct target t;
	uint64_t base = (uint64_t)(uintptr_t)image;
	struct fz f;
	size_t i, outsz;
	uint8_t ver;

	fz_init(&f, data, size);
	ver = fz_u8(&f);
	outsz = 1 + fz_u8(&f) % 160;
	memset(&t, 0, sizeof(t));
	t.pid = getpid();
	/* 0xa_, 0xb_: 3.10 and 3.8 (dicts by dk_size, __dict__ at tp_dictoffset) */
	if ((ver & 0xe0) == 0xa0) {
		if (layout_from_version((ver & 0x10) ? 0x030812f0 : 0x030a0df0, 0, &t.layout))
			return 0;
	} else if (ver % 3 == 2 ? layout_from_debug_offsets(debug_offsets_313,
							    sizeof(debug_offsets_313), 0, &t.layout) :
		   layout_from_version(versions[ver % 3], 0, &t.layout)) {
		return 0;
	}
	memset(image, 0, sizeof(image));
	fz_bytes(&f, image, f.left < IMAGE_MAX ? f.left : IMAGE_MAX);
	for (i = 0; i < IMAGE_MAX / 8; i++)
		if (image[i] >> 48 == 0xa5a5)
			image[i] = base + (image[i] & 0xffff) % IMAGE_MAX;
	/* _PyRuntime at the image's start: pythreads walks from there */
	t.layout.walk.addr.runtime_addr = base;
	run(&t, base, outsz);
	return 0;
}
