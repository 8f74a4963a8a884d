/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Small helpers many files need: growing an array, the last part of a
 * path, filling a caller's error buffer, loads from a byte buffer copied
 * out of a target. libc only, so any file (a decoder under unit test
 * included) may use them.
 */
#ifndef TB_UTIL_H
#define TB_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Make room for `need` elements of `size` bytes in the array *arr (a
 * pointer to the caller's T *), whose capacity is *cap: the capacity
 * doubles, from `first`. Contents are kept. 0, or -ENOMEM (the array is
 * left as it was).
 */
int array_grow(void *arr, size_t *cap, size_t need, size_t size, size_t first);

/* What follows the last '/', or the whole path when nothing does. */
const char *base_name(const char *path);

/* English ordinal suffix: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 111th. */
const char *ordinal_suffix(unsigned long n);

/* printf into err[errlen] when the caller gave one (err may be NULL). */
void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Loads from a buffer read out of a target's memory (any alignment). The
 * target runs on this machine, so its byte order is ours: x86_64 and
 * arm64 Linux, little-endian.
 */
static inline uint16_t load_u16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t load_u32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#endif
