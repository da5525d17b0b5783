/* Shared between the history store's files (open, write, read); not for other modules. */
#ifndef GPUVET_STORE_HISTORY_INTERNAL_H
#define GPUVET_STORE_HISTORY_INTERNAL_H
#include <sqlite3.h>
#include <time.h>

#include "store/history.h"

struct history {
	sqlite3 *db;
	char *path;
	int schema;
	bool readonly;
	char *notice; /* what opening did that the user must hear (a corrupt file moved aside) */
	/* a writer's connection to a file checked whole at checked_at (or stamped as unchanged since):
	 * closing it leaves the stamp (store/history_stamp.h) */
	bool stamp_on_close;
	time_t checked_at;
};

/* How many whole-file checks (PRAGMA quick_check) this process ran: the tests of the stamp. */
unsigned history_integrity_checks(void);
/* "what: sqlite message (PATH)" as a malloc'd error text. */
char *hist_db_error(const history *h, const char *what);
/* Runs SQL without results; on failure sets *err (may be NULL) and returns false. */
bool hist_exec(history *h, const char *sql, char **err);
/* Prepares or sets *err. */
sqlite3_stmt *hist_prepare(history *h, const char *sql, char **err);

/* Frees n rows and the array (a run being written keeps its GPUs and metadata in these too). */
void hist_gpu_rows_free(hist_gpu_row *v, size_t n);
void hist_meta_rows_free(hist_meta_row *v, size_t n);

/* The schema, one step per version: steps[v-1] takes a database from version v-1 to v. */
extern const char *const history_schema_steps[HISTORY_SCHEMA_VERSION];
#endif
