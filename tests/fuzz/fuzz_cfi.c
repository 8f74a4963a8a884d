// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fuzz the unwind-table builder (user/cfi.c, user/cfi_elf.c) and the
 * reference unwinder (user/cfi_unwind.c). The first byte selects the input:
 *   bit 0 clear: a bare section, bit 1 set = .eh_frame, clear = .debug_frame;
 *                then 4 bytes of load address, then the section's bytes;
 *   bit 0 set:   an ELF image (cfi_from_mem).
 *
 * Properties, besides "no crash, no sanitizer report":
 *  - the result is a count or one of the documented negative errnos;
 *  - the finished rows are what BPF will binary-search: pcs strictly
 *    increasing, no leading gap, no two neighbours with the same rule, every
 *    kind and rbp rule known, at most CFI_MAX_ROWS, the unsupported count
 *    right, and cfi_lookup() of each row's pc finds that row (NULL for gaps);
 *  - the unwinder, run from every row over a stack made of the input's own
 *    bytes, records at most max frames and stops with a known reason.
 */
#include <errno.h>

#include "cfi.h"
#include "fuzz.h"

#define STACK_AT 0x7f0000000000ull

struct mem {
	const uint8_t *p;
	size_t n;
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = ctx;

	if (addr < STACK_AT || addr - STACK_AT > m->n || len > m->n - (addr - STACK_AT))
		return -EFAULT;
	memcpy(buf, m->p + (addr - STACK_AT), len);
	return 0;
}

static void check_rows(const struct cfi_table *t)
{
	uint32_t unsupported = 0;
	size_t i;

	FUZZ_CHECK(t->nrows <= CFI_MAX_ROWS, "%zu rows", t->nrows);
	FUZZ_CHECK(!t->nrows || t->rows[0].kind != TB_CFI_GAP, "leading gap");
	for (i = 0; i < t->nrows; i++) {
		const struct tb_cfi_row *r = &t->rows[i], *p = i ? r - 1 : NULL;

		FUZZ_CHECK(r->kind <= TB_CFI_UNSUPPORTED, "kind %u", r->kind);
		FUZZ_CHECK(r->rbp_rule <= TB_RBP_UNKNOWN, "rbp rule %u", r->rbp_rule);
		FUZZ_CHECK(!p || p->pc < r->pc, "row %zu: pc %#x after %#x", i, r->pc, p->pc);
		FUZZ_CHECK(!p || memcmp(&p->cfa_off, &r->cfa_off, 8),
			   "row %zu repeats its neighbour's rule", i);
		FUZZ_CHECK(cfi_lookup(t, r->pc) == (r->kind == TB_CFI_GAP ? NULL : r),
			   "lookup of %#x", r->pc);
		unsupported += r->kind == TB_CFI_UNSUPPORTED;
	}
	FUZZ_CHECK(unsupported == t->unsupported, "%u unsupported counted as %u",
		   unsupported, t->unsupported);
}

static void check_unwind(const struct cfi_table *t, const uint8_t *data, size_t size)
{
	struct cfi_module m = { .start = 0, .end = UINT32_MAX, .bias = 0, .table = t };
	struct mem mem = { .p = data, .n = size };
	struct cfi_unwind_result res;
	uint64_t pcs[32];
	size_t i, step = t->nrows / 16 + 1;

	for (i = 0; i < t->nrows; i += step) {
		struct cfi_regs regs = {
			.rip = t->rows[i].pc,
			.rsp = STACK_AT + (i % 64) * 8,
			.rbp = STACK_AT + size / 2,
		};

		res = cfi_unwind(&m, 1, regs, mem_read, &mem, pcs, 32);
		FUZZ_CHECK(res.n >= 1 && res.n <= 32, "%d frames", res.n);
		FUZZ_CHECK(res.stop <= CFI_STOP_BAD, "stop %d", res.stop);
		FUZZ_CHECK(pcs[0] == regs.rip, "first frame %#llx",
			   (unsigned long long)pcs[0]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_table t = { 0 };
	uint32_t vaddr = 0;
	int r;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		r = cfi_from_mem(data + 1, size - 1, &t);
		FUZZ_CHECK(r == 0 || r == -ENOEXEC || r == -ENOENT || r == -EINVAL ||
			   r == -ENOMEM,
			   "cfi_from_mem returned %d", r);
		FUZZ_CHECK(r == 0 || !t.rows, "rows kept after failure %d", r);
	} else {
		if (size < 5)
			return 0;
		memcpy(&vaddr, data + 1, 4);
		r = cfi_parse_section(&t, data + 5, size - 5, vaddr, !!(data[0] & 2), NULL);
		FUZZ_CHECK(r >= 0 || r == -EINVAL || r == -ENOMEM, "parse returned %d", r);
		FUZZ_CHECK(r < 0 || (uint32_t)r == t.fdes, "%d FDEs, %u counted", r, t.fdes);
		cfi_finish(&t);
	}
	check_rows(&t);
	check_unwind(&t, data, size);
	cfi_free(&t);
	return 0;
}
