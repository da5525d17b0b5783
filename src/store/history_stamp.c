/* The verified stamp beside a history file (history_stamp.h). One line after a header line:
 *   gpuvet history stamp 1
 *   DEV INO SIZE MTIME_S MTIME_NS CTIME_S CTIME_NS CHECKED_AT
 * Anything else (a torn write, another version, a stamp of another owner) reads as no stamp. */
#include "store/history_stamp.h"

#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

static const char header[] = "gpuvet history stamp 1\n";

static char *stamp_path(const char *path)
{
	return xasprintf("%s-verified", path);
}

static atomic_bool corruption;
static atomic_bool log_installed;

static void on_sqlite_log(void *arg, int code, const char *msg)
{
	(void)arg;
	(void)msg;
	if ((code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB)
		atomic_store(&corruption, true);
}

static void install_log(void)
{
	/* only before SQLite initialises; when something else started it first, no stamp is ever
	 * trusted or written (history_corruption_seen says so) and every writer checks the whole file */
	if (sqlite3_config(SQLITE_CONFIG_LOG, on_sqlite_log, NULL) == SQLITE_OK)
		atomic_store(&log_installed, true);
}

void history_stamp_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, install_log);
}

bool history_corruption_seen(void)
{
	return atomic_load(&corruption) || !atomic_load(&log_installed);
}

/* A side file whose content waits for recovery: a hot journal, or a WAL with frames in it. */
static bool recovery_pending(const char *path)
{
	static const char *const sides[] = {"-journal", "-wal"};
	for (size_t i = 0; i < GV_ARRAY_LEN(sides); i++) {
		char *side = xasprintf("%s%s", path, sides[i]);
		struct stat st;
		bool pending = stat(side, &st) == 0 && st.st_size > 0;
		free(side);
		if (pending)
			return true;
	}
	return false;
}

static void line_of(const struct stat *st, time_t checked_at, char *buf, size_t size)
{
	snprintf(buf, size, "%llu %llu %lld %lld %ld %lld %ld %lld\n", (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino, (long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
		 (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, (long long)checked_at);
}

bool history_stamp_current(const char *path, time_t now, time_t *checked_at)
{
	*checked_at = 0;
	if (history_corruption_seen() || recovery_pending(path))
		return false;
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	char *sp = stamp_path(path);
	int fd = open(sp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	free(sp);
	if (fd < 0)
		return false;
	struct stat sst;
	char buf[256];
	ssize_t n = -1;
	/* only a stamp this user wrote and no one else may change */
	if (fstat(fd, &sst) == 0 && S_ISREG(sst.st_mode) && sst.st_uid == geteuid() && !(sst.st_mode & 022))
		n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	size_t hl = sizeof(header) - 1;
	if ((size_t)n <= hl || memcmp(buf, header, hl) != 0)
		return false;
	const char *line = buf + hl;
	long long at = 0;
	const char *last = strrchr(line, ' ');
	if (!last || sscanf(last + 1, "%lld", &at) != 1)
		return false;
	char want[160];
	line_of(&st, (time_t)at, want, sizeof(want));
	if (strcmp(line, want) != 0 || at > (long long)now || (long long)now - at >= HISTORY_RECHECK_SECONDS)
		return false;
	*checked_at = (time_t)at;
	return true;
}

void history_stamp_remove(const char *path)
{
	char *sp = stamp_path(path);
	unlink(sp);
	free(sp);
}

void history_stamp_write(const char *path, time_t checked_at)
{
	struct stat st;
	if (history_corruption_seen() || recovery_pending(path) || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		history_stamp_remove(path);
		return;
	}
	char line[160];
	line_of(&st, checked_at, line, sizeof(line));
	char *sp = stamp_path(path);
	char *tmp = xasprintf("%s.%ld", sp, (long)getpid());
	/* a new name of our own (O_EXCL, no link followed), renamed over the stamp: a reader sees the
	 * old stamp or the new one; no fsync, since a stamp lost to a crash only costs one full check */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool ok = fd >= 0;
	if (ok) {
		size_t hl = sizeof(header) - 1, ll = strlen(line);
		ok = write(fd, header, hl) == (ssize_t)hl && write(fd, line, ll) == (ssize_t)ll;
		ok = close(fd) == 0 && ok;
	}
	if (ok)
		ok = rename(tmp, sp) == 0;
	if (!ok) {
		if (fd >= 0)
			unlink(tmp);
		unlink(sp); /* stale now in any case */
	}
	free(tmp);
	free(sp);
}
