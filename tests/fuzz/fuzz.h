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

/* fz_u8() ... fz_u64(): the next bytes as a number, zeros past the end. */
#define FZ_UINT(bits)							\
static inline uint##bits##_t fz_u##bits(struct fz *f)			\
{									\
	uint##bits##_t v;						\
									\
	fz_bytes(f, &v, sizeof(v));					\
	return v;							\
}
FZ_UINT(8)
FZ_UINT(16)
FZ_UINT(32)
FZ_UINT(64)
#undef FZ_UINT

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

#endif /* TB_FUZZ_H */
