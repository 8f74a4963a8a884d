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

/* events has unread records: keep writing there (see the order above). */
static __always_inline int spilling(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) != 0;
}

/* Unread bytes in both rings: what the consumer's wake-ups judge. */
static __always_inline __u64 rings_avail(void)
{
	return bpf_ringbuf_query(&warm, BPF_RB_AVAIL_DATA) +
	       bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
}

/* Room for a record of constant size: warm's, else the big ring's. */
#define rec_reserve(size) ({						\
	void *__r = spilling() ? NULL : bpf_ringbuf_reserve(&warm, size, 0);	\
	__r ? __r : bpf_ringbuf_reserve(&events, size, 0);		\
})

/* A record copied in: 0, or the big ring's error when both are full. */
static __always_inline long rec_output(void *data, __u64 size, __u64 flags)
{
	if (!spilling() && !bpf_ringbuf_output(&warm, data, size, flags))
		return 0;
	return bpf_ringbuf_output(&events, data, size, flags);
}

#endif /* TB_RINGS_BPF_H */
