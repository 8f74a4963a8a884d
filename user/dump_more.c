// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* dump: thread names, --locals, --json; see dump_more.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "dump_more.h"
#include "util.h"
#include "output/emit.h"
#include "proc.h"
#include "pyobj.h"
#include "remote.h"

#define MAX_LOCALS	256
#define CO_VARARGS	0x04	/* code flags: *args, **kwargs take a slot each */
#define CO_VARKEYWORDS	0x08
#define CO_FAST_HIDDEN	0x10	/* localspluskinds: inlined comprehension's (3.13) */
#define CO_FAST_CELL	0x40
#define CO_FAST_FREE	0x80

struct local {
	char name[64];
	char repr[512];
	uint64_t addr;
	int arg;
};

void dump_thread_name(const struct target *t, const struct dump_ctx *dx, uint64_t tid,
		      char *out, size_t len)
{
	const char *py = pythreads_find(dx->names, dx->nnames, (uint32_t)tid);

	if (py)
		snprintf(out, len, "%s", py);
	else if (proc_comm(t->pid, (pid_t)tid, out, len))
		snprintf(out, len, "?");
}

/* A cell's contents (cell and free variables); 0 if empty. */
static uint64_t deref_cell(const struct target *t, uint64_t v)
{
	char type[16];

	if (pyobj_type_name(t, v, type, sizeof(type)) || strcmp(type, "cell"))
		return v;
	if (remote_read(t->pid, v + t->layout.obj.cell_ref, &v, sizeof(v)))
		return 0;
	return v;
}

/* The object a localsplus word names; 0 for NULL and tagged ints. */
static uint64_t stackref_obj(uint64_t w, uint8_t tags)
{
	if (tags && (w & tags) == tags)
		return 0;
	return w & ~(uint64_t)tags;
}

/* How many localsplus slots are arguments. */
static int64_t arg_slots(const uint8_t *co, const struct pyobj_layout *o)
{
	int32_t argc, kw, flags;

	memcpy(&argc, co + o->co_argcount, 4);
	memcpy(&kw, co + o->co_kwonlyargcount, 4);
	memcpy(&flags, co + o->co_flags, 4);
	return (int64_t)argc + kw + !!(flags & CO_VARARGS) + !!(flags & CO_VARKEYWORDS);
}

/* Of n localsplus slots (vals) named names, of kinds: the bound ones into out. */
static int bound_locals(const struct target *t, const uint8_t *co, const uint64_t *names,
			const uint8_t *kinds, const uint64_t *vals, int64_t n,
			struct local *out, int max)
{
	const struct pyobj_layout *o = &t->layout.obj;
	int64_t nargs = arg_slots(co, o), i;
	int got = 0;

	for (i = 0; i < n && got < max; i++) {
		uint64_t v = stackref_obj(vals[i], o->ref_tags);

		if (kinds[i] & CO_FAST_HIDDEN)
			continue;
		if (v && (kinds[i] & (CO_FAST_CELL | CO_FAST_FREE)))
			v = deref_cell(t, v);
		if (!v || pyobj_str(t, names[i], out[got].name, sizeof(out[got].name)))
			continue;	/* unbound yet, or unreadable */
		pyobj_repr(t, v, out[got].repr, sizeof(out[got].repr));
		out[got].addr = v;
		out[got].arg = i < nargs;
		got++;
	}
	return got;
}

/*
 * 3.8-3.10 name a frame's localsplus with three tuples: co_varnames (plain
 * locals, arguments first), then co_cellvars and co_freevars, whose slots
 * hold cells. Appends from names[at]; the new count, or -EFAULT.
 */
static int64_t old_names(const struct target *t, const uint8_t *co, uint64_t *names,
			 uint8_t *kinds, int64_t at)
{
	const struct pyobj_layout *o = &t->layout.obj;
	const uint16_t tuples[3] = { o->co_localsplusnames, o->co_cellvars, o->co_freevars };
	const uint8_t kind[3] = { 0, CO_FAST_CELL, CO_FAST_FREE };
	int64_t n;
	int j;

	for (j = 0; j < 3; j++) {
		uint64_t tup = load_u64(co + tuples[j]);

		if (remote_read(t->pid, tup + o->var_size, &n, 8) || n < 0)
			return -EFAULT;
		if (n > MAX_LOCALS - at)
			n = MAX_LOCALS - at;
		if (n && remote_read(t->pid, tup + o->tuple_items, names + at, n * 8))
			return -EFAULT;
		memset(kinds + at, kind[j], n);
		at += n;
	}
	return at;
}

/* The bound locals of a frame, in localsplus order; how many, or a negative errno. */
static int read_locals(const struct target *t, uint64_t code, uint64_t frame,
		       struct local *out, int max)
{
	const struct pyobj_layout *o = &t->layout.obj;
	uint64_t names[MAX_LOCALS], vals[MAX_LOCALS];
	uint8_t co[256], kinds[MAX_LOCALS] = { 0 };
	int co_len = (o->co_localspluskinds > o->co_localsplusnames ? o->co_localspluskinds :
		      o->co_localsplusnames) + 8;
	int64_t n;

	if (!pyobj_usable(t) || !frame || co_len > (int)sizeof(co))
		return -ENOTSUP;
	if (co_len < o->co_cellvars + 8)
		co_len = o->co_cellvars + 8;
	if (remote_read(t->pid, code, co, co_len))
		return -EFAULT;
	if (!o->co_localspluskinds) {	/* 3.8-3.10 */
		n = old_names(t, co, names, kinds, 0);
		if (n < 0 || (n && remote_read(t->pid, frame + o->fr_localsplus, vals, n * 8)))
			return -EFAULT;
		return bound_locals(t, co, names, kinds, vals, n, out, max);
	}
	if (remote_read(t->pid, load_u64(co + o->co_localsplusnames) + o->var_size, &n, 8) ||
	    n < 0)
		return -EFAULT;
	if (n > MAX_LOCALS)
		n = MAX_LOCALS;
	if (n && (remote_read(t->pid, load_u64(co + o->co_localsplusnames) + o->tuple_items, names,
			      n * 8) ||
		  remote_read(t->pid, load_u64(co + o->co_localspluskinds) + t->layout.str.bytes_data,
			      kinds, n) ||
		  remote_read(t->pid, frame + o->fr_localsplus, vals, n * 8)))
		return -EFAULT;
	return bound_locals(t, co, names, kinds, vals, n, out, max);
}

void dump_locals_text(const struct target *t, uint64_t code, uint64_t frame)
{
	static struct local loc[MAX_LOCALS];
	int n = read_locals(t, code, frame, loc, MAX_LOCALS), i, pass;

	if (n < 0) {
		printf("      (locals unreadable%s)\n",
		       pyobj_usable(t) ? "" : ": not described for this Python version");
		return;
	}
	for (pass = 1; pass >= 0; pass--) {
		int head = 0;

		for (i = 0; i < n; i++) {
			if (loc[i].arg != pass)
				continue;
			if (!head++)
				printf("      %s:\n", pass ? "Arguments" : "Locals");
			printf("          %s: %s\n", loc[i].name, loc[i].repr);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* --json: py-spy's dump --json, an array of threads. */

static int json_threads;

void dump_json_begin(void)
{
	json_threads = 0;
	fputs("[", stdout);
}

void dump_json_end(void)
{
	fputs(json_threads ? "\n]\n" : "]\n", stdout);
}

static void json_locals(struct emit *e, const struct target *t, uint64_t code, uint64_t frame)
{
	static struct local loc[MAX_LOCALS];
	int n = read_locals(t, code, frame, loc, MAX_LOCALS), i;

	if (n < 0) {
		emit_str(e, "null");
		return;
	}
	emit_str(e, "[");
	for (i = 0; i < n; i++) {
		emit_str(e, i ? ",{\"name\":" : "{\"name\":");
		emit_json(e, loc[i].name);
		emit_printf(e, ",\"addr\":%" PRIu64 ",\"arg\":%s,\"repr\":", loc[i].addr,
			    loc[i].arg ? "true" : "false");
		emit_json(e, loc[i].repr);
		emit_str(e, "}");
	}
	emit_str(e, "]");
}

static void json_frame(struct emit *e, const struct target *t, const struct dump_ctx *dx,
		       const struct stack *st, uint32_t i)
{
	const struct code_info *ci = symbols_get(dx->sym, t, &st->frames[i]);
	struct sym_frame full, shrt;

	symbols_frame(ci, &st->frames[i], t, 1, &full);
	symbols_frame(ci, &st->frames[i], t, dx->o->full_paths, &shrt);
	emit_str(e, "{\"name\":");
	emit_json(e, full.name);
	emit_str(e, ",\"filename\":");
	emit_json(e, full.file);
	emit_str(e, ",\"module\":null,\"short_filename\":");
	emit_json(e, shrt.file);
	emit_printf(e, ",\"line\":%d,\"locals\":", full.line);
	if (dx->o->dump_locals)
		json_locals(e, t, st->frames[i].code, st->addr[i]);
	else
		emit_str(e, "null");
	emit_printf(e, ",\"is_entry\":%s}", i + 1 == st->depth ? "true" : "false");
}

/* threading.get_ident() of the thread: what py-spy calls thread_id. */
static uint64_t python_ident(const struct target *t, uint64_t tstate, uint64_t tid)
{
	uint64_t id;

	if (!pyobj_usable(t) ||
	    remote_read(t->pid, tstate + t->layout.obj.ts_thread_id, &id, sizeof(id)))
		return tid;
	return id;
}

void dump_json_thread(const struct target *t, const struct dump_ctx *dx, uint64_t tstate,
		      uint64_t tid, const struct stack *st)
{
	char name[PYTHREAD_NAME_MAX];
	struct emit e;
	uint32_t i;
	int n = 0;

	symbols_resolve(dx->sym, t, st->frames, st->depth);
	dump_thread_name(t, dx, tid, name, sizeof(name));
	emit_init(&e, stdout);
	emit_printf(&e, "%s\n{\"pid\":%d,\"thread_id\":%" PRIu64 ",\"thread_name\":",
		    json_threads++ ? "," : "", t->pid, python_ident(t, tstate, tid));
	emit_json(&e, name);
	emit_printf(&e, ",\"os_thread_id\":%" PRIu64 ",\"active\":%s,\"owns_gil\":%s,\"frames\":[",
		    tid, strcmp(dump_thread_state(t->pid, tid), "running") ? "false" : "true",
		    dump_holds_gil(t, tstate) ? "true" : "false");
	for (i = 0; i < st->depth; i++) {
		struct sym_frame sf;

		symbols_frame(symbols_get(dx->sym, t, &st->frames[i]), &st->frames[i], t, 0, &sf);
		if (sf.hidden)
			continue;
		if (n++)
			emit_str(&e, ",");
		json_frame(&e, t, dx, st, i);
	}
	emit_str(&e, "]}");
	emit_done(&e);
}
