/*
 * Storing a finished run from a command (check, bench, tune, watch --record) in the history, the
 * same way everywhere: a failure is a warning on stderr and never changes the command's exit code.
 *
 *	if (history_wanted(no_history_opt)) {
 *		hist_run *r = history_run_begin(HIST_BENCH, argc, argv);
 *		... add context and results (store/history.h) ...
 *		history_record(db_opt, r);  // db_opt: the command's --db, or NULL
 *	}
 */
#ifndef GPUVET_CMD_HISTORY_RECORD_H
#define GPUVET_CMD_HISTORY_RECORD_H
#include <stdbool.h>

#include "store/history.h"

/* False when --no-history was given (no_history_opt) or GPUVET_NO_HISTORY is set to a non-empty
 * value other than "0". */
bool history_wanted(bool no_history_opt);
/* Flushes stdout (the report goes first) and ignores SIGXFSZ (a file-size limit is a failed write,
 * not a killed command); adds the --root in use (meta "root"), writes r in one transaction, frees
 * r. Returns the run id, or 0 after a warning ("gpuvet: warning: run not stored in the history: ...") on failure. */
long long history_record(const char *db_path, hist_run *r);
/* " (a file-size limit is set: ulimit -f N)" when one is (SQLite's "disk I/O error" for EFBIG,
 * even to read), else "": for the messages of a history that cannot be opened or written. */
const char *history_limit_hint(char *buf, size_t size);
#endif
