// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel feature probes, with libbpf's probes where it has one and a tiny
 * program, map or command of our own where it has not. Each probe asks the
 * kernel itself (a backport counts, a version number does not).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/btf.h>
#include <bpf/libbpf.h>
#include "errors.h"
#include "kfeatures.h"

struct feature {
	const char *name;
	const char *since;	/* the first Linux with it */
	const char *also;	/* and what it needs besides, or NULL */
	bool (*probe)(const struct feature *f);
	int arg;		/* helper id, map type */
	const char *tp;		/* tracepoint, for tp_btf probes */
};

static bool helper(const struct feature *f)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, f->arg, NULL) == 1;
}

static bool map_type(const struct feature *f)
{
	return libbpf_probe_bpf_map_type(f->arg, NULL) == 1;
}

/* Bytes that follow a type's header in the type section; -1: unknown kind. */
static long btf_extra(const struct btf_type *t)
{
	long vlen = BTF_INFO_VLEN(t->info);

	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT: case BTF_KIND_VAR: case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT: case BTF_KIND_UNION: case BTF_KIND_DATASEC: case BTF_KIND_ENUM64:
		return vlen * 12;
	case BTF_KIND_ENUM: case BTF_KIND_FUNC_PROTO:
		return vlen * 8;
	case BTF_KIND_PTR: case BTF_KIND_FWD: case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST: case BTF_KIND_RESTRICT: case BTF_KIND_FUNC: case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	}
	return -1;
}

/* Id of the typedef `name` in the raw BTF of `n` bytes at `b`, or -1. */
static int btf_typedef_id(const char *b, size_t n, const char *name)
{
	const struct btf_header *h = (const void *)b;
	const char *types, *strs;
	size_t p = 0;
	long extra;
	int id = 1;

	if (n < sizeof(*h) || h->magic != BTF_MAGIC || h->hdr_len > n ||
	    (size_t)h->hdr_len + h->type_off + h->type_len > n ||
	    (size_t)h->hdr_len + h->str_off + h->str_len > n || !h->str_len)
		return -1;
	types = b + h->hdr_len + h->type_off;
	strs = b + h->hdr_len + h->str_off;
	if (strs[h->str_len - 1])
		return -1;
	while (p + sizeof(struct btf_type) <= h->type_len) {
		const struct btf_type *t = (const void *)(types + p);

		if (BTF_INFO_KIND(t->info) == BTF_KIND_TYPEDEF && t->name_off < h->str_len &&
		    !strcmp(strs + t->name_off, name))
			return id;
		extra = btf_extra(t);
		if (extra < 0)
			return -1;
		p += sizeof(*t) + (size_t)extra;
		id++;
	}
	return -1;
}

/* The whole file read, a page per read() on sysfs. */
static int typedef_id_read(int fd, const char *name)
{
	size_t cap = 64u << 20, n = 0;	/* vmlinux BTF: ~6 MiB */
	char *buf = malloc(cap);
	ssize_t r = 1;
	int id = -1;

	while (buf && n < cap && (r = read(fd, buf + n, cap - n)) > 0)
		n += (size_t)r;
	if (buf && !r)
		id = btf_typedef_id(buf, n, name);
	free(buf);
	return id;
}

/*
 * The kernel's type id of btf_trace_<tp>, from the raw file mapped (Linux
 * 6.16 and later can) or read: libbpf's parser reads it a page at a time and
 * validates each of its ~100k types (~100 ms here; the skeleton's load pays
 * that once more).
 */
static int tp_btf_id(const char *tp)
{
	char name[64];
	struct stat st;
	void *m;
	int fd, id;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	m = fstat(fd, &st) || st.st_size <= 0 ? MAP_FAILED :
		mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m != MAP_FAILED) {
		id = btf_typedef_id(m, (size_t)st.st_size, name);
		munmap(m, (size_t)st.st_size);
	} else {
		id = typedef_id_read(fd, name);
	}
	close(fd);
	return id;
}

/* A BTF-typed raw tracepoint program on f->tp loads: the kernel has BTF and tp_btf. */
static bool tp_btf(const struct feature *f)
{
	const struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int id = tp_btf_id(f->tp), fd;

	if (id <= 0)
		return false;
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = BPF_TRACE_RAW_TP,
		    .attach_btf_id = (__u32)id);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", ret0, 2, &o);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Batch lookup-and-delete on an empty hash map: ENOENT if the kernel has it. */
static bool batch_ops(const struct feature *f)
{
	__u32 key, val, count = 1, out;
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, NULL, sizeof(key), sizeof(val), 1, NULL);
	int ret;

	(void)f;
	if (fd < 0)
		return false;
	ret = bpf_map_lookup_and_delete_batch(fd, NULL, &out, &key, &val, &count, NULL);
	ret = !ret || errno == ENOENT;
	close(fd);
	return ret;
}

/* Turning the statistics on and at once off again (closing the fd). */
static bool run_stats(const struct feature *f)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	(void)f;
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* tp_btf attaches by the kernel's own type ids: an external BTF cannot stand in. */
#define BTF_BUILT " built with CONFIG_DEBUG_INFO_BTF=y, /sys/kernel/btf/vmlinux readable"

static const struct feature features[KF_NR] = {
	[KF_BPF_LOOP] = { "bpf_loop", "5.17", NULL, helper, BPF_FUNC_loop, NULL },
	[KF_RINGBUF] = { "BPF ring buffer", "5.8", NULL, map_type, BPF_MAP_TYPE_RINGBUF, NULL },
	[KF_TP_BTF] = { "tp_btf tracepoints", "5.5", BTF_BUILT, tp_btf, 0, "sched_process_exec" },
	[KF_BATCH_OPS] = { "batch map operations", "5.6", NULL, batch_ops, 0, NULL },
	[KF_MAP_IN_MAP] = { "map-in-map", "4.12", NULL, map_type, BPF_MAP_TYPE_ARRAY_OF_MAPS,
			    NULL },
	[KF_NS_PID] = { "bpf_get_ns_current_pid_tgid", "5.7", NULL, helper,
			BPF_FUNC_get_ns_current_pid_tgid, NULL },
	[KF_RUN_STATS] = { "BPF run-time statistics", "5.8", NULL, run_stats, 0, NULL },
	[KF_HRTIMER_TP] = { "tp_btf/hrtimer_expire_entry", "5.5", BTF_BUILT, tp_btf, 0,
			    "hrtimer_expire_entry" },
	[KF_TASK_PT_REGS] = { "bpf_task_pt_regs", "5.15", NULL, helper, BPF_FUNC_task_pt_regs,
			      NULL },
};

static bool probed[KF_NR], present[KF_NR];

bool kfeature_has(enum kfeature f)
{
	return probed[f] && present[f];
}

bool kfeature_probe(enum kfeature f)
{
	if (!probed[f]) {
		probed[f] = true;
		present[f] = features[f].probe(&features[f]);
	}
	return present[f];
}

/* "5.17" above "5.8": the newest of two versions (their leading numbers). */
static const char *newer(const char *a, const char *b)
{
	int amaj = 0, amin = 0, bmaj = 0, bmin = 0;

	if (!a)
		return b;
	sscanf(a, "%d.%d", &amaj, &amin);
	sscanf(b, "%d.%d", &bmaj, &bmin);
	return bmaj > amaj || (bmaj == amaj && bmin > amin) ? b : a;
}

int kfeatures_check(unsigned int need, int verbose)
{
	char missing[512] = "", dbg[512] = "";
	const char *newest = NULL, *also = "";
	struct utsname u;
	size_t n = 0, d = 0;
	int f;

	for (f = 0; f < KF_NR; f++) {
		if (!((need | KF_CHOICES) & KF_BIT(f)) && !verbose)
			continue;
		probed[f] = true;
		present[f] = features[f].probe(&features[f]);
		d += snprintf(dbg + d, d < sizeof(dbg) ? sizeof(dbg) - d : 0, "%s%s %s",
			      d ? ", " : "", features[f].name, present[f] ? "yes" : "no");
		if (present[f] || !(need & KF_BIT(f)))
			continue;
		n += snprintf(missing + n, n < sizeof(missing) ? sizeof(missing) - n : 0,
			      "%s%s missing (needs Linux %s%s)", n ? ", " : "", features[f].name,
			      features[f].since, features[f].also ? features[f].also : "");
		newest = newer(newest, features[f].since);
		if (features[f].also)
			also = features[f].also;
	}
	if (uname(&u))
		strcpy(u.release, "?");
	tb_debug("kernel %s: %s", u.release, dbg);
	if (!newest)
		return 0;
	tb_error("kernel %s: %s (run on Linux %s or later%s)", u.release, missing, newest, also);
	return -1;
}
