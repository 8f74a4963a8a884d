// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include "errors.h"

int tb_verbose;
void (*tb_before_message)(void);

static void say(const char *prefix, const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	if (tb_before_message)
		tb_before_message();
	fprintf(stderr, "tachyon-bpf: %s%s\n", prefix, line);
}

void tb_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}

void tb_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("warning: ", fmt, ap);
	va_end(ap);
}

void tb_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}

void tb_debug(const char *fmt, ...)
{
	va_list ap;

	if (!tb_verbose)
		return;
	va_start(ap, fmt);
	say("debug: ", fmt, ap);
	va_end(ap);
}
