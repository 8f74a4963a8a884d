// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/*
 * Files safe_open created, until written: a run that ends without writing
 * one (no such process, no samples, a later -o refused) removes it, so it
 * leaves no empty file where there was none. A file that existed is never
 * listed: it keeps what it held.
 */
#define MAX_CREATED 32
static struct created {
	char *path;
	dev_t dev;
	ino_t ino;
	int written;
} created[MAX_CREATED];
static int ncreated;

static void note_created(const char *path, int fd)
{
	struct stat st;
	char *copy;

	if (ncreated == MAX_CREATED || fstat(fd, &st) || !(copy = strdup(path)))
		return;	/* then kept, empty, as before */
	created[ncreated++] = (struct created){ copy, st.st_dev, st.st_ino, 0 };
}

/* The list's entry for this file, or NULL. */
static struct created *find_created(dev_t dev, ino_t ino)
{
	int i;

	for (i = 0; i < ncreated; i++)
		if (created[i].dev == dev && created[i].ino == ino)
			return &created[i];
	return NULL;
}

void safe_remove_unwritten(void)
{
	struct stat st;
	int i;

	for (i = 0; i < ncreated; i++) {
		/* Only the file we made: not one put under its name since. */
		if (!created[i].written && !lstat(created[i].path, &st) &&
		    st.st_dev == created[i].dev && st.st_ino == created[i].ino)
			unlink(created[i].path);
		free(created[i].path);
	}
	ncreated = 0;
}

/* Created (and listed) if path did not exist, else opened as it is. */
static int open_or_create(const char *path)
{
	/* O_NONBLOCK: opening a FIFO that has no reader fails (ENXIO) instead of hanging. */
	int flags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	int fd = open(path, flags | O_CREAT | O_EXCL, 0644);

	if (fd >= 0) {
		note_created(path, fd);
		return fd;
	}
	if (errno != EEXIST)
		return -1;
	fd = open(path, flags);
	/* Gone in between: make it after all. */
	return fd < 0 && errno == ENOENT ? open_or_create(path) : fd;
}

FILE *safe_open(const char *path, char *why, size_t whylen)
{
	struct stat st;
	FILE *f;
	int fd, e;

	fd = open_or_create(path);
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
	struct created *c;
	struct stat st;

	if (fflush(f) || fstat(fileno(f), &st))
		return -errno;
	c = find_created(st.st_dev, st.st_ino);
	if (c)	/* being written: kept */
		c->written = 1;
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

/* path with its directory resolved (links, "..", "./"); path itself if that fails. */
static const char *resolved(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], real[PATH_MAX];

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1,
		 slash ? path : ".");
	if (!realpath(dir, real) ||
	    (size_t)snprintf(buf, len, "%s/%s", real, slash ? slash + 1 : path) >= len)
		return path;
	return buf;
}

int safe_same_file(const char *a, const char *b)
{
	char ra[PATH_MAX + 256], rb[PATH_MAX + 256];
	struct stat sa, sb;

	if (!stat(a, &sa) && !stat(b, &sb))	/* both there: one inode? */
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
		       !is_null_device(&sa);
	return !strcmp(resolved(a, ra, sizeof(ra)), resolved(b, rb, sizeof(rb)));
}
