// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * late_dlopen - a C program that becomes a Python process only after a
 * while: it starts without libpython, then dlopen()s it, initializes the
 * interpreter and runs Python code. For tachyon-bpf's --all-python tests
 * (an interpreter loaded late, in a process the profiler already looked at).
 *
 * usage: late_dlopen LIBPYTHON DELAY_S SPIN_S
 * Prints "READY <pid>" at once, "PYTHON <pid>" when the Python code starts
 * spinning in late_loaded_fn for SPIN_S seconds, then "DONE <cpu_s>".
 * Built by the test itself: cc -o late_dlopen late_dlopen.c -ldl
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char program[] =
	"import os, sys, time\n"
	"def late_loaded_fn(seconds):\n"
	"    end = time.monotonic() + seconds\n"
	"    while time.monotonic() < end:\n"
	"        pass\n"
	"os.write(1, b'PYTHON %d\\n' % os.getpid())\n"
	"cpu0 = time.process_time()\n"
	"late_loaded_fn(float(os.environ['TB_SPIN']))\n"
	"os.write(1, b'DONE %f\\n' % (time.process_time() - cpu0))\n";

int main(int argc, char **argv)
{
	void (*init)(void);
	int (*run)(const char *);
	struct timespec ts;
	void *h;

	if (argc != 4) {
		fprintf(stderr, "usage: %s LIBPYTHON DELAY_S SPIN_S\n", argv[0]);
		return 2;
	}
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	ts.tv_sec = (time_t)atof(argv[2]);
	ts.tv_nsec = (long)((atof(argv[2]) - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	init = (void (*)(void))dlsym(h, "Py_Initialize");
	run = (int (*)(const char *))dlsym(h, "PyRun_SimpleString");
	if (!init || !run) {
		fprintf(stderr, "no Py_Initialize/PyRun_SimpleString in %s\n", argv[1]);
		return 1;
	}
	setenv("TB_SPIN", argv[3], 1);
	init();
	return run(program) ? 1 : 0;
}
