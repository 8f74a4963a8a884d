// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* tachyon-bpf dump: see dump.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dump.h"
#include "dump_async.h"
#include "dump_more.h"
#include "errors.h"
#include "pywalk.h"
#include "pythreads.h"
#include "remote.h"
#include "symbols.h"
#include "target.h"

#define WALK_TRIES	3	/* a running thread may move under us: read again */
#define OBJ_BUF		(TB_READ_MAX + 8)	/* room for an 8-byte field at the last offset */


/* Like the BPF side: never more than TB_READ_MAX bytes of one object. */
static int read_obj(pid_t pid, uint64_t addr, uint8_t *buf, uint32_t len)
{
	memset(buf, 0, OBJ_BUF);
	return remote_read(pid, addr, buf, len > TB_READ_MAX ? TB_READ_MAX : len);
}

/*
 * Where the C library keeps a thread's kernel tid in the thread's own
 * descriptor, the struct pthread that pthread_self() points to: glibc's
 * `tid` (checked on glibc 2.36 with threading.get_native_id()), musl's.
 */
static const uint16_t pthread_tid_offsets[] = { 720, 48 };

/*
 * The tid of a thread known by its pthread_self() (TB_F_PTHREAD_ID): the
 * first descriptor field that holds a thread of this process. 0 if none.
 */
static uint64_t pthread_tid(const struct target *t, uint64_t self)
{
	uint32_t tid;
	size_t i;

	for (i = 0; i < sizeof(pthread_tid_offsets) / sizeof(pthread_tid_offsets[0]); i++) {
		if (remote_read(t->pid, self + pthread_tid_offsets[i], &tid, sizeof(tid)))
			return 0;
		if (tid && (t->layout.walk.addr.pidns_ino || proc_thread_state(t->pid, (pid_t)tid)))
			return tid;
	}
	return 0;
}

/* The kernel tid of the thread whose state's bytes are in ts. */
static uint64_t ts_tid(const struct target *t, const uint8_t *ts)
{
	const struct tb_walk *w = &t->layout.walk;

	if (w->off.features & TB_F_PTHREAD_ID)
		return pthread_tid(t, tb_ts_tid(w, ts));
	return tb_ts_tid(w, ts);
}

int dump_threads(const struct target *t, struct dump_thread *out, int max)
{
	const struct tb_walk *w = &t->layout.walk;
	uint8_t ts[OBJ_BUF];
	uint64_t interp = 0, tstate;
	int i, n = 0;

	if (remote_read(t->pid, w->addr.runtime_addr + w->off.rt_interp_head, &interp,
			sizeof(interp)))
		return -errno;
	for (i = 0; i < TB_MAX_INTERPS && interp; i++) {
		if (remote_read(t->pid, interp + w->off.interp_threads_head, &tstate, sizeof(tstate)))
			return -errno;
		for (; tstate && n < max; n++) {
			if (read_obj(t->pid, tstate, ts, w->off.ts_read))
				return -errno;
			out[n].tstate = tstate;
			out[n].tid = ts_tid(t, ts);
			tstate = tb_ts_next(w, ts);
		}
		if (remote_read(t->pid, interp + w->off.interp_next, &interp, sizeof(interp)))
			break;
	}
	return n;
}

/*
 * Where the walk of thread state `tstate` starts, as the BPF side starts it
 * (pywalk.h): the chain's first frame, 0 if none (or unreadable).
 */
static void walk_start(const struct target *t, uint64_t tstate, struct tb_chain *ch)
{
	const struct tb_walk *w = &t->layout.walk;
	uint8_t ts[OBJ_BUF], cf[OBJ_BUF];

	tb_chain_init(ch);
	if (read_obj(t->pid, tstate, ts, w->off.ts_read))
		return;
	ch->flags |= tb_ts_flags(w, ts);
	ch->frame = tb_ts_frame(w, ts);
	if (!tb_via_cframe(w) || !ch->frame)
		return;
	if (read_obj(t->pid, ch->frame, cf, TB_CFRAME_READ))
		ch->frame = 0;
	else
		ch->frame = tb_chain_cframe(w, ch, cf);
}

/* The code object, read as the BPF side reads it when it has no memo. */
static int code_info(const struct target *t, struct tb_chain *ch, uint64_t code, int check)
{
	const struct tb_walk *w = &t->layout.walk;
	struct tb_code *seen = &ch->code;
	uint8_t co[OBJ_BUF];

	if (tb_code_known(seen, code, ch->check_next))
		return 0;
	if (read_obj(t->pid, code + tb_code_base(w, check), co, tb_code_len(w, check)))
		return TB_C_READ_CODE;
	return tb_code_parse(w, seen, co, code, check);
}

/* TB_F_TLBC: the bytecode copy the frame runs, as the BPF side finds it. */
static uint64_t tlbc_base(const struct target *t, uint64_t code, uint32_t tlbc)
{
	uint64_t array = 0, base = 0, at;

	if (remote_read(t->pid, tb_tlbc_array_addr(&t->layout.walk, code), &array, 8))
		return 0;
	at = tb_tlbc_entry_addr(array, tlbc);
	if (!at || remote_read(t->pid, at, &base, 8))
		return 0;
	return base;
}

/* The Python frame at `frame` (bytes in fr), step i of the walk. */
static int record_frame(const struct target *t, struct tb_chain *ch, struct stack *st,
			uint64_t frame, const uint8_t *fr, uint32_t i)
{
	const struct tb_walk *w = &t->layout.walk;
	uint64_t code = tb_frame_code(w, fr);
	uint32_t tlbc = tb_frame_tlbc(w, fr);
	int64_t idx = tlbc ? tb_instr_index_at(tlbc_base(t, code, tlbc), tb_frame_instr(w, fr)) :
			     tb_frame_index(w, code, fr);

	if (code_info(t, ch, code, tb_code_checked(ch, idx)) ||
	    !tb_chain_linked(ch, frame))
		return tb_chain_bad_frame(ch, i);
	st->addr[ch->depth] = frame;	/* dump --locals reads its localsplus */
	tb_chain_push(w, ch, &st->frames[ch->depth], frame, code, tb_instr_recorded(idx));
	return TB_STEP_NEXT;
}

/* The entry check (pywalk.h): start over where the chain must go on. */
static void check_entry(const struct target *t, struct tb_chain *ch)
{
	uint64_t expect = 0, at = tb_entry_expect_addr(&t->layout.walk, ch);

	if (at && remote_read(t->pid, at, &expect, sizeof(expect)))
		return;	/* cannot tell: keep the walk */
	if (tb_entry_misplaced(ch, expect))
		tb_chain_restart(ch, expect);
}

/* Follow the chain from ch->frame into st, as the BPF walker does. */
static void walk_chain(const struct target *t, struct tb_chain *ch, struct stack *st)
{
	const struct tb_walk *w = &t->layout.walk;
	uint8_t fr[OBJ_BUF];
	uint64_t frame;
	uint32_t i;
	int step;

	for (i = 0; i < 2 * TB_MAX_DEPTH; i++) {
		if (tb_chain_done(ch))
			break;
		frame = ch->frame;
		if (!tb_frame_addr_ok(frame) || read_obj(t->pid, frame, fr, w->off.fr_read)) {
			tb_chain_broken(ch);
			break;
		}
		step = tb_chain_frame(w, ch, fr);
		if (step == TB_STEP_PYTHON)
			step = record_frame(t, ch, st, frame, fr, i);
		if (step == TB_STEP_END)
			break;
		if (step != TB_STEP_SKIP && tb_entry_due(w, ch, fr, step))
			check_entry(t, ch);
	}
}

/* Walk thread state `tstate`'s stack into st, innermost first (pywalk.h). */
static void walk(const struct target *t, uint64_t tstate, struct stack *st)
{
	struct tb_chain ch;

	walk_start(t, tstate, &ch);
	if (ch.frame)	/* else no Python frame: nothing to walk */
		walk_chain(t, &ch, st);
	st->depth = ch.depth;
	st->partial = !!(ch.flags & TB_SF_PARTIAL);
	st->truncated = !!(ch.flags & TB_SF_TRUNCATED);
	st->id = tb_chain_id(&ch);
}

/* "running", "sleeping", ... from /proc/PID/task/TID/stat. */
const char *dump_thread_state(pid_t pid, uint64_t tid)
{
	switch (proc_thread_state(pid, (pid_t)tid)) {
	case 0:
		return "gone";
	case '?':
		return "unknown";
	case 'R':
		return "running";
	case 'S':
		return "sleeping";
	case 'D':
		return "waiting in the kernel (D)";
	case 'T':
	case 't':
		return "stopped";
	case 'Z':
		return "zombie";
	}
	return "idle";
}

int dump_holds_gil(const struct target *t, uint64_t tstate)
{
	const struct tb_walk *w = &t->layout.walk;
	uint8_t gil[OBJ_BUF];

	if (!w->addr.gil_addr || read_obj(t->pid, w->addr.gil_addr, gil, TB_GIL_READ))
		return 0;
	return !!(tb_gil_flags(w, gil, tstate) & TB_SF_GIL);
}

static void print_frames(const struct target *t, const struct dump_ctx *dx,
			 const struct stack *st)
{
	struct symbols *sym = dx->sym;
	int full_paths = dx->o->full_paths;
	struct sym_frame sf;
	uint32_t i;

	symbols_resolve(sym, t, st->frames, st->depth);
	for (i = 0; i < st->depth; i++) {
		symbols_frame(symbols_get(sym, t, &st->frames[i]), &st->frames[i], t, full_paths,
			      &sf);
		if (sf.hidden)
			continue;
		if (sf.file[0])
			printf("  File \"%s\", line %d, in %s\n", sf.file, sf.line, sf.name);
		else
			printf("  %s\n", sf.name);
		if (dx->o->dump_locals)
			dump_locals_text(t, st->frames[i].code, st->addr[i]);
	}
	if (!st->depth && !st->partial)
		printf("  (no Python frames)\n");
	if (st->partial)
		printf("  ... (the next frame could not be read: the thread moved on while we read)\n");
	if (st->truncated)
		printf("  ... (more than %d frames: the outermost are not shown)\n", TB_MAX_DEPTH);
}

/* A running thread may pop a frame while we walk: start again from the
 * frame it executes then. */
static void walk_thread(const struct target *t, uint64_t tstate, struct stack *st)
{
	int try;

	for (try = 0; try < WALK_TRIES; try++) {
		walk(t, tstate, st);
		if (!st->partial)
			break;
	}
}

int dump_stack(const struct target *t, uint64_t tstate, struct tb_stack *rec, uint32_t *flags)
{
	static struct stack st;

	walk_thread(t, tstate, &st);
	*flags = (st.partial ? TB_SF_PARTIAL : 0) | (st.truncated ? TB_SF_TRUNCATED : 0);
	if (!st.depth)
		return -ENOENT;
	rec->kind = TB_REC_STACK;
	rec->depth = st.depth;
	rec->stack_id = st.id;	/* the id the BPF side gives the same frames */
	rec->pid = (uint32_t)t->pid;
	rec->ustack = -1;
	rec->exc_type = 0;
	memcpy(rec->frames, st.frames, st.depth * sizeof(st.frames[0]));
	return 0;
}

static void print_thread(const struct target *t, const struct dump_ctx *dx,
			 const struct dump_thread *th)
{
	static struct stack st;
	char name[PYTHREAD_NAME_MAX];

	walk_thread(t, th->tstate, &st);
	dump_thread_name(t, dx, th->tid, name, sizeof(name));
	printf("\nThread %llu (%s): %s%s\n", (unsigned long long)th->tid, name,
	       dump_thread_state(t->pid, th->tid), dump_holds_gil(t, th->tstate) ? ", holds the GIL" : "");
	print_frames(t, dx, &st);
	if (dx->o->async_aware)
		dump_async_thread(t, dx->sym, dx->o->full_paths, th->tstate);
}

static void print_process(const struct target *t)
{
	char buf[1024];
	ssize_t n = proc_cmdline(t->pid, buf, sizeof(buf)), i;

	if (n <= 0)
		n = snprintf(buf, sizeof(buf), "%s", t->name);
	for (i = 0; i < n; i++)
		if (!buf[i] || buf[i] == '\n')
			buf[i] = ' ';
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = 0;
	printf("Process %d: %s\nPython %s (%s)\n", t->pid, buf, t->version, t->loc.path);
}

/* What dump_main goes through: the processes and, with -s, descendants. */
struct dump_run {
	const struct options *o;
	int printed;		/* processes printed so far */
	int ret;
};

/*
 * Dump one process. A descendant (`optional`) that is not Python, or is
 * gone, is skipped without a word: -s looks at every descendant.
 */
static void dump_one(struct dump_run *d, pid_t pid, int optional)
{
	static struct dump_thread th[DUMP_MAX_THREADS];
	static struct pythread names[DUMP_MAX_THREADS];
	static struct target t;
	struct symbols sym;
	struct dump_ctx dx = { d->o, &sym, names, 0 };
	char err[512] = "";
	int ret, n, i;

	ret = target_open(pid, d->o->layout_flags, &t, err, sizeof(err));
	if (ret && optional && (ret == TARGET_NOT_PYTHON || ret == TARGET_NO_PROCESS))
		return;
	if (ret) {
		target_report(pid, ret, err[0] ? err : "unknown reason");
		d->ret = TB_EXIT_RUNTIME;
		return;
	}
	if (d->o->async_aware && !t.layout.async.ok) {
		tb_error("pid %d: dump --async: Python %s has no asyncio task layout tachyon-bpf reads (only %s export one; dump it without --async)",
			 pid, t.version, layout_async_versions());
		target_close(&t);
		d->ret = TB_EXIT_RUNTIME;
		return;
	}
	n = dump_threads(&t, th, DUMP_MAX_THREADS);
	if (n <= 0) {
		if (n < 0)
			tb_error("pid %d: cannot read the interpreter's thread list: %s (is the process exiting?)",
				 pid, strerror(-n));
		else
			tb_error("pid %d: the interpreter has no threads yet (try again once it has started)",
				 pid);
		target_close(&t);
		d->ret = TB_EXIT_RUNTIME;
		return;
	}
	if (symbols_init(&sym)) {
		tb_error("dump: out of memory (free some memory)");
		target_close(&t);
		d->ret = TB_EXIT_RUNTIME;
		return;
	}
	dx.nnames = pythreads_read(&t, NULL, names, DUMP_MAX_THREADS);
	if (d->o->dump_json) {
		/* The list is newest first: the main thread last. Print it first. */
		for (i = n - 1; i >= 0; i--) {
			static struct stack st;

			walk_thread(&t, th[i].tstate, &st);
			dump_json_thread(&t, &dx, th[i].tstate, th[i].tid, &st);
		}
		d->printed++;
		symbols_free(&sym);
		target_close(&t);
		return;
	}
	if (d->printed++)
		printf("\n");
	print_process(&t);
	for (i = n - 1; i >= 0; i--)
		print_thread(&t, &dx, &th[i]);
	symbols_free(&sym);
	target_close(&t);
	if (fflush(stdout))
		d->ret = TB_EXIT_RUNTIME;
}

static void dump_descendant(void *ctx, pid_t pid)
{
	dump_one(ctx, pid, 1);
}

int dump_main(const struct options *o)
{
	struct dump_run d = { .o = o, .ret = TB_EXIT_OK };
	int i;

	if (o->dump_json)
		dump_json_begin();
	for (i = 0; i < o->npids; i++)
		dump_one(&d, o->pids[i], o->subprocesses);
	/* py-spy dump --subprocesses: every Python descendant too. */
	if (o->subprocesses)
		proc_each_descendant(o->pids, o->npids, dump_descendant, &d);
	if (o->dump_json)
		dump_json_end();
	if (o->subprocesses && !d.printed && d.ret == TB_EXIT_OK) {
		tb_error("dump -s: no Python process among the %s and their descendants (give the pid of a CPython 3.11+ process or of its parent)",
			 o->npids > 1 ? "processes given" : "process given");
		return TB_EXIT_RUNTIME;
	}
	return fflush(stdout) ? TB_EXIT_RUNTIME : d.ret;
}
