/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reading another process's memory with process_vm_readv: one syscall for
 * many scattered pieces, falling back to piece-by-piece only when a batch
 * hits an unmapped page.
 */
#ifndef TB_REMOTE_H
#define TB_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct remote_req {
	uint64_t addr;
	void *buf;
	size_t len;
	int ok;		/* out: 1 if all len bytes were read */
};

/* 0 if all len bytes were read, else a negative errno (-EFAULT: a short read), errno set too. */
int remote_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* Reads every request it can; returns how many succeeded. */
int remote_readv(pid_t pid, struct remote_req *r, int n);

/* Syscalls made, for the closing statistics. */
extern uint64_t remote_calls;

#endif
