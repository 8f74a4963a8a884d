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
#include "tachyon.h"
#include "util.h"

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
	assert_int_equal(PARSE("-p", "1", "-F", "99999999999999999999"), 2);
	assert_one_line("perf_event_max_sample_rate");
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
	/* decimal only, as -F, -c and -p */
	assert_int_equal(PARSE("-p", "1", "-d", "0x10"), 2);
	assert_one_line("-d 0x10");
	assert_int_equal(PARSE("-p", "1", "-d", "1e3"), 2);
	assert_one_line("-d 1e3");
	assert_int_equal(PARSE("-p", "1", "-d", ".5"), -1);
	assert_int_equal(PARSE("--", ""), 2);
	assert_one_line("-- '': empty command name");
	assert_int_equal(PARSE("-p", "1", "--bogus"), 2);
	assert_one_line("--bogus: unknown option");
	assert_int_equal(PARSE("-p", "1", "-Z"), 2);
	assert_one_line("-Z: unknown option");
	assert_int_equal(PARSE("-p"), 2);
	assert_one_line("needs a value");
	assert_int_equal(PARSE("-s", "--all-python"), 2);
	assert_one_line("-s and --all-python: give one of them");
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

static void test_commands(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-p", "1"), -1);
	assert_int_equal(o.command, CMD_RECORD);
	assert_int_equal(PARSE("top", "-p", "5", "-F", "49", "--threads"), -1);
	assert_int_equal(o.command, CMD_TOP);
	assert_int_equal(o.pids[0], 5);
	assert_int_equal(o.freq, 49);
	assert_int_equal(o.threads, 1);
	assert_int_equal(PARSE("top", "--all-python"), -1);
	assert_int_equal(o.all_python, 1);
	assert_int_equal(PARSE("dump", "-p", "7,8", "--full-filenames"), -1);
	assert_int_equal(o.command, CMD_DUMP);
	assert_int_equal(o.npids, 2);
	assert_int_equal(o.full_paths, 1);
	assert_string_equal(err, "");
	/* A command only in first place: anywhere else it is a stray word. */
	assert_int_equal(PARSE("-p", "1", "top"), 2);
	assert_one_line("top: unexpected argument");
}

static void test_command_errors(void **state)
{
	(void)state;
	assert_int_equal(PARSE("top"), 2);
	assert_one_line("top: no target");
	assert_int_equal(PARSE("top", "-p", "1", "--all-python"), 2);
	assert_one_line("give only one of");
	assert_int_equal(PARSE("top", "-p", "1", "-o", "x.svg"), 2);
	assert_one_line("--output: not an option of top");
	assert_int_equal(PARSE("top", "-p", "1", "--pyroscope", "http://x", "--app", "a"), 2);
	assert_one_line("--pyroscope: not an option of top");
	assert_int_equal(PARSE("top", "-p", "1", "--", "python3"), 2);
	assert_one_line("top does not start programs");
	assert_int_equal(PARSE("top", "-p", "1", "stray"), 2);
	assert_one_line("stray: unexpected argument (see tachyon-bpf top --help)");
	assert_int_equal(PARSE("dump"), 2);
	assert_one_line("dump: no target");
	assert_int_equal(PARSE("dump", "-p", "1", "-F", "99"), 2);
	assert_one_line("--frequency: not an option of dump");
	assert_int_equal(PARSE("dump", "--all-python"), 2);
	assert_one_line("--all-python: not an option of dump");
	assert_int_equal(PARSE("dump", "-p", "1", "--summary"), 2);
	assert_one_line("--summary: not an option of dump");
	assert_int_equal(PARSE("dump", "-p", "x"), 2);
	assert_one_line("not a process id");
}

static void test_output_options(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-p", "1", "--summary"), -1);
	assert_int_equal(o.summary, 1);
	assert_null(o.pyroscope);
	assert_true(o.push_interval == 10);
	assert_int_equal(PARSE("-p", "1", "--pyroscope", "https://p.example:4040/", "--app",
			       "web{env=prod}", "--push-interval", "2.5"), -1);
	assert_string_equal(o.pyroscope, "https://p.example:4040/");
	assert_string_equal(o.app, "web{env=prod}");
	assert_true(o.push_interval == 2.5);
	assert_string_equal(err, "");
}

static void test_output_option_errors(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-p", "1", "--pyroscope", "http://x"), 2);
	assert_one_line("add --app NAME");
	assert_int_equal(PARSE("-p", "1", "--app", "a"), 2);
	assert_one_line("--app: only used with --pyroscope");
	assert_int_equal(PARSE("-p", "1", "--push-interval", "5"), 2);
	assert_one_line("--push-interval: only used with --pyroscope");
	assert_int_equal(PARSE("-p", "1", "--pyroscope", "localhost:4040", "--app", "a"), 2);
	assert_one_line("not an http:// or https:// URL");
	assert_int_equal(PARSE("-p", "1", "--pyroscope", "http://", "--app", "a"), 2);
	assert_one_line("no host");
	assert_int_equal(PARSE("-p", "1", "--pyroscope", "http://x", "--app", ""), 2);
	assert_one_line("--app: empty name");
	assert_int_equal(PARSE("-p", "1", "--pyroscope", "http://x", "--app", "a",
			       "--push-interval", "0.5"), 2);
	assert_one_line("--push-interval 0.5");
	assert_int_equal(PARSE("-p", "1", "--pyroscope", "http://x", "--app", "a",
			       "--push-interval", "ten"), 2);
	assert_one_line("--push-interval ten");
	assert_int_equal(PARSE("-p", "1", "--opcodes=some"), 2);
	assert_one_line("--opcodes=some: not 'leaf' or 'all'");
	assert_int_equal(PARSE("-p", "1", "--opcodes"), -1);
	assert_int_equal(o.opcodes, OPCODES_LEAF);
	assert_int_equal(PARSE("-p", "1", "--opcodes=all"), -1);
	assert_int_equal(o.opcodes, OPCODES_ALL);
}

/* py-spy's command lines mean what they mean there. */
static void test_pyspy_spellings(void **state)
{
	(void)state;
	assert_int_equal(PARSE("record", "-p", "5", "-r", "250", "-f", "flamegraph", "--idle",
			       "--nonblocking", "-t"), -1);
	assert_int_equal(o.command, CMD_RECORD);
	assert_int_equal(o.pids[0], 5);
	assert_int_equal(o.freq, 250);
	assert_string_equal(o.writer->name, "svg");
	assert_int_equal(o.mode, TB_MODE_WALL);
	assert_int_equal(o.threads, 1);
	assert_int_equal(PARSE("-p", "5", "--rate", "7", "--gil", "-f", "raw"), -1);
	assert_int_equal(o.freq, 7);
	assert_int_equal(o.mode, TB_MODE_GIL);
	assert_string_equal(o.writer->name, "collapsed");
	assert_int_equal(PARSE("-p", "5", "-i"), -1);
	assert_int_equal(o.mode, TB_MODE_WALL);
	assert_int_equal(PARSE("-p", "5", "--native"), -1);
	assert_int_equal(o.native, 1);
	assert_int_equal(o.native_fp, 0);
	assert_int_equal(PARSE("-p", "5", "--native=fp"), -1);
	assert_int_equal(o.native, 1);
	assert_int_equal(o.native_fp, 1);
	assert_int_equal(PARSE("-p", "5", "--native=dwarf"), 2);
	assert_one_line("--native=dwarf: not 'fp'");
	assert_int_equal(PARSE("dump", "-p", "5", "-n"), 2);
	assert_one_line("record --native");
	/* py-spy's chrometrace is ours too, and needs every sample's time */
	assert_int_equal(PARSE("-p", "5", "-f", "chrometrace"), -1);
	assert_string_equal(o.writer->name, "chrometrace");
	assert_int_equal(o.timeline, 1);
	assert_int_equal(PARSE("-p", "5", "-o", "x.gecko.json"), -1);
	assert_int_equal(o.timeline, 1);
	assert_int_equal(o.gc_state, 1);
	assert_int_equal(PARSE("-p", "5", "-f", "speedscope"), -1);
	assert_int_equal(o.timeline, 0);
	assert_int_equal(PARSE("-p", "5", "-f", "speedscope", "--timeline"), -1);
	assert_int_equal(o.timeline, 1);
	assert_int_equal(PARSE("-p", "5,5,6,5"), -1);
	assert_int_equal(o.npids, 2);
}

static void test_output_extensions(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-p", "5", "-o", "prof.SVG"), -1);
	assert_string_equal(o.writer->name, "svg");
	assert_int_equal(PARSE("-p", "5", "-o", "dir.d/out"), -1);
	assert_string_equal(o.writer->name, "collapsed");
	assert_int_equal(PARSE("-p", "5", "-o", ".hidden"), -1);
	assert_string_equal(o.writer->name, "collapsed");
	assert_int_equal(PARSE("-p", "5", "-o", "x.xml"), 2);
	assert_one_line(".xml is not the extension of an output format");
	assert_int_equal(PARSE("-p", "5", "-o", "x.html"), -1);
	assert_string_equal(o.writer->name, "heatmap");
	assert_int_equal(PARSE("-p", "5", "-o", "x.xml", "-f", "svg"), -1);
	assert_string_equal(o.writer->name, "svg");
	/* -o again: one more file of the run, in its extension's format,
	 * which may ask for the timeline and the GC state */
	assert_int_equal(PARSE("-p", "5", "-o", "p.tby", "-o", "p.gecko.json", "-o", "p.svg"), -1);
	assert_string_equal(o.writer->name, "binary");
	assert_int_equal(o.nmore, 2);
	assert_string_equal(o.more_writer[0]->name, "gecko");
	assert_string_equal(o.more_output[1], "p.svg");
	assert_int_equal(o.timeline, 1);
	assert_int_equal(o.gc_state, 1);
	assert_int_equal(PARSE("-p", "5", "-o", "p.tby", "-o", "p"), 2);
	assert_one_line("a second -o needs the extension of a format");
	assert_int_equal(PARSE("top", "--bogus"), 2);
	assert_one_line("(see tachyon-bpf top --help)");
}

/* Two outputs naming one file: the last written would hold only itself. */
static void test_same_output_file(void **state)
{
	char dir[] = "/tmp/tb-cli-XXXXXX", file[64], other[64];
	FILE *f;

	(void)state;
	assert_int_equal(PARSE("-p", "5", "-o", "same.folded", "--stats", "same.folded"), 2);
	assert_one_line("-o same.folded and --stats same.folded: the same file");
	assert_int_equal(PARSE("-p", "5", "-o", "a.svg", "-o", "./a.svg"), 2);
	assert_one_line("the same file");
	assert_int_equal(PARSE("-p", "5", "-o", "a.svg", "-o", "a.tby", "--stats", "a.json"), -1);
	assert_int_equal(PARSE("-p", "5", "-o", "/dev/null", "--stats", "/dev/null"), -1);
	/* an existing file by two names: a hard link */
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/p.folded", dir);
	snprintf(other, sizeof(other), "%s/q.folded", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(link(file, other), 0);
	assert_int_equal(PARSE("-p", "5", "-o", file, "--stats", other), 2);
	assert_one_line("the same file");
	unlink(other);
	unlink(file);
	rmdir(dir);
}

/* "every 251st tick" in the closing line. */
static void test_ordinal_suffix(void **state)
{
	static const struct { unsigned long n; const char *s; } want[] = {
		{ 1, "st" }, { 2, "nd" }, { 3, "rd" }, { 4, "th" }, { 11, "th" }, { 12, "th" },
		{ 13, "th" }, { 21, "st" }, { 22, "nd" }, { 23, "rd" }, { 101, "st" },
		{ 111, "th" }, { 112, "th" }, { 113, "th" }, { 251, "st" }, { 1000, "th" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strcmp(ordinal_suffix(want[i].n), want[i].s))
			fail_msg("%lu%s, want %lu%s", want[i].n, ordinal_suffix(want[i].n),
				 want[i].n, want[i].s);
}

/* The help of a command, captured from stdout. */
static void help_of(const char *cmd, char *out, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDOUT_FILENO);
	size_t n;

	fflush(stdout);
	dup2(fileno(tmp), STDOUT_FILENO);
	if (cmd)
		assert_int_equal(PARSE(cmd, "--help"), 0);
	else
		assert_int_equal(PARSE("--help"), 0);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, len - 1, tmp);
	out[n] = 0;
	fclose(tmp);
}

static void test_command_help(void **state)
{
	static char out[16384];

	(void)state;
	help_of(NULL, out, sizeof(out));
	assert_non_null(strstr(out, "--summary"));
	assert_non_null(strstr(out, "--pyroscope URL"));
	assert_non_null(strstr(out, "tachyon-bpf top"));
	assert_non_null(strstr(out, "tachyon-bpf dump"));
	help_of("top", out, sizeof(out));
	assert_non_null(strstr(out, "Usage: tachyon-bpf top"));
	assert_non_null(strstr(out, "q quit"));
	assert_non_null(strstr(out, "%Self"));
	help_of("dump", out, sizeof(out));
	assert_non_null(strstr(out, "Usage: tachyon-bpf dump"));
	assert_non_null(strstr(out, "Innermost frame first"));
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
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_command_errors),
		cmocka_unit_test(test_output_options),
		cmocka_unit_test(test_output_option_errors),
		cmocka_unit_test(test_command_help),
		cmocka_unit_test(test_pyspy_spellings),
		cmocka_unit_test(test_output_extensions),
		cmocka_unit_test(test_same_output_file),
		cmocka_unit_test(test_ordinal_suffix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
