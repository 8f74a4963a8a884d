// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "safefile.h"

/* The one device it is always safe to write to (char 1:3 on Linux). */
static int is_null_device(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

FILE *safe_open(const char *path, char *why, size_t whylen)
{
	struct stat st;
	FILE *f;
	int fd, e;

	/* O_NONBLOCK: opening a FIFO that has no reader fails (ENXIO) instead of hanging. */
	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0) {
		e = errno;
		snprintf(why, whylen, "%s", e == ELOOP ? "is a symbolic link" :
			 e == ENXIO ? "is a FIFO or socket" : strerror(e));
		errno = e;
		return NULL;
	}
	if (!fstat(fd, &st) && is_null_device(&st))
		goto open;	/* -o /dev/null: nothing to clobber */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink > 1) {
		e = errno;
		if (!S_ISREG(st.st_mode))
			snprintf(why, whylen, "not a regular file");
		else if (st.st_uid != geteuid())
			snprintf(why, whylen, "exists and belongs to uid %u (remove it or choose another name)",
				 (unsigned)st.st_uid);
		else if (st.st_nlink > 1)
			snprintf(why, whylen, "has other hard links");
		else
			snprintf(why, whylen, "%s", strerror(e));
		close(fd);
		errno = EPERM;
		return NULL;
	}
	/* A file of our own from an earlier run: no looser than 0644. */
	if (st.st_mode & 0022)
		fchmod(fd, st.st_mode & 0755);
open:
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	f = fdopen(fd, "w");
	if (!f) {
		e = errno;
		snprintf(why, whylen, "%s", strerror(e));
		close(fd);
		errno = e;
	}
	return f;
}

int safe_truncate(FILE *f)
{
	struct stat st;

	if (fflush(f) || fstat(fileno(f), &st))
		return -errno;
	if (is_null_device(&st))
		return 0;
	if (ftruncate(fileno(f), 0) || fseek(f, 0, SEEK_SET))
		return -errno;
	return 0;
}

FILE *safe_sibling(const char *path, char *tmp, size_t tmplen)
{
	const char *base = strrchr(path, '/');
	mode_t mask;
	FILE *f;
	int fd, n;

	base = base ? base + 1 : path;
	n = snprintf(tmp, tmplen, "%.*s.%s.XXXXXX", (int)(base - path), path, base);
	if (n < 0 || (size_t)n >= tmplen) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = mkostemp(tmp, O_CLOEXEC);	/* O_EXCL: never an existing file or link */
	if (fd < 0)
		return NULL;
	mask = umask(0);
	umask(mask);
	fchmod(fd, 0644 & ~mask);
	f = fdopen(fd, "w");
	if (!f) {
		unlink(tmp);
		close(fd);
	}
	return f;
}

int safe_replace(FILE *f, const char *tmp, const char *path)
{
	int err = 0;

	if (fclose(f))
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static int stdout_closed;

void safe_std_fds(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lowest free number: this one (no /dev/null: nothing to do). */
		if (open("/dev/null", O_RDWR) < 0)
			return;
		if (fd == STDOUT_FILENO)
			stdout_closed = 1;
	}
}

int safe_stdout_closed(void)
{
	return stdout_closed;
}
