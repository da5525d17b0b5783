#include "cmd/history_record.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

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
	/* the command's report is out before the history can fail, and a file-size limit (ulimit -f)
	 * makes writes fail with EFBIG, a warning below, instead of SIGXFSZ killing the command */
	fflush(stdout);
	signal(SIGXFSZ, SIG_IGN);
	char *err = NULL;
	history *h = history_open(db_path, HISTORY_WRITE, &err);
	long long id = 0;
	if (h && history_notice(h))
		gv_warning("%s", history_notice(h));
	if (!h) {
		history_run_discard(r);
	} else if (!history_run_finish(h, r, &id, &err)) {
		id = 0;
	}
	if (!id) {
		/* SQLite says "disk I/O error" for EFBIG: name the likely cause */
		struct rlimit rl;
		char limit[96] = "";
		if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			snprintf(limit, sizeof(limit), " (a file-size limit is set: ulimit -f %llu)",
				 (unsigned long long)rl.rlim_cur / 1024);
		gv_warning("run not stored in the history: %s%s", err ? err : "unknown error", limit);
	}
	free(err);
	history_close(h);
	return id;
}
