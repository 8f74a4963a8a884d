// SPDX-License-Identifier: GPL-2.0
/*
 * proc - /proc/PID parsing and locating the CPython runtime in a process.
 *
 * Locating works on the process's own view of its files: each mapped file
 * is opened through /proc/PID/root so a containerised process is inspected
 * with its own libpython, and through /proc/PID/map_files when that path
 * now leads elsewhere (file deleted or replaced by an upgrade, or a hostile
 * symlink).  Files are opened O_PATH and checked to be regular before they
 * are really opened: opening a mapped device node could have side effects.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hmap.h"
#include "proc.h"
#include "pyelf.h"
#include "util.h"
#include "vdso.h"

#define DELETED_SUFFIX " (deleted)"

/* Candidate ranks, tried in this order. */
enum rank {
	RANK_PYTHON_NAME,	/* python3.13, libpython3.13.so.1.0 */
	RANK_PYTHON_INSIDE,	/* other names containing "python" */
	RANK_EXE,		/* /proc/PID/exe */
	RANK_EXEC,		/* anything else with an executable mapping */
	RANK_NR,
	RANK_SKIP = RANK_NR,
};

/* One mapped file, keyed by (dev, inode): opened and judged at most once. */
struct object {
	uint64_t inode;
	unsigned dev_major, dev_minor;
	uint64_t base, base_end;	/* the mapping of file offset 0 */
	bool has_base, has_exec, deleted;
	char *path;			/* as in maps */
};

struct vma {
	uint64_t start, end;
	bool writable;
};

struct maps {
	struct object *objs;
	size_t nobjs, objcap;
	struct vma *vmas;
	size_t nvmas, vmacap;
};

/* State of one proc_locate_python() call. */
struct locate {
	pid_t pid;
	int rootfd;
	struct maps maps;
	struct stat exe;
	bool exe_ok;
	int access_errno;		/* last EACCES/EPERM met opening a candidate */
	const char *access_path;	/* ... and the file it was met on */
	char old_version[16];		/* version of a file without _PyRuntime */
	const char *old_path;		/* ... and that file */
	char *err;
	size_t errlen;
};

/* ---- /proc/PID/maps lines ---- */

static int parse_hex(const char **pp, uint64_t *val, int maxdigits)
{
	const char *p = *pp;
	uint64_t v = 0;
	int n;

	for (n = 0; isxdigit((unsigned char)p[n]); n++) {
		if (n == maxdigits)
			return -EINVAL;
		v = v << 4 | (uint64_t)(isdigit((unsigned char)p[n]) ?
					p[n] - '0' : (tolower((unsigned char)p[n]) - 'a' + 10));
	}
	if (!n)
		return -EINVAL;
	*val = v;
	*pp = p + n;
	return 0;
}

static int parse_dec(const char **pp, uint64_t *val)
{
	const char *p = *pp;
	uint64_t v = 0, d;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		d = (uint64_t)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*val = v;
	*pp = p;
	return 0;
}

/* Consume @c; never steps past the terminating NUL. */
static int expect(const char **pp, char c)
{
	if (**pp != c)
		return -EINVAL;
	(*pp)++;
	return 0;
}

static int parse_perms(const char **pp, char perms[5])
{
	const char *p = *pp;

	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
		return -EINVAL;
	memcpy(perms, p, 4);
	perms[4] = '\0';
	*pp = p + 4;
	return 0;
}

static int parse_path(const char *p, struct proc_map *m)
{
	size_t len;

	/* The kernel pads to align the path column; the path itself is what follows. */
	while (*p == ' ')
		p++;
	len = strcspn(p, "\n");
	if (p[len] == '\n' && p[len + 1])
		return -EINVAL;
	if (len >= sizeof(m->path))
		return -EINVAL;
	memcpy(m->path, p, len);
	m->path[len] = '\0';
	len = strlen(DELETED_SUFFIX);
	m->deleted = strlen(m->path) > len &&
		     !strcmp(m->path + strlen(m->path) - len, DELETED_SUFFIX);
	return 0;
}

int proc_parse_maps_line(const char *line, struct proc_map *m)
{
	const char *p = line;
	uint64_t major, minor;

	m->path[0] = '\0';
	m->deleted = false;
	if (!p || parse_hex(&p, &m->start, 16) || expect(&p, '-') ||
	    parse_hex(&p, &m->end, 16) || expect(&p, ' ') ||
	    parse_perms(&p, m->perms) || expect(&p, ' ') ||
	    parse_hex(&p, &m->offset, 16) || expect(&p, ' ') ||
	    parse_hex(&p, &major, 8) || expect(&p, ':') ||
	    parse_hex(&p, &minor, 8) || expect(&p, ' ') ||
	    parse_dec(&p, &m->inode))
		return -EINVAL;
	if (m->start >= m->end)
		return -EINVAL;
	m->dev_major = (unsigned)major;
	m->dev_minor = (unsigned)minor;
	if (*p != ' ' && *p != '\n' && *p != '\0')
		return -EINVAL;
	return parse_path(p, m);
}

bool proc_map_has_file(const struct proc_map *m)
{
	return m->path[0] == '/' || vdso_mapping(m);
}

int proc_map_file(pid_t pid, const struct proc_map *m, char *buf, size_t len)
{
	if (m->path[0] != '/') {
		if (!vdso_mapping(m))
			return -1;
		snprintf(buf, len, "%s", vdso_path());
		return 0;
	}
	snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
	if (access(buf, R_OK))
		snprintf(buf, len, "/proc/%d/root%s", (int)pid, m->path);
	return 0;
}

/* ---- small /proc files ---- */

/* Read a small file whole, NUL-terminated; bytes read or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n, total = 0;
	int fd, saved;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)total < len - 1) {
		n = read(fd, buf + total, len - 1 - (size_t)total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			close(fd);
			return -saved;
		}
		if (!n)
			break;
		total += n;
	}
	close(fd);
	buf[total] = '\0';
	return total;
}

/*
 * The one reader of /proc/PID/stat's fields. comm (field 2) may hold
 * spaces and ')': the fields after it start after the last ')'.
 */
int proc_parse_stat(const char *buf, struct proc_stat *st)
{
	const char *p = buf ? strrchr(buf, ')') : NULL;
	int field;

	*st = (struct proc_stat){ 0 };
	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	p += 2;				/* field 3, state */
	st->state = *p;
	if (sscanf(p, "%*c %d", &st->ppid) != 1)
		st->ppid = 0;
	for (field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return 0;
		p++;
		if (field + 1 == 14 || field + 1 == 15)	/* utime, stime */
			st->cpu_ticks += strtoull(p, NULL, 10);
	}
	if (isdigit((unsigned char)*p))
		st->start_time = strtoull(p, NULL, 10);
	return 0;
}

int proc_read_stat(pid_t pid, pid_t tid, struct proc_stat *st)
{
	char path[96], buf[1024];

	*st = (struct proc_stat){ 0 };
	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -ENOENT;
	return proc_parse_stat(buf, st);
}

uint64_t proc_start_time(pid_t pid)
{
	struct proc_stat st;

	if (pid <= 0 || proc_read_stat(pid, 0, &st))
		return 0;
	return st.start_time;
}

/* Exited, reaped or not: a zombie keeps /proc/PID but has no mappings. */
bool proc_gone(pid_t pid)
{
	struct proc_stat st;
	int ret = proc_read_stat(pid, 0, &st);

	if (ret == -ENOENT)
		return true;
	return !ret && (st.state == 'Z' || st.state == 'X');
}

ssize_t proc_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	return read_small(path, buf, len);
}

int proc_exists(pid_t pid)
{
	char path[64];

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return access(path, F_OK) == 0;
}

int proc_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[96];
	ssize_t n;

	if (!buf || !len)
		return -EINVAL;
	buf[0] = '\0';
	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid,
		 (int)(tid > 0 ? tid : pid));
	n = read_small(path, buf, len);
	if (n < 0) {
		buf[0] = '\0';
		return (int)n;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

char proc_thread_state(pid_t pid, pid_t tid)
{
	struct proc_stat st;
	int ret = proc_read_stat(pid, tid, &st);

	if (ret == -ENOENT)
		return 0;
	return ret ? '?' : st.state;
}

int proc_parse_nspid(const char *status, uint32_t *global, uint32_t *inner)
{
	const char *p = strstr(status, "\nNSpid:");
	uint64_t v;
	int n = 0;

	if (!p)
		return -EINVAL;
	p += strlen("\nNSpid:");
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (parse_dec(&p, &v) || !v || v > UINT32_MAX)
			break;
		if (!n++)
			*global = (uint32_t)v;
		*inner = (uint32_t)v;
	}
	return n ? 0 : -EINVAL;
}

static int by_inner(const void *a, const void *b)
{
	const struct proc_nstid *x = a, *y = b;

	return (x->inner > y->inner) - (x->inner < y->inner);
}

int proc_ns_tids(pid_t pid, struct proc_nstid *out, int max)
{
	char path[64], buf[4096];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (n < max && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/status", (int)pid, de->d_name);
		if (read_small(path, buf, sizeof(buf)) > 0 &&
		    !proc_parse_nspid(buf, &out[n].global, &out[n].inner))
			n++;
	}
	closedir(d);
	qsort(out, (size_t)n, sizeof(*out), by_inner);
	return n;
}

uint32_t proc_ns_tid_global(const struct proc_nstid *map, int n, uint32_t inner)
{
	struct proc_nstid key = { .inner = inner }, *e;

	e = bsearch(&key, map, (size_t)(n > 0 ? n : 0), sizeof(*map), by_inner);
	return e ? e->global : 0;
}

static pid_t parent_of(pid_t pid)
{
	struct proc_stat st;

	proc_read_stat(pid, 0, &st);
	return st.ppid;
}

static int is_root(pid_t pid, const pid_t *roots, int nroots)
{
	int i;

	for (i = 0; i < nroots; i++)
		if (roots[i] == pid)
			return 1;
	return 0;
}

int proc_each_pid(void (*fn)(void *ctx, pid_t pid), void *ctx)
{
	DIR *dir = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!dir)
		return -errno;
	while ((e = readdir(dir))) {
		unsigned long pid;
		char *end;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = strtoul(e->d_name, &end, 10);
		if (*end || !pid || pid > INT32_MAX)
			continue;
		fn(ctx, (pid_t)pid);
		n++;
	}
	closedir(dir);
	return n;
}

struct descendants {
	const pid_t *roots;
	int nroots, n;
	void (*fn)(void *ctx, pid_t pid);
	void *ctx;
};

/* One /proc entry: a descendant if a root is up its chain of parents. */
static void if_descendant(void *ctx, pid_t pid)
{
	struct descendants *d = ctx;
	pid_t up = pid;
	int depth;

	if (is_root(pid, d->roots, d->nroots))
		return;
	for (depth = 0; depth < 64 && up > 1; depth++) {
		up = parent_of(up);
		if (is_root(up, d->roots, d->nroots)) {
			d->fn(d->ctx, pid);
			d->n++;
			return;
		}
	}
}

int proc_each_descendant(const pid_t *roots, int nroots, void (*fn)(void *ctx, pid_t pid),
			 void *ctx)
{
	struct descendants d = { roots, nroots, 0, fn, ctx };
	int ret = proc_each_pid(if_descendant, &d);

	return ret < 0 ? ret : d.n;
}

uint64_t proc_maps_fingerprint(pid_t pid)
{
	char path[64], line[4608];
	uint64_t h = 1469598103934665603ULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');

		if (file)
			h = (h ^ hash_bytes(file, strlen(file))) * 1099511628211ULL;
	}
	fclose(f);
	return h | 1;
}

pid_t proc_tgid(pid_t tid)
{
	char path[64], buf[1024], *p;

	if (tid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "\nTgid:");
	return p ? (pid_t)strtol(p + 6, NULL, 10) : -1;
}

/* ---- the process's mappings, grouped by file ---- */

static void maps_free(struct maps *mp)
{
	size_t i;

	for (i = 0; i < mp->nobjs; i++)
		free(mp->objs[i].path);
	free(mp->objs);
	free(mp->vmas);
	memset(mp, 0, sizeof(*mp));
}

static struct object *find_object(struct maps *mp, const struct proc_map *m)
{
	size_t i;

	for (i = 0; i < mp->nobjs; i++) {
		struct object *o = &mp->objs[i];

		if (o->inode == m->inode && o->dev_major == m->dev_major &&
		    o->dev_minor == m->dev_minor)
			return o;
	}
	return NULL;
}

static struct object *add_object(struct maps *mp, const struct proc_map *m)
{
	struct object *o;

	if (array_grow(&mp->objs, &mp->objcap, mp->nobjs + 1, sizeof(*mp->objs), 64)) {
		errno = ENOMEM;
		return NULL;
	}
	o = &mp->objs[mp->nobjs];
	memset(o, 0, sizeof(*o));
	o->path = strdup(m->path);
	if (!o->path)
		return NULL;
	o->inode = m->inode;
	o->dev_major = m->dev_major;
	o->dev_minor = m->dev_minor;
	o->deleted = m->deleted;
	mp->nobjs++;
	return o;
}

static int add_mapping(struct maps *mp, const struct proc_map *m)
{
	struct object *o;

	if (array_grow(&mp->vmas, &mp->vmacap, mp->nvmas + 1, sizeof(*mp->vmas), 64))
		return -ENOMEM;
	mp->vmas[mp->nvmas++] = (struct vma){ m->start, m->end, m->perms[1] == 'w' };

	/* Only real files can hold an interpreter ([vdso], anon_inode:, ...). */
	if (!m->inode || m->path[0] != '/')
		return 0;
	o = find_object(mp, m);
	if (!o)
		o = add_object(mp, m);
	if (!o)
		return -ENOMEM;
	if (m->offset == 0 && !o->has_base) {
		o->base = m->start;
		o->base_end = m->end;
		o->has_base = true;
	}
	if (m->perms[2] == 'x')
		o->has_exec = true;
	return 0;
}

static int errno_to_proc(int e)
{
	if (e == ENOENT || e == ESRCH)
		return PROC_NO_PROCESS;
	if (e == EACCES || e == EPERM)
		return PROC_ACCESS;
	return PROC_ERROR;
}

static int read_maps(struct locate *lc)
{
	struct proc_map *m;
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int ret = PROC_OK, e;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)lc->pid);
	f = fopen(path, "re");
	if (!f) {
		e = errno;
		seterr(lc->err, lc->errlen, "%s: %s", path, strerror(e));
		return errno_to_proc(e);
	}
	/* struct proc_map carries a PATH_MAX buffer: keep it off the stack. */
	m = malloc(sizeof(*m));
	if (!m) {
		fclose(f);
		seterr(lc->err, lc->errlen, "out of memory");
		return PROC_ERROR;
	}
	errno = 0;
	while (getline(&line, &cap, f) > 0) {
		if (proc_parse_maps_line(line, m))
			continue;
		if (add_mapping(&lc->maps, m)) {
			seterr(lc->err, lc->errlen, "out of memory");
			ret = PROC_ERROR;
			break;
		}
	}
	/* A process that exits while we read makes read() fail with ESRCH. */
	if (ret == PROC_OK && ferror(f)) {
		e = errno;
		seterr(lc->err, lc->errlen, "%s: %s", path, strerror(e));
		ret = errno_to_proc(e);
	}
	free(line);
	free(m);
	fclose(f);
	return ret;
}

/* ---- candidates ---- */

static enum rank object_rank(const struct locate *lc, const struct object *o)
{
	const char *base = base_name(o->path);

	/* Without the offset-0 mapping there is no bias to compute. */
	if (!o->has_base)
		return RANK_SKIP;
	if (!strncmp(base, "python", 6) || !strncmp(base, "libpython", 9))
		return RANK_PYTHON_NAME;
	if (strstr(base, "python"))
		return RANK_PYTHON_INSIDE;
	/*
	 * Overlayfs may show maps a different device than stat() does, so an
	 * inode match alone is enough here: this only orders the candidates.
	 */
	if (lc->exe_ok && lc->exe.st_ino == o->inode)
		return RANK_EXE;
	if (o->has_exec)
		return RANK_EXEC;
	return RANK_SKIP;
}

static bool same_file(const struct stat *st, const struct object *o, bool *dev_ok)
{
	if (!S_ISREG(st->st_mode) || st->st_ino != o->inode)
		return false;
	*dev_ok = major(st->st_dev) == o->dev_major &&
		  minor(st->st_dev) == o->dev_minor;
	return true;
}

/* O_PATH lookup of @path inside the process's root directory. */
static int open_in_root(int rootfd, const char *path)
{
	static bool no_openat2;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		/* Absolute symlinks in the container stay in the container. */
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	const char *rel = path + strspn(path, "/");
	int fd;

	if (!no_openat2) {
		fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		no_openat2 = true;	/* kernel < 5.6 or a seccomp filter */
	}
	/* openat() follows absolute symlinks to our root: callers check the inode. */
	return openat(rootfd, rel, O_PATH | O_CLOEXEC);
}

/* The very file mapped at the object's offset-0 mapping, deleted or not. */
static int open_map_files(const struct locate *lc, const struct object *o)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)lc->pid,
		 (unsigned long long)o->base, (unsigned long long)o->base_end);
	return open(path, O_PATH | O_CLOEXEC);
}

/* O_PATH fd of a regular file -> readable fd; consumes @pfd. */
static int reopen_read(int pfd)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	close(pfd);
	return fd;
}

static void note_errno(struct locate *lc, const struct object *o, int e)
{
	if (e != EACCES && e != EPERM)
		return;
	lc->access_errno = e;
	lc->access_path = o->path;
}

/* Readable fd for the object's file, or -1 with errno set. */
static int open_object(struct locate *lc, const struct object *o)
{
	struct stat st;
	bool dev_ok = false, ino_ok = false;
	int pfd = -1, mfd, e = ENOENT;

	if (!o->deleted) {
		pfd = open_in_root(lc->rootfd, o->path);
		if (pfd < 0)
			e = errno;
		else if (!fstat(pfd, &st))
			ino_ok = same_file(&st, o, &dev_ok);
		if (ino_ok && dev_ok)
			return reopen_read(pfd);
	}
	/* The path is gone or names another file: use the mapping itself. */
	mfd = open_map_files(lc, o);
	if (mfd >= 0 && !fstat(mfd, &st) && S_ISREG(st.st_mode)) {
		if (pfd >= 0)
			close(pfd);
		return reopen_read(mfd);
	}
	if (mfd < 0)
		e = errno;
	else
		close(mfd);
	/* Same inode on another st_dev: overlayfs; good enough without map_files. */
	if (ino_ok)
		return reopen_read(pfd);
	if (pfd >= 0)
		close(pfd);
	note_errno(lc, o, e);
	errno = e;
	return -1;
}

static bool in_writable_vma(const struct maps *mp, uint64_t addr)
{
	size_t i;

	for (i = 0; i < mp->nvmas; i++)
		if (mp->vmas[i].writable && addr >= mp->vmas[i].start &&
		    addr < mp->vmas[i].end)
			return true;
	return false;
}

static uint64_t rebase(uint64_t vaddr, uint64_t bias)
{
	return vaddr ? vaddr + bias : 0;
}

/*
 * PROC_OK with @loc filled if this object holds the runtime, else
 * PROC_NOT_PYTHON.  Why a likely candidate failed is worth reporting; why
 * libc has no _PyRuntime is not.
 */
static int try_object(struct locate *lc, const struct object *o,
		      enum rank rank, struct py_location *loc)
{
	struct pyelf_info info;
	char why[128];
	uint64_t bias;
	int fd, ret, e;
	size_t i;

	fd = open_object(lc, o);
	if (fd < 0) {
		e = errno;
		if (rank < RANK_EXEC)
			seterr(lc->err, lc->errlen, "cannot open %s: %s", o->path, strerror(e));
		return PROC_NOT_PYTHON;
	}
	ret = pyelf_inspect_fd(fd, o->path, &info, why, sizeof(why));
	close(fd);
	if (ret < 0 && rank < RANK_EXEC)
		seterr(lc->err, lc->errlen, "%s: %s", o->path, why);
	if (ret == 1 && info.soname_version[0] && !lc->old_version[0]) {
		/* an interpreter too old for _PyRuntime, known by its symbols */
		snprintf(lc->old_version, sizeof(lc->old_version), "%s", info.soname_version);
		lc->old_path = o->path;
	}
	if (ret)
		return PROC_NOT_PYTHON;
	bias = o->base - info.load_vaddr;
	/* _PyRuntime is written at run time: a wrong bias shows up here. */
	if (!in_writable_vma(&lc->maps, info.runtime_vaddr + bias)) {
		seterr(lc->err, lc->errlen, "%s: _PyRuntime at %#llx is not in a writable mapping",
		       o->path, (unsigned long long)(info.runtime_vaddr + bias));
		return PROC_NOT_PYTHON;
	}
	memset(loc, 0, sizeof(*loc));
	loc->bias = bias;
	loc->runtime_addr = info.runtime_vaddr + bias;
	loc->runtime_size = info.runtime_size;
	loc->code_type_addr = rebase(info.code_type_vaddr, bias);
	loc->py_version_addr = rebase(info.py_version_vaddr, bias);
	loc->eval_addr = rebase(info.eval_vaddr, bias);
	loc->eval_size = info.eval_size;
	for (i = 0; i < LAYOUT_SYM_NR; i++)
		loc->sym_addr[i] = rebase(info.sym_vaddr[i], bias);
	snprintf(loc->path, sizeof(loc->path), "%s", o->path);
	snprintf(loc->version_hint, sizeof(loc->version_hint), "%s", info.soname_version);
	return PROC_OK;
}

static int try_candidates(struct locate *lc, struct py_location *loc)
{
	struct maps *mp = &lc->maps;
	enum rank r;
	size_t i;

	for (r = 0; r < RANK_NR; r++) {
		for (i = 0; i < mp->nobjs; i++) {
			if (object_rank(lc, &mp->objs[i]) != r)
				continue;
			if (try_object(lc, &mp->objs[i], r, loc) == PROC_OK)
				return PROC_OK;
		}
	}
	return PROC_NOT_PYTHON;
}

/* No runtime found: an interpreter file's version, to tell an old Python. */
static void version_of_names(const struct locate *lc, struct py_location *loc)
{
	size_t i;

	for (i = 0; i < lc->maps.nobjs && !loc->version_hint[0]; i++) {
		const struct object *o = &lc->maps.objs[i];

		if (object_rank(lc, o) != RANK_PYTHON_NAME)
			continue;
		pyelf_version_from_name(o->path, loc->version_hint, sizeof(loc->version_hint));
		snprintf(loc->path, sizeof(loc->path), "%s", o->path);
	}
	if (!loc->version_hint[0] && lc->old_version[0]) {
		snprintf(loc->version_hint, sizeof(loc->version_hint), "%s", lc->old_version);
		snprintf(loc->path, sizeof(loc->path), "%s", lc->old_path);
	}
}

static int locate_setup(struct locate *lc)
{
	char path[64];
	int e;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)lc->pid);
	lc->rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (lc->rootfd < 0) {
		e = errno;
		seterr(lc->err, lc->errlen, "%s: %s", path, strerror(e));
		return errno_to_proc(e);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)lc->pid);
	lc->exe_ok = stat(path, &lc->exe) == 0;
	return read_maps(lc);
}

int proc_locate_python(pid_t pid, struct py_location *loc, char *err, size_t errlen)
{
	struct locate lc = { .pid = pid, .rootfd = -1, .err = err, .errlen = errlen };
	int ret;

	memset(loc, 0, sizeof(*loc));
	seterr(err, errlen, "no _PyRuntime in any mapped file");
	if (pid <= 0) {
		seterr(err, errlen, "invalid pid %d", (int)pid);
		return PROC_NO_PROCESS;
	}
	ret = locate_setup(&lc);
	if (ret == PROC_OK)
		ret = try_candidates(&lc, loc);
	if (ret == PROC_NOT_PYTHON)
		version_of_names(&lc, loc);
	if (ret == PROC_NOT_PYTHON && proc_gone(pid)) {
		seterr(err, errlen, "process %d exited", (int)pid);
		ret = PROC_NO_PROCESS;
	} else if (ret == PROC_NOT_PYTHON && lc.access_errno) {
		seterr(err, errlen, "cannot open %s: %s", lc.access_path,
		       strerror(lc.access_errno));
		ret = PROC_ACCESS;
	}
	if (ret == PROC_OK && err && errlen)
		err[0] = '\0';
	if (lc.rootfd >= 0)
		close(lc.rootfd);
	maps_free(&lc.maps);
	return ret;
}
