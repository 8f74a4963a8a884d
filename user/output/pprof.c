// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pprof: a gzip-compressed perftools.profiles.Profile (profile.proto of
 * github.com/google/pprof), what `go tool pprof` and `pprof -http` read.
 *
 * One Location per frame label (name, file, line), one Function per
 * function (name, file, first line); each sample holds its locations leaf
 * first, two values (the sample count, and count x period in nanoseconds of
 * CPU time, or of wall time for the "wall" event), and the numeric labels
 * "pid" and "tid" (the keys perf_data_converter uses).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "hmap.h"
#include "util.h"
#include "output/output.h"
#include "output/emit.h"
#include "output/protobuf.h"

/* perftools.profiles field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,

	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,

	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,

	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,

	LOCATION_ID = 1,
	LOCATION_LINE = 4,

	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,

	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

#define NSEC_PER_SEC 1000000000ULL

/* The string table: index 0 is "", every other string once. */
struct strtab {
	struct hmap map;	/* strtab_key -> index + 1 */
	const char **v;
	size_t n;
	size_t cap;
};

struct strtab_key {
	uint64_t hash;
	uint32_t probe;		/* distinguishes strings whose hashes collide */
	uint32_t pad;
};

static int strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
	return hmap_init(&t->map, sizeof(struct strtab_key)) ? -ENOMEM : 0;
}

static void strtab_free(struct strtab *t)
{
	hmap_free(&t->map);
	free(t->v);
}

static int64_t strtab_add(struct strtab *t, const char *s)
{
	if (array_grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v), 64))
		return -ENOMEM;
	t->v[t->n] = s;
	return (int64_t)t->n++;
}

/* Index of s, added if new; -ENOMEM. The string must outlive t. */
static int64_t str_id(struct strtab *t, const char *s)
{
	struct strtab_key k = { .hash = hash_bytes(s, strlen(s)) };
	void **slot;
	int added;

	if (!s[0])
		return 0;
	for (;; k.probe++) {
		slot = hmap_put(&t->map, &k, &added);
		if (!slot)
			return -ENOMEM;
		if (added)
			break;
		if (!strcmp(t->v[(uintptr_t)*slot - 1], s))
			return (int64_t)((uintptr_t)*slot - 1);
	}
	*slot = (void *)(uintptr_t)(t->n + 1);
	return strtab_add(t, s);
}

struct pprof {
	struct pb pb;
	struct strtab st;
	struct func_table ft;
	int oom;
	char comment[160];	/* in the string table: must live as long */
};

/* Interned index, or 0 with ->oom set (checked once, at the end). */
static int64_t sid(struct pprof *p, const char *s)
{
	int64_t id = str_id(&p->st, s);

	if (id >= 0)
		return id;
	p->oom = 1;
	return 0;
}

static void value_type(struct pprof *p, uint32_t field, const char *type, const char *unit)
{
	size_t m = pb_begin(&p->pb, field);

	pb_int(&p->pb, VALUE_TYPE_TYPE, sid(p, type));
	pb_int(&p->pb, VALUE_TYPE_UNIT, sid(p, unit));
	pb_end(&p->pb, m);
}

static void label_num(struct pprof *p, const char *key, int64_t num)
{
	size_t m = pb_begin(&p->pb, SAMPLE_LABEL);

	pb_int(&p->pb, LABEL_KEY, sid(p, key));
	pb_int(&p->pb, LABEL_NUM, num);
	pb_end(&p->pb, m);
}

/* A string label: the key and value go to the string table. */
static void label_str(struct pprof *p, const char *key, const char *str)
{
	size_t m = pb_begin(&p->pb, SAMPLE_LABEL);

	pb_int(&p->pb, LABEL_KEY, sid(p, key));
	pb_int(&p->pb, LABEL_STR, sid(p, str));
	pb_end(&p->pb, m);
}

static void sample(struct pprof *p, const struct resolved *r, const struct rsample *s,
		   uint64_t period)
{
	size_t m = pb_begin(&p->pb, PROFILE_SAMPLE), packed;
	uint32_t j;

	packed = pb_begin(&p->pb, SAMPLE_LOCATION_ID);
	for (j = s->depth; j-- > 0;)
		pb_varint(&p->pb, (uint64_t)s->frames[j]->id + 1);
	pb_end(&p->pb, packed);
	packed = pb_begin(&p->pb, SAMPLE_VALUE);
	pb_varint(&p->pb, s->count);
	pb_varint(&p->pb, s->count * period);
	pb_end(&p->pb, packed);
	if (s->proc < r->nprocs)
		label_num(p, "pid", r->procs[s->proc].pid);
	label_num(p, "tid", s->tid);
	if (s->tname && s->tname[0])
		label_str(p, "thread_name", s->tname);
	for (j = s->depth; j-- > 0;) {	/* --opcodes: the Python leaf's instruction */
		if (s->frames[j]->op) {
			label_str(p, "opcode", s->frames[j]->op);
			break;
		}
	}
	pb_end(&p->pb, m);
}

static void location(struct pprof *p, const struct rframe *f)
{
	size_t m = pb_begin(&p->pb, PROFILE_LOCATION), l;

	pb_uint(&p->pb, LOCATION_ID, (uint64_t)f->id + 1);
	l = pb_begin(&p->pb, LOCATION_LINE);
	pb_uint(&p->pb, LINE_FUNCTION_ID, (uint64_t)p->ft.of_frame[f->id] + 1);
	/* 0 is pprof's "no line" (--nolineno) */
	pb_int(&p->pb, LINE_LINE, f->line == RFRAME_NO_LINE ? 0 : f->line);
	pb_end(&p->pb, l);
	pb_end(&p->pb, m);
}

static void function(struct pprof *p, size_t i)
{
	const struct rframe *f = p->ft.funcs[i];
	size_t m = pb_begin(&p->pb, PROFILE_FUNCTION);

	pb_uint(&p->pb, FUNCTION_ID, i + 1);
	/*
	 * No system_name: go tool pprof demangles a function whose system
	 * name equals its name, and its C++ heuristic strips '<...>' as
	 * template parameters, leaving "<module>" empty ("<unknown>").
	 */
	pb_int(&p->pb, FUNCTION_NAME, sid(p, f->name));
	pb_int(&p->pb, FUNCTION_FILENAME, sid(p, f->file));
	pb_int(&p->pb, FUNCTION_START_LINE, f->firstlineno);
	pb_end(&p->pb, m);
}

/* What a sample stands for: 1/rate seconds of the event's clock. */
static const char *time_type(const struct resolved *r)
{
	if (r->mode)
		return !strcmp(r->mode, "wall") ? "wall" : "cpu";
	return r->event && !strcmp(r->event, "wall") ? "wall" : "cpu";
}

static void header(struct pprof *p, const struct resolved *r, uint64_t period)
{
	char what[96];

	value_type(p, PROFILE_SAMPLE_TYPE, "samples", "count");
	value_type(p, PROFILE_SAMPLE_TYPE, time_type(r), "nanoseconds");
	value_type(p, PROFILE_PERIOD_TYPE, time_type(r), "nanoseconds");
	pb_int(&p->pb, PROFILE_PERIOD, (int64_t)period);
	pb_int(&p->pb, PROFILE_TIME_NANOS, (int64_t)(r->start_unix * 1e9));
	pb_int(&p->pb, PROFILE_DURATION_NANOS, (int64_t)(r->duration_s * 1e9));
	pb_int(&p->pb, PROFILE_DEFAULT_SAMPLE_TYPE, sid(p, time_type(r)));
	resolved_what(r, what, sizeof(what));
	snprintf(p->comment, sizeof(p->comment), "tachyon-bpf: %s, %" PRIu64 " samples", what,
		 r->total);
	pb_int(&p->pb, PROFILE_COMMENT, sid(p, p->comment));
}

/* Every field but the string table, which the others fill as they go. */
static int encode(struct pprof *p, const struct resolved *r)
{
	uint64_t period = r->rate > 0 ? (uint64_t)(NSEC_PER_SEC / r->rate + 0.5) : 0;
	size_t i;

	if (strtab_add(&p->st, "") < 0)
		return -ENOMEM;
	header(p, r, period);
	for (i = 0; i < r->nsamples; i++)
		sample(p, r, &r->samples[i], period);
	for (i = 0; i < r->nframes; i++)
		location(p, r->frames[i]);
	for (i = 0; i < p->ft.n; i++)
		function(p, i);
	for (i = 0; i < p->st.n; i++)
		pb_string(&p->pb, PROFILE_STRING_TABLE, p->st.v[i]);
	return p->oom || p->pb.err ? -ENOMEM : 0;
}

/* gzip (windowBits 15 + 16: a gzip header and trailer around deflate). */
static int gzip_write(FILE *out, const uint8_t *data, size_t len)
{
	uint8_t chunk[65536];
	struct emit e;
	z_stream z;
	int zret, flush;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	emit_init(&e, out);
	z.next_in = (Bytef *)data;
	do {
		/* avail_in is 32 bits: feed larger buffers in parts */
		if (!z.avail_in) {
			z.avail_in = len > (1u << 30) ? (1u << 30) : (uInt)len;
			len -= z.avail_in;
		}
		flush = len ? Z_NO_FLUSH : Z_FINISH;
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zret = deflate(&z, flush);
		emit_write(&e, chunk, sizeof(chunk) - z.avail_out);
	} while ((zret == Z_OK || zret == Z_BUF_ERROR) && !e.err);
	deflateEnd(&z);
	if (zret != Z_STREAM_END && !e.err)
		e.err = EIO;
	return emit_done(&e);
}

int output_pprof(FILE *out, const struct resolved *r)
{
	struct pprof p = { 0 };
	int ret = resolved_check(r);

	if (ret)
		return ret;
	pb_init(&p.pb);
	if (!(ret = strtab_init(&p.st)) && !(ret = funcs_build(r, &p.ft)) &&
	    !(ret = encode(&p, r)))
		ret = gzip_write(out, p.pb.buf, p.pb.len);
	funcs_free(&p.ft);
	strtab_free(&p.st);
	pb_free(&p.pb);
	return ret;
}
