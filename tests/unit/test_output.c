// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Frame labels (escaping, unicode, short paths) and the collapsed writer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "output/output.h"
#include "symbols.h"

static struct target tgt;

static void set_cwd(const char *cwd)
{
	snprintf(tgt.cwd, sizeof(tgt.cwd), "%s", cwd);
	tgt.cwd_len = strlen(cwd);
}

static void label(const char *qual, const char *file, int firstline, int instr,
		  int full, char *out, size_t len)
{
	struct code_info ci = { .addr = 0x1000, .firstlineno = firstline };
	struct tb_frame f = { .code = 0x1000, .instr = instr };

	struct sym_frame sf;
	struct rframe rf = { 0 };

	ci.qualname = (char *)qual;
	ci.filename = (char *)file;
	symbols_frame(&ci, &f, &tgt, full, &sf);
	rf.name = (char *)sf.name;
	rf.file = (char *)sf.file;
	rf.line = sf.line;
	collapsed_label(&rf, out, len);
}

static void test_label_basic(void **state)
{
	char out[256];

	(void)state;
	set_cwd("/srv/app/");
	/* No line table decoded: the first line stands in. */
	label("Worker.run", "/srv/app/worker.py", 12, 3, 0, out, sizeof(out));
	assert_string_equal(out, "Worker.run (worker.py:12)");
	label("Worker.run", "/srv/app/worker.py", 12, 3, 1, out, sizeof(out));
	assert_string_equal(out, "Worker.run (/srv/app/worker.py:12)");
	/* Empty name and file: still `name (file:line)`. */
	label("", "", 3, -1, 0, out, sizeof(out));
	assert_string_equal(out, "<no name> (<no file>:3)");
}

static void test_label_escaping(void **state)
{
	char out[256];

	(void)state;
	set_cwd("/");
	label("a;b\nc\td", "/x;y.py", 1, -1, 0, out, sizeof(out));
	assert_string_equal(out, "a:b c d (/x:y.py:1)");
	assert_null(strchr(out, ';'));
}

static void test_label_unicode(void **state)
{
	char out[256];

	(void)state;
	set_cwd("/t/");
	label("Café.naïve.<locals>.λ_worker", "/t/fïlé_测试.py", 7, -1, 0, out, sizeof(out));
	assert_string_equal(out, "Café.naïve.<locals>.λ_worker (fïlé_测试.py:7)");
}

static void test_label_unknown(void **state)
{
	struct code_info ci = { 0 };
	struct tb_frame f = { .code = 0x7f00dead0000 };
	struct sym_frame sf;
	struct rframe rf = { 0 };
	char out[64];

	(void)state;
	symbols_frame(&ci, &f, &tgt, 0, &sf);
	rf.name = (char *)sf.name;
	rf.file = (char *)sf.file;
	rf.line = sf.line;
	collapsed_label(&rf, out, sizeof(out));
	assert_string_equal(out, "<unknown 0x7f00dead0000>");
}

static void test_label_truncates(void **state)
{
	char out[16];

	(void)state;
	set_cwd("/");
	label("a_very_long_function_name", "/f.py", 1, -1, 0, out, sizeof(out));
	assert_int_equal(strlen(out), sizeof(out) - 1);
}

/* --opcodes: the instruction at the frame's index, caches included; none
 * for a frame not started; an unnamed byte by number. */
static void test_opcode_of_frame(void **state)
{
	/* 3.12: LOAD_FAST (124), BINARY_OP_ADD_INT (7) + 1 cache, a byte
	 * 3.12 does not use (169) */
	static const uint8_t ops[] = { 124, 7, 7, 169 };
	struct code_info ci = { .addr = 0x1000, .ops = (uint8_t *)ops, .nops = 4 };
	struct tb_frame f = { .code = 0x1000 };
	struct rframe rf = { .name = (char *)"f", .file = (char *)"m.py", .line = 3 };
	char buf[16], out[64];

	(void)state;
	tgt.layout.version = 0x030c01f0;
	f.instr = 1;
	assert_string_equal(symbols_opcode(&ci, &f, &tgt, buf, sizeof(buf)), "BINARY_OP_ADD_INT");
	f.instr = 3;
	assert_string_equal(symbols_opcode(&ci, &f, &tgt, buf, sizeof(buf)), "<op 169>");
	f.instr = -1;
	assert_null(symbols_opcode(&ci, &f, &tgt, buf, sizeof(buf)));
	f.instr = 4;	/* past the bytecode read */
	assert_null(symbols_opcode(&ci, &f, &tgt, buf, sizeof(buf)));
	ci.ops = NULL;	/* not read (no --opcodes) */
	f.instr = 1;
	assert_null(symbols_opcode(&ci, &f, &tgt, buf, sizeof(buf)));
	/* the collapsed label: "name (file:line) [OP]" */
	rf.op = (char *)"BINARY_OP_ADD_INT";
	collapsed_label(&rf, out, sizeof(out));
	assert_string_equal(out, "f (m.py:3) [BINARY_OP_ADD_INT]");
	tgt.layout.version = 0;
}

static void test_short_paths(void **state)
{
	(void)state;
	assert_string_equal(symbols_short_path("/usr/lib/python3.11/threading.py", "/home/u/", 8),
			    "threading.py");
	assert_string_equal(symbols_short_path("/root/.pyenv/versions/3.13.0/lib/python3.13/json/decoder.py", "/", 1),
			    "json/decoder.py");
	assert_string_equal(symbols_short_path("/venv/lib/python3.12/site-packages/requests/api.py", "/", 1),
			    "requests/api.py");
	assert_string_equal(symbols_short_path("/usr/lib/python3/dist-packages/yaml/x.py", "/", 1),
			    "yaml/x.py");
	assert_string_equal(symbols_short_path("/home/u/proj/app.py", "/home/u/", 8), "proj/app.py");
	assert_string_equal(symbols_short_path("/opt/other.py", "/home/u/", 8), "/opt/other.py");
	assert_string_equal(symbols_short_path("<string>", "/home/u/", 8), "<string>");
	assert_string_equal(symbols_short_path("./tests/x.py", "/home/u/", 8), "tests/x.py");
	assert_string_equal(symbols_short_path("././x.py", "/home/u/", 8), "x.py");
	assert_string_equal(symbols_short_path("../x.py", "/home/u/", 8), "../x.py");
	assert_string_equal(symbols_short_path("./", "/home/u/", 8), "./");
	assert_string_equal(symbols_short_path("/home/u/./t/x.py", "/home/u/", 8), "t/x.py");
}

static struct rframe fr(const char *name, const char *file, int line)
{
	struct rframe f = { .name = (char *)name, .file = (char *)file, .line = line };

	return f;
}

/* Samples that label the same after resolution merge into one line. */
static void test_fold_and_write(void **state)
{
	struct rframe m = fr("main", "a.py", 1), a = fr("a", "a.py", 2), b = fr("b", "a.py", 5);
	struct rframe l = fr("\xce\xbb", "\xc3\xbc.py", 9), t = fr("[truncated]", "", 0);
	struct rframe *s1[] = { &m, &b }, *s2[] = { &m, &a }, *s3[] = { &m, &l }, *s4[] = { &t, &m };
	struct rsample smp[] = {
		{ .depth = 2, .count = 3, .frames = s1 },
		{ .depth = 2, .count = 2, .frames = s2 },
		{ .depth = 2, .count = 4, .frames = s1, .tid = 7 },
		{ .depth = 2, .count = 1, .frames = s3 },
		{ .depth = 2, .count = 5, .frames = s4 },
	};
	struct resolved r = { .samples = smp, .nsamples = 5 };
	char buf[1024];
	FILE *mem;
	size_t n;

	(void)state;
	mem = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(output_collapsed(mem, &r), 0);
	n = (size_t)ftell(mem);
	fclose(mem);
	buf[n] = 0;
	assert_string_equal(buf,
		"[truncated];main (a.py:1) 5\n"
		"main (a.py:1);a (a.py:2) 2\n"
		"main (a.py:1);b (a.py:5) 7\n"
		"main (a.py:1);\xce\xbb (\xc3\xbc.py:9) 1\n");
}

static void test_writer_table(void **state)
{
	(void)state;
	assert_string_equal(writer_default()->name, "collapsed");
	assert_ptr_equal(writer_for_path("x.folded"), writer_find("collapsed"));
	assert_null(writer_for_path("x.unknown"));
	/* an extension no format has is refused; no extension is collapsed */
	assert_string_equal(writer_unknown_ext("d/x.xyz"), ".xyz");
	assert_null(writer_unknown_ext("x.SVG"));
	assert_null(writer_unknown_ext("dir.d/out"));
	assert_null(writer_unknown_ext(".hidden"));
	assert_null(writer_find("nope"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_basic),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_label_unicode),
		cmocka_unit_test(test_label_unknown),
		cmocka_unit_test(test_label_truncates),
		cmocka_unit_test(test_short_paths),
		cmocka_unit_test(test_opcode_of_frame),
		cmocka_unit_test(test_fold_and_write),
		cmocka_unit_test(test_writer_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
