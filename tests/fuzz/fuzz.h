/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers shared by the libFuzzer targets in tests/fuzz/: a cursor that
 * takes typed values from the fuzz input (running out gives zeros, never an
 * error, so every input means something), a strict UTF-8 validator and
 * FUZZ_CHECK, which aborts with a message so libFuzzer records the input.
 */
#ifndef TB_FUZZ_H
#define TB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken property is a crash: libFuzzer saves the input as crash-*. */
#define FUZZ_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: property failed: %s: ",	\
				__FILE__, __LINE__, #cond);		\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			abort();					\
		}							\
	} while (0)

struct fz {
	const uint8_t *p;
	size_t left;
};

static inline void fz_init(struct fz *f, const uint8_t *data, size_t size)
{
	f->p = data;
	f->left = size;
}

static inline void fz_bytes(struct fz *f, void *out, size_t n)
{
	size_t k = n < f->left ? n : f->left;

	memcpy(out, f->p, k);
	memset((uint8_t *)out + k, 0, n - k);
	f->p += k;
	f->left -= k;
}

static inline uint8_t fz_u8(struct fz *f)
{
	uint8_t v;

	fz_bytes(f, &v, 1);
	return v;
}

static inline uint16_t fz_u16(struct fz *f)
{
	uint16_t v;

	fz_bytes(f, &v, 2);
	return v;
}

static inline uint32_t fz_u32(struct fz *f)
{
	uint32_t v;

	fz_bytes(f, &v, 4);
	return v;
}

static inline uint64_t fz_u64(struct fz *f)
{
	uint64_t v;

	fz_bytes(f, &v, 8);
	return v;
}

/*
 * A NUL-terminated string of at most max bytes, malloc'd: a length byte,
 * then that many bytes (NULs inside become 'x': C strings cannot hold them
 * and nothing upstream produces them).
 */
static inline char *fz_str(struct fz *f, size_t max)
{
	size_t n = fz_u8(f), i;
	char *s;

	if (n > max)
		n = max;
	s = malloc(n + 1);
	if (!s)
		abort();
	fz_bytes(f, s, n);
	for (i = 0; i < n; i++)
		if (!s[i])
			s[i] = 'x';
	s[n] = 0;
	return s;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static inline int fz_utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		uint32_t cp;
		size_t k, j;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			k = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			k = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			k = 3, cp = c & 0x07;
		else
			return 0;
		if (n - i <= k)		/* the sequence runs past the end */
			return 0;
		for (j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return 0;
		i += k + 1;
	}
	return 1;
}

#endif /* TB_FUZZ_H */
