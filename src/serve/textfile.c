#include "serve/textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int textfile_write(const char *dir, const char *name, const char *data, size_t len, char *err, size_t errsize)
{
	char tmp[4096], dst[4096];
	if (snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= (int)sizeof(dst) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld", dir, name, (long)getpid()) >= (int)sizeof(tmp)) {
		snprintf(err, errsize, "path too long: %s", dir);
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		snprintf(err, errsize, "cannot create %s: %s", tmp, strerror(errno));
		return -1;
	}
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errsize, "cannot write %s: %s", tmp, n < 0 ? strerror(errno) : "short write");
			close(fd);
			unlink(tmp);
			return -1;
		}
		off += (size_t)n;
	}
	/* the data must be on disk before the name points at it, or a crash leaves an empty file */
	int sync_rc = fsync(fd), sync_errno = errno;
	int close_rc = close(fd);
	if (sync_rc != 0 || close_rc != 0) {
		snprintf(err, errsize, "cannot write %s: %s", tmp, strerror(sync_rc != 0 ? sync_errno : errno));
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, dst) != 0) {
		snprintf(err, errsize, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}
