// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The eval function's split-off parts, found without symbols: its code's
 * direct jumps that leave it, and the unwind table's FDEs they land in.
 * A part split off a function is entered only by jumps from that function,
 * with the function's frame already set up, so its FDE starts with the
 * caller's CFA rule (rbp + 16, or rsp + the frame's size) where a function
 * starts with rsp + 8. Debian's 3.15: 844 bytes in _PyEval_EvalFrameDefault,
 * 14 jumps from them into one FDE of 82 KiB that starts with CFA = rbp + 16.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "cfi.h"
#include "evalsplit.h"

#define MAX_TARGETS	512

static int32_t rel32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Where the direct near jumps (jmp rel32, jcc rel32) of code, loaded at
 * vaddr, go outside it; sorted. Bytes are not decoded as instructions: a
 * match inside another instruction is a stray target, which the FDE test
 * and the count of jumps per part leave out.
 */
size_t eval_jump_targets(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *out,
			 size_t max)
{
	size_t i, n = 0, at;
	uint64_t to;

	for (i = 0; i + 5 <= len && n < max; i++) {
		if (code[i] == 0xe9)
			at = i + 1;
		else if (code[i] == 0x0f && i + 6 <= len && (code[i + 1] & 0xf0) == 0x80)
			at = i + 2;
		else
			continue;
		to = vaddr + at + 4 + (int64_t)rel32(&code[at]);
		if (to < vaddr || to >= vaddr + len)
			out[n++] = to;
	}
	qsort(out, n, sizeof(*out), cmp_u64);
	return n;
}

/* The first of the sorted targets at or above pc. */
static size_t first_at(const struct eval_split_scan *s, uint64_t pc)
{
	size_t lo = 0, hi = s->ntargets, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->targets[mid] < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Jump targets in [lo, hi): called for every FDE of the file (~60k). */
static unsigned targets_in(const struct eval_split_scan *s, uint64_t lo, uint64_t hi)
{
	return (unsigned)(first_at(s, hi) - first_at(s, lo));
}

/* cfi_fde_fn: an FDE that is a split part, kept by its jumps, most first. */
void eval_split_fde(void *ctx, uint64_t begin, uint64_t end, const struct tb_cfi_row *first)
{
	struct eval_split_scan *s = ctx;
	unsigned hits;
	int i, j;

	if (first->kind == TB_CFI_RSP && first->cfa_off == 8)
		return;		/* a function's entry */
	hits = targets_in(s, begin, end);
	if (hits < EVALSPLIT_MIN_JUMPS)
		return;
	for (i = 0; i < s->n && s->hits[i] >= hits; i++)
		;
	if (i >= s->max)
		return;
	if (s->n < s->max)
		s->n++;
	for (j = s->n - 1; j > i; j--) {
		s->out[j] = s->out[j - 1];
		s->hits[j] = s->hits[j - 1];
	}
	s->out[i].lo = begin;
	s->out[i].hi = end;
	s->hits[i] = hits;
}

/* The bytes at [lo, hi) from the executable section holding them. */
static const uint8_t *code_bytes(Elf *elf, uint64_t lo, uint64_t hi)
{
	Elf_Scn *scn = NULL;
	Elf_Data *d;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || lo < sh.sh_addr ||
		    hi > sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < sh.sh_size)
			return NULL;
		return (const uint8_t *)d->d_buf + (lo - sh.sh_addr);
	}
	return NULL;
}

int eval_split_parts(int fd, uint64_t lo, uint64_t hi, struct eval_span *out, int max)
{
	uint64_t targets[MAX_TARGETS];
	unsigned hits[8];
	struct eval_split_scan s = { .targets = targets, .out = out, .hits = hits };
	struct cfi_table t;
	const uint8_t *code;
	Elf *elf;
	int err;

	if (max <= 0 || hi <= lo)
		return 0;
	s.max = max < 8 ? max : 8;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	code = elf ? code_bytes(elf, lo, hi) : NULL;
	if (code)
		s.ntargets = eval_jump_targets(code, hi - lo, lo, targets, MAX_TARGETS);
	elf_end(elf);
	if (!code)
		return -ENOEXEC;
	if (!s.ntargets)
		return 0;
	err = cfi_fdes_from_fd(fd, &t, eval_split_fde, &s);
	cfi_free(&t);
	return err < 0 && !s.n ? err : s.n;
}
