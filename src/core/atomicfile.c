#include "core/atomicfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

struct atomic_file {
	FILE *fp;
	char *path;
	char *tmp;  /* the temporary file; NULL when the name is written in place (a device) */
	char *dir;
};

/* The process's umask without changing it (umask(2) can only be read by setting it, which would
 * race with other threads creating files): /proc/self/status says it since Linux 4.7. */
static mode_t current_umask(void)
{
	FILE *fp = fopen("/proc/self/status", "re");
	if (fp) {
		char line[256];
		unsigned m;
		while (fgets(line, sizeof(line), fp))
			if (sscanf(line, "Umask: %o", &m) == 1) {
				fclose(fp);
				return (mode_t)(m & 0777);
			}
		fclose(fp);
	}
	mode_t m = umask(022);
	umask(m);
	return m;
}

static void set_err(char *err, size_t errsize, const char *path, const char *why)
{
	if (err && errsize)
		snprintf(err, errsize, "cannot write %s: %s", path, why);
}

static void discard(atomic_file *a)
{
	if (a->fp)
		fclose(a->fp);
	if (a->tmp)
		unlink(a->tmp);
	free(a->path);
	free(a->tmp);
	free(a->dir);
	free(a);
}

/* A name that cannot be replaced is written in place: a character device (/dev/null, a tty). */
static atomic_file *open_in_place(atomic_file *a, char *err, size_t errsize)
{
	int fd = open(a->path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || !(a->fp = fdopen(fd, "w"))) {
		set_err(err, errsize, a->path, fd < 0 ? strerror(errno) : "not the device it was a moment ago");
		if (fd >= 0)
			close(fd);
		discard(a);
		return NULL;
	}
	return a;
}

atomic_file *atomic_file_open(const char *path, unsigned mode, char *err, size_t errsize)
{
	/* a file-size limit fails the write (EFBIG, reported) instead of killing the process with the
	 * temporary file left behind */
	signal(SIGXFSZ, SIG_IGN);
	atomic_file *a = xcalloc(1, sizeof(*a));
	a->path = xstrdup(path);
	struct stat st;
	bool exists = lstat(path, &st) == 0;
	if (exists && S_ISLNK(st.st_mode)) {
		set_err(err, errsize, path, "it is a symbolic link, and gpuvet does not write through links: name the "
					    "file itself (or - for standard output)");
		discard(a);
		return NULL;
	}
	if (exists && S_ISCHR(st.st_mode))
		return open_in_place(a, err, errsize);
	mode_t final = exists && S_ISREG(st.st_mode) ? (st.st_mode & 0777) : ((mode_t)mode & 0777 & ~current_umask());

	a->dir = path_dir(path);
	if (!strchr(path, '/')) { /* path_dir returns a bare name whole */
		free(a->dir);
		a->dir = xstrdup(".");
	}
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	/* hidden, not ending like the file (a collector reading *.prom skips it), and within NAME_MAX */
	a->tmp = xasprintf("%s/.%.200s.XXXXXX", a->dir, base);
	int fd = mkostemp(a->tmp, O_CLOEXEC);
	if (fd < 0) {
		char why[PATH_MAX + 128];
		snprintf(why, sizeof(why), "cannot create a temporary file in %s: %s", a->dir, strerror(errno));
		free(a->tmp);
		a->tmp = NULL;
		set_err(err, errsize, path, why);
		discard(a);
		return NULL;
	}
	if (fchmod(fd, final) != 0 || !(a->fp = fdopen(fd, "w"))) {
		set_err(err, errsize, path, strerror(errno));
		close(fd);
		discard(a);
		return NULL;
	}
	return a;
}

FILE *atomic_file_stream(atomic_file *a)
{
	return a->fp;
}

bool atomic_file_commit(atomic_file *a, char *err, size_t errsize)
{
	if (!a)
		return false;
	bool ok = fflush(a->fp) == 0 && !ferror(a->fp);
	int e = ok ? 0 : (errno ? errno : EIO);
	/* the data must be on the disk before the name points at it, or a crash leaves an empty file */
	if (ok && a->tmp && fsync(fileno(a->fp)) != 0) {
		ok = false;
		e = errno;
	}
	int close_rc = fclose(a->fp);
	a->fp = NULL;
	if (ok && close_rc != 0) {
		ok = false;
		e = errno;
	}
	if (ok && a->tmp && rename(a->tmp, a->path) != 0) {
		ok = false;
		e = errno;
	}
	if (!ok) {
		set_err(err, errsize, a->path, strerror(e));
		discard(a);
		return false;
	}
	if (a->tmp) {
		free(a->tmp);
		a->tmp = NULL; /* renamed: nothing to remove */
		/* the rename itself durable too (best effort: some file systems refuse a directory fsync) */
		int dfd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	discard(a);
	return true;
}

void atomic_file_abort(atomic_file *a)
{
	if (a)
		discard(a);
}

bool atomic_file_write(const char *path, const void *data, size_t len, unsigned mode, char *err, size_t errsize)
{
	atomic_file *a = atomic_file_open(path, mode, err, errsize);
	if (!a)
		return false;
	/* a short write sets the stream's error flag: the commit then fails and removes the temporary file */
	fwrite(data, 1, len, a->fp);
	return atomic_file_commit(a, err, errsize);
}
