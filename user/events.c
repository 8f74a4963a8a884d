// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <time.h>
#include <zlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "events.h"

static const struct tb_event events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, 0,
	  "CPU time, timer based (default above the kernel's HZ; works everywhere)" },
	{ "tick", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, 1,
	  "the scheduler tick: CPU time at HZ/N, no interrupt of ours (default up to HZ)" },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0, 0,
	  "task time, timer based" },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0, 0,
	  "page faults" },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1, 0,
	  "CPU cycles (PMU)" },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1, 0,
	  "retired instructions (PMU)" },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 1, 0,
	  "last-level cache misses (PMU)" },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 1, 0,
	  "mispredicted branches (PMU)" },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, 1, 0,
	  "reference cycles, not scaled by frequency (PMU)" },
};

#define NR_EVENTS (sizeof(events) / sizeof(events[0]))

const struct tb_event *event_find(const char *name)
{
	size_t i;

	for (i = 0; i < NR_EVENTS; i++)
		if (!strcmp(events[i].name, name))
			return &events[i];
	return NULL;
}

const struct tb_event *event_at(int i)
{
	return i >= 0 && (size_t)i < NR_EVENTS ? &events[i] : NULL;
}

const struct tb_event *event_default(void)
{
	return &events[0];
}

const char *event_names(void)
{
	static char buf[256];
	size_t i;

	if (buf[0])
		return buf;
	for (i = 0; i < NR_EVENTS; i++) {
		if (i)
			strcat(buf, ", ");
		strcat(buf, events[i].name);
	}
	return buf;
}

int event_is_clock(const struct tb_event *e)
{
	return !e->tick && e->type == PERF_TYPE_SOFTWARE &&
	       (e->config == PERF_COUNT_SW_CPU_CLOCK || e->config == PERF_COUNT_SW_TASK_CLOCK);
}

int event_supported(const struct tb_event *e)
{
	if (e->tick)
		return tick_handler() != 0;

	struct perf_event_attr a = {
		.size = sizeof(a), .type = e->type, .config = e->config,
		.sample_period = 1000000, .disabled = 1,
	};
	int fd = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

const struct tb_event *event_tick(void)
{
	return event_find("tick");
}

/* CONFIG_HZ=N in a kernel config file, plain or gzipped; 0 if absent. */
static int config_hz(const char *path)
{
	gzFile f = gzopen(path, "rb");
	char line[256];
	int hz = 0;

	if (!f)
		return 0;
	while (!hz && gzgets(f, line, sizeof(line)))
		if (!strncmp(line, "CONFIG_HZ=", 10))
			hz = atoi(line + 10);
	gzclose(f);
	return hz;
}

/* The first "jiffies: N" of /proc/timer_list (root only). */
static long long timer_list_jiffies(void)
{
	FILE *f = fopen("/proc/timer_list", "re");
	char line[256];
	long long j = -1;

	if (!f)
		return -1;
	while (j < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "jiffies: %lld", &j) != 1)
			j = -1;
	fclose(f);
	return j;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Jiffies over 100 ms, rounded to the HZ values Linux offers. */
static int measured_hz(void)
{
	static const int known[] = { 100, 250, 300, 1000 };
	struct timespec nap = { 0, 100000000 };
	long long j0 = timer_list_jiffies(), j1;
	double t0 = mono_s(), hz;
	size_t i, best = 0;

	if (j0 < 0)
		return 0;
	nanosleep(&nap, NULL);
	j1 = timer_list_jiffies();
	hz = (double)(j1 - j0) / (mono_s() - t0);
	for (i = 1; i < sizeof(known) / sizeof(known[0]); i++)
		if (abs(known[i] - (int)hz) < abs(known[best] - (int)hz))
			best = i;
	return j1 > j0 ? known[best] : 0;
}

int kernel_hz(void)
{
	static int hz = -1;
	struct utsname u;
	char path[128];

	if (hz >= 0)
		return hz;
	hz = config_hz("/proc/config.gz");
	if (!hz && !uname(&u)) {
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
		hz = config_hz(path);
	}
	if (!hz)
		hz = measured_hz();
	return hz;
}

/*
 * The function of the hrtimer that runs the tick: tick_nohz_handler since
 * 6.9, tick_sched_timer before. Found in /proc/kallsyms (root: real
 * addresses). Periodic mode (no high-resolution timers) has no tick
 * hrtimer: 0.
 */
uint64_t tick_handler(void)
{
	static uint64_t found;
	static int done;
	char line[256], name[128], type;
	unsigned long long addr;
	FILE *f;

	if (done)
		return found;
	done = 1;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) == 3 && addr &&
		    (!strcmp(name, "tick_nohz_handler") || !strcmp(name, "tick_sched_timer")))
			found = addr;
	fclose(f);
	return found;
}
