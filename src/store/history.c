/*
 * The history store: finding the file, refusing files that are not ours, creating and migrating
 * the schema. Nothing is written to a file until it has been checked twice: its first bytes
 * (the SQLite header, gpuvet's application_id) and then, through the read-write connection whose
 * first read rolls back what a killed writer left, the application_id, the schema version and
 * PRAGMA quick_check. A file of ours that SQLite finds corrupt is moved aside (renamed with a
 * timestamp, never deleted) by a writer; a file that is not ours is never touched. A file that
 * gpuvet may not write is read as it is, when no recovery is pending.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/history_internal.h"
#include "store/history_stamp.h"

#define BUSY_TIMEOUT_MS 5000

static const char untouched[] = "gpuvet leaves it untouched: choose another file with --db or move it aside";

/* SQLite's message, and the system's when an I/O error has one ("disk I/O error: File too large"). */
static char *db_message(sqlite3 *db, const char *msg)
{
	int e = db ? sqlite3_system_errno(db) : 0;
	int code = db ? sqlite3_errcode(db) & 0xff : 0;
	if (e > 0 && (code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CANTOPEN || code == SQLITE_READONLY))
		return xasprintf("%s: %s", msg, strerror(e));
	return xstrdup(msg);
}

char *hist_db_error(const history *h, const char *what)
{
	char *m = db_message(h ? h->db : NULL, h && h->db ? sqlite3_errmsg(h->db) : "no database");
	char *s = xasprintf("%s: %s (%s)", what, m, h && h->path ? h->path : "?");
	free(m);
	return s;
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
		char *m = db_message(h->db, msg ? msg : sqlite3_errmsg(h->db));
		set_err(err, xasprintf("%s (%s)", m, h->path));
		free(m);
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
	static const char *const names[] = {"check", "bench", "tune", "watch", "diag"};
	return (unsigned)k < GV_ARRAY_LEN(names) ? names[k] : "check";
}

bool hist_kind_parse(const char *s, hist_kind *out)
{
	for (int k = HIST_CHECK; k <= HIST_KIND_LAST; k++)
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

static unsigned be32(const unsigned char *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

/* First look, from the raw bytes: *empty for a zero-length file (a new database). Opened
 * non-blocking, so a FIFO put where the file should be is refused instead of waited on. */
static bool check_header(const char *path, bool *empty, unsigned *app_out, char **err)
{
	*empty = false;
	*app_out = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
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
	*app_out = app;
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

/* How verify() judged a file: only VERIFY_CORRUPT (gpuvet's own file, damaged) is ever moved
 * aside; everything else that fails is left as it is. */
typedef enum { VERIFY_OK, VERIFY_FAILED, VERIFY_CORRUPT } verify_result;

static char *corrupt_message(const char *path, const char *detail)
{
	/* quick_check lists every damaged page: the first line says enough */
	int first = (int)strcspn(detail, "\n");
	return xasprintf("%s is corrupt (%.*s%s); the next gpuvet check, bench or tune moves it aside to %s.corrupt-TIME "
			 "and starts a new history", path, first, detail, detail[first] ? " ..." : "", path);
}

/* Above this size the whole-file check would slow every `gpuvet check` (0.3 s per 57 MiB here);
 * bigger files are mostly watch --record samples, so only the tables of runs are checked, and
 * SQLite still refuses (SQLITE_CORRUPT) any damaged page it meets later. */
#define FULL_CHECK_MAX_BYTES (64LL << 20)

static verify_result quick_check_one(sqlite3 *db, const char *path, const char *sql, char **err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		int code = sqlite3_errcode(db) & 0xff;
		bool corrupt = code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
		set_err(err, corrupt ? corrupt_message(path, sqlite3_errmsg(db))
				     : xasprintf("cannot check history database %s: %s", path, sqlite3_errmsg(db)));
		sqlite3_finalize(st);
		return corrupt ? VERIFY_CORRUPT : VERIFY_FAILED;
	}
	const char *res = (const char *)sqlite3_column_text(st, 0);
	bool ok = res && strcmp(res, "ok") == 0;
	if (!ok) {
		char *detail = xasprintf("quick_check: %s", res ? res : "no answer");
		set_err(err, corrupt_message(path, detail));
		free(detail);
	}
	sqlite3_finalize(st);
	return ok ? VERIFY_OK : VERIFY_CORRUPT;
}

static atomic_uint integrity_checks;

unsigned history_integrity_checks(void)
{
	return atomic_load(&integrity_checks);
}

static verify_result quick_check(sqlite3 *db, const char *path, char **err)
{
	atomic_fetch_add(&integrity_checks, 1);
	struct stat st;
	if (stat(path, &st) != 0 || st.st_size <= FULL_CHECK_MAX_BYTES)
		return quick_check_one(db, path, "PRAGMA quick_check", err);
	static const char *const tables[] = {"runs", "run_meta", "gpus", "results", "findings", "baselines"};
	for (size_t i = 0; i < GV_ARRAY_LEN(tables); i++) {
		char sql[64];
		snprintf(sql, sizeof(sql), "PRAGMA quick_check(%s)", tables[i]);
		verify_result v = quick_check_one(db, path, sql, err);
		if (v != VERIFY_OK)
			return v;
	}
	return VERIFY_OK;
}

/* A schema version this build can read or upgrade: 0 (no schema yet) to HISTORY_SCHEMA_VERSION.
 * Only such a version may index history_schema_steps: user_version is any 32-bit number in the
 * file's header, and a negative one (no gpuvet writes it: a bit flip, a crafted file) would run
 * whatever lies before the table as SQL, or crash. */
static bool schema_version_known(long long v)
{
	return v >= 0 && v <= HISTORY_SCHEMA_VERSION;
}

static char *schema_version_message(const char *path, long long v)
{
	if (v > HISTORY_SCHEMA_VERSION)
		return xasprintf("%s has history schema version %lld, newer than this gpuvet knows (%d); "
				 "use a newer gpuvet, or another file with --db", path, v, HISTORY_SCHEMA_VERSION);
	return xasprintf("%s has history schema version %lld, which no gpuvet writes (a damaged or crafted "
			 "header); %s", path, v, untouched);
}

/*
 * Second look, through the connection gpuvet then uses, before anything is written: gpuvet's
 * application_id (or a database with no tables at all), a schema this build knows, and with
 * check_integrity PRAGMA quick_check. Its first read is where SQLite rolls back the hot journal
 * (or recovers the WAL) that a killed writer left, which is why a writable file is never checked
 * through a read-only connection: that one cannot recover and fails for good. *fresh: no gpuvet
 * schema yet.
 */
static verify_result verify(sqlite3 *db, const char *path, bool check_integrity, bool *fresh, long long *version,
			    char **err)
{
	*fresh = false;
	long long app = 0, tables = 0;
	if (!pragma_int(db, "PRAGMA application_id", &app) || !pragma_int(db, "PRAGMA user_version", version) ||
	    !pragma_int(db, "SELECT count(*) FROM sqlite_master", &tables)) {
		int code = sqlite3_errcode(db) & 0xff;
		/* the raw header was gpuvet's or blank: a file SQLite cannot read is ours and damaged */
		if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
			set_err(err, corrupt_message(path, sqlite3_errmsg(db)));
			return VERIFY_CORRUPT;
		}
		set_err(err, xasprintf("cannot read history database %s: %s", path, sqlite3_errmsg(db)));
		return VERIFY_FAILED;
	}
	if (app == 0 && tables == 0) {
		*fresh = true;
		*version = 0;
	} else if (app != HISTORY_APPLICATION_ID) {
		set_err(err, xasprintf("%s is a SQLite database of another application (application_id 0x%08llx, %lld "
				       "schema objects), not a gpuvet history; %s", path, (unsigned long long)app & 0xffffffffu,
				       tables, untouched));
		return VERIFY_FAILED;
	} else if (!schema_version_known(*version)) {
		set_err(err, schema_version_message(path, *version));
		return VERIFY_FAILED;
	}
	if (check_integrity && !*fresh)
		return quick_check(db, path, err);
	return VERIFY_OK;
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
	} else if (app != HISTORY_APPLICATION_ID || !schema_version_known(version)) {
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

static off_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
}

/* A rollback journal or a write-ahead log with content beside the file: a killed writer's (or a
 * live one's) work that the next writer rolls back or checkpoints. Returns the file's name. */
static char *pending_recovery(const char *path)
{
	static const char *const suffixes[] = {"-journal", "-wal"};
	for (size_t i = 0; i < GV_ARRAY_LEN(suffixes); i++) {
		char *side = xasprintf("%s%s", path, suffixes[i]);
		if (file_size(side) > 0)
			return side;
		free(side);
	}
	return NULL;
}

/* Why path cannot be written (the file or its directory, where SQLite creates its journal), or
 * NULL when both can. */
static char *not_writable(const char *path)
{
	if (access(path, W_OK) != 0)
		return xasprintf("the file is not writable (%s)", strerror(errno));
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		str_copy(dir, 2, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	char *why = access(dir, W_OK | X_OK) != 0 ? xasprintf("its directory %s is not writable (%s)", dir, strerror(errno))
						  : NULL;
	free(dir);
	return why;
}

/* "file:" URI of a path for SQLITE_OPEN_URI, with every byte that is not plain percent-encoded. */
static char *file_uri(const char *path, const char *query)
{
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/-._~", *p))
			sb_addc(&sb, (char)*p);
		else
			sb_addf(&sb, "%%%02X", *p);
	}
	sb_addf(&sb, "?%s", query);
	return sb_steal(&sb);
}

/* Moves a damaged history (with its journal or WAL) to PATH.corrupt-YYYYmmddTHHMMSSZ, never over
 * an existing file. Returns the new name, or NULL with *err. */
static char *move_aside(const char *path, char **err)
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	char stamp[32];
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int n = 0; n < 100; n++) {
		char *dest = n ? xasprintf("%s.corrupt-%s-%d", path, stamp, n) : xasprintf("%s.corrupt-%s", path, stamp);
		/* link + unlink: fails instead of replacing a file that exists */
		if (link(path, dest) == 0) {
			static const char *const sides[] = {"-journal", "-wal"};
			for (size_t i = 0; i < GV_ARRAY_LEN(sides); i++) {
				char *from = xasprintf("%s%s", path, sides[i]), *to = xasprintf("%s%s", dest, sides[i]);
				if (file_size(from) >= 0 && link(from, to) == 0)
					unlink(from);
				free(from);
				free(to);
			}
			char *shm = xasprintf("%s-shm", path);
			unlink(shm); /* derived from the WAL; SQLite rebuilds it */
			free(shm);
			history_stamp_remove(path);
			if (unlink(path) != 0) {
				set_err(err, xasprintf("cannot move history database %s aside: %s", path, strerror(errno)));
				free(dest);
				return NULL;
			}
			return dest;
		}
		int e = errno;
		free(dest);
		if (e != EEXIST) {
			set_err(err, xasprintf("cannot move history database %s aside: %s", path, strerror(e)));
			return NULL;
		}
	}
	set_err(err, xasprintf("cannot move history database %s aside: too many earlier copies", path));
	return NULL;
}

/* Creates the file (and its directories) when missing; false with *err. */
static bool create_if_missing(const char *p, history_mode mode, char **err)
{
	struct stat st;
	if (stat(p, &st) == 0)
		return true;
	if (errno != ENOENT) {
		set_err(err, xasprintf("cannot open history database %s: %s", p, strerror(errno)));
		return false;
	}
	if (mode == HISTORY_READ) {
		set_err(err, xasprintf("no history database at %s yet (gpuvet check, bench and tune record their "
				       "runs there; --db or GPUVET_DB name another)", p));
		return false;
	}
	char why[PATH_MAX + 128];
	if (!mkdir_parents(p, why, sizeof(why))) {
		set_err(err, xasprintf("cannot create the history database %s: %s", p, why));
		return false;
	}
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno != EEXIST) {
		set_err(err, xasprintf("cannot create history database %s: %s", p, strerror(errno)));
		return false;
	}
	if (fd >= 0)
		close(fd);
	return true;
}

/* Opens a file that gpuvet may not write (a read-only file or directory): plain reads only, and
 * only when no journal waits for a recovery that would need write access. */
static history *open_readonly(history *h, const char *why, char **err)
{
	char *pending = pending_recovery(h->path);
	int rc;
	if (pending) {
		/* a WAL can still be read when its -shm exists; a hot journal cannot */
		rc = sqlite3_open_v2(h->path, &h->db, SQLITE_OPEN_READONLY, NULL);
	} else {
		/* nothing to recover and no writer can be at work where nobody may write: read the file as it is,
		 * without the -shm file a WAL database would otherwise need to create */
		char *uri = file_uri(h->path, "immutable=1");
		rc = sqlite3_open_v2(uri, &h->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
		free(uri);
	}
	bool fresh = false;
	long long version = 0;
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(h->db, BUSY_TIMEOUT_MS);
		sqlite3_extended_result_codes(h->db, 1);
	}
	verify_result v = rc == SQLITE_OK ? verify(h->db, h->path, false, &fresh, &version, err) : VERIFY_FAILED;
	if (rc != SQLITE_OK)
		set_err(err, hist_db_error(h, "cannot open history database"));
	if (v == VERIFY_OK && (fresh || version < HISTORY_SCHEMA_VERSION)) {
		set_err(err, xasprintf("history database %s needs its schema created or upgraded, which needs write "
				       "access, and %s", h->path, why));
		v = VERIFY_FAILED;
	}
	if (v != VERIFY_OK && pending) {
		set_err(err, xasprintf("history database %s needs recovery after an interrupted run (%s is left behind), "
				       "which needs write access, and %s; run gpuvet once as a user who may write there, "
				       "or copy the files elsewhere and use --db", h->path, pending, why));
	}
	free(pending);
	if (v != VERIFY_OK) {
		history_close(h);
		return NULL;
	}
	h->schema = (int)version;
	return h;
}

history *history_open(const char *path, history_mode mode, char **err)
{
	char *p = history_default_path(path);
	if (!p) {
		set_err(err, xstrdup("no place for the history database: set HOME, XDG_DATA_HOME or GPUVET_DB, or use --db"));
		return NULL;
	}
	history_stamp_init();
	char *notice = NULL;
	for (int attempt = 0;; attempt++) {
		bool empty;
		unsigned header_app;
		if (!create_if_missing(p, mode, err) || !check_header(p, &empty, &header_app, err)) {
			free(notice);
			free(p);
			return NULL;
		}
		history *h = xcalloc(1, sizeof(*h));
		h->path = xstrdup(p);
		h->notice = notice;
		notice = NULL;
		char *why = not_writable(p);
		if (why) {
			h->readonly = true;
			if (mode == HISTORY_WRITE) {
				set_err(err, xasprintf("history database %s cannot be written: %s", p, why));
				free(why);
				history_close(h);
				free(p);
				return NULL;
			}
			h = open_readonly(h, why, err);
			free(why);
			free(p);
			return h;
		}
		/* before the first read, which recovers what a killed writer left and so changes the file */
		time_t now = time(NULL), checked_at = 0;
		bool unchanged = mode == HISTORY_WRITE && !empty && history_stamp_current(p, now, &checked_at);
		if (!unchanged) /* checked whole below, or new */
			checked_at = now;
		if (sqlite3_open_v2(p, &h->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
			set_err(err, hist_db_error(h, "cannot open history database"));
			history_close(h);
			free(p);
			return NULL;
		}
		sqlite3_busy_timeout(h->db, BUSY_TIMEOUT_MS);
		sqlite3_extended_result_codes(h->db, 1);
		bool fresh = true;
		long long version = 0;
		verify_result v =
			empty ? VERIFY_OK : verify(h->db, p, mode == HISTORY_WRITE && !unchanged, &fresh, &version, err);
		/* an upgrade writes too: only to a sound file */
		if (v == VERIFY_OK && !empty && mode == HISTORY_READ && !fresh && version < HISTORY_SCHEMA_VERSION)
			v = verify(h->db, p, true, &fresh, &version, err);
		/* only a file that carries gpuvet's application_id is known to be ours, and moved */
		if (v == VERIFY_CORRUPT && mode == HISTORY_WRITE && attempt == 0 && header_app == HISTORY_APPLICATION_ID) {
			/* damaged beyond what SQLite recovers: keep it for whoever wants to look, start anew */
			sqlite3_close(h->db);
			h->db = NULL;
			char *detail = err && *err ? xstrdup(*err) : xstrdup("corrupt");
			char *dest = move_aside(p, err);
			struct stat gone;
			if (dest)
				notice = xasprintf("%s; moved it aside to %s, a new history starts here", detail, dest);
			else if (stat(p, &gone) != 0 && errno == ENOENT) /* another gpuvet moved it first */
				notice = xasprintf("%s; another gpuvet moved it aside, a new history starts here", detail);
			free(detail);
			free(dest);
			history_close(h);
			if (!notice) {
				free(p);
				return NULL;
			}
			continue;
		}
		if (v == VERIFY_CORRUPT && header_app != HISTORY_APPLICATION_ID)
			set_err(err, xasprintf("%s is a damaged SQLite file without gpuvet's application_id, so maybe not "
					       "a gpuvet history; %s", p, untouched));
		if (v != VERIFY_OK) {
			history_close(h);
			free(p);
			return NULL;
		}
		/* migrations run before foreign keys are on: step 3 rebuilds the runs table, and with
		 * them on, its DROP TABLE would delete every run's rows in the other tables */
		if (((fresh || version < HISTORY_SCHEMA_VERSION) && !migrate(h, err)) ||
		    !hist_exec(h, "PRAGMA foreign_keys = ON", err)) {
			history_close(h);
			free(p);
			return NULL;
		}
		use_wal(h);
		/* with WAL, NORMAL loses at most the last commits on power loss, never consistency */
		hist_exec(h, "PRAGMA synchronous = NORMAL", NULL);
		long long sv = 0;
		h->schema = pragma_int(h->db, "PRAGMA user_version", &sv) ? (int)sv : 0;
		h->stamp_on_close = mode == HISTORY_WRITE;
		h->checked_at = checked_at;
		free(p);
		return h;
	}
}

const char *history_notice(const history *h)
{
	return h ? h->notice : NULL;
}

void history_close(history *h)
{
	if (!h)
		return;
	bool stamp = h->stamp_on_close && h->db;
	/* closed first: the last connection's close moves the WAL into the file */
	sqlite3_close(h->db);
	if (stamp)
		history_stamp_write(h->path, h->checked_at);
	free(h->path);
	free(h->notice);
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
