/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The perf events a sample can be driven by. */
#ifndef TB_EVENTS_H
#define TB_EVENTS_H

#include <stdint.h>

struct tb_event {
	const char *name;
	uint32_t type;		/* PERF_TYPE_* */
	uint64_t config;
	int hardware;		/* needs a PMU */
	int tick;		/* the scheduler tick: no perf event at all */
	const char *help;
};

/* NULL if the name is unknown. */
const struct tb_event *event_find(const char *name);
const struct tb_event *event_default(void);
/* The i-th known event, NULL past the end. */
const struct tb_event *event_at(int i);
/* Comma-separated list of names, for messages. */
const char *event_names(void);
/* 1 for the timer-driven events (cpu-clock, task-clock): periods in ns. */
int event_is_clock(const struct tb_event *e);
/* 1 if this machine can open the event on CPU 0 (tick: can trace the tick). */
int event_supported(const struct tb_event *e);
/* The scheduler tick event. */
const struct tb_event *event_tick(void);
/*
 * The running kernel's CONFIG_HZ (from /proc/config.gz or
 * /boot/config-RELEASE, else measured from the jiffies in
 * /proc/timer_list); 0 if it cannot be told.
 */
int kernel_hz(void);
/* The function of the tick's hrtimer in the kernel; 0 if none (or no root). */
uint64_t tick_handler(void);

#endif
