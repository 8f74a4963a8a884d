// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The reference unwinder over struct tb_cfi_row: the algorithm the BPF
 * program will mirror, step for step, so that its results can be checked
 * against this one (and this one against gdb).
 */
#include <errno.h>

#include "cfi.h"
#include "remote.h"

/* The step rule itself is bpf/unwind.h's, the one the BPF program runs. */
static int read_u64(void *rd_ctx, uint64_t addr, __u64 *v);
static int read_pair(void *rd_ctx, uint64_t addr, __u64 *lo, __u64 *hi);
#define TB_UW_READ(ctx, addr, dst) read_u64(ctx, addr, dst)
#define TB_UW_READ2(ctx, addr, lo, hi) read_pair(ctx, addr, lo, hi)
#include "unwind.h"

_Static_assert((int)CFI_STOP_END == (int)TB_UW_END && (int)CFI_STOP_MAX == (int)TB_UW_MAX &&
	       (int)CFI_STOP_NO_MODULE == (int)TB_UW_NO_MODULE && (int)CFI_STOP_NO_ROW == (int)TB_UW_NO_ROW &&
	       (int)CFI_STOP_UNSUPPORTED == (int)TB_UW_UNSUPPORTED && (int)CFI_STOP_READ == (int)TB_UW_READ &&
	       (int)CFI_STOP_BAD == (int)TB_UW_BAD, "cfi_stop names bpf/unwind.h's stops");

struct reader {
	cfi_read_fn rd;
	void *ctx;
};

static int read_u64(void *rd_ctx, uint64_t addr, __u64 *v)
{
	const struct reader *r = rd_ctx;

	return r->rd(r->ctx, addr, v, sizeof(*v));
}

static int read_pair(void *rd_ctx, uint64_t addr, __u64 *lo, __u64 *hi)
{
	const struct reader *r = rd_ctx;
	__u64 w[2];

	if (r->rd(r->ctx, addr, w, sizeof(w)))
		return -1;
	*lo = w[0];
	*hi = w[1];
	return 0;
}

static const struct cfi_module *module_of(const struct cfi_module *mods, int n, uint64_t pc)
{
	int i;

	for (i = 0; i < n; i++)
		if (pc >= mods[i].start && pc < mods[i].end)
			return &mods[i];
	return NULL;
}

/* As the BPF program: a pc in no module takes a frame-pointer step. */
static int step(const struct cfi_module *mods, int nmods, struct tb_uw_frame *f,
		struct reader *r)
{
	const struct cfi_module *m = module_of(mods, nmods, f->rip);

	if (!m)
		return tb_uw_fp_step(f, r, TB_UW_NO_MODULE);
	return tb_uw_step(cfi_lookup(m->table, tb_uw_lookup_pc(f, (__u64)m->bias)), f, r);
}

struct cfi_unwind_result cfi_unwind(const struct cfi_module *mods, int nmods,
				    struct cfi_regs regs, cfi_read_fn rd, void *ctx,
				    uint64_t *pcs, int max)
{
	struct cfi_unwind_result res = { .n = 0, .stop = CFI_STOP_MAX };
	struct tb_uw_frame f = { .rip = regs.rip, .rsp = regs.rsp, .rbp = regs.rbp,
				 .rbp_known = 1, .exact = 1 };
	struct reader r = { .rd = rd, .ctx = ctx };
	int stop;

	while (res.n < max) {
		pcs[res.n++] = f.rip;
		stop = step(mods, nmods, &f, &r);
		if (stop >= 0) {
			res.stop = (enum cfi_stop)stop;
			return res;
		}
		if (!f.rip) {
			res.stop = CFI_STOP_BAD;
			return res;
		}
	}
	return res;
}

int cfi_read_remote(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return remote_read(*(const pid_t *)ctx, addr, buf, len);
}

const char *cfi_stop_name(enum cfi_stop s)
{
	static const char *const names[] = {
		[CFI_STOP_END] = "end of stack",
		[CFI_STOP_MAX] = "frame limit",
		[CFI_STOP_NO_MODULE] = "no module",
		[CFI_STOP_NO_ROW] = "no unwind row",
		[CFI_STOP_UNSUPPORTED] = "unsupported rule",
		[CFI_STOP_READ] = "stack not readable",
		[CFI_STOP_BAD] = "stack does not progress",
	};

	if ((unsigned)s < sizeof(names) / sizeof(names[0]) && names[s])
		return names[s];
	return "?";
}
