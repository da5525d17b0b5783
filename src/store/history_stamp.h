/*
 * The verified stamp beside a history file (PATH-verified): the file's identity and times as the
 * last gpuvet writer left it, and when its whole content was last checked (PRAGMA quick_check).
 *
 * Why: a writer checks the file before it writes (store/history.c), and quick_check reads every
 * page: 0.3 s per 57 MiB, so a `gpuvet check --fast` run each minute from cron grew from 16 ms
 * to 0.35 s once its history reached 60 MiB (about ten days of such runs), twice per check (the
 * NVLink comparison's open and the record's). A file whose device, inode, size, mtime and ctime
 * (which no one can set back) are those a verified gpuvet writer left, its WAL's as well (another
 * gpuvet's open connection keeps one), and no hot journal beside it, is that same file: the
 * check is skipped. It still runs at least once a
 * day (HISTORY_RECHECK_SECONDS: damage that changes no time, a bad disk sector, shows up within
 * a day, and SQLite refuses a damaged page it meets before that), after any change made outside
 * gpuvet, after a killed writer, and after a connection that met a damaged page.
 */
#ifndef GPUVET_STORE_HISTORY_STAMP_H
#define GPUVET_STORE_HISTORY_STAMP_H
#include <stdbool.h>
#include <time.h>

#define HISTORY_RECHECK_SECONDS 86400

/* True when path is as the stamp describes and its last full check is under a day old at now;
 * *checked_at gets that check's time. */
bool history_stamp_current(const char *path, time_t now, time_t *checked_at);
/* Records path as it is now, last checked at checked_at. Best effort: a stamp that cannot be
 * written only means the next writer checks the whole file. */
void history_stamp_write(const char *path, time_t checked_at);
void history_stamp_remove(const char *path);
/* Whether SQLite reported a damaged database (SQLITE_CORRUPT, SQLITE_NOTADB) anywhere in this
 * process since it started: no stamp is written after that. */
bool history_corruption_seen(void);
/* Installs the SQLite error log that history_corruption_seen reads; before the first connection. */
void history_stamp_init(void);
#endif
