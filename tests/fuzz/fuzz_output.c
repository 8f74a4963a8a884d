// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fuzz every writer in user/output/ (collapsed, svg, speedscope, pprof,
 * summary, heatmap) on a struct resolved built from the input: frame names and
 * files of any bytes (invalid UTF-8, ';', newlines, '<', '&', quotes; long
 * ones by repetition), odd line numbers, processes with hostile names,
 * deep stacks, huge counts.
 *
 * Properties, besides "no crash, no leak":
 *  - each writer succeeds into a memory stream, and gives the same bytes
 *    twice (no uninitialised reads, no dependence on addresses);
 *  - collapsed: one `stack COUNT` line per distinct stack, counts add up
 *    to the total, no control characters, and valid UTF-8 whenever every
 *    name and file is;
 *  - svg: valid UTF-8, tags nest, every '&' starts an entity and no '<' or
 *    '>' appears in text (a process or frame name cannot inject markup);
 *  - speedscope: one valid JSON value of valid UTF-8;
 *  - pprof: a gzip stream holding a well-formed protobuf message;
 *  - summary: valid UTF-8, no control characters but newlines;
 *  - pstats: one marshal dict of (str, int, str) -> (int, int, float,
 *    float, dict of the same keys -> (int, int, float, float)), every str
 *    valid UTF-8 (Python's marshal refuses anything else);
 *  - heatmap: a whole HTML page (source files named by frames are opened:
 *    whatever they hold is escaped like any other text);
 *  - the time-ordered formats, on a timeline (ticks in time order, threads
 *    with hostile names, off-CPU intervals, big weights) when the input
 *    asks for one: gecko and chrometrace one valid JSON value of valid
 *    UTF-8, chrometrace's "B" and "E" events balanced; speedscope then
 *    writes its time-ordered shape;
 *  - binary: the recording reads back (output/tby_read.c) into a profile
 *    from which every writer gives the same bytes as from the original;
 *  - a stream that fails after N bytes makes the writer return -EPIPE
 *    (the write's error), never 0, never a crash.
 */
#include <errno.h>

#include "fuzz.h"
#include "outcheck.h"
#include "output/output.h"
#include "output/emit.h"
#include "output/tby.h"

#define MAX_FRAMES	48
#define MAX_SAMPLES	64
#define MAX_PROCS	6
#define MAX_THREADS	5
#define MAX_TICKS	160

struct built {
	struct resolved r;
	struct rframe fr[MAX_FRAMES];
	struct rframe *frp[MAX_FRAMES];
	struct rsample s[MAX_SAMPLES];
	struct rproc p[MAX_PROCS];
	struct rthread th[MAX_THREADS];
	struct rtick tk[MAX_TICKS];
	const char *event;
	int all_utf8;		/* every name and file is valid UTF-8 */
};

static const char *const events[] = {
	"cpu-clock", "task-clock", "page-faults", "cycles", "wall", NULL,
};

static char *repeat(char *s, size_t times)
{
	size_t n = strlen(s), i;
	char *out;

	if (times <= 1 || !n)
		return s;
	out = malloc(n * times + 1);
	FUZZ_CHECK(out, "malloc");
	for (i = 0; i < times; i++)
		memcpy(out + i * n, s, n);
	out[n * times] = 0;
	free(s);
	return out;
}

/* Ticks in time order over the samples, the threads they name. */
static void build_timeline(struct fz *f, struct built *b, size_t ns, size_t np)
{
	size_t i, nt = 1 + fz_u8(f) % MAX_THREADS, nk = fz_u8(f) % MAX_TICKS;
	uint64_t t = 0;

	for (i = 0; i < nt; i++) {
		uint8_t shape = fz_u8(f);

		b->th[i].proc = fz_u8(f) % np;
		b->th[i].tid = fz_u32(f);
		if (i && (shape & 2)) {	/* a lane of an earlier thread */
			b->th[i].proc = b->th[(shape >> 2) % i].proc;
			b->th[i].tid = b->th[(shape >> 2) % i].tid;
		}
		b->th[i].name = (shape & 1) ? fz_str(f, 64) : NULL;
	}
	for (i = 0; i < nk; i++) {
		struct rtick *k = &b->tk[i];
		uint8_t shape = fz_u8(f);

		t += shape & 1 ? 0 : fz_u32(f);	/* equal times too */
		k->sample = fz_u8(f) % ns;
		k->thread = fz_u8(f) % nt;
		k->tid = b->th[k->thread].tid;
		k->t_ns = t;
		k->end_ns = t + (shape & 2 ? (uint64_t)fz_u32(f) * 1000 : 0);
		k->weight = shape & 4 ? 1 + fz_u8(f) : 1;
		k->cpu = fz_u8(f);
	}
	b->r.timeline = 1;
	b->r.ticks = b->tk;
	b->r.nticks = nk;
	b->r.threads = b->th;
	b->r.nthreads = nt;
	/* threads of one proc and tid are lanes (asyncio's waiting tasks):
	 * numbered as the profile's makers number them */
	FUZZ_CHECK(resolved_number_lanes(&b->r) == 0, "lanes: out of memory");
}

static void build(struct fz *f, struct built *b)
{
	size_t i, j, nf, ns, np, longest = 0;
	uint64_t total = 0;

	memset(b, 0, sizeof(*b));
	b->all_utf8 = 1;
	nf = 1 + fz_u8(f) % MAX_FRAMES;
	for (i = 0; i < nf; i++) {
		struct rframe *fr = &b->fr[i];
		uint8_t kind = fz_u8(f);

		fr->name = fz_str(f, 64);
		if (!fr->name[0]) {	/* CPython names are never empty */
			free(fr->name);
			fr->name = strdup("?");
			FUZZ_CHECK(fr->name, "strdup");
		}
		if (kind & 0x80)	/* long names: up to ~16 KiB */
			fr->name = repeat(fr->name, 1 + fz_u8(f));
		if (kind & 1) {
			fr->file = strdup("");		/* a marker frame */
		} else {
			fr->file = fz_str(f, 64);
			if (kind & 0x40)
				fr->file = repeat(fr->file, 1 + fz_u8(f));
		}
		FUZZ_CHECK(fr->file, "strdup");
		fr->line = (int32_t)fz_u32(f);
		fr->firstlineno = (kind & 2) ? (int32_t)fz_u32(f) : fr->line;
		fr->id = (uint32_t)i;
		b->frp[i] = fr;
		b->all_utf8 &= oc_utf8_valid((uint8_t *)fr->name, strlen(fr->name)) &&
			       oc_utf8_valid((uint8_t *)fr->file, strlen(fr->file));
		if (strlen(fr->name) + strlen(fr->file) > longest)
			longest = strlen(fr->name) + strlen(fr->file);
	}
	np = fz_u8(f) % MAX_PROCS;
	for (i = 0; i < np; i++) {
		char *v = fz_str(f, sizeof(b->p[i].version) - 1);
		char *n = fz_str(f, sizeof(b->p[i].name) - 1);

		b->p[i].pid = (int32_t)fz_u32(f);
		strcpy(b->p[i].version, v);
		strcpy(b->p[i].name, n);
		free(v);
		free(n);
	}
	ns = fz_u8(f) % MAX_SAMPLES;
	if (!np && ns)
		np = 1;		/* every sample belongs to a process */
	for (i = 0; i < ns; i++) {
		struct rsample *s = &b->s[i];
		uint8_t shape = fz_u8(f);
		/* 4300 deep (past TB_MAX_DEPTH), unless labels are long: the
		 * output would be gigabytes, which proves nothing. */
		uint32_t deep = longest > 1024 ? 300 : 4300;
		uint32_t depth = shape & 0x80 ? 1 + fz_u16(f) % deep : shape % 24;

		s->proc = fz_u8(f) % np;
		s->tid = fz_u32(f);
		s->flags = fz_u8(f);
		/* huge counts, but a total that fits 64 bits, as real ones do */
		s->count = shape & 0x40 ? (fz_u64(f) >> 8) >> (fz_u8(f) % 56) : 1 + fz_u8(f);
		if (!s->count)
			s->count = 1;
		s->depth = depth;
		s->frames = calloc(depth + 1, sizeof(*s->frames));
		FUZZ_CHECK(s->frames, "calloc");
		for (j = 0; j < depth; j++) {
			/* deep stacks repeat a short pattern, as recursion does */
			uint8_t k = j < 16 || !(shape & 0x80) ? fz_u8(f) : 0;

			s->frames[j] = j >= 16 && (shape & 0x80) ?
				s->frames[j % 16] : b->frp[k % nf];
		}
		total += s->count;
	}
	/* Event names come from the profiler's own table (user/events.c), never a target. */
	b->event = events[fz_u8(f) % (sizeof(events) / sizeof(events[0]))];
	b->r = (struct resolved){
		.samples = b->s, .nsamples = ns, .frames = b->frp, .nframes = nf,
		.procs = b->p, .nprocs = np, .total = total, .event = b->event,
		.rate = fz_u32(f), .start_unix = (double)fz_u32(f),
		.duration_s = fz_u16(f) / 10.0,
	};
	if (ns && (fz_u8(f) & 1))
		build_timeline(f, b, ns, np);
}

static void unbuild(struct built *b)
{
	size_t i;

	for (i = 0; i < b->r.nframes; i++) {
		free(b->fr[i].name);
		free(b->fr[i].file);
	}
	for (i = 0; i < b->r.nsamples; i++)
		free(b->s[i].frames);
	for (i = 0; i < b->r.nthreads; i++)
		free(b->th[i].name);
}

/* ---- output checks (the checkers are tests/common/outcheck.c) ---- */

static void check_collapsed(const struct built *b, const char *out, size_t n)
{
	const char *p = out, *end = out + n, *nl, *sp;
	uint64_t sum = 0, want = 0;
	size_t lines = 0, i;

	for (i = 0; i < b->r.nsamples; i++)
		if (b->s[i].depth)
			want += b->s[i].count;
	FUZZ_CHECK(!n || out[n - 1] == '\n', "no final newline");
	FUZZ_CHECK(!memchr(out, 0, n), "NUL in collapsed output");
	FUZZ_CHECK(!oc_has_controls(out, n, 0), "control character in collapsed output");
	for (; p < end; p = nl + 1) {
		char *e;

		nl = memchr(p, '\n', (size_t)(end - p));
		sp = nl;
		while (sp > p && sp[-1] != ' ')
			sp--;
		FUZZ_CHECK(sp > p + 1, "line %zu is not `stack COUNT`", lines + 1);
		sum += strtoull(sp, &e, 10);
		FUZZ_CHECK(e == nl, "line %zu: bad count", lines + 1);
		lines++;
	}
	FUZZ_CHECK(lines <= b->r.nsamples, "%zu lines for %zu samples", lines, b->r.nsamples);
	FUZZ_CHECK(sum == want, "counts add up to %llu, want %llu",
		   (unsigned long long)sum, (unsigned long long)want);
	if (b->all_utf8)
		FUZZ_CHECK(oc_utf8_valid((const uint8_t *)out, n),
			   "valid UTF-8 names gave invalid UTF-8 collapsed output");
}

static void check_svg(const char *out, size_t n)
{
	const char *why;
	size_t at = 0;

	FUZZ_CHECK(oc_utf8_valid((const uint8_t *)out, n), "SVG is not valid UTF-8");
	FUZZ_CHECK(!oc_has_controls(out, n, 0), "control character in SVG");
	why = oc_xml(out, n, &at);
	FUZZ_CHECK(!why, "SVG: %s at byte %zu", why, at);
}

static void check_json(const char *what, const char *out, size_t n)
{
	const char *why;
	size_t at = 0;

	FUZZ_CHECK(oc_utf8_valid((const uint8_t *)out, n), "%s JSON is not valid UTF-8", what);
	why = oc_json(out, n, &at);
	FUZZ_CHECK(!why, "%s: %s near byte %zu", what, why, at);
}

static size_t count_of(const char *s, size_t n, const char *what)
{
	size_t k = 0, w = strlen(what);
	const char *p = s, *end = s + n;

	while ((p = memmem(p, (size_t)(end - p), what, w))) {
		k++;
		p += w;
	}
	return k;
}

/* Every frame begun ends: a quote starts the key only outside strings. */
static void check_chrometrace(const char *out, size_t n)
{
	check_json("chrometrace", out, n);
	FUZZ_CHECK(count_of(out, n, "\"ph\":\"B\"") == count_of(out, n, "\"ph\":\"E\""),
		   "chrometrace: B and E events do not pair up");
}

/* Sample (2), Location (4), Function (5), ValueType (1, 11) nest one level. */
static int pb_message(struct pb_rd r, int depth)
{
	struct pb_rd sub;
	uint32_t f;
	uint64_t v;
	int wire, ret;

	while ((ret = pb_rd_field(&r, &f, &wire, &v, &sub)) > 0)
		if (wire == 2 && depth == 0 && (f == 1 || f == 2 || f == 4 || f == 5 || f == 11) &&
		    pb_message(sub, 1))
			return -1;
	return ret;
}

static void check_pprof(const char *out, size_t n)
{
	size_t len = 0;
	uint8_t *raw;

	FUZZ_CHECK(n >= 2 && (uint8_t)out[0] == 0x1f && (uint8_t)out[1] == 0x8b, "not gzip");
	raw = oc_gunzip(out, n, 256u << 20, &len);
	FUZZ_CHECK(raw, "pprof: not one gzip stream of at most 256 MiB (%zu bytes out)", len);
	FUZZ_CHECK(!pb_message((struct pb_rd){ raw, raw + len }, 0), "malformed protobuf");
	free(raw);
}

static void check_summary(const char *out, size_t n)
{
	FUZZ_CHECK(oc_utf8_valid((const uint8_t *)out, n), "summary is not valid UTF-8");
	FUZZ_CHECK(!oc_has_controls(out, n, 0), "control character in summary");
}

/* ---- pstats: the marshal subset output/pstats.c writes ---- */

struct mread {
	const uint8_t *p, *end;
};

static uint32_t m_u32(struct mread *m)
{
	uint32_t v;

	FUZZ_CHECK(m->end - m->p >= 4, "pstats: truncated");
	v = (uint32_t)m->p[0] | (uint32_t)m->p[1] << 8 | (uint32_t)m->p[2] << 16 |
	    (uint32_t)m->p[3] << 24;
	m->p += 4;
	return v;
}

static uint8_t m_type(struct mread *m)
{
	FUZZ_CHECK(m->p < m->end, "pstats: truncated");
	return *m->p++;
}

static void m_str(struct mread *m)
{
	uint32_t n;

	FUZZ_CHECK(m_type(m) == 'u', "pstats: a str expected");
	n = m_u32(m);
	FUZZ_CHECK((size_t)(m->end - m->p) >= n, "pstats: str past the end");
	FUZZ_CHECK(oc_utf8_valid(m->p, n), "pstats: str not valid UTF-8");
	m->p += n;
}

static void m_int(struct mread *m)
{
	uint8_t t = m_type(m);
	uint32_t n;

	if (t == 'i') {
		m_u32(m);
		return;
	}
	FUZZ_CHECK(t == 'l', "pstats: an int expected, got 0x%02x", t);
	n = m_u32(m);
	FUZZ_CHECK(n > 0 && n <= 5 && (size_t)(m->end - m->p) >= 2 * n, "pstats: bad long");
	m->p += 2 * n;
}

static void m_float(struct mread *m)
{
	FUZZ_CHECK(m_type(m) == 'g' && m->end - m->p >= 8, "pstats: a float expected");
	m->p += 8;
}

static void m_tuple(struct mread *m, uint32_t n)
{
	FUZZ_CHECK(m_type(m) == '(' && m_u32(m) == n, "pstats: a %u-tuple expected", n);
}

/* dict of function keys -> (int, int, float, float[, callers]) */
static void m_dict(struct mread *m, int nested)
{
	FUZZ_CHECK(m_type(m) == '{', "pstats: a dict expected");
	while (m->p < m->end && *m->p != '0') {
		m_tuple(m, 3);
		m_str(m);
		m_int(m);
		m_str(m);
		m_tuple(m, nested ? 4 : 5);
		m_int(m);
		m_int(m);
		m_float(m);
		m_float(m);
		if (!nested)
			m_dict(m, 1);
	}
	FUZZ_CHECK(m_type(m) == '0', "pstats: dict not closed");
}

static void check_pstats(const char *out, size_t n)
{
	struct mread m = { (const uint8_t *)out, (const uint8_t *)out + n };

	m_dict(&m, 0);
	FUZZ_CHECK(m.p == m.end, "pstats: bytes after the dict");
}

/* ---- failing streams ---- */

struct failing {
	size_t left;		/* bytes accepted before writes fail */
	int failed;
};

static ssize_t fail_write(void *c, const char *buf, size_t n)
{
	struct failing *f = c;

	(void)buf;
	if (n > f->left) {
		f->left = 0;
		f->failed = 1;
		errno = EPIPE;
		return -1;
	}
	f->left -= n;
	return (ssize_t)n;
}

static void run_failing(const struct writer *w, const struct built *b, size_t full, size_t limit)
{
	cookie_io_functions_t io = { .write = fail_write };
	struct failing st = { .left = limit };
	FILE *f = fopencookie(&st, "w", io);
	int ret;

	FUZZ_CHECK(f, "fopencookie");
	setvbuf(f, NULL, _IOFBF, 512);
	ret = w->write(f, &b->r);
	if (limit < full) {
		FUZZ_CHECK(ret == -EPIPE, "%s: returned %d after writes failed after %zu of %zu bytes, want -EPIPE",
			   w->name, ret, limit, full);
	} else {
		FUZZ_CHECK(ret == 0, "%s: failed (%d) with room for all %zu bytes",
			   w->name, ret, full);
	}
	fclose(f);
}

static char *run(const struct writer *w, const struct built *b, size_t *n);

/* The recording reads back into a profile every writer gives the same bytes from. */
static void check_binary(const struct built *b, const char *o, size_t n)
{
	static const char *const names[] = { "collapsed", "svg", "speedscope", "pprof",
					     "pstats", "gecko", "chrometrace", "binary" };
	struct built *again = malloc(sizeof(*again));
	char why[256] = "";
	struct tby_file f;
	size_t i, n1, n2;

	FUZZ_CHECK(again, "malloc");
	FUZZ_CHECK(tby_read((const uint8_t *)o, n, &f, why, sizeof(why)) == 0 && !f.partial,
		   "binary: its recording is refused: %s", why);
	again->r = f.r;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct writer *w = writer_find(names[i]);
		char *x = run(w, b, &n1), *y = run(w, again, &n2);

		FUZZ_CHECK(n1 == n2 && !memcmp(x, y, n1), "binary: replayed %s differs", names[i]);
		free(x);
		free(y);
	}
	free(again);
	tby_free(&f);
}

static char *run(const struct writer *w, const struct built *b, size_t *n)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, n);
	int ret;

	FUZZ_CHECK(f, "open_memstream");
	ret = w->write(f, &b->r);
	FUZZ_CHECK(ret == 0, "%s writer failed: %s", w->name, strerror(-ret));
	FUZZ_CHECK(!fclose(f), "fclose");
	return buf;
}

/* FUZZ_DUMP=DIR: keep each writer's output as DIR/out.<format>, to look at a crash. */
static void dump(const char *name, const char *out, size_t n)
{
	const char *dir = getenv("FUZZ_DUMP");
	char path[4096];
	FILE *f;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/out.%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fwrite(out, 1, n, f);
		fclose(f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "collapsed", "svg", "speedscope", "pprof", "summary",
					     "pstats", "heatmap", "gecko", "chrometrace", "binary" };
	struct built *b = malloc(sizeof(*b));
	struct fz f;
	size_t i, n1, n2;
	uint16_t cut;

	FUZZ_CHECK(b, "malloc");
	fz_init(&f, data, size);
	cut = fz_u16(&f);
	build(&f, b);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct writer *w = writer_find(names[i]);
		char *o1, *o2;

		FUZZ_CHECK(w, "no %s writer", names[i]);
		o1 = run(w, b, &n1);
		o2 = run(w, b, &n2);
		FUZZ_CHECK(n1 == n2 && !memcmp(o1, o2, n1), "%s: two runs differ", w->name);
		dump(w->name, o1, n1);
		switch (i) {
		case 0: check_collapsed(b, o1, n1); break;
		case 1: check_svg(o1, n1); break;
		case 2: check_json("speedscope", o1, n1); break;
		case 3: check_pprof(o1, n1); break;
		case 4: check_summary(o1, n1); break;
		case 5: check_pstats(o1, n1); break;
		case 6:
			FUZZ_CHECK(n1 > 16 && !memcmp(o1, "<!DOCTYPE html>\n", 16) &&
				   !memcmp(o1 + n1 - 8, "</html>\n", 8), "heatmap: not a whole page");
			break;
		case 7: check_json("gecko", o1, n1); break;
		case 8: check_chrometrace(o1, n1); break;
		case 9: check_binary(b, o1, n1); break;
		}
		if (cut & (1u << i))
			run_failing(w, b, n1, cut % (n1 + 1));
		free(o1);
		free(o2);
	}
	unbuild(b);
	free(b);
	return 0;
}
