// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for user/proc.c and user/pyelf.c: maps-line parsing, ELF
 * inspection of the interpreters installed on this machine, and locating
 * _PyRuntime in live child processes (checked by reading their memory).
 *
 * Tests that need a binary this machine lacks are skipped, not failed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "pyelf.h"

#define PY313_DIR	"/root/.pyenv/versions/3.13.0"
#define PY313_LIB	PY313_DIR "/lib/libpython3.13.so.1.0"
#define PY313_BIN	PY313_DIR "/bin/python3"
#define PY38_LIB	"/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0"
#define DEB311_BIN	"/usr/bin/python3.11"
/* Debian 11's static, stripped python3.9 (scripts/real-pythons.sh) */
#define DEB39_BIN	"/root/.cache/tachyon-bpf/debian-bullseye/root/usr/bin/python3.9"
#define SLEEP_CODE	"import time; time.sleep(30)"

static char tmpdir[64];
static pid_t children[16];
static int nchildren;

/* ---- helpers ---- */

static bool have(const char *path)
{
	return access(path, R_OK) == 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Fork and exec @argv; @prep (may be NULL) runs in the child first. */
static pid_t spawn_prep(const char *const argv[], void (*prep)(void *), void *arg)
{
	pid_t pid = fork();
	int fd;

	assert_true(pid >= 0);
	if (pid == 0) {
		/* Never outlive a crashed test run. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (prep)
			prep(arg);
		fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (nchildren < (int)(sizeof(children) / sizeof(children[0])))
		children[nchildren++] = pid;
	return pid;
}

static pid_t spawn(const char *const argv[])
{
	return spawn_prep(argv, NULL, NULL);
}

static void kill_child(pid_t pid)
{
	int i;

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (i = 0; i < nchildren; i++)
		if (children[i] == pid)
			children[i] = 0;
}

/* Poll until the interpreter is mapped (the child may still be exec'ing). */
static int locate_wait(pid_t pid, struct py_location *loc, char *err, size_t errlen)
{
	int i, ret = PROC_ERROR;

	for (i = 0; i < 300; i++) {
		ret = proc_locate_python(pid, loc, err, errlen);
		if (ret == PROC_OK || ret == PROC_NO_PROCESS)
			return ret;
		sleep_ms(10);
	}
	return ret;
}

/* Wait until @pid runs an executable whose name is @base. */
static bool exe_wait(pid_t pid, const char *base)
{
	char link[64], target[4096];
	const char *s;
	ssize_t n;
	int i;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (i = 0; i < 300; i++) {
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			s = strrchr(target, '/');
			if (s && !strcmp(s + 1, base))
				return true;
		}
		sleep_ms(10);
	}
	return false;
}

static void remote_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	assert_int_equal(process_vm_readv(pid, &local, 1, &remote, 1, 0), (ssize_t)len);
}

static uint64_t remote_u64(pid_t pid, uint64_t addr)
{
	uint64_t v;

	remote_read(pid, addr, &v, sizeof(v));
	return v;
}

/* PyTypeObject.tp_name is at +24 (refcnt, type, size) in a GIL build. */
/*
 * PyCode_Type's tp_name is a pointer the dynamic loader relocates: a
 * process found as soon as libpython is mapped may still be in ld.so, so
 * give it up to 3 s to get there (under load it took over 10 ms).
 */
static void assert_code_type(pid_t pid, uint64_t code_type)
{
	char name[8] = { 0 };
	int i;

	assert_true(code_type != 0);
	for (i = 0; i < 300; i++) {
		uint64_t tp_name = 0;
		struct iovec local = { name, 5 }, remote = { NULL, 5 };

		/* not remote_read(): before relocation tp_name points nowhere,
		 * and the read fails until ld.so is done */
		memset(name, 0, sizeof(name));
		remote_read(pid, code_type + 24, &tp_name, sizeof(tp_name));
		remote.iov_base = (void *)(uintptr_t)tp_name;
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == 5 && !strcmp(name, "code"))
			break;
		sleep_ms(10);
	}
	assert_string_equal(name, "code");
}

static int inspect_path(const char *path, struct pyelf_info *info)
{
	char err[256] = "";
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	ret = pyelf_inspect_fd(fd, path, info, err, sizeof(err));
	close(fd);
	if (ret)
		assert_true(err[0] != '\0');
	return ret;
}

static void *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	size_t done = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	while (done < (size_t)st.st_size) {
		n = read(fd, buf + done, (size_t)st.st_size - done);
		assert_true(n > 0);
		done += (size_t)n;
	}
	close(fd);
	*len = done;
	return buf;
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	void *buf = slurp(from, &len);
	int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	free(buf);
}

/* ---- maps lines ---- */

static void test_maps_file(void **state)
{
	struct proc_map m;

	(void)state;
	assert_int_equal(proc_parse_maps_line(
		"7f1c2a400000-7f1c2a4a6000 r--p 00000000 fd:01 1835098"
		"                    /usr/lib/libpython3.13.so.1.0\n", &m), 0);
	assert_int_equal(m.start, 0x7f1c2a400000ULL);
	assert_int_equal(m.end, 0x7f1c2a4a6000ULL);
	assert_int_equal(m.offset, 0);
	assert_int_equal(m.dev_major, 0xfd);
	assert_int_equal(m.dev_minor, 1);
	assert_int_equal(m.inode, 1835098);
	assert_string_equal(m.perms, "r--p");
	assert_string_equal(m.path, "/usr/lib/libpython3.13.so.1.0");
	assert_false(m.deleted);

	assert_int_equal(proc_parse_maps_line(
		"00400000-0041f000 r-xs 0001f000 103:0a 18446744073709551615 /x", &m), 0);
	assert_int_equal(m.offset, 0x1f000);
	assert_int_equal(m.dev_major, 0x103);
	assert_int_equal(m.dev_minor, 0xa);
	assert_int_equal(m.inode, UINT64_MAX);
	assert_string_equal(m.perms, "r-xs");
	assert_string_equal(m.path, "/x");
}

static void test_maps_anon_and_special(void **state)
{
	struct proc_map m;

	(void)state;
	assert_int_equal(proc_parse_maps_line(
		"7ffd1a2b3000-7ffd1a2d4000 rw-p 00000000 00:00 0\n", &m), 0);
	assert_string_equal(m.path, "");
	assert_int_equal(m.inode, 0);
	/* Some kernels leave padding on anonymous lines. */
	assert_int_equal(proc_parse_maps_line(
		"7ffd1a2b3000-7ffd1a2d4000 rw-p 00000000 00:00 0      \n", &m), 0);
	assert_string_equal(m.path, "");
	assert_int_equal(proc_parse_maps_line(
		"55d0c0a4e000-55d0c0a6f000 rw-p 00000000 00:00 0"
		"                          [heap]\n", &m), 0);
	assert_string_equal(m.path, "[heap]");
	assert_int_equal(proc_parse_maps_line(
		"7ffd1a2b3000-7ffd1a2d4000 rw-p 00000000 00:00 0 [stack]", &m), 0);
	assert_string_equal(m.path, "[stack]");
	assert_int_equal(proc_parse_maps_line(
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n", &m), 0);
	assert_string_equal(m.path, "[vsyscall]");
	assert_string_equal(m.perms, "--xp");
}

static void test_maps_spaces_and_deleted(void **state)
{
	struct proc_map m;

	(void)state;
	assert_int_equal(proc_parse_maps_line(
		"7f0000000000-7f0000001000 r-xp 00001000 08:01 42"
		"      /opt/my app/lib python/libpython3.12.so \n", &m), 0);
	/* Inner and trailing spaces belong to the path. */
	assert_string_equal(m.path, "/opt/my app/lib python/libpython3.12.so ");
	assert_false(m.deleted);

	assert_int_equal(proc_parse_maps_line(
		"7f0000000000-7f0000001000 r--p 00000000 08:01 42"
		"      /tmp/py thon3.13 (deleted)\n", &m), 0);
	assert_string_equal(m.path, "/tmp/py thon3.13 (deleted)");
	assert_true(m.deleted);

	assert_int_equal(proc_parse_maps_line(
		"7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /memfd:x (deleted)", &m), 0);
	assert_true(m.deleted);
	assert_int_equal(proc_parse_maps_line(
		"7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /x(deleted)", &m), 0);
	assert_false(m.deleted);
}

static void test_maps_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"garbage",
		"7f00-7f01",
		"7f00-7f01 r--p",
		"7f00-7f01 r--p 0 08:01",
		"7f00 7f01 r--p 0 08:01 1 /x",
		"7f01-7f00 r--p 0 08:01 1 /x",		/* end before start */
		"7f00-7f00 r--p 0 08:01 1 /x",		/* empty */
		"7f00-7f01 rw-q 0 08:01 1 /x",		/* bad perms */
		"7f00-7f01 r--p 0 0801 1 /x",		/* no ':' in dev */
		"7f00-7f01 r--p 0 08:01 x /x",		/* bad inode */
		"7f00-7f01 r--p 0 08:01 1x /x",
		"-7f00-7f01 r--p 0 08:01 1 /x",
		"0x7f00-7f01 r--p 0 08:01 1 /x",
		"17f0000000000000a-7f01 r--p 0 08:01 1 /x",	/* 17 hex digits */
		"7f00-7f01 r--p 0 08:01 99999999999999999999 /x", /* > u64 */
		"7f00-7f01 r--p 0 08:01 1 /x\n/y",	/* two lines */
		"7f00-7f01  r--p 0 08:01 1 /x",
	};
	struct proc_map m;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (proc_parse_maps_line(bad[i], &m) != -EINVAL)
			fail_msg("accepted malformed line %zu: \"%s\"", i, bad[i]);
	}
	assert_int_equal(proc_parse_maps_line(NULL, &m), -EINVAL);
}

static void test_maps_long_path(void **state)
{
	static char line[8192];
	struct proc_map m;
	int n;

	(void)state;
	n = snprintf(line, sizeof(line), "7f00-7f01 r--p 0 08:01 1 /");
	memset(line + n, 'a', sizeof(m.path) - 2);
	line[n + sizeof(m.path) - 2] = '\0';
	assert_int_equal(proc_parse_maps_line(line, &m), 0);	/* 4095 chars */
	assert_int_equal(strlen(m.path), sizeof(m.path) - 1);
	strcat(line, "b");
	assert_int_equal(proc_parse_maps_line(line, &m), -EINVAL);
}

/* ---- pyelf on real files ---- */

static void test_pyelf_313(void **state)
{
	struct pyelf_info info;
	char cookie[8];
	int fd;

	(void)state;
	if (!have(PY313_LIB))
		skip();
	assert_int_equal(inspect_path(PY313_LIB, &info), 0);
	assert_int_equal(info.load_vaddr, 0);
	assert_int_equal(info.runtime_vaddr, 0x5294c0);
	assert_int_equal(info.runtime_size, 0x452b8);
	assert_int_equal(info.runtime_file_off, 0x5284c0);
	assert_true(info.code_type_vaddr != 0);
	assert_true(info.py_version_vaddr != 0);
	assert_string_equal(info.soname_version, "3.13");

	/* 3.13: _Py_DebugOffsets opens _PyRuntime, readable from the file. */
	fd = open(PY313_LIB, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, cookie, 8, (off_t)info.runtime_file_off), 8);
	close(fd);
	assert_memory_equal(cookie, "xdebugpy", 8);
}

static void test_pyelf_38_symbol(void **state)
{
	struct pyelf_info info;

	(void)state;
	if (!have(PY38_LIB))
		skip();
	/* No .PyRuntime section before 3.10: the symbol, which lives in .bss. */
	assert_int_equal(inspect_path(PY38_LIB, &info), 0);
	assert_int_equal(info.runtime_vaddr, 0x372e00);
	assert_int_equal(info.runtime_size, 1464);
	assert_int_equal(info.runtime_file_off, 0);
	assert_int_equal(info.py_version_vaddr, 0);	/* 3.11+ only */
	assert_true(info.code_type_vaddr != 0);
	/* "3.8" from the file name, ".18" from the PY_VERSION literal */
	assert_string_equal(info.soname_version, "3.8.18");
}

static void test_pyelf_debian_static(void **state)
{
	struct pyelf_info info;

	(void)state;
	if (!have(DEB311_BIN))
		skip();
	assert_int_equal(inspect_path(DEB311_BIN, &info), 0);
	assert_int_equal(info.load_vaddr, 0x400000);
	assert_int_equal(info.runtime_vaddr, 0xa5b740);
	assert_true(info.runtime_size > 0);
	assert_true(info.runtime_file_off > 0);
	assert_true(info.code_type_vaddr != 0);
	assert_true(info.py_version_vaddr != 0);
	assert_string_equal(info.soname_version, "3.11");
}

/* Copied as bin/python (a container image): no version in any name, no
 * Py_Version before 3.11: the PY_VERSION literal tells it. */
static void test_pyelf_static_39_renamed(void **state)
{
	struct pyelf_info info;
	char err[256] = "";
	int fd;

	(void)state;
	if (!have(DEB39_BIN))
		skip();
	fd = open(DEB39_BIN, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pyelf_inspect_fd(fd, "/srv/app/bin/python", &info, err, sizeof(err)), 0);
	close(fd);
	assert_int_equal(info.py_version_vaddr, 0);
	assert_string_equal(info.soname_version, "3.9.2");
}

static void test_pyelf_not_python(void **state)
{
	struct pyelf_info info;
	char path[128], err[256];
	int fd;

	(void)state;
	assert_int_equal(inspect_path("/bin/ls", &info), 1);
	assert_int_equal(info.runtime_vaddr, 0);

	snprintf(path, sizeof(path), "%s/text", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\necho hi\n", 18), 18);
	assert_int_equal(pyelf_inspect_fd(fd, path, &info, err, sizeof(err)), -1);
	close(fd);
	assert_int_equal(inspect_path(path, &info), -1);

	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(pyelf_inspect_fd(fd, "/dev/null", &info, err, sizeof(err)), -1);
	close(fd);
	assert_int_equal(pyelf_inspect_mem("", 0, &info, err, sizeof(err)), -1);
	assert_int_equal(pyelf_inspect_mem("\x7f" "ELF", 4, &info, err, sizeof(err)), -1);
}

/* The fd and memory paths share their parser: same answer. */
static void test_pyelf_mem_matches_fd(void **state)
{
	struct pyelf_info a, b;
	char err[256];
	void *map;
	int fd;
	struct stat st;

	(void)state;
	if (!have(PY313_LIB))
		skip();
	fd = open(PY313_LIB, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	/* PROT_READ: proves libelf never writes the caller's image. */
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(pyelf_inspect_fd(fd, NULL, &a, err, sizeof(err)), 0);
	assert_int_equal(pyelf_inspect_mem(map, (size_t)st.st_size, &b, err, sizeof(err)), 0);
	/* No file name: the version comes from DT_SONAME. */
	assert_string_equal(a.soname_version, "3.13");
	assert_memory_equal(&a, &b, sizeof(a));
	munmap(map, (size_t)st.st_size);
	close(fd);
}

static void test_pyelf_truncated(void **state)
{
	const size_t cuts[] = { 1, 16, 63, 64, 65, 200, 4096, 0x86000, 0x332000,
				0x49d5e0, 0x5284c8, 0x56d778 };
	struct pyelf_info info;
	char path[128], err[256];
	size_t len, i, cut;
	char *buf;
	int fd, ret;

	(void)state;
	if (!have(PY313_LIB))
		skip();
	buf = slurp(PY313_LIB, &len);
	snprintf(path, sizeof(path), "%s/libpython3.13.so.1.0", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	/* Longest cut first, so each is one ftruncate of the same copy. */
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]) + 3; i++) {
		if (i < 3)
			cut = len - (i == 0 ? 1 : i == 1 ? 64 : len / 2);
		else
			cut = cuts[sizeof(cuts) / sizeof(cuts[0]) - 1 - (i - 3)];
		if (cut >= len)
			continue;
		assert_int_equal(ftruncate(fd, (off_t)cut), 0);
		ret = pyelf_inspect_fd(fd, path, &info, err, sizeof(err));
		if (ret != -1 && ret != 1)
			fail_msg("cut at %zu: returned %d", cut, ret);
		ret = pyelf_inspect_mem(buf, cut, &info, err, sizeof(err));
		if (ret != -1 && ret != 1)
			fail_msg("mem cut at %zu: returned %d", cut, ret);
	}
	close(fd);
	free(buf);
}

/* Corrupt header and table bytes at random: any answer, but no crash. */
static void test_pyelf_mutations(void **state)
{
	struct pyelf_info info;
	char err[256];
	size_t len, pos, shoff, i;
	unsigned char *buf, saved;
	unsigned seed = 12345;

	(void)state;
	if (!have(PY313_LIB))
		skip();
	buf = slurp(PY313_LIB, &len);
	memcpy(&shoff, buf + 0x28, sizeof(shoff));	/* e_shoff */
	assert_true(shoff < len);
	for (i = 0; i < 3000; i++) {
		seed = seed * 1103515245 + 12345;
		/* Alternate: ELF header + program headers, section headers. */
		if (i & 1)
			pos = (seed >> 8) % 0x300;
		else
			pos = shoff + (seed >> 8) % (len - shoff);
		saved = buf[pos];
		buf[pos] = (unsigned char)(seed >> 3);
		pyelf_inspect_mem(buf, len, &info, err, sizeof(err));
		buf[pos] = saved;
	}
	assert_int_equal(pyelf_inspect_mem(buf, len, &info, err, sizeof(err)), 0);
	free(buf);
}

/* ---- live processes ---- */

static void test_locate_313_shared(void **state)
{
	const char *const argv[] = { PY313_BIN, "-c", SLEEP_CODE, NULL };
	struct py_location loc;
	char err[256], cookie[8];
	pid_t pid;

	(void)state;
	if (!have(PY313_BIN))
		skip();
	pid = spawn(argv);
	assert_int_equal(locate_wait(pid, &loc, err, sizeof(err)), PROC_OK);
	/* Shared build: the runtime is in libpython, not in the executable. */
	assert_non_null(strstr(loc.path, "/libpython3.13.so.1.0"));
	assert_string_equal(loc.version_hint, "3.13");
	assert_int_equal(loc.runtime_size, 0x452b8);
	assert_int_equal(loc.runtime_addr, loc.bias + 0x5294c0);
	remote_read(pid, loc.runtime_addr, cookie, 8);
	assert_memory_equal(cookie, "xdebugpy", 8);
	assert_int_equal(remote_u64(pid, loc.runtime_addr + 8), 0x030d00f0);
	assert_int_equal(remote_u64(pid, loc.py_version_addr), 0x030d00f0);
	assert_code_type(pid, loc.code_type_addr);
	kill_child(pid);
}

/* proc_locate_python(@pid) from an unprivileged user, -1 if that failed. */
static int locate_as_nobody(pid_t pid)
{
	struct py_location loc;
	char err[256];
	pid_t helper;
	int status;

	helper = fork();
	if (helper == 0) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(100);
		_exit(-proc_locate_python(pid, &loc, err, sizeof(err)));
	}
	if (helper < 0 || waitpid(helper, &status, 0) != helper ||
	    !WIFEXITED(status) || WEXITSTATUS(status) == 100)
		return -1;
	return -WEXITSTATUS(status);
}

static void test_locate_debian_static(void **state)
{
	const char *const argv[] = { DEB311_BIN, "-c", SLEEP_CODE, NULL };
	struct py_location loc;
	char err[256];
	pid_t pid;

	(void)state;
	if (!have(DEB311_BIN))
		skip();
	pid = spawn(argv);
	assert_int_equal(locate_wait(pid, &loc, err, sizeof(err)), PROC_OK);
	assert_string_equal(loc.path, DEB311_BIN);
	assert_string_equal(loc.version_hint, "3.11");
	assert_int_equal(loc.bias, 0);		/* non-PIE */
	assert_int_equal(loc.runtime_addr, 0xa5b740);
	assert_int_equal(remote_u64(pid, loc.py_version_addr) >> 16, 0x030b);
	assert_code_type(pid, loc.code_type_addr);
	if (getuid() == 0)
		assert_int_equal(locate_as_nobody(pid), PROC_ACCESS);
	kill_child(pid);
}

/*
 * An interpreter whose name lacks "python" is found as /proc/PID/exe; once
 * its file is deleted, only /proc/PID/map_files still reaches it.
 */
static void test_locate_renamed_then_deleted(void **state)
{
	struct py_location loc, loc2;
	char path[128], err[256];
	const char *argv[] = { path, "-c", SLEEP_CODE, NULL };
	pid_t pid;

	(void)state;
	if (!have(DEB311_BIN))
		skip();
	snprintf(path, sizeof(path), "%s/interp", tmpdir);
	copy_file(DEB311_BIN, path);
	pid = spawn(argv);
	assert_int_equal(locate_wait(pid, &loc, err, sizeof(err)), PROC_OK);
	assert_string_equal(loc.path, path);
	assert_string_equal(loc.version_hint, "");
	assert_int_equal(loc.runtime_addr, 0xa5b740);

	assert_int_equal(unlink(path), 0);
	assert_int_equal(proc_locate_python(pid, &loc2, err, sizeof(err)), PROC_OK);
	assert_non_null(strstr(loc2.path, " (deleted)"));
	assert_int_equal(loc2.runtime_addr, loc.runtime_addr);
	assert_code_type(pid, loc2.code_type_addr);
	kill_child(pid);
}

struct container {
	char root[128], interp[128], decoy[128], other[128];
};

/*
 * In the child: a private mount namespace whose root is a bind of ours
 * (pivot_root, as container runtimes do), where @decoy shows @interp.  Our
 * own @decoy stays a copy of ls, so only the child's root finds python.
 */
static void enter_container(void *arg)
{
	const struct container *c = arg;

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("/", c->root, NULL, MS_BIND | MS_REC, NULL) ||
	    chdir(c->root) ||
	    syscall(SYS_pivot_root, ".", ".") ||
	    umount2(".", MNT_DETACH) ||
	    chdir("/") ||
	    mount(c->interp, c->decoy, NULL, MS_BIND, NULL))
		_exit(126);
}

/* Mount @src over @dst inside @pid's mount namespace. */
static int overmount_in(pid_t pid, const char *src, const char *dst)
{
	char ns[64];
	pid_t helper;
	int fd, status;

	helper = fork();
	if (helper == 0) {
		snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)pid);
		fd = open(ns, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNS) ||
		    mount(src, dst, NULL, MS_BIND, NULL))
			_exit(1);
		_exit(0);
	}
	if (helper < 0 || waitpid(helper, &status, 0) != helper)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static bool can_unshare_mounts(void)
{
	pid_t pid = fork();
	int status;

	if (pid == 0)
		_exit(unshare(CLONE_NEWNS) ||
		      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	return pid > 0 && waitpid(pid, &status, 0) == pid &&
	       WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * A process in its own mount namespace: found through /proc/PID/root.
 * Then the path in its namespace is overmounted with another file: the
 * inode no longer matches, and /proc/PID/map_files must be used.
 */
static void test_locate_container(void **state)
{
	struct container c;
	struct py_location loc;
	char err[256];
	const char *argv[] = { c.decoy, "-c", SLEEP_CODE, NULL };
	pid_t pid;

	(void)state;
	if (!have(DEB311_BIN) || !can_unshare_mounts())
		skip();
	snprintf(c.root, sizeof(c.root), "%s/ctr", tmpdir);
	snprintf(c.interp, sizeof(c.interp), "%s/interp2", tmpdir);
	snprintf(c.decoy, sizeof(c.decoy), "%s/decoy", tmpdir);
	snprintf(c.other, sizeof(c.other), "%s/other", tmpdir);
	assert_int_equal(mkdir(c.root, 0755), 0);
	copy_file(DEB311_BIN, c.interp);
	copy_file("/bin/ls", c.decoy);
	copy_file("/bin/ls", c.other);

	pid = spawn_prep(argv, enter_container, &c);
	assert_int_equal(locate_wait(pid, &loc, err, sizeof(err)), PROC_OK);
	assert_string_equal(loc.path, c.decoy);
	assert_int_equal(loc.runtime_addr, 0xa5b740);
	assert_code_type(pid, loc.code_type_addr);

	assert_int_equal(overmount_in(pid, c.other, c.decoy), 0);
	assert_int_equal(proc_locate_python(pid, &loc, err, sizeof(err)), PROC_OK);
	assert_string_equal(loc.path, c.decoy);
	assert_int_equal(loc.runtime_addr, 0xa5b740);
	kill_child(pid);
}

static void test_locate_not_python(void **state)
{
	const char *const argv[] = { "/usr/bin/sleep", "30", NULL };
	struct py_location loc;
	char err[256];
	pid_t pid;

	(void)state;
	pid = spawn(argv);
	assert_true(exe_wait(pid, "sleep"));
	assert_int_equal(proc_locate_python(pid, &loc, err, sizeof(err)), PROC_NOT_PYTHON);
	assert_true(err[0] != '\0');
	kill_child(pid);
}

static void test_locate_dead(void **state)
{
	siginfo_t si;
	struct py_location loc;
	char err[256];
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	/* A zombie still has /proc/PID, but nothing left to profile. */
	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(proc_locate_python(pid, &loc, err, sizeof(err)), PROC_NO_PROCESS);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(proc_locate_python(pid, &loc, err, sizeof(err)), PROC_NO_PROCESS);
	assert_int_equal(proc_exists(pid), 0);
	assert_int_equal(proc_start_time(pid), 0);
	assert_int_equal(proc_locate_python(0, &loc, err, sizeof(err)), PROC_NO_PROCESS);
}

/* comm may contain spaces and parentheses; field 22 must still be found. */
static void test_stat_and_comm(void **state)
{
	char old[32], comm[32];
	uint64_t t0;

	(void)state;
	assert_int_equal(proc_exists(getpid()), 1);
	t0 = proc_start_time(getpid());
	assert_true(t0 > 0);
	assert_int_equal(prctl(PR_GET_NAME, old), 0);
	assert_int_equal(prctl(PR_SET_NAME, "a) b (c) 1 2"), 0);
	assert_int_equal(proc_start_time(getpid()), t0);
	assert_int_equal(proc_comm(getpid(), 0, comm, sizeof(comm)), 0);
	assert_string_equal(comm, "a) b (c) 1 2");
	assert_int_equal(proc_comm(getpid(), getpid(), comm, 4), 0);
	assert_string_equal(comm, "a) ");
	prctl(PR_SET_NAME, old);
	/* Our start time is after init's. */
	assert_true(proc_start_time(1) <= t0);
	assert_int_equal(proc_comm(-1, 0, comm, sizeof(comm)), -ESRCH);
}

/* The one stat parser: comm with ')' and spaces, short and bad lines. */
static void test_parse_stat(void **state)
{
	struct proc_stat st;

	(void)state;
	assert_int_equal(proc_parse_stat("42 (a) b (c) 1 2) S 7 42 42 0 -1 4194560 1 2 3 4"
					 " 5 6 7 8 20 0 1 0 123456 99 1\n", &st), 0);
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 7);
	assert_int_equal(st.cpu_ticks, 5 + 6);	/* utime + stime */
	assert_int_equal(st.start_time, 123456);
	/* Cut before field 22: the state and parent still count. */
	assert_int_equal(proc_parse_stat("9 (x) Z 1 9", &st), 0);
	assert_int_equal(st.state, 'Z');
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.start_time, 0);
	assert_int_equal(proc_parse_stat("9 (x)", &st), -EINVAL);
	assert_int_equal(proc_parse_stat("9 x R 1", &st), -EINVAL);
	assert_int_equal(proc_parse_stat(NULL, &st), -EINVAL);
	assert_int_equal(st.state, 0);
	assert_int_equal(proc_read_stat(getpid(), getpid(), &st), 0);
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.ppid, getppid());
	assert_int_equal(st.start_time, proc_start_time(getpid()));
}

/* NSpid: first field the kernel's tid, last the thread's own namespace's;
 * our own threads (one namespace) map to themselves. */
static void test_ns_tids(void **state)
{
	struct proc_nstid map[64];
	uint32_t g = 0, in = 0;
	int n;

	(void)state;
	assert_int_equal(proc_parse_nspid("Name:\tx\nNSpid:\t4242\t17\t3\nNSsid:\t1\n", &g, &in),
			 0);
	assert_int_equal(g, 4242);
	assert_int_equal(in, 3);
	assert_int_equal(proc_parse_nspid("Name:\tx\nNSpid:\t99\n", &g, &in), 0);
	assert_int_equal(g, 99);
	assert_int_equal(in, 99);
	assert_int_equal(proc_parse_nspid("Name:\tx\nNSpid:\t\n", &g, &in), -EINVAL);
	assert_int_equal(proc_parse_nspid("Name:\tx\nPid:\t5\n", &g, &in), -EINVAL);
	n = proc_ns_tids(getpid(), map, 64);
	assert_true(n >= 1);
	assert_int_equal(proc_ns_tid_global(map, n, (uint32_t)getpid()), (uint32_t)getpid());
	assert_int_equal(proc_ns_tid_global(map, n, 0x7fffffff), 0);
	assert_int_equal(proc_ns_tids(-1, map, 64), -ENOENT);
}

/* ---- fixtures ---- */

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_proc.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	int i;

	(void)state;
	for (i = 0; i < nchildren; i++) {
		if (children[i] > 0) {
			kill(children[i], SIGKILL);
			waitpid(children[i], NULL, 0);
		}
	}
	snprintf(cmd, sizeof(cmd), "rm -rf --one-file-system '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_file),
		cmocka_unit_test(test_maps_anon_and_special),
		cmocka_unit_test(test_maps_spaces_and_deleted),
		cmocka_unit_test(test_maps_malformed),
		cmocka_unit_test(test_maps_long_path),
		cmocka_unit_test(test_pyelf_313),
		cmocka_unit_test(test_pyelf_38_symbol),
		cmocka_unit_test(test_pyelf_debian_static),
		cmocka_unit_test(test_pyelf_static_39_renamed),
		cmocka_unit_test(test_pyelf_not_python),
		cmocka_unit_test(test_pyelf_mem_matches_fd),
		cmocka_unit_test(test_pyelf_truncated),
		cmocka_unit_test(test_pyelf_mutations),
		cmocka_unit_test(test_locate_313_shared),
		cmocka_unit_test(test_locate_debian_static),
		cmocka_unit_test(test_locate_renamed_then_deleted),
		cmocka_unit_test(test_locate_container),
		cmocka_unit_test(test_locate_not_python),
		cmocka_unit_test(test_locate_dead),
		cmocka_unit_test(test_stat_and_comm),
		cmocka_unit_test(test_parse_stat),
		cmocka_unit_test(test_ns_tids),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
