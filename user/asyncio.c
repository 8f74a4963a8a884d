// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asyncio.h"
#include "pyobj.h"
#include "pystr.h"
#include "pywalk.h"
#include "remote.h"
#include "util.h"

#define LABEL_MAX	200

void asyncio_task_name(const struct target *t, const uint8_t *obj, size_t have, uint64_t addr,
		       char *out, size_t outsz)
{
	size_t off, nbytes, cut;
	char type[32];
	int64_t n;
	int kind;

	snprintf(out, outsz, "<task name 0x%" PRIx64 ">", addr);
	if (have < 16 || pyobj_type_name_at(t, load_u64(obj + 8), type, sizeof(type)))
		return;
	if (!strcmp(type, "int")) {
		/* 3.13+ keep an unnamed task's number and spell it on demand */
		if (!pyobj_long_from(t, obj, have, &n))
			snprintf(out, outsz, "Task-%" PRId64, n);
		return;
	}
	if (strcmp(type, "str") ||
	    pystr_locate(&t->layout.str, obj, have, 1 << 20, &off, &nbytes, &kind, NULL))
		return;
	/* A long name was copied in part: show what there is, and say so. */
	cut = off < have ? (have - off) / kind * kind : 0;
	if (nbytes > cut)
		nbytes = cut;
	pystr_to_utf8(obj + off, nbytes, kind, out, outsz);
	if (nbytes == cut && strlen(out) + 4 < outsz)
		strcat(out, "...");
}

/* The code object of a coroutine frame read at fr; 0 if none. */
static int coro_frame(const struct target *t, const uint8_t *fr, struct tb_frame *out)
{
	const struct tb_walk *w = &t->layout.walk;
	uint64_t code = tb_frame_code(w, fr);

	if (!code)
		return -ENOENT;
	out->code = code;
	out->instr = tb_instr_recorded(tb_instr_index(w, code, tb_frame_instr(w, fr)));
	out->fp = 0;	/* the symbolizer checks the type; no fingerprint to hold it to */
	return 0;
}

uint32_t asyncio_coro_frames(const struct target *t, uint64_t coro, struct tb_frame *out,
			     uint32_t max)
{
	const struct py_async *a = &t->layout.async;
	uint8_t gen[512];
	uint64_t sp, next, type, next_type;
	size_t len = a->gen_iframe + t->layout.walk.off.fr_read;
	uint32_t n = 0;

	if (!a->ok || len > sizeof(gen) || a->fr_stackpointer + 8 > t->layout.walk.off.fr_read + 64)
		return 0;
	while (coro && n < max) {
		if (remote_read(t->pid, coro, gen, len))
			break;
		if ((int8_t)gen[a->gen_state] == a->state_cleared ||
		    coro_frame(t, gen + a->gen_iframe, &out[n]))
			break;
		n++;
		if ((int8_t)gen[a->gen_state] != a->state_yield_from)
			break;
		/* Awaiting: what it awaits is on top of its value stack. A
		 * coroutine of the same type is followed; a future or a task
		 * ends the chain (that is another task's business). */
		type = load_u64(gen + 8);
		if (remote_read(t->pid, coro + a->gen_iframe + a->fr_stackpointer, &sp, 8) || !sp ||
		    remote_read(t->pid, sp - 8 * a->await_slot, &next, 8))
			break;
		next &= t->layout.walk.off.exec_mask;
		if (!next || remote_read(t->pid, next + 8, &next_type, 8) || next_type != type)
			break;
		coro = next;
	}
	return n;
}

int asyncio_set_members(const struct target *t, uint64_t set, uint64_t *out)
{
	const struct tb_async *b = &t->layout.async.bpf;
	uint64_t hdr[2], ent[2 * TB_SET_SMALL];
	int k, n = 0;

	if (remote_read(t->pid, set + b->set_mask, hdr, sizeof(hdr)) || hdr[0] >= TB_SET_SMALL ||
	    remote_read(t->pid, hdr[1], ent, sizeof(ent)))
		return -EFAULT;
	/* a removed entry keeps a dummy key with hash -1 */
	for (k = 0; k < TB_SET_SMALL; k++)
		if (ent[2 * k] && ent[2 * k + 1] != (uint64_t)-1)
			out[n++] = ent[2 * k];
	return n;
}

/* Is task among the keys of the (small) set at `set`? */
static int in_set(const struct target *t, uint64_t set, uint64_t task)
{
	uint64_t m[TB_SET_SMALL];
	int k, n = asyncio_set_members(t, set, m);

	for (k = 0; k < n; k++)
		if (m[k] == task)
			return 1;
	return 0;
}

/* Is the task field at off (size bytes) inside the TB_TASK_READ bytes read? */
static int task_field_ok(const struct tb_async *b, uint16_t off, unsigned size)
{
	return off >= b->task_lo && off - b->task_lo + size <= TB_TASK_READ;
}

/* Does child (a task of the record) still await parent, as in the sample? */
static int still_awaits(const struct target *t, const struct tb_task *child,
			const struct tb_task *parent)
{
	const struct tb_async *b = &t->layout.async.bpf;
	uint8_t buf[TB_TASK_READ];
	uint64_t by;

	if (!task_field_ok(b, b->task_awaited_by, 8) || !task_field_ok(b, b->task_coro, 8) ||
	    !task_field_ok(b, b->task_name, 8) || !task_field_ok(b, b->task_is_set, 1) ||
	    remote_read(t->pid, child->task + b->task_lo, buf, sizeof(buf)))
		return 0;
	by = load_u64(buf + (b->task_awaited_by - b->task_lo));
	if (load_u64(buf + (b->task_coro - b->task_lo)) != child->coro ||
	    load_u64(buf + (b->task_name - b->task_lo)) != child->name)
		return 0;
	if (buf[(b->task_is_set - b->task_lo)])
		return in_set(t, by, parent->task);
	return by == parent->task;
}

/* "NAME QUALNAME": the task's name, then its coroutine's function. */
static char *task_label(const struct target *t, struct symbols *sym, const struct tb_task *tk)
{
	struct tb_frame f = { .code = tk->code, .instr = -1, .fp = 0 };
	const struct code_info *ci;
	char name[LABEL_MAX / 2], label[LABEL_MAX];

	asyncio_task_name(t, tk->name_bytes, sizeof(tk->name_bytes), tk->name, name,
			  sizeof(name));
	snprintf(label, sizeof(label), "%s", name);
	if (tk->code) {
		symbols_resolve(sym, t, &f, 1);
		ci = symbols_get(sym, t, &f);
		if (ci->qualname)
			snprintf(label, sizeof(label), "%s %s", name, ci->qualname);
	}
	return strdup(label);
}

struct task_chain *asyncio_decode(const struct target *t, struct symbols *sym,
				  const struct tb_tasks *rec, size_t size)
{
	struct task_chain *c;
	struct task_view *v;
	uint32_t i, depth = rec->depth;

	if (size < TB_TASKS_HDR_SIZE || !depth || depth > TB_ASYNC_DEPTH ||
	    size < TB_TASKS_HDR_SIZE + depth * sizeof(struct tb_task) || !t->layout.async.ok) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c) + depth * sizeof(c->tasks[0]));
	if (!c)
		return NULL;
	c->depth = depth;
	c->code = rec->tasks[0].code;
	c->flags = rec->tasks[depth - 1].flags;
	for (i = 0; i < depth; i++) {
		v = &c->tasks[i];
		v->flags = rec->tasks[i].flags;
		v->awaiters = rec->tasks[i].awaiters;
		v->label = task_label(t, sym, &rec->tasks[i]);
		if (!v->label) {
			asyncio_free(c);
			errno = ENOMEM;
			return NULL;
		}
		if (!i)
			continue;	/* the running task's frames are the thread's */
		v->nframes = asyncio_coro_frames(t, rec->tasks[i].coro, v->frames, TASK_FRAMES_MAX);
		/* Read after the sample: kept only if the child awaits it still. */
		if (!still_awaits(t, &rec->tasks[i - 1], &rec->tasks[i]))
			v->nframes = 0;
		symbols_resolve(sym, t, v->frames, v->nframes);
	}
	return c;
}

void asyncio_free(struct task_chain *c)
{
	uint32_t i;

	if (!c)
		return;
	for (i = 0; i < c->depth; i++)
		free(c->tasks[i].label);
	free(c);
}

uint32_t asyncio_keep(const struct task_chain *c, const struct tb_frame *frames, uint32_t depth)
{
	uint32_t i;

	for (i = depth; c->code && i-- > 0;)
		if (frames[i].code == c->code)
			return i + 1;
	return 0;
}

const char *asyncio_root_marker(const struct task_chain *c)
{
	if (c->flags & TB_TASK_SEVERAL)
		return "<awaited by several tasks>";
	if (c->flags & TB_TASK_DEEP)
		return "[task chain truncated]";
	if (c->flags & TB_TASK_NOT_TASK)
		return "<awaited by a non-task>";
	return NULL;
}

const char *asyncio_link_marker(const struct task_chain *c, uint32_t i, char *buf, size_t len)
{
	if (i + 1 >= c->depth || !(c->tasks[i].flags & TB_TASK_SEVERAL))
		return NULL;
	snprintf(buf, len, "<awaited by %u tasks: the lowest-address one shown>",
		 c->tasks[i].awaiters);
	return buf;
}

static int read_task(const struct target *t, uint64_t addr, struct async_task *out)
{
	const struct tb_async *b = &t->layout.async.bpf;
	uint8_t buf[TB_TASK_READ];

	if (remote_read(t->pid, addr + b->task_lo, buf, sizeof(buf)))
		return -EFAULT;
	out->addr = addr;
	out->coro = load_u64(buf + (b->task_coro - b->task_lo));
	out->name = load_u64(buf + (b->task_name - b->task_lo));
	out->parent = load_u64(buf + (b->task_awaited_by - b->task_lo));
	out->several = buf[b->task_is_set - b->task_lo] != 0;
	return 0;
}

int asyncio_list_tasks(const struct target *t, uint64_t tstate, struct async_task *v, int max,
		       uint64_t *running)
{
	const struct py_async *a = &t->layout.async;
	uint64_t head = tstate + a->ts_tasks_head, node;
	int n = 0;

	if (remote_read(t->pid, tstate + a->bpf.ts_task, running, 8))
		*running = 0;
	if (remote_read(t->pid, head, &node, 8))
		return -EFAULT;
	while (node && node != head && n < max) {
		if (read_task(t, node - a->task_node, &v[n]))
			break;
		n++;
		if (remote_read(t->pid, node, &node, 8))
			break;
	}
	return n;
}
