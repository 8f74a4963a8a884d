/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A window of the user stack, for both native walks (fp_stack() and the
 * tables' uw_stack()): a stretch read with one bpf_probe_read_user(), from
 * which the frames that lie in it are served without a helper call each.
 * A walk goes up the stack, so the frames above a read come next. Each
 * read costs ~25-40 ns here whatever its size up to a few hundred bytes: a
 * frame read alone cost one, where a window serves several.
 *
 * A window never crosses a page's end: the page above the stack's top is
 * unmapped, and a read failing there would lose the frames below it. So a
 * window's read fails only where a read of the frame itself would (same
 * page): that failure is final (TB_WIN_FAULT), not retried frame by frame
 * (a fault costs ~0.5 us).
 */
#ifndef TB_STACKWIN_BPF_H
#define TB_STACKWIN_BPF_H

#define TB_WIN_MAX 4096		/* a page: the most a window holds */

struct tb_stack_win {
	__u64 lo;		/* the window's address, */
	__u64 len;		/* ... its bytes (0: none) */
	__u64 w[TB_WIN_MAX / 8];
};

#define TB_WIN_FAULT	(-2)	/* the stack there is unreadable */
#define TB_WIN_NONE	(-1)	/* not in a window: read it alone */

/*
 * The index in sw->w of the n (8 or 16) bytes at addr, the window read
 * anew from addr (at most max bytes, to its page's end) if they are not in
 * it; TB_WIN_NONE where a window cannot hold them (unaligned, or across a
 * page's end), TB_WIN_FAULT if the read failed.
 */
static __always_inline long tb_win_at(struct tb_stack_win *sw, __u64 addr, __u32 n, __u32 max)
{
	__u64 off = addr - sw->lo, len;

	if (addr & 7)
		return TB_WIN_NONE;
	if (off < sw->len && sw->len - off >= n)
		return off >> 3;
	len = TB_WIN_MAX - (addr & (TB_WIN_MAX - 1));
	if (len > max)
		len = max;
	sw->len = 0;
	if (len < n)
		return TB_WIN_NONE;
	if (bpf_probe_read_user(sw->w, len, (void *)addr))
		return TB_WIN_FAULT;
	sw->lo = addr;
	sw->len = len;
	return 0;
}

/* The word at index i (from tb_win_at()), masked for the verifier. */
static __always_inline __u64 tb_win_word(const struct tb_stack_win *sw, long i)
{
	return sw->w[i & (TB_WIN_MAX / 8 - 1)];
}

#endif /* TB_STACKWIN_BPF_H */
