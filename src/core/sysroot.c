#include "core/sysroot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

static int real_open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	int mode = (flags & O_CREAT) ? va_arg(ap, int) : 0;
	va_end(ap);
	return open(path, flags, mode);
}

static const sys_ops real_ops = {real_open, read, close, stat, lstat, readlink, opendir, access, fstat};
sys_ops gv_sys = {real_open, read, close, stat, lstat, readlink, opendir, access, fstat};

void sysroot_reset_ops(void)
{
	gv_sys = real_ops;
}

static char root_dir[PATH_MAX];

void sysroot_set(const char *dir)
{
	if (!dir || !*dir || strcmp(dir, "/") == 0) {
		root_dir[0] = '\0';
		return;
	}
	str_copy(root_dir, sizeof(root_dir), dir);
	size_t n = strlen(root_dir);
	while (n > 1 && root_dir[n - 1] == '/')
		root_dir[--n] = '\0';
}

const char *sysroot_get(void)
{
	return root_dir;
}

bool sysroot_active(void)
{
	return root_dir[0] != '\0';
}

/* The host path of an in-root path whose links are already resolved (no lookup). */
static const char *host_of(char *buf, size_t size, const char *abs)
{
	snprintf(buf, size, "%s%s%s", root_dir, (abs[0] == '/') ? "" : "/", abs);
	return buf;
}

/*
 * The jail: resolves abs below the root as the kernel resolves it with the root as "/" (what
 * openat2's RESOLVE_IN_ROOT does), one component at a time through gv_sys.lstat and
 * gv_sys.readlink: an absolute link starts again at the root, a relative one from its directory,
 * ".." never climbs above the root, and more than SYSROOT_MAX_LINKS links is ELOOP. With
 * follow_last false the last component is left as it is (lstat, readlink).
 *
 * out receives the in-root path. Returns 0; or -errno of the first component that does not
 * exist (out then holds the resolved prefix and the unresolved rest: for ENOENT and ENOTDIR a path that
 * does not resolve below the root either, so a caller that opens it gets the same error; a glob
 * pattern keeps its wildcards there); or -ELOOP or -ENAMETOOLONG, with out empty.
 */
static int resolve(const char *abs, bool follow_last, char *out, size_t size)
{
	char done[PATH_MAX] = "", todo[PATH_MAX], host[PATH_MAX], target[PATH_MAX + 1]; /* a whole target fits */
	if (strlen(abs) >= sizeof(todo))
		goto too_long;
	str_copy(todo, sizeof(todo), abs);
	size_t dl = 0;
	int links = 0;
	char *t = todo;
	for (;;) {
		while (*t == '/')
			t++;
		if (!*t)
			break;
		char *e = strchr(t, '/');
		size_t n = e ? (size_t)(e - t) : strlen(t);
		char *rest = t + n;
		while (*rest == '/')
			rest++;
		bool last = *rest == '\0';
		if (n == 1 && t[0] == '.') {
			t = rest;
			continue;
		}
		if (n == 2 && t[0] == '.' && t[1] == '.') {
			while (dl > 0 && done[dl - 1] != '/')
				dl--;
			if (dl > 0)
				dl--;
			done[dl] = '\0';
			t = rest;
			continue;
		}
		if (dl + 1 + n >= sizeof(done))
			goto too_long;
		done[dl] = '/';
		memcpy(done + dl + 1, t, n);
		done[dl + 1 + n] = '\0';
		if (last && !follow_last) {
			dl += 1 + n;
			break;
		}
		struct stat st;
		if (gv_sys.lstat(host_of(host, sizeof(host), done), &st) != 0) {
			int err = errno;
			snprintf(out, size, "%s%s%s", done, *rest ? "/" : "", rest);
			return -err;
		}
		if (!S_ISLNK(st.st_mode)) {
			dl += 1 + n;
			t = rest;
			continue;
		}
		if (++links > SYSROOT_MAX_LINKS) {
			if (size)
				out[0] = '\0';
			return -ELOOP;
		}
		ssize_t tl = gv_sys.readlink(host, target, sizeof(target) - 1);
		if (tl < 0) {
			int err = errno;
			snprintf(out, size, "%s%s%s", done, *rest ? "/" : "", rest);
			return -err;
		}
		if ((size_t)tl >= sizeof(target) - 1) /* it may go on: a cut target names another file */
			goto too_long;
		target[tl] = '\0';
		/* the link's target, then what was left after it */
		char next[PATH_MAX];
		if ((size_t)snprintf(next, sizeof(next), "%s%s%s", target, *rest ? "/" : "", rest) >= sizeof(next))
			goto too_long;
		str_copy(todo, sizeof(todo), next);
		t = todo;
		done[dl] = '\0';
		if (target[0] == '/')
			dl = 0, done[0] = '\0'; /* absolute: from the root of the tree, never the host's */
	}
	if (dl == 0)
		str_copy(out, size, "/");
	else if (dl < size)
		str_copy(out, size, done);
	else
		goto too_long;
	return 0;
too_long:
	if (size)
		out[0] = '\0';
	return -ENAMETOOLONG;
}

/* Host path of abs below the root, links resolved in the jail (-errno as resolve). */
static int jail(char *buf, size_t size, const char *abs, bool follow_last)
{
	if (!sysroot_active()) {
		str_copy(buf, size, abs);
		return 0;
	}
	char in[PATH_MAX];
	int rc = resolve(abs, follow_last, in, sizeof(in));
	if (rc < 0 && rc != -ENOENT && rc != -ENOTDIR) {
		/* a loop, an unreadable link: the rest may hold links the kernel would follow to the host */
		if (size)
			buf[0] = '\0'; /* opens nothing */
		return rc;
	}
	host_of(buf, size, in);
	return rc;
}

const char *sysroot_path(char *buf, size_t size, const char *abs)
{
	int rc = jail(buf, size, abs, true);
	if (rc < 0)
		errno = -rc;
	return buf;
}

const char *sysroot_path_nofollow(char *buf, size_t size, const char *abs)
{
	int rc = jail(buf, size, abs, false);
	if (rc < 0)
		errno = -rc;
	return buf;
}

int sysroot_resolve(const char *abs, bool follow_last, char *out, size_t size)
{
	if (!sysroot_active()) {
		str_copy(out, size, abs);
		return 0;
	}
	return resolve(abs, follow_last, out, size);
}

const char *sysroot_strip(const char *host_path)
{
	size_t n = strlen(root_dir);
	if (n && strncmp(host_path, root_dir, n) == 0 && (host_path[n] == '/' || host_path[n] == '\0'))
		return host_path[n] ? host_path + n : "/";
	return host_path;
}

static const struct {
	int e;
	const char *name;
} errno_names[] = {
	{EPERM, "EPERM"},     {ENOENT, "ENOENT"},   {EIO, "EIO"},           {ENXIO, "ENXIO"},
	{EBADF, "EBADF"},     {EAGAIN, "EAGAIN"},   {ENOMEM, "ENOMEM"},     {EACCES, "EACCES"},
	{EFAULT, "EFAULT"},   {EBUSY, "EBUSY"},     {EEXIST, "EEXIST"},     {ENODEV, "ENODEV"},
	{ENOTDIR, "ENOTDIR"}, {EISDIR, "EISDIR"},   {EINVAL, "EINVAL"},     {ENFILE, "ENFILE"},
	{EMFILE, "EMFILE"},   {EFBIG, "EFBIG"},     {ENOSPC, "ENOSPC"},     {ESPIPE, "ESPIPE"},
	{EROFS, "EROFS"},     {ELOOP, "ELOOP"},     {ENAMETOOLONG, "ENAMETOOLONG"},
	{ESTALE, "ESTALE"},   {ETIMEDOUT, "ETIMEDOUT"}, {EOVERFLOW, "EOVERFLOW"}, {ENOTSUP, "ENOTSUP"},
	{EINTR, "EINTR"},
};

const char *sysroot_errno_name(int e)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(errno_names); i++)
		if (errno_names[i].e == e)
			return errno_names[i].name;
	return "EOTHER";
}

int sysroot_errno_parse(const char *name)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(errno_names); i++)
		if (name && strcmp(errno_names[i].name, name) == 0)
			return errno_names[i].e;
	return 0;
}

const char *sysroot_read_problem(const char *abs, int rc, char *buf, size_t size)
{
	int e = rc < 0 ? -rc : rc;
	struct stat st;
	if (e == EISDIR) {
		snprintf(buf, size, "is a directory, not a file");
	} else if (e == EINVAL && abs && sysroot_stat(abs, &st) == 0 && !S_ISREG(st.st_mode)) {
		const char *kind = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket"
				 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device node" : S_ISDIR(st.st_mode) ? "a directory"
				 : "not a regular file";
		snprintf(buf, size, "is %s, not a file", kind);
	} else {
		snprintf(buf, size, "%s (%s)", strerror(e), sysroot_errno_name(e));
	}
	return buf;
}

static pthread_mutex_t problems_lock = PTHREAD_MUTEX_INITIALIZER;
static sysroot_problem problems[SYSROOT_PROBLEMS_MAX];
static size_t nproblems, nproblems_total;

void sysroot_problems_clear(void)
{
	pthread_mutex_lock(&problems_lock);
	nproblems = nproblems_total = 0;
	pthread_mutex_unlock(&problems_lock);
}

size_t sysroot_problems(sysroot_problem *out, size_t max)
{
	pthread_mutex_lock(&problems_lock);
	for (size_t i = 0; i < nproblems && i < max; i++)
		out[i] = problems[i];
	size_t n = nproblems_total;
	pthread_mutex_unlock(&problems_lock);
	return n;
}

/* Notes a path that is there but could not be read (rc -errno); "does not exist" is not noted. */
static void note_problem(const char *abs, int rc)
{
	int e = -rc;
	if (e == ENOENT || e == ENOTDIR || e <= 0)
		return;
	char what[128];
	sysroot_read_problem(abs, rc, what, sizeof(what));
	pthread_mutex_lock(&problems_lock);
	bool seen = false;
	for (size_t i = 0; i < nproblems && !seen; i++)
		seen = strcmp(problems[i].path, abs) == 0;
	if (!seen) {
		nproblems_total++;
		if (nproblems < SYSROOT_PROBLEMS_MAX) {
			sysroot_problem *p = &problems[nproblems++];
			str_copy(p->path, sizeof(p->path), abs);
			str_sanitize(p->path);
			p->err = e;
			str_copy(p->what, sizeof(p->what), what);
		}
	}
	pthread_mutex_unlock(&problems_lock);
}

void sysroot_problem_note(const char *abs, int rc)
{
	note_problem(abs, rc);
}

static int read_file(const char *abs, size_t max, char **out, size_t *len, bool *truncated);

int sysroot_read(const char *abs, size_t max, char **out, size_t *len, bool *truncated)
{
	int rc = read_file(abs, max, out, len, truncated);
	if (rc < 0)
		note_problem(abs, rc);
	return rc;
}

int sysroot_read_may_deny(const char *abs, size_t max, char **out, size_t *len, bool *truncated)
{
	return read_file(abs, max, out, len, truncated);
}

int sysroot_open_regular(const char *abs, struct stat *st)
{
	char p[PATH_MAX];
	int jr = jail(p, sizeof(p), abs, true);
	if (jr < 0)
		return jr;
	int fd = gv_sys.open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (gv_sys.fstat(fd, st) != 0) { /* what it is stays unknown: not read as a file */
		int e = errno;
		gv_sys.close(fd);
		return -e;
	}
	if (!S_ISREG(st->st_mode)) { /* a device node is never read as a text file, nor a FIFO */
		gv_sys.close(fd);
		return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
	}
	return fd;
}

static int read_file(const char *abs, size_t max, char **out, size_t *len, bool *truncated)
{
	*out = NULL;
	if (len)
		*len = 0;
	if (truncated)
		*truncated = false;
	struct stat st;
	int fd = sysroot_open_regular(abs, &st);
	if (fd < 0)
		return fd;
	size_t cap = 4096 < max + 1 ? 4096 : max + 1, n = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (n == cap - 1) {
			if (cap - 1 >= max)
				break;
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			buf = xrealloc(buf, cap);
		}
		ssize_t r = gv_sys.read(fd, buf + n, cap - 1 - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			gv_sys.close(fd);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n >= max && truncated) {
		char c;
		*truncated = gv_sys.read(fd, &c, 1) > 0;
	}
	gv_sys.close(fd);
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

char *sysroot_read_line(const char *abs)
{
	char *buf;
	int rc = sysroot_read(abs, 4096, &buf, NULL, NULL);
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	char *t = str_trim(buf);
	char *line = xstrdup(t);
	free(buf);
	str_sanitize(line);
	return line;
}

int sysroot_stat(const char *abs, struct stat *st)
{
	char p[PATH_MAX];
	int jr = jail(p, sizeof(p), abs, true);
	if (jr < 0) {
		errno = -jr;
		return -1;
	}
	return gv_sys.stat(p, st);
}

int sysroot_lstat(const char *abs, struct stat *st)
{
	char p[PATH_MAX];
	int jr = jail(p, sizeof(p), abs, false);
	if (jr < 0) {
		errno = -jr;
		return -1;
	}
	return gv_sys.lstat(p, st);
}

bool sysroot_exists(const char *abs)
{
	struct stat st;
	return sysroot_stat(abs, &st) == 0;
}

bool sysroot_is_dir(const char *abs)
{
	struct stat st;
	return sysroot_stat(abs, &st) == 0 && S_ISDIR(st.st_mode);
}

bool sysroot_is_regular(const char *abs)
{
	struct stat st;
	return sysroot_stat(abs, &st) == 0 && S_ISREG(st.st_mode);
}

char *sysroot_readlink(const char *abs)
{
	char p[PATH_MAX], target[PATH_MAX + 1]; /* a whole target is at most PATH_MAX - 1 bytes */
	int jr = jail(p, sizeof(p), abs, false);
	if (jr < 0) {
		errno = -jr;
		return NULL;
	}
	ssize_t n = gv_sys.readlink(p, target, sizeof(target) - 1);
	if (n < 0)
		return NULL;
	if ((size_t)n >= sizeof(target) - 1) { /* it may go on: a cut target names another file */
		errno = ENAMETOOLONG;
		return NULL;
	}
	target[n] = '\0';
	return xstrdup(target);
}

DIR *sysroot_opendir(const char *abs)
{
	char p[PATH_MAX];
	int jr = jail(p, sizeof(p), abs, true);
	DIR *d = jr < 0 ? NULL : gv_sys.opendir(p);
	if (!d) {
		int e = jr < 0 ? -jr : errno;
		note_problem(abs, -e);
		errno = e;
	}
	return d;
}

int sysroot_access(const char *abs, int mode)
{
	char p[PATH_MAX];
	int jr = jail(p, sizeof(p), abs, true);
	if (jr < 0) {
		errno = -jr;
		return -1;
	}
	return gv_sys.access(p, mode);
}

char *sysroot_realpath(const char *abs)
{
	char out[PATH_MAX];
	int rc = resolve(abs, true, out, sizeof(out));
	if (rc < 0) {
		errno = rc == -ELOOP || rc == -ENAMETOOLONG ? -rc : ENOENT;
		return NULL;
	}
	return xstrdup(out);
}

bool sysroot_set_checked(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "gpuvet: --root %s: %s\n", dir, stat(dir, &st) != 0 ? strerror(errno) : "not a directory");
		return false;
	}
	sysroot_set(dir);
	return true;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int sysroot_list_dir(const char *abs, size_t max, strlist *out)
{
	DIR *d = sysroot_opendir(abs);
	if (!d)
		return -errno;
	size_t first = out->n;
	struct dirent *de;
	while ((de = readdir(d)) && out->n - first < max)
		if (de->d_name[0] != '.')
			sl_push(out, de->d_name);
	closedir(d);
	if (out->n > first)
		qsort(out->v + first, out->n - first, sizeof(char *), name_cmp);
	return 0;
}
