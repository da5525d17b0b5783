/*
 * Judging diag's figures: against the GPU class's expected figure (data/diag_expected.csv, each
 * row with its source), and against the GPU's peers on the node. Pure, but for the knowledge
 * base it reads.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/stats.h"
#include "diag/diag.h"
#include "kb/kb.h"

/* The row of metric whose gpu pattern is the longest one contained in the name (case-insensitive):
 * "NVIDIA H200" matches "NVIDIA H200" and not "NVIDIA H200 NVL" when that has its own row. */
bool diag_expected(const char *gpu_name, const char *metric, diag_expect *out)
{
	const csv_table *t = kb_table(kb_global(), "diag_expected");
	/* a MIG instance is a slice of the board: the board's figures are not its own */
	if (!t || !gpu_name || !metric || strstr(gpu_name, " MIG "))
		return false;
	long best = -1;
	size_t best_len = 0;
	for (size_t i = 0; i < t->nrows; i++) {
		const char *pat = csv_cell(t, i, "gpu");
		size_t len = strlen(pat);
		if (strcmp(csv_cell(t, i, "metric"), metric) != 0 || !len || !strcasestr(gpu_name, pat))
			continue;
		if (len > best_len) {
			best = (long)i;
			best_len = len;
		}
	}
	if (best < 0)
		return false;
	char *end;
	out->value = strtod(csv_cell(t, (size_t)best, "value"), &end);
	if (!(out->value > 0))
		return false;
	out->warn_below = strtod(csv_cell(t, (size_t)best, "warn_below"), NULL);
	out->fail_below = strtod(csv_cell(t, (size_t)best, "fail_below"), NULL);
	if (!(out->warn_below > 0 && out->warn_below <= 1))
		out->warn_below = 0.85;
	if (!(out->fail_below > 0 && out->fail_below <= out->warn_below))
		out->fail_below = out->warn_below * 0.8;
	snprintf(out->source, sizeof(out->source), "%s reference (%s), data/diag_expected.csv", csv_cell(t, (size_t)best, "gpu"),
		 csv_cell(t, (size_t)best, "verification"));
	return true;
}

diag_status diag_judge_figure(double value, const diag_expect *e, bool higher_better, double *margin)
{
	*margin = NAN;
	if (!isfinite(value) || !e || !(e->value > 0))
		return DIAG_PASS;
	double ratio = higher_better ? value / e->value : e->value / value;
	*margin = (value - e->value) / e->value * 100;
	if (ratio < e->fail_below)
		return DIAG_FAIL;
	if (ratio < e->warn_below)
		return DIAG_WARN;
	return DIAG_PASS;
}

static const diag_gpu *gpu_of(const diag_run *r, int ordinal)
{
	for (int i = 0; i < r->ngpus; i++)
		if (r->gpus[i].ordinal == ordinal)
			return &r->gpus[i];
	return NULL;
}

void diag_judge_peers(diag_run *r)
{
	size_t n0 = r->nres;
	double *others = xmalloc((r->nres + 1) * sizeof(double));
	for (size_t i = 0; i < n0; i++) {
		const diag_result x = r->res[i]; /* copied: diag_result_add may move the array */
		const diag_gpu *g = gpu_of(r, x.gpu);
		if (!g || !isfinite(x.value) || !(x.value > 0) || x.st == DIAG_SKIP || !x.metric[0])
			continue;
		size_t n = 0;
		for (size_t j = 0; j < n0; j++) {
			const diag_result *y = &r->res[j];
			const diag_gpu *h = gpu_of(r, y->gpu);
			if (j == i || !h || y->test != x.test || strcmp(y->metric, x.metric) != 0 || strcmp(h->name, g->name) != 0 ||
			    !isfinite(y->value) || y->st == DIAG_SKIP)
				continue;
			others[n++] = y->value;
		}
		if (n == 0)
			continue;
		double med = stats_median(others, n);
		if (!(med > 0) || x.value >= DIAG_PEER_WARN * med)
			continue;
		diag_result *p = diag_result_add(r, x.test, x.gpu);
		snprintf(p->metric, sizeof(p->metric), "%s.peers", x.metric);
		p->value = x.value;
		p->expected = med;
		str_copy(p->unit, sizeof(p->unit), x.unit);
		snprintf(p->expected_src, sizeof(p->expected_src), "the median of the %zu other %s GPU%s of this node", n, g->name,
			 n == 1 ? "" : "s");
		diag_result_set(p, DIAG_PASS, "%s %.4g %s is %.0f%% of its peers' median (%.4g %s)", x.metric, x.value, x.unit,
				x.value / med * 100, med, x.unit);
		sl_pushf(&p->evidence, "%s: this GPU %.4g %s, the other %zu %s: median %.4g %s", x.metric, x.value, x.unit, n,
			 g->name, med, x.unit);
		diag_result_finding(p, DIAG_F_PEER, x.value < DIAG_PEER_FAIL * med ? SEV_FAIL : SEV_WARN);
	}
	free(others);
}
