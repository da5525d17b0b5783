#include "cmd/history_record.h"

#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

bool history_wanted(bool no_history_opt)
{
	if (no_history_opt)
		return false;
	const char *env = getenv("GPUVET_NO_HISTORY");
	return !env || !*env || strcmp(env, "0") == 0;
}

long long history_record(const char *db_path, hist_run *r)
{
	if (!r)
		return 0;
	if (gopts.root) /* a machine built as a directory tree, not this one */
		history_run_set(r, "root", gopts.root);
	char *err = NULL;
	history *h = history_open(db_path, HISTORY_WRITE, &err);
	long long id = 0;
	if (!h) {
		history_run_discard(r);
	} else if (!history_run_finish(h, r, &id, &err)) {
		id = 0;
	}
	if (!id)
		gv_warning("run not stored in the history: %s", err ? err : "unknown error");
	free(err);
	history_close(h);
	return id;
}
