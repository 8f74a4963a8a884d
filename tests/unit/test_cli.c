// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Command-line parsing: values, and one clear line + exit 2 for each bad input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "cli.h"

static struct options o;
static char err[4096];

/* Parse argv, capturing stderr into err. */
static int parse(int argc, const char **argv)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO), ret;
	size_t n;

	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	ret = cli_parse(argc, (char **)argv, &o);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(err, 1, sizeof(err) - 1, tmp);
	err[n] = 0;
	fclose(tmp);
	return ret;
}

#define PARSE(...) ({ const char *a[] = { "tachyon-bpf", __VA_ARGS__ }; \
	parse((int)(sizeof(a) / sizeof(a[0])), a); })

/* Exactly one line, in the house format. */
static void assert_one_line(const char *needle)
{
	assert_true(!strncmp(err, "tachyon-bpf: ", 13));
	assert_non_null(strchr(err, '\n'));
	assert_null(strchr(err, '\n') + 1 == err + strlen(err) ? NULL : "more than one line");
	if (needle && !strstr(err, needle))
		fail_msg("message '%s' lacks '%s'", err, needle);
}

static void test_defaults(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-p", "123"), -1);
	assert_int_equal(o.npids, 1);
	assert_int_equal(o.pids[0], 123);
	assert_int_equal(o.freq, 99);
	assert_true(o.duration == 0);
	assert_null(o.output);
	assert_string_equal(o.event->name, "cpu-clock");
	assert_string_equal(err, "");
}

static void test_values(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-p", "1,2,3", "-F", "999", "-d", "2.5", "-o", "x.folded",
			       "-e", "cycles", "--full-filenames", "-v"), -1);
	assert_int_equal(o.npids, 3);
	assert_int_equal(o.pids[2], 3);
	assert_int_equal(o.freq, 999);
	assert_true(o.duration == 2.5);
	assert_string_equal(o.output, "x.folded");
	assert_string_equal(o.event->name, "cycles");
	assert_true(o.event->hardware);
	assert_int_equal(o.full_paths, 1);
	assert_int_equal(PARSE("--pid=7", "--frequency=10", "--duration", "1"), -1);
	assert_int_equal(o.pids[0], 7);
	assert_int_equal(o.freq, 10);
}

static void test_bad_frequency(void **state)
{
	char big[32];

	(void)state;
	assert_int_equal(PARSE("-p", "1", "-F", "0"), 2);
	assert_one_line("-F 0");
	assert_int_equal(PARSE("-p", "1", "-F", "-5"), 2);
	assert_one_line("-F -5");
	assert_int_equal(PARSE("-p", "1", "-F", "abc"), 2);
	assert_one_line("not a number");
	assert_int_equal(PARSE("-p", "1", "-F", "99x"), 2);
	assert_one_line("not a number");
	snprintf(big, sizeof(big), "%llu", (unsigned long long)cli_max_sample_rate() + 1);
	assert_int_equal(PARSE("-p", "1", "-F", big), 2);
	assert_one_line("perf_event_max_sample_rate");
}

static void test_bad_pid(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-p", "abc"), 2);
	assert_one_line("not a process id");
	assert_int_equal(PARSE("-p", "1,,x"), 2);
	assert_one_line("'x'");
	assert_int_equal(PARSE("-p", "0"), 2);
	assert_one_line(NULL);
	assert_int_equal(PARSE("-F", "99"), 2);
	assert_one_line("give -p PID");
}

static void test_bad_other(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-p", "1", "-e", "bogus"), 2);
	assert_one_line("unknown event");
	assert_int_equal(PARSE("-p", "1", "-d", "0"), 2);
	assert_one_line("-d 0");
	assert_int_equal(PARSE("-p", "1", "-d", "soon"), 2);
	assert_one_line("-d soon");
	assert_int_equal(PARSE("-p", "1", "--bogus"), 2);
	assert_one_line("--bogus: unknown option");
	assert_int_equal(PARSE("-p", "1", "-Z"), 2);
	assert_one_line("-Z: unknown option");
	assert_int_equal(PARSE("-p"), 2);
	assert_one_line("needs a value");
	assert_int_equal(PARSE("-p", "1", "stray"), 2);
	assert_one_line("stray: unexpected argument");
	assert_int_equal(PARSE("-p", "1", "-o", ""), 2);
	assert_one_line("empty file name");
}

static void test_help(void **state)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDOUT_FILENO);
	char out[8192];
	size_t n;

	(void)state;
	fflush(stdout);
	dup2(fileno(tmp), STDOUT_FILENO);
	assert_int_equal(PARSE("--help"), 0);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, sizeof(out) - 1, tmp);
	out[n] = 0;
	fclose(tmp);
	assert_non_null(strstr(out, "Examples:"));
	assert_non_null(strstr(out, "flamegraph.pl"));
	assert_non_null(strstr(out, "cpu-clock"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_bad_frequency),
		cmocka_unit_test(test_bad_pid),
		cmocka_unit_test(test_bad_other),
		cmocka_unit_test(test_help),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
