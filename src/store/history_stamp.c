/* The verified stamp beside a history file (history_stamp.h). One line after a header line:
 *   gpuvet history stamp 1
 *   DEV INO SIZE MTIME_S MTIME_NS CTIME_S CTIME_NS  WAL: the same seven or -  CHECKED_AT
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

/* A hot journal: a rollback-mode writer (the schema's first transaction) killed midway. */
static bool journal_pending(const char *path)
{
	char *side = xasprintf("%s-journal", path);
	struct stat st;
	bool pending = stat(side, &st) == 0 && st.st_size > 0;
	free(side);
	return pending;
}

static void file_fields(strbuf *sb, const struct stat *st)
{
	sb_addf(sb, "%llu %llu %lld %lld %ld %lld %ld", (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
		(long long)st->st_size, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
		st->st_ctim.tv_nsec);
}

/* The stamp's line for path as it is now: the file, its WAL ("-" when there is none; one is
 * left when another gpuvet's connection is still open, and is then part of the state) and the
 * time of the last full check. false when path is not a regular file. */
static bool line_of(const char *path, time_t checked_at, strbuf *sb)
{
	struct stat st, wst;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	file_fields(sb, &st);
	char *wal = xasprintf("%s-wal", path);
	if (stat(wal, &wst) == 0) {
		sb_addc(sb, ' ');
		file_fields(sb, &wst);
	} else {
		sb_add(sb, " -");
	}
	free(wal);
	sb_addf(sb, " %lld\n", (long long)checked_at);
	return true;
}

bool history_stamp_current(const char *path, time_t now, time_t *checked_at)
{
	*checked_at = 0;
	if (history_corruption_seen() || journal_pending(path))
		return false;
	char *sp = stamp_path(path);
	int fd = open(sp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	free(sp);
	if (fd < 0)
		return false;
	struct stat sst;
	char buf[512];
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
	if (!last || sscanf(last + 1, "%lld", &at) != 1 || at > (long long)now || (long long)now - at >= HISTORY_RECHECK_SECONDS)
		return false;
	strbuf want;
	sb_init(&want);
	bool same = line_of(path, (time_t)at, &want) && strcmp(line, want.buf) == 0;
	sb_free(&want);
	if (same)
		*checked_at = (time_t)at;
	return same;
}

void history_stamp_remove(const char *path)
{
	char *sp = stamp_path(path);
	unlink(sp);
	free(sp);
}

void history_stamp_write(const char *path, time_t checked_at)
{
	strbuf line;
	sb_init(&line);
	if (history_corruption_seen() || journal_pending(path) || !line_of(path, checked_at, &line)) {
		sb_free(&line);
		history_stamp_remove(path);
		return;
	}
	char *sp = stamp_path(path);
	char *tmp = xasprintf("%s.%ld", sp, (long)getpid());
	/* a new name of our own (O_EXCL, no link followed), renamed over the stamp: a reader sees the
	 * old stamp or the new one; no fsync, since a stamp lost to a crash only costs one full check */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool ok = fd >= 0;
	if (ok) {
		size_t hl = sizeof(header) - 1;
		ok = write(fd, header, hl) == (ssize_t)hl && write(fd, line.buf, line.len) == (ssize_t)line.len;
		ok = close(fd) == 0 && ok;
	}
	if (ok)
		ok = rename(tmp, sp) == 0;
	if (!ok) {
		if (fd >= 0)
			unlink(tmp);
		unlink(sp); /* stale now in any case */
	}
	sb_free(&line);
	free(tmp);
	free(sp);
}
