// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests for user/asyncio.c (--async-aware, userspace half): task names
 * from the bytes the kernel copied (a str, an int N for "Task-N", a long
 * name cut, garbage), where the event loop's frames start (asyncio_keep),
 * the markers, and a record's decoding: awaiting tasks' coroutine chains
 * read from memory (built in this process, read back with process_vm_readv
 * on our own pid as from a target), kept only while the child still awaits
 * the parent the kernel saw. Objects are laid out with the 3.12 object
 * layout and asyncio offsets of this test's own choosing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "async_wait.h"
#include "asyncio.h"
#include "layout.h"
#include "symbols.h"

static struct target t;
static struct symbols sym;

struct fake_type {
	uint64_t w[128];
};

static struct fake_type ty_str, ty_int, ty_coro, ty_other;

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void type_init(struct fake_type *ty, const char *name)
{
	memset(ty, 0, sizeof(*ty));
	ty->w[t.layout.obj.tp_name / 8] = addr(name);
}

/* Offsets of the fake asyncio layout (as layout.c would give them). */
#define GEN_IFRAME	64
#define GEN_STATE	60
#define FR_SP		64
#define YIELD_FROM	-1
#define CLEARED		4

static int setup(void **state)
{
	struct py_async *a = &t.layout.async;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.pid = getpid();
	assert_int_equal(layout_from_version(0x030c01f0, 0, &t.layout), LAYOUT_OK);
	*a = (struct py_async){
		.ok = 1,
		.bpf = { .ts_task = 0, .task_lo = 96, .task_name = 136, .task_coro = 128,
			 .task_awaited_by = 96, .task_is_task = 108, .task_is_set = 109,
			 .coro_code = GEN_IFRAME, .set_used = 24, .set_mask = 32 },
		.gen_iframe = GEN_IFRAME, .gen_state = GEN_STATE,
		.state_yield_from = YIELD_FROM, .state_cleared = CLEARED,
		.fr_stackpointer = FR_SP, .await_slot = 1,
	};
	type_init(&ty_str, "str");
	type_init(&ty_int, "int");
	type_init(&ty_coro, "coroutine");
	type_init(&ty_other, "_GatheringFuture");
	return symbols_init(&sym);
}

static int teardown(void **state)
{
	(void)state;
	symbols_free(&sym);
	return 0;
}

/* A compact ASCII str as 3.12 lays it out, in buf (name bytes as copied). */
static void make_str(uint8_t *o, size_t size, const char *s)
{
	uint32_t state = 1u << 2 | 1u << 5 | 1u << 6;	/* kind 1, compact, ascii */
	uint64_t type = addr(&ty_str), len = strlen(s);

	memset(o, 0, size);
	memcpy(o + 8, &type, 8);
	memcpy(o + 16, &len, 8);
	memcpy(o + 32, &state, 4);
	memcpy(o + 40, s, len < size - 40 ? len : size - 40);
}

static void make_int(uint8_t *o, size_t size, uint32_t v)
{
	uint64_t type = addr(&ty_int), tag = 1 << 3;

	memset(o, 0, size);
	memcpy(o + 8, &type, 8);
	memcpy(o + 16, &tag, 8);
	memcpy(o + 24, &v, 4);
}

static void test_task_names(void **state)
{
	uint8_t o[TB_TASK_NAME_READ];
	char out[128];

	(void)state;
	make_str(o, sizeof(o), "c12.p3");
	asyncio_task_name(&t, o, sizeof(o), 0x1000, out, sizeof(out));
	assert_string_equal(out, "c12.p3");
	make_int(o, sizeof(o), 42);
	asyncio_task_name(&t, o, sizeof(o), 0x1000, out, sizeof(out));
	assert_string_equal(out, "Task-42");
	/* longer than the bytes copied: what there is, and "..." */
	make_str(o, sizeof(o), "a-very-long-task-name-that-the-kernel-could-not-copy-whole");
	asyncio_task_name(&t, o, sizeof(o), 0x1000, out, sizeof(out));
	assert_string_equal(out, "a-very-long-task-name-that-the-kernel-co...");
	/* neither str nor int: the address */
	memset(o, 0, sizeof(o));
	memcpy(o + 8, &(uint64_t){ addr(&ty_other) }, 8);
	asyncio_task_name(&t, o, sizeof(o), 0xabc, out, sizeof(out));
	assert_string_equal(out, "<task name 0xabc>");
	/* too few bytes to hold a type */
	asyncio_task_name(&t, o, 8, 0xabc, out, sizeof(out));
	assert_string_equal(out, "<task name 0xabc>");
}

static void test_keep_and_markers(void **state)
{
	struct task_chain *c = calloc(1, sizeof(*c) + 2 * sizeof(c->tasks[0]));
	struct tb_frame f[5] = {
		{ .code = 0x10 }, { .code = 0x20 }, { .code = 0x30 }, { .code = 0x20 },
		{ .code = 0x40 },	/* leaf first: 0x40 is the loop's outermost */
	};
	char buf[80];

	(void)state;
	assert_non_null(c);
	c->depth = 2;
	c->code = 0x20;
	/* recursion: the outermost frame of the coroutine's code */
	assert_int_equal(asyncio_keep(c, f, 5), 4);
	c->code = 0x99;
	assert_int_equal(asyncio_keep(c, f, 5), 0);	/* not on the stack: the loop's */
	assert_null(asyncio_root_marker(c));
	c->flags = TB_TASK_SEVERAL;
	assert_string_equal(asyncio_root_marker(c), "<awaited by several tasks>");
	c->flags = TB_TASK_DEEP;
	assert_string_equal(asyncio_root_marker(c), "[task chain truncated]");
	assert_null(asyncio_link_marker(c, 0, buf, sizeof(buf)));
	c->tasks[0].flags = TB_TASK_SEVERAL;
	c->tasks[0].awaiters = 2;
	assert_string_equal(asyncio_link_marker(c, 0, buf, sizeof(buf)),
			    "<awaited by 2 tasks: the lowest-address one shown>");
	assert_null(asyncio_link_marker(c, 1, buf, sizeof(buf)));	/* the outermost */
	c->depth = 0;
	asyncio_free(c);
}

/* A coroutine: its type, its frame (code, instruction pointer) at
 * GEN_IFRAME, its state, and the stack slot below the stack pointer. */
struct fake_coro {
	uint64_t w[40];
	uint64_t stack[2];
};

static void make_coro(struct fake_coro *g, uint64_t code, int8_t state, const void *awaits)
{
	const struct tb_walk *w = &t.layout.walk;
	uint64_t instr = code + w->off.co_adaptive + 2 * 5;	/* instruction 5 */

	memset(g, 0, sizeof(*g));
	g->w[1] = addr(&ty_coro);
	memcpy((uint8_t *)g + GEN_STATE, &state, 1);
	memcpy((uint8_t *)g + GEN_IFRAME + w->off.fr_code, &code, 8);
	memcpy((uint8_t *)g + GEN_IFRAME + w->off.fr_instr, &instr, 8);
	g->stack[0] = addr(awaits);
	memcpy((uint8_t *)g + GEN_IFRAME + FR_SP, &(uint64_t){ addr(&g->stack[1]) }, 8);
}

static void test_coro_frames(void **state)
{
	static struct fake_coro a, b, c;
	static uint64_t future[4];
	struct tb_frame f[TASK_FRAMES_MAX];

	(void)state;
	future[1] = addr(&ty_other);
	make_coro(&c, 0x3000, YIELD_FROM, future);	/* awaits a future: ends */
	make_coro(&b, 0x2000, YIELD_FROM, &c);
	make_coro(&a, 0x1000, YIELD_FROM, &b);
	assert_int_equal(asyncio_coro_frames(&t, addr(&a), f, TASK_FRAMES_MAX), 3);
	assert_int_equal(f[0].code, 0x1000);
	assert_int_equal(f[1].code, 0x2000);
	assert_int_equal(f[2].code, 0x3000);
	assert_int_equal(f[0].instr, 5);
	assert_int_equal(asyncio_coro_frames(&t, addr(&a), f, 2), 2);	/* bounded */
	make_coro(&b, 0x2000, -2, &c);		/* suspended in a plain yield: ends */
	assert_int_equal(asyncio_coro_frames(&t, addr(&a), f, TASK_FRAMES_MAX), 2);
	make_coro(&a, 0x1000, CLEARED, &b);	/* finished */
	assert_int_equal(asyncio_coro_frames(&t, addr(&a), f, TASK_FRAMES_MAX), 0);
	/* a cycle stops at the bound */
	make_coro(&a, 0x1000, YIELD_FROM, &a);
	assert_int_equal(asyncio_coro_frames(&t, addr(&a), f, TASK_FRAMES_MAX), TASK_FRAMES_MAX);
}

/* A TaskObj with the fields of the fake layout. */
struct fake_task {
	uint64_t w[24];
};

static void make_task(struct fake_task *k, const void *coro, const void *name, const void *by)
{
	memset(k, 0, sizeof(*k));
	k->w[96 / 8] = addr(by);
	((uint8_t *)k)[108] = 1;
	k->w[128 / 8] = addr(coro);
	k->w[136 / 8] = addr(name);
}

static void test_decode_keeps_only_current_parents(void **state)
{
	static struct fake_task child, parent;
	static struct fake_coro pc, cc;
	static uint8_t cname[64], pname[64];
	static uint64_t future[4];
	static struct tb_tasks rec;
	struct task_chain *c;

	(void)state;
	future[1] = addr(&ty_other);
	make_str(cname, sizeof(cname), "c1.p0");
	make_str(pname, sizeof(pname), "p0");
	make_coro(&pc, 0x1000, YIELD_FROM, future);
	make_coro(&cc, 0x2000, YIELD_FROM, future);
	make_task(&parent, &pc, pname, NULL);
	make_task(&child, &cc, cname, &parent);
	memset(&rec, 0, sizeof(rec));
	rec.kind = TB_REC_TASKS;
	rec.depth = 2;
	rec.tasks[0] = (struct tb_task){ .task = addr(&child), .coro = addr(&cc),
					 .name = addr(cname) };
	rec.tasks[1] = (struct tb_task){ .task = addr(&parent), .coro = addr(&pc),
					 .name = addr(pname) };
	memcpy(rec.tasks[0].name_bytes, cname, sizeof(cname));
	memcpy(rec.tasks[1].name_bytes, pname, sizeof(pname));

	c = asyncio_decode(&t, &sym, &rec, TB_TASKS_HDR_SIZE + 2 * sizeof(struct tb_task));
	assert_non_null(c);
	assert_int_equal(c->depth, 2);
	assert_string_equal(c->tasks[0].label, "c1.p0");
	assert_string_equal(c->tasks[1].label, "p0");
	assert_int_equal(c->tasks[0].nframes, 0);	/* the running task's are the thread's */
	assert_int_equal(c->tasks[1].nframes, 1);	/* the parent awaits a future */
	assert_int_equal(c->tasks[1].frames[0].code, 0x1000);
	asyncio_free(c);

	/* the child finished and its memory awaits another now: the parent
	 * keeps its label (the kernel's reading), not frames read too late */
	make_task(&child, &cc, cname, future);
	c = asyncio_decode(&t, &sym, &rec, TB_TASKS_HDR_SIZE + 2 * sizeof(struct tb_task));
	assert_non_null(c);
	assert_string_equal(c->tasks[1].label, "p0");
	assert_int_equal(c->tasks[1].nframes, 0);
	asyncio_free(c);

	/* records that do not hold what they say */
	assert_null(asyncio_decode(&t, &sym, &rec, TB_TASKS_HDR_SIZE + sizeof(struct tb_task)));
	rec.depth = TB_ASYNC_DEPTH + 1;
	assert_null(asyncio_decode(&t, &sym, &rec, sizeof(rec)));
	rec.depth = 0;
	assert_null(asyncio_decode(&t, &sym, &rec, sizeof(rec)));
}


/* A thread state whose task list (head at 16) holds tasks (node at 160). */
struct fake_tstate {
	uint64_t running, pad, head[2];
};

static void link_tasks(struct fake_tstate *ts, struct fake_task **v, int n)
{
	uint64_t head = addr(ts->head);
	int i;

	ts->head[0] = n ? addr(&v[0]->w[20]) : head;
	for (i = 0; i < n; i++)
		v[i]->w[20] = i + 1 < n ? addr(&v[i + 1]->w[20]) : head;
}

/* The stack of snapshot w whose leaf task is named `name`, or NULL. */
static const struct wait_stack *stack_of(const struct wait_snap *w, const char *name)
{
	uint32_t i;

	for (i = 0; i < w->n; i++)
		if (!strcmp(w->v[i].chain->tasks[0].label, name))
			return &w->v[i];
	return NULL;
}

/*
 * Waiting tasks, as async_wait_snapshot() reads them from a thread running
 * none: p awaits a (and b, finished: left out); s is awaited by a set of
 * two (r and p): r awaits, so only a and s are waiting leaves, each with
 * its chain; stack ids are the same for the same tasks in the same place.
 */
static void test_wait_snapshot_leaves(void **state)
{
	static struct fake_task p, a, b, r, s;
	static struct fake_coro pc, ac, bc, rc, sc;
	static uint8_t pn[64], an[64], bn[64], rn[64], sn[64];
	static uint64_t future[4], set[8], table[16];
	static struct fake_tstate ts;
	struct fake_task *v[] = { &p, &a, &b, &r, &s };
	const struct wait_stack *ws;
	struct wait_snap *w;
	uint64_t id_a, lo;

	(void)state;
	t.layout.async.ts_tasks_head = 16;
	t.layout.async.task_node = 160;
	future[1] = addr(&ty_other);
	make_str(pn, sizeof(pn), "p");
	make_str(an, sizeof(an), "a");
	make_str(bn, sizeof(bn), "b");
	make_str(rn, sizeof(rn), "r");
	make_str(sn, sizeof(sn), "s");
	make_coro(&pc, 0x1000, YIELD_FROM, future);
	make_coro(&ac, 0x2000, YIELD_FROM, future);
	make_coro(&bc, 0x3000, CLEARED, future);
	make_coro(&rc, 0x4000, YIELD_FROM, future);
	make_coro(&sc, 0x5000, YIELD_FROM, future);
	make_task(&p, &pc, pn, NULL);
	make_task(&a, &ac, an, &p);
	make_task(&b, &bc, bn, &p);
	make_task(&r, &rc, rn, NULL);
	make_task(&s, &sc, sn, set);
	((uint8_t *)&s)[109] = 1;	/* awaited by the set {r, p} */
	set[4] = 7;			/* mask: 8 slots */
	set[5] = addr(table);
	table[2] = addr(&r);
	table[3] = 11;
	table[10] = addr(&p);
	table[11] = 12;
	link_tasks(&ts, v, 5);

	w = async_wait_snapshot(&t, &sym, addr(&ts));
	assert_non_null(w);
	assert_int_equal(w->n, 2);
	ws = stack_of(w, "a");
	assert_non_null(ws);
	assert_int_equal(ws->chain->depth, 2);
	assert_string_equal(ws->chain->tasks[1].label, "p");
	assert_int_equal(ws->chain->tasks[1].nframes, 1);
	assert_int_equal(ws->rec->depth, 1);
	assert_int_equal(ws->rec->frames[0].code, 0x2000);
	/* all of the task's own frames are kept: none is the loop's */
	assert_int_equal(asyncio_keep(ws->chain, ws->rec->frames, ws->rec->depth), 1);
	id_a = ws->rec->stack_id;
	ws = stack_of(w, "s");
	assert_non_null(ws);
	lo = addr(&r) < addr(&p) ? addr(&r) : addr(&p);
	assert_int_equal(ws->chain->depth, 2);
	assert_string_equal(ws->chain->tasks[1].label, lo == addr(&r) ? "r" : "p");
	assert_int_equal(ws->chain->tasks[0].flags, TB_TASK_SEVERAL);
	assert_int_equal(ws->chain->tasks[0].awaiters, 2);
	assert_true(ws->rec->stack_id != id_a);
	async_wait_free(w);

	/* the same tasks in the same places: the same ids */
	w = async_wait_snapshot(&t, &sym, addr(&ts));
	assert_non_null(w);
	assert_int_equal(stack_of(w, "a")->rec->stack_id, id_a);
	async_wait_free(w);
	/* a later instruction of a's coroutine: another stack */
	make_coro(&ac, 0x2000, YIELD_FROM, future);
	memcpy((uint8_t *)&ac + GEN_IFRAME + t.layout.walk.off.fr_instr,
	       &(uint64_t){ 0x2000 + t.layout.walk.off.co_adaptive + 2 * 9 }, 8);
	w = async_wait_snapshot(&t, &sym, addr(&ts));
	assert_non_null(w);
	assert_true(stack_of(w, "a")->rec->stack_id != id_a);
	async_wait_free(w);

	/* a task running: its stack is the kernel's sample, not a wait */
	ts.running = addr(&a);
	assert_null(async_wait_snapshot(&t, &sym, addr(&ts)));
	ts.running = 0;
	/* no task waits */
	link_tasks(&ts, v, 0);
	assert_null(async_wait_snapshot(&t, &sym, addr(&ts)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_task_names),
		cmocka_unit_test(test_keep_and_markers),
		cmocka_unit_test(test_coro_frames),
		cmocka_unit_test(test_decode_keeps_only_current_parents),
		cmocka_unit_test(test_wait_snapshot_leaves),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
