// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * embedded - a C program that embeds libpython3.13 through the C API, for
 * tachyon-bpf tests. Its name has no "python" in it and the executable
 * holds no _PyRuntime: the profiler has to find the interpreter in the
 * shared library.
 *
 * usage: embedded [SCRIPT]
 *
 * Without SCRIPT it runs the built-in program below, whose code objects
 * have the file name "<string>"; with SCRIPT it runs that file. Either way
 * the Python code itself prints "READY <pid>" just before its hot loop, so
 * the test profiles only once Python frames exist, and then loops forever.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>

/*
 * Line numbers matter: tests/integration/test_embedded.py expects
 * <module> at line 15, embedded_hot at 12 while it calls embedded_leaf,
 * and embedded_leaf's loop at lines 6-7.
 */
static const char program[] =
	"import os\n"					/* 1 */
	"import sys\n"					/* 2 */
	"\n"						/* 3 */
	"def embedded_leaf(n):\n"			/* 4 */
	"    total = 0\n"				/* 5 */
	"    for i in range(n):\n"			/* 6 */
	"        total += i * i\n"			/* 7 */
	"    return total\n"				/* 8 */
	"\n"						/* 9 */
	"def embedded_hot():\n"				/* 10 */
	"    while True:\n"				/* 11 */
	"        embedded_leaf(2000)\n"			/* 12 */
	"\n"						/* 13 */
	"os.write(1, b'READY %d\\n' % os.getpid())\n"	/* 14 */
	"embedded_hot()\n";				/* 15 */

static int run_file(const char *path)
{
	FILE *f = fopen(path, "r");

	if (!f) {
		perror(path);
		return 1;
	}
	/* closeit = 1: Python closes f */
	return PyRun_SimpleFileExFlags(f, path, 1, NULL) ? 1 : 0;
}

int main(int argc, char **argv)
{
	int ret;

	Py_Initialize();
	if (argc > 1)
		ret = run_file(argv[1]);
	else
		ret = PyRun_SimpleString(program) ? 1 : 0;
	if (Py_FinalizeEx() < 0)
		ret = 1;
	return ret;
}
