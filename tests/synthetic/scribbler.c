// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * scribbler - a synthetic CPython 3.14 / 3.15 process that scribbles random
 * garbage over its own frame chains, code objects, strings, thread states
 * and interpreter while it is being profiled.
 *
 * It lays out exactly what fakepy does (it includes tests/synthetic/fakepy.c
 * and reuses its builders, so the two never drift apart), then two threads
 * spin on Python stacks while the main thread, every round (~1 ms):
 *   - undoes the previous round's damage,
 *   - rebuilds the worker's and its own chain in fresh datastack space,
 *   - damages a few random things: a frame's previous / f_executable /
 *     instr_ptr / owner (garbage, NULL, itself, a cycle, the kernel half,
 *     a non-canonical address, an unmapped page, a non-code object), a code
 *     object's ob_type / co_version / name, file and line-table pointers /
 *     co_firstlineno, a str's length / state / characters, a bytes object's
 *     size and contents, a thread state's current frame / next / native
 *     thread id, the interpreter's thread list,
 *   - spins with that stack in place.
 * A profiler must survive this: never crash, never hang, keep its counters
 * consistent, report what it could not read as [partial] / <unknown ...> /
 * skipped frames, and show only names that really are in the process.
 *
 * usage: scribbler VERSION [SECONDS] [SEED]   VERSION 3.14 or 3.15; prints
 *        "READY <pid>", exits 0 after SECONDS (default 60).
 */
#define main fakepy_main
#include "fakepy.c"
#undef main

#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_DAMAGE	64
#define MAX_SAVE	64

struct damage {
	uint8_t *p;
	size_t n;
	uint8_t save[MAX_SAVE];
};

static struct damage dmg[MAX_DAMAGE];
static size_t ndmg;
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint8_t *dead_page;	/* mapped then unmapped: reads of it fail */
static uint64_t top0[2];	/* datastack tops after build(): rounds start here */
static size_t arena0;		/* arena use after build(): generators of a round go here */
static volatile int stop_worker;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

/* Remember n bytes at p, to put them back next round. */
static uint8_t *touch(void *p, size_t n)
{
	struct damage *d;

	if (ndmg == MAX_DAMAGE || n > MAX_SAVE)
		return NULL;
	d = &dmg[ndmg++];
	d->p = p;
	d->n = n;
	memcpy(d->save, p, n);
	return p;
}

static void repair(void)
{
	while (ndmg) {
		struct damage *d = &dmg[--ndmg];

		memcpy(d->p, d->save, d->n);
	}
}

/* A pointer-sized value a broken process could hold. */
static uint64_t garbage(uint64_t self, uint64_t other)
{
	switch (rnd() % 12) {
	case 0: return 0;
	case 1: return rnd();
	case 2: return self;				/* a one-frame cycle */
	case 3: return other;				/* a longer cycle, or a frame */
	case 4: return A(arena) + rnd() % ARENA_SIZE;	/* inside the heap, misaligned */
	case 5: return A(arena) + (rnd() % ARENA_SIZE & ~7ULL);
	case 6: return 0xffff888000000000ULL + (rnd() & 0xffffff8ULL);	/* kernel */
	case 7: return 0x8000000000000000ULL | rnd();	/* non-canonical */
	case 8: return A(dead_page) + (rnd() & 0xff8);	/* unmapped */
	case 9: return A(PyCode_Type);			/* a type, not a code object */
	case 10: return A(_PyRuntime);
	default: return self ^ (1ULL << (rnd() % 48));	/* one bit flipped */
	}
}

static void smash64(void *base, uint64_t off, uint64_t self, uint64_t other)
{
	uint8_t *p = touch((uint8_t *)base + off, 8);

	if (p)
		put64(p, 0, garbage(self, other));
}

static void smash_bytes(void *base, uint64_t off, size_t n)
{
	uint8_t *p = touch((uint8_t *)base + off, n);
	size_t i;

	for (i = 0; p && i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* The frames of a chain, leaf first (before it is damaged). */
static size_t chain_frames(uint64_t leaf, uint8_t **out, size_t max)
{
	size_t n = 0;

	while (leaf && n < max) {
		out[n++] = (uint8_t *)(uintptr_t)leaf;
		memcpy(&leaf, out[n - 1] + L->interpreter_frame.previous, 8);
	}
	return n;
}

static void damage_frame(uint8_t *f, uint8_t *other)
{
	const struct d_frame *o = &L->interpreter_frame;

	switch (rnd() % 5) {
	case 0:
		smash64(f, o->previous, A(f), A(other));
		break;
	case 1:
		smash64(f, o->executable, A(f), A(other));
		break;
	case 2:
		smash64(f, o->instr_ptr, A(f), A(other));
		break;
	case 3:
		smash_bytes(f, o->owner, 1);
		break;
	default:	/* the whole frame */
		smash_bytes(f, 0, o->size < MAX_SAVE ? o->size : MAX_SAVE);
	}
}

/* An object a code object points to; the pointer may be damaged already. */
static uint8_t *obj_at(const uint8_t *base, uint64_t off)
{
	uint64_t v;

	memcpy(&v, base + off, 8);
	if (v < A(arena) || v >= A(arena) + ARENA_SIZE - 256)
		return NULL;
	return (uint8_t *)(uintptr_t)v;
}

static void damage_code(uint8_t *co)
{
	const struct d_code *o = &L->code_object;
	uint8_t *s;

	switch (rnd() % 9) {
	case 0:
		smash64(co, L->pyobject.ob_type, A(co), A(type_str));
		break;
	case 1:
		smash_bytes(co, CO_VERSION, 4);
		break;
	case 2:
		smash64(co, o->qualname, A(co), A(obj_at(co, o->filename)));
		break;
	case 3:
		smash64(co, o->filename, A(co), A(obj_at(co, o->linetable)));
		break;
	case 4:
		smash64(co, o->linetable, A(co), A(obj_at(co, o->qualname)));
		break;
	case 5:
		smash_bytes(co, o->firstlineno, 4);
		break;
	case 6:		/* the name: huge, negative or odd length, random state */
		s = obj_at(co, rnd() & 1 ? o->qualname : o->filename);
		if (!s)
			break;
		if (rnd() & 1)
			smash64(s, L->unicode_object.length, 1ULL << 40, (uint64_t)-5);
		else
			smash_bytes(s, L->unicode_object.state, 4);
		break;
	case 7:		/* the characters themselves */
		s = obj_at(co, o->qualname);
		if (s)
			smash_bytes(s, L->unicode_object.asciiobject_size, 8);
		break;
	default:	/* the location table: size and bytes */
		s = obj_at(co, o->linetable);
		if (!s)
			break;
		if (rnd() & 1)
			smash64(s, L->bytes_object.ob_size, 1ULL << 33, (uint64_t)-1);
		else
			smash_bytes(s, L->bytes_object.ob_sval, 6);
	}
}

static void damage_thread(struct thread *t)
{
	const struct d_tstate *o = &L->thread_state;

	switch (rnd() % 4) {
	case 0:
		smash64(t->ts, o->current_frame, A(t->ts), A(t->chunk));
		break;
	case 1:
		smash64(t->ts, o->next, A(t->ts), A(interp));
		break;
	case 2:
		smash64(t->ts, o->native_thread_id, (uint64_t)gettid(), 0);
		break;
	default:
		smash64(interp, L->interpreter_state.threads_head, A(t->ts), A(interp));
	}
}

static void set_frame(struct thread *t, uint64_t frame)
{
	put64(t->ts, L->thread_state.current_frame, frame);
}

/* Fresh chains for both threads, then some damage. */
static void round_once(void)
{
	const struct link *main_chain = main_phases[rnd() % NPHASES];
	uint8_t *frames[2][32];
	uint64_t leaf[2];
	size_t n[2], i, hits = 1 + rnd() % 4;

	repair();
	for (i = 0; i < 2; i++)
		threads[i].top = top0[i];
	arena_used = arena0;
	leaf[0] = build_chain(&threads[0], main_chain);
	leaf[1] = build_chain(&threads[1], worker);
	set_frame(&threads[0], leaf[0]);
	set_frame(&threads[1], leaf[1]);
	/* Listed before any damage: the damaged chains are never read here. */
	n[0] = chain_frames(leaf[0], frames[0], 32);
	n[1] = chain_frames(leaf[1], frames[1], 32);
	for (i = 0; i < hits; i++) {
		int k = rnd() & 1;
		struct thread *t = &threads[k];
		uint64_t what = rnd() % 10;

		if (what < 5 && n[k])
			damage_frame(frames[k][rnd() % n[k]], frames[k][rnd() % n[k]]);
		else if (what < 8)
			damage_code(code_objs[rnd() % NCODES]);
		else
			damage_thread(t);
	}
}

static void *worker_loop(void *arg)
{
	struct thread *t = arg;

	claim_thread(t);
	__atomic_store_n(&worker_ready, 1, __ATOMIC_RELEASE);
	while (!stop_worker)
		spin(1UL << 20);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 2 ? atof(argv[2]) : 60, end;
	unsigned long rounds = 0;
	pthread_t th;
	size_t v;
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: scribbler 3.14|3.15 [SECONDS] [SEED]\n");
		return 2;
	}
	for (v = 0; v < sizeof(versions) / sizeof(versions[0]); v++)
		if (!strcmp(argv[1], versions[v].arg) && !versions[v].free_threaded &&
		    versions[v].hex % 256 == 0xf0 && versions[v].minor == (int)(versions[v].hex >> 16 & 0xff))
			V = &versions[v];
	if (!V)
		die("version %s: use 3.14 or 3.15", argv[1]);
	L = V->lay;
	if (argc > 3)
		rng_state = strtoull(argv[3], NULL, 0) | 1;
	dead_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dead_page == MAP_FAILED || munmap(dead_page, 4096))
		die("mmap: %s", strerror(errno));
	build();
	top0[0] = threads[0].top;
	top0[1] = threads[1].top;
	arena0 = arena_used;
	claim_thread(&threads[0]);
	set_frame(&threads[0], phase_leaf[0]);
	err = pthread_create(&th, NULL, worker_loop, &threads[1]);
	if (err)
		die("pthread_create: %s", strerror(err));
	while (!__atomic_load_n(&worker_ready, __ATOMIC_ACQUIRE))
		;
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	for (end = now() + seconds; now() < end; rounds++) {
		round_once();
		spin(200000 + rnd() % 400000);
	}
	stop_worker = 1;
	pthread_join(th, NULL);
	repair();
	fprintf(stderr, "scribbler: %lu rounds\n", rounds);
	return 0;
}
