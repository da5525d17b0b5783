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

const char *history_limit_hint(char *buf, size_t size)
{
	/* SQLite says "disk I/O error" for EFBIG (even to read: its -shm file): name the likely cause */
	struct rlimit rl;
	buf[0] = '\0';
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		snprintf(buf, size, " (a file-size limit is set: ulimit -f %llu)", (unsigned long long)rl.rlim_cur / 1024);
	return buf;
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
		char limit[96];
		gv_warning("run not stored in the history: %s%s", err ? err : "unknown error",
			   history_limit_hint(limit, sizeof(limit)));
	}
	free(err);
	history_close(h);
	return id;
}
