// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Discover + layout for one pid: locate _PyRuntime (proc.c/pyelf.c), hand
 * what the process shows of its version to the layout module (resolve),
 * then its addresses (bind). No version number is looked at here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "errors.h"
#include "remote.h"
#include "target.h"
#include "util.h"

/* The target's memory, for the layout module (layout_read_fn). */
static int read_target(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct target *t = ctx;

	if (remote_read(t->pid, addr, buf, len))
		return errno ? -errno : -EIO;
	return 0;
}

/* What pyelf found, as addresses for layout_bind(). */
static void target_addrs(const struct target *t, struct layout_addrs *a)
{
	memset(a, 0, sizeof(*a));
	a->runtime = t->loc.runtime_addr;
	a->code_type = t->loc.code_type_addr;
	memcpy(a->sym, t->loc.sym_addr, sizeof(a->sym));
}

/* The version and layout: from _Py_DebugOffsets, else Py_Version, else the file name. */
static int read_layout(struct target *t, unsigned flags, char *err, size_t errlen)
{
	uint8_t buf[LAYOUT_DEBUG_OFFSETS_MAX];
	struct layout_facts f = { .runtime = buf, .runtime_len = sizeof(buf),
				  .file_version = t->loc.version_hint };
	uint64_t pv = 0;
	int ret;

	if (t->loc.runtime_size && t->loc.runtime_size < f.runtime_len)
		f.runtime_len = t->loc.runtime_size;
	if (remote_read(t->pid, t->loc.runtime_addr, buf, f.runtime_len)) {
		snprintf(err, errlen, "cannot read _PyRuntime at 0x%llx: %s (is the process exiting?)",
			 (unsigned long long)t->loc.runtime_addr, strerror(errno));
		return errno == EPERM ? TARGET_ACCESS : TARGET_ERROR;
	}
	if (t->loc.py_version_addr &&
	    !remote_read(t->pid, t->loc.py_version_addr, &pv, sizeof(pv)))
		f.py_version = (uint32_t)pv;
	ret = layout_resolve(&f, flags, &t->layout);
	snprintf(t->version, sizeof(t->version), "%s", t->layout.name);
	if (ret == LAYOUT_OK)
		return TARGET_OK;
	if (ret == LAYOUT_NO_VERSION)
		snprintf(err, errlen, "cannot tell the Python version of %s (tachyon-bpf reads %s)",
			 t->loc.path, layout_supported());
	else
		layout_explain(&t->layout, ret, err, errlen);
	return TARGET_UNSUPPORTED;
}

int target_refresh(struct target *t)
{
	struct layout_addrs a;

	if (t->layout.walk.addr.gil_addr)
		return 0;
	target_addrs(t, &a);
	return layout_bind_status(&t->layout, &a, read_target, t);
}

/* Interpreter options that take a value in the next argument. */
static int takes_value(const char *opt)
{
	return !strcmp(opt, "-W") || !strcmp(opt, "-X") || !strcmp(opt, "--check-hash-based-pycs");
}

/* The dynamic loader run as a program: ld-linux-x86-64.so.2, ld.so. */
static int is_loader(const char *exe)
{
	const char *b = base_name(exe);

	return !strcmp(b, "ld.so") || (!strncmp(b, "ld-", 3) && strstr(b, ".so"));
}

/* ld.so's options that take a value (glibc's rtld --help). */
static int loader_takes_value(const char *opt)
{
	static const char *const with_value[] = {
		"--library-path", "--inhibit-rpath", "--audit", "--preload", "--argv0",
		"--glibc-hwcaps-prepend", "--glibc-hwcaps-mask",
	};
	size_t i;

	for (i = 0; i < sizeof(with_value) / sizeof(with_value[0]); i++)
		if (!strcmp(opt, with_value[i]))
			return 1;
	return 0;
}

/*
 * `ld-linux-x86-64.so.2 [OPTIONS] PROGRAM ARGS...` (how some relocated
 * interpreters start): the program it loads is the executable that counts.
 */
static const char *skip_loader(const char *exe, const char *end)
{
	const char *arg = exe;

	if (!is_loader(exe))
		return exe;
	for (arg += strnlen(arg, (size_t)(end - arg)) + 1; arg < end;
	     arg += strnlen(arg, (size_t)(end - arg)) + 1) {
		if (loader_takes_value(arg))
			arg += strnlen(arg, (size_t)(end - arg)) + 1;
		else if (strncmp(arg, "--", 2))
			return arg;
	}
	return exe;
}

void target_name_from_cmdline(const char *cmdline, size_t len, char *out, size_t outlen)
{
	const char *end = cmdline + len, *exe = len ? skip_loader(cmdline, end) : cmdline;
	const char *arg = exe;

	snprintf(out, outlen, "%s", len ? base_name(exe) : "?");
	/* An embedding program's arguments are its own, not a script. */
	if (strncmp(base_name(exe), "python", 6))
		return;
	for (arg += strnlen(arg, (size_t)(end - arg)) + 1; arg < end;
	     arg += strnlen(arg, (size_t)(end - arg)) + 1) {
		if (!strcmp(arg, "-m") || !strcmp(arg, "-c")) {
			const char *next = arg + strlen(arg) + 1;

			if (!strcmp(arg, "-c"))
				snprintf(out, outlen, "%s -c", base_name(exe));
			else if (next < end)
				snprintf(out, outlen, "%s", next);
			return;
		}
		if (arg[0] == '-' && arg[1] && arg[1] != '-' && strlen(arg) > 2 &&
		    strchr("WX", arg[1]))
			continue;	/* -Wdefault, -Xdev */
		if (takes_value(arg)) {
			arg += strlen(arg) + 1;
			if (arg >= end)
				return;
			continue;
		}
		if (arg[0] == '-')
			continue;
		snprintf(out, outlen, "%s", base_name(arg));
		return;
	}
}

static void read_name(struct target *t)
{
	char buf[4096];
	ssize_t n = proc_cmdline(t->pid, buf, sizeof(buf));

	if (n <= 0) {
		if (proc_comm(t->pid, 0, t->name, sizeof(t->name)))
			snprintf(t->name, sizeof(t->name), "pid %d", t->pid);
		return;
	}
	target_name_from_cmdline(buf, (size_t)n, t->name, sizeof(t->name));
}

/* A target in another pid namespace numbers its threads in there. */
static void read_pidns(struct target *t)
{
	struct stat mine, theirs;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", t->pid);
	if (stat("/proc/self/ns/pid", &mine) || stat(path, &theirs))
		return;
	if (mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino)
		return;
	t->layout.walk.addr.pidns_dev = theirs.st_dev;
	t->layout.walk.addr.pidns_ino = theirs.st_ino;
}

static void read_cwd(struct target *t)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/cwd", t->pid);
	n = readlink(link, t->cwd, sizeof(t->cwd) - 2);
	if (n <= 0) {
		t->cwd[0] = 0;
		t->cwd_len = 0;
		return;
	}
	if (n > 1)	/* keep "/" as is, add a separator otherwise */
		t->cwd[n++] = '/';
	t->cwd[n] = 0;
	t->cwd_len = (size_t)n;
}

/*
 * No runtime we can read, but an interpreter file named by its version
 * (python2.7, libpython3.6m.so): an interpreter from before _PyRuntime,
 * worth naming as such rather than "not a Python process". Only a version
 * older than any we read: a newer one may still be loading its libpython
 * (a process just exec'd), and is looked at again.
 */
static int old_python(struct target *t, char *err, size_t errlen)
{
	struct layout_facts f = { .file_version = t->loc.version_hint };
	int ret = layout_resolve(&f, 0, &t->layout);
	const char *dot = strchr(t->layout.name, '.');

	if (ret == LAYOUT_NO_VERSION || !layout_too_old(&t->layout))
		return TARGET_NOT_PYTHON;
	t->version_partial = !dot || !strchr(dot + 1, '.');
	layout_explain(&t->layout, LAYOUT_UNSUPPORTED, err, errlen);
	return TARGET_UNSUPPORTED;
}

int target_open(pid_t pid, unsigned flags, struct target *t, char *err, size_t errlen)
{
	struct layout_addrs a;
	int ret;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->pidfd = -1;
	ret = proc_locate_python(pid, &t->loc, err, errlen);
	switch (ret) {
	case PROC_OK:
		break;
	case PROC_NO_PROCESS:
		return TARGET_NO_PROCESS;
	case PROC_NOT_PYTHON:
		return old_python(t, err, errlen);
	case PROC_ACCESS:
		return TARGET_ACCESS;
	default:
		return TARGET_ERROR;
	}
	ret = read_layout(t, flags, err, errlen);
	if (ret)
		return ret;
	target_addrs(t, &a);
	layout_bind(&t->layout, &a, read_target, t);
	t->start_time = proc_start_time(pid);
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	read_cwd(t);
	read_name(t);
	read_pidns(t);
	tb_debug("pid %d: Python %s, _PyRuntime 0x%llx in %s, layout from %s",
		 pid, t->version, (unsigned long long)t->loc.runtime_addr,
		 t->loc.path, t->layout.source);
	return TARGET_OK;
}

int target_fork(const struct target *parent, pid_t pid, struct target *t)
{
	*t = *parent;
	t->pid = pid;
	t->exited = 0;
	t->start_time = proc_start_time(pid);
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return t->pidfd < 0 && errno == ESRCH ? TARGET_NO_PROCESS : TARGET_OK;
}

void target_close(struct target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}

void target_report(pid_t pid, int ret, const char *detail)
{
	switch (ret) {
	case TARGET_NO_PROCESS:
		tb_error("pid %d: no such process (check the pid; the process may have exited)", pid);
		return;
	case TARGET_NOT_PYTHON:
		tb_error("pid %d: not a Python process: %s (give the pid of a CPython %s process)",
			 pid, detail, layout_supported());
		return;
	case TARGET_ACCESS:
		/* Reading the process needs CAP_SYS_PTRACE; reading its files, DAC. */
		if (strstr(detail, "cannot open "))
			tb_error("pid %d: permission denied: %s (needs root, or CAP_DAC_READ_SEARCH to read the interpreter's files)",
				 pid, detail);
		else
			tb_error("pid %d: permission denied: %s (needs root or CAP_SYS_PTRACE over the target, and the same pid namespace)",
				 pid, detail);
		return;
	case TARGET_UNSUPPORTED:
		tb_error("pid %d: %s", pid, detail);
		return;
	}
	tb_error("pid %d: cannot inspect the process: %s", pid, detail);
}
