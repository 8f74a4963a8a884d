/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --native's frame-pointer walk, our own: from the task's saved user
 * registers (bpf_task_pt_regs, 5.15), one 16-byte read per frame of the
 * (saved rbp, return address) pair, straight into the stack record after
 * the Python frames. It stores what bpf_get_stack(BPF_F_USER_STACK) would:
 * the pc, then each return address, until a read fails or
 * TB_USTACK_DEPTH addresses. Where the kernel has no bpf_task_pt_regs,
 * fp_stack() declines and bpf_get_stack() walks.
 *
 * Global, with a scalar argument only, as uw_stack(): verified once, its
 * loop state out of its callers' frames (5.10's 512-byte chain).
 */

const volatile __u8 native_own_fp = 0;	/* set where bpf_task_pt_regs exists */

/*
 * No user mapping starts below vm.mmap_min_addr (64 KiB by default, never
 * under a page): a frame pointer below that is the end of the chain (0 in
 * _start) and its read would only fault, ~0.5 us of a #PF each time here.
 */
#define FP_LOWEST 4096

/* Is pc in the eval function (tb_addrs' eval parts)? */
static __always_inline int in_eval(const struct tb_addrs *a, __u64 pc)
{
	return pc - a->eval_lo[0] < a->eval_hi[0] - a->eval_lo[0] ||
	       pc - a->eval_lo[1] < a->eval_hi[1] - a->eval_lo[1];
}

/*
 * TB_LEAF_EVAL_CALLER, or 0: the leaf is outside the eval function and the
 * word at rsp (a frameless leaf's return address) is inside it. Measured on
 * Debian's 3.15, a pure-Python loop: 12 % of samples had a frameless leaf
 * called from the eval loop (_PyCompactLong_Add, _Py_Dealloc, ...), their
 * stacks one eval frame short and marked unmatched. One 8-byte read of the
 * hot stack top, only for a leaf outside the eval loop.
 */
static __always_inline __u64 fp_eval_caller(const struct tb_addrs *a, struct pt_regs *regs)
{
	__u64 ret = 0;

	if (!a->eval_hi[0] || in_eval(a, regs->ip) ||
	    bpf_probe_read_user(&ret, sizeof(ret), (void *)regs->sp))
		return 0;
	/* a return address follows a call: never the function's first byte */
	return ret != a->eval_lo[0] && in_eval(a, ret) ? TB_LEAF_EVAL_CALLER : 0;
}

__noinline int fp_stack(__u32 depth)
{
	__u32 cpu = bpf_get_smp_processor_id(), j, i;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &cpu);
	struct pt_regs *regs;
	__u64 *w, *p, fp, next;

	if (!native_own_fp || !s || depth > TB_MAX_DEPTH - TB_USTACK_DEPTH / 2 - 1)
		return -1;
	w = (__u64 *)s->stack.frames;
	/* Each index checked where it is used, past the compiler's reach:
	 * the verifier then knows every store is inside the record. */
	j = 2 * depth;
	barrier_var(j);
	if (j > 2 * TB_MAX_DEPTH - 2)
		return -1;
	/* A BTF pointer: plain loads, as uw_stack()'s, where two
	 * bpf_probe_read_kernel() calls were. */
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	p = &w[j];
	barrier_var(p);
	p[0] = regs->ip | fp_eval_caller(&s->walk.addr, regs);
	fp = regs->bp;
	for (i = 1; i < TB_USTACK_DEPTH; i++) {
		j = 2 * depth + i;
		barrier_var(j);
		if (j > 2 * TB_MAX_DEPTH - 2)
			break;
		/* p[0] = the caller's rbp, p[1] = the return address */
		p = &w[j];
		barrier_var(p);
		/* rsp is 8-aligned at every push: an rbp that is not is no frame
		 * pointer (seen below __libc_start_call_main, built without them) */
		if (fp < FP_LOWEST || (fp & 7) ||
		    bpf_probe_read_user(p, 2 * sizeof(__u64), (void *)fp))
			break;
		next = p[0];
		p[0] = p[1];
		/* A caller's frame lies above its callee's: a saved rbp that does
		 * not is no frame pointer (code built without them), and what
		 * follows it would be garbage at one read, often a fault, each. */
		if (next <= fp) {
			i++;
			break;
		}
		fp = next;
	}
	return i;
}
