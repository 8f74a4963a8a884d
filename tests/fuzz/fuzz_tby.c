// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Fuzz the binary recording's reader (user/output/tby_read.c), which
 * `tachyon-bpf replay` runs on any file it is given.
 *
 * Input: byte 0 picks how the rest is used. Even: the rest is the file,
 * as is (header, chunk heads, CRCs, zlib streams: mostly refused early).
 * Odd: the rest is the records of the chunks, wrapped by this harness into
 * a well-formed file (header with version byte 1 of the input's top bits,
 * valid zlib chunks with their CRCs), cut into two chunks at byte 1 of the
 * input, so that the fuzzer reaches the record parser.
 *
 * Properties, besides "no crash, no leak": the reader returns 0, -EINVAL,
 * -EPROTONOSUPPORT or -ENOMEM, and a message whenever it fails; what it
 * accepts passes resolved_check() (what every writer relies on), every
 * writer takes it, and writing it as a recording and reading that back
 * gives a profile that writes the same recording (the format round-trips).
 */
#include <errno.h>
#include <zlib.h>

#include "fuzz.h"
#include "output/output.h"
#include "output/tby.h"

static void le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* One chunk of raw[0..n) at out[*len], compressed, after its head. */
static void add_chunk(uint8_t *out, size_t *len, const uint8_t *raw, size_t n)
{
	uLongf clen = compressBound(n);

	FUZZ_CHECK(compress2(out + *len + TBY_CHUNK_HEAD, &clen, raw, n, 1) == Z_OK,
		   "compress2");
	le32(out + *len, (uint32_t)n);
	le32(out + *len + 4, (uint32_t)clen);
	le32(out + *len + 8, (uint32_t)crc32(0, raw, (uInt)n));
	*len += TBY_CHUNK_HEAD + clen;
}

/* A file whose chunks hold records[0..n), cut at `cut`. */
static uint8_t *wrap(const uint8_t *rec, size_t n, uint8_t sel, uint8_t cut, size_t *len)
{
	uint8_t *out = malloc(TBY_HEADER_SIZE + 2 * (TBY_CHUNK_HEAD + compressBound(n) + 64));
	size_t at = n ? cut % (n + 1) : 0;

	FUZZ_CHECK(out, "malloc");
	memset(out, 0, TBY_HEADER_SIZE);
	memcpy(out, TBY_MAGIC, 4);
	out[4] = sel >> 6 == 3 ? TBY_VERSION + 1 : ((sel >> 1) & 1) + 1;	/* now and then a newer version */
	*len = TBY_HEADER_SIZE;
	add_chunk(out, len, rec, at);
	add_chunk(out, len, rec + at, n - at);
	return out;
}

static char *write_to_mem(const struct writer *w, const struct resolved *r, size_t *n)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, n);
	int ret;

	FUZZ_CHECK(f, "open_memstream");
	ret = w->write(f, r);
	FUZZ_CHECK(!fclose(f), "fclose");
	FUZZ_CHECK(ret == 0, "%s: %s on a profile the reader accepted", w->name, strerror(-ret));
	return buf;
}

static void check_accepted(const struct tby_file *f)
{
	static const char *const names[] = { "collapsed", "svg", "speedscope", "pprof",
					     "summary", "pstats", "gecko", "chrometrace" };
	const struct writer *bin = writer_find("binary");
	struct tby_file again;
	char *b1, *b2, *o, why[256];
	size_t n1, n2, n, i;

	FUZZ_CHECK(!resolved_check(&f->r), "accepted an inconsistent profile");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		o = write_to_mem(writer_find(names[i]), &f->r, &n);
		free(o);
	}
	b1 = write_to_mem(bin, &f->r, &n1);
	FUZZ_CHECK(tby_read((uint8_t *)b1, n1, &again, why, sizeof(why)) == 0,
		   "its own recording refused: %s", why);
	FUZZ_CHECK(!again.partial && again.r.total == f->r.total && again.r.nticks == f->r.nticks,
		   "round trip: %llu samples, %zu ticks became %llu, %zu",
		   (unsigned long long)f->r.total, f->r.nticks,
		   (unsigned long long)again.r.total, again.r.nticks);
	b2 = write_to_mem(bin, &again.r, &n2);
	FUZZ_CHECK(n1 == n2 && !memcmp(b1, b2, n1), "written, read, written again: differs");
	tby_free(&again);
	free(b1);
	free(b2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tby_file f;
	uint8_t *file = NULL;
	size_t len;
	char why[256] = "";
	int ret;

	if (size < 2)
		return 0;
	if (data[0] & 1) {
		file = wrap(data + 2, size - 2, data[0], data[1], &len);
		ret = tby_read(file, len, &f, why, sizeof(why));
	} else {
		ret = tby_read(data + 1, size - 1, &f, why, sizeof(why));
	}
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -EPROTONOSUPPORT || ret == -ENOMEM,
		   "returned %d", ret);
	FUZZ_CHECK(ret == 0 || why[0], "failed (%d) without saying why", ret);
	if (!ret) {
		check_accepted(&f);
		tby_free(&f);
	}
	free(file);
	return 0;
}
