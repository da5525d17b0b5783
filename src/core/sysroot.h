/*
 * File-system access for probes. Every path a probe reads is an absolute path of the machine
 * being examined ("/proc/driver/nvidia/version"); with --root DIR (or GPUVET_ROOT) it is read
 * below DIR instead, so tests can build broken machines as directory trees.
 *
 * The system calls go through an override table (the idea of SQLite's aSyscall), so tests can
 * inject failures (EIO on read, ELOOP on stat) without building special files.
 */
#ifndef GPUVET_SYSROOT_H
#define GPUVET_SYSROOT_H
#include <stdio.h>
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct sys_ops {
	int (*open)(const char *path, int flags, ...);
	ssize_t (*read)(int fd, void *buf, size_t n);
	int (*close)(int fd);
	int (*stat)(const char *path, struct stat *st);
	int (*lstat)(const char *path, struct stat *st);
	ssize_t (*readlink)(const char *path, char *buf, size_t n);
	DIR *(*opendir)(const char *path);
	int (*access)(const char *path, int mode);
	int (*fstat)(int fd, struct stat *st);
} sys_ops;

/* The table in use; tests may replace entries and must restore them. */
extern sys_ops gv_sys;
void sysroot_reset_ops(void);

void sysroot_set(const char *dir); /* NULL or "" or "/" for the real root */
const char *sysroot_get(void);     /* "" when the real root */
bool sysroot_active(void);

/* The root is a jail: every path is resolved below it as if it were "/" (absolute and relative
 * links, ".." that stops at the root), at most this many links per lookup (the kernel's limit). */
#define SYSROOT_MAX_LINKS 40

/* Maps an absolute path of the examined machine to a host path (into buf), its links resolved
 * inside the root. On a loop, an unreadable link or an overlong name buf is "" (which opens
 * nothing) and errno set;
 * for a missing component it is a host path that does not exist either. */
const char *sysroot_path(char *buf, size_t size, const char *abs);
/* The same, leaving the last component as it is (for lstat, readlink, a link's own name). */
const char *sysroot_path_nofollow(char *buf, size_t size, const char *abs);
/* The in-root path that abs resolves to (into out); 0 or -errno (ENOENT, ENOTDIR, ELOOP,
 * ENAMETOOLONG). Without a root, abs itself. */
int sysroot_resolve(const char *abs, bool follow_last, char *out, size_t size);
/* Inverse: strips the root prefix from a host path, for display. */
const char *sysroot_strip(const char *host_path);

/* Reads at most max bytes of a file (the rest is ignored; *truncated set when more existed).
 * Returns 0 and a NUL-terminated malloc'd buffer in *out, or -errno. Never blocks on FIFOs. */
int sysroot_read(const char *abs, size_t max, char **out, size_t *len, bool *truncated);
/* sysroot_read for a file an ordinary user is not expected to read (/proc/1/environ): a failure is
 * not noted among the problems below. */
int sysroot_read_may_deny(const char *abs, size_t max, char **out, size_t *len, bool *truncated);
/* What a failed sysroot_read or sysroot_opendir of abs saw, in words, into buf: "is a directory,
 * not a file", "is a FIFO, not a file", "Permission denied (EACCES)". rc is -errno. */
const char *sysroot_read_problem(const char *abs, int rc, char *buf, size_t size);
/* "EACCES" for EACCES; "errno 123" style names are never returned: unknown values give "EOTHER". */
const char *sysroot_errno_name(int e);
int sysroot_errno_parse(const char *name); /* 0 when unknown */

/* Evidence of what could not be seen: every sysroot_read and sysroot_opendir that finds something
 * at a path but cannot read it (any failure but ENOENT and ENOTDIR) is noted, once per path, so
 * that an unreadable tree is reported as such and never taken for an empty one. Thread-safe;
 * at most SYSROOT_PROBLEMS_MAX paths are kept (the count goes on). */
#define SYSROOT_PROBLEMS_MAX 64
typedef struct sysroot_problem {
	char path[PATH_MAX]; /* inside the root: every path that can be opened fits whole */
	int err;        /* errno */
	char what[128]; /* sysroot_read_problem's words */
} sysroot_problem;
void sysroot_problems_clear(void);
/* Notes a problem seen elsewhere (a probe's supervised child, core/child.h); rc is -errno. */
void sysroot_problem_note(const char *abs, int rc);
/* Copies the problems noted so far into out (up to max); returns how many were noted in all. */
size_t sysroot_problems(sysroot_problem *out, size_t max);

/* Opens a regular file below the root for reading (O_NONBLOCK: a FIFO or a device cannot block
 * the open): the fd, with its fstat in *st; else -errno: -EISDIR for a directory, -EINVAL for
 * anything else that is not a regular file (a device node, a FIFO is never read as a file). */
int sysroot_open_regular(const char *abs, struct stat *st);
/* First line of a small file, trimmed; NULL on failure (errno set). */
char *sysroot_read_line(const char *abs);
bool sysroot_exists(const char *abs);
bool sysroot_is_dir(const char *abs);
bool sysroot_is_regular(const char *abs); /* a regular file (after links) */
int sysroot_stat(const char *abs, struct stat *st);
int sysroot_lstat(const char *abs, struct stat *st);
/* readlink, result as seen from inside the root; returns malloc'd text or NULL. */
char *sysroot_readlink(const char *abs);
/* Resolves symlinks inside the root (at most SYSROOT_MAX_LINKS, loops detected). Returns malloc'd
 * absolute path inside the root, or NULL with errno (ENOENT dangling, ELOOP loop or too deep). */
char *sysroot_realpath(const char *abs);
DIR *sysroot_opendir(const char *abs);
struct strlist;
/* The names in a directory, without "." entries (those starting with a dot), sorted, at most
 * max of them, appended to out. Returns 0, or -errno when the directory cannot be opened. */
int sysroot_list_dir(const char *abs, size_t max, struct strlist *out);
int sysroot_access(const char *abs, int mode);
#endif
#ifndef GPUVET_SYSROOT_CHECKED
#define GPUVET_SYSROOT_CHECKED
/* sysroot_set after checking that dir is a directory; prints the error and returns false. */
bool sysroot_set_checked(const char *dir);
#endif
