/*
 * The history store: finding the file, refusing files that are not ours, creating and migrating
 * the schema. Nothing is written to a file until it has been checked twice: its first bytes
 * (the SQLite header, gpuvet's application_id) and then, through a read-only connection, the
 * application_id, the schema version and PRAGMA quick_check.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/history_internal.h"

#define BUSY_TIMEOUT_MS 5000

static const char untouched[] = "gpuvet leaves it untouched: choose another file with --db or move it aside";

char *hist_db_error(const history *h, const char *what)
{
	return xasprintf("%s: %s (%s)", what, h && h->db ? sqlite3_errmsg(h->db) : "no database",
			 h && h->path ? h->path : "?");
}

static void set_err(char **err, char *msg)
{
	if (err) {
		free(*err);
		*err = msg;
	} else {
		free(msg);
	}
}

bool hist_exec(history *h, const char *sql, char **err)
{
	char *msg = NULL;
	if (sqlite3_exec(h->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		set_err(err, xasprintf("%s (%s)", msg ? msg : sqlite3_errmsg(h->db), h->path));
		sqlite3_free(msg);
		return false;
	}
	return true;
}

sqlite3_stmt *hist_prepare(history *h, const char *sql, char **err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
		set_err(err, hist_db_error(h, "cannot prepare a query"));
		return NULL;
	}
	return st;
}

const char *hist_kind_name(hist_kind k)
{
	static const char *const names[] = {"check", "bench", "tune", "watch"};
	return (unsigned)k < GV_ARRAY_LEN(names) ? names[k] : "check";
}

bool hist_kind_parse(const char *s, hist_kind *out)
{
	for (int k = HIST_CHECK; k <= HIST_WATCH; k++)
		if (s && strcmp(s, hist_kind_name((hist_kind)k)) == 0) {
			*out = (hist_kind)k;
			return true;
		}
	return false;
}

char *history_default_path(const char *explicit_path)
{
	if (explicit_path && *explicit_path)
		return xstrdup(explicit_path);
	const char *env = getenv("GPUVET_DB");
	if (env && *env)
		return xstrdup(env);
	/* the XDG base directory spec ignores relative values */
	const char *xdg = getenv("XDG_DATA_HOME");
	if (xdg && xdg[0] == '/')
		return xasprintf("%s/gpuvet/history.db", xdg);
	const char *home = getenv("HOME");
	if (home && *home)
		return xasprintf("%s/.local/share/gpuvet/history.db", home);
	return NULL;
}

/* mkdir -p of the directories above path, each new one 0700 (existing ones are left alone). */
static bool make_parent_dirs(const char *path, char **err)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir) {
		free(dir);
		return true;
	}
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
			set_err(err, xasprintf("cannot create directory %s: %s", dir, strerror(errno)));
			free(dir);
			return false;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
	struct stat st;
	bool ok = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
	if (!ok)
		set_err(err, xasprintf("cannot create the history database in %s: not a directory", dir));
	free(dir);
	return ok;
}

static unsigned be32(const unsigned char *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

/* First look, from the raw bytes: *empty for a zero-length file (a new database). */
static bool check_header(const char *path, bool *empty, char **err)
{
	*empty = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		set_err(err, xasprintf("cannot open history database %s: %s", path, strerror(errno)));
		return false;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		set_err(err, xasprintf("history database %s is not a regular file; %s", path, untouched));
		return false;
	}
	unsigned char hdr[100];
	ssize_t n = 0, r;
	while (n < (ssize_t)sizeof(hdr) && (r = read(fd, hdr + n, sizeof(hdr) - (size_t)n)) > 0)
		n += r;
	close(fd);
	if (n == 0) {
		*empty = true;
		return true;
	}
	if (n < (ssize_t)sizeof(hdr) || memcmp(hdr, "SQLite format 3", 16) != 0) {
		set_err(err, xasprintf("%s is not a SQLite database, so not a gpuvet history; %s", path, untouched));
		return false;
	}
	unsigned app = be32(hdr + 68);
	if (app != 0 && app != HISTORY_APPLICATION_ID) {
		set_err(err, xasprintf("%s is a SQLite database of another application (application_id 0x%08x), "
				       "not a gpuvet history; %s", path, app, untouched));
		return false;
	}
	return true;
}

static bool pragma_int(sqlite3 *db, const char *sql, long long *out)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK;
}

static char *corrupt_message(const char *path, const char *detail)
{
	return xasprintf("%s is corrupt (%s); gpuvet leaves it untouched: move it aside (mv '%s' '%s.corrupt') "
			 "and the next run starts a new history", path, detail, path, path);
}

/* Above this size the whole-file check would slow every `gpuvet check` (0.3 s per 57 MiB here);
 * bigger files are mostly watch --record samples, so only the tables of runs are checked, and
 * SQLite still refuses (SQLITE_CORRUPT) any damaged page it meets later. */
#define FULL_CHECK_MAX_BYTES (64LL << 20)

static bool quick_check_one(sqlite3 *db, const char *path, const char *sql, char **err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		set_err(err, corrupt_message(path, sqlite3_errmsg(db)));
		sqlite3_finalize(st);
		return false;
	}
	const char *res = (const char *)sqlite3_column_text(st, 0);
	bool ok = res && strcmp(res, "ok") == 0;
	if (!ok) {
		char *detail = xasprintf("quick_check: %s", res ? res : "no answer");
		set_err(err, corrupt_message(path, detail));
		free(detail);
	}
	sqlite3_finalize(st);
	return ok;
}

static bool quick_check(sqlite3 *db, const char *path, char **err)
{
	struct stat st;
	if (stat(path, &st) != 0 || st.st_size <= FULL_CHECK_MAX_BYTES)
		return quick_check_one(db, path, "PRAGMA quick_check", err);
	static const char *const tables[] = {"runs", "run_meta", "gpus", "results", "findings", "baselines"};
	for (size_t i = 0; i < GV_ARRAY_LEN(tables); i++) {
		char sql[64];
		snprintf(sql, sizeof(sql), "PRAGMA quick_check(%s)", tables[i]);
		if (!quick_check_one(db, path, sql, err))
			return false;
	}
	return true;
}

/*
 * Second look, through a read-only connection that cannot write or checkpoint anything:
 * gpuvet's application_id (or a database with no tables at all), a schema this build knows, and
 * with check_integrity PRAGMA quick_check. *fresh: no gpuvet schema yet.
 */
static bool verify(const char *path, bool check_integrity, bool *fresh, long long *version, char **err)
{
	sqlite3 *db = NULL;
	bool ok = false;
	*fresh = false;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		set_err(err, xasprintf("cannot open history database %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory"));
		sqlite3_close(db);
		return false;
	}
	sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
	long long app = 0, tables = 0;
	if (!pragma_int(db, "PRAGMA application_id", &app) || !pragma_int(db, "PRAGMA user_version", version) ||
	    !pragma_int(db, "SELECT count(*) FROM sqlite_master", &tables)) {
		int code = sqlite3_errcode(db);
		if (code == SQLITE_NOTADB)
			set_err(err, xasprintf("%s is not a SQLite database, so not a gpuvet history; %s", path, untouched));
		else if (code == SQLITE_CORRUPT)
			set_err(err, corrupt_message(path, sqlite3_errmsg(db)));
		else
			set_err(err, xasprintf("cannot read history database %s: %s", path, sqlite3_errmsg(db)));
		goto out;
	}
	if (app == 0 && tables == 0) {
		*fresh = true;
		*version = 0;
	} else if (app != HISTORY_APPLICATION_ID) {
		set_err(err, xasprintf("%s is a SQLite database of another application (application_id 0x%08llx, %lld "
				       "schema objects), not a gpuvet history; %s", path, (unsigned long long)app & 0xffffffffu,
				       tables, untouched));
		goto out;
	} else if (*version > HISTORY_SCHEMA_VERSION) {
		set_err(err, xasprintf("%s has history schema version %lld, newer than this gpuvet knows (%d); "
				       "use a newer gpuvet, or another file with --db", path, *version, HISTORY_SCHEMA_VERSION));
		goto out;
	}
	if (check_integrity && !*fresh && !quick_check(db, path, err))
		goto out;
	ok = true;
out:
	sqlite3_close(db);
	return ok;
}

/* Creates or upgrades the schema in one transaction; re-checks inside it, since another process
 * may have done the same meanwhile. */
static bool migrate(history *h, char **err)
{
	if (!hist_exec(h, "BEGIN IMMEDIATE", err))
		return false;
	long long app = 0, version = 0, tables = 0;
	if (!pragma_int(h->db, "PRAGMA application_id", &app) || !pragma_int(h->db, "PRAGMA user_version", &version) ||
	    !pragma_int(h->db, "SELECT count(*) FROM sqlite_master", &tables)) {
		set_err(err, hist_db_error(h, "cannot read the history schema"));
		goto fail;
	}
	if (app == 0 && tables == 0) {
		char sql[64];
		snprintf(sql, sizeof(sql), "PRAGMA application_id = %d", HISTORY_APPLICATION_ID);
		if (!hist_exec(h, sql, err))
			goto fail;
		version = 0;
	} else if (app != HISTORY_APPLICATION_ID || version > HISTORY_SCHEMA_VERSION) {
		set_err(err, xasprintf("%s changed while opening it (application_id 0x%08llx, schema %lld); %s", h->path,
				       (unsigned long long)app & 0xffffffffu, version, untouched));
		goto fail;
	}
	for (long long v = version; v < HISTORY_SCHEMA_VERSION; v++)
		if (!hist_exec(h, history_schema_steps[v], err))
			goto fail;
	if (version < HISTORY_SCHEMA_VERSION) {
		char sql[64];
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", HISTORY_SCHEMA_VERSION);
		if (!hist_exec(h, sql, err))
			goto fail;
	}
	if (!hist_exec(h, "COMMIT", err))
		goto fail;
	return true;
fail:
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return false;
}

/* WAL lets readers and one writer work at once. The schema is first written in rollback mode, so
 * the application_id sits in the main file's header from the start, where check_header sees it. */
static void use_wal(history *h)
{
	sqlite3_stmt *st = hist_prepare(h, "PRAGMA journal_mode", NULL);
	bool wal = st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) &&
		   strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
	sqlite3_finalize(st);
	if (!wal) /* may fail while another process holds the file; rollback mode is still safe */
		sqlite3_exec(h->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
}

history *history_open(const char *path, history_mode mode, char **err)
{
	char *p = history_default_path(path);
	if (!p) {
		set_err(err, xstrdup("no place for the history database: set HOME, XDG_DATA_HOME or GPUVET_DB, or use --db"));
		return NULL;
	}
	struct stat st;
	if (stat(p, &st) != 0) {
		if (errno != ENOENT) {
			set_err(err, xasprintf("cannot open history database %s: %s", p, strerror(errno)));
			goto fail;
		}
		if (mode == HISTORY_READ) {
			set_err(err, xasprintf("no history database at %s yet (gpuvet check, bench and tune record their "
					       "runs there; --db or GPUVET_DB name another)", p));
			goto fail;
		}
		if (!make_parent_dirs(p, err))
			goto fail;
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST) {
			set_err(err, xasprintf("cannot create history database %s: %s", p, strerror(errno)));
			goto fail;
		}
		if (fd >= 0)
			close(fd);
	}
	bool empty, fresh;
	long long version = 0;
	if (!check_header(p, &empty, err))
		goto fail;
	if (!empty && !verify(p, mode == HISTORY_WRITE, &fresh, &version, err))
		goto fail;
	/* an upgrade writes too: only to a sound file */
	if (!empty && mode == HISTORY_READ && !fresh && version < HISTORY_SCHEMA_VERSION &&
	    !verify(p, true, &fresh, &version, err))
		goto fail;
	if (empty)
		fresh = true;

	history *h = xcalloc(1, sizeof(*h));
	h->path = p;
	h->readonly = access(p, W_OK) != 0;
	if (h->readonly && (mode == HISTORY_WRITE || fresh || version < HISTORY_SCHEMA_VERSION)) {
		set_err(err, xasprintf("history database %s is not writable%s", p,
				       mode == HISTORY_WRITE ? "" : " and needs its schema created or upgraded"));
		history_close(h);
		return NULL;
	}
	int flags = h->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
	if (sqlite3_open_v2(p, &h->db, flags, NULL) != SQLITE_OK) {
		set_err(err, hist_db_error(h, "cannot open history database"));
		history_close(h);
		return NULL;
	}
	sqlite3_busy_timeout(h->db, BUSY_TIMEOUT_MS);
	sqlite3_extended_result_codes(h->db, 1);
	if (!hist_exec(h, "PRAGMA foreign_keys = ON", err)) {
		history_close(h);
		return NULL;
	}
	if (!h->readonly) {
		if ((fresh || version < HISTORY_SCHEMA_VERSION) && !migrate(h, err)) {
			history_close(h);
			return NULL;
		}
		use_wal(h);
		/* with WAL, NORMAL loses at most the last commits on power loss, never consistency */
		hist_exec(h, "PRAGMA synchronous = NORMAL", NULL);
	}
	long long v = 0;
	h->schema = pragma_int(h->db, "PRAGMA user_version", &v) ? (int)v : 0;
	return h;
fail:
	free(p);
	return NULL;
}

void history_close(history *h)
{
	if (!h)
		return;
	sqlite3_close(h->db);
	free(h->path);
	free(h);
}

const char *history_path(const history *h)
{
	return h->path;
}

int history_schema_version(const history *h)
{
	return h->schema;
}

char *hist_now_utc(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char buf[40];
	size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%03dZ", (int)(ts.tv_nsec / 1000000));
	return xstrdup(buf);
}

const char *hist_utc_to_local(const char *iso, char *buf, size_t size)
{
	struct tm tm = {0};
	int y, mo, d, hh, mi, ss;
	if (!iso || sscanf(iso, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &hh, &mi, &ss) != 6) {
		str_copy(buf, size, iso ? iso : "");
		return buf;
	}
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = hh;
	tm.tm_min = mi;
	tm.tm_sec = ss;
	time_t t = timegm(&tm);
	struct tm lt;
	if (t == (time_t)-1 || !localtime_r(&t, &lt) || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &lt) == 0)
		str_copy(buf, size, iso);
	return buf;
}
