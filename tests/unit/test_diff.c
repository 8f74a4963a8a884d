// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The SVG writer's differential mode (tachyon-bpf diff): each frame's
 * delta is the change of every stack under it, stacks only the base has
 * (count 0) included; red for growth, blue for loss, saturation by the
 * share of the largest change; the tooltip gives the delta.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "rframe_fixture.h"
#include "output/output.h"
#include "output/diff.h"

enum { F_MAIN, F_A, F_B, F_C, NFR };
static struct rframe frames[NFR] = {
	[F_MAIN] = RFRAME("main", "m.py", 1, 1, F_MAIN),
	[F_A] = RFRAME("a", "m.py", 5, 4, F_A),
	[F_B] = RFRAME("b", "m.py", 9, 8, F_B),
	[F_C] = RFRAME("c", "m.py", 13, 12, F_C),
};
static struct rframe *ptrs[NFR];
static struct rframe *st_a[] = { &frames[F_MAIN], &frames[F_A] };
static struct rframe *st_b[] = { &frames[F_MAIN], &frames[F_B] };
static struct rframe *st_c[] = { &frames[F_MAIN], &frames[F_C] };
/* NEW: a 30, b 10, c gone; BASE: a 10, b 10, c 20. */
static struct rsample samples[] = {
	{ .depth = 2, .count = 30, .frames = st_a },
	{ .depth = 2, .count = 10, .frames = st_b },
	{ .depth = 2, .count = 0, .frames = st_c },
};
static const double base[] = { 10, 10, 20 };

static char *draw(void)
{
	struct resolved r = { .samples = samples, .nsamples = 3, .frames = ptrs,
			      .nframes = NFR, .total = 40 };
	struct svg_diff d = { .base = base, .subtitle = "x <to> y" };
	char *buf = NULL;
	size_t n = 0, i;
	FILE *f = open_memstream(&buf, &n);

	for (i = 0; i < NFR; i++)
		ptrs[i] = &frames[i];
	assert_non_null(f);
	assert_int_equal(output_svg_diff(f, &r, &d), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The fill of the frame whose tooltip starts with title. */
static void fill_of(const char *svg, const char *title, char *out, size_t len)
{
	const char *t = strstr(svg, title), *fill;

	assert_non_null(t);
	fill = strstr(t, "fill=\"");
	assert_non_null(fill);
	fill += 6;
	snprintf(out, len, "%.*s", (int)strcspn(fill, "\""), fill);
}

static void test_diff_colours(void **state)
{
	char *svg = draw(), fill[32];

	(void)state;
	/* a +20 is the largest change: full red; b none; main lost 0 (+20 - 20) */
	assert_non_null(strstr(svg, "<title>a (m.py:5)\n30 samples (75.00%); delta +20 (+50.00%)"));
	fill_of(svg, "<title>a (m.py:5)", fill, sizeof(fill));
	assert_string_equal(fill, "rgb(255,0,0)");
	fill_of(svg, "<title>b (m.py:9)", fill, sizeof(fill));
	assert_string_equal(fill, "rgb(250,250,250)");
	assert_non_null(strstr(svg, "<title>main (m.py:1)\n40 samples (100.00%); delta +0"));
	/* c is not drawn (no samples in NEW), but the title and subtitle are there */
	assert_null(strstr(svg, "c (m.py:13)"));
	assert_non_null(strstr(svg, ">Differential Flame Graph<"));
	assert_non_null(strstr(svg, "x &lt;to&gt; y"));
	free(svg);
}

static void test_diff_blue(void **state)
{
	char *svg, fill[32];

	(void)state;
	/* a -5, b +10, main -15 (c's -20 included); c, not drawn, sets no scale */
	samples[0].count = 5;
	samples[1].count = 20;
	svg = draw();
	fill_of(svg, "<title>main (m.py:1)", fill, sizeof(fill));
	assert_string_equal(fill, "rgb(0,0,255)");
	fill_of(svg, "<title>a (m.py:5)", fill, sizeof(fill));
	assert_string_equal(fill, "rgb(140,140,255)");	/* 210 * (1 - 5/15) */
	fill_of(svg, "<title>b (m.py:9)", fill, sizeof(fill));
	assert_string_equal(fill, "rgb(255,70,70)");	/* 210 * (1 - 10/15) */
	samples[0].count = 30;
	samples[1].count = 10;
	free(svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diff_colours),
		cmocka_unit_test(test_diff_blue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
