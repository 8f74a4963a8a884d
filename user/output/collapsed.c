// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Collapsed stacks, the format of flamegraph.pl and difffolded.pl. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "output/output.h"
#include "output/emit.h"

#define LABEL_MAX 8192

/* Where to cut out[0..pos) so that no UTF-8 sequence is left incomplete. */
static size_t utf8_cut(const char *out, size_t pos)
{
	size_t lead = pos, need;
	unsigned char c;

	while (lead > 0 && ((unsigned char)out[lead - 1] & 0xc0) == 0x80 && pos - lead < 3)
		lead--;
	if (lead == 0)
		return pos;
	c = (unsigned char)out[lead - 1];
	need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
	return lead - 1 + need > pos ? lead - 1 : pos;
}

/* ';' separates frames and '\n' stacks: neither may appear inside a frame. */
static size_t put_clean(char *out, size_t pos, size_t len, const char *s)
{
	for (; *s && pos + 1 < len; s++, pos++) {
		unsigned char c = (unsigned char)*s;

		out[pos] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	if (*s)	/* cut short: don't leave half a character */
		pos = utf8_cut(out, pos);
	out[pos] = 0;
	return pos;
}

void collapsed_label(const struct rframe *f, char *out, size_t len)
{
	char tail[32], op[FRAME_OP_MAX];
	size_t pos;

	pos = put_clean(out, 0, len, f->name);
	if (!f->file[0])
		return;
	pos = put_clean(out, pos, len, " (");
	pos = put_clean(out, pos, len, f->file);
	frame_tail(f, f->line, tail, sizeof(tail));
	pos = put_clean(out, pos, len, tail);
	frame_op_suffix(f, op, sizeof(op));
	put_clean(out, pos, len, op);
}

static char *fold_one(const struct rsample *s)
{
	size_t cap = 1024, pos = 0, n;
	char label[LABEL_MAX];
	char *buf = malloc(cap), *nb;
	uint32_t i;

	if (!buf)
		return NULL;
	buf[0] = 0;
	for (i = 0; i < s->depth; i++) {
		collapsed_label(s->frames[i], label, sizeof(label));
		n = strlen(label);
		if (pos + n + 2 > cap) {
			cap = (pos + n + 2) * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		if (i)
			buf[pos++] = ';';
		memcpy(buf + pos, label, n + 1);
		pos += n;
	}
	return buf;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack,
		      ((const struct folded_line *)b)->stack);
}

void folded_merge(struct folded *f)
{
	size_t i, j = 0;

	if (!f->n)
		return;
	qsort(f->v, f->n, sizeof(f->v[0]), cmp_line);
	for (i = 1; i < f->n; i++) {
		if (!strcmp(f->v[i].stack, f->v[j].stack)) {
			f->v[j].count += f->v[i].count;
			free(f->v[i].stack);
		} else {
			f->v[++j] = f->v[i];
		}
	}
	f->n = j + 1;
}

int resolved_fold(const struct resolved *r, struct folded *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	out->v = calloc(r->nsamples + 1, sizeof(out->v[0]));
	if (!out->v)
		return -ENOMEM;
	for (i = 0; i < r->nsamples; i++) {
		if (!r->samples[i].depth)
			continue;
		out->v[out->n].stack = fold_one(&r->samples[i]);
		if (!out->v[out->n].stack)
			return -ENOMEM;
		out->v[out->n].count = r->samples[i].count;
		out->total += r->samples[i].count;
		out->n++;
	}
	folded_merge(out);
	return 0;
}

void folded_free(struct folded *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		free(f->v[i].stack);
	free(f->v);
	memset(f, 0, sizeof(*f));
}

int output_collapsed(FILE *out, const struct resolved *r)
{
	struct folded f;
	size_t i;
	int ret = resolved_fold(r, &f);

	if (ret)
		return ret;
	for (i = 0; i < f.n && !ret; i++)
		if (fprintf(out, "%s %" PRIu64 "\n", f.v[i].stack, f.v[i].count) < 0)
			ret = -1;
	folded_free(&f);
	if (!ret && fflush(out))
		ret = -1;
	/* stdio set errno on the failed write (EPIPE: the reader went away) */
	return ret ? (errno ? -errno : -EIO) : 0;
}
