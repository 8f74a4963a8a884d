// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "outcheck.h"

int oc_utf8_valid(const uint8_t *s, size_t n)
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

int oc_has_controls(const char *s, size_t n, int allow_tab)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\n' && !(allow_tab && c == '\t')) || c == 0x7f)
			return 1;
	}
	return 0;
}

/* ---- XML ---- */

static int entity_at(const char *s, const char *end)
{
	static const char *const ok[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&#39;" };
	size_t i, k;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		k = strlen(ok[i]);
		if ((size_t)(end - s) >= k && !memcmp(s, ok[i], k))
			return 1;
	}
	return 0;
}

static const char *find(const char *s, const char *end, const char *needle)
{
	return memmem(s, (size_t)(end - s), needle, strlen(needle));
}

#define XML_DEPTH 512

struct xml {
	const char *names[XML_DEPTH];
	size_t lens[XML_DEPTH];
	size_t depth;
};

/* The tag at s, ending at gt: NULL, or what is wrong with it. */
static const char *xml_tag(struct xml *x, const char *s, const char *gt)
{
	size_t k;

	if (memchr(s + 1, '<', (size_t)(gt - s - 1)))
		return "'<' inside a tag";
	for (k = 1; s + k < gt; k++)	/* attributes: entities only */
		if (s[k] == '&' && !entity_at(s + k, gt))
			return "bare '&' in a tag";
	if (s[1] == '/') {
		k = strcspn(s + 2, " >");
		if (!x->depth || x->lens[x->depth - 1] != k ||
		    memcmp(x->names[x->depth - 1], s + 2, k))
			return "mismatched closing tag";
		x->depth--;
	} else if (gt[-1] != '/') {
		if (x->depth == XML_DEPTH)
			return "tags nested too deep";
		x->names[x->depth] = s + 1;
		x->lens[x->depth++] = strcspn(s + 1, " >/\n");
	}
	return NULL;
}

const char *oc_xml(const char *out, size_t n, size_t *at)
{
	const char *s = out, *end = out + n, *gt, *why = NULL;
	struct xml *x = calloc(1, sizeof(*x));

	if (!x)
		return "out of memory";
	for (; s < end && !why; s++) {
		*at = (size_t)(s - out);
		if (*s == '&' && !entity_at(s, end))
			why = "bare '&'";
		else if (*s == '>')
			why = "'>' outside a tag";	/* the writers always escape it */
		if (why || *s != '<')
			continue;
		if ((size_t)(end - s) >= 2 && s[1] == '?') {
			gt = find(s, end, "?>");
			why = gt ? NULL : "unterminated <?";
			s = gt ? gt + 1 : s;
		} else if ((size_t)(end - s) >= 9 && !memcmp(s, "<![CDATA[", 9)) {
			gt = find(s, end, "]]>");
			why = gt ? NULL : "unterminated CDATA";
			s = gt ? gt + 2 : s;
		} else {
			gt = memchr(s, '>', (size_t)(end - s));
			why = gt ? xml_tag(x, s, gt) : "unterminated tag";
			s = gt ? gt : s;
		}
	}
	if (!why && x->depth) {
		*at = n;
		why = "unclosed tags";
	}
	free(x);
	return why;
}

/* ---- JSON ---- */

struct json {
	const char *p, *end;
	int depth;
};

static void json_ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r'))
		j->p++;
}

static int json_lit(struct json *j, const char *lit)
{
	size_t k = strlen(lit);

	if ((size_t)(j->end - j->p) < k || memcmp(j->p, lit, k))
		return -1;
	j->p += k;
	return 0;
}

static int json_string(struct json *j)
{
	if (j->p == j->end || *j->p++ != '"')
		return -1;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;

		if (c < 0x20)
			return -1;
		if (c != '\\')
			continue;
		if (j->p == j->end)
			return -1;
		c = (unsigned char)*j->p++;
		if (c == 'u') {
			int i;

			for (i = 0; i < 4; i++, j->p++)
				if (j->p == j->end || !strchr("0123456789abcdefABCDEF", *j->p))
					return -1;
		} else if (!strchr("\"\\/bfnrt", c) || !c) {
			return -1;
		}
	}
	if (j->p == j->end)
		return -1;
	j->p++;
	return 0;
}

static int json_number(struct json *j)
{
	const char *start = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p == j->end || *j->p < '0' || *j->p > '9')
		return -1;
	while (j->p < j->end && strchr("0123456789.eE+-", *j->p) && *j->p)
		j->p++;
	return j->p > start ? 0 : -1;
}

static int json_value(struct json *j);

/* The members of an object or the elements of an array, after the '{' or '['. */
static int json_items(struct json *j, char close, int object)
{
	int first;

	for (j->p++, first = 1;; first = 0) {
		json_ws(j);
		if (first && j->p < j->end && *j->p == close)
			break;
		if (object) {
			if (json_string(j))
				return -1;
			json_ws(j);
			if (j->p == j->end || *j->p++ != ':')
				return -1;
		}
		if (json_value(j))
			return -1;
		json_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p == j->end || *j->p != close)
			return -1;
		break;
	}
	j->p++;
	return 0;
}

static int json_value(struct json *j)
{
	int ret;

	json_ws(j);
	if (j->p == j->end || ++j->depth > 64)
		return -1;
	switch (*j->p) {
	case '{':
		ret = json_items(j, '}', 1);
		break;
	case '[':
		ret = json_items(j, ']', 0);
		break;
	case '"':
		ret = json_string(j);
		break;
	case 't':
		ret = json_lit(j, "true");
		break;
	case 'f':
		ret = json_lit(j, "false");
		break;
	case 'n':
		ret = json_lit(j, "null");
		break;
	default:
		ret = json_number(j);
	}
	j->depth--;
	return ret;
}

const char *oc_json(const char *s, size_t n, size_t *at)
{
	struct json j = { s, s + n, 0 };

	if (json_value(&j)) {
		*at = (size_t)(j.p - s);
		return "invalid JSON";
	}
	json_ws(&j);
	*at = (size_t)(j.p - s);
	return j.p == j.end ? NULL : "trailing bytes after the JSON value";
}

/* ---- gzip and protobuf ---- */

uint8_t *oc_gunzip(const void *in, size_t n, size_t max, size_t *out_len)
{
	size_t cap = 1 << 16;
	uint8_t *raw = malloc(cap), *grown;
	z_stream z;
	int ret = Z_MEM_ERROR;

	memset(&z, 0, sizeof(z));
	if (!raw || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(raw);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	for (;;) {
		z.next_out = raw + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		ret = inflate(&z, Z_NO_FLUSH);
		if (ret != Z_OK || z.avail_out || cap * 2 > max)
			break;
		grown = realloc(raw, cap * 2);
		if (!grown)
			break;
		raw = grown;
		cap *= 2;
	}
	*out_len = z.total_out;
	if (ret != Z_STREAM_END || z.avail_in) {
		free(raw);
		raw = NULL;
	}
	inflateEnd(&z);
	return raw;
}

int pb_rd_varint(struct pb_rd *r, uint64_t *v)
{
	int shift;

	*v = 0;
	for (shift = 0; shift < 64; shift += 7) {
		if (r->p == r->end)
			return -1;
		*v |= (uint64_t)(*r->p & 0x7f) << shift;
		if (!(*r->p++ & 0x80))
			return 0;
	}
	return -1;
}

int pb_rd_field(struct pb_rd *r, uint32_t *field, int *wire, uint64_t *v, struct pb_rd *sub)
{
	uint64_t key, len;
	size_t k;

	sub->p = sub->end = NULL;
	*v = 0;
	if (r->p == r->end)
		return 0;
	if (pb_rd_varint(r, &key) || !(key >> 3))
		return -1;
	*field = (uint32_t)(key >> 3);
	*wire = (int)(key & 7);
	switch (*wire) {
	case 0:
		return pb_rd_varint(r, v) ? -1 : 1;
	case 1:
	case 5:
		k = *wire == 1 ? 8 : 4;
		if ((size_t)(r->end - r->p) < k)
			return -1;
		memcpy(v, r->p, k);
		r->p += k;
		return 1;
	case 2:
		if (pb_rd_varint(r, &len) || len > (uint64_t)(r->end - r->p))
			return -1;
		sub->p = r->p;
		sub->end = r->p + len;
		r->p += len;
		return 1;
	default:
		return -1;
	}
}
