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
 *  - heatmap: a whole HTML page (source files named by frames are opened:
 *    whatever they hold is escaped like any other text);
 *  - a stream that fails after N bytes makes the writer return -1 with
 *    errno EPIPE (the write's error), never 0, never a crash.
 */
#include <errno.h>
#include <zlib.h>

#include "fuzz.h"
#include "output.h"
#include "output/emit.h"

#define MAX_FRAMES	48
#define MAX_SAMPLES	64
#define MAX_PROCS	6

struct built {
	struct resolved r;
	struct rframe fr[MAX_FRAMES];
	struct rframe *frp[MAX_FRAMES];
	struct rsample s[MAX_SAMPLES];
	struct rproc p[MAX_PROCS];
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
		b->all_utf8 &= fz_utf8_valid((uint8_t *)fr->name, strlen(fr->name)) &&
			       fz_utf8_valid((uint8_t *)fr->file, strlen(fr->file));
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
}

/* ---- output checks ---- */

static int has_controls(const char *s, size_t n, int allow_tab)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\n' && !(allow_tab && c == '\t')) || c == 0x7f)
			return 1;
	}
	return 0;
}

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
	FUZZ_CHECK(!has_controls(out, n, 0), "control character in collapsed output");
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
		FUZZ_CHECK(fz_utf8_valid((const uint8_t *)out, n),
			   "valid UTF-8 names gave invalid UTF-8 collapsed output");
}

static int entity_at(const char *s, const char *end)
{
	static const char *const ok[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&#39;" };
	size_t i, k;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		k = strlen(ok[i]);
		if ((size_t)(end - s) >= k && !memcmp(s, ok[i], k))
			return 1;
	}
	return 0;
}

static const char *find(const char *s, const char *end, const char *needle)
{
	return memmem(s, (size_t)(end - s), needle, strlen(needle));
}

/* Tags nest and close by name; outside CDATA, '&' starts an entity and '>' closes a tag. */
static void check_svg(const char *out, size_t n)
{
	const char *s = out, *end = out + n, *names[512], *gt;
	size_t lens[512], depth = 0, k;

	FUZZ_CHECK(fz_utf8_valid((const uint8_t *)out, n), "SVG is not valid UTF-8");
	FUZZ_CHECK(!has_controls(out, n, 0), "control character in SVG");
	for (; s < end; s++) {
		if (*s == '&')
			FUZZ_CHECK(entity_at(s, end), "bare '&' at byte %zu", (size_t)(s - out));
		FUZZ_CHECK(*s != '>', "'>' outside a tag at byte %zu", (size_t)(s - out));
		if (*s != '<')
			continue;
		if ((size_t)(end - s) >= 2 && s[1] == '?') {
			gt = find(s, end, "?>");
			FUZZ_CHECK(gt, "unterminated <?");
			s = gt + 1;
			continue;
		}
		if ((size_t)(end - s) >= 9 && !memcmp(s, "<![CDATA[", 9)) {
			gt = find(s, end, "]]>");
			FUZZ_CHECK(gt, "unterminated CDATA");
			s = gt + 2;
			continue;
		}
		gt = memchr(s, '>', (size_t)(end - s));
		FUZZ_CHECK(gt, "unterminated tag at byte %zu", (size_t)(s - out));
		FUZZ_CHECK(!memchr(s + 1, '<', (size_t)(gt - s - 1)),
			   "'<' inside a tag at byte %zu", (size_t)(s - out));
		for (k = 1; s + k < gt; k++)	/* attributes: entities only */
			if (s[k] == '&')
				FUZZ_CHECK(entity_at(s + k, gt), "bare '&' in a tag");
		if (s[1] == '/') {
			k = strcspn(s + 2, " >");
			FUZZ_CHECK(depth && lens[depth - 1] == k && !memcmp(names[depth - 1], s + 2, k),
				   "mismatched </%.*s>", (int)k, s + 2);
			depth--;
		} else if (gt[-1] != '/') {
			FUZZ_CHECK(depth < 512, "tags nested too deep");
			names[depth] = s + 1;
			lens[depth++] = strcspn(s + 1, " >/\n");
		}
		s = gt;
	}
	FUZZ_CHECK(depth == 0, "%zu unclosed tags", depth);
}

/* ---- a small JSON validator ---- */

struct json {
	const char *p, *end;
	int depth;
};

static void json_ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r'))
		j->p++;
}

static int json_lit(struct json *j, const char *lit)
{
	size_t k = strlen(lit);

	if ((size_t)(j->end - j->p) < k || memcmp(j->p, lit, k))
		return -1;
	j->p += k;
	return 0;
}

static int json_string(struct json *j)
{
	if (j->p == j->end || *j->p++ != '"')
		return -1;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;

		if (c < 0x20)
			return -1;
		if (c != '\\')
			continue;
		if (j->p == j->end)
			return -1;
		c = (unsigned char)*j->p++;
		if (c == 'u') {
			int i;

			for (i = 0; i < 4; i++, j->p++)
				if (j->p == j->end || !strchr("0123456789abcdefABCDEF", *j->p))
					return -1;
		} else if (!strchr("\"\\/bfnrt", c) || !c) {
			return -1;
		}
	}
	if (j->p == j->end)
		return -1;
	j->p++;
	return 0;
}

static int json_number(struct json *j)
{
	const char *start = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p == j->end || *j->p < '0' || *j->p > '9')
		return -1;
	while (j->p < j->end && strchr("0123456789.eE+-", *j->p) && *j->p)
		j->p++;
	return j->p > start ? 0 : -1;
}

static int json_value(struct json *j)
{
	int first = 1;

	json_ws(j);
	if (j->p == j->end || ++j->depth > 64)
		return -1;
	switch (*j->p) {
	case '{':
		for (j->p++;; first = 0) {
			json_ws(j);
			if (first && j->p < j->end && *j->p == '}')
				break;
			if (json_string(j))
				return -1;
			json_ws(j);
			if (j->p == j->end || *j->p++ != ':' || json_value(j))
				return -1;
			json_ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p == j->end || *j->p != '}')
				return -1;
			break;
		}
		j->p++;
		break;
	case '[':
		for (j->p++;; first = 0) {
			json_ws(j);
			if (first && j->p < j->end && *j->p == ']')
				break;
			if (json_value(j))
				return -1;
			json_ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p == j->end || *j->p != ']')
				return -1;
			break;
		}
		j->p++;
		break;
	case '"':
		if (json_string(j))
			return -1;
		break;
	case 't':
		return json_lit(j, "true");
	case 'f':
		return json_lit(j, "false");
	case 'n':
		return json_lit(j, "null");
	default:
		if (json_number(j))
			return -1;
	}
	j->depth--;
	return 0;
}

static void check_json(const char *out, size_t n)
{
	struct json j = { out, out + n, 0 };

	FUZZ_CHECK(fz_utf8_valid((const uint8_t *)out, n), "speedscope JSON is not valid UTF-8");
	FUZZ_CHECK(!json_value(&j), "invalid JSON near byte %zu", (size_t)(j.p - out));
	json_ws(&j);
	FUZZ_CHECK(j.p == j.end, "trailing bytes after the JSON value at %zu",
		   (size_t)(j.p - out));
}

/* ---- pprof: gzip, then protobuf wire format ---- */

static int pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	int shift;

	*v = 0;
	for (shift = 0; shift < 64; shift += 7) {
		if (*p == end)
			return -1;
		*v |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80))
			return 0;
	}
	return -1;
}

static int pb_message(const uint8_t *p, const uint8_t *end, int depth)
{
	uint64_t key, v;

	while (p < end) {
		if (pb_varint(&p, end, &key) || !(key >> 3))
			return -1;
		switch (key & 7) {
		case 0:
			if (pb_varint(&p, end, &v))
				return -1;
			break;
		case 1:
			if (end - p < 8)
				return -1;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return -1;
			p += 4;
			break;
		case 2:
			if (pb_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return -1;
			/* Sample (2), Location (4), Function (5), ValueType (1, 11) nest. */
			if (depth == 0 && ((key >> 3) == 1 || (key >> 3) == 2 || (key >> 3) == 4 ||
					   (key >> 3) == 5 || (key >> 3) == 11) &&
			    pb_message(p, p + v, 1))
				return -1;
			p += v;
			break;
		default:
			return -1;
		}
	}
	return 0;
}

static void check_pprof(const char *out, size_t n)
{
	size_t cap = 1 << 16;
	uint8_t *raw = malloc(cap), *grown;
	z_stream z = { 0 };
	int ret;

	FUZZ_CHECK(raw, "malloc");
	FUZZ_CHECK(n >= 2 && (uint8_t)out[0] == 0x1f && (uint8_t)out[1] == 0x8b, "not gzip");
	FUZZ_CHECK(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK, "inflateInit2");
	z.next_in = (uint8_t *)out;
	z.avail_in = (uInt)n;
	for (;;) {
		z.next_out = raw + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		ret = inflate(&z, Z_NO_FLUSH);
		if (ret != Z_OK || z.avail_out)
			break;
		FUZZ_CHECK(cap < (256u << 20), "pprof output inflates past 256 MiB");
		cap *= 2;
		grown = realloc(raw, cap);
		FUZZ_CHECK(grown, "realloc");
		raw = grown;
	}
	FUZZ_CHECK(ret == Z_STREAM_END, "gunzip: %d (%s)", ret, z.msg ? z.msg : "");
	FUZZ_CHECK(z.avail_in == 0, "bytes after the gzip stream");
	FUZZ_CHECK(!pb_message(raw, raw + z.total_out, 0), "malformed protobuf");
	inflateEnd(&z);
	free(raw);
}

static void check_summary(const char *out, size_t n)
{
	FUZZ_CHECK(fz_utf8_valid((const uint8_t *)out, n), "summary is not valid UTF-8");
	FUZZ_CHECK(!has_controls(out, n, 0), "control character in summary");
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
	errno = 0;
	ret = w->write(f, &b->r);
	if (limit < full) {
		FUZZ_CHECK(ret == -1, "%s: returned %d although writes failed after %zu of %zu bytes",
			   w->name, ret, limit, full);
		FUZZ_CHECK(errno == EPIPE, "%s: errno %d after a failed write, want EPIPE",
			   w->name, errno);
	} else {
		FUZZ_CHECK(ret == 0, "%s: failed (%d) with room for all %zu bytes",
			   w->name, errno, full);
	}
	fclose(f);
}

static char *run(const struct writer *w, const struct built *b, size_t *n)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, n);
	int ret;

	FUZZ_CHECK(f, "open_memstream");
	errno = 0;
	ret = w->write(f, &b->r);
	FUZZ_CHECK(ret == 0, "%s writer failed: %s", w->name, strerror(errno));
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
					      "heatmap" };
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
		case 2: check_json(o1, n1); break;
		case 3: check_pprof(o1, n1); break;
		case 4: check_summary(o1, n1); break;
		case 5:
			FUZZ_CHECK(n1 > 16 && !memcmp(o1, "<!DOCTYPE html>\n", 16) &&
				   !memcmp(o1 + n1 - 8, "</html>\n", 8), "heatmap: not a whole page");
			break;
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
