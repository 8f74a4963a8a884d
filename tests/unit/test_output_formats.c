// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The svg, speedscope, pprof and summary writers on small hand-built
 * profiles: structure, escaping, totals, a pprof round trip through a
 * minimal protobuf decoder, EPIPE, and a 100k-stack profile for speed.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "rframe_fixture.h"
#include "output/output.h"
#include "output/tby.h"
#include "output/emit.h"
#include "outcheck.h"

typedef int (*writer_fn)(FILE *out, const struct resolved *r);

enum { F_MAIN, F_F20, F_F22, F_G, F_WEIRD, F_TRUNC, F_LAMBDA, NFR };

#define WEIRD_NAME "<a&b>\"q'\x01]]>"

static struct rframe fx_frames[NFR] = {
	[F_MAIN] = RFRAME("main", "a.py", 10, 1, F_MAIN),
	[F_F20] = RFRAME("f", "a.py", 20, 15, F_F20),
	[F_F22] = RFRAME("f", "a.py", 22, 15, F_F22),
	[F_G] = RFRAME("g", "b.py", 5, 3, F_G),
	[F_WEIRD] = RFRAME(WEIRD_NAME, "x<y>.py", 2, 1, F_WEIRD),
	[F_TRUNC] = RFRAME("[truncated]", "", 0, 0, F_TRUNC),
	[F_LAMBDA] = RFRAME("\xce\xbb", "\xc3\xbc.py", 9, 7, F_LAMBDA),
};
static struct rframe *fx_ptrs[NFR];
static struct rframe *st0[] = { &fx_frames[F_MAIN], &fx_frames[F_F20], &fx_frames[F_G] };
/* f recursing: counted once in f's total */
static struct rframe *st1[] = { &fx_frames[F_MAIN], &fx_frames[F_F22], &fx_frames[F_F20] };
static struct rframe *st2[] = { &fx_frames[F_MAIN], &fx_frames[F_WEIRD] };
static struct rframe *st3[] = { &fx_frames[F_TRUNC], &fx_frames[F_MAIN], &fx_frames[F_G] };
static struct rframe *st4[] = { &fx_frames[F_MAIN], &fx_frames[F_LAMBDA] };
static struct rsample fx_samples[] = {
	{ .proc = 0, .tid = 1, .depth = 3, .count = 5, .frames = st0 },
	{ .proc = 0, .tid = 1, .depth = 3, .count = 3, .frames = st1 },
	{ .proc = 0, .tid = 2, .depth = 2, .count = 2, .frames = st2 },
	{ .proc = 1, .tid = 3, .depth = 3, .count = 1, .frames = st3, .flags = 1 },
	{ .proc = 0, .tid = 1, .depth = 2, .count = 4, .frames = st4 },
};
static struct rproc fx_procs[] = {
	{ .pid = 100, .version = "3.13.0", .name = "app.py" },
	{ .pid = 200, .version = "3.12.1" },
};

static struct resolved fixture(void)
{
	struct resolved r = {
		.samples = fx_samples, .nsamples = 5, .frames = fx_ptrs, .nframes = NFR,
		.procs = fx_procs, .nprocs = 2, .total = 15, .event = "cpu-clock",
		.rate = 1000, .start_unix = 1700000000.0, .duration_s = 2.0,
	};
	int i;

	for (i = 0; i < NFR; i++)
		fx_ptrs[i] = &fx_frames[i];
	return r;
}

/* The writer's output, NUL-terminated; *len without the NUL. */
static char *run_writer(writer_fn w, const struct resolved *r, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	assert_non_null(f);
	assert_int_equal(w(f, r), 0);
	assert_int_equal(fclose(f), 0);
	if (len)
		*len = n;
	return buf;
}

static size_t count_str(const char *s, const char *needle)
{
	size_t n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}

/* ---- SVG ---- */

/* Well-formed, escaped, no control character but newline (tests/common/outcheck.c). */
static int xml_wellformed(const char *s)
{
	size_t n = strlen(s), at;

	return !oc_has_controls(s, n, 0) && !oc_xml(s, n, &at);
}

static void test_svg(void **state)
{
	struct resolved r = fixture();
	char *svg = run_writer(output_svg, &r, NULL);

	(void)state;
	assert_true(!strncmp(svg, "<?xml version=\"1.0\"", 19));
	assert_non_null(strstr(svg, "</svg>\n"));
	assert_true(xml_wellformed(svg));
	/* self-contained: the namespace is the only URL, nothing is loaded */
	assert_int_equal(count_str(svg, "http"), 1);
	assert_non_null(strstr(svg, "xmlns=\"http://www.w3.org/2000/svg\""));
	assert_null(strstr(svg, "href"));
	assert_null(strstr(svg, "@import"));
	/* names escaped, control characters gone, UTF-8 kept */
	assert_non_null(strstr(svg, "&lt;a&amp;b&gt;&quot;q&#39; ]]&gt; (x&lt;y&gt;.py:2)\n2 samples"));
	assert_null(strstr(svg, "<a&b>"));
	assert_non_null(strstr(svg, "\xce\xbb (\xc3\xbc.py:9)\n4 samples (26.67%)"));
	/* 11 frames: all, main, main>f20, f20>g, main>f22, f22>f20, main>weird,
	 * main>lambda, [truncated], [truncated]>main, main>g */
	assert_int_equal(count_str(svg, "<g class=\"f\">"), 11);
	assert_non_null(strstr(svg, "<title>all\n15 samples (100.00%)</title>"));
	assert_non_null(strstr(svg, "<title>main (a.py:10)\n14 samples (93.33%)</title>"));
	assert_non_null(strstr(svg, "<title>g (b.py:5)\n5 samples (33.33%)</title>"));
	assert_non_null(strstr(svg, "<title>[truncated]\n1 samples (6.67%)</title>"));
	/* widths: all 1180 px; g under f:20 is 5/15 of it */
	assert_non_null(strstr(svg, "width=\"1180.00\""));
	assert_non_null(strstr(svg, "width=\"393.33\""));
	/* markers grey, others warm */
	assert_non_null(strstr(svg, "fill=\"rgb(176,176,176)\"/><text x=\"13.00\""));
	/* the interactive parts */
	assert_non_null(strstr(svg, "<script type=\"text/ecmascript\"><![CDATA["));
	assert_non_null(strstr(svg, "id=\"search\""));
	assert_non_null(strstr(svg, "id=\"unzoom\""));
	assert_non_null(strstr(svg, "ctrlKey"));
	free(svg);
}

/* The same label at a different depth or under another parent is another frame. */
static void test_svg_sorted_siblings(void **state)
{
	struct resolved r = fixture();
	char *svg = run_writer(output_svg, &r, NULL);
	const char *f20 = strstr(svg, "<title>f (a.py:20)\n5 samples");
	const char *f22 = strstr(svg, "<title>f (a.py:22)\n3 samples");
	const char *nested = strstr(svg, "<title>f (a.py:20)\n3 samples");

	(void)state;
	assert_non_null(f20);
	assert_non_null(f22);
	assert_non_null(nested);
	free(svg);
}

/* As in flamegraph.pl: children from the left edge, a frame's own samples at its right. */
static void test_svg_self_right(void **state)
{
	struct resolved r = fixture();
	struct rframe *only_main[] = { &fx_frames[F_MAIN] };
	struct rsample smp[] = {
		{ .depth = 1, .count = 2, .frames = only_main },
		{ .depth = 3, .count = 3, .frames = st0 },
	};
	char *svg;

	(void)state;
	r.samples = smp;
	r.nsamples = 2;
	r.total = 5;
	svg = run_writer(output_svg, &r, NULL);
	assert_non_null(strstr(svg, "<title>main (a.py:10)\n5 samples (100.00%)</title>"
			       "<rect x=\"10.00\" y=\"96\" width=\"1180.00\""));
	assert_non_null(strstr(svg, "<title>f (a.py:20)\n3 samples (60.00%)</title>"
			       "<rect x=\"10.00\" y=\"80\" width=\"708.00\""));
	free(svg);
}

/* ---- speedscope ---- */

static int json_valid(const char *s)
{
	size_t at;

	return !oc_json(s, strlen(s), &at);
}

/* Sum of every number in every array that follows key. */
static uint64_t sum_arrays(const char *s, const char *key)
{
	uint64_t sum = 0;
	char *end;

	while ((s = strstr(s, key))) {
		s += strlen(key);
		while (*s != ']') {
			sum += strtoull(s, &end, 10);
			s = *end == ',' ? end + 1 : end;
		}
	}
	return sum;
}

static uint64_t sum_numbers(const char *s, const char *key)
{
	uint64_t sum = 0;

	while ((s = strstr(s, key))) {
		s += strlen(key);
		sum += strtoull(s, NULL, 10);
	}
	return sum;
}

static void test_speedscope(void **state)
{
	struct resolved r = fixture();
	char *js = run_writer(output_speedscope, &r, NULL);

	(void)state;
	assert_true(json_valid(js));
	assert_non_null(strstr(js, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""));
	assert_non_null(strstr(js, "\"shared\":{\"frames\":["));
	assert_non_null(strstr(js, "\"profiles\":["));
	assert_int_equal(count_str(js, "{\"name\":"), NFR);
	assert_int_equal(count_str(js, "\"type\":\"sampled\""), 3);
	assert_int_equal(count_str(js, "\"unit\":\"none\",\"startValue\":0,\"endValue\":"), 3);
	assert_non_null(strstr(js, "\"name\":\"pid 100 app.py (Python 3.13.0) tid 1\""));
	assert_non_null(strstr(js, "\"name\":\"pid 100 app.py (Python 3.13.0) tid 2\""));
	assert_non_null(strstr(js, "\"name\":\"pid 200 (Python 3.12.1) tid 3\""));
	assert_int_equal(sum_arrays(js, "\"weights\":["), 15);
	assert_int_equal(sum_numbers(js, "\"endValue\":"), 15);
	/* frames by index, root first */
	assert_non_null(strstr(js, "[0,1,3]"));
	assert_non_null(strstr(js, "[0,2,1]"));
	assert_non_null(strstr(js, "[5,0,3]"));
	assert_non_null(strstr(js, "{\"name\":\"[truncated]\"}"));
	assert_non_null(strstr(js, "{\"name\":\"f\",\"file\":\"a.py\",\"line\":22}"));
	/* escaped: quote, control; kept: UTF-8 */
	assert_non_null(strstr(js, "{\"name\":\"<a&b>\\\"q'\\u0001]]>\",\"file\":\"x<y>.py\",\"line\":2}"));
	assert_non_null(strstr(js, "{\"name\":\"\xce\xbb\",\"file\":\"\xc3\xbc.py\",\"line\":9}"));
	free(js);
}

static void test_escaping(void **state)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	struct emit e;

	(void)state;
	emit_init(&e, f);
	emit_json(&e, "a\"\\\n\t\x1f\xce\xbb\xff|\xc0\xaf|\xed\xa0\x80|\xf0\x9f\x94\xa5");
	emit_str(&e, "\n");
	emit_xml(&e, "<&>\"'\x01\x7f\xef\xbf\xbe\xff\xe2\x82");
	emit_str(&e, "\n");
	emit_text(&e, "a\tb\nc\xff");
	assert_int_equal(emit_done(&e), 0);
	fclose(f);
	assert_string_equal(buf,
		"\"a\\\"\\\\\\n\\t\\u001f\xce\xbb\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
		"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xf0\x9f\x94\xa5\"\n"
		"&lt;&amp;&gt;&quot;&#39;  \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\n"
		"a b c\xef\xbf\xbd");
	free(buf);
}

/* ---- pprof: gunzip, then decode just enough of profile.proto ---- */

#define MAXV 64

struct dec_sample {
	uint64_t loc[MAXV];
	size_t nloc;
	int64_t val[4];
	size_t nval;
	int64_t label_key[4], label_num[4];
	size_t nlabel;
};

struct dec_profile {
	char *str[MAXV];
	size_t nstr;
	int64_t sample_type[4][2];
	size_t ntypes;
	struct dec_sample sample[MAXV];
	size_t nsample;
	uint64_t loc_id[MAXV], loc_func[MAXV];
	int64_t loc_line[MAXV];
	size_t nloc;
	uint64_t func_id[MAXV];
	int64_t func_name[MAXV], func_sys[MAXV], func_file[MAXV], func_start[MAXV];
	size_t nfunc;
	int64_t period_type[2], period, time_nanos, duration_nanos, default_type;
	int64_t comment[4];
	size_t ncomment;
};

static uint64_t rd_varint(struct pb_rd *r)
{
	uint64_t v;

	assert_int_equal(pb_rd_varint(r, &v), 0);
	return v;
}

/* Next field: 1, or 0 at the end. Varints in *v, length-delimited in *sub. */
static int rd_field(struct pb_rd *r, uint32_t *field, uint64_t *v, struct pb_rd *sub)
{
	int wire, ret = pb_rd_field(r, field, &wire, v, sub);

	assert_true(ret >= 0);
	if (ret && wire != 0 && wire != 2)
		fail_msg("unexpected wire type %d", wire);
	return ret;
}

static void dec_pair(struct pb_rd m, int64_t out[2])
{
	struct pb_rd sub;
	uint32_t f;
	uint64_t v;

	while (rd_field(&m, &f, &v, &sub))
		if (f == 1 || f == 2)
			out[f - 1] = (int64_t)v;
}

static void dec_sample(struct pb_rd m, struct dec_sample *s)
{
	struct pb_rd sub, lab;
	uint32_t f, lf;
	uint64_t v, lv;

	while (rd_field(&m, &f, &v, &sub)) {
		if (f == 1)
			while (sub.p < sub.end && s->nloc < MAXV)
				s->loc[s->nloc++] = rd_varint(&sub);
		if (f == 2)
			while (sub.p < sub.end && s->nval < 4)
				s->val[s->nval++] = (int64_t)rd_varint(&sub);
		if (f != 3)
			continue;
		assert_true(s->nlabel < 4);
		while (rd_field(&sub, &lf, &lv, &lab)) {
			if (lf == 1)
				s->label_key[s->nlabel] = (int64_t)lv;
			if (lf == 3)
				s->label_num[s->nlabel] = (int64_t)lv;
		}
		s->nlabel++;
	}
}

static void dec_location(struct pb_rd m, struct dec_profile *d)
{
	struct pb_rd sub, ln;
	uint32_t f, lf;
	uint64_t v, lv;

	assert_true(d->nloc < MAXV);
	while (rd_field(&m, &f, &v, &sub)) {
		if (f == 1)
			d->loc_id[d->nloc] = v;
		if (f != 4)
			continue;
		while (rd_field(&sub, &lf, &lv, &ln)) {
			if (lf == 1)
				d->loc_func[d->nloc] = lv;
			if (lf == 2)
				d->loc_line[d->nloc] = (int64_t)lv;
		}
	}
	d->nloc++;
}

static void dec_function(struct pb_rd m, struct dec_profile *d)
{
	struct pb_rd sub;
	uint32_t f;
	uint64_t v;
	size_t i = d->nfunc++;

	assert_true(i < MAXV);
	while (rd_field(&m, &f, &v, &sub)) {
		switch (f) {
		case 1: d->func_id[i] = v; break;
		case 2: d->func_name[i] = (int64_t)v; break;
		case 3: d->func_sys[i] = (int64_t)v; break;
		case 4: d->func_file[i] = (int64_t)v; break;
		case 5: d->func_start[i] = (int64_t)v; break;
		}
	}
}

static void decode(const uint8_t *p, size_t n, struct dec_profile *d)
{
	struct pb_rd r = { p, p + n }, sub;
	uint32_t f;
	uint64_t v;

	memset(d, 0, sizeof(*d));
	while (rd_field(&r, &f, &v, &sub)) {
		switch (f) {
		case 1:
			assert_true(d->ntypes < 4);
			dec_pair(sub, d->sample_type[d->ntypes++]);
			break;
		case 2:
			assert_true(d->nsample < MAXV);
			dec_sample(sub, &d->sample[d->nsample++]);
			break;
		case 4: dec_location(sub, d); break;
		case 5: dec_function(sub, d); break;
		case 6:
			assert_true(d->nstr < MAXV);
			d->str[d->nstr++] = strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
			break;
		case 9: d->time_nanos = (int64_t)v; break;
		case 10: d->duration_nanos = (int64_t)v; break;
		case 11: dec_pair(sub, d->period_type); break;
		case 12: d->period = (int64_t)v; break;
		case 13: d->comment[d->ncomment++ & 3] = (int64_t)v; break;
		case 14: d->default_type = (int64_t)v; break;
		default: fail_msg("unexpected Profile field %u", f);
		}
	}
}

static void dec_free(struct dec_profile *d)
{
	size_t i;

	for (i = 0; i < d->nstr; i++)
		free(d->str[i]);
}

static const char *dstr(const struct dec_profile *d, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < d->nstr);
	return d->str[i];
}

/* Function name of a location id. */
static const char *loc_name(const struct dec_profile *d, uint64_t loc, int64_t *line)
{
	size_t i, j;

	for (i = 0; i < d->nloc; i++) {
		if (d->loc_id[i] != loc)
			continue;
		*line = d->loc_line[i];
		for (j = 0; j < d->nfunc; j++)
			if (d->func_id[j] == d->loc_func[i])
				return dstr(d, d->func_name[j]);
	}
	fail_msg("location %llu not found", (unsigned long long)loc);
	return NULL;
}

static void decode_writer(const struct resolved *r, struct dec_profile *d)
{
	size_t n, plen;
	char *gz = run_writer(output_pprof, r, &n);
	uint8_t *pb;

	assert_true(n > 18 && (uint8_t)gz[0] == 0x1f && (uint8_t)gz[1] == 0x8b);
	pb = oc_gunzip(gz, n, 1 << 28, &plen);
	assert_non_null(pb);
	decode(pb, plen, d);
	free(pb);
	free(gz);
}

static void test_pprof_roundtrip(void **state)
{
	struct resolved r = fixture();
	struct dec_profile d;
	uint64_t total = 0;
	int64_t line;
	size_t i;

	(void)state;
	decode_writer(&r, &d);
	assert_true(d.nstr > 0);
	assert_string_equal(d.str[0], "");
	assert_int_equal(d.ntypes, 2);
	assert_string_equal(dstr(&d, d.sample_type[0][0]), "samples");
	assert_string_equal(dstr(&d, d.sample_type[0][1]), "count");
	assert_string_equal(dstr(&d, d.sample_type[1][0]), "cpu");
	assert_string_equal(dstr(&d, d.sample_type[1][1]), "nanoseconds");
	assert_string_equal(dstr(&d, d.period_type[0]), "cpu");
	assert_string_equal(dstr(&d, d.period_type[1]), "nanoseconds");
	assert_string_equal(dstr(&d, d.default_type), "cpu");
	assert_int_equal(d.period, 1000000);
	assert_int_equal(d.time_nanos, 1700000000000000000LL);
	assert_int_equal(d.duration_nanos, 2000000000LL);
	assert_int_equal(d.ncomment, 1);
	assert_non_null(strstr(dstr(&d, d.comment[0]), "cpu-clock"));

	/* one location per frame label, one function per function */
	assert_int_equal(d.nloc, NFR);
	assert_int_equal(d.nfunc, 6);
	for (i = 0; i < d.nfunc; i++) {
		/* No system_name: go tool pprof would "demangle" <module> away. */
		assert_int_equal(d.func_sys[i], 0);
		if (!strcmp(dstr(&d, d.func_name[i]), "f")) {
			assert_string_equal(dstr(&d, d.func_file[i]), "a.py");
			assert_int_equal(d.func_start[i], 15);
		}
	}

	assert_int_equal(d.nsample, 5);
	for (i = 0; i < d.nsample; i++) {
		assert_int_equal(d.sample[i].nval, 2);
		assert_int_equal(d.sample[i].val[0], fx_samples[i].count);
		assert_int_equal(d.sample[i].val[1], fx_samples[i].count * 1000000);
		assert_int_equal(d.sample[i].nloc, fx_samples[i].depth);
		assert_int_equal(d.sample[i].nlabel, 2);
		assert_string_equal(dstr(&d, d.sample[i].label_key[0]), "pid");
		assert_int_equal(d.sample[i].label_num[0], fx_procs[fx_samples[i].proc].pid);
		assert_string_equal(dstr(&d, d.sample[i].label_key[1]), "tid");
		assert_int_equal(d.sample[i].label_num[1], fx_samples[i].tid);
		total += (uint64_t)d.sample[i].val[0];
	}
	assert_int_equal(total, 15);
	/* leaf first: main;f:22;f:20 */
	assert_string_equal(loc_name(&d, d.sample[1].loc[0], &line), "f");
	assert_int_equal(line, 20);
	assert_string_equal(loc_name(&d, d.sample[1].loc[1], &line), "f");
	assert_int_equal(line, 22);
	assert_string_equal(loc_name(&d, d.sample[1].loc[2], &line), "main");
	assert_int_equal(line, 10);
	assert_string_equal(loc_name(&d, d.sample[3].loc[2], &line), "[truncated]");
	assert_string_equal(loc_name(&d, d.sample[2].loc[0], &line), WEIRD_NAME);
	dec_free(&d);
}

static void test_pprof_wall(void **state)
{
	struct resolved r = fixture();
	struct dec_profile d;

	(void)state;
	r.event = "wall";
	r.rate = 99;
	decode_writer(&r, &d);
	assert_string_equal(dstr(&d, d.sample_type[1][0]), "wall");
	assert_string_equal(dstr(&d, d.period_type[0]), "wall");
	assert_int_equal(d.period, 1000000000 / 99);
	assert_int_equal(d.sample[0].val[1], 5LL * 1000000000 / 99);
	dec_free(&d);
}

/* ---- summary ---- */

static void test_summary(void **state)
{
	struct resolved r = fixture();
	char *s = run_writer(output_summary, &r, NULL);

	(void)state;
	assert_string_equal(s,
		"# 15 samples in 2.0 s (cpu-clock, 1000 Hz); pid 100 app.py (Python 3.13.0), pid 200 (Python 3.12.1)\n"
		"  self%  total%      self     total  function (file:firstline)\n"
		" 40.00%  40.00%         6         6  g (b.py:3)\n"
		" 26.67%  26.67%         4         4  \xce\xbb (\xc3\xbc.py:7)\n"
		" 20.00%  53.33%         3         8  f (a.py:15)\n"
		" 13.33%  13.33%         2         2  <a&b>\"q' ]]> (x<y>.py:1)\n"
		"  0.00% 100.00%         0        15  main (a.py:1)\n"
		"  0.00%   6.67%         0         1  [truncated]\n");
	free(s);
}

static void test_summary_top(void **state)
{
	static struct rframe fr[40];
	static struct rframe *ptrs[40], *stacks[40][1];
	static struct rsample smp[40];
	static char names[40][16];
	struct resolved r = { .samples = smp, .nsamples = 40, .frames = ptrs, .nframes = 40,
			      .total = 40, .event = "cpu-clock", .rate = 99 };
	char *s;
	int i;

	(void)state;
	for (i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "fn%02d", i);
		fr[i] = (struct rframe){ names[i], (char *)"m.py", i + 1, i + 1, (uint32_t)i, NULL };
		ptrs[i] = &fr[i];
		stacks[i][0] = &fr[i];
		smp[i] = (struct rsample){ .depth = 1, .count = 1, .frames = stacks[i] };
	}
	smp[39].count = 2;
	r.total = 41;
	s = run_writer(output_summary, &r, NULL);
	assert_int_equal(count_str(s, "\n"), 2 + 30 + 1);
	assert_non_null(strstr(s, "  4.88%   4.88%         2         2  fn39 (m.py:40)\n"));
	assert_non_null(strstr(s, "# 10 more functions with 24.39% self\n"));
	free(s);
}

/* ---- all writers ---- */

static const char *const formats[] = { "collapsed", "svg", "speedscope", "pprof", "summary" };

static void test_writer_table_formats(void **state)
{
	(void)state;
	assert_ptr_equal(writer_for_path("p.svg"), writer_find("svg"));
	assert_ptr_equal(writer_for_path("p.json"), writer_find("speedscope"));
	assert_ptr_equal(writer_for_path("p.speedscope.json"), writer_find("speedscope"));
	assert_ptr_equal(writer_for_path("p.pb.gz"), writer_find("pprof"));
	assert_ptr_equal(writer_for_path("p.pprof"), writer_find("pprof"));
	assert_ptr_equal(writer_for_path("p.summary"), writer_find("summary"));
	assert_ptr_equal(writer_for_path("p.summary.txt"), writer_find("summary"));
	assert_ptr_equal(writer_for_path("p.txt"), writer_find("collapsed"));
	assert_ptr_equal(writer_for_path("p.folded"), writer_find("collapsed"));
	assert_null(writer_for_path("p.gz"));
	assert_string_equal(writer_default()->name, "collapsed");
	assert_ptr_equal(writer_for_path("p.gecko.json"), writer_find("gecko"));
	assert_ptr_equal(writer_for_path("p.trace.json"), writer_find("chrometrace"));
	assert_ptr_equal(writer_for_path("p.tby"), writer_find("binary"));
	assert_string_equal(writer_names(),
			    "collapsed, svg, speedscope, pprof, summary, pstats, heatmap, gecko, chrometrace, binary");
}

/* ---- the time-ordered writers ---- */

static struct rthread fx_threads[] = {
	{ .proc = 0, .tid = 1, .name = "MainThread" },
	{ .proc = 0, .tid = 2 },
};

/* Thread 1: samples 0, 0, 1 (an off-CPU interval worth 3 periods), 0; thread 2: 2. */
static struct rtick fx_ticks[] = {
	{ .sample = 0, .thread = 0, .tid = 1, .t_ns = 1000000, .end_ns = 1000000, .weight = 1 },
	{ .sample = 2, .thread = 1, .tid = 2, .t_ns = 1500000, .end_ns = 1500000, .weight = 1 },
	{ .sample = 0, .thread = 0, .tid = 1, .t_ns = 2000000, .end_ns = 2000000, .weight = 1 },
	{ .sample = 1, .thread = 0, .tid = 1, .t_ns = 3000000, .end_ns = 6000000, .weight = 3 },
	{ .sample = 0, .thread = 0, .tid = 1, .t_ns = 6000000, .end_ns = 6000000, .weight = 1 },
};

static struct resolved timeline_fixture(void)
{
	struct resolved r = fixture();

	r.timeline = 1;
	r.ticks = fx_ticks;
	r.nticks = sizeof(fx_ticks) / sizeof(fx_ticks[0]);
	r.threads = fx_threads;
	r.nthreads = 2;
	return r;
}

static void test_timeline_writers(void **state)
{
	struct resolved r = timeline_fixture();
	const char *why;
	size_t n, at;
	char *out;

	(void)state;
	/* speedscope: per thread, time order, seconds (1 ms a period) */
	out = run_writer(output_speedscope, &r, &n);
	assert_null(oc_json(out, n, &at));
	assert_non_null(strstr(out, "MainThread (tid 1)\",\"unit\":\"seconds\",\"startValue\":0,"
				    "\"endValue\":0.006,\n\"samples\":[\n[0,1,3],\n[0,1,3],\n[0,2,1],\n[0,1,3]]"));
	assert_non_null(strstr(out, "\"weights\":[0.001,0.001,0.003,0.001]"));
	assert_non_null(strstr(out, "tid 2 (tid 2)\""));
	free(out);
	/* chrometrace: frames open and close where the stacks change */
	out = run_writer(output_chrometrace, &r, &n);
	assert_null(oc_json(out, n, &at));
	assert_int_equal(count_str(out, "\"ph\":\"B\""), count_str(out, "\"ph\":\"E\""));
	assert_non_null(strstr(out, "{\"ph\":\"E\",\"name\":\"g\",\"cat\":\"python\",\"pid\":100,"
				    "\"tid\":1,\"ts\":3000.000"));
	assert_non_null(strstr(out, "\"args\":{\"name\":\"MainThread\"}"));
	free(out);
	/* gecko: 5 samples with a stack in thread 1 (the interval as 3), its
	 * closing idle sample, an Off-CPU marker over the interval */
	fx_samples[1].flags = RS_OFFCPU;
	out = run_writer(output_gecko, &r, &n);
	fx_samples[1].flags = 0;
	why = oc_json(out, n, &at);
	assert_null(why);
	/* stacks, prefix first: main 0, f:20 1, g 2; f:22 3, f:20 4 */
	assert_non_null(strstr(out, "[2,1.000,0],\n[2,2.000,0],\n[4,3.000,0],\n[4,4.000,0],\n"
				    "[4,5.000,0],\n[2,6.000,0],\n[null,7.000,0]]"));
	assert_non_null(strstr(out, "[1,3.000,6.000,1,3,null]"));
	free(out);
	/* out of time order: refused */
	fx_ticks[0].t_ns = 9000000;
	assert_int_equal(resolved_check(&r), -EINVAL);
	fx_ticks[0].t_ns = 1000000;
	assert_int_equal(resolved_check(&r), 0);
}

/*
 * A streamed recording cut after two segments, where the second moved the
 * first's samples to another row (the thread got its name): the ticks
 * written with the first follow them, and the row left at 0 goes.
 */
static void test_tby_journal_moved_row(void **state)
{
	struct rsample rows1[] = { { .proc = 0, .tid = 1, .depth = 3, .count = 3, .frames = st0 } };
	struct rsample rows2[] = { { .proc = 0, .tid = 1, .depth = 3, .count = 5, .frames = st0,
				     .tname = "worker" } };
	struct rthread th1[] = { { .proc = 0, .tid = 1 } };
	struct rthread th2[] = { { .proc = 0, .tid = 1, .name = "worker" } };
	struct rtick ticks[5];
	struct resolved r = fixture();
	struct tby_stream *st;
	struct tby_file f;
	char *buf = NULL, why[128];
	size_t n = 0, i;
	FILE *out = open_memstream(&buf, &n);

	(void)state;
	for (i = 0; i < 5; i++)
		ticks[i] = (struct rtick){ .sample = 0, .tid = 1, .weight = 1,
					   .t_ns = (i + 1) * 1000000, .end_ns = (i + 1) * 1000000 };
	r.timeline = 1;
	r.ticks = ticks;
	r.nprocs = 1;
	st = tby_stream_new(out);
	assert_non_null(st);
	r.samples = rows1, r.nsamples = 1, r.total = 3, r.nticks = 3, r.threads = th1, r.nthreads = 1;
	assert_int_equal(tby_stream_append(st, &r), 0);
	r.samples = rows2, r.total = 5, r.nticks = 5, r.threads = th2;
	assert_int_equal(tby_stream_append(st, &r), 0);
	tby_stream_free(st);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(tby_read((const uint8_t *)buf, n, &f, why, sizeof(why)), 0);
	assert_true(f.partial);
	assert_int_equal(f.r.nsamples, 1);
	assert_string_equal(f.r.samples[0].tname, "worker");
	assert_int_equal(f.r.samples[0].count, 5);
	assert_int_equal(f.r.nticks, 5);
	for (i = 0; i < f.r.nticks; i++)
		assert_int_equal(f.r.ticks[i].sample, 0);
	tby_free(&f);
	free(buf);
	/* A tick of a sample taken after the counts were read: the row keeps its first 4. */
	out = open_memstream(&buf, &n);
	st = tby_stream_new(out);
	rows2[0].count = 4;
	r.total = 4;
	assert_int_equal(tby_stream_append(st, &r), 0);
	tby_stream_free(st);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(tby_read((const uint8_t *)buf, n, &f, why, sizeof(why)), 0);
	assert_int_equal(f.r.nticks, 4);
	assert_int_equal(f.r.ticks[3].t_ns, 4000000);
	tby_free(&f);
	free(buf);
}

/* A reader that went away: EPIPE comes back, as main() expects. */
static void test_epipe(void **state)
{
	struct resolved r = fixture();
	size_t i;
	int ret;

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		int fds[2];
		FILE *f;

		assert_int_equal(pipe(fds), 0);
		close(fds[0]);
		f = fdopen(fds[1], "w");
		assert_non_null(f);
		ret = writer_find(formats[i])->write(f, &r);
		if (ret != -EPIPE)
			fail_msg("%s: returned %d, want -EPIPE", formats[i], ret);
		fclose(f);
	}
}

static void test_empty_profile(void **state)
{
	struct resolved r = { .event = "cpu-clock", .rate = 99 };
	struct dec_profile d;
	char *s;

	(void)state;
	s = run_writer(output_svg, &r, NULL);
	assert_true(xml_wellformed(s));
	assert_int_equal(count_str(s, "<g class=\"f\">"), 1);
	free(s);
	s = run_writer(output_speedscope, &r, NULL);
	assert_true(json_valid(s));
	assert_int_equal(count_str(s, "\"type\":\"sampled\""), 1);
	free(s);
	s = run_writer(output_summary, &r, NULL);
	assert_non_null(strstr(s, "# 0 samples"));
	free(s);
	decode_writer(&r, &d);
	assert_int_equal(d.nsample, 0);
	assert_string_equal(d.str[0], "");
	dec_free(&d);
}

/* Frames must be the profile's own (r->frames[id]); anything else is refused. */
static void test_inconsistent_profile(void **state)
{
	struct resolved r = fixture();
	struct rframe stray = { (char *)"x", (char *)"x.py", 1, 1, 2, NULL };
	struct rframe *st[] = { &stray };
	struct rsample smp = { .depth = 1, .count = 1, .frames = st };
	FILE *f = fopen("/dev/null", "w");
	size_t i;

	(void)state;
	r.samples = &smp;
	r.nsamples = 1;
	for (i = 1; i < sizeof(formats) / sizeof(formats[0]); i++) {
		assert_int_equal(writer_find(formats[i])->write(f, &r), -EINVAL);
	}
	fclose(f);
}

/* ---- 100k distinct stacks ---- */

#define BIG_STACKS 100000
#define BIG_DEPTH 24
#define BIG_FRAMES 3000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_big_profile(void **state)
{
	struct rframe *fr = calloc(BIG_FRAMES, sizeof(*fr));
	struct rframe **ptrs = calloc(BIG_FRAMES, sizeof(*ptrs));
	struct rframe **stk = calloc((size_t)BIG_STACKS * BIG_DEPTH, sizeof(*stk));
	struct rsample *smp = calloc(BIG_STACKS, sizeof(*smp));
	struct resolved r = { .samples = smp, .nsamples = BIG_STACKS, .frames = ptrs,
			      .nframes = BIG_FRAMES, .event = "cpu-clock", .rate = 999,
			      .duration_s = 10 };
	static char names[BIG_FRAMES][16];
	uint32_t seed = 12345;
	size_t i, j, len;
	double t0, dt;
	char *svg, want[64];
	FILE *null;

	(void)state;
	assert_true(fr && ptrs && stk && smp);
	for (i = 0; i < BIG_FRAMES; i++) {
		snprintf(names[i], sizeof(names[i]), "func_%zu", i);
		fr[i] = (struct rframe){ names[i], (char *)"big.py", (int32_t)i, (int32_t)i,
					 (uint32_t)i, NULL };
		ptrs[i] = &fr[i];
	}
	for (i = 0; i < BIG_STACKS; i++) {
		smp[i].frames = stk + i * BIG_DEPTH;
		smp[i].depth = BIG_DEPTH;
		smp[i].count = 1 + i % 3;
		smp[i].tid = (uint32_t)(i % 8);
		r.total += smp[i].count;
		/* a few common roots, random below: like a real program */
		for (j = 0; j < BIG_DEPTH; j++) {
			seed = seed * 1103515245 + 12345;
			smp[i].frames[j] = &fr[j < 3 ? j * 7 + (i % 2) : (seed >> 8) % BIG_FRAMES];
		}
	}
	t0 = now();
	svg = run_writer(output_svg, &r, &len);
	dt = now() - t0;
	print_message("svg: %zu bytes, %zu frames, %.2f s\n", len,
		      count_str(svg, "<g class=\"f\">"), dt);
	assert_true(dt < 10);
	assert_true(len < 20 << 20);
	assert_true(xml_wellformed(svg));
	snprintf(want, sizeof(want), "<title>all\n%" PRIu64 " samples (100.00%%)</title>", r.total);
	assert_non_null(strstr(svg, want));
	free(svg);

	null = fopen("/dev/null", "w");
	assert_non_null(null);
	for (i = 2; i < sizeof(formats) / sizeof(formats[0]); i++) {
		t0 = now();
		assert_int_equal(writer_find(formats[i])->write(null, &r), 0);
		print_message("%s: %.2f s\n", formats[i], now() - t0);
		assert_true(now() - t0 < 10);
	}
	fclose(null);
	free(fr);
	free(ptrs);
	free(stk);
	free(smp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_svg_sorted_siblings),
		cmocka_unit_test(test_svg_self_right),
		cmocka_unit_test(test_speedscope),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_pprof_roundtrip),
		cmocka_unit_test(test_pprof_wall),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_summary_top),
		cmocka_unit_test(test_writer_table_formats),
		cmocka_unit_test(test_timeline_writers),
		cmocka_unit_test(test_tby_journal_moved_row),
		cmocka_unit_test(test_epipe),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_inconsistent_profile),
		cmocka_unit_test(test_big_profile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
