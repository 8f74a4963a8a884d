/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A measuring build of the BPF program (-DTB_LAT_PROBE; never the shipped
 * one): every sample of a profiled process is timed into a histogram, and
 * with -DTB_LAT_PAGES too, the distinct user pages its reads touch are
 * counted. A mean of samples
 * (the kernel's run-time statistics, --stats' self-timing) is moved by the
 * few samples the host delays by milliseconds; a histogram's median is
 * not. scripts/latprobe.py builds this variant and reads the map.
 */
#ifndef TB_LATPROBE_BPF_H
#define TB_LATPROBE_BPF_H

#ifdef TB_LAT_PROBE

#define LAT_BUCKETS	128
#define LAT_STEP_NS	500	/* bucket width: 0 to 64 us, the last one open */
#define LAT_PAGES	128	/* distinct pages remembered per sample */
#define LAT_TAIL_NS	100	/* tail[] bucket width: 0 to 12.8 us */
#define LAT_FINE_NS	40	/* fine[] bucket width: 0 to 5.12 us */
#define LAT_PHASES	8	/* lat_phase() marks: ph[] in LAT_TAIL_NS buckets */

struct lat_probe {
	__u64 hist[LAT_BUCKETS];	/* full walks by run time */
	__u64 walks;			/* samples counted in hist */
	__u64 upages;			/* distinct user pages read, over those */
	__u64 ureads;			/* user reads, over those */
	__u64 t0;			/* this sample's start */
	__u32 n;			/* pages in page[] for this sample */
	__u32 pad;
	__u64 page[LAT_PAGES];
	__u64 t1;			/* this sample's tail started (lat_mark) */
	__u64 tail[LAT_BUCKETS];	/* full walks by the time from lat_mark */
	__u64 fine[LAT_BUCKETS];	/* full walks by run time, finer (--native's extra) */
	__u64 unative;			/* native frames taken, over the full walks */
	__u64 nframes;			/* this sample's */
	__u64 pt[LAT_PHASES];		/* this sample's lat_phase() times */
	__u64 ph[LAT_PHASES][LAT_BUCKETS];	/* full walks by time to each phase */
	__u64 wn, wb;			/* this sample's frame-stack window reads, bytes */
	__u64 wreads, wbytes;		/* ... over the full walks */
	__u64 touch[LAT_BUCKETS];	/* -DTB_LAT_PRETOUCH: full walks by touch time */
	__u64 tt;			/* this sample's touches done */
	__u32 prevn, prevpid;		/* the last full walk's pages, process */
	__u64 prev[LAT_PAGES];
	__u64 rest[LAT_BUCKETS];	/* full walks by time after the touches */
	__u8 pbuf[4096];		/* TB_LAT_PRETOUCH=2: whole pages read here */
	__u64 rd[2], rdn[2];		/* TB_LAT_READS: this sample's read time, reads (frames, other) */
	__u64 rdh[2][LAT_BUCKETS];	/* full walks by that time */
	__u64 rdsum[2], rdcnt[2];	/* over the full walks */
	__u64 skip;			/* TB_LAT_TWICE: this walk is not counted */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lat_probe);
} lat_probe SEC(".maps");

static __always_inline struct lat_probe *lat_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&lat_probe, &zero);
}

/*
 * -DTB_LAT_PRETOUCH (with -DTB_LAT_PAGES): before the walk, read one byte
 * of each user page the last full walk of the same process read, so the
 * walk finds their TLB entries (and one line each) loaded: what is left of
 * its time is not the first touch of a page.
 */
static __always_inline void lat_pretouch(struct lat_probe *p, __u32 pid)
{
#ifdef TB_LAT_PRETOUCH
	__u32 n = p->prevn;
	__u8 x __attribute__((unused));

	if (p->prevpid != pid)
		return;
	for (__u32 i = 0; i < LAT_PAGES; i++) {
		if (i >= n)
			break;
#if TB_LAT_PRETOUCH == 2
		bpf_probe_read_user(p->pbuf, 4096, (void *)(p->prev[i] << 12));
#else
		bpf_probe_read_user(&x, 1, (void *)(p->prev[i] << 12));
#endif
	}
	p->tt = bpf_ktime_get_ns();
#endif
}

/* The touches before the walk end now (-DTB_LAT_PRETOUCH_K's are later). */
static __always_inline void lat_touched(void)
{
	struct lat_probe *p = lat_get();

	if (p)
		p->tt = bpf_ktime_get_ns();
}

static __always_inline void lat_begin(__u32 pid)
{
	struct lat_probe *p = lat_get();

	if (!p)
		return;
	p->n = 0;
	p->t1 = 0;
	p->nframes = 0;
	p->wn = 0;
	p->wb = 0;
	p->rd[0] = p->rd[1] = p->rdn[0] = p->rdn[1] = 0;
	for (int i = 0; i < LAT_PHASES; i++)
		p->pt[i] = 0;
	p->t0 = p->tt = bpf_ktime_get_ns();
	lat_pretouch(p, pid);
}

/* --native: the sample's native stack has n frames. */
static __always_inline void lat_native(long n)
{
	struct lat_probe *p = lat_get();

	if (p && n > 0)
		p->nframes = n;
}

/* The sample's tail starts: sample_done's new-stack and count steps. */
static __always_inline void lat_mark(void)
{
	struct lat_probe *p = lat_get();

	if (p)
		p->t1 = bpf_ktime_get_ns();
}

/* The sample reached phase k (a constant): ph[k] gets the time since t0. */
static __always_inline void lat_phase(int k)
{
	struct lat_probe *p = lat_get();

	if (p && k >= 0 && k < LAT_PHASES)
		p->pt[k] = bpf_ktime_get_ns();
}

/* A frame-stack window of size bytes is read. */
static __always_inline void lat_window(__u64 size)
{
	struct lat_probe *p = lat_get();

	if (p) {
		p->wn++;
		p->wb += size;
	}
}

/* Remember the page of addr if this sample has not touched it yet. */
static __always_inline void lat_page1(struct lat_probe *p, __u64 pg)
{
	__u32 i, n = p->n;

	for (i = 0; i < LAT_PAGES; i++) {
		if (i >= n)
			break;
		if (p->page[i] == pg)
			return;
	}
	p->n = n + 1;
	if (n >= LAT_PAGES)
		return;
	asm volatile("" : "+r"(n));	/* keep the mask clang would drop */
	p->page[n & (LAT_PAGES - 1)] = pg;
}

/*
 * A user read of size bytes at addr. Counting pages costs a scan per read:
 * a build of its own (-DTB_LAT_PAGES), whose times are not the walk's.
 */
static __always_inline void lat_read(__u64 addr, __u64 size)
{
#ifdef TB_LAT_PAGES
	struct lat_probe *p = lat_get();

	if (!p || !size)
		return;
	p->ureads++;
	lat_page1(p, addr >> 12);
	if ((addr + size - 1) >> 12 != addr >> 12)
		lat_page1(p, (addr + size - 1) >> 12);
#endif
}

/*
 * -DTB_LAT_PRETOUCH_K: before the walk, read each page (=2: each cache
 * line) of this CPU's scratch area, size bytes at s.
 */
static __always_inline void lat_pretouch_k(void *s, __u64 size)
{
#ifdef TB_LAT_PRETOUCH_K
#if TB_LAT_PRETOUCH_K == 2
	const __u32 step = 64;
#else
	const __u32 step = 4096;
#endif
	for (__u32 i = 0; i < size / step; i++)
		asm volatile("" :: "r"(*(volatile __u8 *)(s + i * step)));
	lat_touched();
#endif
}

/*
 * -DTB_LAT_TWICE: each event samples twice, and only the second is timed:
 * the same stack with everything warm (data, TLB, instructions, branch
 * history), a known stack by then. The drivers say LAT_TWICE(sample).
 */
#ifdef TB_LAT_TWICE
#define LAT_TWICE(call) do { lat_skip(1); call; lat_skip(0); } while (0)
#else
#define LAT_TWICE(call) do { } while (0)
#endif

/* TB_LAT_TWICE_NEW: the warming walk pushes no stack (the timed one does). */
static __always_inline int lat_skipping(void)
{
#ifdef TB_LAT_TWICE_NEW
	struct lat_probe *p = lat_get();

	return p && p->skip;
#else
	return 0;
#endif
}

/* TB_LAT_TWICE: the walk that warms is not counted. */
static __always_inline void lat_skip(int on)
{
	struct lat_probe *p = lat_get();

	if (p)
		p->skip = on;
}

/* TB_LAT_READS: a read starts (its clock) / read k (0 frames, 1 other) ends. */
static __always_inline __u64 lat_rd0(void)
{
#ifdef TB_LAT_READS
	return bpf_ktime_get_ns();
#else
	return 0;
#endif
}

static __always_inline void lat_rd1(__u64 t, int k)
{
#ifdef TB_LAT_READS
	struct lat_probe *p = lat_get();

	if (p && k >= 0 && k < 2) {
		p->rd[k] += bpf_ktime_get_ns() - t;
		p->rdn[k]++;
	}
#endif
}

/* One more in the bucket of ns (buckets of step ns, the last one open). */
static __always_inline void lat_count(__u64 *h, __u64 ns, __u64 step)
{
	__u64 b = ns / step;

	if (b >= LAT_BUCKETS)
		b = LAT_BUCKETS - 1;
	asm volatile("" : "+r"(b));	/* keep the mask clang would drop */
	h[b & (LAT_BUCKETS - 1)]++;
}

/* A sample ends; ok: it was a full walk. */
static __always_inline void lat_end(int ok, __u32 pid)
{
	struct lat_probe *p = lat_get();
	__u64 now;

	if (!p || !ok || p->skip)
		return;
	now = bpf_ktime_get_ns();
	lat_count(p->hist, now - p->t0, LAT_STEP_NS);
	lat_count(p->tail, p->t1 ? now - p->t1 : ~0ULL, LAT_TAIL_NS);
	lat_count(p->fine, now - p->t0, LAT_FINE_NS);
	for (int k = 0; k < LAT_PHASES; k++)
		if (p->pt[k])
			lat_count(p->ph[k], p->pt[k] - p->t0, LAT_TAIL_NS);
	lat_count(p->touch, p->tt - p->t0, LAT_TAIL_NS);
	lat_count(p->rest, now - p->tt, LAT_TAIL_NS);
#ifdef TB_LAT_PRETOUCH
	p->prevn = p->n < LAT_PAGES ? p->n : LAT_PAGES;
	for (int i = 0; i < LAT_PAGES; i++)
		p->prev[i] = p->page[i];
	p->prevpid = pid;
#endif
	for (int k = 0; k < 2; k++) {
		lat_count(p->rdh[k], p->rd[k], LAT_TAIL_NS);
		p->rdsum[k] += p->rd[k];
		p->rdcnt[k] += p->rdn[k];
	}
	p->wreads += p->wn;
	p->wbytes += p->wb;
	p->walks++;
	p->upages += p->n;
	p->unative += p->nframes;
}

#else
static __always_inline void lat_begin(__u32 pid) {}
static __always_inline void lat_mark(void) {}
static __always_inline void lat_phase(int k) {}
static __always_inline void lat_window(__u64 size) {}
static __always_inline void lat_native(long n) {}
static __always_inline void lat_read(__u64 addr, __u64 size) {}
static __always_inline void lat_end(int ok, __u32 pid) {}
static __always_inline __u64 lat_rd0(void) { return 0; }
static __always_inline void lat_pretouch_k(void *s, __u64 size) {}
static __always_inline int lat_skipping(void) { return 0; }
#define LAT_TWICE(call) do { } while (0)
static __always_inline void lat_rd1(__u64 t, int k) {}
#endif

#endif /* TB_LATPROBE_BPF_H */
