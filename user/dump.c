// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* tachyon-bpf dump: see dump.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dump.h"
#include "dump_more.h"
#include "errors.h"
#include "pythreads.h"
#include "remote.h"
#include "symbols.h"
#include "target.h"

#define WALK_TRIES	3	/* a running thread may move under us: read again */
#define OBJ_BUF		(TB_READ_MAX + 8)	/* room for an 8-byte field at the last offset */


/* Like the BPF side: never more than TB_READ_MAX bytes of one object. */
static int read_obj(pid_t pid, uint64_t addr, uint8_t *buf, uint16_t len)
{
	memset(buf, 0, OBJ_BUF);
	return remote_read(pid, addr, buf, len > TB_READ_MAX ? TB_READ_MAX : len);
}

static uint64_t get64(const uint8_t *b, uint16_t off)
{
	uint64_t v;

	memcpy(&v, b + (off & (TB_READ_MAX - 1)), sizeof(v));
	return v;
}

static uint32_t get32(const uint8_t *b, uint16_t off)
{
	uint32_t v;

	memcpy(&v, b + (off & (TB_READ_MAX - 1)), sizeof(v));
	return v;
}

/* The frame a thread is executing, from its PyThreadState bytes. */
static uint64_t current_frame(const struct target *t, const uint8_t *ts)
{
	const struct tb_walk *w = &t->layout.walk;
	uint64_t p = get64(ts, w->ts_frame), frame = 0;

	if (w->cframe_frame == TB_NO_OFFSET || !p)
		return p;
	/* 3.11/3.12: tstate->cframe->current_frame */
	if (remote_read(t->pid, p + w->cframe_frame, &frame, sizeof(frame)))
		return 0;
	return frame;
}

/* The frame the thread executes now; 0 if none (or it cannot be read). */
static uint64_t thread_frame(const struct target *t, uint64_t tstate)
{
	uint8_t ts[OBJ_BUF];

	if (read_obj(t->pid, tstate, ts, t->layout.walk.ts_read))
		return 0;
	return current_frame(t, ts);
}

int dump_threads(const struct target *t, struct dump_thread *out, int max)
{
	const struct tb_walk *w = &t->layout.walk;
	uint8_t ts[OBJ_BUF];
	uint64_t interp = 0, tstate;
	int i, j, n = 0;

	if (remote_read(t->pid, w->runtime_addr + w->rt_interp_head, &interp, sizeof(interp)))
		return -1;
	for (i = 0; i < TB_MAX_INTERPS && interp; i++) {
		if (remote_read(t->pid, interp + w->interp_threads_head, &tstate, sizeof(tstate)))
			return -1;
		for (j = 0; j < TB_MAX_THREADS && tstate && n < max; j++) {
			if (read_obj(t->pid, tstate, ts, w->ts_read))
				return -1;
			out[n].tstate = tstate;
			out[n].tid = get64(ts, w->ts_native_tid);
			n++;
			tstate = get64(ts, w->ts_next);
		}
		if (remote_read(t->pid, interp + w->interp_next, &interp, sizeof(interp)))
			break;
	}
	return n;
}

/* One frame's code object, checked and fingerprinted as the BPF side does. */
static void record_frame(const struct target *t, struct stack *st, uint64_t code,
			 uint64_t instr)
{
	const struct tb_walk *w = &t->layout.walk;
	uint8_t co[OBJ_BUF];
	struct tb_frame *f;
	int64_t idx;
	uint32_t fp = 0;

	idx = (int64_t)(instr - (code + w->co_adaptive)) >> 1;
	if (idx < -1 || idx > 0x3fffffff)
		idx = -1;
	if (!read_obj(t->pid, code, co, w->co_read)) {
		if (w->code_type_addr && get64(co, w->co_type) != w->code_type_addr)
			return;	/* not a code object: skipped, as in BPF */
		fp = get32(co, w->co_fp);
		if (w->co_fp2 != TB_NO_OFFSET)
			fp ^= get32(co, w->co_fp2);
	}
	f = &st->frames[st->depth++];
	f->code = code;
	f->instr = (int32_t)idx;
	f->fp = fp;
}

/* Walk `previous` from frame: innermost first, shims skipped. */
static void walk(const struct target *t, uint64_t frame, struct stack *st)
{
	const struct tb_walk *w = &t->layout.walk;
	uint8_t fr[OBJ_BUF];
	uint64_t code, here;
	int i;
	uint8_t owner;

	st->depth = st->partial = st->truncated = 0;
	for (i = 0; i < 2 * TB_MAX_DEPTH && frame; i++) {
		if (st->depth >= TB_MAX_DEPTH) {
			st->truncated = 1;
			return;
		}
		if (read_obj(t->pid, frame, fr, w->fr_read)) {
			st->partial = 1;
			return;
		}
		here = frame;
		owner = fr[w->fr_owner & (TB_READ_MAX - 1)];
		frame = get64(fr, w->fr_previous);
		if (owner > w->owner_max) {
			st->partial = 1;	/* not a frame: the chain changed under us */
			return;
		}
		if (owner == w->owner_stop)
			return;
		if (owner >= w->owner_skip)
			continue;
		code = get64(fr, w->fr_code) & w->exec_mask;
		if (code) {
			uint32_t d = st->depth;

			record_frame(t, st, code, get64(fr, w->fr_instr));
			if (st->depth > d)
				st->addr[d] = here;	/* dump --locals reads its localsplus */
		}
	}
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
	uint8_t gil[32];

	if (!w->gil_addr || remote_read(t->pid, w->gil_addr, gil, sizeof(gil)))
		return 0;
	return get32(gil, w->gil_locked) && get64(gil, w->gil_holder) == tstate;
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
		walk(t, thread_frame(t, tstate), st);
		if (!st->partial)
			break;
	}
}

int dump_stack(const struct target *t, uint64_t tstate, struct tb_stack *rec, uint32_t *flags)
{
	static struct stack st;
	uint64_t h = TB_HASH_SEED;
	uint32_t i;

	walk_thread(t, tstate, &st);
	*flags = (st.partial ? TB_SF_PARTIAL : 0) | (st.truncated ? TB_SF_TRUNCATED : 0);
	if (!st.depth)
		return -1;
	/* The id the BPF side gives the same frames (tachyon.h). */
	for (i = 0; i < st.depth; i++) {
		h = tb_hash_mix(h, st.frames[i].code);
		h = tb_hash_mix(h, (uint64_t)(uint32_t)st.frames[i].instr << 32 | st.frames[i].fp);
	}
	rec->kind = TB_REC_STACK;
	rec->depth = st.depth;
	rec->stack_id = tb_hash_mix(h, *flags & TB_SF_STACK_MASK);
	rec->pid = (uint32_t)t->pid;
	rec->pad = 0;
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
	n = dump_threads(&t, th, DUMP_MAX_THREADS);
	if (n <= 0) {
		if (n < 0)
			tb_error("pid %d: cannot read the interpreter's thread list: %s (is the process exiting?)",
				 pid, strerror(errno));
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
