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
/* First line of a small file, trimmed; NULL on failure (errno set). */
char *sysroot_read_line(const char *abs);
bool sysroot_exists(const char *abs);
bool sysroot_is_dir(const char *abs);
int sysroot_stat(const char *abs, struct stat *st);
int sysroot_lstat(const char *abs, struct stat *st);
/* readlink, result as seen from inside the root; returns malloc'd text or NULL. */
char *sysroot_readlink(const char *abs);
/* Resolves symlinks inside the root (at most SYSROOT_MAX_LINKS, loops detected). Returns malloc'd
 * absolute path inside the root, or NULL with errno (ENOENT dangling, ELOOP loop or too deep). */
char *sysroot_realpath(const char *abs);
DIR *sysroot_opendir(const char *abs);
int sysroot_access(const char *abs, int mode);
#endif
#ifndef GPUVET_SYSROOT_CHECKED
#define GPUVET_SYSROOT_CHECKED
/* sysroot_set after checking that dir is a directory; prints the error and returns false. */
bool sysroot_set_checked(const char *dir);
#endif
