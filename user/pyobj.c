// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Python objects read from another process: see pyobj.h. */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pyobj.h"
#include "remote.h"
#include "util.h"

#define LOOKUP_MAX	8192	/* entries of a dict we search (sys.modules: hundreds) */
#define KEY_MAX		64	/* longest key name we look up */
#define STR_MAX		4096	/* characters of a str we ever read */
#define TYPE_HDR_MAX	1024	/* bytes of a type object we read */
#define REPR_STR	100	/* characters of a str shown in a repr */

/* The entries of a dict's keys object, and its values if it is split. */
struct dview {
	uint64_t entries;	/* address of entry 0 */
	uint64_t values;	/* split table: address of values[0]; else 0 */
	int64_t n;		/* entries used (live or deleted) */
	int general;		/* {hash, key, value} entries; else {key, value} */
};

static const struct pyobj_layout *lay(const struct target *t)
{
	return &t->layout.obj;
}

int pyobj_usable(const struct target *t)
{
	return t->layout.obj.managed != PYOBJ_NONE;
}

static int rd64(const struct target *t, uint64_t addr, uint64_t *v)
{
	return remote_read(t->pid, addr, v, sizeof(*v));
}

int pyobj_str(const struct target *t, uint64_t addr, char *out, size_t outsz)
{
	const struct pystr_layout *sl = &t->layout.str;
	size_t hl = sl->compact_size > sl->ascii_size ? sl->compact_size : sl->ascii_size;
	size_t off, nbytes;
	uint8_t hdr[128], *data;
	int kind;

	out[0] = 0;
	if (!addr || hl > sizeof(hdr) || remote_read(t->pid, addr, hdr, hl) ||
	    pystr_locate(sl, hdr, hl, STR_MAX, &off, &nbytes, &kind, NULL))
		return -EINVAL;
	/* No more characters than fit: each is at least one UTF-8 byte. */
	if (nbytes > outsz * (size_t)kind)
		nbytes = outsz * (size_t)kind;
	data = malloc(nbytes + 1);
	if (!data || (nbytes && remote_read(t->pid, addr + off, data, nbytes))) {
		free(data);
		return data ? -EFAULT : -ENOMEM;
	}
	pystr_to_utf8(data, nbytes, kind, out, outsz);
	free(data);
	return 0;
}

/* Sign and digit count of an int, from its size word. */
static int long_shape(const struct pyobj_layout *o, uint64_t w, int *neg, uint64_t *ndig)
{
	if (o->long_tagged) {
		*neg = (w & 3) == 2;
		*ndig = (w & 3) == 1 ? 0 : w >> 3;
	} else {
		*neg = (int64_t)w < 0;
		*ndig = *neg ? -(uint64_t)w : w;
	}
	return *ndig > 3 ? -ERANGE : 0;	/* 90 bits and more: not an int64 */
}

int pyobj_long_from(const struct target *t, const uint8_t *obj, size_t have, int64_t *v)
{
	const struct pyobj_layout *o = lay(t);
	unsigned __int128 acc = 0;
	uint64_t ndig, i;
	int neg;

	if (!pyobj_usable(t) || have < (size_t)o->long_size + 8 ||
	    long_shape(o, load_u64(obj + o->long_size), &neg, &ndig) ||
	    have < o->long_digits + ndig * 4)
		return -EINVAL;
	for (i = ndig; i-- > 0;)
		acc = acc << 30 | (load_u32(obj + o->long_digits + i * 4) & 0x3fffffff);
	if (acc > (unsigned __int128)INT64_MAX + neg)
		return -ERANGE;
	*v = neg ? (int64_t)(0 - (uint64_t)acc) : (int64_t)acc;
	return 0;
}

int pyobj_long(const struct target *t, uint64_t addr, int64_t *v)
{
	const struct pyobj_layout *o = lay(t);
	uint8_t buf[64];
	uint64_t ndig;
	int neg;

	if ((size_t)o->long_digits + 12 > sizeof(buf) || remote_read(t->pid, addr, buf, o->long_digits))
		return -EINVAL;
	if (long_shape(o, load_u64(buf + o->long_size), &neg, &ndig) ||
	    (ndig && remote_read(t->pid, addr + o->long_digits, buf + o->long_digits, ndig * 4)))
		return -EINVAL;
	return pyobj_long_from(t, buf, o->long_digits + ndig * 4, v);
}

/*
 * 3.8-3.10 keys (PYOBJ_DICTOFFSET): dk_size index slots of the smallest
 * width that holds dk_size, then {hash, key, value} entries; a split
 * table's values are a plain array.
 */
static int keys_view_sized(uint64_t keys, uint64_t values, const uint8_t *h,
			   const struct pyobj_layout *o, struct dview *v)
{
	uint64_t size = load_u64(h + o->dk_size), width;
	int64_t n = (int64_t)load_u64(h + o->dk_nentries);

	if (!size || size > (1ULL << 32) || (size & (size - 1)) || n < 0 || n > LOOKUP_MAX * 8)
		return -EINVAL;
	width = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
	v->entries = keys + o->dk_indices + size * width;
	v->values = values ? values + o->values_off : 0;
	v->n = n;
	v->general = 1;
	return 0;
}

static int keys_view(const struct target *t, uint64_t keys, uint64_t values, struct dview *v)
{
	const struct pyobj_layout *o = lay(t);
	uint8_t h[64];
	int64_t n;
	uint8_t log2_ib, kind;

	if (!keys || o->dk_indices > sizeof(h) || remote_read(t->pid, keys, h, o->dk_indices))
		return -EINVAL;
	if (o->managed == PYOBJ_DICTOFFSET)
		return keys_view_sized(keys, values, h, o, v);
	log2_ib = h[o->dk_log2_index_bytes];
	kind = h[o->dk_kind];
	n = (int64_t)load_u64(h + o->dk_nentries);
	if (log2_ib > 32 || n < 0 || n > LOOKUP_MAX * 8 || kind > 2)
		return -EINVAL;
	v->entries = keys + o->dk_indices + (1ULL << log2_ib);
	v->values = values ? values + o->values_off : 0;
	v->n = n;
	v->general = kind == 0;
	if (values && o->values_capacity >= 0) {
		uint8_t cap;

		/* shared keys may outgrow this object's values array */
		if (remote_read(t->pid, values + o->values_capacity, &cap, 1))
			return -EFAULT;
		if (v->n > cap)
			v->n = cap;
	}
	return 0;
}

static int dict_view(const struct target *t, uint64_t dict, struct dview *v)
{
	const struct pyobj_layout *o = lay(t);
	uint64_t keys, values;

	if (!dict || rd64(t, dict + o->dict_keys, &keys) || rd64(t, dict + o->dict_values, &values))
		return -EINVAL;
	return keys_view(t, keys, values, v);
}

/* Up to max live entries; returns how many, or a negative errno. */
static int view_items(const struct target *t, const struct dview *v, uint64_t *keys,
		      uint64_t *vals, int64_t *hashes, int max)
{
	size_t words = v->general ? 3 : 2, i;
	size_t n = (size_t)(v->n < max ? v->n : max);
	uint64_t *e = malloc(n * words * 8 + 8), *vv = v->values ? malloc(n * 8 + 8) : NULL;
	int got = -ENOMEM;

	if (!e || (v->values && !vv))
		goto out;
	got = -EFAULT;
	if (remote_read(t->pid, v->entries, e, n * words * 8) ||
	    (vv && remote_read(t->pid, v->values, vv, n * 8)))
		goto out;
	for (got = 0, i = 0; i < n; i++) {
		const uint64_t *w = e + i * words;
		uint64_t key = w[words - 2], val = vv ? vv[i] : w[words - 1];

		if (!key || !val)
			continue;	/* deleted, or not set in this object */
		keys[got] = key;
		vals[got] = val;
		if (hashes)
			hashes[got] = v->general ? (int64_t)w[0] : 0;
		got++;
	}
out:
	free(e);
	free(vv);
	return got;
}

/* vals[j] = the value of names[j], from the entries of one view. */
static int view_find(const struct target *t, const struct dview *v, const char *const *names,
		     uint64_t *vals, int nnames)
{
	const struct pystr_layout *sl = &t->layout.str;
	size_t stride = sl->ascii_size + KEY_MAX, off, nb;
	uint64_t *keys = malloc(LOOKUP_MAX * 8), *vs = malloc(LOOKUP_MAX * 8);
	struct remote_req *rq = NULL;
	uint8_t *bufs = NULL;
	int n, i, j, ascii, kind, found = 0;

	n = keys && vs ? view_items(t, v, keys, vs, NULL, LOOKUP_MAX) : -ENOMEM;
	if (n > 0) {
		rq = calloc(n, sizeof(*rq));
		bufs = calloc(n, stride);
	}
	if (n <= 0 || !rq || !bufs)
		goto out;
	for (i = 0; i < n; i++)
		rq[i] = (struct remote_req){ keys[i], bufs + i * stride, stride, 0 };
	remote_readv(t->pid, rq, n);
	for (i = 0; i < n; i++) {
		const uint8_t *k = bufs + i * stride;

		if (!rq[i].ok ||
		    pystr_locate(sl, k, stride, KEY_MAX, &off, &nb, &kind, &ascii) || !ascii)
			continue;
		for (j = 0; j < nnames; j++) {
			if (!vals[j] && strlen(names[j]) == nb && !memcmp(k + off, names[j], nb)) {
				vals[j] = vs[i];
				found++;
			}
		}
	}
out:
	free(keys);
	free(vs);
	free(rq);
	free(bufs);
	return n < 0 ? n : found;
}

int pyobj_dict_get(const struct target *t, uint64_t dict, const char *key, uint64_t *val)
{
	struct dview v;

	*val = 0;
	if (!pyobj_usable(t) || dict_view(t, dict, &v))
		return -EINVAL;
	return view_find(t, &v, &key, val, 1) == 1 ? 0 : -ENOENT;
}

int pyobj_dict_items(const struct target *t, uint64_t dict, uint64_t *keys, uint64_t *vals,
		     int64_t *hashes, int max)
{
	struct dview v;

	if (!pyobj_usable(t) || dict_view(t, dict, &v))
		return -EINVAL;
	return view_items(t, &v, keys, vals, hashes, max);
}

/* Where an instance keeps its attributes: a dict, or values + shared keys. */
static int attr_view(const struct target *t, uint64_t obj, struct dview *v)
{
	const struct pyobj_layout *o = lay(t);
	uint64_t pre[6], flags = 0, basic = 0, cached = 0, dict = 0, values = 0;
	uint8_t ty[TYPE_HDR_MAX];
	uint16_t need = (o->ht_cached_keys > o->tp_dictoffset ? o->ht_cached_keys : o->tp_dictoffset) + 8;
	uint8_t valid = 1;
	int64_t off;

	/* the two words before the GC header, the object header */
	if (need > sizeof(ty) || remote_read(t->pid, obj - 32, pre, sizeof(pre)) ||
	    remote_read(t->pid, pre[5], ty, need))
		return -EINVAL;
	if (o->managed == PYOBJ_DICTOFFSET) {
		/* 3.8-3.10: the __dict__ pointer at tp_dictoffset (< 0: from the
		 * end of a variable-size object, not followed) */
		off = (int64_t)load_u64(ty + o->tp_dictoffset);
		if (off <= 0 || off > 4096 || rd64(t, obj + (uint64_t)off, &dict) || !dict)
			return -EINVAL;
		return dict_view(t, dict, v);
	}
	flags = load_u64(ty + o->tp_flags);
	basic = load_u64(ty + o->tp_basicsize);
	cached = load_u64(ty + o->ht_cached_keys);
	if (!(flags & o->tpflag_managed))
		return -EINVAL;
	if (o->managed == PYOBJ_MANAGED_311) {
		values = pre[0];
		dict = pre[1];
	} else if (o->managed == PYOBJ_MANAGED_312) {
		if (pre[1] & 1)
			values = pre[1] + 1;	/* tagged values pointer */
		else
			dict = pre[1];
	} else {
		dict = pre[1];
		if (!dict && (flags & o->tpflag_inline) && basic < 4096)
			values = obj + basic;
		if (values && o->values_valid >= 0 &&
		    (remote_read(t->pid, values + o->values_valid, &valid, 1) || !valid))
			return -EINVAL;
	}
	if (dict)
		return dict_view(t, dict, v);
	return values && cached ? keys_view(t, cached, values, v) : -1;
}

int pyobj_attrs(const struct target *t, uint64_t obj, const char *const *names,
		uint64_t *vals, int n)
{
	struct dview v;

	memset(vals, 0, n * sizeof(*vals));
	if (!pyobj_usable(t) || !obj || attr_view(t, obj, &v))
		return -EINVAL;
	return view_find(t, &v, names, vals, n);
}

int pyobj_type_name(const struct target *t, uint64_t obj, char *out, size_t outsz)
{
	uint64_t type;

	out[0] = 0;
	/* ob_type: the code object's is where every object's is (8, or 24 in
	 * a free-threaded build's longer header) */
	if (!pyobj_usable(t) || rd64(t, obj + t->layout.walk.off.co_type, &type))
		return -EINVAL;
	return pyobj_type_name_at(t, type, out, outsz);
}

int pyobj_type_name_at(const struct target *t, uint64_t type, char *out, size_t outsz)
{
	uint64_t name;
	size_t n = outsz - 1 < 63 ? outsz - 1 : 63, i;

	out[0] = 0;
	if (!pyobj_usable(t) || rd64(t, type + lay(t)->tp_name, &name))
		return -EINVAL;
	/* a C string near the end of a page: read less */
	if (remote_read(t->pid, name, out, n) &&
	    remote_read(t->pid, name, out, n = n < 8 ? n : 8))
		return -EFAULT;
	out[n] = 0;
	/* printable ASCII only: the name is printed and may be anything */
	for (i = 0; out[i]; i++)
		if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] >= 0x7f)
			out[i] = '?';
	return out[0] ? 0 : -1;
}

/* Python's repr of a str: quotes, escapes, cut after REPR_STR characters. */
static void repr_text(const char *s, size_t n, const char *prefix, char *out, size_t outsz)
{
	char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
	size_t w = 0, i, shown = 0;

	w += snprintf(out, outsz, "%s%c", prefix, q);
	if (w + 1 >= outsz)
		return;		/* no room past the opening quote (snprintf cut it) */
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		/* A str is cut only before a whole UTF-8 character (the 16 bytes
		 * of headroom hold its other bytes); a bytes object's every byte
		 * is a character of its own, printed as up to 4 ("\x80"). */
		bool whole = *prefix || (c & 0xc0) != 0x80;

		if (whole && (shown++ >= REPR_STR || w + 16 >= outsz)) {
			w += snprintf(out + w, outsz - w, "...");
			break;
		}
		if (c == (unsigned char)q || c == '\\')
			w += snprintf(out + w, outsz - w, "\\%c", c);
		else if (c == '\n')
			w += snprintf(out + w, outsz - w, "\\n");
		else if (c == '\t')
			w += snprintf(out + w, outsz - w, "\\t");
		else if (c == '\r')
			w += snprintf(out + w, outsz - w, "\\r");
		else if (c < 0x20 || c == 0x7f || (c >= 0x80 && *prefix))
			w += snprintf(out + w, outsz - w, "\\x%02x", c);
		else
			out[w++] = (char)c;
	}
	if (w + 2 <= outsz) {
		out[w++] = q;
		out[w] = 0;
	}
}

static void repr_bytes(const struct target *t, uint64_t obj, char *out, size_t outsz)
{
	const struct pystr_layout *sl = &t->layout.str;
	uint8_t hdr[64], data[REPR_STR + 1];
	size_t off, n;

	if (sl->bytes_data > sizeof(hdr) || remote_read(t->pid, obj, hdr, sl->bytes_data) ||
	    pybytes_locate(sl, hdr, sl->bytes_data, SIZE_MAX / 2, &off, &n)) {
		snprintf(out, outsz, "<bytes at 0x%" PRIx64 ">", obj);
		return;
	}
	if (n > REPR_STR + 1)
		n = REPR_STR + 1;	/* one more than shown: repr_text cuts with "..." */
	if (n && remote_read(t->pid, obj + off, data, n))
		n = 0;
	repr_text((const char *)data, n, "b", out, outsz);
}

static void repr_float(const struct target *t, uint64_t obj, char *out, size_t outsz)
{
	double d;

	if (remote_read(t->pid, obj + lay(t)->float_val, &d, sizeof(d)))
		snprintf(out, outsz, "<float at 0x%" PRIx64 ">", obj);
	else if (isnan(d))
		snprintf(out, outsz, "nan");
	else if (isinf(d))
		snprintf(out, outsz, d < 0 ? "-inf" : "inf");
	else {
		/* the shortest of %.15g..%.17g that reads back the same, as repr() */
		int prec;

		for (prec = 15; prec < 17; prec++) {
			snprintf(out, outsz, "%.*g", prec, d);
			if (strtod(out, NULL) == d)
				break;
		}
		snprintf(out, outsz, "%.*g", prec, d);
		if (!strpbrk(out, ".e") && strlen(out) + 3 <= outsz)
			strcat(out, ".0");
	}
}

/* The length of a container; -EINVAL if obj is not one we know. */
static int64_t container_len(const struct target *t, uint64_t obj, const char *type)
{
	const struct pyobj_layout *o = lay(t);
	uint16_t off;
	int64_t n;

	if (!strcmp(type, "list") || !strcmp(type, "tuple"))
		off = o->var_size;
	else if (!strcmp(type, "dict"))
		off = o->dict_used;
	else if (!strcmp(type, "set") || !strcmp(type, "frozenset"))
		off = o->set_used;
	else
		return -EINVAL;
	if (remote_read(t->pid, obj + off, &n, sizeof(n)) || n < 0)
		return -EINVAL;
	return n;
}

void pyobj_repr(const struct target *t, uint64_t obj, char *out, size_t outsz)
{
	char type[64], s[REPR_STR * 4 + 8];
	int64_t v;

	if (pyobj_type_name(t, obj, type, sizeof(type))) {
		snprintf(out, outsz, "<unreadable at 0x%" PRIx64 ">", obj);
		return;
	}
	if (!strcmp(type, "NoneType")) {
		snprintf(out, outsz, "None");
	} else if (!strcmp(type, "bool") && !pyobj_long(t, obj, &v)) {
		snprintf(out, outsz, v ? "True" : "False");
	} else if (!strcmp(type, "int") && !pyobj_long(t, obj, &v)) {
		snprintf(out, outsz, "%" PRId64, v);
	} else if (!strcmp(type, "float")) {
		repr_float(t, obj, out, outsz);
	} else if (!strcmp(type, "str") && !pyobj_str(t, obj, s, sizeof(s))) {
		repr_text(s, strlen(s), "", out, outsz);
	} else if (!strcmp(type, "bytes")) {
		repr_bytes(t, obj, out, outsz);
	} else if ((v = container_len(t, obj, type)) >= 0) {
		snprintf(out, outsz, "<%s, len %" PRId64 ">", type, v);
	} else {
		snprintf(out, outsz, "<%s at 0x%" PRIx64 ">", type, obj);
	}
}
