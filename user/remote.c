// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <sys/uio.h>
#include "remote.h"

#define BATCH 64	/* well under IOV_MAX */

uint64_t remote_calls;

int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	remote_calls++;
	n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		errno = EFAULT;	/* a short read: the rest is not mapped */
	return -errno;
}

/*
 * process_vm_readv stops at the first remote iovec it cannot read, so a
 * batch tells us which prefix succeeded; the rest are retried one by one.
 */
static int batch(pid_t pid, struct remote_req *r, int n)
{
	struct iovec l[BATCH], rv[BATCH];
	ssize_t got;
	int i, done = 0;

	for (i = 0; i < n; i++) {
		l[i].iov_base = r[i].buf;
		l[i].iov_len = r[i].len;
		rv[i].iov_base = (void *)(uintptr_t)r[i].addr;
		rv[i].iov_len = r[i].len;
		r[i].ok = 0;
	}
	remote_calls++;
	got = process_vm_readv(pid, l, n, rv, n, 0);
	for (i = 0; i < n && got > 0; i++) {
		if ((size_t)got < r[i].len)
			break;
		got -= r[i].len;
		r[i].ok = 1;
		done++;
	}
	for (; i < n; i++) {
		r[i].ok = !remote_read(pid, r[i].addr, r[i].buf, r[i].len);
		done += r[i].ok;
	}
	return done;
}

int remote_readv(pid_t pid, struct remote_req *r, int n)
{
	int i, done = 0;

	for (i = 0; i < n; i += BATCH)
		done += batch(pid, r + i, n - i < BATCH ? n - i : BATCH);
	return done;
}
