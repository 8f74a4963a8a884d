// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "pystr.h"
#include "util.h"
#include "pywalk.h"
#include "remote.h"
#include "symbols.h"

#define MAX_BATCH	128	/* code objects read per round */
#define OBJ_PEEK	256	/* bytes read speculatively per str/bytes object */
#define MAX_STR		4096	/* characters kept of a name or file */
#define MAX_LINETABLE	(1 << 20)
#define MAX_CODE_UNITS	(1 << 20)	/* bytecode read with --opcodes, in units */
/*
 * A code object that could not be read is read again later, as py-spy and
 * austin (which read names on every sample) would: its memory may have
 * been mid-update (the scribbler's damage lasts ~1 ms; with one read per
 * run, 7,372 of 7,395 samples of one run kept an <unknown> root), while a
 * dead one fails every time. RETRY_FIRST s after the first failure, the
 * wait doubling, RETRY_MAX reads in all (~3 s): a few reads per dead code
 * object.
 */
#define RETRY_FIRST	0.05
#define RETRY_MAX	7

struct code_key {
	uint32_t target;
	uint32_t fp;
	uint64_t addr;
};

/* One str/bytes object being fetched. */
struct obj_read {
	uint64_t addr;
	uint8_t *buf;
	size_t have;
	int is_bytes;
};

struct pending {
	struct code_key key;
	struct code_info *ci;
	uint8_t code[TB_READ_MAX * 4];
	struct obj_read obj[4];	/* qualname, filename, linetable, co_code (3.8-3.10) */
	uint8_t *bytecode;	/* --opcodes: co_code_adaptive, 2 bytes a unit */
	uint32_t units;
};

static struct code_info unknown_code;

int symbols_init(struct symbols *s)
{
	memset(s, 0, sizeof(*s));
	return hmap_init(&s->codes, sizeof(struct code_key));
}

static void free_info(struct code_info *ci)
{
	free(ci->qualname);
	free(ci->filename);
	linetable_free(&ci->lt);
	free(ci->ops);
	free(ci);
}

/* Drop the target's entries; only those unused this epoch if `stale_only`. */
static void drop(struct symbols *s, uint32_t target, int stale_only)
{
	struct code_key *keys = malloc((s->codes.len + 1) * sizeof(*keys));
	const struct code_key *k;
	size_t it = 0, n = 0, i;
	void **val;

	if (!keys)
		return;
	while (hmap_next(&s->codes, &it, (const void **)&k, &val)) {
		const struct code_info *ci = *val;

		if (k->target == target && (!stale_only || ci->epoch != s->epoch))
			keys[n++] = *k;
	}
	for (i = 0; i < n; i++)
		free_info(hmap_del(&s->codes, &keys[i]));
	if (stale_only)
		s->evicted += n;
	free(keys);
}

void symbols_forget(struct symbols *s, uint32_t target)
{
	drop(s, target, 0);
}

void symbols_evict(struct symbols *s, uint32_t target)
{
	drop(s, target, 1);
}

void symbols_next_epoch(struct symbols *s)
{
	s->epoch++;
}

void symbols_free(struct symbols *s)
{
	size_t it = 0;
	void **val;

	while (hmap_next(&s->codes, &it, NULL, &val))
		free_info(*val);
	hmap_free(&s->codes);
}

static struct code_key key_of(const struct target *t, const struct tb_frame *f)
{
	struct code_key k = { .target = t->id, .fp = f->fp, .addr = f->code };

	return k;
}

/* Is what we read still the code object the sample saw? Type and
 * fingerprint by the walk's own rules (pywalk.h). */
static int code_valid(const struct target *t, const struct pending *p)
{
	const struct tb_walk *w = &t->layout.walk;

	if (!tb_code_type_ok(w, p->code))
		return 0;
	return !p->key.fp || tb_code_fp(w, p->code, 0) == p->key.fp;
}

static size_t peek_len(uint64_t addr)
{
	size_t to_page = 4096 - (addr & 4095);

	/* Don't run into a page the object does not touch. */
	return to_page < 64 ? 64 : (to_page < OBJ_PEEK ? to_page : OBJ_PEEK);
}

/*
 * The opcode of the instruction each code unit belongs to. A unit is an
 * opcode byte and its argument, or inline cache (the specialiser's data)
 * after the instruction: 3.11/3.12 leave a caller's index on the last cache
 * unit of its CALL, which is still the CALL. A sys.monitoring or JIT
 * stand-in (INSTRUMENTED_LINE) hides its instruction's caches: the units
 * after it are then read as instructions, wrongly named but never past the
 * end.
 */
static void keep_opcodes(const struct target *t, struct pending *p)
{
	uint32_t i = 0, end;
	uint8_t op;

	p->ci->ops = malloc(p->units);
	if (!p->ci->ops)
		return;
	while (i < p->units) {
		op = p->bytecode[2 * i];
		end = i + 1 + layout_opcode_caches(&t->layout, op);
		while (i < end && i < p->units)
			p->ci->ops[i++] = op;
	}
	p->ci->nops = p->units;
}

/* Round 2: the first bytes of each str/bytes object, and with --opcodes
 * the bytecode, in one batch. */
static void peek_objects(const struct target *t, struct pending *p, int n)
{
	const struct py_layout *l = &t->layout;
	struct remote_req req[MAX_BATCH * 4];
	int i, j, m = 0;

	for (i = 0; i < n; i++) {
		if (p[i].bytecode)
			req[m++] = (struct remote_req){ p[i].key.addr + l->walk.off.co_adaptive,
							p[i].bytecode, 2 * (size_t)p[i].units, 0 };
		for (j = 0; j < 4; j++) {
			struct obj_read *o = &p[i].obj[j];

			if (!o->addr)
				continue;
			o->have = peek_len(o->addr);
			o->buf = malloc(o->have);
			if (!o->buf)
				continue;
			req[m++] = (struct remote_req){ o->addr, o->buf, o->have, 0 };
		}
	}
	remote_readv(t->pid, req, m);
	for (i = 0, m = 0; i < n; i++) {
		if (p[i].bytecode && req[m++].ok)
			keep_opcodes(t, &p[i]);
		for (j = 0; j < 4; j++) {
			struct obj_read *o = &p[i].obj[j];

			if (!o->addr || !o->buf)
				continue;
			if (!req[m++].ok) {
				free(o->buf);
				o->buf = NULL;
			}
		}
	}
}

/* The object's payload: from the peeked bytes or one more read. */
static uint8_t *object_data(const struct target *t, struct obj_read *o,
			    size_t off, size_t nbytes)
{
	uint8_t *data = malloc(nbytes + 1);

	if (!data)
		return NULL;
	if (off + nbytes <= o->have) {
		memcpy(data, o->buf + off, nbytes);
		return data;
	}
	if (remote_read(t->pid, o->addr + off, data, nbytes)) {
		free(data);
		return NULL;
	}
	return data;
}

static char *decode_str(const struct target *t, struct obj_read *o)
{
	size_t off, nbytes, outsz;
	int kind, ascii;
	uint8_t *data;
	char *out;

	if (!o->buf || pystr_locate(&t->layout.str, o->buf, o->have, MAX_STR,
				    &off, &nbytes, &kind, &ascii))
		return NULL;
	data = object_data(t, o, off, nbytes);
	if (!data)
		return NULL;
	outsz = nbytes / kind * 4 + 1;
	out = malloc(outsz);
	if (out) {
		size_t n = pystr_to_utf8(data, nbytes, kind, out, outsz), i;

		/* U+0000 is legal in a str but would end a C string early. */
		for (i = 0; i < n; i++)
			if (!out[i])
				out[i] = ' ';
	}
	free(data);
	return out;
}

/*
 * Code units of a bytecode kept in a bytes object (co_code, 3.8-3.10), 0
 * if unknown: where the last range of a co_lnotab ends.
 */
static int32_t code_units(const struct target *t, const struct pending *p)
{
	const struct obj_read *o = &p->obj[3];
	size_t nbytes;

	if (!o->buf || pybytes_locate(&t->layout.str, o->buf, o->have, 2 * MAX_CODE_UNITS,
				      NULL, &nbytes))
		return 0;
	return (int32_t)(nbytes / 2);
}

/*
 * --opcodes on 3.8-3.10: the bytecode is co_code, a bytes object (obj[3],
 * peeked with the strings). f_lasti stays on an EXTENDED_ARG prefix while
 * the instruction it extends runs, so a prefix unit is named after that
 * instruction.
 */
static void keep_old_opcodes(const struct target *t, struct pending *p)
{
	struct obj_read *o = &p->obj[3];
	size_t off, nbytes;
	char name[16];
	uint32_t i;

	if (!o->buf || pybytes_locate(&t->layout.str, o->buf, o->have, 2 * MAX_CODE_UNITS,
				      &off, &nbytes) || nbytes < 2)
		return;
	p->bytecode = object_data(t, o, off, nbytes);
	if (!p->bytecode)
		return;
	p->units = (uint32_t)(nbytes / 2);
	keep_opcodes(t, p);
	if (!p->ci->ops)
		return;
	for (i = p->units - 1; i-- > 0;)
		if (!strcmp(layout_opcode_name(&t->layout, p->ci->ops[i], name, sizeof(name)), "EXTENDED_ARG"))
			p->ci->ops[i] = p->ci->ops[i + 1];
}

static void decode_linetable(const struct target *t, struct pending *p)
{
	struct obj_read *o = &p->obj[2];
	size_t off, nbytes;
	uint8_t *data;

	if (!o->buf || pybytes_locate(&t->layout.str, o->buf, o->have, MAX_LINETABLE,
				      &off, &nbytes))
		return;
	data = object_data(t, o, off, nbytes);
	if (!data)
		return;
	linetable_decode_fmt(t->layout.lines, data, nbytes, p->ci->firstlineno,
			     code_units(t, p), &p->ci->lt);
	free(data);
}

static void finish_one(const struct target *t, struct pending *p)
{
	p->ci->qualname = decode_str(t, &p->obj[0]);
	p->ci->filename = decode_str(t, &p->obj[1]);
	if (!p->ci->qualname || !p->ci->filename) {
		free(p->ci->qualname);
		free(p->ci->filename);
		p->ci->qualname = p->ci->filename = NULL;
		return;
	}
	decode_linetable(t, p);
	/*
	 * 3.13+ run a Python __init__ through a shim code object of the
	 * interpreter's own (name and file "__init__", line 0); tracebacks
	 * never show it, nor do we.
	 */
	p->ci->hidden = !strcmp(p->ci->filename, "__init__") && !p->ci->firstlineno;
}

/* --opcodes: room for the bytecode (Py_SIZE of a code object is its
 * length in code units), read with the strings. */
static void want_bytecode(const struct target *t, struct pending *p)
{
	uint64_t units = load_u64(p->code + t->layout.obj.var_size);

	/* Bytecode in a bytes object (3.8-3.10): keep_old_opcodes(). */
	if (t->layout.co_code)
		return;
	if (!units || units > MAX_CODE_UNITS)
		return;
	p->bytecode = malloc(2 * units);
	if (p->bytecode)
		p->units = (uint32_t)units;
}

/* Forget what was decoded of a code object: it is unknown after all. */
static void unresolve(struct code_info *ci)
{
	free(ci->qualname);
	free(ci->filename);
	free(ci->ops);
	linetable_free(&ci->lt);
	ci->qualname = ci->filename = NULL;
	ci->ops = NULL;
	ci->nops = 0;
}

/*
 * Does the object read from its start look alive by its reference count?
 * A freed one's first word is the allocator's: 0, or the next free block,
 * a user-space pointer, which above 4 GiB has bits set in 32-47. A live
 * count has none there: a count is below 2^32, and a statically allocated
 * immortal of 3.14 on reads 3 << 30 with flag bits from bit 48 up
 * (_Py_InitCleanup: 0x50000c0000000). Free-threaded builds keep the owning
 * thread there: not judged.
 */
static int refs_live(const struct py_layout *l, const uint8_t *obj)
{
	uint64_t refs = load_u64(obj);

	return (l->walk.off.features & TB_F_NO_GIL) ||
	       (refs && !(refs & 0x0000ffff00000000ULL));
}

/*
 * The strings are read after the code object, and a code object that died
 * in between leaves them to the next objects at their addresses: code
 * objects made and freed every 20 ms (tests/workloads/code_reuse.py) came
 * out as one function's name with the next one's file and line table. A
 * code object read again after its strings, still alive, with the same
 * fingerprint and the same pointers, held them all along (it holds a
 * reference to each). A freed one keeps its other bytes until reused.
 */
static void still_alive(const struct target *t, struct pending *p, int n)
{
	const struct py_layout *l = &t->layout;
	static uint8_t again[MAX_BATCH][TB_READ_MAX * 4];
	struct remote_req req[MAX_BATCH];
	int i, m = 0, at[MAX_BATCH];

	for (i = 0; i < n; i++) {
		if (!p[i].ci->qualname)
			continue;
		at[m] = i;
		req[m++] = (struct remote_req){ p[i].key.addr, again[i], l->co_size, 0 };
	}
	if (!m)
		return;
	remote_readv(t->pid, req, m);
	for (i = 0; i < m; i++) {
		struct pending *q = &p[at[i]];
		const uint8_t *co = again[at[i]];

		if (req[i].ok && refs_live(l, co) && tb_code_type_ok(&l->walk, co) &&
		    (!q->key.fp || tb_code_fp(&l->walk, co, 0) == q->key.fp) &&
		    load_u64(co + l->co_qualname) == load_u64(q->code + l->co_qualname) &&
		    load_u64(co + l->co_filename) == load_u64(q->code + l->co_filename) &&
		    load_u64(co + l->co_linetable) == load_u64(q->code + l->co_linetable))
			continue;
		unresolve(q->ci);
	}
}

/* failures counts the code objects unreadable so far, once each. */
static void count_outcome(struct symbols *s, struct code_info *ci)
{
	if (ci->qualname) {
		if (ci->tries)
			s->failures--;	/* read on a retry */
		ci->tries = 0;
		return;
	}
	if (!ci->tries++)
		s->failures++;
	ci->retry_at = mono_now() + RETRY_FIRST * (1u << (ci->tries - 1));
}

/* Is the unreadable ci due another read? */
static int retry_due(const struct target *t, const struct code_info *ci)
{
	return !ci->qualname && ci->tries && ci->tries < RETRY_MAX && !t->exited &&
	       mono_now() >= ci->retry_at;
}

/* Read a batch of code objects: their headers, then their strings. */
static void read_batch(struct symbols *s, const struct target *t, struct pending *p, int n)
{
	const struct py_layout *l = &t->layout;
	struct remote_req req[MAX_BATCH];
	int i;

	for (i = 0; i < n; i++)
		req[i] = (struct remote_req){ p[i].key.addr, p[i].code, l->co_size, 0 };
	remote_readv(t->pid, req, n);
	for (i = 0; i < n; i++) {
		memset(p[i].obj, 0, sizeof(p[i].obj));
		p[i].bytecode = NULL;
		if (!req[i].ok || !code_valid(t, &p[i]))
			continue;
		if (s->opcodes)
			want_bytecode(t, &p[i]);
		p[i].ci->firstlineno = (int32_t)load_u32(p[i].code + l->co_firstlineno);
		p[i].obj[0].addr = load_u64(p[i].code + l->co_qualname);
		p[i].obj[1].addr = load_u64(p[i].code + l->co_filename);
		p[i].obj[2].addr = load_u64(p[i].code + l->co_linetable);
		p[i].obj[2].is_bytes = 1;
		if (l->co_code) {
			p[i].obj[3].addr = load_u64(p[i].code + l->co_code);
			p[i].obj[3].is_bytes = 1;
		}
	}
	peek_objects(t, p, n);
	for (i = 0; i < n; i++) {
		if (p[i].obj[0].addr)
			finish_one(t, &p[i]);
		if (s->opcodes && l->co_code && p[i].ci->qualname)
			keep_old_opcodes(t, &p[i]);
	}
	still_alive(t, p, n);
	for (i = 0; i < n; i++) {
		count_outcome(s, p[i].ci);
		for (int j = 0; j < 4; j++)
			free(p[i].obj[j].buf);
		free(p[i].bytecode);
	}
	s->reads += n;
}

/* Is ci in the batch already? (A retry due is met once per frame of it.) */
static int queued(const struct pending *p, int m, const struct code_info *ci)
{
	for (int i = 0; i < m; i++)
		if (p[i].ci == ci)
			return 1;
	return 0;
}

void symbols_resolve(struct symbols *s, const struct target *t,
		     const struct tb_frame *frames, uint32_t n)
{
	static struct pending p[MAX_BATCH];
	uint32_t i;
	int m = 0;

	for (i = 0; i < n; i++) {
		struct code_key k = key_of(t, &frames[i]);
		struct code_info *ci;
		int added;
		void **slot;

		s->lookups++;
		slot = hmap_put(&s->codes, &k, &added);
		if (!slot)
			continue;
		if (!added) {
			ci = *slot;
			ci->epoch = s->epoch;
			if (!retry_due(t, ci) || queued(p, m, ci))
				continue;
		} else {
			ci = calloc(1, sizeof(*ci));
			if (!ci) {
				hmap_del(&s->codes, &k);
				continue;
			}
			ci->addr = k.addr;
			ci->epoch = s->epoch;
			*slot = ci;
		}
		p[m].key = k;
		p[m].ci = ci;
		if (++m == MAX_BATCH) {
			read_batch(s, t, p, m);
			m = 0;
		}
	}
	if (m)
		read_batch(s, t, p, m);
}

const struct code_info *symbols_get(struct symbols *s, const struct target *t,
				    const struct tb_frame *f)
{
	struct code_key k = key_of(t, f);
	void **slot = hmap_get(&s->codes, &k);
	struct code_info *ci;

	if (!slot || !*slot)
		return &unknown_code;
	ci = *slot;
	ci->epoch = s->epoch;
	if (retry_due(t, ci)) {
		static struct pending one;

		one.key = k;
		one.ci = ci;
		read_batch(s, t, &one, 1);
	}
	return ci;
}

const char *symbols_opcode(const struct code_info *ci, const struct tb_frame *f,
			   const struct target *t, char *buf, size_t len)
{
	/* The index names the instruction being executed: 3.11/3.12's
	 * prev_instr is set as an instruction starts, 3.13+'s instr_ptr
	 * points at the current one. -1: not started, no instruction. */
	if (!ci->ops || f->instr < 0 || (uint32_t)f->instr >= ci->nops)
		return NULL;
	return layout_opcode_name(&t->layout, ci->ops[f->instr], buf, len);
}

const char *symbols_short_path(const char *path, const char *cwd, size_t cwd_len)
{
	static const char *const roots[] = { "/site-packages/", "/dist-packages/" };
	const char *p, *lib;
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		p = strstr(path, roots[i]);
		if (p)
			return p + strlen(roots[i]);
	}
	/* The standard library: .../lib/python3.X/mod.py -> mod.py */
	lib = strstr(path, "/lib/python");
	if (lib) {
		p = strchr(lib + 11, '/');
		if (p)
			return p + 1;
	}
	if (cwd_len > 1 && !strncmp(path, cwd, cwd_len) && path[cwd_len])
		path += cwd_len;
	/* `python ./app.py` records "CWD/./app.py" (3.9+) or "./app.py": the
	 * "./" says nothing. */
	while (path[0] == '.' && path[1] == '/' && path[2])
		path += 2;
	return path;
}

/*
 * TACHYON_DEBUG_LINES=1: say why a frame is shown at its def line, which
 * is both where instruction 0 (RESUME, or a frame not started) is and the
 * fallback for an instruction outside the code's line table (a frame
 * paired with the wrong code object). Tests tell the two apart with it.
 */
static void debug_def_line(const struct code_info *ci, const struct tb_frame *f, int32_t line)
{
	static int on = -1;

	if (on < 0)
		on = getenv("TACHYON_DEBUG_LINES") != NULL;
	if (on)
		fprintf(stderr, "tachyon-bpf: debug: def line of %s (%s:%d): instruction %d, %s\n",
			ci->qualname, ci->filename, ci->firstlineno, f->instr,
			line < 0 ? "outside its line table" : "in its line table");
}

void symbols_frame(const struct code_info *ci, const struct tb_frame *f,
		   const struct target *t, int full_paths, struct sym_frame *out)
{
	int32_t line;

	if (!ci->qualname) {
		snprintf(out->buf, sizeof(out->buf), "<unknown 0x%llx>", (unsigned long long)f->code);
		out->name = out->buf;
		out->hidden = 0;
		out->file = "";
		out->line = out->firstlineno = 0;
		return;
	}
	line = ci->lt.n ? linetable_line(&ci->lt, f->instr) : -1;
	out->hidden = ci->hidden;
	out->name = ci->qualname;
	/* An empty name (CodeType.replace(co_qualname=""), or memory scribbled
	 * over): a label must still start with a name to be read back. */
	if (!out->name[0])
		out->name = "<no name>";
	out->file = full_paths ? ci->filename :
		symbols_short_path(ci->filename, t->cwd, t->cwd_len);
	if (!out->file[0])
		out->file = "<no file>";	/* compile(src, "", ...): still a code frame */
	out->line = line < 0 ? ci->firstlineno : line;
	if (out->line < 0)
		out->line = 0;	/* a scribbled co_firstlineno: no such line */
	out->firstlineno = ci->firstlineno;
	if (out->line == ci->firstlineno)
		debug_def_line(ci, f, line);
}
