/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --native's unwind tables, kept up with new code: "process P has new
 * executable code" to userspace (user/cfi_maps.c), which reads P's
 * mappings again at once and loads the new file's rows, instead of at its
 * periodic rescan (every second; before these reports, every 100 ms: a
 * module dlopened meanwhile was walked by frame pointers it may not have).
 *
 * Two senders, one pid per record in `cfi_new`:
 * - on_mmap_exec and on_mprotect_exec, at the return of the mmap and
 *   mprotect system calls: a profiled process mapped something executable
 *   (the dynamic loader maps a module's code so) or made it executable. It
 *   runs before the loader has relocated the module, let alone called it. (fentry/fexit on the kernel's mmap path would avoid the
 *   syscall tracepoints' slower system call exit, but are not always
 *   allowed: refused with EPERM on the development machine.)
 * - uw_unknown(), from the unwinder: a pc in none of the process's
 *   executable mappings userspace listed (cfi_procs' `complete` set: all of
 *   them were), so new code the first sender missed (no tracefs to attach
 *   it, a lost record). The walk stops there and
 *   the stack is marked unmatched rather than stepped by frame pointers
 *   through code nobody has looked at. It is rate-limited by the memo: one
 *   record per CPU per pc until userspace changes the process's mappings.
 */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);	/* a pid each; a loss is caught by the rescan */
} cfi_new SEC(".maps");

static __always_inline void cfi_notify(__u32 *pid)
{
	bpf_ringbuf_output(&cfi_new, pid, sizeof(*pid), BPF_RB_FORCE_WAKEUP);
}

/* <sys/mman.h>'s PROT_EXEC; mmap's and mprotect's prot argument is in rdx. */
#define TB_PROT_EXEC	0x4

/* A syscall exit tracepoint's record (tracefs' format: the same since 4.x). */
struct tb_sys_exit {
	__u64 common;
	__s64 nr;
	__s64 ret;
};

/* A successful system call of a profiled process whose prot had PROT_EXEC: reported. */
static __always_inline int exec_prot_exit(struct tb_sys_exit *ctx)
{
	struct pt_regs *regs;
	__u64 prot = 0;
	__u32 pid;

	if (ctx->ret < 0 && ctx->ret >= -4095)
		return 0;
	pid = bpf_get_current_pid_tgid() >> 32;
	if (!bpf_map_lookup_elem(&procs, &pid))
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (bpf_probe_read_kernel(&prot, sizeof(prot), &regs->dx) || !(prot & TB_PROT_EXEC))
		return 0;
	cfi_notify(&pid);
	return 0;
}

/*
 * Loaded only with the unwind tables on (user/sampler.c), attached where
 * the kernel lets it (tracefs): the syscall tracepoints run no program for
 * the other system calls.
 */
SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap_exec(struct tb_sys_exit *ctx)
{
	return exec_prot_exit(ctx);
}

/*
 * Code made executable after it was mapped (a loader that maps a file
 * readable, then relocates and mprotects its text; a JIT's buffer): the
 * same report. The dynamic loader's own mprotect calls (RELRO: read-only)
 * have no PROT_EXEC and are not reported.
 */
SEC("tracepoint/syscalls/sys_exit_mprotect")
int on_mprotect_exec(struct tb_sys_exit *ctx)
{
	return exec_prot_exit(ctx);
}
