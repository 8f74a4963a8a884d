/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tachyon-bpf kernel/user ABI.
 *
 * Everything that crosses the boundary between bpf/tachyon.bpf.c and user/
 * is defined here and nowhere else: the per-process walk layout that
 * userspace writes into the `procs` map (with the version's feature bits),
 * the records the BPF program pushes into the ring buffer and the maps'
 * values userspace reads, flag bits, limits and the error counters; each
 * record's size and offsets are asserted at the end. How a walk reads the
 * layout is in bpf/pywalk.h.
 */
#ifndef TACHYON_H
#define TACHYON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Deepest Python stack the walker records; deeper ones are flagged truncated. */
#define TB_MAX_DEPTH		4096
/* Threads visited per interpreter when looking for a thread's PyThreadState. */
#define TB_MAX_THREADS		512
/* Interpreters visited (subinterpreters) on the same search. */
#define TB_MAX_INTERPS		8
/* Bytes of a thread state, frame or code object read in one call. */
#define TB_READ_MAX		512
/*
 * A new stack's record wakes the consumer at most once per this many ms per
 * CPU; a consumer that has just read one looks again within this time.
 */
#define TB_STACK_WAKE_MS	20
/* Processes profiled at once. */
#define TB_MAX_PROCS		8192
/* Slots of the direct-mapped `sent` array (a power of two: userspace
 * empties slot stack_id & (TB_SENT_SLOTS - 1) when it forgets a stack). */
#define TB_SENT_SLOTS		65536
/* "No such field" in struct tb_walk. */
#define TB_NO_OFFSET		0xffff
/* _status.active: bit 4 after initialized, bound, unbound, bound_gilstate
 * (3.12 and 3.13 checked with gdb; 3.14/3.15 keep those fields). */
#define TB_TS_ACTIVE		(1U << 4)
/* owner_stop value meaning "no sentinel frame". */
#define TB_NO_OWNER		0xff
/* Kernel stack frames kept per sample (the `kstacks` map's value: ips). */
#define TB_KSTACK_DEPTH		127
/* --native: user stack frames kept per sample (after the stack record's
 * Python frames). */
#define TB_USTACK_DEPTH		127
/*
 * --native: bit 0 of a recorded frame's code address (code objects are
 * aligned) marks the first frame of an eval invocation, the one a native
 * _PyEval_EvalFrameDefault frame stands for; the bit joins the stack id.
 */
#define TB_CODE_ENTRY		1ULL
/*
 * --native: bit 1 says an eval invocation with no Python frame lies just
 * leaf-side of this frame: a call from C being set up or torn down (3.12+
 * see its entry shim with no frame above it; ~2 % of samples under
 * sorted(key=...)). The merge pairs that eval frame with nothing.
 */
#define TB_CODE_EMPTY_EVAL	2ULL
#define TB_CODE_MARKS		(TB_CODE_ENTRY | TB_CODE_EMPTY_EVAL)

/*
 * --native=fp: set on the leaf pc (the native stack's first address, the
 * count key's and the sample's `leaf`) when the leaf is outside the eval
 * function and the word at rsp is an address inside it: the leaf may be a
 * function without a frame of its own (GCC omits leaf frames even with
 * -fno-omit-frame-pointer; any function in its prologue), whose caller,
 * that eval, the frame-pointer chain skips. The merge adds that eval frame
 * only if the stack does not pair up without it. User addresses are below
 * 2^47: the bit is never part of one.
 */
#define TB_LEAF_EVAL_CALLER	(1ULL << 63)

/*
 * Version behaviours the walk rules (bpf/pywalk.h) branch on, set by
 * user/layout.c where versions are known; the walker never infers them
 * from other fields or sees a version number.
 */
enum tb_feature {
	/* tstate -> _PyCFrame -> current_frame (3.11, 3.12); the chain's first
	 * entry frame is then checked against cframe->previous (entry check) */
	TB_F_CFRAME = 1 << 0,
	/* a frame that has not run its first instruction (index -1: the
	 * pointer is to the previous instruction) may be linked to its caller
	 * late and hold a stale `previous` (3.11, 3.12): caller adjacency */
	TB_F_LATE_LINK = 1 << 1,
	/* a complete chain ends in a shim frame, owner >= owner_skip (3.12+) */
	TB_F_BOTTOM_SHIM = 1 << 2,
	/* frames carry is_entry at fr_entry, set in a chain's bottom frame,
	 * itself a Python frame (3.11) */
	TB_F_ENTRY_FLAG = 1 << 3,
	/* the code counter counts deaths and starts at 0 (3.14+), where a
	 * count of births (3.12, 3.13) that reads 0 ran out */
	TB_F_CODE_DEATHS = 1 << 4,
	/* a free-threaded build (3.13t, 3.14t): no GIL to hold, objects carry
	 * the longer header (ob_type at co_type, not 8) */
	TB_F_NO_GIL = 1 << 5,
	/* thread-local bytecode (3.14t): a frame whose int32 at fr_tlbc is not
	 * 0 runs the copy at ((_PyCodeArray *)code->co_tlbc)->entries[index],
	 * not co_code_adaptive; its instruction index counts from there */
	TB_F_TLBC = 1 << 6,
	/* ts_exc holds the exception's type (3.11 curexc_type), not an
	 * exception object whose ob_type is the type */
	TB_F_EXC_TYPE = 1 << 7,
	/* frames are heap PyFrameObjects (3.8 to 3.10): tstate->frame, then
	 * f_back (fr_previous) to NULL; each is a Python function's frame (no
	 * owner byte, no shims), fr_instr is the int f_lasti, not a pointer */
	TB_F_FRAME_OBJECT = 1 << 8,
	/* TB_F_FRAME_OBJECT: f_lasti counts bytes (3.8, 3.9), not code units */
	TB_F_LASTI_BYTES = 1 << 9,
	/* thread states name their thread by pthread_self() (3.8 to 3.10 have
	 * no native_thread_id): ts_native_tid is thread_id, matched against
	 * the task's FS base, which is pthread_self() on x86_64 */
	TB_F_PTHREAD_ID = 1 << 10,
	/* no code counter, but a frame names its function and globals at
	 * fr_tag (3.11: f_func, f_globals): a fingerprint kept from an earlier
	 * walk stands for a code object only where the frame's two pointers
	 * are the ones kept with it (tb_frame_tag) */
	TB_F_CODE_TAG = 1 << 11,
};

/*
 * Per-version offsets (user/layout.c): where the few fields the walk reads
 * live, how many bytes cover them, and the version's behaviours.
 */
struct tb_offsets {
	__u64 exec_mask;	/* applied to the frame's code pointer (3.14+ tags) */
	__u32 features;		/* enum tb_feature */
	__u16 rt_interp_head;	/* _PyRuntime -> interpreters.head */
	__u16 interp_next;	/* PyInterpreterState -> next */
	__u16 interp_threads_head; /* PyInterpreterState -> threads.head */
	__u16 ts_next;		/* PyThreadState -> next */
	__u16 ts_native_tid;	/* PyThreadState -> native_thread_id (TB_F_PTHREAD_ID: thread_id) */
	__u16 ts_interp;	/* PyThreadState -> interp */
	__u16 ts_frame;		/* PyThreadState -> current frame, or -> cframe */
	/* PyThreadState -> _status (3.12+), whose TB_TS_ACTIVE bit is set
	 * while the thread state is the one its thread runs; TB_NO_OFFSET if
	 * the version has none (3.11). */
	__u16 ts_status;
	__u16 ts_exc;		/* PyThreadState -> exception being raised; TB_NO_OFFSET */
	__u16 ts_read;		/* bytes of PyThreadState covering the fields above */
	__u16 cframe_frame;	/* _PyCFrame -> current_frame (TB_F_CFRAME) */
	__u16 cframe_prev;	/* _PyCFrame -> previous (TB_F_CFRAME) */
	__u16 fr_previous;	/* _PyInterpreterFrame -> previous */
	__u16 fr_code;		/* _PyInterpreterFrame -> f_code / f_executable */
	__u16 fr_instr;		/* _PyInterpreterFrame -> prev_instr / instr_ptr (TB_F_FRAME_OBJECT: int f_lasti) */
	__u16 fr_owner;		/* _PyInterpreterFrame -> owner (one byte) */
	__u16 fr_entry;		/* bool is_entry (TB_F_ENTRY_FLAG), or TB_NO_OFFSET */
	__u16 fr_read;		/* bytes of a frame covering the fields above */
	__u16 co_type;		/* PyObject -> ob_type */
	__u16 co_adaptive;	/* PyCodeObject -> co_code_adaptive (bytecode start) */
	__u16 co_fp;		/* PyCodeObject -> u32 fingerprint (co_version) */
	__u16 co_fp2;		/* second u32 xor-ed in (3.11); TB_NO_OFFSET if none */
	__u16 co_fs_a;		/* PyCodeObject int: co_framesize or co_nlocalsplus */
	__u16 co_fs_b;		/* PyCodeObject int: co_stacksize (3.11), or TB_NO_OFFSET */
	__u16 co_read;		/* bytes of a code object covering the fields above */
	/* The fingerprint alone, [co_fp_lo, co_fp_lo + co_fp_read): one cache
	 * line, all a frame whose instruction pointer lies in its code needs. */
	__u16 co_fp_lo;
	__u16 co_fp_read;
	__u16 gil_holder;	/* GIL struct -> last_holder (PyThreadState *) */
	__u16 gil_locked;	/* GIL struct -> locked (int) */
	__u8 owner_skip;	/* frames with owner >= this are shims: skipped */
	__u8 owner_stop;	/* owner value of a sentinel bottom frame, or TB_NO_OWNER */
	__u8 owner_max;		/* highest valid owner: a frame above it is garbage */
	__u8 co_fs_add;		/* frame size in words = co_fs_a + co_fs_b + this */
	__u16 fr_tlbc;		/* _PyInterpreterFrame -> tlbc_index (TB_F_TLBC) */
	__u16 co_tlbc;		/* PyCodeObject -> co_tlbc (TB_F_TLBC) */
	/*
	 * --mode exception: PyThreadState -> exc_info, the top of the stack
	 * of _PyErr_StackItem (each running generator or coroutine pushes
	 * one), whose exc_value is the exception being handled (NULL or None
	 * if none) and previous_item the next one down; PyTypeObject ->
	 * tp_flags. TB_NO_OFFSET in ts_exc_info where not verified.
	 */
	__u16 ts_exc_info;
	__u16 si_exc_value;
	__u16 si_previous;
	__u16 tp_flags;
	__u16 fr_tag;		/* _PyInterpreterFrame -> two pointers (TB_F_CODE_TAG) */
};

/* Per-process addresses (user/target.c): where this process's objects are. */
#define TB_EVAL_PARTS	2	/* tb_addrs' eval function parts */

struct tb_addrs {
	__u64 runtime_addr;	/* &_PyRuntime in the target */
	__u64 code_type_addr;	/* &PyCode_Type in the target; 0 = don't check */
	__u64 gil_addr;		/* the GIL struct in use; 0 = unknown */
	__u64 gc_addr;		/* the GC's "collecting" int; 0 = unknown */
	/*
	 * A counter the interpreter moves whenever a code object is created
	 * (3.12, 3.13) or freed (3.14+); 0 = none. While it stands still, a
	 * code object address names the object it named in the last sample,
	 * so the walk takes the fingerprint from there instead of reading it.
	 */
	__u64 code_gen_addr;
	/* The interpreter that counter belongs to (3.13+ count per
	 * interpreter), or 0 if it counts for all (3.12). */
	__u64 main_interp;
	/* The process's pid namespace when it is not ours (containers): its
	 * native_thread_id values are tids as seen in there. 0 = same as ours. */
	__u64 pidns_dev;
	__u64 pidns_ino;
	__u8 code_gen_size;	/* bytes of the counter at code_gen_addr: 4, 8; 0 = none */
	__u8 pad[7];
	/*
	 * --native: the eval function's two largest parts, [lo, hi) each
	 * (0, 0: none), the main one first: GCC splits it, and Debian's 3.15
	 * has 844 bytes in the main part, the loop in `.cold`. A leaf pc in
	 * either is stored as eval_lo[0]: the merge replaces eval frames by
	 * Python frames, so the pc adds nothing to the profile, and as part
	 * of the count key it made most samples a new key. Set by userspace
	 * from the interpreter's symbols (user/native.c).
	 */
	__u64 eval_lo[TB_EVAL_PARTS];
	__u64 eval_hi[TB_EVAL_PARTS];
};

/* Registration (user/sampler.c, and the BPF side's fork handler). */
struct tb_reg {
	/* Set by userspace, new for every process image it adds (a fork's
	 * copy keeps it, with its own pid): what the walk remembers of one
	 * image is never used in another. */
	__u32 incarnation;
	/* Set by userspace when it adds the process: its samples may be
	 * counted in the kernel. A fork's copy has it clear, so the child's
	 * samples come as records, in order with its fork event, until
	 * userspace knows the child (a recycled pid is never mixed up). */
	__u8 acked;
	__u8 pad[3];
};

/*
 * What the in-kernel walker needs to know about one process (the `procs`
 * map's value), grouped by who fills it: the version's offsets, the
 * process's addresses, its registration.
 */
struct tb_walk {
	struct tb_offsets off;
	struct tb_addrs addr;
	struct tb_reg reg;
};

/* One Python frame as sampled. */
struct tb_frame {
	__u64 code;		/* code object address (untagged) */
	__s32 instr;		/* instruction index in code units; -1 = not started */
	__u32 fp;		/* fingerprint read from the code object */
};

enum tb_rec_kind {
	TB_REC_SAMPLE = 1,
	TB_REC_STACK = 2,
	TB_REC_PROC = 3,
	TB_REC_TIMED = 4,	/* struct tb_timed: --timeline */
	TB_REC_TASKS = 5,	/* struct tb_tasks (--async-aware) */
};

/* What the sampler samples (rodata `mode`). */
enum tb_mode {
	TB_MODE_CPU = 0,	/* on-CPU samples from the perf event */
	TB_MODE_WALL = 1,	/* plus off-CPU time, credited at switch-in */
	TB_MODE_GIL = 2,	/* only samples taken while the thread holds the GIL */
	TB_MODE_EXC = 3,	/* only samples taken while the thread has an exception in flight */
};

/* Per-sample facts. */
enum tb_sample_flags {
	TB_SF_TRUNCATED = 1 << 0,	/* deeper than TB_MAX_DEPTH */
	TB_SF_PARTIAL = 1 << 1,	/* a frame could not be read: stack ends early */
	TB_SF_GIL = 1 << 2,	/* this thread holds the GIL */
	TB_SF_GIL_LOCKED = 1 << 3,	/* somebody holds the GIL */
	TB_SF_GC = 1 << 4,	/* the garbage collector is running */
	TB_SF_EXC = 1 << 5,	/* an exception is being raised in this thread */
	TB_SF_OFFCPU = 1 << 6,	/* time off CPU (wall mode), weight in periods */
	TB_SF_STATUS_KNOWN = 1 << 7,	/* the GIL and GC bits above were read */
};

/* Flags that are part of the stack's identity (the rest describe the moment). */
#define TB_SF_STACK_MASK	(TB_SF_TRUNCATED | TB_SF_PARTIAL)

/*
 * Pushed for every sample. Small: the frames travel once per stack id; no
 * time stamp (the ring buffer's order is all the consumer needs).
 */
struct tb_sample {
	__u32 kind;		/* TB_REC_SAMPLE */
	__u32 pid;
	__u32 tid;
	__u32 flags;		/* enum tb_sample_flags */
	__u64 stack_id;
	__u32 weight;		/* sample periods this record stands for (1 on CPU) */
	__s32 kstack;		/* kernel stack id in `kstacks`, or < 0 */
	/* --native: the sampled pc (the native leaf), 0 if none. Not part of
	 * the stack id, which has the callers only (see struct tb_stack). */
	__u64 leaf;
};

/*
 * --timeline (a time-ordered output): every sample travels as one of these,
 * never counted in the kernel, so userspace can order them by time. A
 * sample record with the time it was taken (bpf_ktime_get_ns(), the
 * CLOCK_MONOTONIC userspace reads) and the CPU it was taken on; wall
 * mode's off-CPU credit carries the interval it stands for.
 */
struct tb_timed {
	struct tb_sample s;	/* s.kind = TB_REC_TIMED */
	__u64 time_ns;		/* taken at; off CPU: when the thread came back */
	__u64 start_ns;		/* off CPU: when it left; else equal to time_ns */
	__u32 cpu;
	__u32 pad;
};

/*
 * On-CPU samples are counted in the kernel, in whichever of the hash maps
 * `counts` and `counts2` userspace has put in `count_slot`; it swaps them
 * to read and clear one. Samples that find the map full are pushed as
 * tb_sample records. Same fields as a record, count as value.
 */
struct tb_count_key {
	__u32 pid;
	__u32 tid;
	__u64 stack_id;
	__u32 flags;
	__s32 kstack;
	__u64 leaf;		/* --native: as tb_sample.leaf */
};

enum tb_proc_event {
	TB_PROC_FORK = 1,	/* pid forked from ppid (already followed if ppid was) */
	TB_PROC_EXEC = 2,	/* pid ran exec: its old layout is gone */
	TB_PROC_EXIT = 3,	/* pid (the whole process) exited */
};

/* Process lifecycle, for --all-python, --subprocesses and exec/exit of targets. */
struct tb_proc {
	__u32 kind;		/* TB_REC_PROC */
	__u32 event;		/* enum tb_proc_event */
	__u32 pid;
	__u32 ppid;
	__u64 time_ns;
	__u32 followed;		/* the BPF side already samples it (fork of a target) */
	char comm[16];
};

/*
 * Pushed the first time the BPF side sees a stack id (a direct-mapped set
 * remembers which it has sent; a collision sends one again), with the
 * sample that saw it (below), always before any other sample that names it.
 * Variable length: only `depth` frames are sent.
 */
struct tb_stack {
	__u32 kind;		/* TB_REC_STACK */
	__u32 depth;
	__u64 stack_id;
	__u32 pid;		/* the process whose sample sent it: its code objects
				 * are read now, while they are surely alive */
	/* --native: how many user stack addresses (leaf first, u64) follow
	 * the `depth` frames; < 0: none. The callers (all but the first) and
	 * their number are part of the stack id; the first, the leaf, is the
	 * pc of the sample that sent the record: every sample carries its
	 * own (tb_sample.leaf, tb_count_key.leaf). */
	__s32 ustack;
	/* --mode exception: the type object of the exception in flight
	 * (part of the stack id), 0 otherwise */
	__u64 exc_type;
	/*
	 * The sample that sent the record, when it would have been counted in
	 * the kernel (weight 1; 0: none, the sample travels or counts on its
	 * own): a new stack's first sample then costs no new key in the counts
	 * map (a cold bucket and free-list node), only these bytes of a record
	 * pushed anyway. Fields as struct tb_count_key's.
	 */
	__u32 tid;
	__u32 flags;		/* enum tb_sample_flags */
	__s32 kstack;
	__u32 weight;		/* samples carried: 0 or 1 */
	__u64 leaf;
	struct tb_frame frames[TB_MAX_DEPTH]; /* leaf first, then --native's addresses */
};

#define TB_STACK_HDR_SIZE	56

/*
 * Wall mode: where a thread was when it left the CPU, in the `offcpu` map
 * (key: tid). The BPF side writes it at switch-out and credits it at
 * switch-in; userspace reads what is still away at the end, and seeds it
 * for threads already blocked when the run starts (their time counts from
 * the start, with the stack userspace walked).
 */
struct tb_offcpu {
	__u64 since;		/* bpf_ktime_get_ns() (CLOCK_MONOTONIC) it left at */
	__u64 stack_id;
	__u64 carry;		/* ns not yet worth a whole period */
	__u32 flags;		/* enum tb_sample_flags, TB_SF_OFFCPU set */
	__s32 kstack;		/* kernel stack id, or < 0 */
	__u32 pid;
	__u32 away;		/* 1 while off CPU */
	__u64 leaf;		/* --native: as tb_sample.leaf */
};


/*
 * --async-aware: the asyncio task a sampled thread runs and the tasks that
 * await it, read in the kernel with the sample so that no task is ever
 * paired with a parent it did not have then. Userspace puts one struct
 * tb_async per process in the `asyncs` map (key: pid; absent = off).
 */
#define TB_ASYNC_DEPTH		16	/* tasks followed up from the running one */
#define TB_TASK_NAME_READ	80	/* bytes of a task's name object copied */
#define TB_TASK_READ		64	/* bytes of a task object read at task_lo */
#define TB_SET_SMALL		8	/* entries of a set's table searched for an awaiter */

struct tb_async {
	__u16 ts_task;		/* PyThreadState -> asyncio_running_task */
	__u16 task_lo;		/* first byte of the task fields read (TB_TASK_READ) */
	__u16 task_name;	/* TaskObj -> task_name (absolute offsets) */
	__u16 task_coro;	/* TaskObj -> task_coro */
	__u16 task_awaited_by;	/* TaskObj -> task_awaited_by (a task, or a set) */
	__u16 task_is_task;	/* u8, 1 in a Task (0 in a plain Future) */
	__u16 task_is_set;	/* u8, task_awaited_by is a set: several await it */
	__u16 coro_code;	/* coroutine -> its frame's code pointer (gi_iframe + fr_code) */
	__u16 set_used;		/* PySetObject -> used (awaiters in a task_awaited_by set) */
	__u16 set_mask;		/* PySetObject -> mask; table follows it (a pointer) */
	__u16 pad[2];
};

enum tb_task_flags {
	/* awaited by several tasks: the one at the lowest address is followed
	 * (`awaiters` says how many); if none can be picked, the chain ends */
	TB_TASK_SEVERAL = 1 << 0,
	TB_TASK_DEEP = 1 << 1,		/* awaited by more than TB_ASYNC_DEPTH levels */
	TB_TASK_NOT_TASK = 1 << 2,	/* awaited by an object that is not a Task */
};

/* One task of the chain, as read in the sample. */
struct tb_task {
	__u64 task;		/* the Task object */
	__u64 coro;		/* its coroutine */
	__u64 name;		/* its name object (str, or an int N for "Task-N") */
	__u64 code;		/* the coroutine's code object (running task only; 0) */
	__u32 flags;		/* enum tb_task_flags, about what awaits it */
	__u32 awaiters;		/* TB_TASK_SEVERAL: how many tasks await it */
	__u8 name_bytes[TB_TASK_NAME_READ]; /* the name object's first bytes */
};

/*
 * Pushed right before the stack record of a stack id whose sample ran a
 * task (the id mixes in each task, coroutine and name bytes, leaf task
 * first, after the frames' hash). Variable length: `depth` tasks.
 */
struct tb_tasks {
	__u32 kind;		/* TB_REC_TASKS */
	__u32 depth;
	__u64 stack_id;
	__u32 pid;
	__u32 pad;
	struct tb_task tasks[TB_ASYNC_DEPTH]; /* running task first, then its awaiters */
};

#define TB_TASKS_HDR_SIZE	24

/*
 * A stack id: TB_HASH_SEED, then for each frame, leaf first,
 * h = tb_hash_mix(h, code), h = tb_hash_mix(h, (u32)instr << 32 | fp), and
 * last h = tb_hash_mix(h, flags & TB_SF_STACK_MASK). Userspace computes the
 * same for the stacks it walks itself, so they share the BPF side's ids.
 */
#define TB_HASH_SEED	0xcbf29ce484222325ULL

static inline __attribute__((always_inline)) __u64 tb_hash_mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/* Per-CPU counters, indexed by this enum. Nothing fails silently. */
enum tb_counter {
	TB_C_EVENTS,		/* perf events that hit a profiled process */
	TB_C_SAMPLES,		/* sample records pushed */
	TB_C_STACKS,		/* new stack records pushed */
	TB_C_LOST,		/* dropped: ring buffer full */
	TB_C_NO_TSTATE,		/* dropped: thread has no PyThreadState */
	TB_C_NO_FRAMES,		/* dropped: thread has no Python frame */
	TB_C_READ_TSTATE,	/* dropped: PyThreadState unreadable */
	TB_C_READ_FRAME,	/* written partial: a frame was unreadable */
	TB_C_READ_CODE,		/* frame kept as <unknown>: code object unreadable */
	TB_C_BAD_CODE,		/* frame skipped: code pointer is not a code object */
	TB_C_TRUNCATED,		/* written truncated: deeper than TB_MAX_DEPTH */
	TB_C_TSTATE_MISS,	/* tid cache misses (thread list walks) */
	TB_C_BPF_NS,		/* ns in the program for profiled events (estimate) */
	TB_C_FILTERED,		/* dropped: --mode gil and the thread lacked the GIL,
				 * or --mode exception and it had no exception in flight */
	TB_C_OFFCPU_WALKS,	/* stacks captured at switch-out (wall mode) */
	TB_C_OFFCPU_SKIPPED,	/* switch-outs with no Python stack to capture */
	TB_C_OFFCPU_WEIGHT,	/* sample periods credited to off-CPU time */
	TB_C_OFFCPU_LOST,	/* periods lost: ring buffer full at switch-in */
	TB_C_KSTACK_ERR,	/* kernel stack not captured */
	TB_C_PROC_LOST,		/* process events lost: ring buffer full */
	TB_C_STALE_CFRAME,	/* walks restarted: the newest _PyCFrame was not set up yet */
	TB_C_AGGREGATED,	/* samples counted in the `counts` map, not pushed */
	TB_C_FRAMES,		/* Python frames walked (recorded) */
	TB_C_CODE_MEMO,		/* ... whose code object was not read: fingerprint from the last walk */
	TB_C_USTACK_ERR,	/* --native: user stack not captured */
	TB_C_SPILLED,		/* records the warm ring could not take (rings.bpf.h) */
	TB_C_COUNT_NEW,		/* ... of TB_C_AGGREGATED, a key new to the `counts` map */
	TB_C_TICK_EXTRA,	/* -e tick: periods written beyond one a sample (runtime-weighted) */
	TB_NR_COUNTERS,
};

/*
 * Both sides compile these records; a field moved on one side only would
 * be read as garbage on the other. Sizes and the offsets a reader depends
 * on, checked by both compilers.
 */
#define TB_ABI_SIZE(type, size) \
	_Static_assert(sizeof(type) == (size), #type " is ABI: both sides agree on its size")
#define TB_ABI_OFF(type, field, off) \
	_Static_assert(__builtin_offsetof(type, field) == (off), #type "." #field " is ABI")

_Static_assert((TB_SENT_SLOTS & (TB_SENT_SLOTS - 1)) == 0, "TB_SENT_SLOTS: a power of two");
TB_ABI_SIZE(struct tb_offsets, 88);
TB_ABI_OFF(struct tb_offsets, fr_tlbc, 74);
TB_ABI_OFF(struct tb_offsets, co_tlbc, 76);
TB_ABI_OFF(struct tb_offsets, ts_exc_info, 78);
TB_ABI_OFF(struct tb_offsets, tp_flags, 84);
TB_ABI_OFF(struct tb_offsets, fr_tag, 86);
TB_ABI_SIZE(struct tb_addrs, 104);
TB_ABI_SIZE(struct tb_reg, 8);
TB_ABI_SIZE(struct tb_walk, 200);
TB_ABI_OFF(struct tb_walk, addr, 88);
TB_ABI_OFF(struct tb_walk, reg, 192);
TB_ABI_SIZE(struct tb_frame, 16);
TB_ABI_OFF(struct tb_frame, instr, 8);
TB_ABI_OFF(struct tb_frame, fp, 12);
TB_ABI_SIZE(struct tb_sample, 40);
TB_ABI_OFF(struct tb_sample, flags, 12);
TB_ABI_OFF(struct tb_sample, stack_id, 16);
TB_ABI_OFF(struct tb_sample, weight, 24);
TB_ABI_OFF(struct tb_sample, kstack, 28);
TB_ABI_OFF(struct tb_sample, leaf, 32);
TB_ABI_SIZE(struct tb_timed, 64);
TB_ABI_OFF(struct tb_timed, time_ns, 40);
TB_ABI_OFF(struct tb_timed, start_ns, 48);
TB_ABI_OFF(struct tb_timed, cpu, 56);
TB_ABI_SIZE(struct tb_count_key, 32);
TB_ABI_OFF(struct tb_count_key, leaf, 24);
TB_ABI_OFF(struct tb_count_key, stack_id, 8);
TB_ABI_OFF(struct tb_count_key, flags, 16);
TB_ABI_OFF(struct tb_count_key, kstack, 20);
TB_ABI_SIZE(struct tb_proc, 48);
TB_ABI_OFF(struct tb_proc, time_ns, 16);
TB_ABI_OFF(struct tb_proc, followed, 24);
TB_ABI_OFF(struct tb_proc, comm, 28);
TB_ABI_OFF(struct tb_stack, depth, 4);
TB_ABI_OFF(struct tb_stack, stack_id, 8);
TB_ABI_OFF(struct tb_stack, pid, 16);
TB_ABI_OFF(struct tb_stack, ustack, 20);
TB_ABI_OFF(struct tb_stack, exc_type, 24);
TB_ABI_OFF(struct tb_stack, tid, 32);
TB_ABI_OFF(struct tb_stack, flags, 36);
TB_ABI_OFF(struct tb_stack, kstack, 40);
TB_ABI_OFF(struct tb_stack, weight, 44);
TB_ABI_OFF(struct tb_stack, leaf, 48);
TB_ABI_OFF(struct tb_stack, frames, TB_STACK_HDR_SIZE);
TB_ABI_SIZE(struct tb_stack, TB_STACK_HDR_SIZE + TB_MAX_DEPTH * 16);
TB_ABI_SIZE(struct tb_offcpu, 48);
TB_ABI_OFF(struct tb_offcpu, leaf, 40);
TB_ABI_OFF(struct tb_offcpu, stack_id, 8);
TB_ABI_OFF(struct tb_offcpu, flags, 24);
TB_ABI_OFF(struct tb_offcpu, pid, 32);
TB_ABI_SIZE(struct tb_async, 24);
TB_ABI_SIZE(struct tb_task, 120);
TB_ABI_OFF(struct tb_task, flags, 32);
TB_ABI_OFF(struct tb_task, name_bytes, 40);
TB_ABI_OFF(struct tb_tasks, stack_id, 8);
TB_ABI_OFF(struct tb_tasks, tasks, TB_TASKS_HDR_SIZE);
TB_ABI_SIZE(struct tb_tasks, TB_TASKS_HDR_SIZE + TB_ASYNC_DEPTH * 120);

/*
 * Native unwinding without frame pointers: one row of a file's unwind table,
 * reduced from its .eh_frame/.debug_frame CFI by user/cfi.c. A file's rows are
 * sorted by pc (its ELF virtual address, hence < 4 GiB); the row for an
 * address is the last one whose pc is <= it (a binary search). On x86-64 the
 * return address is always at CFA - 8 (an FDE saying otherwise is
 * TB_CFI_UNSUPPORTED) and the caller's rsp is the CFA.
 */
enum tb_cfi_kind {
	TB_CFI_GAP = 0,		/* no FDE covers this address: stop */
	TB_CFI_RSP = 1,		/* CFA = rsp + cfa_off */
	TB_CFI_RBP = 2,		/* CFA = rbp + cfa_off */
	TB_CFI_PLT = 3,		/* CFA = rsp + cfa_off + ((rip & 15) >= arg ? 8 : 0) */
	TB_CFI_SIGNAL = 4,	/* __restore_rt: rsp points at a ucontext (TB_SIGCTX_*) */
	TB_CFI_END = 5,		/* return address undefined: the outermost frame */
	TB_CFI_UNSUPPORTED = 6,	/* a rule we do not reduce (other CFA expressions...) */
};

enum tb_cfi_rbp {
	TB_RBP_SAME = 0,	/* the caller's rbp is this frame's rbp */
	TB_RBP_AT_CFA = 1,	/* saved at CFA + 8 * rbp_off8 */
	TB_RBP_UNKNOWN = 2,	/* in a register or an expression: lost */
};

struct tb_cfi_row {
	__u32 pc;
	__s32 cfa_off;
	__u8 kind;		/* enum tb_cfi_kind */
	__u8 rbp_rule;		/* enum tb_cfi_rbp */
	__s8 rbp_off8;
	__u8 arg;		/* TB_CFI_PLT: the (rip & 15) threshold */
};

/*
 * Where the kernel's rt_sigframe keeps the interrupted registers, from the
 * rsp __restore_rt runs with (struct ucontext: 40 bytes of flags, link and
 * stack, then struct sigcontext's r8..r15, rdi, rsi, rbp, rbx, rdx, rax,
 * rcx, rsp, rip): the Linux x86-64 signal ABI.
 */
#define TB_SIGCTX_RBP 120
#define TB_SIGCTX_RSP 160
#define TB_SIGCTX_RIP 168

TB_ABI_SIZE(struct tb_cfi_row, 12);
TB_ABI_OFF(struct tb_cfi_row, cfa_off, 4);
TB_ABI_OFF(struct tb_cfi_row, kind, 8);
TB_ABI_OFF(struct tb_cfi_row, arg, 11);

/*
 * --native with unwind tables: the rows of every loaded file, one after the
 * other in the `cfi_rows` array map (TB_CFI_ROWS of them at most), and per
 * process its executable mappings in `cfi_procs` (key: pid), sorted by
 * start: where pc - bias is an ELF vaddr of the file whose rows are
 * [first, first + nrows). nrows 0: no table (frame-pointer steps there).
 * complete: every executable mapping of the process is listed (those
 * without rows too), so a pc in none of them is code mapped since: the
 * walk stops there (marked unmatched) and userspace is told (cfi_new).
 * The rows are followed by the file's page index, npages entries in the
 * same array: entry k, for the vaddrs of page page0 + k (pages of
 * 1 << TB_CFI_PAGE_SHIFT bytes), holds in its pc and cfa_off fields the
 * file's rows [lo, hi) that may govern them (the last page: every address
 * above it too). A lookup then searches a few rows, on a page or two of the
 * map, not all of them: 20 probes of 12 MiB cost microseconds in a VM,
 * mostly TLB misses. npages 0: no index (the rows searched whole).
 */
#define TB_CFI_ROWS		(1u << 20)	/* 12 MiB of rows */
#define TB_CFI_PAGE_SHIFT	12
/*
 * Executable mappings listed per process: 512 (a process importing a few
 * hundred extension modules stays `complete`); a cfi_procs entry is then
 * 20 KiB (32 KiB of kernel memory, allocated per process described).
 */
#define TB_CFI_MAPS		512
#define TB_CFI_PROCS		1024		/* processes with tables */

struct tb_cfi_map {
	__u64 start;
	__u64 end;
	__u64 bias;		/* runtime address - ELF vaddr */
	__u32 first;
	__u32 nrows;
	__u32 page0;		/* the page index's first page (vaddr >> TB_CFI_PAGE_SHIFT) */
	__u32 npages;		/* its entries, in cfi_rows after the rows */
};

struct tb_cfi_proc {
	__u32 n;
	__u32 complete;
	struct tb_cfi_map maps[TB_CFI_MAPS];
};

/* Per-CPU counters of the table walk (`uw_stats`), for --stats. */
enum tb_uw_counter {
	TB_UW_C_STACKS,		/* stacks walked with the tables */
	TB_UW_C_ROWS,		/* frames stepped by a row */
	TB_UW_C_FP,		/* frames stepped by the frame pointer (no row) */
	TB_UW_C_ENDS,		/* walks that reached the outermost frame */
	TB_UW_C_UNKNOWN,	/* walks stopped at a pc in no known mapping */
	TB_UW_NR,
};

TB_ABI_SIZE(struct tb_cfi_map, 40);
TB_ABI_SIZE(struct tb_cfi_proc, 8 + TB_CFI_MAPS * 40);

#endif /* TACHYON_H */
