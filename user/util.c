// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "util.h"

int array_grow(void *arr, size_t *cap, size_t need, size_t size, size_t first)
{
	void **v = arr;
	size_t n = *cap ? *cap : first ? first : 1;
	void *g;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (n > SIZE_MAX / size)
		return -ENOMEM;
	g = realloc(*v, n * size);
	if (!g)
		return -ENOMEM;
	*v = g;
	*cap = n;
	return 0;
}

const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	/* "dir/" keeps its name rather than becoming "" */
	return slash && slash[1] ? slash + 1 : path;
}

const char *ordinal_suffix(unsigned long n)
{
	if (n % 100 >= 11 && n % 100 <= 13)	/* 11th, 12th, 113th */
		return "th";
	switch (n % 10) {
	case 1:
		return "st";
	case 2:
		return "nd";
	case 3:
		return "rd";
	}
	return "th";
}

void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
