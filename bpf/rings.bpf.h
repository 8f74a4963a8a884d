/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where records go: two ring buffers, read by one consumer.
 *
 * `warm` is small (userspace sizes it, 256 KiB by default) so that its
 * pages stay in the cache and TLB between samples: with only the big ring,
 * a new stack's ~700-byte record landed on a cold page every few records
 * (a 4 MiB+ cycle), and that cost a Django site's sample ~4 us. `events`
 * is the big ring, sized for ~2 s of samples from every CPU: it takes the
 * records only while `warm` is full (a stalled consumer, a burst), so a
 * stall loses no more than with the big ring alone.
 *
 * Order. Each ring is read in the order it was written. Across the two:
 * a record goes to `events` while `warm` is full OR `events` still holds
 * unread records, and the consumer reads `warm` before `events` in every
 * pass (user/sampler.c adds them in that order). So while `events` holds
 * records nothing is written to `warm`: what `warm` holds is older than
 * anything in `events`, and is read first; once `events` is empty,
 * records go to `warm` again, newer than everything read. The one way to
 * reorder is for `warm` to fill whole (256 KiB) in the instant between
 * the consumer emptying `events` and looking at it again. Within one CPU
 * and between CPUs it is then as ordered as one ring was, which is what
 * the consumer relies on: an async tasks record before its stack record,
 * a process's stacks and samples before its exit or exec record (ingest
 * keeps a sample whose stack is not read yet as pending in any case), and
 * session_sync()'s "counts, then both rings" still finds every counted
 * sample's stack (pushed before its count, in one ring or the other).
 */
#ifndef TB_RINGS_BPF_H
#define TB_RINGS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);	/* set by userspace */
} warm SEC(".maps");

/*
 * spill_gen moves after each record written to the big ring; spill_seen is
 * the spill_gen a writer last saw with the big ring empty. Equal: nothing
 * spilled since, and a record goes to the warm ring without touching the
 * big ring's pages at all (its two position pages would be two more cold
 * pages a sample). spill_gen is read before the big ring is found empty,
 * and moved after a record is written there, so a record spilled during
 * the check leaves spill_gen ahead of the spill_seen stored: it is looked
 * at again. (No compare-and-swap: 5.10 has only the atomic add.)
 */
volatile __u64 spill_gen;
volatile __u64 spill_seen;

/* events has unread records: keep writing there (see the order above). */
static __always_inline int spilling(void)
{
	__u64 gen = spill_gen;

	if (gen == spill_seen)
		return 0;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA))
		return 1;
	spill_seen = gen;
	return 0;
}

/* Unread bytes in the warm ring, or a lot while spilling: what the
 * consumer's wake-ups judge. */
static __always_inline __u64 rings_avail(void)
{
	return spilling() ? ~0ULL : bpf_ringbuf_query(&warm, BPF_RB_AVAIL_DATA);
}

/* A record the warm ring did not take: -v says how many. */
static __always_inline void note_spill(void)
{
	__u32 zero = 0;
	__u64 *cnt = bpf_map_lookup_elem(&counters, &zero);

	__sync_fetch_and_add(&spill_gen, 1);
	if (cnt)
		cnt[TB_C_SPILLED]++;
}

/* Room for a record (size: a constant): warm's, else the big ring's. */
static __always_inline void *rec_reserve(__u64 size)
{
	void *r = spilling() ? NULL : bpf_ringbuf_reserve(&warm, size, 0);

	if (r)
		return r;
	r = bpf_ringbuf_reserve(&events, size, 0);
	if (r)
		note_spill();
	return r;
}

/*
 * size bounded by max right at the call: a size kept on the stack across
 * the helper calls before it (5.10's verifier) comes back unbounded, and
 * the barrier keeps clang from dropping a check it knows to hold.
 */
static __always_inline __u64 rec_size(__u64 size, __u64 max)
{
	asm volatile("" : "+r"(size));
	return size > max ? max : size;
}

/* A record of at most max bytes copied in: 0, or the big ring's error
 * when both are full. */
static __always_inline long rec_output(void *data, __u64 size, __u64 max, __u64 flags)
{
	long ret;

	if (!spilling() && !bpf_ringbuf_output(&warm, data, rec_size(size, max), flags))
		return 0;
	ret = bpf_ringbuf_output(&events, data, rec_size(size, max), flags);
	if (!ret)
		note_spill();
	return ret;
}

#endif /* TB_RINGS_BPF_H */
