// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test tool for user/cfi*.c, not part of the profiler:
 *   cfidump rows FILE...  each file's unwind rows (checked against readelf)
 *   cfidump stats FILE... rows, bytes and parse time per file
 *   cfidump unwind PID    stops PID (ptrace), unwinds its main thread with
 *                         the reference unwinder, one return address a line
 *                         (checked against gdb's bt), then the stop reason
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cfi.h"

#define MAX_MODS 512

static const char *const kinds[] = { "gap", "rsp", "rbp", "plt", "signal", "end", "unsupported" };

static int dump_rows(const char *path)
{
	struct cfi_table t;
	size_t i;
	int fd = open(path, O_RDONLY), err;

	if (fd < 0 || (err = cfi_from_fd(fd, &t))) {
		fprintf(stderr, "cfidump: %s: %s\n", path, strerror(fd < 0 ? errno : -err));
		return 1;
	}
	close(fd);
	printf("# %s fdes %u skipped %u rows %zu\n", path, t.fdes, t.fdes_skipped, t.nrows);
	for (i = 0; i < t.nrows; i++) {
		const struct tb_cfi_row *r = &t.rows[i];

		printf("%x %s %d %d %d %u\n", r->pc, kinds[r->kind], r->cfa_off,
		       r->rbp_rule, r->rbp_off8 * 8, r->arg);
	}
	cfi_free(&t);
	return 0;
}

/* CPU time: the machine is shared, wall time would measure the neighbours. */
static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int stats(const char *path)
{
	struct cfi_table t;
	double t0, best = 1e18;
	int i, fd, err = 0;

	for (i = 0; i < 5 && !err; i++) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return 1;
		t0 = now_us();
		err = cfi_from_fd(fd, &t);
		if (now_us() - t0 < best)
			best = now_us() - t0;
		close(fd);
		if (!err && i < 4)
			cfi_free(&t);
	}
	if (err) {
		fprintf(stderr, "cfidump: %s: %s\n", path, strerror(-err));
		return 1;
	}
	printf("%s: build id %s, %u CIEs, %u FDEs (.eh_frame_hdr: %u), %u skipped, "
	       "%zu rows (%u unsupported), %zu bytes, parse %.2f ms CPU\n", path,
	       t.build_id[0] ? t.build_id : "-", t.cies, t.fdes, t.hdr_fdes,
	       t.fdes_skipped, t.nrows, t.unsupported, cfi_bytes(&t), best / 1e3);
	cfi_free(&t);
	return 0;
}

/* bias = runtime start - ELF vaddr of the mapped file offset. */
static int module_bias(const char *path, uint64_t start, uint64_t off, int64_t *bias)
{
	GElf_Phdr ph;
	size_t i, n;
	Elf *elf;
	int fd = open(path, O_RDONLY), found = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getphdrnum(elf, &n)) {
		for (i = 0; i < n && !found; i++) {
			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    off < ph.p_offset || off >= ph.p_offset + ph.p_filesz)
				continue;
			*bias = (int64_t)(start - (ph.p_vaddr + off - ph.p_offset));
			found = 1;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

static int load_modules(pid_t pid, struct cfi_module *mods)
{
	char line[4600], path[4096], perms[8], fname[64];
	unsigned long long start, end, off;
	FILE *f;
	int n = 0;

	snprintf(fname, sizeof(fname), "/proc/%d/maps", pid);
	f = fopen(fname, "r");
	if (!f)
		return 0;
	while (n < MAX_MODS && fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &start, &end, perms,
			   &off, path) < 4 || perms[2] != 'x' || path[0] != '/')
			continue;
		mods[n].table = cfi_cache_get(path);
		if (!mods[n].table || !module_bias(path, start, off, &mods[n].bias))
			continue;
		mods[n].start = start;
		mods[n].end = end;
		n++;
	}
	fclose(f);
	return n;
}

static int unwind(pid_t pid)
{
	static struct cfi_module mods[MAX_MODS];
	struct user_regs_struct regs;
	struct cfi_unwind_result res;
	uint64_t pcs[256];
	int i, n, status;

	if (ptrace(PTRACE_ATTACH, pid, 0, 0) || waitpid(pid, &status, 0) != pid) {
		perror("cfidump: ptrace");
		return 1;
	}
	if (ptrace(PTRACE_GETREGS, pid, 0, &regs)) {
		perror("cfidump: PTRACE_GETREGS");
		return 1;
	}
	n = load_modules(pid, mods);
	res = cfi_unwind(mods, n, (struct cfi_regs){ .rip = regs.rip, .rsp = regs.rsp,
						    .rbp = regs.rbp },
			 cfi_read_remote, &pid, pcs, 256);
	ptrace(PTRACE_DETACH, pid, 0, 0);
	for (i = 0; i < res.n; i++)
		printf("%#llx\n", (unsigned long long)pcs[i]);
	printf("# %s\n", cfi_stop_name(res.stop));
	return 0;
}

int main(int argc, char **argv)
{
	int i, rc = 0;

	if (argc >= 3 && !strcmp(argv[1], "unwind"))
		return unwind(atoi(argv[2]));
	if (argc < 3 || (strcmp(argv[1], "rows") && strcmp(argv[1], "stats"))) {
		fprintf(stderr, "usage: cfidump rows|stats FILE... | cfidump unwind PID\n");
		return 2;
	}
	for (i = 2; i < argc; i++)
		rc |= argv[1][0] == 'r' ? dump_rows(argv[i]) : stats(argv[i]);
	return rc;
}
