// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <linux/perf_event.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "events.h"

static const struct tb_event events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0,
	  "CPU time, timer based (default; works everywhere)" },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0,
	  "task time, timer based" },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0,
	  "page faults" },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1,
	  "CPU cycles (PMU)" },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1,
	  "retired instructions (PMU)" },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 1,
	  "last-level cache misses (PMU)" },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 1,
	  "mispredicted branches (PMU)" },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, 1,
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
	return e->type == PERF_TYPE_SOFTWARE &&
	       (e->config == PERF_COUNT_SW_CPU_CLOCK || e->config == PERF_COUNT_SW_TASK_CLOCK);
}

int event_supported(const struct tb_event *e)
{
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
