/*
 * diag against the GPU's own past: each speed of this run against the same figure of the last
 * diag run in the history for the same GPU (by UUID: NVML's indexes can change between boots).
 * A figure below 90% of what the GPU did before warns (diag.history-drop), below 75% fails, even
 * when it still meets its class's figure: the board that got slower is the one to look at.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"
#include "store/history.h"

static bool is_speed(const char *unit)
{
	return unit && (strstr(unit, "/s") || strcmp(unit, "W") == 0);
}

/* The previous run's value of name for the GPU with this UUID; NAN when it has none. */
static double previous(const hist_run_row *prev, const char *uuid, const char *name)
{
	int idx = -1;
	for (size_t i = 0; i < prev->ngpus; i++)
		if (prev->gpus[i].uuid && strcmp(prev->gpus[i].uuid, uuid) == 0)
			idx = prev->gpus[i].index;
	if (idx < 0)
		return NAN;
	for (size_t i = 0; i < prev->nresults; i++)
		if (prev->results[i].gpu == idx && strcmp(prev->results[i].name, name) == 0)
			return prev->results[i].value;
	return NAN;
}

void diag_judge_history(diag_run *r, const char *db)
{
	char *err = NULL;
	char *path = history_default_path(db);
	if (!path)
		return;
	history *h = history_open(path, HISTORY_READ, &err);
	free(path);
	if (!h) { /* no history yet (the first run), or one that cannot be read: nothing to compare */
		free(err);
		return;
	}
	hist_run_row prev;
	memset(&prev, 0, sizeof(prev));
	if (!history_latest(h, HIST_DIAG, &prev, &err)) {
		free(err);
		history_close(h);
		return;
	}
	size_t n0 = r->nres;
	for (size_t i = 0; i < n0; i++) {
		const diag_result x = r->res[i]; /* copied: diag_result_add may move the array */
		const diag_gpu *g = NULL;
		for (int k = 0; k < r->ngpus; k++)
			if (r->gpus[k].ordinal == x.gpu)
				g = &r->gpus[k];
		if (!g || !g->uuid[0] || !x.metric[0] || !isfinite(x.value) || !is_speed(x.unit) || x.st == DIAG_SKIP ||
		    strstr(x.metric, ".peers"))
			continue;
		char name[96];
		snprintf(name, sizeof(name), "diag.%s", x.metric);
		double before = previous(&prev, g->uuid, name);
		if (!(before > 0) || x.value >= DIAG_PEER_WARN * before)
			continue;
		diag_result *p = diag_result_add(r, x.test, x.gpu);
		snprintf(p->metric, sizeof(p->metric), "%s.history", x.metric);
		p->value = x.value;
		p->expected = before;
		str_copy(p->unit, sizeof(p->unit), x.unit);
		snprintf(p->expected_src, sizeof(p->expected_src), "this GPU in diag run %lld (%s)", prev.id,
			 prev.started_utc ? prev.started_utc : "");
		diag_result_set(p, DIAG_PASS, "%s %.4g %s is %.0f%% of the %.4g %s this GPU measured in run %lld", x.metric, x.value,
				x.unit, x.value / before * 100, before, x.unit, prev.id);
		sl_pushf(&p->evidence, "%s: now %.4g %s, in diag run %lld (%s) %.4g %s; `gpuvet history compare %lld latest` shows both", x.metric,
			 x.value, x.unit, prev.id, prev.started_utc ? prev.started_utc : "", before, x.unit, prev.id);
		diag_result_finding(p, DIAG_F_HISTORY, x.value < DIAG_PEER_FAIL * before ? SEV_FAIL : SEV_WARN);
	}
	hist_run_row_free(&prev);
	history_close(h);
}
