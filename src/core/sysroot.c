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

static const sys_ops real_ops = {real_open, read, close, stat, lstat, readlink, opendir, access};
sys_ops gv_sys = {real_open, read, close, stat, lstat, readlink, opendir, access};

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

const char *sysroot_path(char *buf, size_t size, const char *abs)
{
	snprintf(buf, size, "%s%s%s", root_dir, (abs[0] == '/') ? "" : "/", abs);
	return buf;
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

static int read_file(const char *abs, size_t max, char **out, size_t *len, bool *truncated)
{
	char p[PATH_MAX];
	sysroot_path(p, sizeof(p), abs);
	*out = NULL;
	if (len)
		*len = 0;
	if (truncated)
		*truncated = false;
	int fd = gv_sys.open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
		gv_sys.close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	if (S_ISCHR(st.st_mode)) { /* a device node is never read as a text file */
		gv_sys.close(fd);
		return -EINVAL;
	}
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
	return gv_sys.stat(sysroot_path(p, sizeof(p), abs), st);
}

int sysroot_lstat(const char *abs, struct stat *st)
{
	char p[PATH_MAX];
	return gv_sys.lstat(sysroot_path(p, sizeof(p), abs), st);
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
	char p[PATH_MAX], target[PATH_MAX];
	ssize_t n = gv_sys.readlink(sysroot_path(p, sizeof(p), abs), target, sizeof(target) - 1);
	if (n < 0)
		return NULL;
	target[n] = '\0';
	return xstrdup(target);
}

DIR *sysroot_opendir(const char *abs)
{
	char p[PATH_MAX];
	DIR *d = gv_sys.opendir(sysroot_path(p, sizeof(p), abs));
	if (!d) {
		int e = errno;
		note_problem(abs, -e);
		errno = e;
	}
	return d;
}

/* Joins and normalises ".", ".." and "//" in an absolute path, in place. */
static void normalize(char *path)
{
	char out[PATH_MAX];
	size_t o = 0;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 1 && p[0] == '.') {
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else if (o + n + 2 < sizeof(out)) {
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	memcpy(path, out, o + 1);
}

char *sysroot_realpath(const char *abs)
{
	char cur[PATH_MAX];
	str_copy(cur, sizeof(cur), abs);
	normalize(cur);
	/* Walk component by component so that links are resolved inside the root. */
	for (int hops = 0; hops < 40; hops++) {
		char prefix[PATH_MAX];
		bool changed = false;
		size_t i = 1, len = strlen(cur);
		while (i <= len) {
			if (cur[i] == '/' || cur[i] == '\0') {
				memcpy(prefix, cur, i);
				prefix[i] = '\0';
				struct stat st;
				if (sysroot_lstat(prefix, &st) != 0) {
					errno = ENOENT;
					return NULL;
				}
				if (S_ISLNK(st.st_mode)) {
					char *t = sysroot_readlink(prefix);
					if (!t) {
						errno = ENOENT;
						return NULL;
					}
					char next[PATH_MAX];
					if (t[0] == '/') {
						snprintf(next, sizeof(next), "%s%s", t, cur + i);
					} else {
						char *slash = strrchr(prefix, '/');
						*slash = '\0';
						snprintf(next, sizeof(next), "%s/%s%s", prefix, t, cur + i);
					}
					free(t);
					str_copy(cur, sizeof(cur), next);
					normalize(cur);
					changed = true;
					break;
				}
			}
			i++;
		}
		if (!changed)
			return xstrdup(cur);
	}
	errno = ELOOP;
	return NULL;
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
